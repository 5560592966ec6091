"""mark-uniform-branches: write ``bra.uni`` on conditional branches proven uniform.

Uses the divergence analysis (spec 01, consumer "OriBranchOpt / BranchSwitch": uniform
branches take the cheaper encoding and need no BSSY/BSYNC reconvergence region).  A
conditional ``bra`` whose guard is warp-uniform gets the ``.uni`` modifier, which tells
ptxas the branch is non-divergent.  Off by default (not in the default pipeline); it changes
only the ``Inst.ast`` of branches, so every analysis is preserved.
"""

from __future__ import annotations

from ptxopt.analysis.divergence import Divergence, is_conditional_branch
from ptxopt.analysis.manager import PRESERVE_ALL, AnalysisManager
from ptxopt.ir.core import Func
from ptxopt.record import replace
from ptxopt.transforms.base import FunctionPass, register


def run(func: Func, am: AnalysisManager) -> bool:
    """Mark every uniform conditional ``bra`` of ``func`` with ``.uni``; True if any."""
    div = am.get(Divergence, func)
    changed = False
    for b in func.blocks:
        t = b.terminator
        if not is_conditional_branch(t):
            continue
        assert t is not None and t.info is not None
        if t.info.name != "bra" or ".uni" in t.ast.mods or div.branch_divergent(b.index):
            continue
        # ``.uni`` promises one guard value per warp, even where both targets coincide
        if t.pred is not None and div.is_varying(t.pred):
            continue
        t.ast = replace(t.ast, mods=(*t.ast.mods, ".uni"))
        changed = True
    return changed


@register
class MarkUniformBranches(FunctionPass):
    name = "mark-uniform-branches"
    description = "add .uni to conditional branches the divergence analysis proves uniform"
    preserves = PRESERVE_ALL

    def run(self, func: Func, am: AnalysisManager) -> bool:
        return run(func, am)
