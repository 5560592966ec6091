"""Small contracts of the interpreter: the popcount fallback for numpy without
``bitwise_count`` (numpy 1.x, which ``pyproject.toml`` admits), and the error for a
``brx.idx`` without a branch table."""

from __future__ import annotations

import numpy as np
import pytest

from ptxopt.sim import SimError, launch
from ptxopt.sim.ops.bits import _popcount


@pytest.mark.parametrize("size", [4, 8])
def test_popcount_fallback_without_bitwise_count(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    vals = [0, 1, 0x80000000, 0xFFFFFFFF, 0x12345678]
    if size == 8:
        vals += [0xFFFFFFFFFFFFFFFF, 0x8000000000000001]
    want = [bin(v).count("1") for v in vals]
    a = np.array(vals, dtype=np.uint64 if size == 8 else np.uint32)
    assert _popcount(a, size).tolist() == want
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    got = _popcount(a, size)
    assert got.dtype == np.uint32 and got.tolist() == want


def test_brx_idx_without_a_table_is_an_interpreter_error() -> None:
    text = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k()
{
\t.reg .b32 %r<3>;
T: .branchtargets A;
\tbrx.idx %r1;
A:
\tret;
}
"""
    with pytest.raises(SimError, match=r"brx\.idx needs a \.branchtargets table"):
        launch(text, "k", 1, 1, [])


def test_sm_specials_describe_one_sm() -> None:
    """The interpreter models one SM: %smid is 0 and %nsmid is 1 for every thread."""
    text = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, %smid;
\tmov.u32 %r2, %nsmid;
\tmov.u32 %r3, %tid.x;
\tmul.wide.u32 %rd2, %r3, 8;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.v2.u32 [%rd3], {%r1, %r2};
\tret;
}
"""
    out = np.full(8, 7, np.uint32)
    launch(text, "k", 1, 4, [out])
    assert out.tolist() == [0, 1] * 4


def test_atomic_float_min_and_max() -> None:
    text = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
\t.reg .f32 %f<6>;
\t.reg .b64 %rd<2>;
\tld.param.u64 %rd1, [out];
\tmov.f32 %f1, 0f40400000;
\tatom.global.max.f32 %f2, [%rd1], %f1;
\tatom.global.min.f32 %f3, [%rd1+4], %f1;
\tst.global.f32 [%rd1+8], %f2;
\tst.global.f32 [%rd1+12], %f3;
\tret;
}
"""
    out = np.array([2.0, 5.0, 0.0, 0.0], np.float32)
    launch(text, "k", 1, 1, [out])
    assert out.tolist() == [3.0, 3.0, 2.0, 5.0]


@pytest.mark.parametrize(("kind", "want"), [("f16x2", 0x3C00C000), ("bf16x2", 0x3F80C000)])
def test_cvt_packs_two_floats_into_a_half_pair(kind: str, want: int) -> None:
    """``a`` (1.0) goes to the upper half, ``b`` (-2.0) to the lower one."""
    text = f""".version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{{
\t.reg .f32 %f<3>;
\t.reg .b32 %r<2>;
\t.reg .b64 %rd<2>;
\tld.param.u64 %rd1, [out];
\tmov.f32 %f1, 0f3F800000;
\tmov.f32 %f2, 0fC0000000;
\tcvt.rn.{kind}.f32 %r1, %f1, %f2;
\tst.global.u32 [%rd1], %r1;
\tret;
}}
"""
    out = np.zeros(1, np.uint32)
    launch(text, "k", 1, 1, [out])
    assert int(out[0]) == want
