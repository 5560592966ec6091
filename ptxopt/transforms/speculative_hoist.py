"""speculative-hoist: move speculatable constant-bank loads out of loops and above
branches (ptxas's SpeculativeHoistComInsts, phase 56, a consumer of phase 27).

For every load :class:`~ptxopt.analysis.speculation.Speculation` calls safe (and the
uniform address arithmetic feeding it), visited in reverse postorder so that operands
move first: the *earliest* legal block is the deepest block, in the dominator tree,
among those defining its operands.  On the dominator-tree path from there down to the
instruction's block the target is the block of least loop depth closest to the
instruction (a loop-invariant load leaves every loop it does not depend on); when that
gains no loop level, the instruction still rises one level, to its immediate
dominator, i.e. above the branch that guards it.  The instruction goes at the end of
the target block, before its terminator.  SSA stays valid because every operand's
definition dominates the target.  Off by default; ``SpeculativeHoistBudget`` bounds
the number of moves per function.
"""

from __future__ import annotations

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.loops import LoopForest
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.analysis.speculation import Speculation, bind_const_sizes
from ptxopt.ir.core import Func, Inst, Value
from ptxopt.ir.edit import insert_at_end
from ptxopt.knobs import Knob
from ptxopt.transforms.base import FunctionPass, register

__all__ = ["SpeculativeHoist", "run"]


def _def_block(v: Value, entry: int) -> int:
    if v.kind in ("special", "undef", "param") or v.block is None:
        return entry
    return v.block.index


def run(func: Func, am: AnalysisManager, budget: int) -> int:
    """Hoist; return the number of instructions moved."""
    spec = am.get(Speculation, func)
    cands = spec.safe | spec.address_insts
    if not cands:
        return 0
    dom = am.get(DomTree, func)
    loops = am.get(LoopForest, func)
    entry = dom.entry
    moved = 0
    for bi in dom.rpo:
        for inst in list(func.blocks[bi].insts):
            if inst not in cands or moved >= budget:
                continue
            target = _target(inst, bi, dom, loops, entry)
            if target is None:
                continue
            func.blocks[bi].insts.remove(inst)
            insert_at_end(func.blocks[target], inst)
            moved += 1
    return moved


def _target(inst: Inst, bi: int, dom: DomTree, loops: LoopForest, entry: int) -> int | None:
    earliest = entry
    for v in inst.operand_values():
        d = _def_block(v, entry)
        if not dom.dominates(d, bi):
            return None
        if dom.depth[d] > dom.depth[earliest]:
            earliest = d
    if earliest == bi:
        return None
    path = []
    x = bi
    while True:
        path.append(x)
        if x == earliest:
            break
        x = dom.idom[x]
    low = min(loops.depth_of(b) for b in path)
    if loops.depth_of(bi) > low:
        # the closest block to the instruction at the lowest loop depth
        return next(b for b in path if loops.depth_of(b) == low)
    return dom.idom[bi]


@register
class SpeculativeHoist(FunctionPass):
    name = "speculative-hoist"
    phase = 56
    description = (
        "hoist speculatable ld.param/ld.const (+ address arithmetic) out of loops, above branches"
    )
    knobs = (
        Knob(
            "SpeculativeHoistBudget",
            "int",
            10000,
            "most instructions moved per function",
            spec="02-uniform-registers.txt",
            lo=0,
        ),
    )

    def run(self, func: Func, am: AnalysisManager) -> bool:
        if self.module is not None:
            bind_const_sizes(self.module)
        n = run(func, am, int(self.knob("SpeculativeHoistBudget")))  # type: ignore[call-overload]
        if n:
            self.stats["instructions hoisted"] += n
        return n > 0
