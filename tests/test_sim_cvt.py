"""Integer ``cvt`` in the interpreter against an independent reference, for every pair
of integer types at edge values: narrowing truncates, widening sign-extends signed
sources and zero-extends unsigned ones, ``.sat`` clamps to the destination's range.
(A widening that zero-extends a signed source passed the rest of the suite once.)"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ptxopt.sim import launch

TYPES = ("s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64")
# (register class prefix, register bits, load/store type) per type
REG = {"8": ("%r", 32, "b32"), "16": ("%h", 16, "b16"), "32": ("%r", 32, "b32"),
       "64": ("%rd", 64, "b64")}  # fmt: skip
EDGES = [0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000,
         0xFFFFFFFF, 0x100000000, 2**63 - 1, 2**63, 2**64 - 1, 0x123456789ABCDEF0,
         2**64 - 2]  # fmt: skip


def _bits(t: str) -> int:
    return int(t[1:])


def _value(bits: int, t: str) -> int:
    """The integer an operand of type ``t`` holds, from its register's low bits."""
    n = _bits(t)
    v = bits & ((1 << n) - 1)
    return v - (1 << n) if t[0] == "s" and v >> (n - 1) else v


def _reference(bits: int, dst: str, src: str, sat: bool) -> int:
    v = _value(bits, src)
    n = _bits(dst)
    if sat:
        lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if dst[0] == "s" else (0, (1 << n) - 1)
        v = min(max(v, lo), hi)
    return v & ((1 << n) - 1)


def _may_saturate(dst: str, src: str) -> bool:
    d, s = _bits(dst), _bits(src)
    if dst[0] == "s" and src[0] == "u":
        return d <= s
    return d < s or (dst[0] == "u" and src[0] == "s")


CASES = [(d, s, False) for d, s in itertools.product(TYPES, TYPES)]
CASES += [(d, s, True) for d, s in itertools.product(TYPES, TYPES) if _may_saturate(d, s)]


def _kernel(dst: str, src: str, sat: bool) -> str:
    dp, dbits, dty = REG[str(_bits(dst))]
    sp, sbits, sty = REG[str(_bits(src))]
    return f""".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 inp, .param .u64 out)
{{
\t.reg .b32 %r<4>;
\t.reg .b16 %h<4>;
\t.reg .b64 %rd<8>;
\tld.param.u64 %rd1, [inp];
\tld.param.u64 %rd2, [out];
\tmov.u32 %r3, %tid.x;
\tmul.wide.u32 %rd3, %r3, 8;
\tadd.s64 %rd4, %rd1, %rd3;
\tadd.s64 %rd5, %rd2, %rd3;
\tld.global.{sty} {sp}1, [%rd4];
\tcvt{".sat" if sat else ""}.{dst}.{src} {dp}2, {sp}1;
\tst.global.{dty} [%rd5], {dp}2;
\tret;
}}
"""


@pytest.mark.parametrize("dst,src,sat", CASES, ids=[f"{d}.{s}{'.sat' * t}" for d, s, t in CASES])
def test_integer_cvt_matches_reference(dst: str, src: str, sat: bool) -> None:
    inp = np.array(EDGES, dtype=np.uint64)
    out = np.zeros(len(EDGES), dtype=np.uint64)
    launch(_kernel(dst, src, sat), "k", 1, len(EDGES), [inp, out])
    dbits = _bits(dst)
    mask = (1 << dbits) - 1  # an 8-bit result in a 32-bit register: compare its byte
    for x, got in zip(EDGES, out.tolist(), strict=True):
        want = _reference(x, dst, src, sat)
        assert got & mask == want, f"cvt{'.sat' * sat}.{dst}.{src} of {x:#x}: {got:#x} != {want:#x}"
