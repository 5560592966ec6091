// CUB DeviceHistogram for the ptxopt corpus: 64 even bins over [0, 1) of float
// samples, and 256 bins of 8-bit samples (the shared-memory privatized path).
#include <cub/device/device_histogram.cuh>

cudaError_t histogram_even_f32(void *temp, size_t &temp_bytes, const float *samples,
                               int *counts, int n, cudaStream_t stream) {
  return cub::DeviceHistogram::HistogramEven(temp, temp_bytes, samples, counts, 65, 0.0f, 1.0f,
                                             n, stream);
}

cudaError_t histogram_u8(void *temp, size_t &temp_bytes, const unsigned char *samples,
                         int *counts, int n, cudaStream_t stream) {
  return cub::DeviceHistogram::HistogramEven(temp, temp_bytes, samples, counts, 257, 0, 256, n,
                                             stream);
}
