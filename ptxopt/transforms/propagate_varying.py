"""The two pipeline runs of varying propagation (spec 01): phase 53
``OriPropagateVaryingFirst`` and phase 70 ``OriPropagateVaryingSecond``.

Neither changes the IR: each drops any cached divergence result and recomputes it
from scratch (reset, seed, iterate), so the passes between them see facts that
match the code they transform.  When no pass changed the module since the cached
result was computed from scratch in this pipeline run, that result is the one a
recomputation would give, and it is kept.  With ``--time-passes`` each run shows up as its own
phase.

When the caller reads no counters or notes (the drop-in, the Triton hook, plain
``ptxopt opt``), a run only drops the cached result: the next pass that asks for the
divergence computes it from scratch on the code it sees (the facts a rerun of phase
53/70 just before that pass would give; the same as this run's where no pass changed
the code in between).  In the default pipeline only the report passes ask, and they
are skipped then.
"""

from __future__ import annotations

from ptxopt.analysis.divergence import drop_varying, propagate_varying
from ptxopt.analysis.manager import PRESERVE_ALL, AnalysisManager
from ptxopt.ir.core import Func
from ptxopt.transforms.base import FunctionPass, register


@register
class PropagateVaryingFirst(FunctionPass):
    name = "propagate-varying-first"
    phase = 53
    description = "OriPropagateVaryingFirst: recompute per-value uniform/varying from scratch"
    preserves = PRESERVE_ALL

    def run(self, func: Func, am: AnalysisManager) -> bool:
        # the module's analysis is recomputed once per run of the pass (the first
        # function), not once per function: nothing changes between the functions
        first = not getattr(self, "_module_done", False)
        self._module_done = True
        if self.reports:
            propagate_varying(func, am, self.phase or 53, module=first)
        else:
            drop_varying(func, am, module=first)
        return False


@register
class PropagateVaryingSecond(FunctionPass):
    name = "propagate-varying-second"
    phase = 70
    description = "OriPropagateVaryingSecond: the same analysis rerun after the mid pipeline"
    preserves = PRESERVE_ALL

    def run(self, func: Func, am: AnalysisManager) -> bool:
        # the module's analysis is recomputed once per run of the pass (the first
        # function), not once per function: nothing changes between the functions
        first = not getattr(self, "_module_done", False)
        self._module_done = True
        if self.reports:
            propagate_varying(func, am, self.phase or 70, module=first)
        else:
            drop_varying(func, am, module=first)
        return False
