"""The UR report passes (convert-to-uniform-reg, insert-pseudo-use-def-conv-ur) as
passes: the target they plan for, a debug target, their counters, and the marker pass
planning on its own when phase 74 did not run for its target."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptxopt.analysis.divergence import Divergence, bind_module
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.driver import optimize
from ptxopt.ir.lift import lift_module
from ptxopt.ori.conv_alloc import plan_conv_alloc
from ptxopt.ori.ur_alloc import plan_function
from ptxopt.ptx.parser import parse
from ptxopt.transforms.convert_to_uniform_reg import PLANS, ConvertToUniformReg
from ptxopt.transforms.insert_pseudo_use_def_conv_ur import MARKERS, InsertPseudoUseDefConvUr

PROBE = (Path(__file__).parent / "ori" / "capability_probe.ptx").read_text()


def test_without_a_module_the_passes_plan_for_sm_75() -> None:
    fn = lift_module(parse(PROBE, "p.ptx")).funcs[0]
    PLANS.pop("k", None)
    p = ConvertToUniformReg()
    assert p.arch is None and p.run(fn, AnalysisManager()) is False
    plan = PLANS["k"]
    assert plan.arch_sm == 75 and plan.converted > 0
    assert p.stats == {
        "webs converted to UR/UP": plan.converted,
        "bridges": len(plan.bridges),
        "attempts": plan.attempts,
    }
    p.run(fn, AnalysisManager())  # counters add up over functions
    assert p.stats["webs converted to UR/UP"] == 2 * plan.converted
    assert p.stats["attempts"] == 2 * plan.attempts


def test_the_marker_pass_plans_when_phase_74_did_not() -> None:
    fn = lift_module(parse(PROBE, "p.ptx")).funcs[0]
    want = plan_conv_alloc(fn, plan_function(fn, AnalysisManager().get(Divergence, fn), 75))
    for stale in (None, 90):
        PLANS.pop("k", None)
        if stale is not None:
            optimize(PROBE, "p.ptx", ["convert-to-uniform-reg"], arch="sm_90")
            assert PLANS["k"].arch_sm == stale
        m = InsertPseudoUseDefConvUr()
        assert m.run(fn, AnalysisManager()) is False
        assert MARKERS["k"].markers == want.markers
        assert m.stats["CONV.ALLOC markers"] == len(want.markers)


CHANGED_BETWEEN = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u32 n, .param .u64 out)
{
.reg .b32 %r<9>; .reg .pred %p<3>; .reg .b64 %rd<4>;
ld.param.u32 %r1, [n];
ld.param.u64 %rd1, [out];
add.u32 %r2, %r1, 5;
mov.u32 %r3, %r2;
setp.lt.u32 %p1, %r3, 9;
@%p1 bra DONE;
mov.u32 %r4, %tid.x;
add.u32 %r5, %r4, %r3;
st.global.u32 [%rd1], %r5;
DONE:
ret;
}
"""


def test_the_marker_pass_reads_a_function_changed_after_phase_74() -> None:
    # back-copy-prop folds the copy of line 10 into the add of line 9 (which then
    # writes %r3): phase 74's %r2 is gone, and %r1's reader is that add, a uniform
    # instruction -- one marker, at line 9; the readers phase 74 saw would also have
    # put one for %r2 at the deleted copy
    passes = ["convert-to-uniform-reg", "back-copy-prop", "insert-pseudo-use-def-conv-ur"]
    res = optimize(CHANGED_BETWEEN, "c.ptx", passes, arch="sm_90")
    assert res.report.changed.get("back-copy-prop") == 1
    assert {"%r1", "%r2", "%r3", "%p1"} <= PLANS["k"].uniform
    assert [(m.reg, m.line) for m in MARKERS["k"].markers] == [("%r1", 9)]
    # unchanged in between: the readers phase 74 recorded
    optimize(CHANGED_BETWEEN, "c.ptx", [passes[0], passes[2]], arch="sm_90")
    assert [(m.reg, m.line) for m in MARKERS["k"].markers] == [("%r1", 9), ("%r2", 10)]
    # another module's kernel of the same name: planned anew, not read from that plan
    fn = lift_module(parse(PROBE, "p.ptx")).funcs[0]
    want = plan_conv_alloc(fn, plan_function(fn, AnalysisManager().get(Divergence, fn), 90))
    optimize(PROBE, "p.ptx", [passes[2]], arch="sm_90")
    assert MARKERS["k"].markers == want.markers


def test_a_debug_target_converts_nothing() -> None:
    optimize(PROBE, "p.ptx", ["convert-to-uniform-reg"], arch="sm_90")
    assert PLANS["k"].converted > 0
    debug = PROBE.replace(".target sm_75", ".target sm_75, debug")
    optimize(debug, "p.ptx", ["convert-to-uniform-reg"], arch="sm_90")
    assert PLANS["k"].converted == 0


MARKED = """.version 8.0
.target sm_90
.address_size 64
.func f()
{
ret;
}
.visible .entry k()
{
.reg .b32 %r<4>; .reg .pred %p1;
mov.u32 %r1, %ctaid.x;
shl.b32 %r2, %r1, 2;
mov.u32 %r3, %tid.x;
setp.lt.u32 %p1, %r3, %r2;
.pragma "allowConvAlloc";
@%p1 call f;
call.uni f;
ret;
}
"""


def test_marker_counts_add_up() -> None:
    mod = lift_module(parse(MARKED, "m.ptx"))
    bind_module(mod)
    fn = mod.func("k")
    PLANS.pop("k", None)
    m = InsertPseudoUseDefConvUr()
    m.run(fn, AnalysisManager())
    n = len(MARKERS["k"].markers)
    d = len(MARKERS["k"].diagnostics)
    assert n > 0 and m.stats == {"CONV.ALLOC markers": n, "diagnostics": d}
    m.run(fn, AnalysisManager())
    assert m.stats["CONV.ALLOC markers"] == 2 * n


def _default_text(path: Path, reports: bool) -> tuple[str, dict[str, object]]:
    from ptxopt.pipeline import default_pipeline

    res = optimize(path.read_text(), str(path), default_pipeline(), reports=reports)
    return res.text, {label: dict(c) for label, c in res.report.stats.items()}


def test_callers_that_read_only_the_text_skip_the_report_passes() -> None:
    """Without reports the two UR phases do not run (no plan, no counters, no time);
    the printed PTX is the same as with them, on real kernels of three families."""
    corpus = Path(__file__).parent / "corpus"
    for rel in ("cuda/reduce.O3.sm90.ptx", "triton/matmul_fp16.sm80.ptx", "cub/scan.sm80.ptx"):
        PLANS.clear()
        MARKERS.clear()
        quiet, quiet_stats = _default_text(corpus / rel, reports=False)
        assert not PLANS and not MARKERS, rel
        assert not any("uniform-reg" in k or "conv-ur" in k for k in quiet_stats), rel
        full, full_stats = _default_text(corpus / rel, reports=True)
        assert PLANS and MARKERS, rel
        assert "convert-to-uniform-reg@74" in full_stats, rel
        assert quiet == full, rel


def test_the_api_runs_the_report_passes_only_when_asked_for_counters() -> None:
    from collections import Counter

    import ptxopt

    PLANS.clear()
    plain = ptxopt.optimize(PROBE, "convert-to-uniform-reg", arch="sm_90")
    assert not PLANS
    stats: dict[str, Counter[str]] = {}
    counted = ptxopt.optimize(PROBE, "convert-to-uniform-reg", arch="sm_90", stats=stats)
    assert PLANS["k"].converted > 0
    assert stats["convert-to-uniform-reg"]["webs converted to UR/UP"] == PLANS["k"].converted
    assert plain == counted


def test_the_drop_in_and_the_triton_hook_skip_the_report_passes() -> None:
    from ptxopt.dropin import optimize_text
    from ptxopt.triton import optimize_ptx

    PLANS.clear()
    a = optimize_text(PROBE, "p.ptx", "sm_90", "default", [])
    b = optimize_ptx(PROBE, "default", [], "sm_90")
    assert not PLANS and a == b


def test_varying_propagation_only_drops_the_analysis_when_nothing_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Phases 53/70 recompute the divergence for their readers; with reports off their
    only readers (the UR phases) are skipped, so they drop the cached result and leave
    the computation to whoever asks next -- the PTX is the same."""
    import ptxopt.analysis.divergence as dv
    import ptxopt.transforms.propagate_varying as pv

    calls: list[int] = []
    real = dv.propagate_varying

    def counting(*args: object, **kw: object) -> object:
        calls.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pv, "propagate_varying", counting)
    path = Path(__file__).parent / "corpus" / "cuda" / "reduce.O3.sm90.ptx"
    quiet, _ = _default_text(path, reports=False)
    assert calls == []
    full, stats = _default_text(path, reports=True)
    assert len(calls) > 0 and quiet == full


def test_the_plans_kept_are_those_of_the_last_module() -> None:
    """PLANS/MARKERS hold the last module's plans: a long-lived process (a batch worker)
    does not accumulate the plans of every function it ever saw."""
    a = Path(__file__).parent / "corpus" / "cuda" / "reduce.O3.sm90.ptx"
    passes = ["convert-to-uniform-reg", "insert-pseudo-use-def-conv-ur"]
    res = optimize(a.read_text(), str(a), passes)
    names = {f.name for f in res.module.funcs}
    assert set(PLANS) == names and set(MARKERS) == names
    optimize(PROBE, "p.ptx", passes)
    assert set(PLANS) == {"k"} and set(MARKERS) == {"k"}
