"""Rules of the uniform register model (ptxopt/ori/ur_alloc.py) read off ptxas 13.0.88
SASS, one small kernel each: the file the model predicts for the webs the rule is
about (docs/uniform-registers.md, fourth round, has the SASS each one comes from)."""

from __future__ import annotations

from ptxopt.analysis.divergence import analyze_module
from ptxopt.ir.lift import lift_module
from ptxopt.ori.ur_alloc import FuncPlan, plan_function
from ptxopt.ptx.parser import parse

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
REGS = ".reg .b32 %r<16>; .reg .b64 %rd<12>; .reg .pred %p<6>;"


def _kernel(body: str) -> str:
    return (
        HEAD
        + ".visible .entry k(.param .u64 p, .param .u32 n)\n{\n"
        + REGS
        + "\n"
        + body
        + "ret;\n}\n"
    )


def _plan(text: str, sm: int) -> FuncPlan:
    mod = lift_module(parse(text, "t.ptx"))
    md = analyze_module(mod)
    return plan_function(mod.func("k"), md.funcs["k"], sm)


def _files(text: str, sm: int) -> dict[str, str]:
    return {k: w.file for k, w in _plan(text, sm).webs.items()}


# cuda/elementwise.O3.sm75.ptx lines 32-38: the grid-stride index
FOLDED_WIDE = _kernel(
    """mov.u32 %r1, %ntid.x;
mov.u32 %r2, %ctaid.x;
mul.wide.u32 %rd1, %r2, %r1;
mov.u32 %r3, %tid.x;
cvt.u64.u32 %rd2, %r3;
add.s64 %rd3, %rd1, %rd2;
ld.param.u64 %rd4, [p];
shl.b64 %rd5, %rd3, 2;
add.s64 %rd6, %rd4, %rd5;
st.global.u32 [%rd6], %r3;
"""
)


def test_uniform_wide_multiply_read_by_per_thread_adds_is_folded() -> None:
    """``mul.wide.u32 %rd1, %ctaid, %ntid; add.s64 %rd3, %rd1, %tid`` is one
    ``IMAD.WIDE.U32 R2, R5, c[0x0][0x0], R2`` at sm_80: the product is no register, and
    with %ntid in the IMAD's constant slot %ctaid is read in R (``S2R R5``)."""
    for sm in (80, 90):
        p = _plan(FOLDED_WIDE, sm)
        assert p.webs["%rd1"].file == "R"
        assert p.webs["%rd1"].why.startswith("multiply folded")
    assert _files(FOLDED_WIDE, 80)["%r2"] == "R"
    # a uniform reader keeps the product a UIMAD.WIDE
    uniform = FOLDED_WIDE.replace("add.s64 %rd3, %rd1, %rd2;", "add.s64 %rd3, %rd1, 16;")
    assert _files(uniform, 80)["%rd1"] == "UR"
