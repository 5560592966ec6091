// Elementwise kernels: 64-bit grid-stride loops, vector memory ops, fp16/bf16.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// y[i] = fma(a, x[i], y[i]) over a grid-stride loop with size_t indices.
extern "C" __global__ void saxpy_gs(const float* __restrict__ x, float* __restrict__ y,
                                    float a, size_t n)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = fmaf(a, x[i], y[i]);
}

// out[i] = in[i] * s using 128-bit loads/stores; n4 counts float4 elements.
extern "C" __global__ void vec4_scale(const float4* __restrict__ in, float4* __restrict__ out,
                                      float s, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = in[i];
        v.x *= s; v.y *= s; v.z *= s; v.w *= s;
        out[i] = v;
    }
}

// 64-bit paired integer loads: out[i] = (in[i].y + 1, in[i].x * 3 - in[i].y).
extern "C" __global__ void int2_mix(const int2* __restrict__ in, int2* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int2 v = in[i];
        int2 r;
        r.x = v.y + 1;
        r.y = v.x * 3 - v.y;
        out[i] = r;
    }
}

// Half and bfloat16 arithmetic.
//   oh[i] = __hfma(a[i], b[i], a[i])          (fp16, one rounding)
//   ob[i] = bf16(float(a[i]) * float(b[i]) + float(b[i]))   (product exact in fp32)
//   om[i] = max(a[i], b[i]) in fp16
extern "C" __global__ void half_bf16_ops(const __half* __restrict__ a, const __half* __restrict__ b,
                                         __half* __restrict__ oh, __nv_bfloat16* __restrict__ ob,
                                         __half* __restrict__ om, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half ha = a[i], hb = b[i];
    oh[i] = __hfma(ha, hb, ha);
    float fa = __half2float(ha), fb = __half2float(hb);
    ob[i] = __float2bfloat16_rn(fa * fb + fb);
    om[i] = __hmax(ha, hb);
}

// bf16 pairs: out[i] = in[i] + in[i] (exact doubling) computed as bf16x2.
extern "C" __global__ void bf16x2_double(const __nv_bfloat162* __restrict__ in,
                                         __nv_bfloat162* __restrict__ out, int n2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        __nv_bfloat162 v = in[i];
        out[i] = __hadd2(v, v);
    }
}
