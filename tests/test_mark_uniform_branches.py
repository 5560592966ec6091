"""mark-uniform-branches keeps going past a branch it must leave alone."""

from __future__ import annotations

from ptxopt.analysis.divergence import bind_module
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.lift import lift_module
from ptxopt.ir.lower import print_ir_module
from ptxopt.ptx.parser import parse
from ptxopt.transforms.mark_uniform_branches import run

TEXT = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 n)
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<2>;
\tmov.u32 %r1, %tid.x;
\tsetp.lt.u32 %p1, %r1, 5;
\t@%p1 bra N;
N:
\tld.param.u32 %r2, [n];
\tsetp.lt.u32 %p2, %r2, 3;
\t@%p2 bra E;
\tld.param.u64 %rd1, [out];
\tst.global.u32 [%rd1], %r2;
E:
\tret;
}
"""


def test_a_varying_guard_to_the_next_block_does_not_stop_the_pass() -> None:
    """The first branch cannot split the warp (its target is the next block) but its
    guard differs per lane, so it gets no ``.uni``; the later uniform one does."""
    mod = lift_module(parse(TEXT, "m.ptx"))
    bind_module(mod)
    assert run(mod.funcs[0], AnalysisManager())
    lines = [ln.strip() for ln in print_ir_module(mod).splitlines()]
    assert "@%p1 bra \tN;" in lines and "@%p2 bra.uni \tE;" in lines
