"""numba-cuda kernels for the ptxopt corpus, compiled to PTX ahead of time (no GPU).

Every 1-D array argument becomes 7 PTX parameters in numba's ABI:
(meminfo, parent, nitems, itemsize, data, shape[0], strides[0]).
"""

from numba import cuda, float32, int32, uint32


def scale_shift(x, out, n):
    # out[i] = x[i] * 2 + 1 (float32, written with explicit separate ops)
    i = cuda.grid(1)
    if i < n:
        out[i] = x[i] * float32(2.0) + float32(1.0)


def digit_histogram(vals, hist, n):
    # Each thread strips decimal digits of vals[i] in a while loop and counts them into a
    # shared 10-bin histogram; bins are then merged into hist with global atomics.
    local = cuda.shared.array(10, dtype=uint32)
    t = cuda.threadIdx.x
    if t < 10:
        local[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < n:
        v = vals[i]
        while True:
            cuda.atomic.add(local, v % 10, 1)
            v = v // 10
            if v == 0:
                break
    cuda.syncthreads()
    if t < 10:
        c = local[t]
        if c != 0:
            cuda.atomic.add(hist, t, c)


def clamp_count(x, out, lo, hi):
    # grid-stride clamp; counts how many values were clamped into out[-1] via an atomic
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = x.shape[0]
    clipped = 0
    for i in range(start, n, stride):
        v = x[i]
        if v < lo:
            v = lo
            clipped += 1
        elif v > hi:
            v = hi
            clipped += 1
        out[i] = v
    if clipped > 0:
        cuda.atomic.add(out, n, clipped)


# name -> (python function, numba signature, compute capability)
SPECS = {
    "scale_shift.sm75": (scale_shift, (float32[:], float32[:], int32), (7, 5)),
    "digit_histogram.sm75": (digit_histogram, (uint32[:], uint32[:], int32), (7, 5)),
    "clamp_count.sm80": (clamp_count, (int32[:], int32[:], int32, int32), (8, 0)),
}
