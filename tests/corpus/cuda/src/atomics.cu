// Atomic operations on uniform and varying addresses.

#define MAX_BINS 256

// Histogram privatized in shared memory, then merged into global bins.
// Values are reduced modulo nbins (nbins <= 256).
extern "C" __global__ void histogram(const unsigned* __restrict__ data, unsigned* bins, int n, int nbins)
{
    __shared__ unsigned local[MAX_BINS];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i] % nbins], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
        unsigned c = local[b];
        if (c != 0)
            atomicAdd(&bins[b], c);
    }
}

// Counts elements equal to key (atomic on one address, result unused) and records the
// smallest matching index with atomicMin (stats[1] must start at INT_MAX).
extern "C" __global__ void count_matches(const int* __restrict__ in, int* stats, int n, int key)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && in[i] == key) {
        atomicAdd(&stats[0], 1);
        atomicMin(&stats[1], i);
    }
}

// Sum reduction finished by the last block to arrive: each block stores a partial,
// fences, takes a ticket from *counter (atomic result used); the block that draws the
// last ticket adds up all partials. blockDim.x must be a power of two <= 1024.
extern "C" __global__ void sum_last_block(const int* __restrict__ in, int* partials, int* result,
                                          unsigned* counter, int n)
{
    __shared__ int buf[1024];
    __shared__ bool is_last;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = (i < n) ? in[i] : 0;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = buf[0];
        __threadfence();
        unsigned ticket = atomicAdd(counter, 1u);
        is_last = (ticket == gridDim.x - 1);
    }
    __syncthreads();
    if (is_last && threadIdx.x == 0) {
        volatile int* vp = partials;
        int total = 0;
        for (unsigned b = 0; b < gridDim.x; ++b)
            total += vp[b];
        *result = total;
    }
}

// Float maximum through an atomicCAS loop on the bit pattern (works for any sign).
extern "C" __global__ void cas_max_f32(const float* __restrict__ in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    int* addr = (int*)out;
    int old = *addr;
    while (__int_as_float(old) < v) {
        int assumed = old;
        old = atomicCAS(addr, assumed, __float_as_int(v));
        if (old == assumed)
            break;
    }
}

// Scatter-add: out[idx[i]] += val[i] with float atomics at varying addresses.
// Values are small integers so the result does not depend on the order.
// touched[j] collects bit (i & 7) of every i that hit slot j (atomicOr, result unused).
extern "C" __global__ void scatter_add_f32(const int* __restrict__ idx, const float* __restrict__ val,
                                           float* out, int* touched, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&out[idx[i]], val[i]);
        atomicOr(&touched[idx[i]], 1 << (i & 7));
    }
}
