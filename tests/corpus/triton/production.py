"""Triton kernels (triton 3.5.1) shaped like production workloads, for the ptxopt
corpus: fused attention forward and backward, layer norm forward and backward, and
an fp8 GEMM (with and without TMA tensor descriptors).  Written for this project;
compiled ahead of time (no GPU) by generate.py for sm_80 and sm_90a.

Each entry of SPECS describes one PTX file, as in kernels.py:
name -> (fn, signature, constexprs, arch, options[, attrs]).
"""

import triton
import triton.language as tl

# ----------------------------------------------------------------------------- attention
# Tensors are contiguous [heads, seq_len, HEAD_DIM]; L and Delta are [heads, seq_len].
# Scores live in the log2 domain (scale folded with 1/ln 2) so the kernels use exp2.


@triton.jit
def attention_fwd(
    Q,
    K,
    V,
    Out,
    L,
    sm_scale,
    seq_len,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    PRECISION: tl.constexpr,
):
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    base = head * seq_len * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < seq_len
    q = tl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=row_ok[:, None])
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    hi = seq_len
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, seq_len)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < seq_len
        kt = tl.load(K + base + offs_n[None, :] * HEAD_DIM + offs_d[:, None], mask=col_ok[None, :])
        qk = tl.dot(q, kt, input_precision=PRECISION) * qk_scale
        keep = col_ok[None, :]
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        qk = tl.where(keep, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=col_ok[:, None])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(L + head * seq_len + offs_m, m_i + tl.math.log2(l_i), mask=row_ok)
    out = Out + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    tl.store(out, acc.to(Out.dtype.element_ty), mask=row_ok[:, None])


@triton.jit
def attention_bwd(
    Q,
    K,
    V,
    DO,
    DQ,
    DK,
    DV,
    L,
    Delta,
    sm_scale,
    seq_len,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    # One program owns a block of keys: it accumulates dK and dV over all queries
    # that see them and adds its share of dQ atomically (DQ is fp32, zeroed).
    start_n = tl.program_id(0)
    head = tl.program_id(1)
    base = head * seq_len * HEAD_DIM
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    key_ok = offs_n < seq_len
    k = tl.load(K + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=key_ok[:, None])
    v = tl.load(V + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=key_ok[:, None])
    qk_scale = sm_scale * 1.4426950408889634
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    lo = 0
    if CAUSAL:
        lo = (start_n * BLOCK_N) // BLOCK_M * BLOCK_M
    for start_m in range(lo, seq_len, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        row_ok = offs_m < seq_len
        q = tl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=row_ok[:, None])
        do = tl.load(DO + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=row_ok[:, None])
        lse = tl.load(L + head * seq_len + offs_m, mask=row_ok, other=0.0)
        delta = tl.load(Delta + head * seq_len + offs_m, mask=row_ok, other=0.0)
        qkt = tl.dot(k, tl.trans(q)) * qk_scale
        keep = key_ok[:, None] & row_ok[None, :]
        if CAUSAL:
            keep = keep & (offs_m[None, :] >= offs_n[:, None])
        pt = tl.where(keep, tl.math.exp2(qkt - lse[None, :]), 0.0)
        dv += tl.dot(pt.to(do.dtype), do)
        dpt = tl.dot(v, tl.trans(do))
        dst = pt * (dpt - delta[None, :])
        dk += tl.dot(dst.to(q.dtype), q)
        dq = tl.dot(tl.trans(dst).to(k.dtype), k) * sm_scale
        tl.atomic_add(
            DQ + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], dq, mask=row_ok[:, None]
        )
    out = base + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    tl.store(DK + out, (dk * sm_scale).to(DK.dtype.element_ty), mask=key_ok[:, None])
    tl.store(DV + out, dv.to(DV.dtype.element_ty), mask=key_ok[:, None])


# ----------------------------------------------------------------------------- layer norm


@triton.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, row_stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    ok = cols < N
    x = tl.load(X + row * row_stride + cols, mask=ok, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(ok, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=ok, other=0.0)
    b = tl.load(B + cols, mask=ok, other=0.0)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    tl.store(Y + row * row_stride + cols, (xc * rstd * w + b).to(Y.dtype.element_ty), mask=ok)


@triton.jit
def layer_norm_bwd(
    X, DY, DX, W, Mean, Rstd, DW_rows, DB_rows, row_stride, N, BLOCK_N: tl.constexpr
):
    # dX per row; the per-row dW and dB contributions go to [rows, N] buffers that a
    # second reduction sums (not part of this kernel).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    ok = cols < N
    x = tl.load(X + row * row_stride + cols, mask=ok, other=0.0).to(tl.float32)
    dy = tl.load(DY + row * row_stride + cols, mask=ok, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=ok, other=0.0).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = tl.where(ok, (x - mean) * rstd, 0.0)
    wdy = tl.where(ok, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + row * row_stride + cols, dx.to(DX.dtype.element_ty), mask=ok)
    tl.store(DW_rows + row * N + cols, dy * xhat, mask=ok)
    tl.store(DB_rows + row * N + cols, dy, mask=ok)


# ----------------------------------------------------------------------------- fp8 GEMM


@triton.jit
def fp8_matmul(
    a_ptr,
    b_ptr,
    c_ptr,
    a_scale,
    b_scale,
    M,
    N,
    K,
    stride_am,
    stride_bn,
    stride_cm,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    # C = (A * a_scale) @ (B * b_scale)^T with A [M, K] and B [N, K] row-major e4m3.
    pid = tl.program_id(0)
    grid_n = tl.cdiv(N, BN)
    pid_m = pid // grid_n
    pid_n = pid % grid_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rn[None, :] * stride_bn + rk[:, None]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kmask = rk < K - k * BK
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & kmask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=kmask[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK
    acc = acc * (a_scale * b_scale)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def fp8_matmul_tma(
    a_ptr,
    b_ptr,
    c_ptr,
    a_scale,
    b_scale,
    M,
    N,
    K,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    # The same product through TMA tensor descriptors, persistent over output tiles.
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tiles_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    for tile in range(tl.program_id(0), tiles, tl.num_programs(0)):
        off_m = (tile // tiles_n) * BM
        off_n = (tile % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = a_desc.load([off_m, k * BK])
            b = b_desc.load([off_n, k * BK])
            acc = tl.dot(a, b.T, acc)
        acc = acc * (a_scale * b_scale)
        c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))


# ----------------------------------------------------------------------------- specs


def _attn_sig(dtype):
    p = f"*{dtype}"
    return {"Q": p, "K": p, "V": p, "Out": p, "L": "*fp32", "sm_scale": "fp32", "seq_len": "i32"}


def _attn_bwd_sig(dtype):
    p = f"*{dtype}"
    return {
        "Q": p,
        "K": p,
        "V": p,
        "DO": p,
        "DQ": "*fp32",
        "DK": p,
        "DV": p,
        "L": "*fp32",
        "Delta": "*fp32",
        "sm_scale": "fp32",
        "seq_len": "i32",
    }


_LN_FWD = {
    "X": "*fp32",
    "Y": "*fp32",
    "W": "*fp32",
    "B": "*fp32",
    "Mean": "*fp32",
    "Rstd": "*fp32",
    "row_stride": "i32",
    "N": "i32",
    "eps": "fp32",
}
_LN_BWD = {
    "X": "*fp32",
    "DY": "*fp32",
    "DX": "*fp32",
    "W": "*fp32",
    "Mean": "*fp32",
    "Rstd": "*fp32",
    "DW_rows": "*fp32",
    "DB_rows": "*fp32",
    "row_stride": "i32",
    "N": "i32",
}
_FP8 = {
    "a_ptr": "*fp8e4nv",
    "b_ptr": "*fp8e4nv",
    "c_ptr": "*fp16",
    "a_scale": "fp32",
    "b_scale": "fp32",
    "M": "i32",
    "N": "i32",
    "K": "i32",
    "stride_am": "i32",
    "stride_bn": "i32",
    "stride_cm": "i32",
}
_FP8_TMA = {k: v for k, v in _FP8.items() if not k.startswith("stride")}


# Pointers 16-byte aligned and sizes/strides divisible by 16, as a framework promises
# for typical shapes (hidden sizes, sequence lengths), so Triton vectorizes.
def _aligned(*indices):
    return {(i,): [["tt.divisibility", 16]] for i in indices}


_ATTN_ALIGN = _aligned(0, 1, 2, 3, 4, 6)
_ATTN_BWD_ALIGN = _aligned(*range(9), 10)
_LN_FWD_ALIGN = _aligned(*range(8))
_LN_BWD_ALIGN = _aligned(*range(10))
_FP8_ALIGN = _aligned(0, 1, 2, 5, 6, 7, 8, 9, 10)
_FP8_TMA_ALIGN = _aligned(0, 1, 2, 5, 6, 7)

_ATTN = {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 64, "CAUSAL": True, "PRECISION": "tf32"}
_ATTN_BWD = {"HEAD_DIM": 64, "BLOCK_M": 32, "BLOCK_N": 64, "CAUSAL": True}

SPECS = {
    "attention_fwd_fp16.sm80": (
        attention_fwd,
        _attn_sig("fp16"),
        _ATTN,
        80,
        {"num_warps": 4, "num_stages": 2},
        _ATTN_ALIGN,
    ),
    "attention_fwd_fp16.sm90a": (
        attention_fwd,
        _attn_sig("fp16"),
        dict(_ATTN, BLOCK_M=128),
        90,
        {"num_warps": 8, "num_stages": 3},
        _ATTN_ALIGN,
    ),
    "attention_bwd_fp16.sm80": (
        attention_bwd,
        _attn_bwd_sig("fp16"),
        _ATTN_BWD,
        80,
        {"num_warps": 4, "num_stages": 1},
        _ATTN_BWD_ALIGN,
    ),
    "attention_bwd_bf16.sm90a": (
        attention_bwd,
        _attn_bwd_sig("bf16"),
        _ATTN_BWD,
        90,
        {"num_warps": 4, "num_stages": 2},
        _ATTN_BWD_ALIGN,
    ),
    # fp32 with input_precision="ieee": both dots become FMAs, unrolled into ~40k lines
    # of PTX with no tensor-core instruction.
    "attention_fwd_fp32_ieee.sm80": (
        attention_fwd,
        _attn_sig("fp32"),
        {"HEAD_DIM": 128, "BLOCK_M": 64, "BLOCK_N": 64, "CAUSAL": False, "PRECISION": "ieee"},
        80,
        {"num_warps": 1, "num_stages": 1},
        _ATTN_ALIGN,
    ),
    "layer_norm_fwd.sm80": (
        layer_norm_fwd,
        _LN_FWD,
        {"BLOCK_N": 256},
        80,
        {"num_warps": 4},
        _LN_FWD_ALIGN,
    ),
    "layer_norm_fwd.sm90a": (
        layer_norm_fwd,
        _LN_FWD,
        {"BLOCK_N": 1024},
        90,
        {"num_warps": 8},
        _LN_FWD_ALIGN,
    ),
    "layer_norm_bwd.sm80": (
        layer_norm_bwd,
        _LN_BWD,
        {"BLOCK_N": 256},
        80,
        {"num_warps": 4},
        _LN_BWD_ALIGN,
    ),
    "layer_norm_bwd.sm90a": (
        layer_norm_bwd,
        _LN_BWD,
        {"BLOCK_N": 512},
        90,
        {"num_warps": 4},
        _LN_BWD_ALIGN,
    ),
    "fp8_matmul.sm90a": (
        fp8_matmul,
        _FP8,
        {"BM": 128, "BN": 128, "BK": 64},
        90,
        {"num_warps": 8, "num_stages": 4},
        _FP8_ALIGN,
    ),
    "fp8_matmul_tma.sm90a": (
        fp8_matmul_tma,
        _FP8_TMA,
        {"BM": 128, "BN": 128, "BK": 128},
        90,
        {"num_warps": 8, "num_stages": 3},
        _FP8_TMA_ALIGN,
    ),
}
