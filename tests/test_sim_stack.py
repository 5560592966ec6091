"""The interpreter's reconvergence stack: warps that split differently in one batch, and
calls made by some lanes of a path that is itself one side of a divergent branch."""

from __future__ import annotations

import numpy as np
import pytest

from ptxopt.sim import launch

HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"

SPLIT = (
    HEAD
    + """.visible .entry k(.param .u64 out, .param .u32 t)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [out];
\tld.param.u32 %r3, [t];
\tmov.u32 %r1, %tid.x;
\tsetp.lt.u32 %p1, %r1, %r3;
\t@%p1 bra A;
\tmov.u32 %r2, 7;
\tbra J;
A:
\tmov.u32 %r2, 9;
J:
\tmul.wide.u32 %rd2, %r1, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r2;
\tret;
}
"""
)


@pytest.mark.parametrize("threshold", [24, 40])
def test_one_warp_diverges_while_the_other_branches_uniformly(threshold: int) -> None:
    """With 64 threads and tid < 24 (or < 40), one warp splits and the other goes one way
    as a whole: each warp must follow its own lanes' paths."""
    out = np.zeros(64, np.uint32)
    launch(SPLIT, "k", 1, 64, [out, threshold])
    want = np.where(np.arange(64) < threshold, 9, 7)
    assert (out == want).all()


CALLS = (
    HEAD
    + """.func (.reg .u32 r) f(.reg .u32 x)
{
\tadd.u32 r, x, 100;
\tret;
}
.visible .entry k(.param .u64 out)
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, %tid.x;
\tand.b32 %r2, %r1, 1;
\tsetp.eq.u32 %p2, %r2, 1;
\tsetp.lt.u32 %p1, %r1, 16;
\t@%p1 bra LOW;
\tmov.u32 %r5, 1;
\t@%p2 call (%r5), f, (%r1);
\tbra J;
LOW:
\tadd.u32 %r5, %r1, 1000;
\t@%p2 call (%r5), f, (%r1);
J:
\tmul.wide.u32 %rd2, %r1, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r5;
\tret;
}
"""
)


def test_a_call_by_some_lanes_of_a_divergent_path() -> None:
    """Odd lanes call f on both sides of a divergent branch; the other lanes keep their
    own side's value, and every lane reaches the store after the join."""
    out = np.zeros(32, np.uint32)
    launch(CALLS, "k", 1, 32, [out])
    t = np.arange(32)
    want = np.where(t % 2 == 1, t + 100, np.where(t < 16, t + 1000, 1))
    assert (out == want).all(), out
