"""insert-pseudo-use-def-conv-ur (ptxas phase 86, InsertPseudoUseDefForConvUR): report.

Lists the CONV.ALLOC keep-alive markers ptxas would insert for the plan phase 74 made
(:mod:`ptxopt.ori.conv_alloc`) and the allowConvAlloc diagnostics (7020/7021).  Runs
phase 74's model itself when that pass did not run first.  Never changes the PTX.
"""

from __future__ import annotations

from ptxopt.analysis.divergence import Divergence
from ptxopt.analysis.manager import PRESERVE_ALL, AnalysisManager
from ptxopt.ir.core import Func
from ptxopt.oracle import sm_number
from ptxopt.ori.conv_alloc import ConvAllocPlan, plan_conv_alloc
from ptxopt.ori.ur_alloc import plan_function
from ptxopt.transforms.base import FunctionPass, register
from ptxopt.transforms.convert_to_uniform_reg import PLANS, forget_other_modules

#: The marker plans of the functions of the last module (as ``PLANS``).
MARKERS: dict[str, ConvAllocPlan] = {}
_marked: list[int] = []


@register
class InsertPseudoUseDefConvUr(FunctionPass):
    name = "insert-pseudo-use-def-conv-ur"
    phase = 86
    description = "InsertPseudoUseDefForConvUR: CONV.ALLOC keep-alive markers (report)"
    preserves = PRESERVE_ALL
    report_only = True

    def run(self, func: Func, am: AnalysisManager) -> bool:
        plan = PLANS.get(func.name)
        if plan is None or plan.arch_sm != sm_number(self.arch or "sm_75"):
            plan = plan_function(func, am.get(Divergence, func), sm_number(self.arch or "sm_75"))
        conv = plan_conv_alloc(func, plan)
        forget_other_modules(MARKERS, _marked, self.module)
        MARKERS[func.name] = conv
        self.stats["CONV.ALLOC markers"] += len(conv.markers)
        self.stats["diagnostics"] += len(conv.diagnostics)
        return False
