"""numpy reference semantics for the runnable launches in manifest.json.

make_args(launch) builds the argument list of a launch deterministically.
Each reference `ref_*(args, launch=None)` receives copies of the arguments as they were
before the kernel ran and returns the list of expected values afterwards (arrays with
their expected contents, scalars unchanged). `launch` is only needed by references whose
result depends on the launch shape (block/warp partitioning); their defaults match the
shapes used in manifest.json.

Exactness: every reference is bit-exact unless it appears in TOLERANCE, which maps the
reference name to (rtol, atol) for kernels that use approximate math or whose summation
order differs from numpy's. Comments on each reference say why it is exact.

Array dtypes: float16/float32/int32/uint32/int64/uint64 as in numpy; "bfloat16" arrays
are numpy uint16 arrays holding the raw bf16 bit patterns.
"""

import numpy as np

TOLERANCE = {
    "ref_tt_row_softmax": (1e-5, 1e-6),  # ex2.approx inside tl.exp
    "ref_tt_layer_norm_fwd": (1e-5, 1e-5),  # tree-shaped sums, sqrt + division
    "ref_tt_layer_norm_bwd": (1e-5, 1e-5),  # tree-shaped sums
    "ref_tt_attention_fwd": (1e-5, 1e-5),  # ex2.approx, online softmax, FMA order
    # tensor-core products: exact products, fp32 sums in the instruction's order, then
    # an fp16 result (half an fp16 ulp is 4.9e-4 relative)
    "ref_tt_matmul": (2e-3, 2e-3),
    # P is rounded to fp16 before the PV product, ex2.approx, online softmax
    "ref_tt_attention_fwd_causal": (1e-2, 1e-2),
    # dS and P rounded to fp16/bf16 before their products; dQ summed by atomics
    "ref_tt_attention_bwd_causal": (3e-2, 3e-2),
    "ref_tt_fp8_matmul": (2e-3, 2e-3),  # exact e4m3 products, fp32 sums, fp16 result
    "ref_tt_fp8_matmul_tma": (2e-3, 2e-3),
    "ref_cutlass_tf32_gemm": (1e-5, 1e-5),  # fp32 sums of exact tf32 products
    "ref_cutlass_fmha": (2e-3, 2e-3),  # fp16 P and output, fp32 accumulation
    "ref_cutlass_conv2d_fprop": (1e-5, 1e-5),  # exact fp16 products, fp32 sums
    "ref_cutlass_mixed_gemm": (1e-3, 1e-3),  # exact products, fp32 sums, fp16 result
}
# arrays of these references hold bf16 bit patterns: compare them as float32
BF16_VALUES = {"ref_tt_attention_bwd_causal"}

INT32_MIN = -(2**31)


# ----------------------------------------------------------------------------- arguments


def _np_dtype(name):
    return np.dtype(np.uint16) if name == "bfloat16" else np.dtype(name)


def f32_to_bf16_bits(x):
    """Round float32 values to bfloat16 (nearest-even); returns uint16 bit patterns."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_bits_to_f32(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def make_array(d):
    dt, size, fill = d["dtype"], d["size"], d["fill"]
    rng = np.random.default_rng(d.get("seed", 0))
    if fill == "zeros":
        v = np.zeros(size, dtype=np.float64)
    elif fill == "ones":
        v = np.ones(size, dtype=np.float64)
    elif fill == "iota":
        v = np.arange(size, dtype=np.float64)
    elif fill == "values":
        v = np.array(d["values"], dtype=np.float64)
        assert v.size == size
    elif fill == "randint":
        v = rng.integers(d.get("low", 0), d.get("high", 1000), size=size, dtype=np.int64)
    elif fill == "random":
        if np.issubdtype(_np_dtype(dt), np.integer) and dt != "bfloat16":
            v = rng.integers(d.get("low", 0), d.get("high", 1000), size=size, dtype=np.int64)
        else:
            v = rng.uniform(d.get("low", 0.0), d.get("high", 1.0), size=size)
    else:
        raise ValueError(f"unknown fill {fill!r}")
    if d.get("sort"):
        v = np.sort(v)
    if dt == "bfloat16":
        return f32_to_bf16_bits(v.astype(np.float32))
    if np.issubdtype(np.dtype(dt), np.integer) and v.dtype.kind == "f":
        v = v.astype(np.int64)
    return v.astype(dt)


def make_args(launch):
    out = []
    for a in launch["args"]:
        if a["kind"] == "array":
            out.append(make_array(a))
        elif a["kind"] == "blob":
            # a library's Params struct as its host code built it; pointer fields are
            # filled in by the launch with the addresses of the arrays given here
            from ptxopt.sim import ParamBlob

            ptrs = {p["offset"]: make_array(p) for p in a["pointers"]}
            out.append(ParamBlob(bytes.fromhex(a["hex"]), ptrs))
        else:
            out.append(np.dtype(a["dtype"]).type(a["value"]))
    return out


def _dim(v):
    return v if isinstance(v, int) else v[0]


def _geom(launch, grid, block):
    if launch is None:
        return grid, block
    return _dim(launch["grid"]), _dim(launch["block"])


def _warp_segments(n_threads_total, grid, block):
    """Yield lists of global thread indices, one per (block, warp); last warps may be partial."""
    for b in range(grid):
        for w0 in range(0, block, 32):
            yield [b * block + t for t in range(w0, min(w0 + 32, block))]


# ----------------------------------------------------------------------------- float helpers


def fma32(a, b, c):
    """float32 fused multiply-add with a single rounding, vectorized.

    a*b is exact in float64; s = a*b + c is rounded once in float64 and its error e is
    recovered exactly (TwoSum). Rounding s to float32 equals rounding the exact value
    unless s lies exactly on a float32 rounding midpoint and e != 0; then the sign of e
    decides, which nextafter reproduces.
    """
    a = np.asarray(a, dtype=np.float32).astype(np.float64)
    b = np.asarray(b, dtype=np.float32).astype(np.float64)
    c = np.asarray(c, dtype=np.float32).astype(np.float64)
    p = a * b
    s = p + c
    bb = s - p
    e = (p - (s - bb)) + (c - bb)
    r = s.astype(np.float32)
    low = s.view(np.uint64) & np.uint64((1 << 29) - 1)
    fix = (low == np.uint64(1 << 28)) & (e != 0)
    if np.any(fix):
        nudged = np.nextafter(s, np.where(e > 0, np.inf, -np.inf))
        r = np.where(fix, nudged.astype(np.float32), r)
    return r


# ----------------------------------------------------------------------------- cuda/elementwise


def ref_saxpy(args, launch=None):
    # exact: y = fma(a, x, y) per element, emulated with fma32 (single rounding)
    x, y, a, n = args
    y = y.copy()
    n = int(n)
    y[:n] = fma32(np.float32(a), x[:n], y[:n])
    return [x, y, a, args[3]]


def ref_vec4_scale(args, launch=None):
    # exact: one float32 multiply per element
    inp, out, s, n4 = args
    out = out.copy()
    m = 4 * int(n4)
    out[:m] = inp[:m] * np.float32(s)
    return [inp, out, s, n4]


def ref_int2_mix(args, launch=None):
    # exact integer arithmetic
    inp, out, n = args
    out = out.copy()
    v = inp[: 2 * int(n)].astype(np.int64)
    out[0 : 2 * int(n) : 2] = (v[1::2] + 1).astype(np.int32)
    out[1 : 2 * int(n) : 2] = (v[0::2] * 3 - v[1::2]).astype(np.int32)
    return [inp, out, n]


def ref_half_bf16_ops(args, launch=None):
    # exact: fp16 a*b+a is exact in float64 for inputs in [0,1) (at most 49 significant
    # bits) so one conversion to fp16 is the single rounding of __hfma; fa*fb is exact in
    # float32, the add rounds once (same with or without contraction), then RNE to bf16.
    a, b, oh, ob, om, n = args
    n = int(n)
    oh, ob, om = oh.copy(), ob.copy(), om.copy()
    a64, b64 = a[:n].astype(np.float64), b[:n].astype(np.float64)
    oh[:n] = (a64 * b64 + a64).astype(np.float16)
    fa, fb = a[:n].astype(np.float32), b[:n].astype(np.float32)
    ob[:n] = f32_to_bf16_bits(fa * fb + fb)
    om[:n] = np.maximum(a[:n], b[:n])
    return [a, b, oh, ob, om, args[5]]


def ref_bf16x2_double(args, launch=None):
    # exact: doubling a bf16 value only changes its exponent
    inp, out, n2 = args
    out = out.copy()
    m = 2 * int(n2)
    out[:m] = f32_to_bf16_bits(bf16_bits_to_f32(inp[:m]) * np.float32(2))
    return [inp, out, n2]


# ----------------------------------------------------------------------------- cuda/reduce


def ref_block_reduce_sum(args, launch=None):
    # exact (int32, wrap-around): block b sums elements i with (i // block) % grid == b
    inp, out, n = args
    grid, block = _geom(launch, 4, 128)
    out = out.copy()
    idx = np.arange(int(n))
    owner = (idx // block) % grid
    for b in range(grid):
        out[b] = np.sum(inp[: int(n)][owner == b], dtype=np.int32)
    return [inp, out, n]


def ref_warp_reduce_f32(args, launch=None):
    # exact: inputs are small integers, every partial sum is exactly representable
    inp, out, n = args
    out = out.copy()
    out[0] = np.float32(out[0] + np.sum(inp[: int(n)].astype(np.float64)))
    return [inp, out, n]


def ref_warp_scan_u32(args, launch=None):
    # exact (uint32 wrap-around): inclusive scan inside each warp of each block
    inp, out, n = args
    grid, block = _geom(launch, 3, 80)
    n = int(n)
    out = out.copy()
    for seg in _warp_segments(n, grid, block):
        acc = np.uint64(0)
        for i in seg:
            acc = (acc + (np.uint64(inp[i]) if i < n else np.uint64(0))) & np.uint64(0xFFFFFFFF)
            if i < n:
                out[i] = np.uint32(acc)
    return [inp, out, args[2]]


def ref_warp_xor_max_bcast(args, launch=None):
    # exact: warp max plus the value of the warp's first thread
    inp, out, n = args
    grid, block = _geom(launch, 3, 64)
    n = int(n)
    out = out.copy()
    for seg in _warp_segments(n, grid, block):
        vals = [int(inp[i]) if i < n else INT32_MIN for i in seg]
        r = max(vals) + vals[0]
        r = (r + 2**31) % 2**32 - 2**31
        for i in seg:
            if i < n:
                out[i] = r
    return [inp, out, args[2]]


def ref_warp_votes(args, launch=None):
    # exact: ballot/all/any over the lanes that exist in each (possibly partial) warp
    inp, out, n, thr = args
    grid, block = _geom(launch, 3, 48)
    n = int(n)
    out = out.copy()
    for seg in _warp_segments(n, grid, block):
        preds = [(i < n) and int(inp[i]) > int(thr) for i in seg]
        ballot = sum(1 << lane for lane, p in enumerate(preds) if p)
        for lane, i in enumerate(seg):
            if i < n:
                out[4 * i] = ballot
                out[4 * i + 1] = int(all(preds))
                out[4 * i + 2] = int(any(preds))
                out[4 * i + 3] = bin(ballot & ((1 << lane) - 1)).count("1")
    return [inp, out, args[2], args[3]]


def ref_match_any_groups(args, launch=None):
    # exact: lanes holding equal keys within each existing warp (threads past n hold -1)
    keys, out, n = args
    grid, block = _geom(launch, 2, 70)
    n = int(n)
    out = out.copy()
    for seg in _warp_segments(n, grid, block):
        ks = [int(keys[i]) if i < n else -1 for i in seg]
        for lane, i in enumerate(seg):
            if i < n:
                same = sum(1 << l for l, k in enumerate(ks) if k == ks[lane])
                out[2 * i] = same
                out[2 * i + 1] = bin(same & ((1 << lane) - 1)).count("1")
    return [keys, out, args[2]]


def ref_warp_redux(args, launch=None):
    # exact: uint32 warp sum (wrap-around) and max; threads past n contribute 0
    inp, out, n = args
    grid, block = _geom(launch, 3, 64)
    n = int(n)
    out = out.copy()
    for seg in _warp_segments(n, grid, block):
        vals = [int(inp[i]) if i < n else 0 for i in seg]
        s, m = sum(vals) & 0xFFFFFFFF, max(vals)
        for i in seg:
            if i < n:
                out[2 * i], out[2 * i + 1] = s, m
    return [inp, out, args[2]]


# ----------------------------------------------------------------------------- cuda/atomics


def ref_histogram(args, launch=None):
    # exact: integer atomics commute
    data, bins, n, nbins = args
    bins = bins.copy()
    bins += np.bincount(data[: int(n)] % np.uint32(nbins), minlength=int(nbins)).astype(np.uint32)
    return [data, bins, n, nbins]


def ref_count_matches(args, launch=None):
    # exact: stats[0] += matches, stats[1] = min(stats[1], first matching index)
    inp, stats, n, key = args
    stats = stats.copy()
    hits = np.nonzero(inp[: int(n)] == key)[0]
    stats[0] += len(hits)
    if len(hits):
        stats[1] = min(int(stats[1]), int(hits[0]))
    return [inp, stats, n, key]


def ref_sum_last_block(args, launch=None):
    # exact: per-block sums, their total, and the ticket counter advanced by the grid size
    inp, partials, result, counter, n = args
    grid, block = _geom(launch, 5, 128)
    n = int(n)
    partials, result, counter = partials.copy(), result.copy(), counter.copy()
    vals = np.zeros(grid * block, dtype=np.int32)
    vals[:n] = inp[:n]
    partials[:grid] = vals.reshape(grid, block).sum(axis=1, dtype=np.int32)
    result[0] = np.sum(partials[:grid], dtype=np.int32)
    counter[0] += np.uint32(grid)
    return [inp, partials, result, counter, args[4]]


def ref_cas_max_f32(args, launch=None):
    # exact: maximum is order independent
    inp, out, n = args
    out = out.copy()
    out[0] = max(out[0], np.max(inp[: int(n)]))
    return [inp, out, n]


def ref_scatter_add_f32(args, launch=None):
    # exact: the added values are small integers, so float addition order does not matter
    idx, val, out, touched, n = args
    n = int(n)
    out, touched = out.copy(), touched.copy()
    acc = out.astype(np.float64)
    np.add.at(acc, idx[:n], val[:n].astype(np.float64))
    out[:] = acc.astype(np.float32)
    bits = np.left_shift(1, np.arange(n) & 7).astype(np.int32)
    np.bitwise_or.at(touched, idx[:n], bits)
    return [idx, val, out, touched, args[4]]


# ----------------------------------------------------------------------------- cuda/control

_SCRAMBLE = [0x9E3779B9, 0x85EBCA6B, 0xC2B2AE35, 0x27D4EB2F]
_POLY = np.array([1.0, -0.5, 0.25, 0.125, -2.0, 0.75, 1.5, -0.0625], dtype=np.float32)
_G_BIAS = 3


def _collatz(x):
    steps = 0
    while x > 1 and steps < 1000:
        x = 3 * x + 1 if x & 1 else x >> 1
        steps += 1
    return steps


def _mix_hash(v, rounds):
    for r in range(rounds):
        v ^= _SCRAMBLE[r & 3]
        v = ((v << 5) | (v >> 27)) & 0xFFFFFFFF
        v = (v * 0x01000193) & 0xFFFFFFFF
    return v


def ref_collatz(args, launch=None):
    # exact integer arithmetic
    inp, steps, hashes, n = args
    steps, hashes = steps.copy(), hashes.copy()
    for i in range(int(n)):
        v = int(inp[i])
        s = _collatz(v)
        steps[i] = s
        hashes[i] = _mix_hash(v, s & 7)
    return [inp, steps, hashes, n]


def _fib(k):
    a, b = 0, 1
    for _ in range(k):
        a, b = b, a + b
    return a


def _ackermann(m, k):
    if m == 0:
        return k + 1
    if k == 0:
        return _ackermann(m - 1, 1)
    return _ackermann(m - 1, _ackermann(m, k - 1))


def ref_recursive_calls(args, launch=None):
    # exact: inputs are non-negative
    inp, out, n = args
    out = out.copy()
    for i in range(int(n)):
        v = int(inp[i])
        out[2 * i] = _fib(v % 12)
        out[2 * i + 1] = _ackermann(v % 3, v % 4)
    return [inp, out, n]


def ref_local_sort8(args, launch=None):
    # exact: sorted rows and the element at index (first original value & 7)
    inp, out, picks, rows = args
    rows = int(rows)
    out, picks = out.copy(), picks.copy()
    s = np.sort(inp[: 8 * rows].reshape(rows, 8), axis=1)
    out[: 8 * rows] = s.reshape(-1)
    sel = inp[0 : 8 * rows : 8] & 7
    picks[:rows] = s[np.arange(rows), sel]
    return [inp, out, picks, args[3]]


def _wrap32(v):
    return (v + 2**31) % 2**32 - 2**31


def _cdiv(x, y):
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def ref_switch_ops(args, launch=None):
    # exact: C semantics (truncating division and remainder, 32-bit wrap-around)
    op, a, b, out, n = args
    out = out.copy()
    for i in range(int(n)):
        x, y, o = int(a[i]), int(b[i]), int(op[i])
        if o == 0:
            r = x + y
        elif o == 1:
            r = x - y
        elif o == 2:
            r = x * y
        elif o == 3:
            r = min(x, y)
        elif o == 4:
            r = max(x, y)
        elif o == 5:
            r = x ^ y
        elif o == 6:
            r = _cdiv(x, y) if y != 0 else -1
        elif o == 7:
            r = x << (y & 15)
        elif o == 9:
            r = x - _cdiv(x, y) * y if y != 0 else 0
        else:
            r = 12345
        out[i] = _wrap32(r)
    return [op, a, b, out, n]


def ref_classify_points(args, launch=None):
    # exact: only float32 comparisons and exact-rounded float32 products
    x, y, out, n = args
    out = out.copy()
    f = np.float32
    for i in range(int(n)):
        px, py = f(x[i]), f(y[i])
        if px > f(0.5):
            if py > f(0.5):
                code = 1 if px > py else 2
            else:
                code = 13 if px > f(0.75) else 3
        else:
            if py < f(0.25):
                code = 4
            elif py < f(0.5):
                code = 5 if px < f(0.1) else 6
            else:
                code = 20 + sum(1 for k in range(4) if f(px * f(k + 1)) > f(0.5))
        out[i] = code
    return [x, y, out, n]


def ref_search_kernels(args, launch=None):
    # exact: first index of the query in data (or -1) and lower_bound in sorted
    data, srt, m, queries, found, lower, n = args
    m, nn = int(m), int(n)
    found, lower = found.copy(), lower.copy()
    for i in range(nn):
        q = queries[i]
        hit = np.nonzero(data[:m] == q)[0]
        found[i] = hit[0] if len(hit) else -1
    lower[:nn] = np.searchsorted(srt[:m], queries[:nn], side="left")
    return [data, srt, args[2], queries, found, lower, args[6]]


def ref_poly_eval(args, launch=None):
    # exact: the same chain of single-rounding fmaf steps, then one float32 add
    x, y, n = args
    n = int(n)
    y = y.copy()
    acc = np.full(n, _POLY[7], dtype=np.float32)
    for k in range(6, -1, -1):
        acc = fma32(acc, x[:n], np.full(n, _POLY[k], dtype=np.float32))
    y[:n] = acc + np.float32(_G_BIAS)
    return [x, y, args[2]]


# ----------------------------------------------------------------------------- triton


def ref_tt_vector_add(args, launch=None):
    # exact: one float32 add per element
    x, y, out, n = args[:4]
    out = out.copy()
    out[: int(n)] = x[: int(n)] + y[: int(n)]
    return [x, y, out] + list(args[3:])


def ref_tt_row_softmax(args, launch=None):
    # tolerance (see TOLERANCE): tl.exp uses ex2.approx; rows = grid size
    x, out, n_cols, stride = args[:4]
    rows = _dim(launch["grid"]) if launch else 5
    out = out.copy()
    for r in range(rows):
        v = x[r * int(stride) : r * int(stride) + int(n_cols)].astype(np.float64)
        e = np.exp(v - v.max())
        out[r * int(stride) : r * int(stride) + int(n_cols)] = (e / e.sum()).astype(np.float32)
    return [x, out] + list(args[2:])


def ref_tt_cumsum(args, launch=None):
    # exact (int32): inclusive scan restarting at every block of 256 elements
    x, out, n = args[:3]
    n = int(n)
    out = out.copy()
    for s in range(0, n, 256):
        out[s : min(s + 256, n)] = np.cumsum(x[s : min(s + 256, n)], dtype=np.int32)
    return [x, out] + list(args[2:])


def ref_tt_layer_norm_fwd(args, launch=None):
    # tolerance (see TOLERANCE): Triton sums in a tree and divides; rows = grid size
    x, y, w, b, mean, rstd, stride, n, eps = args[:9]
    stride, n = int(stride), int(n)
    rows = _dim(launch["grid"]) if launch else len(mean)
    y, mean, rstd = y.copy(), mean.copy(), rstd.copy()
    for r in range(rows):
        v = x[r * stride : r * stride + n].astype(np.float64)
        m = v.mean()
        s = 1.0 / np.sqrt(((v - m) ** 2).mean() + float(eps))
        mean[r], rstd[r] = m, s
        y[r * stride : r * stride + n] = ((v - m) * s * w[:n] + b[:n]).astype(np.float32)
    return [x, y, w, b, mean, rstd] + list(args[6:])


def ref_tt_layer_norm_bwd(args, launch=None):
    # tolerance (see TOLERANCE): Triton sums in a tree; rows = grid size
    x, dy, dx, w, mean, rstd, dw_rows, db_rows, stride, n = args[:10]
    stride, n = int(stride), int(n)
    rows = _dim(launch["grid"]) if launch else len(mean)
    dx, dw_rows, db_rows = dx.copy(), dw_rows.copy(), db_rows.copy()
    for r in range(rows):
        row = slice(r * stride, r * stride + n)
        g = dy[row].astype(np.float64)
        xhat = (x[row].astype(np.float64) - float(mean[r])) * float(rstd[r])
        wdy = w[:n].astype(np.float64) * g
        c1, c2 = (xhat * wdy).mean(), wdy.mean()
        dx[row] = ((wdy - (xhat * c1 + c2)) * float(rstd[r])).astype(np.float32)
        dw_rows[r * n : (r + 1) * n] = (g * xhat).astype(np.float32)
        db_rows[r * n : (r + 1) * n] = dy[row]
    return [x, dy, dx, w, mean, rstd, dw_rows, db_rows] + list(args[8:])


def ref_tt_attention_fwd(args, launch=None):
    # tolerance (see TOLERANCE): non-causal softmax(Q K^T * scale) V per head of
    # [heads, seq_len, head_dim] tensors; L is the row's log2-sum-exp2 in the kernel's
    # log2 domain (max + log2 of the sum)
    q, k, v, o, lse, scale, seq_len = args[:7]
    s_len = int(seq_len)
    heads = lse.size // s_len
    d = q.size // (heads * s_len)
    shape = (heads, s_len, d)
    qf, kf, vf = (a.reshape(shape).astype(np.float64) for a in (q, k, v))
    s = qf @ kf.transpose(0, 2, 1) * float(scale) / np.log(2.0)
    m = s.max(-1, keepdims=True)
    p = np.exp2(s - m)
    total = p.sum(-1, keepdims=True)
    out = ((p / total) @ vf).astype(np.float32).reshape(-1)
    lse_out = (m[..., 0] + np.log2(total[..., 0])).astype(np.float32).reshape(-1)
    return [q, k, v, out, lse_out] + list(args[5:])


def _tofloat(a):
    """float64 values of a float array or of bf16 bit patterns (uint16)."""
    if a.dtype == np.uint16:
        return bf16_bits_to_f32(a).astype(np.float64)
    return a.astype(np.float64)


def _like(x, a):
    """float64 values -> the element type of ``a`` (bf16 bit patterns for uint16)."""
    if a.dtype == np.uint16:
        return f32_to_bf16_bits(x.astype(np.float32))
    return x.astype(a.dtype)


def ref_tt_matmul(args, launch=None):
    # tolerance: C = A @ B for row-major A [M, K], B [K, N] given by the strides
    a, b, c = args[:3]
    m, n, k, sam, sak, sbk, sbn, scm, scn = (int(x) for x in args[3:12])
    ia = np.arange(m)[:, None] * sam + np.arange(k)[None, :] * sak
    ib = np.arange(k)[:, None] * sbk + np.arange(n)[None, :] * sbn
    prod = a.astype(np.float64)[ia] @ b.astype(np.float64)[ib]
    out = c.copy()
    out[np.arange(m)[:, None] * scm + np.arange(n)[None, :] * scn] = prod.astype(c.dtype)
    return [a, b, out] + list(args[3:])


def _causal_scores(q, k, heads, s_len, scale):
    d = q.size // (heads * s_len)
    shape = (heads, s_len, d)
    qf, kf = (_tofloat(x).reshape(shape) for x in (q, k))
    s = qf @ kf.transpose(0, 2, 1) * float(scale) / np.log(2.0)
    mask = np.tril(np.ones((s_len, s_len), dtype=bool))
    return np.where(mask, s, -np.inf), mask, shape


def ref_tt_attention_fwd_causal(args, launch=None):
    # tolerance: causal softmax(Q K^T * scale) V in the log2 domain; L = max + log2(sum)
    q, k, v, o, lse, scale, seq_len = args[:7]
    s_len = int(seq_len)
    heads = lse.size // s_len
    s, _, shape = _causal_scores(q, k, heads, s_len, scale)
    m = s.max(-1, keepdims=True)
    p = np.exp2(s - m)
    total = p.sum(-1, keepdims=True)
    out = (p / total) @ _tofloat(v).reshape(shape)
    lse_out = (m[..., 0] + np.log2(total[..., 0])).astype(np.float32).reshape(-1)
    return [q, k, v, _like(out.reshape(-1), o), lse_out] + list(args[5:])


def ref_tt_attention_bwd_causal(args, launch=None):
    # tolerance: the kernel's backward with the given L (log2-sum-exp2) and Delta:
    # P = exp2(S - L) (causal), dV = P^T dO, dS = P * (dO V^T - Delta),
    # dK = dS^T Q * scale, dQ = dS K * scale (DQ accumulates onto its contents)
    q, k, v, do, dq, dk, dv, lse, delta, scale, seq_len = args[:11]
    s_len = int(seq_len)
    heads = lse.size // s_len
    s, mask, shape = _causal_scores(q, k, heads, s_len, scale)
    lf = lse.astype(np.float64).reshape(heads, s_len, 1)
    p = np.where(mask, np.exp2(s - lf), 0.0)
    dof = _tofloat(do).reshape(shape)
    qf, kf, vf = (_tofloat(x).reshape(shape) for x in (q, k, v))
    dv_out = p.transpose(0, 2, 1) @ dof
    dp = dof @ vf.transpose(0, 2, 1)
    ds = p * (dp - delta.astype(np.float64).reshape(heads, s_len, 1))
    sc = float(scale)
    dk_out = ds.transpose(0, 2, 1) @ qf * sc
    dq_out = dq.astype(np.float64).reshape(shape) + ds @ kf * sc
    return [
        q,
        k,
        v,
        do,
        dq_out.astype(np.float32).reshape(-1),
        _like(dk_out.reshape(-1), dk),
        _like(dv_out.reshape(-1), dv),
    ] + list(args[7:])


def e4m3_to_f64(bits):
    b = np.asarray(bits, dtype=np.int64)
    e = (b >> 3) & 15
    f = b & 7
    mag = np.where(e == 0, f / 8.0 * 2.0**-6, (1 + f / 8.0) * 2.0 ** (e - 7.0))
    mag = np.where((e == 15) & (f == 7), np.nan, mag)
    return np.where(b & 0x80, -mag, mag)


def ref_tt_fp8_matmul(args, launch=None):
    # tolerance: C = (A a_scale) @ (B b_scale)^T with A [M, K], B [N, K] e4m3 row-major
    a, b, c, a_scale, b_scale = args[:5]
    m, n, k, sam, sbn, scm = (int(x) for x in args[5:11])
    A = e4m3_to_f64(a)[np.arange(m)[:, None] * sam + np.arange(k)[None, :]]
    B = e4m3_to_f64(b)[np.arange(n)[:, None] * sbn + np.arange(k)[None, :]]
    acc = (A @ B.T).astype(np.float32) * (np.float32(a_scale) * np.float32(b_scale))
    out = c.copy()
    out[np.arange(m)[:, None] * scm + np.arange(n)[None, :]] = acc.astype(c.dtype)
    return [a, b, out] + list(args[3:])


def ref_tt_fp8_matmul_tma(args, launch=None):
    # tolerance: as ref_tt_fp8_matmul (contiguous A [M, K], B [N, K], C [M, N]); the
    # global scratch holds the kernel's tensor maps, whose encoding is the
    # implementation's (None: not compared)
    m, n, k = (int(x) for x in args[5:8])
    out = ref_tt_fp8_matmul(list(args[:8]) + [k, k, n])
    return out[:8] + [None, args[9]]


# ----------------------------------------------------------------------------- CUTLASS


def tf32_rna(x):
    """fp32 -> tf32 rounded to nearest, ties away (CUTLASS's default conversion)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    return ((u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def ref_cutlass_tf32_gemm(args, launch):
    # tolerance: D = alpha A B + beta C with A [M, K] row-major, B [K, N] column-major,
    # C, D [M, N] row-major (the Params' pointers in offset order: A, B, C, D); inputs
    # rounded to tf32, exact products, fp32 sums
    a, b, c, d = args[:4]
    m, n, k = launch["problem"]
    alpha, beta = launch["alpha"], launch["beta"]
    A = tf32_rna(a).reshape(m, k).astype(np.float64)
    B = tf32_rna(b).reshape(n, k).astype(np.float64)
    out = alpha * (A @ B.T) + beta * c.reshape(m, n).astype(np.float64)
    return [a, b, c, out.astype(np.float32).reshape(-1)] + list(args[4:])


def ref_cutlass_fmha(args, launch):
    # tolerance: O = softmax(Q K^T / sqrt(D)) V per batch and head of [B, M, H, D]
    # tensors (the Params' pointers in offset order: Q, K, V, O); fp16 operands, fp32
    # accumulation and online softmax in the kernel
    q, k, v, o = args[:4]
    shape = tuple(launch["bmhk"])
    qf, kf, vf = (x.reshape(shape).astype(np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    s = qf @ kf.transpose(0, 1, 3, 2) / np.sqrt(shape[3])
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = (p @ vf).transpose(0, 2, 1, 3).reshape(-1).astype(o.dtype)
    return [q, k, v, out] + list(args[4:])


def ref_cutlass_conv2d_fprop(args, launch):
    # tolerance: D = alpha conv2d(X, W) + beta C, cross-correlation with zero padding and
    # unit stride; X [N, H, W, C], W [K, R, S, C], C and D [N, P, Q, K] (NHWC); fp16
    # inputs, exact products, fp32 sums
    x, w, c, d = args[:4]
    n, h, wd, ch, k, r, s, pad = launch["nhwc_krs_pad"]
    p, q = h + 2 * pad - r + 1, wd + 2 * pad - s + 1
    xp = np.pad(
        x.reshape(n, h, wd, ch).astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0))
    )
    wf = w.reshape(k, r, s, ch).astype(np.float64)
    acc = np.zeros((n, p, q, k))
    for i in range(r):
        for j in range(s):
            acc += np.einsum("nhwc,kc->nhwk", xp[:, i : i + p, j : j + q, :], wf[:, i, j, :])
    out = launch["alpha"] * acc + launch["beta"] * c.reshape(n, p, q, k).astype(np.float64)
    return [x, w, c, out.astype(np.float32).reshape(-1)] + list(args[4:])


def ref_cutlass_mixed_gemm(args, launch):
    # tolerance: D = alpha A half(B)^T + beta C with A [M, K] half row-major, B [N, K]
    # e4m3 (column-major K x N), C and D [M, N] half row-major (pointers by offset: B, A,
    # C, D); exact products, fp32 sums, fp16 result
    b, a, c, d = args[:4]
    m, n, k = launch["problem"]
    A = a.reshape(m, k).astype(np.float64)
    B = e4m3_to_f64(b).astype(np.float16).astype(np.float64).reshape(n, k)
    out = launch["alpha"] * (A @ B.T) + launch["beta"] * c.reshape(m, n).astype(np.float64)
    return [b, a, c, out.astype(np.float16).reshape(-1)] + list(args[4:])


# ----------------------------------------------------------------------------- CUB


def ref_cub_sort_pairs(args, launch=None):
    # exact: keys ascending, values carried along; radix sort is stable
    keys, _, vals = args[:3]
    n = int(args[4])
    order = np.argsort(keys[:n], kind="stable")
    ko, vo = args[1].copy(), args[3].copy()
    ko[:n], vo[:n] = keys[:n][order], vals[:n][order]
    return [keys, ko, vals, vo] + list(args[4:])


def ref_cub_sort_keys_descending(args, launch=None):
    # exact: distinct random floats (no zeros, no NaN) in descending order
    keys = args[0]
    n = int(args[4])
    ko = args[1].copy()
    ko[:n] = np.sort(keys[:n])[::-1]
    return [keys, ko] + list(args[2:])


# ----------------------------------------------------------------------------- numba
# numba 1-D arrays occupy 7 argument slots; the data pointer is the 5th (index 4 and 11).


def ref_nb_scale_shift(args, launch=None):
    # exact: x*2 is exact, so fma(x, 2, 1) and x*2+1 round the same way
    out = list(args)
    x, y, n = args[4], args[11].copy(), int(args[14])
    y[:n] = x[:n] * np.float32(2) + np.float32(1)
    out[11] = y
    return out


def ref_nb_digit_histogram(args, launch=None):
    # exact: counts of decimal digits (0 has one digit) of vals[:n]
    out = list(args)
    vals, hist, n = args[4], args[11].copy(), int(args[14])
    for v in vals[:n]:
        v = int(v)
        while True:
            hist[v % 10] += 1
            v //= 10
            if v == 0:
                break
    out[11] = hist
    return out


def ref_nb_clamp_count(args, launch=None):
    # exact: out[:n] = clip(x, lo, hi); out[n] += number of clipped values
    out = list(args)
    x, y, lo, hi = args[4], args[11].copy(), int(args[14]), int(args[15])
    n = x.shape[0]
    y[:n] = np.clip(x, lo, hi)
    y[n] += int(np.count_nonzero((x < lo) | (x > hi)))
    out[11] = y
    return out


# ----------------------------------------------------------------------------- llvm


def ref_block_bitcount(args, launch=None):
    # exact: popcount of each 32-bit pattern and per-block totals
    inp, counts, sums, n = args
    grid, block = _geom(launch, 3, 128)
    n = int(n)
    counts, sums = counts.copy(), sums.copy()
    u = inp[:n].view(np.uint32)
    pc = np.array([bin(int(v)).count("1") for v in u], dtype=np.int32)
    counts[:n] = pc
    padded = np.zeros(grid * block, dtype=np.int32)
    padded[:n] = pc
    sums[:grid] = padded.reshape(grid, block).sum(axis=1)
    return [inp, counts, sums, args[3]]
