// CUB device radix sort, instantiated for the ptxopt corpus: 32-bit unsigned keys
// carrying int32 values (SortPairs), and float keys sorted in descending order.
// Only the kernels matter; the host functions exist so nvcc instantiates them.
#include <cub/device/device_radix_sort.cuh>

cudaError_t sort_pairs_u32(void *temp, size_t &temp_bytes, const unsigned *keys_in,
                           unsigned *keys_out, const int *values_in, int *values_out,
                           int n, cudaStream_t stream) {
  return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in,
                                         values_out, n, 0, 32, stream);
}

cudaError_t sort_keys_f32_descending(void *temp, size_t &temp_bytes, const float *keys_in,
                                     float *keys_out, int n, cudaStream_t stream) {
  return cub::DeviceRadixSort::SortKeysDescending(temp, temp_bytes, keys_in, keys_out, n, 0,
                                                  32, stream);
}
