"""predication: OriDoPredication (ptxas phase 63), if-conversion of small regions.

A conditional branch ``@p bra X`` whose one or two arms are small single-entry,
single-exit blocks meeting again at a join is replaced by straight-line code:

* *triangle*: one arm block ``F`` between the branch block ``A`` and the join;
* *diamond*: two arm blocks ``F`` and ``X`` that both go on to the join.

Every instruction of an arm moves into ``A``: pure ones unguarded (speculated: the
lanes that did not take the arm compute a value nobody reads), the others (memory
operations, under ``PredicationMemory``) under the guard under which the arm ran
(``@p`` or ``@!p``), as partial definitions whose inactive lanes keep an unused old
value.  Each phi of the join takes, from ``A``, a ``selp`` of its two arm values (a
guarded ``mov`` for predicates, which ``selp`` cannot select) placed at the end of
``A``.  Speculating matters to ptxas: a guarded write to a register nothing wrote
before keeps the register's old contents alive back to the entry.  On CUB's
histogram (sm_90) guarding every arm instruction took two kernels from 40 to 165
and 163 registers; speculated, 42 and 53, with 9 % and 4 % fewer SASS instructions.
Division, remainder, square root and exact reciprocals are never speculated: arms
holding them stay branches (under ``PredicationMemory`` they are guarded instead).

Legality: an arm may not hold a terminator other than its branch to the join,
instructions that are already guarded, carry-chain instructions, calls, barriers or
warp-convergent instructions (``shfl``/``vote``/``bar``: lanes predicated off would
leave the collective).  Under a divergent branch the guarded form computes, lane by
lane, what the branch did (each lane executes exactly the arm it took and every
merged value is selected per lane by the branch condition), so the divergence
verdict (spec 01) only decides profitability: a divergent branch costs a
reconvergence region, a uniform one does not, so a region under a uniform branch is
converted only when it is smaller (``PredicationUniformMaxInsts``) than one under a
divergent branch (``PredicationMaxInsts``).  ``DisablePredication`` turns the pass
off; ``PredicationBudget`` bounds the conversions per function.

Arms with loads, stores or atomics are left as branches unless
``PredicationMemory`` is set: on nvcc's ``if (i < n) x[i] = x[i] * a + 1`` ptxas
keeps the branch as ``@p EXIT`` and needs 8 registers, while the guarded form
needs 10 (sm_80, ptxas 13.0.88 -O3).
"""

from __future__ import annotations

from ptxopt.analysis.divergence import Divergence
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Block, Func, Inst, Phi, Value
from ptxopt.ir.edit import insert_at_end, make_inst
from ptxopt.knobs import Knob
from ptxopt.ptx.ast import Reg, Sym
from ptxopt.ptx.types import reg_class
from ptxopt.record import replace
from ptxopt.transforms.base import FunctionPass, register

SPEC = "01-varying-propagation.txt"


def _arm_ok(b: Block, join: Block, head: Block, memory: bool = False) -> list[Inst] | None:
    """The instructions of arm ``b`` to predicate, or None if ``b`` cannot be one."""
    if len(b.preds) != 1 or b.preds[0] is not head or b.phis or b.succs != [join]:
        return None
    if any(not lab.startswith("$L__BB") for lab in b.labels):
        return None  # a label other code or debug sections may refer to
    body = list(b.insts)
    t = b.terminator
    if t is not None:
        if t.opcode != "bra" or t.pred is not None:
            return None
        body = body[:-1]
    for inst in body:
        info = inst.info
        if info is None or inst.raw is not None or inst.pred is not None:
            return None
        if info.terminator or info.barrier or info.convergent or inst.opcode == "call":
            return None
        if inst.carry_in is not None or inst.carry_out is not None or inst.olds is not None:
            return None
        if not memory and info.mem is not None:
            return None  # guarded loads and stores cost ptxas registers (measured below)
        if any(v.kind == "special" and v.var.startswith("%clock") for v in inst.operand_values()):
            return None
        if inst.opcode in _EXPENSIVE and not memory:
            return None  # guarded, its destination would be a partial definition
    return body


# Pure, but long SASS sequences (division, square root, exact reciprocal): never run
# on the lanes that did not take the arm.
_EXPENSIVE = frozenset({"div", "rem", "sqrt", "rcp", "rsqrt"})


def _speculatable(inst: Inst) -> bool:
    """May ``inst`` run unguarded in lanes that did not take its arm?  A pure
    instruction of an arm writes values that only the join's ``selp`` reads, so those
    lanes compute something nobody uses.  Running it unguarded keeps its destination a
    full definition: a guarded write to a register nothing defined before makes ptxas
    keep the register's old contents alive back to the entry (the module docstring has
    the measurement)."""
    info = inst.info
    return (
        info is not None
        and info.pure
        and not info.side_effects
        and info.mem is None
        and inst.opcode not in _EXPENSIVE
    )


def _guard(inst: Inst, p: Value, neg: bool, func: Func) -> None:
    inst.pred = p
    inst.pred_neg = neg
    inst.ast = replace(inst.ast, pred=Reg(p.var), pred_neg=neg)
    if inst.defs:
        inst.olds = [func.undef(d.var) for d in inst.defs]


class _Converter:
    def __init__(self, p: Predication, func: Func, am: AnalysisManager) -> None:
        self.p = p
        self.func = func
        div = am.get(Divergence, func)
        # verdicts taken before any change (block indices move as arms are removed)
        self.divergent = {id(b): div.branch_divergent(b.index) for b in func.blocks}
        self.max_div = int(p.knob("PredicationMaxInsts"))  # type: ignore[call-overload]
        self.max_uni = int(p.knob("PredicationUniformMaxInsts"))  # type: ignore[call-overload]
        self.memory = bool(p.knob("PredicationMemory"))

    def try_block(self, a: Block) -> bool:
        t = a.terminator
        if t is None or t.opcode != "bra" or t.pred is None or len(a.succs) != 2:
            return False
        f = a.fallthrough
        tgt = t.ast.operands[-1]
        if f is None or not isinstance(tgt, Sym):
            return False
        x = next((s for s in a.succs if tgt.name in s.labels), None)
        if x is None or x is f:
            return False
        p, neg = t.pred, t.pred_neg
        if a in (f, x):
            return False
        limit = self.max_div if self.divergent.get(id(a), True) else self.max_uni
        # arms: (block, guard negation under which it runs)
        arms: list[tuple[Block, bool, list[Inst]]]
        join: Block
        mem = self.memory
        fb = _arm_ok(f, x, a, mem) if f.succs == [x] else None
        xb = _arm_ok(x, f, a, mem) if x.succs == [f] else None
        if fb is not None:
            arms, join = [(f, not neg, fb)], x
        elif xb is not None:
            arms, join = [(x, neg, xb)], f
        else:
            if len(f.succs) != 1 or f.succs != x.succs:
                return False
            join = f.succs[0]
            fb, xb = _arm_ok(f, join, a, mem), _arm_ok(x, join, a, mem)
            if fb is None or xb is None or join in (a, f, x):
                return False
            arms = [(f, not neg, fb), (x, neg, xb)]
        if sum(len(body) for _, _, body in arms) > limit:
            self.p.stats["regions over budget"] += 1
            return False
        region = {id(b) for b, _, _ in arms}
        # the join must be reachable from A by falling through or by a label
        blocks = self.func.blocks
        rest = [b for b in blocks if id(b) not in region]
        nxt = rest[rest.index(a) + 1] if rest.index(a) + 1 < len(rest) else None
        if nxt is not join and not join.labels:
            return False
        for phi in join.phis:
            if phi.result.type != ".pred":
                try:
                    reg_class(phi.result.type)
                except ValueError:
                    return False
        self.convert(a, t, p, arms, join, nxt is join)
        return True

    def convert(
        self,
        a: Block,
        t: Inst,
        p: Value,
        arms: list[tuple[Block, bool, list[Inst]]],
        join: Block,
        falls: bool,
    ) -> None:
        func = self.func
        a.insts.pop()  # the conditional branch
        t.block = None
        for _b, guard_neg, body in arms:
            for inst in body:
                if not _speculatable(inst):
                    _guard(inst, p, guard_neg, func)
                insert_at_end(a, inst)
        # the value each phi of the join takes on each way in
        arm_of = {id(b): gneg for b, gneg, _ in arms}
        new_preds: list[Block] = []
        keep_idx: list[int] = []
        merged_at: int | None = None
        for i, pb in enumerate(join.preds):
            if pb is a or id(pb) in arm_of:
                if merged_at is None:
                    merged_at = len(new_preds)
                    new_preds.append(a)
                    keep_idx.append(-1)
                continue
            new_preds.append(pb)
            keep_idx.append(i)
        for phi in join.phis:
            merged = self.merge(a, phi, arm_of, p)
            phi.incoming = [merged if k < 0 else phi.incoming[k] for k in keep_idx]
        join.preds = new_preds
        a.succs = [join]
        a.fallthrough = join if falls else None
        if not falls:
            label = join.labels[0]
            insert_at_end(a, make_inst(func, "bra", (".uni",), [], [Sym(label)]))
        region = {id(b) for b, _, _ in arms}
        func.blocks = [b for b in func.blocks if id(b) not in region]
        func.renumber()
        # a join left with one predecessor needs no phis
        if len(join.preds) == 1:
            for phi in join.phis:
                self.forward(phi.result, phi.incoming[0])
            join.phis = []
        self.p.stats["branches predicated"] += 1
        self.p.stats["instructions predicated"] += sum(len(body) for _, _, body in arms)

    def forward(self, old: Value, new: Value) -> None:
        from ptxopt.ir.edit import replace_uses

        replace_uses(self.func, old, new)

    def merge(self, a: Block, phi: Phi, arm_of: dict[int, bool], p: Value) -> Value:
        """A value equal, lane by lane, to what ``phi`` received from the region."""
        join = phi.block
        vals: dict[str, Value] = {}
        for i, pb in enumerate(join.preds):
            if pb is a:
                vals["head"] = phi.incoming[i]
            elif id(pb) in arm_of:
                vals["neg" if arm_of[id(pb)] else "pos"] = phi.incoming[i]
        # the value in lanes where p is true / false
        on_true = vals.get("pos", vals.get("head"))
        on_false = vals.get("neg", vals.get("head"))
        assert on_true is not None and on_false is not None
        if on_true is on_false:
            return on_true
        r = phi.result
        var = r.var
        if r.type == ".pred":
            mv = make_inst(self.func, "mov", (".pred",), [var], [on_true], pred=p, olds=[on_false])
            insert_at_end(a, mv)
            return mv.defs[0]
        cls = reg_class(r.type)
        ty = r.type if r.type[1] in "fsub" and r.type not in (".b8", ".u8", ".s8") else f".{cls}"
        if ty in (".f16", ".bf16", ".f16x2", ".bf16x2", ".b128"):
            ty = f".{cls}"
        sel = make_inst(self.func, "selp", (ty,), [var], [on_true, on_false, p])
        insert_at_end(a, sel)
        self.p.stats["selp inserted"] += 1
        return sel.defs[0]


@register
class Predication(FunctionPass):
    name = "predication"
    phase = 63
    description = "if-convert small triangles and diamonds into guarded code and selp"
    knobs = (
        Knob("DisablePredication", "bool", False, "turn if-conversion off", spec=SPEC),
        Knob(
            "PredicationMaxInsts",
            "int",
            12,
            "largest region (instructions) converted under a divergent branch",
            spec=SPEC,
            lo=0,
        ),
        Knob(
            "PredicationUniformMaxInsts",
            "int",
            4,
            "largest region (instructions) converted under a uniform branch",
            spec=SPEC,
            lo=0,
        ),
        Knob("PredicationBudget", "int", 10_000, "most conversions per function", spec=SPEC, lo=0),
        Knob(
            "PredicationMemory",
            "bool",
            False,
            "also convert arms holding loads, stores or atomics (costs ptxas registers)",
            spec=SPEC,
        ),
    )

    def run(self, func: Func, am: AnalysisManager) -> bool:
        if self.knob("DisablePredication"):
            return False
        budget = int(self.knob("PredicationBudget"))  # type: ignore[call-overload]
        done = 0
        progress = True
        # rounds: a converted region may make its enclosing branch convertible
        while progress and done < budget:
            progress = False
            conv = _Converter(self, func, am)
            for b in list(reversed(func.blocks)):
                if b not in func.blocks:
                    continue
                if done >= budget:
                    self.stats["PredicationBudget reached"] += 1
                    break
                if conv.try_block(b):
                    done += 1
                    progress = True
            if progress:
                am.invalidate(func, None)
        return done > 0
