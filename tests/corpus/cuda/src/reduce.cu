// Block and warp level reductions, scans, votes, match and redux.

#define BLOCK_MAX 1024

// Each block sums a grid-strided slice of in[] through shared memory and writes
// one partial sum to out[blockIdx.x]. blockDim.x must be a power of two.
extern "C" __global__ void block_reduce_sum(const int* __restrict__ in, int* __restrict__ out, int n)
{
    __shared__ int buf[BLOCK_MAX];
    int acc = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += in[i];
    buf[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = buf[0];
}

// Warp tree sum with shfl_down; lane 0 of each warp adds into *out (float atomic on a
// single address). blockDim.x must be a multiple of 32; inputs are small integers.
extern "C" __global__ void warp_reduce_f32(const float* __restrict__ in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? in[i] : 0.0f;
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, v);
}

// Inclusive scan of each warp's values with shfl_up. Works for partial warps
// (block sizes that are not multiples of 32) by using the active mask at entry.
extern "C" __global__ void warp_scan_u32(const unsigned* __restrict__ in, unsigned* __restrict__ out, int n)
{
    unsigned mask = __activemask();
    int lane = threadIdx.x & 31;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = (i < n) ? in[i] : 0u;
    for (int d = 1; d < 32; d <<= 1) {
        unsigned t = __shfl_up_sync(mask, v, d);
        if (lane >= d)
            v += t;
    }
    if (i < n)
        out[i] = v;
}

// Butterfly max over each warp with shfl_xor, then broadcast lane 0's input with an
// indexed shuffle: out[i] = warp_max + in[first element of the warp].
// blockDim.x must be a multiple of 32.
extern "C" __global__ void warp_xor_max_bcast(const int* __restrict__ in, int* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = (i < n) ? in[i] : -2147483647 - 1;
    int m = x;
    for (int off = 1; off < 32; off <<= 1)
        m = max(m, __shfl_xor_sync(0xffffffffu, m, off));
    int first = __shfl_sync(0xffffffffu, x, 0);
    if (i < n)
        out[i] = m + first;
}

// Warp votes. For each thread with i < n:
//   out[4i+0] = ballot(in > thr), out[4i+1] = all(in > thr), out[4i+2] = any(in > thr),
//   out[4i+3] = number of lower lanes whose predicate is set.
// Threads past n vote false. Partial warps are fine.
extern "C" __global__ void warp_votes(const int* __restrict__ in, unsigned* __restrict__ out, int n, int thr)
{
    unsigned mask = __activemask();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    bool p = (i < n) && in[i] > thr;
    unsigned b = __ballot_sync(mask, p);
    int all = __all_sync(mask, p);
    int any = __any_sync(mask, p);
    if (i < n) {
        out[4 * i + 0] = b;
        out[4 * i + 1] = all ? 1u : 0u;
        out[4 * i + 2] = any ? 1u : 0u;
        out[4 * i + 3] = __popc(b & ((1u << lane) - 1u));
    }
}

// For each thread: out[2i] = mask of lanes in its warp holding the same key,
// out[2i+1] = rank of the thread among those lanes. Partial warps are fine.
extern "C" __global__ void match_any_groups(const int* __restrict__ keys, unsigned* __restrict__ out, int n)
{
    unsigned mask = __activemask();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int key = (i < n) ? keys[i] : -1;
    unsigned same = __match_any_sync(mask, key);
    if (i < n) {
        out[2 * i] = same;
        out[2 * i + 1] = __popc(same & ((1u << lane) - 1u));
    }
}

// Warp sum and max of unsigned values: redux.sync on sm_80+, shuffles otherwise.
// out[2i] = warp sum, out[2i+1] = warp max. blockDim.x must be a multiple of 32.
extern "C" __global__ void warp_redux(const unsigned* __restrict__ in, unsigned* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = (i < n) ? in[i] : 0u;
    unsigned s, m;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    s = __reduce_add_sync(0xffffffffu, v);
    m = __reduce_max_sync(0xffffffffu, v);
#else
    s = v; m = v;
    for (int off = 16; off > 0; off >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, off);
        m = max(m, __shfl_xor_sync(0xffffffffu, m, off));
    }
#endif
    if (i < n) {
        out[2 * i] = s;
        out[2 * i + 1] = m;
    }
}
