"""predication (OriDoPredication, phase 63) and back-copy-prop (OriBackCopyPropagate,
phases 82/83): shapes converted and refused, knobs, and every result executed against
the original on edge values (and assembled by ptxas where installed)."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import ptxas_check
from test_general_optimize import _args, count, kernel

from ptxopt.driver import optimize
from ptxopt.phases import PHASES, default_steps, resolve_named_phases
from ptxopt.pipeline import available_passes
from ptxopt.sim import differential


def run(
    body: str, passes: list[str], tmp_path: Path | None = None, **knobs: object
) -> tuple[str, dict[str, int]]:
    text = kernel(body)
    res = optimize(text, "t.ptx", passes, verify_each=True, knobs=knobs)
    diff = differential(text, res.text, "k", 1, 32, _args, trials=2)
    assert diff.ok, diff.message
    if tmp_path is not None:
        ptxas_check(res.text, "sm_80", tmp_path)
    stats: dict[str, int] = {}
    for st in res.report.stats.values():
        stats.update(st)
    return res.text, stats


TRIANGLE = """
mov.u32 %r10, %r2;
setp.lt.u32 %p1, %r2, 100;
@%p1 bra $L__BB0_2;
add.s32 %r10, %r2, 5;
shl.b32 %r10, %r10, 1;
$L__BB0_2:
"""

DIAMOND = """
setp.lt.s32 %p1, %r2, 0;
@%p1 bra $L__BB0_2;
mul.lo.s32 %r10, %r2, 3;
bra.uni $L__BB0_3;
$L__BB0_2:
ld.global.u32 %r10, [%rd4];
$L__BB0_3:
"""

PRED_PHI = """
setp.lt.s32 %p1, %r2, 0;
setp.eq.s32 %p2, %r1, 1;
@%p1 bra $L__BB0_2;
setp.eq.s32 %p2, %r2, 7;
$L__BB0_2:
selp.u32 %r10, 11, 22, %p2;
"""

UNIFORM = """
mov.u32 %r10, %r2;
mov.u32 %r3, %ctaid.x;
setp.eq.u32 %p1, %r3, 0;
@%p1 bra $L__BB0_2;
add.s32 %r10, %r2, 5;
add.s32 %r10, %r10, 5;
add.s32 %r10, %r10, 5;
add.s32 %r10, %r10, 5;
add.s32 %r10, %r10, 5;
$L__BB0_2:
"""


def test_triangle_is_if_converted(tmp_path: Path) -> None:
    out, st = run(TRIANGLE, ["predication"], tmp_path)
    assert st["branches predicated"] == 1 and count(out, "bra") == 0
    # pure arm instructions run unguarded (a guarded write to a fresh register is a
    # partial definition that ptxas keeps alive back to the entry); selp merges
    assert re.search(r"\tadd\.s32", out) and not re.search(r"@!?%p1 (add|shl)", out)
    assert count(out, "selp") == 1


def test_diamond_is_if_converted(tmp_path: Path) -> None:
    out, st = run(DIAMOND, ["predication"], tmp_path, PredicationMemory=True)
    assert st["branches predicated"] == 1 and count(out, "bra") == 0
    assert re.search(r"@%p1 ld\.global\.u32", out) and re.search(r"\tmul\.lo", out)
    assert not re.search(r"@!?%p1 mul", out)


def test_expensive_arms_stay_branches() -> None:
    """Division and square root are never run on lanes that did not take the arm."""
    body = TRIANGLE.replace("shl.b32 %r10, %r10, 1;", "div.u32 %r10, %r10, 7;")
    out, st = run(body, ["predication"])
    assert "branches predicated" not in st and count(out, "bra") >= 1


def test_memory_arms_stay_branches_by_default() -> None:
    """A guarded load or store costs ptxas registers (the pass's docstring has the
    measurement), so an arm with one is converted only with PredicationMemory."""
    out, st = run(DIAMOND, ["predication"])
    assert "branches predicated" not in st and count(out, "bra") >= 1
    _, st = run(DIAMOND.replace("ld.global.u32 %r10, [%rd4];", "add.s32 %r10, %r2, 9;"),
                ["predication"])  # fmt: skip
    assert st["branches predicated"] == 1


def test_predicate_phi_becomes_guarded_mov(tmp_path: Path) -> None:
    out, st = run(PRED_PHI, ["predication"], tmp_path)
    assert st["branches predicated"] == 1 and re.search(r"@%p1 mov\.pred", out)


def test_disable_predication() -> None:
    out, st = run(TRIANGLE, ["predication"], DisablePredication=True)
    assert "branches predicated" not in st and count(out, "bra") == 1


def test_budgets_depend_on_divergence() -> None:
    # five instructions under a uniform branch (blockIdx): over the uniform budget
    _, st = run(UNIFORM, ["predication"])
    assert "branches predicated" not in st and st["regions over budget"] == 1
    _, st = run(UNIFORM, ["predication"], PredicationUniformMaxInsts=5)
    assert st["branches predicated"] == 1
    # the same region under a divergent branch (threadIdx) fits the divergent budget
    _, st = run(UNIFORM.replace("%ctaid.x", "%tid.x"), ["predication"])
    assert st["branches predicated"] == 1
    _, st = run(UNIFORM.replace("%ctaid.x", "%tid.x"), ["predication"], PredicationMaxInsts=4)
    assert "branches predicated" not in st
    _, st = run(TRIANGLE + TRIANGLE.replace("BB0_2", "BB0_3"), ["predication"], PredicationBudget=1)
    assert st["branches predicated"] == 1 and st["PredicationBudget reached"] == 1


def test_convergent_and_barrier_arms_are_refused() -> None:
    for instr in ("shfl.sync.bfly.b32 %r10, %r2, 1, 31, -1;", "bar.sync 0;"):
        body = TRIANGLE.replace("shl.b32 %r10, %r10, 1;", instr)
        _, st = run(body, ["predication"])
        assert "branches predicated" not in st


def test_predication_then_general_optimize(tmp_path: Path) -> None:
    out, _ = run(
        DIAMOND + TRIANGLE.replace("BB0_2", "BB0_4").replace("mov.u32 %r10, %r2;", ""),
        ["predication", "general-optimize"],
        tmp_path,
        PredicationMemory=True,
    )
    assert count(out, "bra") == 0


# -- back-copy-prop ------------------------------------------------------------------

CHAIN = """
add.s32 %r3, %r2, 1;
mov.u32 %r4, %r3;
mov.u32 %r5, %r4;
mov.u32 %r10, %r5;
"""


def test_back_copy_prop_collapses_a_chain(tmp_path: Path) -> None:
    out, st = run(CHAIN, ["back-copy-prop"], tmp_path)
    assert st["copies removed"] == 3 and re.search(r"add\.s32\s+%r10, %r2, 1", out)


def test_back_copy_prop_budget() -> None:
    _, st = run(CHAIN, ["back-copy-prop"], BackCopyPropBudget=1)
    assert st["copies removed"] == 1 and st["BackCopyPropBudget reached"] == 1


def test_back_copy_prop_guards() -> None:
    # the source has a second use, the target register is read in between, a type pun
    for body in (
        "add.s32 %r3, %r2, 1; mov.u32 %r10, %r3; st.global.u32 [%rd4], %r3;",
        "mov.u32 %r10, %r1; add.s32 %r3, %r2, 1; st.global.u32 [%rd4], %r10; mov.u32 %r10, %r3;",
        ".reg .f32 %fx; .reg .u32 %ux; add.f32 %fx, %f1, %f1; mov.b32 %ux, %fx;"
        " add.u32 %r10, %ux, 1;",
    ):
        _, st = run(body.replace("; ", ";\n"), ["back-copy-prop"])
        assert "copies removed" not in st, body


def test_back_copy_prop_is_off_by_default() -> None:
    steps = default_steps(available_passes())
    assert "back-copy-prop" not in {s.pass_name for s in steps}
    row = next(p for p in PHASES if p.pass_name == "back-copy-prop")
    assert row.number == 83 and not row.default
    (step,) = resolve_named_phases(["AdvancedPhaseBackPropVReg"], available_passes())
    assert step.pass_name == "back-copy-prop"
