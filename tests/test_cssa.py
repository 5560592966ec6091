"""Leaving SSA through conventional SSA (spec 05): pcp copies, coalescing levels, the
SIMT condition, knobs, and execution checks of every level."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers import propagate_copies, ptxas_check
from test_ssa import BRANCH_PRED, BRX_SWAP, LOST_COPY, SWAP, kernel

from ptxopt.driver import optimize
from ptxopt.ir.core import Func, IRModule, Value
from ptxopt.ir.cssa import Cssa, CssaOptions, SimtFacts, destructor_for
from ptxopt.ir.lift import lift_module
from ptxopt.ir.lower import print_ir_module
from ptxopt.ir.out_of_ssa import Assignment
from ptxopt.knobs import registry
from ptxopt.ptx.parser import parse
from ptxopt.sim import launch

CASES = [("swap", SWAP), ("lost_copy", LOST_COPY), ("branch_pred", BRANCH_PRED), ("brx", BRX_SWAP)]


def run(text: str, n: int = 40) -> list[int]:
    out = np.zeros(n, dtype=np.uint32)
    launch(text, "k", 1, n, [out, np.uint32(n)])
    return out.tolist()


def lowered(text: str, opts: CssaOptions, fold: bool = True) -> tuple[str, IRModule]:
    mod = lift_module(parse(text, "t.ptx"))
    if fold:
        for fn in mod.funcs:
            propagate_copies(fn)
    return print_ir_module(mod, destructor_for(mod, opts)), mod


def movs(text: str) -> int:
    return sum(1 for ln in text.splitlines() if ln.strip().startswith("mov.b32"))


@pytest.mark.parametrize("level", [0, 1, 2, 3])
@pytest.mark.parametrize("name, text", CASES)
def test_every_level_runs_like_the_input(name: str, text: str, level: int) -> None:
    out, _ = lowered(text, CssaOptions(level=level))
    assert run(out) == run(text)


def test_levels_remove_copies(tmp_path: Path) -> None:
    """Level 0 keeps one copy per phi operand and result; coalescing removes most."""
    counts = [movs(lowered(SWAP, CssaOptions(level=lv))[0]) for lv in (0, 1, 2, 3)]
    assert counts[0] > counts[2]
    assert counts[2] <= 3  # the swap needs its three moves, no more
    ptxas_check(lowered(SWAP, CssaOptions(level=0))[0], "sm_80", tmp_path)


def test_copies_sit_before_the_predecessor_terminator() -> None:
    """Naive level: the copies feeding the loop phi sit in the predecessors, right
    before the latch's branch, and no edge is split."""
    out, _ = lowered(LOST_COPY, CssaOptions(level=0))
    lines = [ln.strip() for ln in out.splitlines()]
    br = next(i for i, ln in enumerate(lines) if ln.startswith("@%p1 bra"))
    assert lines[br - 1].startswith("mov.b32 \t%pcp")
    assert "$L__ptxopt_edge" not in out


def test_lost_copy_costs_one_move() -> None:
    """The lost-copy problem: the value live out of the loop keeps its own register
    (one consumer-side copy at the loop header), still without splitting the edge."""
    out, _ = lowered(LOST_COPY, CssaOptions(level=2))
    assert movs(out) == 1
    assert "$L__ptxopt_edge" not in out


def test_naive_level_names_its_copies_pcp() -> None:
    out, _ = lowered(SWAP, CssaOptions(level=0))
    assert "%pcp1" in out


def test_cleanup_erases_copies_of_dead_phis() -> None:
    text = kernel(
        """\tmov.u32 %r1, 0;
\tmov.u32 %r2, 0;
$L_loop:
\tadd.s32 %r2, %r2, 5;
\tadd.s32 %r1, %r1, 1;
\tsetp.lt.u32 %p1, %r1, %r21;
\t@%p1 bra $L_loop;
\tst.global.u32 [%rd4], %r1;
\tret;"""
    )
    mod = lift_module(parse(text, "t.ptx"))
    fn = mod.funcs[0]
    c = Cssa(fn)
    c.build()
    assert c.stats.erased == 0  # %r2's phi feeds its update
    # drop the update: the phi now merges the initial value with itself, unread
    (phi,) = [p for b in fn.blocks for p in b.phis if p.result.var == "%r2"]
    init = phi.incoming[0]
    for b in fn.blocks:
        b.insts = [i for i in b.insts if not (i.defs and i.defs[0].var == "%r2" and i.uses)]
    phi.incoming = [init, init]
    c = Cssa(fn)
    c.build()
    assert c.stats.erased == 3  # its consumer copy and both producer copies
    c.coalesce()
    out = print_ir_module(mod, destructor_for(mod, CssaOptions()))
    assert run(out) == run(text)


# After copy propagation %r2 is %r1's first value.  $L_join holds nothing but its
# branch, so %r1's consumer copy (top of $L_join) and the producer copy feeding %r2's
# phi at $L_end (end of $L_join, reading that first value) sit in one block: the
# first value is live where the phi result is defined, and the two must not share
# %r1 (fuzz seeds 21024/22181/23549 found this after late-commoning).
BRANCH_ONLY_JOIN = kernel(
    """\tadd.u32 %r1, %r21, 5;
\tmov.u32 %r2, %r1;
\tsetp.lt.u32 %p2, %r21, 3;
\t@%p2 bra $L_other;
\tsetp.lt.u32 %p1, %r21, 9;
\t@%p1 bra $L_join;
\tadd.u32 %r1, %r1, 100;
$L_join:
\tbra.uni $L_end;
$L_other:
\tadd.u32 %r2, %r1, 7;
$L_end:
\tmad.lo.u32 %r3, %r2, 1000, %r1;
\tst.global.u32 [%rd4], %r3;
\tret;"""
)


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_copies_of_a_branch_only_join_keep_values_apart(level: int) -> None:
    out, _ = lowered(BRANCH_ONLY_JOIN, CssaOptions(level=level))
    assert run(out) == run(BRANCH_ONLY_JOIN)


FUZZ_CSSA = sorted((Path(__file__).parent / "fuzz_cases").glob("late-commoning-cssa-*.ptx"))


@pytest.mark.parametrize("level", [0, 1, 2, 3])
@pytest.mark.parametrize("path", FUZZ_CSSA, ids=[p.stem for p in FUZZ_CSSA])
def test_fuzz_findings_at_every_level(path: Path, level: int) -> None:
    from fuzz.kernels import check_pipeline

    text = path.read_text()
    seed = int(text.split("seed=", 1)[1].split()[0])
    knobs = {"do-cssa": True, "cssa-coalesce": level}
    res = check_pipeline(text, ["late-commoning"], seed=seed, trials=2, knobs=knobs)
    assert res.ok, f"{res.kind}: {res.message}"


def test_verbosity_and_dump_before(capsys: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []
    optimize(
        SWAP,
        "swap.ptx",
        [],
        knobs={"do-cssa": True, "cssa-verbosity": 3, "dump-before-cssa": True},
        dump=lines.append,
    )
    text = "\n".join(lines)
    assert text.startswith("IR Module before CSSA:")
    assert "cssa k:" in text and "phis" in text
    assert "= pcp " in text  # the conventional-SSA form names its copies


def test_knobs_are_registered_with_defaults() -> None:
    reg = registry()
    assert reg["do-cssa"].default is True
    assert reg["cssa-coalesce"].default == 2
    assert reg["cssa-verbosity"].default == 0
    assert reg["dump-before-cssa"].default is False


def test_do_cssa_off_selects_the_legacy_destruction() -> None:
    a = optimize(SWAP, "s.ptx", [], knobs={"do-cssa": False}).text
    b = optimize(SWAP, "s.ptx", [], knobs={"do-cssa": True}).text
    assert run(a) == run(b) == run(SWAP)


def test_input_names_are_kept_without_passes() -> None:
    """With no pass, coalescing finds the input's own register assignment."""
    for _name, text in CASES:
        assert (
            optimize(text, "t.ptx", [], knobs={"do-cssa": True}).text
            == optimize(text, "t.ptx", [], knobs={"do-cssa": False}).text
        )


# ---------------------------------------------------------------------------
# the SIMT condition

# %r5 holds a warp-uniform value on the lanes < 16 (stored there: a real use) and a
# per-lane value on the others; the two meet in a phi at the divergent join.
DIVERGENT_JOIN = kernel(
    """\tsetp.lt.u32 %p1, %r21, 16;
\t@%p1 bra $L_then;
\tmul.lo.u32 %r5, %r21, 3;
\tbra.uni $L_join;
$L_then:
\tadd.u32 %r5, %r20, 7;
\tst.global.u32 [%rd4], %r5;
$L_join:
\tadd.u32 %r6, %r5, 1;
\tst.global.u32 [%rd4], %r6;
\tret;"""
)


def _uniform_value(fn: Func) -> Value:
    for b in fn.blocks:
        for inst in b.insts:
            if inst.opcode == "add" and inst.defs and inst.defs[0].var == "%r5":
                return inst.defs[0]
    raise AssertionError("no uniform %r5")


def _register_of_uniform(text: str, level: int, aware: bool | None) -> tuple[str, str]:
    mod = lift_module(parse(text, "t.ptx"))
    fn = mod.funcs[0]
    u = _uniform_value(fn)
    inner = destructor_for(mod, CssaOptions(level=level, divergence_aware=aware))
    seen: dict[str, Assignment] = {}

    def capture(f: Func) -> Assignment:
        seen["asg"] = inner(f)
        return seen["asg"]

    out = print_ir_module(mod, capture)
    return out, seen["asg"].reg[u.id]


def _violations(text: str, reg: str) -> int:
    out = np.zeros(32, dtype=np.uint32)
    res = launch(text, "k", 1, 32, [out, np.uint32(32)], uniform_claims={"k": [reg]})
    return len(res.violations)


def test_analysis_calls_the_value_uniform_and_the_phi_lane_mixing() -> None:
    mod = lift_module(parse(DIVERGENT_JOIN, "t.ptx"))
    facts = SimtFacts.of_module(mod)
    fn = mod.funcs[0]
    assert facts.uniform(_uniform_value(fn))
    phis = [p.result for b in fn.blocks for p in b.phis if p.result.var == "%r5"]
    assert phis and all(facts.mixing(p) for p in phis)


def test_simt_aware_coalescing_keeps_the_uniform_register_uniform() -> None:
    out, reg = _register_of_uniform(DIVERGENT_JOIN, 1, None)
    assert run(out, 32) == run(DIVERGENT_JOIN, 32)
    assert _violations(out, reg) == 0


def test_naive_coalescer_breaks_the_uniform_register() -> None:
    """Per-thread liveness alone merges the uniform value into the phi's register:
    the program still computes the same results, but that register now holds a
    different value in each half of the warp, so it can no longer be warp-wide."""
    for level, aware in ((1, False), (2, None)):
        out, reg = _register_of_uniform(DIVERGENT_JOIN, level, aware)
        assert run(out, 32) == run(DIVERGENT_JOIN, 32)
        assert _violations(out, reg) > 0


def test_simt_condition_costs_one_copy_on_the_divergent_path() -> None:
    aware, _ = _register_of_uniform(DIVERGENT_JOIN, 1, None)
    naive, _ = _register_of_uniform(DIVERGENT_JOIN, 2, None)
    assert movs(aware) == movs(naive) + 1


@pytest.mark.parametrize("level", [1, 2])
def test_interference_free_classes(level: int) -> None:
    """Brute force: no two values of one register interfere (all pairs checked)."""
    for _name, text in [*CASES, ("join", DIVERGENT_JOIN)]:
        mod = lift_module(parse(text, "t.ptx"))
        propagate_copies(mod.funcs[0])
        c = Cssa(mod.funcs[0], level=level, simt=SimtFacts.of_module(mod))
        c.build()
        c.coalesce()
        _check_pairs(c)


def _check_pairs(c: Cssa) -> None:
    classes: dict[int, list[object]] = {}
    for v in c.vars.values():
        classes.setdefault(id(c.class_of(v)), []).append(v)
    dom: Callable[..., bool] = c._dominates
    for members in classes.values():
        for a in members:
            for b in members:
                if a is b or not dom(a, b):
                    continue
                same_point = a.block == b.block and a.pos == b.pos  # type: ignore[attr-defined]
                if same_point and a.id > b.id:  # type: ignore[attr-defined]
                    continue
                live = c.live_after(a, b.block, b.pos)  # type: ignore[attr-defined,arg-type]
                assert not (live and a.value != b.value), (a, b)  # type: ignore[attr-defined]


# Copy propagation gives both loop counters the one constant 0: one phi keeps the
# constant's register, the other needs a copy, which writes the literal again.
SHARED_CONSTANT = kernel(
    """\tmov.u32 %r1, 0;
\tmov.u32 %r2, %r1;
$L_loop:
\tadd.s32 %r1, %r1, 3;
\tadd.s32 %r2, %r2, %r1;
\tsetp.lt.u32 %p1, %r1, %r21;
\t@%p1 bra $L_loop;
\tadd.s32 %r3, %r1, %r2;
\tst.global.u32 [%rd4], %r3;
\tret;"""
)


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_a_shared_constant_is_written_again_not_copied(level: int) -> None:
    out, _ = lowered(SHARED_CONSTANT, CssaOptions(level=level))
    assert run(out) == run(SHARED_CONSTANT)
    body = out[out.index("add.s64") :]
    reg_movs = [ln for ln in body.splitlines() if re.fullmatch(r"\s*mov\.b32\s+%\w+, %\w+;", ln)]
    assert not reg_movs or level == 0, reg_movs
    assert re.search(r"mov\.b32\s+%\w+, 0;", body)


# Two values of %r1 live at once once the copy through %r2 is propagated: keeping the
# input's names would give both the name %r1 (add %r3, %r1, %r1).
REDEFINED = kernel(
    """\tadd.u32 %r1, %r21, 5;
\tmov.u32 %r2, %r1;
\tadd.u32 %r1, %r21, 7;
\tadd.u32 %r3, %r2, %r1;
\tst.global.u32 [%rd4], %r3;
\tret;"""
)


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_values_of_one_register_live_at_once_keep_apart(level: int) -> None:
    """The values of one source register are merged only where they do not interfere:
    here the first %r1 is live where the second is written."""
    out, _ = lowered(REDEFINED, CssaOptions(level=level))
    assert run(out) == run(REDEFINED) == [2 * t + 12 for t in range(40)]


@pytest.mark.parametrize("passes", [["late-commoning"], ["general-optimize", "gvn-cse"]])
def test_liveness_of_the_candidates_only_changes_nothing(
    passes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leaving SSA computes liveness only for the variables coalescing may merge; on
    random kernels the output equals the one with every variable's liveness (a tied
    result missing from the candidates once made late-commoning's output wrong)."""
    from fuzz.kernels import generate

    texts = [generate(seed) for seed in range(60)]
    fast = [optimize(t, "k.ptx", passes).text for t in texts]
    real = Cssa._liveness
    monkeypatch.setattr(Cssa, "_liveness", lambda self, candidates=None: real(self, None))
    assert [optimize(t, "k.ptx", passes).text for t in texts] == fast
