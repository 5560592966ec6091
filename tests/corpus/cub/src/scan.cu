// CUB device scans for the ptxopt corpus: an exclusive prefix sum of int32 and an
// inclusive running maximum of float (decoupled look-back, single pass).
#include <cub/device/device_scan.cuh>

cudaError_t exclusive_sum_i32(void *temp, size_t &temp_bytes, const int *in, int *out, int n,
                              cudaStream_t stream) {
  return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, n, stream);
}

struct MaxF32 {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

cudaError_t running_max_f32(void *temp, size_t &temp_bytes, const float *in, float *out, int n,
                            cudaStream_t stream) {
  return cub::DeviceScan::InclusiveScan(temp, temp_bytes, in, out, MaxF32(), n, stream);
}
