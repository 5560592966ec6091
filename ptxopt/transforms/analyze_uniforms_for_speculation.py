"""analyze-uniforms-for-speculation: ptxas phase 27, an analysis-only phase.

Computes :class:`~ptxopt.analysis.speculation.Speculation` for each function (which
``ld.param``/``ld.const`` loads and address computations may run on paths the
program did not take) and leaves it cached for the consumers (``speculative-hoist``);
``--stats`` reports how many loads are speculatable and why the others are not.  The
code is never changed.
"""

from __future__ import annotations

from ptxopt.analysis.manager import PRESERVE_ALL, AnalysisManager
from ptxopt.analysis.speculation import Speculation, bind_const_sizes
from ptxopt.ir.core import Func
from ptxopt.transforms.base import FunctionPass, register


@register
class AnalyzeUniformsForSpeculation(FunctionPass):
    name = "analyze-uniforms-for-speculation"
    phase = 27
    description = "mark the constant-bank loads (ld.param/ld.const) that are safe to speculate"
    preserves = PRESERVE_ALL

    def run(self, func: Func, am: AnalysisManager) -> bool:
        if self.module is not None:
            bind_const_sizes(self.module)
        spec = am.get(Speculation, func)
        self.stats["speculatable loads"] += len(spec.safe)
        for why in spec.reasons.values():
            self.stats[f"not speculatable: {why}"] += 1
        return False
