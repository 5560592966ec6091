"""late-commoning: LateOriCommoning (ptxas phase 64), after predication.

Spec 03, "Phase 64 -- LateOriCommoning".  If-conversion (phase 63) turns branches into
guarded instructions; computations that sat in different arms become neighbours and
may now be one value.  This pass walks the dominator tree once, in program order
inside each block (the spec's per-block class walk), and keeps

* **equivalence classes**: a table from instruction key
  (:func:`ptxopt.ir.value_key.expr_key`) to the first instruction of the class on the
  current dominator path; an instruction joins a class only when that instruction
  dominates it (it is on the path, so dominance holds by construction);
* **a class signature per path** (the spec's Bloom filter): a 64-bit mask of the
  opcode classes met on the dominator path so far, saved and restored with the
  scopes; an instruction whose class bit is absent skips the table lookup;
* **move representatives**: a plain copy ``mov d, s`` (same type, unguarded) makes
  ``s`` the representative of ``d`` and keys are computed through representatives,
  so ``mov r2, r1; add r3, r2, x`` and ``add r4, r1, x`` fall into one class.
  ``DisableMoveCommoning=1`` turns this off.

**Predicate compatibility.**  Two instructions are one value when neither is guarded,
or both have the same guard value with the same polarity and the same old values.  A
guarded instruction whose old value is the result of the same computation under the
*complementary* guard (``@p r1 = f(x); @!p r2 = f(x) (old r1)``, the shape
if-conversion leaves behind) computes ``f(x)`` in every lane: the pair becomes one
unguarded instruction when nothing else reads the first.

Loads: invariant loads join classes like arithmetic; other loads only inside one
block with no store that may alias them and no barrier in between (the spec's "no
scheduling dependence" condition).

**Gate.**  ptxas runs the walker only when the function's optimization state asks for
it or ``ForceLateCommoning`` is set.  Here the state is "the function holds guarded
non-branch instructions" (what predication produces); ``ForceLateCommoning=1`` runs it
on every function.
"""

from __future__ import annotations

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.graph import Graph
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.commoning import Edits, ScopedTable, Users, common_into
from ptxopt.ir.core import Func, Inst, Value
from ptxopt.ir.edit import make_inst
from ptxopt.ir.value_key import (
    Eligibility,
    MemAccess,
    eligibility,
    expr_key,
    may_alias,
    mem_access,
    readonly_param_symbols,
)
from ptxopt.knobs import Knob
from ptxopt.ptx.ast import Imm, Reg
from ptxopt.transforms.base import FunctionPass, register
from ptxopt.transforms.gvn_cse import memory_effect

_CLASSES = (Eligibility.PURE, Eligibility.INVARIANT_LOAD, Eligibility.LOAD)


def class_bit(inst: Inst) -> int:
    """The instruction's bit in the path signature (one of 64, by opcode)."""
    h = 0
    for ch in inst.ast.opcode:
        h = (h * 131 + ord(ch)) & 0xFFFF
    return 1 << (h % 64)


def has_predicated_code(func: Func) -> bool:
    for inst in func.instructions():
        if inst.pred is not None and inst.defs:
            return True
    return False


class _Walker:
    def __init__(self, func: Func, am: AnalysisManager, moves: bool) -> None:
        self.func = func
        self.dom = am.get(DomTree, func)
        self.users = Users(func)
        self.edits = Edits()
        self.moves = moves
        self.rep: dict[int, Value] = {}
        self.table: ScopedTable[tuple[object, ...], Inst] = ScopedTable()
        self.readonly = readonly_param_symbols(func)
        self.signature = 0
        self.commoned = 0
        self.merged = 0
        self.skipped_by_signature = 0
        # plain loads of the current block since the last barrier: key -> (inst, access)
        self.loads: dict[tuple[object, ...], tuple[Inst, MemAccess | None]] = {}

    def canonical(self, v: Value) -> Value:
        r = self.rep.get(v.id)
        return r if r is not None else v

    def key(self, inst: Inst) -> tuple[object, ...] | None:
        if not self.rep:
            return expr_key(inst)
        saved, saved_olds = inst.uses, inst.olds
        inst.uses = [self.canonical(u) if isinstance(u, Value) else u for u in saved]
        if saved_olds:
            inst.olds = [self.canonical(o) if o is not None else None for o in saved_olds]
        try:
            return expr_key(inst)
        finally:
            inst.uses, inst.olds = saved, saved_olds

    def note_move(self, inst: Inst) -> None:
        info = inst.info
        if not self.moves or info is None or info.name != "mov" or inst.pred is not None:
            return
        if len(inst.defs) != 1 or len(inst.uses) != 1 or len(inst.ast.operands) != 2:
            return
        src = inst.uses[0]
        if not isinstance(inst.ast.operands[1], Reg) or not isinstance(src, Value):
            return
        if src.kind not in ("inst", "phi", "param") or src.type != inst.defs[0].type:
            return
        self.rep[inst.defs[0].id] = self.canonical(src)

    def merge_complementary(self, inst: Inst) -> bool:
        """``@p r1 = f(x); @!p r2 = f(x) (old r1)`` -> ``r2 = f(x)``."""
        if inst.pred is None or not inst.olds or len(inst.defs) != 1:
            return False
        old = inst.olds[0]
        if old is None or old.kind != "inst" or not isinstance(old.inst, Inst):
            return False
        first = old.inst
        if first.block is not inst.block or first.pred is not inst.pred:
            return False
        if first.pred_neg == inst.pred_neg or len(first.defs) != 1:
            return False
        if first.ast.opcode != inst.ast.opcode or first.ast.mods != inst.ast.mods:
            return False
        ops = inst.ast.operands
        if not ops or not isinstance(ops[0], Reg):
            return False
        if not all(isinstance(o, Reg | Imm) for o in ops[1:]):
            return False
        if len(first.ast.operands) != len(ops) or not isinstance(first.ast.operands[0], Reg):
            return False
        if _sources(first) != _sources(inst):
            return False
        if any(u is not inst for u in self.users.of(first.defs[0]) if u.block is not None):
            return False
        if eligibility(inst, self.readonly) not in (Eligibility.PURE, Eligibility.INVARIANT_LOAD):
            return False
        block = inst.block
        assert block is not None
        new = make_inst(
            self.func,
            inst.ast.opcode,
            inst.ast.mods,
            [inst.defs[0].var],
            _sources(inst),
            loc=inst.loc,
        )
        self.edits.insert_before(inst, new)
        self.users.add(new)
        common_into(self.func, self.users, inst, new, self.edits)
        self.edits.remove(first)
        self.merged += 1
        return True

    def visit(self, inst: Inst) -> None:
        full, writes = memory_effect(inst)
        if full:
            self.loads.clear()
        elif writes:
            for k in [k for k, (_, acc) in self.loads.items() if any(
                may_alias(w, acc) for w in writes
            )]:  # fmt: skip
                del self.loads[k]
        if self.merge_complementary(inst):
            return
        self.note_move(inst)
        cls = eligibility(inst, self.readonly)
        if cls not in _CLASSES:
            return
        key = self.key(inst)
        if key is None:
            return
        if cls is Eligibility.LOAD:
            hit = self.loads.get(key)
            if hit is not None:
                common_into(self.func, self.users, inst, hit[0], self.edits)
                self.commoned += 1
            else:
                self.loads[key] = (inst, mem_access(inst))
            return
        bit = class_bit(inst)
        if self.signature & bit:
            leader = self.table.get(key)
            if leader is not None and leader.block is not None:
                common_into(self.func, self.users, inst, leader, self.edits)
                self.commoned += 1
                return
        else:
            self.skipped_by_signature += 1
        self.signature |= bit
        self.table.set(key, inst)

    def run(self) -> int:
        dom = self.dom
        blocks = self.func.blocks
        stack: list[tuple[int, int | None]] = [(dom.entry, None)]
        while stack:
            bi, saved = stack.pop()
            if saved is not None:
                self.table.pop()
                self.signature = saved
                continue
            self.table.push()
            stack.append((bi, self.signature))
            self.loads = {}
            for inst in list(blocks[bi].insts):
                if inst.block is not None:
                    self.visit(inst)
            for c in reversed(dom.children[bi]):
                stack.append((c, None))
        self.edits.flush()
        return self.commoned + self.merged


def _sources(inst: Inst) -> list[Value | Imm]:
    """The sources of an instruction whose operands are one register destination and
    plain registers or immediates (checked by the caller)."""
    out: list[Value | Imm] = []
    k = 0
    for op in inst.ast.operands[1:]:
        if isinstance(op, Reg):
            out.append(inst.uses[k])
            k += 1
        else:
            assert isinstance(op, Imm)
            out.append(op)
    return out


@register
class LateCommoning(FunctionPass):
    name = "late-commoning"
    phase = 64
    description = "post-predication commoning over the dominator tree (ptxas LateOriCommoning)"
    preserves = frozenset({Graph, DomTree})
    knobs = (
        Knob(
            "ForceLateCommoning",
            "bool",
            False,
            "run on every function, not only those holding predicated code",
            spec="03-copyprop-cse.txt",
        ),
        Knob(
            "DisableMoveCommoning",
            "bool",
            False,
            "do not look through plain copies when comparing operands",
            spec="03-copyprop-cse.txt",
        ),
    )

    def run(self, func: Func, am: AnalysisManager) -> bool:
        if not self.knob("ForceLateCommoning") and not has_predicated_code(func):
            return False
        w = _Walker(func, am, not self.knob("DisableMoveCommoning"))
        n = w.run()
        if w.commoned:
            self.stats["instructions commoned"] += w.commoned
        if w.merged:
            self.stats["complementary pairs merged"] += w.merged
        return n > 0
