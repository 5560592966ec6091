"""Compile a few real Triton kernels for given GPU targets without a GPU, and print
what came out as JSON (run as a script by the Triton tests, so that Triton's
environment knobs are read fresh in each run).

    python tests/triton_kernels.py 80 90 [--hook PASSES] [--out DIR]

``--hook`` enables ptxopt's in-process hook (:mod:`ptxopt.triton`) first.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def softmax_kernel(out, inp, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(inp + row * stride + cols, mask=m, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out + row * stride + cols, num / tl.sum(num, axis=0), mask=m)


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        av = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        bv = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(av, bv)
    tl.store(c + rm[:, None] * N + rn[None, :], acc)


KERNELS = {
    "add": (
        add_kernel,
        {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 256},
    ),
    "softmax": (
        softmax_kernel,
        {"out": "*fp32", "inp": "*fp32", "stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 1024},
    ),
    "matmul": (
        matmul_kernel,
        {
            "a": "*fp16",
            "b": "*fp16",
            "c": "*fp32",
            "M": "i32",
            "N": "i32",
            "K": "i32",
            "BM": "constexpr",
            "BN": "constexpr",
            "BK": "constexpr",
        },
        {"BM": 64, "BN": 64, "BK": 32},
    ),
}


def compile_all(caps: list[int], out_dir: str | None, options: dict[str, object]) -> dict:
    result: dict[str, dict[str, dict[str, object]]] = {}
    for cap in caps:
        for name, (fn, sig, consts) in KERNELS.items():
            src = ASTSource(fn=fn, signature=sig, constexprs=consts)
            k = triton.compile(src, target=GPUTarget("cuda", cap, 32), options=options)
            ptx, cubin = k.asm["ptx"], k.asm["cubin"]
            if out_dir:
                base = os.path.join(out_dir, f"{name}.sm{cap}")
                with open(base + ".ptx", "w") as f:
                    f.write(ptx)
                with open(base + ".cubin", "wb") as f:
                    f.write(cubin)
            result.setdefault(str(cap), {})[name] = {
                "ptx_sha": hashlib.sha256(ptx.encode()).hexdigest(),
                "cubin_bytes": len(cubin),
                "elf": cubin[:4] == b"\x7fELF",
            }
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("caps", nargs="+", type=int)
    ap.add_argument("--hook", metavar="PASSES")
    ap.add_argument("--out")
    ap.add_argument("--ptx-version", type=int)
    a = ap.parse_args()
    if a.hook is not None:
        import ptxopt.triton

        ptxopt.triton.enable(passes=a.hook, log=os.environ.get("PTXOPT_LOG"))
    options: dict[str, object] = {}
    if a.ptx_version:
        options["ptx_version"] = a.ptx_version
    json.dump(compile_all(a.caps, a.out, options), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
