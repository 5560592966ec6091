"""Small kernels for the commoning passes' tests: a body is wrapped in a kernel whose
threads each own 16 bytes of ``out`` and read 16 bytes of ``inp``; :func:`opt` runs
passes and checks the result bit for bit against the input in the interpreter."""

from __future__ import annotations

import re

import numpy as np

from ptxopt.driver import optimize
from ptxopt.sim import differential

HEADER = """.version 8.0
.target {arch}
.address_size 64
.const .align 4 .b32 ctab[8] = {{1, 2, 3, 4, 5, 6, 7, 8}};
.visible .entry k(.param .u64 out, .param .u64 inp, .param .u32 n)
{{
 .reg .b32 %r<60>; .reg .b64 %rd<30>; .reg .pred %p<10>; .reg .f32 %f<20>;
 .shared .align 4 .b32 sh[128];
 ld.param.u64 %rd1, [out];
 ld.param.u64 %rd2, [inp];
 ld.param.u32 %r40, [n];
 mov.u32 %r1, %tid.x;
 mul.wide.u32 %rd3, %r1, 16;
 add.s64 %rd4, %rd1, %rd3;
 add.s64 %rd5, %rd2, %rd3;
 ld.global.u32 %r2, [%rd5];
 ld.global.u32 %r3, [%rd5+4];
{body}
 ret;
}}
"""


def kernel(body: str, arch: str = "sm_90") -> str:
    return HEADER.format(arch=arch, body=body)


def _args(seed: int) -> list[object]:
    rng = np.random.default_rng(seed)
    return [
        np.zeros(512, dtype=np.uint32),
        rng.integers(0, 2**32, 512, dtype=np.uint64).astype(np.uint32),
        int(rng.integers(0, 100)),
    ]


def run_same(a: str, b: str) -> None:
    """``a`` and ``b`` compute the same memory, bit for bit."""
    res = differential(a, b, "k", [(1, 32), (1, 64)], None, _args, trials=2)
    assert res.ok and res.both_failed == 0, res.message


def opt(
    text: str,
    passes: list[str],
    knobs: dict[str, object] | None = None,
    arch: str | None = None,
    check: bool = True,
) -> str:
    out = optimize(text, "<test>", passes, verify_each=True, knobs=knobs, arch=arch).text
    if check:
        run_same(text, out)
    return out


def count(text: str, pattern: str) -> int:
    """Instructions whose opcode (with modifiers) matches ``pattern`` at its start."""
    rx = re.compile(r"^\s*(@!?%\w+\s+)?" + pattern)
    return sum(1 for line in text.splitlines() if rx.match(line))
