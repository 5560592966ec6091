// CUB DeviceReduce::ReduceByKey for the ptxopt corpus: sums of float values over runs
// of equal int32 keys; also writes the unique keys and the number of runs.
#include <cub/device/device_reduce.cuh>

struct SumF32 {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

cudaError_t sum_runs(void *temp, size_t &temp_bytes, const int *keys_in, int *unique_out,
                     const float *values_in, float *sums_out, int *num_runs, int n,
                     cudaStream_t stream) {
  return cub::DeviceReduce::ReduceByKey(temp, temp_bytes, keys_in, unique_out, values_in,
                                        sums_out, num_runs, SumF32(), n, stream);
}
