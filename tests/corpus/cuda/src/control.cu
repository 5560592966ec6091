// Control flow: calls, recursion, local arrays, switch, nested branches, searches,
// constant and global device memory.

__constant__ float c_poly[8] = {1.0f, -0.5f, 0.25f, 0.125f, -2.0f, 0.75f, 1.5f, -0.0625f};
__device__ int g_bias = 3;
__device__ unsigned g_scramble[4] = {0x9e3779b9u, 0x85ebca6bu, 0xc2b2ae35u, 0x27d4eb2fu};

// Number of Collatz steps to reach 1 (cap at 1000); kept out of line.
__device__ __noinline__ int collatz_steps(unsigned long long x)
{
    int steps = 0;
    while (x > 1 && steps < 1000) {
        x = (x & 1) ? 3 * x + 1 : x >> 1;
        ++steps;
    }
    return steps;
}

__device__ __noinline__ unsigned mix_hash(unsigned v, int rounds)
{
    for (int r = 0; r < rounds; ++r) {
        v ^= g_scramble[r & 3];
        v = (v << 5) | (v >> 27);
        v *= 0x01000193u;
    }
    return v;
}

extern "C" __global__ void collatz(const unsigned* __restrict__ in, int* __restrict__ steps,
                                   unsigned* __restrict__ hashes, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned v = in[i];
        int s = collatz_steps(v);
        steps[i] = s;
        hashes[i] = mix_hash(v, s & 7);
    }
}

// Genuinely recursive device functions.
__device__ int fib_rec(int k)
{
    if (k < 2)
        return k;
    return fib_rec(k - 1) + fib_rec(k - 2);
}

__device__ unsigned ackermann_small(unsigned m, unsigned k)
{
    if (m == 0)
        return k + 1;
    if (k == 0)
        return ackermann_small(m - 1, 1);
    return ackermann_small(m - 1, ackermann_small(m, k - 1));
}

// out[2i] = fib(in[i] % 12), out[2i+1] = A(in[i] % 3, in[i] % 4).
extern "C" __global__ void recursive_calls(const int* __restrict__ in, int* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = in[i];
        out[2 * i] = fib_rec(v % 12);
        out[2 * i + 1] = (int)ackermann_small((unsigned)(v % 3), (unsigned)(v % 4));
    }
}

// Each thread insertion-sorts its row of 8 values in a thread-local array indexed with
// run-time indices, then writes the sorted row and a value looked up by a computed index.
extern "C" __global__ void local_sort8(const int* __restrict__ in, int* __restrict__ out,
                                       int* __restrict__ picks, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int a[8];
    for (int k = 0; k < 8; ++k)
        a[k] = in[r * 8 + k];
    for (int k = 1; k < 8; ++k) {
        int key = a[k];
        int j = k - 1;
        while (j >= 0 && a[j] > key) {
            a[j + 1] = a[j];
            --j;
        }
        a[j + 1] = key;
    }
    for (int k = 0; k < 8; ++k)
        out[r * 8 + k] = a[k];
    picks[r] = a[(unsigned)in[r * 8] & 7];
}

// Integer operation selected per element.
extern "C" __global__ void switch_ops(const int* __restrict__ op, const int* __restrict__ a,
                                      const int* __restrict__ b, int* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = a[i], y = b[i], r;
    switch (op[i]) {
    case 0: r = x + y; break;
    case 1: r = x - y; break;
    case 2: r = x * y; break;
    case 3: r = min(x, y); break;
    case 4: r = max(x, y); break;
    case 5: r = x ^ y; break;
    case 6: r = (y != 0) ? x / y : -1; break;
    case 7: r = x << (y & 15); break;
    case 9: r = (y != 0) ? x % y : 0; break;
    default: r = 12345; break;
    }
    out[i] = r;
}

// Nested divergent branches on two inputs; result is a region code plus a count.
extern "C" __global__ void classify_points(const float* __restrict__ x, const float* __restrict__ y,
                                           int* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float px = x[i], py = y[i];
    int code;
    if (px > 0.5f) {
        if (py > 0.5f) {
            code = (px > py) ? 1 : 2;
        } else {
            code = 3;
            if (px > 0.75f)
                code += 10;
        }
    } else {
        if (py < 0.25f) {
            code = 4;
        } else if (py < 0.5f) {
            code = (px < 0.1f) ? 5 : 6;
        } else {
            int c = 0;
            for (int k = 0; k < 4; ++k)
                if (px * (float)(k + 1) > 0.5f)
                    ++c;
            code = 20 + c;
        }
    }
    out[i] = code;
}

// Data-dependent loops: for each query, index of the first element equal to it in
// data[0..m) (or -1) by a linear while loop, and lower_bound in sorted[0..m) by
// binary search.
extern "C" __global__ void search_kernels(const int* __restrict__ data, const int* __restrict__ sorted,
                                          int m, const int* __restrict__ queries,
                                          int* __restrict__ found, int* __restrict__ lower, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int q = queries[i];
    int k = 0;
    while (k < m && data[k] != q)
        ++k;
    found[i] = (k < m) ? k : -1;
    int lo = 0, hi = m;
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (sorted[mid] < q)
            lo = mid + 1;
        else
            hi = mid;
    }
    lower[i] = lo;
}

// Horner evaluation of a degree-7 polynomial held in constant memory, plus a bias kept
// in a global device variable: y[i] = P(x[i]) + g_bias, each step an explicit fmaf.
extern "C" __global__ void poly_eval(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float acc = c_poly[7];
        for (int k = 6; k >= 0; --k)
            acc = fmaf(acc, v, c_poly[k]);
        y[i] = acc + (float)g_bias;
    }
}
