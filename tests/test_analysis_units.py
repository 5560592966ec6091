"""Smaller contracts of the analyses: loop nesting queries, the conservative (unbound)
divergence environment, the phase check of varying propagation."""

from __future__ import annotations

import pytest

from ptxopt.analysis.divergence import Divergence, propagate_varying
from ptxopt.analysis.loops import LoopForest
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.lift import lift_module
from ptxopt.ptx.parser import parse


def test_loop_nesting_queries() -> None:
    # 0 -> 1 (outer header) -> 2 (inner header) -> 2 | 3 -> 1 | 4
    succs = [[1], [2], [2, 3], [1, 4], []]
    lf = LoopForest.build(succs, 0)
    outer = lf.loop_of[1]
    inner = lf.loop_of[2]
    assert outer != inner and lf.loops[outer].header == 1 and lf.loops[inner].header == 2
    assert lf.loop_contains_loop(outer, inner)
    assert lf.loop_contains_loop(outer, outer) and lf.loop_contains_loop(inner, inner)
    assert not lf.loop_contains_loop(inner, outer)
    assert lf.contains(outer, 2) and not lf.contains(inner, 3) and not lf.contains(outer, 4)
    assert [lf.depth_of(b) for b in range(5)] == [0, 1, 2, 1, 0]
    assert lf.is_header(2) and not lf.is_header(3)


KERNEL = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u32 n)
{
\t.reg .b32 %r<4>;
\tld.param.u32 %r1, [n];
\tmov.u32 %r2, %tid.x;
\tret;
}
"""


def test_an_unbound_kernel_keeps_its_parameters_uniform() -> None:
    """Without module context a kernel's parameters are still uniform (a .func's are not)."""
    fn = lift_module(parse(KERNEL)).funcs[0]  # never bound to its module
    div = AnalysisManager().get(Divergence, fn)
    vals = {v.var: v for v in fn.values() if v.kind == "inst"}
    assert div.is_uniform(vals["%r1"]) and div.is_varying(vals["%r2"])


def test_varying_propagation_runs_only_at_its_phases() -> None:
    fn = lift_module(parse(KERNEL)).funcs[0]
    am = AnalysisManager()
    assert propagate_varying(fn, am, 70) is am.get(Divergence, fn)
    with pytest.raises(
        ValueError, match=r"^varying propagation runs at phases \[53, 70\], not 60$"
    ):
        propagate_varying(fn, am, 60)


def _first_reason(path: str, fn_name: str, var: str, kind: str = "phi") -> str:
    from pathlib import Path

    from ptxopt.report.analyze_cli import analyze_text

    text = (Path(__file__).parent / "divergence" / path).read_text()
    mod, md, _ = analyze_text(text, path)
    fn = mod.func(fn_name)
    v = next(v for v in fn.values() if v.var == var and v.kind == kind)
    return md.funcs[fn_name].explain(v)[0][1]


def test_reasons_in_words() -> None:
    assert _first_reason("hidden_join.ptx", "hidden_join", "%r3") == (
        "merges lanes split by the divergent branch at line 19"
    )
    assert _first_reason("irreducible.ptx", "irreducible", "%r3").startswith(
        "irreducible cycle desynchronised by the divergent branch at line "
    )
    assert _first_reason("temporal.ptx", "temporal", "%r3").endswith("(temporal divergence)")


VARYING_LOAD = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
\t.reg .b32 %r<6>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [p];
\tld.param.u32 %r4, [n];
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd2, %r1, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tld.global.u32 %r2, [%rd3];
\tld.global.u32 %r3, [%rd1];
\trem.u32 %r5, %r1, 2;
\tbrx.idx %r5, T;
T: .branchtargets A, B;
A:
\tret;
B:
\tbrx.idx %r4, U;
U: .branchtargets C, D;
C:
\tret;
D:
\tret;
}
"""


def test_varying_addresses_and_indirect_branches() -> None:
    from ptxopt.analysis.divergence import bind_module, branch_condition
    from ptxopt.report.analyze_cli import analyze_text

    mod, md, rep = analyze_text(VARYING_LOAD, "l.ptx")
    fn = mod.funcs[0]
    bind_module(mod)
    div = md.funcs["k"]
    loads = [i for i in fn.instructions() if i.opcode == "ld" and ".global" in i.ast.mods]
    assert [div.address_varying(i) for i in loads] == [True, False]
    assert div.explain(loads[0].defs[0])[0][1].startswith("load from varying address %rd3")
    brx = [b for b in fn.blocks if b.terminator is not None and b.terminator.opcode == "brx"]
    conds = [branch_condition(b.terminator) for b in brx]
    assert [c.var for c in conds if c is not None] == ["%r5", "%r4"]
    assert [div.branch_divergent(b.index) for b in brx] == [True, False]


LOOP_PARAM = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 n)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<2>;
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, 0;
L:
\tld.param.u32 %r3, [n];
\tld.param.u64 %rd1, [out];
\tadd.u32 %r2, %r2, 1;
\tsetp.lt.u32 %p1, %r2, %r1;
\t@%p1 bra L;
\tadd.u32 %r4, %r3, 1;
\tst.global.u32 [%rd1], %r4;
\tret;
}
"""


def test_a_repeatable_load_leaves_a_divergent_loop_uniform() -> None:
    """A parameter read inside a loop with a divergent exit gives every lane the same
    value whenever it runs; the loop counter is varying after the loop."""
    from ptxopt.report.analyze_cli import analyze_text

    _, _, rep = analyze_text(LOOP_PARAM, "p.ptx")
    regs = rep["functions"][0]["registers"]
    assert regs["%r3"] == "uniform" and regs["%r4"] == "uniform" and regs["%r2"] == "varying"


def test_a_phi_of_a_varying_operand_says_which() -> None:
    from ptxopt.report.analyze_cli import analyze_text

    mod, md, _ = analyze_text(LOOP_PARAM, "p.ptx")
    fn = mod.funcs[0]
    phi = next(p.result for b in fn.blocks for p in b.phis if p.result.var == "%r2")
    steps = md.funcs["k"].explain(phi)
    assert steps[0][1].startswith("reads varying %r2.") or steps[0][1].startswith(
        "loop desynchronised"
    )
    assert steps[-1][1] == "special register %tid.x differs per lane"


def test_check_graph_takes_node_0_as_the_entry() -> None:
    from ptxopt.analysis.graph import check_graph

    check_graph([[]])  # one node: the default entry 0 is inside
    with pytest.raises(ValueError, match=r"^entry node 1 is outside 0\.\.0$"):
        check_graph([[]], 1)
    with pytest.raises(ValueError, match=r"^edge 0->2 leaves the graph of 2 nodes$"):
        check_graph([[2], []])


def test_a_lane_mask_only_grows() -> None:
    """Marking a refined value again joins the masks (bits that may differ only add up)."""
    from ptxopt.analysis.divergence import FuncEnv, _Propagator

    fn = lift_module(parse(KERNEL)).funcs[0]
    prop = _Propagator(fn, FuncEnv.conservative(fn), None)
    v = next(v for v in fn.values() if v.var == "%r1")
    why = ("seed", -1, "test")
    assert prop.mask_of(v) == 0
    prop.mark_partial(v, why, 0x1)
    prop.mark_partial(v, why, 0x10)
    assert prop.mask_of(v) == 0x11
    prop.mark_partial(v, why, 0x1)
    assert prop.mask_of(v) == 0x11
    prop.mark(v, why)
    assert prop.mask_of(v) is None


IMPURE_LOOP = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<2>;
\tmov.u32 %r1, %tid.x;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r3, 0;
LOOP:
\tld.global.u32 %r5, [%rd1];
\tadd.u32 %r3, %r3, 1;
\tsetp.lt.u32 %p1, %r3, %r1;
\t@%p1 bra LOOP;
\tst.global.u32 [%rd1], %r5;
\tret;
}
"""


def test_an_impure_value_leaving_a_divergent_loop_says_why() -> None:
    from ptxopt.report.analyze_cli import analyze_text

    mod, md, rep = analyze_text(IMPURE_LOOP, "i.ptx")
    fn = mod.funcs[0]
    r5 = next(v for v in fn.values() if v.var == "%r5")
    steps = md.funcs["k"].explain(r5)
    assert steps[0][1] == (
        "impure result recomputed per lane group under the divergent branch at line 16"
    )
    assert steps[-1][1] == "special register %tid.x differs per lane"
    assert rep["functions"][0]["registers"]["%r5"] == "varying"


REFINED_IN_LOOP = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 n)
.maxntid 128, 1, 1
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<12>;
\t.reg .b64 %rd<2>;
\tld.param.u64 %rd1, [out];
\tld.param.u32 %r9, [n];
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, 0;
\tmov.u32 %r6, 0;
LOOP:
\tor.b32 %r4, %r1, %r2;
\tshr.u32 %r5, %r4, 5;
\tshl.b32 %r7, %r1, 6;
\tadd.u32 %r2, %r2, %r7;
\tadd.u32 %r6, %r6, 1;
\tsetp.lt.u32 %p1, %r6, %r9;
\t@%p1 bra LOOP;
\tst.global.u32 [%rd1], %r5;
\tret;
}
"""


def test_a_refined_value_is_re_evaluated_when_an_operand_becomes_varying() -> None:
    """%r4 first looks like tid.x | uniform (only lane bits differ, so %r5 = %r4 >> 5 is
    uniform); the loop then makes %r2 = tid.x << 6 varying, and %r5 with it."""
    from ptxopt.report.analyze_cli import analyze_text

    _, _, rep = analyze_text(REFINED_IN_LOOP, "r.ptx")
    regs = rep["functions"][0]["registers"]
    assert regs["%r2"] == regs["%r4"] == regs["%r5"] == "varying"
    assert regs["%r6"] == "uniform"


COND_RET = """.version 8.0
.target sm_80
.address_size 64
.func (.reg .u32 res) f()
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<4>;
\tmov.u32 %r1, %tid.x;
\tsetp.lt.u32 %p1, %r1, 5;
\tmov.u32 res, 1;
\t@%p1 ret;
\tmov.u32 res, 2;
\tret;
}
"""


def test_a_varying_conditional_return_of_a_func_diverges() -> None:
    """Lanes leave ``f`` at two returns with different constants: the returned value is
    varying although each definition is uniform."""
    from ptxopt.analysis.divergence import analyze_module

    mod = lift_module(parse(COND_RET))
    res = analyze_module(mod).funcs["f"]
    fn = mod.funcs[0]
    term = fn.blocks[0].terminator
    assert term is not None and term.opcode == "ret"
    assert res.branch_divergent(0)
    assert res.ret_varying == [True]


def test_the_default_budget_scales_with_the_function() -> None:
    from ptxopt.analysis.divergence import FuncEnv, analyze_function

    fn = lift_module(parse(REFINED_IN_LOOP)).funcs[0]
    ninst = sum(len(b.insts) + len(b.phis) for b in fn.blocks)
    res = analyze_function(fn, FuncEnv.conservative(fn))
    assert res.stats.budget == 8 * (fn.next_id + ninst) + 1024 and not res.stats.budget_hit
    tight = analyze_function(fn, FuncEnv.conservative(fn), budget=1)
    assert tight.stats.budget_hit
    assert all(tight.is_varying(v) for v in fn.values())


CALL_NO_RET = """.version 8.0
.target sm_80
.address_size 64
.func g(.reg .u32 x)
{
\t.reg .b32 %r<2>;
\tadd.u32 %r1, x, 1;
\tret;
}
.visible .entry k(.param .u32 n)
{
\t.reg .b32 %r<4>;
\tld.param.u32 %r1, [n];
\tcall g, (%r1);
\tret;
}
"""


def test_a_call_without_results_names_its_callee_and_arguments() -> None:
    from ptxopt.analysis.divergence_calls import call_sites

    mod = lift_module(parse(CALL_NO_RET))
    k = mod.func("k")
    (site,) = call_sites(k)
    r1 = next(v for v in k.values() if v.var == "%r1")
    assert site.callee == "g" and site.args == [r1] and site.rets == []


def test_immediate_dominators_start_at_node_0() -> None:
    from ptxopt.analysis.dominators import immediate_dominators

    # 0 -> 1 -> 2, 0 -> 2; node 3 unreachable
    assert immediate_dominators([[1, 2], [2], [], [2]]) == ([0, 0, 0, -1], [0, 1, 2])
    assert immediate_dominators([[1, 2], [2], [], [2]], 3) == ([-1, -1, 3, 3], [3, 2])
