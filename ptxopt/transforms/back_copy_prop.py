"""back-copy-prop: OriBackCopyPropagate (ptxas phases 82/83, spec 03).

Backward copy propagation removes ``mov d, s`` by making the instruction that
computes ``s`` write ``d``'s register directly (``s = expr; d = s`` becomes
``d = expr``).  Forward propagation rewrites the *uses* of a copy; this pass rewrites
a *definition*, which matters where the register is significant: a value that feeds
a phi of its own register (a loop-carried variable) leaves SSA without a copy when
the instruction computing it writes that register.

The walk follows the reconstruction in the spec: blocks in reverse postorder,
instructions last to first, so a chain ``R1 = e; R2 = R1; R3 = R2`` collapses in one
sweep.  A copy is removed when ``s`` has this copy as its only use, is written by an
unguarded, non-tied definition earlier in the same block, the register types allow
the instruction to write ``d``'s register, and no instruction between the definition
and the copy touches ``d``'s register (the renamed live range would otherwise
overlap another value of it).  ``BackCopyPropBudget`` bounds the copies removed per
function.

As in ptxas 13.0.88, where phase 83 is a no-op unless an architecture backend
installs the phase-82 hook, the default pipeline does not run it: ``-p
back-copy-prop`` or ``--named-phases AdvancedPhaseBackPropVReg`` does.
"""

from __future__ import annotations

from ptxopt.analysis.manager import AnalysisManager
from ptxopt.analysis.rpo import reverse_postorder
from ptxopt.ir.core import Func, Inst, Value
from ptxopt.knobs import Knob
from ptxopt.ptx.ast import Reg
from ptxopt.transforms.base import FunctionPass, register
from ptxopt.transforms.general_optimize import compatible

#: architectures whose backend enables the pass by default (none in ptxas 13.0.88)
ARCH_ENABLED: frozenset[str] = frozenset()


def _use_counts(func: Func) -> dict[int, int]:
    n: dict[int, int] = {}
    for b in func.blocks:
        for phi in b.phis:
            for v in phi.incoming:
                n[v.id] = n.get(v.id, 0) + 1
        for inst in b.insts:
            for v in inst.operand_values():
                n[v.id] = n.get(v.id, 0) + 1
    return n


def _is_copy(inst: Inst) -> bool:
    ops = inst.ast.operands
    return (
        inst.opcode == "mov"
        and inst.pred is None
        and len(ops) == 2
        and type(ops[0]) is Reg
        and type(ops[1]) is Reg
        and len(inst.defs) == 1
        and len(inst.uses) == 1
        and isinstance(inst.uses[0], Value)
    )


def _touches(inst: Inst, var: str) -> bool:
    return any(v.var == var for v in inst.operand_values()) or any(
        v.var == var for v in inst.result_values()
    )


def run(func: Func, budget: int, stats: dict[str, int] | None = None) -> int:
    """Remove copies backwards; return how many were removed."""
    uses = _use_counts(func)
    removed = 0
    for bi in reverse_postorder(func.cfg_succs(), 0):
        b = func.blocks[bi]
        i = len(b.insts) - 1
        while i >= 0:
            if removed >= budget:
                if stats is not None:
                    stats["BackCopyPropBudget reached"] = 1
                return removed
            mv = b.insts[i]
            i -= 1
            if not _is_copy(mv):
                continue
            d = mv.defs[0]
            s = mv.uses[0]
            assert isinstance(s, Value)
            if s.kind != "inst" or s.block is not b or uses.get(s.id, 0) != 1:
                continue
            src = s.inst
            if not isinstance(src, Inst) or src.info is None or src.pred is not None:
                continue
            if src.opcode == "call":
                continue
            if s not in src.defs:
                continue
            k = src.defs.index(s)
            if src.olds is not None and src.olds[k] is not None:
                continue
            if not compatible(s.type, d.type) or d.var == s.var:
                continue
            j = b.insts.index(src)
            mi = b.insts.index(mv)
            if any(_touches(x, d.var) for x in b.insts[j + 1 : mi]):
                continue
            if any(v.var == d.var for v in src.result_values() if v is not s):
                continue
            src.defs[k] = d
            d.inst = src
            d.block = b
            b.insts.pop(mi)
            mv.block = None
            removed += 1
            i = min(i, len(b.insts) - 1)
    return removed


@register
class BackCopyProp(FunctionPass):
    name = "back-copy-prop"
    phase = 83
    description = "backward copy propagation: let a copy's source be computed into its target"
    knobs = (
        Knob(
            "BackCopyPropBudget",
            "int",
            100_000,
            "most copies removed per function",
            spec="03-copyprop-cse.txt",
            lo=0,
        ),
    )

    def run(self, func: Func, am: AnalysisManager) -> bool:
        budget = int(self.knob("BackCopyPropBudget"))  # type: ignore[call-overload]
        n = run(func, budget, self.stats)  # type: ignore[arg-type]
        if n:
            self.stats["copies removed"] += n
        return n > 0
