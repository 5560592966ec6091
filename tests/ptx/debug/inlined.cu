__device__ __forceinline__ float sq(float x) { return x * x + 1.0f; }
__device__ __forceinline__ float twice(float x) { return sq(x) * 2.0f; }
extern "C" __global__ void k(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = twice(a[i]) + sq(a[i] + 1.0f);
}
