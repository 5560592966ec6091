"""analyze-uniforms-for-speculation (spec 02, phase 27) and its consumer speculative-hoist
(SpeculativeHoistComInsts, phase 56): which constant-bank loads may run on paths the
program did not take, and hoisting them out of loops and above branches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from helpers import ptxas_check

from ptxopt.analysis.manager import AnalysisManager
from ptxopt.analysis.speculation import Speculation, bind_const_sizes
from ptxopt.driver import optimize
from ptxopt.ir.lift import lift_module
from ptxopt.ptx.parser import parse
from ptxopt.sim import differential

SRC = """.version 8.0
.target sm_80
.address_size 64
.const .align 4 .b8 tab[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0};
.visible .entry k(.param .u64 k_out, .param .u32 k_n, .param .u32 k_m)
{
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [k_out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, 0;
  mov.u32 %r3, 0;
LOOP:
  ld.param.u32 %r4, [k_n];
  mov.u64 %rd2, tab;
  add.s64 %rd3, %rd2, 8;
  ld.const.u32 %r5, [%rd3+4];
  ld.const.u32 %r6, [%rd3+8];
  mad.lo.s32 %r3, %r5, %r2, %r3;
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r4;
  @%p1 bra LOOP;
  setp.lt.u32 %p2, %r1, 9;
  @%p2 bra SKIP;
  ld.param.u32 %r7, [k_m];
  ld.const.u32 %r8, [tab+4];
  add.s32 %r3, %r3, %r7;
  add.s32 %r3, %r3, %r8;
SKIP:
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  st.global.u32 [%rd5], %r3;
  ret;
}
"""


def _spec() -> tuple[Speculation, Any]:
    mod = lift_module(parse(SRC))
    bind_const_sizes(mod)
    fn = mod.funcs[0]
    return AnalysisManager().get(Speculation, fn), fn


def test_analysis_marks_param_and_in_bounds_const_loads() -> None:
    spec, fn = _spec()
    safe = sorted(str(i.ast.operands[1]) for i in spec.safe)
    assert safe == ["[%rd3+4]", "[k_m]", "[k_n]", "[k_out]", "[tab+4]"]
    # tab+8+8 .. +12 is past the 16-byte table: not provably in bounds
    (why,) = spec.reasons.values()
    assert why == "constant-bank access not provably in bounds"
    assert {i.opcode for i in spec.address_insts} == {"mov", "add"}


def test_analysis_pass_changes_nothing() -> None:
    res = optimize(SRC, "s.ptx", ["analyze-uniforms-for-speculation"])
    assert res.text == optimize(SRC, "s.ptx", []).text
    stats = res.report.stats["analyze-uniforms-for-speculation"]
    assert stats["speculatable loads"] == 5


def _args(seed: int, grid: Any, block: Any) -> list[Any]:
    rng = np.random.default_rng(seed)
    return [np.zeros(64, np.uint32), int(rng.integers(1, 6)), int(rng.integers(0, 99))]


def test_hoisting_out_of_loops_and_above_branches(tmp_path: Path) -> None:
    res = optimize(SRC, "s.ptx", ["speculative-hoist"], verify_each=True)
    text = res.text
    head, loop = text.split("LOOP:")[0], text.split("LOOP:")[1].split("@%p1 bra")[0]
    # the invariant loads and their address arithmetic left the loop
    assert "ld.param.u32" in head and "ld.const.u32" in head and "ld.param" not in loop
    assert "ld.const.u32" in loop  # the out-of-bounds one stays
    # the guarded block's loads rose above its branch
    above = text.split("%p2, %r1, 9;")[1].split("@%p2 bra")[0]
    assert "ld.param.u32" in above and "ld.const.u32" in above
    assert res.report.stats["speculative-hoist"]["instructions hoisted"] == 6
    diff = differential(SRC, text, "k", [(1, 32), (2, 13)], None, _args, trials=3)
    assert diff.ok, diff.message
    ptxas_check(text, "sm_80", tmp_path)


def test_hoist_budget_knob() -> None:
    res = optimize(SRC, "s.ptx", ["speculative-hoist"], knobs={"SpeculativeHoistBudget": 2})
    assert res.report.stats["speculative-hoist"]["instructions hoisted"] == 2
    res0 = optimize(SRC, "s.ptx", ["speculative-hoist"], knobs={"SpeculativeHoistBudget": 0})
    assert res0.report.changed.get("speculative-hoist", 0) == 0
