"""insert-pseudo-use-def-conv-ur (ptxas phase 86, InsertPseudoUseDefForConvUR): report.

Lists the CONV.ALLOC keep-alive markers ptxas would insert for the plan phase 74 made
(:mod:`ptxopt.ori.conv_alloc`) and the allowConvAlloc diagnostics (7020/7021).  Runs
phase 74's model itself when that pass did not run first (on this module, for this
target); when a pass changed the function in between, it keeps phase 74's register
files and finds their readers in the code as it is now.  Never changes the PTX.
"""

from __future__ import annotations

from ptxopt.analysis.divergence import Divergence
from ptxopt.analysis.manager import PRESERVE_ALL, AnalysisManager
from ptxopt.ir.core import Func
from ptxopt.oracle import sm_number
from ptxopt.ori.conv_alloc import ConvAllocPlan, current_reads, plan_conv_alloc
from ptxopt.ori.ur_alloc import plan_function
from ptxopt.transforms.base import FunctionPass, register
from ptxopt.transforms.convert_to_uniform_reg import forget_other_modules, recorded_plan

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
        sm = sm_number(self.arch or "sm_75")
        plan, changed = recorded_plan(func, self.module, sm, am)
        if plan is None:
            plan = plan_function(func, am.get(Divergence, func), sm)
            conv = plan_conv_alloc(func, plan)
        elif changed:
            # a pass between the two phases changed the function: phase 74's register
            # files, the readers the function has now
            conv = plan_conv_alloc(func, plan, current_reads(func, plan.uniform))
        else:
            conv = plan_conv_alloc(func, plan)
        forget_other_modules(MARKERS, _marked, self.module)
        MARKERS[func.name] = conv
        self.stats["CONV.ALLOC markers"] += len(conv.markers)
        self.stats["diagnostics"] += len(conv.diagnostics)
        return False
