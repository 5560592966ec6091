"""convert-to-uniform-reg (ptxas phase 74, ConvertToUniformReg): a report pass.

The R -> UR decision happens inside ptxas, below PTX; this pass runs the model of
:mod:`ptxopt.ori.ur_alloc` on each function and records the plan (``PLANS``, keyed by
function name, and ``--stats`` counters).  It never changes the PTX.
"""

from __future__ import annotations

from typing import Any

from ptxopt.analysis.divergence import Divergence
from ptxopt.analysis.manager import PRESERVE_ALL, AnalysisManager
from ptxopt.ir.core import Func, IRModule
from ptxopt.knobs import Knob
from ptxopt.oracle import sm_number
from ptxopt.ori.ur_alloc import FuncPlan, plan_function
from ptxopt.transforms.base import FunctionPass, register

#: The plans made for the functions of the last module planned, by function name
#: (for reports and tests; a new module's first plan drops the old ones, which hold
#: that module's IR).
PLANS: dict[str, FuncPlan] = {}
_planned: list[int] = []  # the serial of the module PLANS came from
#: Per planned function, the changes the pass pipeline had counted for it
#: (``AnalysisManager.changes``) when it was planned: a later pass that finds another
#: count knows the function changed since (phase 86 then reads its current code).
PLANNED_AT: dict[str, int] = {}
_planned_at: list[int] = []


def forget_other_modules(table: dict[str, Any], seen: list[int], mod: IRModule | None) -> None:
    """Empty ``table`` when ``mod`` is not the module its entries came from (``seen``:
    that module's :attr:`~ptxopt.ir.core.IRModule.serial`)."""
    if mod is None:
        return
    if seen != [mod.serial]:
        table.clear()
        seen[:] = [mod.serial]


def recorded_plan(
    func: Func, mod: IRModule | None, sm: int, am: AnalysisManager
) -> tuple[FuncPlan | None, bool]:
    """Phase 74's plan of ``func`` for target ``sm`` (``None``: this pass made none, on
    ``mod`` when given), and whether a pass changed the function since."""
    plan = PLANS.get(func.name)
    if plan is None or plan.arch_sm != sm or (mod is not None and _planned != [mod.serial]):
        return None, False
    return plan, PLANNED_AT.get(func.name) != am.changes.get(id(func), 0)


SPEC = "02-uniform-registers.txt"


@register
class ConvertToUniformReg(FunctionPass):
    name = "convert-to-uniform-reg"
    phase = 74
    description = "ConvertToUniformReg: predict which values ptxas puts in UR/UP (report)"
    preserves = PRESERVE_ALL
    report_only = True
    knobs = (
        Knob(
            "ConvertToUniformRegMaxAttempts", "int", 5,
            "retry attempts of the conversion (ptxas knob 862)", spec=SPEC, lo=1, hi=1000,
        ),
        Knob(
            "ConvertToUniformRegCutlassOverride", "bool", True,
            "kernels named *cutlass* may convert excluded operand categories", spec=SPEC,
        ),
    )  # fmt: skip

    def run(self, func: Func, am: AnalysisManager) -> bool:
        div = am.get(Divergence, func)
        sm = sm_number(self.arch or "sm_75")
        plan = plan_function(
            func, div, sm,
            max_attempts=int(self.knob("ConvertToUniformRegMaxAttempts")),  # type: ignore[call-overload]
            cutlass_override=bool(self.knob("ConvertToUniformRegCutlassOverride")),
            debug=self.module is not None and "debug" in self.module.ast.target,
        )  # fmt: skip
        forget_other_modules(PLANS, _planned, self.module)
        forget_other_modules(PLANNED_AT, _planned_at, self.module)
        PLANS[func.name] = plan
        PLANNED_AT[func.name] = am.changes.get(id(func), 0)
        self.stats["webs converted to UR/UP"] += plan.converted
        self.stats["bridges"] += len(plan.bridges)
        self.stats["attempts"] += plan.attempts
        return False
