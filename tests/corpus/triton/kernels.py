"""Triton kernels (triton 3.5.1) for the ptxopt corpus, compiled ahead of time (no GPU).

Each entry of SPECS describes one PTX file: the kernel, its signature, constexprs,
the target architecture and compile options. generate.py turns them into PTX.
"""

import triton
import triton.language as tl


@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def row_softmax(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    s = tl.sum(e, axis=0)
    tl.store(out_ptr + row * row_stride + cols, e / s, mask=mask)


@triton.jit
def matmul(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    PRECISION: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kmask = rk < K - k * BK
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & kmask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=kmask[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def masked_cumsum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # one program scans one block of int32 values; used to get tl.cumsum in the corpus
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0), mask=mask)


_MM_SIG = {
    "a_ptr": "*fp16",
    "b_ptr": "*fp16",
    "c_ptr": "*fp16",
    "M": "i32",
    "N": "i32",
    "K": "i32",
    "stride_am": "i32",
    "stride_ak": "i32",
    "stride_bk": "i32",
    "stride_bn": "i32",
    "stride_cm": "i32",
    "stride_cn": "i32",
}
_MM_SIG32 = {k: ("*fp32" if v == "*fp16" else v) for k, v in _MM_SIG.items()}

# Alignment hints a real launch would pass: pointers (and the matmul sizes/strides of the
# tensor-core variants) divisible by 16.
_PTR16 = {
    (0,): [["tt.divisibility", 16]],
    (1,): [["tt.divisibility", 16]],
    (2,): [["tt.divisibility", 16]],
}
_MM16 = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 5, 6, 8, 10)}

# name -> (fn, signature, constexprs, arch, options[, attrs])
SPECS = {
    "vector_add.sm90": (
        vector_add,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
        {"BLOCK": 256},
        90,
        {"num_warps": 4},
        _PTR16,
    ),
    "row_softmax.sm90": (
        row_softmax,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32", "row_stride": "i32"},
        {"BLOCK": 128},
        90,
        {"num_warps": 4},
    ),
    "cumsum.sm80": (
        masked_cumsum,
        {"x_ptr": "*i32", "out_ptr": "*i32", "n": "i32"},
        {"BLOCK": 256},
        80,
        {"num_warps": 4},
    ),
    "matmul_fp16.sm80": (
        matmul,
        _MM_SIG,
        {"BM": 64, "BN": 64, "BK": 32, "PRECISION": "tf32"},
        80,
        {"num_warps": 4, "num_stages": 3},
        _MM16,
    ),
    "matmul_fp16.sm90a": (
        matmul,
        _MM_SIG,
        {"BM": 128, "BN": 128, "BK": 64, "PRECISION": "tf32"},
        90,
        {"num_warps": 4, "num_stages": 3},
        _MM16,
    ),
    # fp32 with input_precision="ieee": the dot becomes plain FMAs; one warp computes a
    # 64x64 tile over K=128 per step, so the unrolled body is about 24k lines of PTX.
    "matmul_fp32_ieee.sm90": (
        matmul,
        _MM_SIG32,
        {"BM": 64, "BN": 64, "BK": 128, "PRECISION": "ieee"},
        90,
        {"num_warps": 1, "num_stages": 1},
    ),
}
