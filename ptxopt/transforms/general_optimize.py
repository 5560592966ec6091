"""general-optimize: ptxas's GeneralOptimize bundle (phases 13, 29, 37, 46, 58, 65).

One pass, six placements.  Each run repeats four sub-passes until nothing changes
(or ``GeneralOptimizeIterations`` rounds ran):

``copy-prop`` (OriCopyProp, spec 03)
    Forward copy propagation over the blocks in reverse postorder, so that every
    definition is seen before its uses and chains collapse in one sweep.  A use of
    ``d`` where ``mov d, s`` reads ``s`` instead, when the register types allow it
    (the same type; ``s`` a ``.bN`` of ``d``'s size; two integer types of one size).
    A *predicated* copy ``@p mov d, s`` is propagated only into instructions under
    the same guard; with ``LateCopyPropComplPred`` an instruction under the opposite
    guard reads the value ``d`` had before (the lanes where the copy did not run).
    ``selp`` with a provably constant condition is a copy of one arm.  Constants
    (``mov d, 5``) go into operand slots that take an immediate (the operand type of
    each slot decides the spelling).  With ``CopyPropAddr`` address bases take
    copies and absorb ``add x, c`` into the offset; with ``CopyPropConstantBank``
    the address of a module variable (``mov.u64 %rd, gvar``) is written into the
    addresses of the loads, stores and atomics that read it (in SASS these are
    constant-bank operands; barrier and bulk-copy addresses keep their register).  With
    ``CopyPropUseReachingDefs`` a phi whose operands all resolve to one value is
    that value.  Copies of special registers (``%tid.x``, the hardware's fixed
    registers) go only into ``mov``/``cvt`` and only with ``CopyPropPreAllocReg``.
    ``CopyPropBudget`` bounds the instructions one sweep rewrites,
    ``CopyPropGlobalBudget`` the uses rewritten in another block than the copy
    (unless ``CopyPropForceGlobal``).
``fold``
    An unguarded instruction whose sources are all constants is evaluated with the
    interpreter's semantics (:mod:`ptxopt.ir.fold`) and becomes ``mov d, imm``.  A
    guard that is a known constant is dropped (true) or the instruction removed
    (false; its destinations keep their old values).
``simplify``
    The algebraic rules of :mod:`ptxopt.ir.simplify`.
``dce``
    Mark-and-sweep dead code elimination of side-effect-free instructions and phis.

``GeneralOptimizeSubPasses`` selects sub-passes (``--named-phases OriCopyProp`` runs
copy propagation alone).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

from ptxopt.analysis.manager import AnalysisManager
from ptxopt.analysis.rpo import reverse_postorder
from ptxopt.ir.core import Block, Func, Inst, Phi, Value
from ptxopt.ir.edit import insert_before, make_inst, replace_uses
from ptxopt.ir.immediates import imm_bits, imm_for
from ptxopt.ir.int_fold import FOLDABLE, evaluate_int
from ptxopt.ir.operands import rebuild, regs_of
from ptxopt.ir.simplify import Rewrite, simplify
from ptxopt.knobs import Knob
from ptxopt.ptx.ast import Addr, Imm, Instr, Reg, Sym
from ptxopt.ptx.types import bit_width, reg_class
from ptxopt.record import replace
from ptxopt.transforms.base import FunctionPass, register


# Folding runs the interpreter's handlers (numpy) for what ptxopt.ir.int_fold does not
# compute itself: imported on first use, so that `ptxopt opt` folding only plain
# integer forms starts without numpy (tests/test_startup.py).
def evaluate(ins: Instr, types: Any, inputs: Any) -> Any:
    if ins.opcode not in FOLDABLE:
        return None
    from ptxopt.ir.fold import evaluate as _evaluate

    return _evaluate(ins, types, inputs)


# (reading and writing immediates needs no numpy: ptxopt.ir.immediates)


# a function at general-optimize's fixed point: (the function, the changes reported to
# it, the module's variables, what the last round counted)
_FixedPoint = tuple[Func, int, dict[str, str], Counter[str]]

SUBPASSES = ("copy-prop", "fold", "simplify", "dce")
SPEC = "03-copyprop-cse.txt"

# opcodes whose plain register sources may be replaced by an immediate
_IMM_OPS = frozenset(
    {
        "add", "sub", "mul", "mad", "min", "max", "and", "or", "xor", "shl", "shr",
        "div", "rem", "setp", "selp", "mov", "st", "cvt", "abs", "neg", "not",
        "fma", "mul24", "mad24", "bfe", "bfi", "prmt", "popc", "clz", "brev",
    }
)  # fmt: skip
_TENSOR = ("mma", "wmma", "wgmma")
# instructions whose address may name a module variable (``[gvar+8]``).  Barrier and
# bulk-copy addresses (mbarrier.*, cp.async.bulk*) keep their register: on the Hopper
# FP8 GEMM (triton/fp8_matmul_tma, sm_90a) two `mbarrier.arrive.expect_tx
# [global_smem+131072]` cost ptxas -O3 43 SASS instructions and 2 registers over
# `[%r258+131072]` (709 -> 752).
_SYMBOL_ADDRESS_OPS = frozenset({"ld", "ldu", "st", "atom", "red", "prefetch"})


def _width(t: str) -> int:
    try:
        return 1 if t == ".pred" else bit_width(t)
    except (KeyError, ValueError):
        return 0


def compatible(dtype: str, stype: str) -> bool:
    """May a register of type ``stype`` stand wherever one of ``dtype`` was read?"""
    if dtype == stype:
        return True
    w = _width(dtype)
    if w == 0 or w != _width(stype) or ".pred" in (dtype, stype):
        return False
    if stype[1] == "b":
        return True
    return dtype[1] in "us" and stype[1] in "us"


def _same_class(a: str, b: str) -> bool:
    try:
        return reg_class(a) == reg_class(b)
    except ValueError:
        return False


def _read_as(bits: int, rtype: str, optype: str) -> int:
    """The bits an operand of ``optype`` reads from a register of ``rtype``."""
    rw, ow = _width(rtype), _width(optype)
    if ow <= rw:
        return bits & ((1 << ow) - 1)
    if optype[1] == "s" and bits >> (rw - 1) & 1:
        return (bits | (~0 << rw)) & ((1 << ow) - 1)
    return bits


def _slot_layout(inst: Inst) -> list[tuple[int, str]]:
    """For each use slot: (operand index, ``"reg"`` plain register, ``"addr"``
    address base, ``"other"``)."""
    info = inst.info
    out: list[tuple[int, str]] = []
    if info is None:
        return out
    ops = inst.ast.operands
    n = len(ops)
    defs = info.defs
    for k in info.uses:
        if k >= n or k in defs:
            continue
        op = ops[k]
        t = type(op)
        if t is Reg:
            out.append((k, "reg"))
        elif t is Imm:
            continue  # no register
        elif isinstance(op, Addr):
            if type(op.base) is Reg:
                out.append((k, "addr"))
            for e in op.extra:
                out.extend((k, "other") for _ in regs_of(e))
        else:
            out.extend((k, "other") for _ in regs_of(op))
    return out


def _imm_type(inst: Inst, k: int) -> str | None:
    """The type operand ``k`` of ``inst`` is read as, where an immediate may stand."""
    info = inst.info
    if info is None or inst.opcode not in _IMM_OPS or not info.types:
        return None
    op, t = inst.opcode, info.types[-1]
    mods = inst.ast.mods
    if op == "cvt":
        return info.types[1] if len(info.types) == 2 and k == 1 else None
    if op in ("shl", "shr"):
        return ".u32" if k == 2 else t
    if op == "selp":
        return t if k in (1, 2) else None
    if op == "setp":
        return t if k in (1, 2) else None
    if op in ("mul", "mad") and (".wide" in mods or ".hi" in mods):
        return t if k in (1, 2) else None
    if op == "bfe":
        return t if k == 1 else ".u32"
    if op == "bfi":
        return t if k in (1, 2) else ".u32"
    if op == "prmt":
        return ".b32"
    if op in ("popc", "clz", "brev", "not"):
        return t if k == 1 else None
    if op == "st":
        # integer stores only: a float store reads its source as raw bits
        vec = ".v2" in mods or ".v4" in mods or ".v8" in mods
        return t if k == 1 and not vec and t[1] in "usb" else None
    return t


def _imm_in_range(inst: Inst, k: int, imm: Imm) -> bool:
    """ptxas takes an immediate position or length of ``bfe``/``bfi`` only in 0..255
    (the instruction reads the low eight bits of a register there)."""
    last = 3 if inst.opcode == "bfi" else 2
    if inst.opcode in ("bfe", "bfi") and k >= last:
        return isinstance(imm.value, int) and 0 <= imm.value <= 255
    return True


def _still_defined(v: Value) -> bool:
    d = v.inst
    if isinstance(d, Inst):
        return d.block is not None
    return d is not None


def _takes_special(inst: Inst) -> bool:
    """ptxas reads special registers only in ``mov`` and integer-to-integer ``cvt``."""
    if inst.ast.opcode == "mov":
        return True
    info = inst.info
    if inst.ast.opcode != "cvt" or info is None or len(info.types) != 2:
        return False
    return len(inst.ast.mods) == 2 and all(t[1] in "usb" for t in info.types)


def _const_operand(x: Value | Imm, t: str, consts: dict[int, int]) -> int | None:
    if isinstance(x, Imm):
        return imm_bits(x, t)
    c = consts.get(x.id)
    if c is None:
        return None
    return _read_as(c, x.type, t) if t != ".pred" else c


class _Sweep:
    """One round of the sub-passes over a function."""

    def __init__(
        self, p: GeneralOptimize, func: Func, subs: set[str], gvars: dict[str, str]
    ) -> None:
        self.p = p
        self.func = func
        self.subs = subs
        self.fwd: dict[int, Value] = {}  # unconditional copies: d -> s
        self.special: dict[int, Value] = {}  # copies of special registers
        self.pcopy: dict[int, tuple[Value, bool, Value | None, Value | None]] = {}
        self.consts: dict[int, int] = {}
        self.changed = False
        self.budget = int(p.knob("CopyPropBudget"))  # type: ignore[call-overload]
        self.global_left = int(p.knob("CopyPropGlobalBudget"))  # type: ignore[call-overload]
        self.force_global = bool(p.knob("CopyPropForceGlobal"))
        self.stats = p.stats
        self.gvars = gvars
        self.use_count: dict[int, int] | None = None  # readers per value (a hint)
        self._other_readers: set[int] | None = None
        # the knobs the per-instruction code reads (fixed for a run)
        self.addr_ok = bool(p.knob("CopyPropAddr"))
        self.no_rr = bool(p.knob("CopyPropNoWriteNonRR"))
        self.no_mma_cb = bool(p.knob("CopyPropNoMmaCb"))
        self.compl_pred = bool(p.knob("LateCopyPropComplPred"))
        self.nonreg_multidef = bool(p.knob("CopyPropNonRegMultiDef"))
        self.prealloc = bool(p.knob("CopyPropPreAllocReg"))
        self.const_bank = bool(p.knob("CopyPropConstantBank"))
        self.wide_mul = bool(p.knob("GeneralOptimizeWideMul"))

    # -- resolution ---------------------------------------------------------
    def find(self, v: Value) -> Value:
        seen = 0
        while True:
            nxt = self.fwd.get(v.id)
            if nxt is None or seen > 1000:
                return v
            v = nxt
            seen += 1

    def resolve(self, v: Value, user: Inst | None) -> Value:
        """What a use of ``v`` by ``user`` may read instead (copies, and predicated
        copies under a matching or complementary guard)."""
        while True:
            w = self.find(v)
            pc = self.pcopy.get(w.id)
            if pc is None or user is None or user.pred is None:
                return w
            guard, neg, src, old = pc
            g = self.find(user.pred)
            if g is self.find(guard) and user.pred_neg == neg and src is not None:
                nv = src
            elif (
                g is self.find(guard)
                and user.pred_neg != neg
                and old is not None
                and self.compl_pred
            ):
                nv = old
            else:
                return w
            if nv.kind in ("special", "undef") or not compatible(w.type, nv.type):
                return w
            v = nv

    # -- copy propagation into one instruction -------------------------------
    def rewrite_uses(self, inst: Inst) -> None:
        if inst.info is None:
            return
        uses = inst.uses
        if inst.pred is None and inst.olds is None:
            for u in uses:
                if type(u) is Value:
                    break
            else:
                return  # nothing this could rewrite
        layout = _slot_layout(inst)
        if len(layout) != len(uses):
            return
        addr_ok = self.addr_ok
        no_rr = self.no_rr
        opcode = inst.ast.opcode
        tensor = opcode in _TENSOR or opcode.startswith(_TENSOR)
        if tensor and self.no_mma_cb:
            return
        fwd = self.fwd
        pcopy = self.pcopy
        special = self.special
        consts = self.consts
        guarded = inst.pred is not None
        drop: list[int] = []
        for j, u in enumerate(uses):
            if type(u) is not Value:
                continue
            k, kind = layout[j]
            if kind == "addr" and not addr_ok:
                continue
            if u.kind == "special":
                continue
            uid = u.id
            if uid in fwd or (guarded and uid in pcopy):
                resolved = self.resolve(u, inst)
            else:
                resolved = u  # what resolve() gives without a copy to follow
            new: Value | Imm = resolved
            sp = special.get(resolved.id) if special else None
            if (
                sp is not None
                and kind == "reg"
                and _takes_special(inst)
                and resolved.id not in self.other_readers()
            ):
                new = sp
            if isinstance(new, Value) and new.id in consts and not no_rr and not tensor:
                # keep one register source: an all-immediate instruction is folded
                # instead (and the interpreter runs register forms only)
                regs_left = sum(isinstance(x, Value) for x in uses)
                if kind == "reg" and (regs_left > 1 or opcode == "st"):
                    t = _imm_type(inst, k)
                    if t is not None:
                        imm = imm_for(_read_as(consts[new.id], new.type, t), t)
                        if imm is not None and _imm_in_range(inst, k, imm):
                            new = imm
            if new is u:
                if kind == "addr":
                    self.fold_address(inst, j, k, drop)
                continue
            if not self.charge(u, inst):
                continue
            uses[j] = new
            self.changed = True
            self.stats[
                "copies propagated" if isinstance(new, Value) else "constants propagated"
            ] += 1
            if kind == "addr" and isinstance(new, Value):
                self.fold_address(inst, j, k, drop)
        if drop:
            for j in sorted(drop, reverse=True):
                del inst.uses[j]
                ndefs = len(inst.slot_names) - len(layout)
                del inst.slot_names[ndefs + j]
        if inst.pred is not None:
            g = self.find(inst.pred)
            gi = g.inst if g.kind == "inst" else None
            # (same block only: a longer-lived predicate costs a register, and the
            # current out-of-SSA mis-handles some of them, see docs/redundancy.md)
            if (
                isinstance(gi, Inst)
                and gi.opcode == "not"
                and gi.pred is None
                and gi.uses
                and gi.block is inst.block
            ):
                src = gi.uses[0]
                if isinstance(src, Value) and src.type == ".pred":
                    g = self.find(src)
                    inst.pred_neg = not inst.pred_neg
                    inst.ast = replace(inst.ast, pred_neg=inst.pred_neg)
            if g is not inst.pred:
                inst.pred = g
                inst.ast = replace(inst.ast, pred=Reg(g.var))
                self.changed = True
        # the values a destination keeps (a guard's false lanes, a tensor-core
        # accumulator that is read and written) live in the destination's register;
        # for the wide wgmma accumulators a copy propagated there is a copy back in
        # the lowering (cutlass/hopper_fp8_gemm, sm_90a: 3,419 -> 3,932 SASS)
        if inst.olds is not None and not tensor:
            for k2, o in enumerate(inst.olds):
                if o is not None:
                    f = self.find(o)
                    if f is not o and _same_class(f.type, o.type):
                        inst.olds[k2] = f
                        self.changed = True

    def charge(self, u: Value, inst: Inst) -> bool:
        if u.block is None or u.block is inst.block or self.force_global:
            return True
        if self.global_left <= 0:
            self.stats["CopyPropGlobalBudget reached"] += 1
            return False
        self.global_left -= 1
        return True

    def fold_address(self, inst: Inst, j: int, k: int, drop: list[int]) -> None:
        """``[v+off]`` where ``v = add x, c`` -> ``[x+off+c]``; where ``v = mov gvar``
        and the instruction accesses gvar's state space -> ``[gvar+off]``."""
        op = inst.ast.operands[k]
        assert isinstance(op, Addr)
        v = inst.uses[j]
        for _ in range(64):
            if not isinstance(v, Value) or v.kind != "inst" or not isinstance(v.inst, Inst):
                return
            d = v.inst
            if d.pred is not None or d.info is None or d.block is None:
                return
            if d.opcode == "add" and d.ast.mods in ((".s64",), (".u64",), (".s32",), (".u32",)):
                ops = d.ast.operands
                if len(ops) != 3 or len(d.uses) != 1 or not isinstance(d.uses[0], Value):
                    return
                if isinstance(ops[2], Imm) and ops[2].kind == "int":
                    c = int(ops[2].value)
                elif isinstance(ops[1], Imm) and ops[1].kind == "int":
                    c = int(ops[1].value)
                else:
                    return
                x = d.uses[0]
                if (
                    bit_width(d.ast.mods[0]) != _width(x.type)
                    or x.kind != "inst"
                    and x.kind
                    not in (
                        "param",
                        "phi",
                    )
                ):
                    return
                off = op.offset + c
                if not -(2**31) <= off < 2**31:
                    return
                op = Addr(op.base, off, op.extra, op.plus_zero)
                self._set_operand(inst, k, op)
                inst.uses[j] = x
                self.stats["address offsets folded"] += 1
                self.changed = True
                v = x
                continue
            if (
                d.opcode == "mov"
                and self.const_bank
                and isinstance(d.ast.operands[1], Sym)
                and not op.extra
            ):
                name = d.ast.operands[1].name
                space = self.gvars.get(name)
                info = inst.info
                if (
                    space is None
                    or info is None
                    or info.space != space
                    or info.name not in _SYMBOL_ADDRESS_OPS
                ):
                    return
                self._set_operand(inst, k, Addr(Sym(name), op.offset, (), op.plus_zero))
                drop.append(j)
                self.stats["variable addresses propagated"] += 1
                self.changed = True
            return

    @staticmethod
    def _set_operand(inst: Inst, k: int, op: Addr) -> None:
        ops = list(inst.ast.operands)
        ops[k] = op
        inst.ast = replace(inst.ast, operands=ops)

    # -- classification of a definition --------------------------------------
    def classify(self, inst: Inst) -> None:
        info = inst.info
        if info is None or inst.carry_out is not None or len(inst.defs) != 1:
            return
        d = inst.defs[0]
        ops = inst.ast.operands
        if inst.ast.opcode == "mov" and len(ops) == 2 and type(ops[0]) is Reg and info.types:
            t = info.types[-1]
            src = ops[1]
            s: Value | Imm | None = None
            if type(src) is Reg and inst.uses and isinstance(inst.uses[0], Value):
                s = inst.uses[0]
            elif isinstance(src, Imm):
                s = src
            elif inst.uses and isinstance(inst.uses[0], Imm):
                s = inst.uses[0]
            if s is None:
                return
            if inst.pred is None:
                self.record_copy(d, s, t)
            elif self.nonreg_multidef and inst.olds:
                old = inst.olds[0]
                sv = s if isinstance(s, Value) else None
                if sv is not None and old is not None and self.find(old) is self.find(sv):
                    self.record_copy(d, sv, t)
                else:
                    self.pcopy[d.id] = (inst.pred, inst.pred_neg, sv, old)
            return
        if inst.ast.opcode == "selp" and inst.pred is None and len(ops) == 4:
            layout = _slot_layout(inst)
            if len(layout) != len(inst.uses):
                return
            by_op = {k: inst.uses[j] for j, (k, _) in enumerate(layout)}
            c = by_op.get(3, ops[3] if isinstance(ops[3], Imm) else None)
            if c is None:
                return
            cv = _const_operand(c, ".pred", self.consts)  # type: ignore[arg-type]
            if cv is None:
                return
            arm = by_op.get(1 if cv else 2, ops[1 if cv else 2])
            if isinstance(arm, Value | Imm):
                self.record_copy(d, arm, info.types[-1])
                self.stats["selp with constant condition"] += 1

    def record_copy(self, d: Value, s: Value | Imm, t: str) -> None:
        if isinstance(s, Imm):
            bits = imm_bits(s, t)
            if bits is not None and _width(t) == _width(d.type):
                self.consts[d.id] = bits
            return
        if s.kind == "special":
            if self.prealloc:
                self.special[d.id] = s
            return
        if s.kind == "undef":
            return
        s = self.find(s)
        if s.id in self.consts and _width(s.type) == _width(d.type):
            self.consts[d.id] = self.consts[s.id]
        if compatible(d.type, s.type) and s is not d:
            self.fwd[d.id] = s

    # -- folding and simplification -----------------------------------------
    def const_of(self, x: Value | Imm, t: str) -> int | None:
        return _const_operand(x, t, self.consts)

    def fold_guard(self, inst: Inst) -> bool:
        """Handle a constant guard; True if ``inst`` was removed."""
        if inst.pred is None or inst.is_terminator or inst.carry_out is not None:
            return False
        c = self.consts.get(self.find(inst.pred).id)
        if c is None:
            return False
        if bool(c) != inst.pred_neg:  # always executes
            inst.pred = None
            inst.pred_neg = False
            inst.olds = None
            inst.ast = replace(inst.ast, pred=None, pred_neg=False)
            self.stats["guards removed"] += 1
        else:  # never executes: destinations keep their old values
            if inst.olds is None and inst.defs:
                return False
            for k in range(len(inst.defs)):
                old = inst.olds[k] if inst.olds else None
                if old is None:
                    return False
            for k, dv in enumerate(inst.defs):
                old = inst.olds[k]  # type: ignore[index]
                assert old is not None
                self.forward(dv, self.find(old))
            self.kill(inst)
            self.stats["never-executed instructions removed"] += 1
        self.changed = True
        return True if inst.block is None else False

    def other_readers(self) -> set[int]:
        """Values read by something that cannot read a special register itself (not a
        ``mov``/integer ``cvt``), directly or through plain copies.  A copy of
        ``%ntid.x`` is propagated only where that makes the copy dead: ptxas does not
        common two reads of one special register (cuda/elementwise saxpy_gs, sm_90:
        ``cvt.u64.u32 %rd1, %ntid.x`` beside a live ``mov %r1, %ntid.x`` made 37 SASS
        instructions 38).  Computed once per sweep (a hint: it only grows stale
        towards propagating less)."""
        if self._other_readers is None:
            marked: set[int] = set()
            mark = marked.add
            copies: dict[int, list[int]] = {}  # d -> the values d copies
            for b in self.func.blocks:
                for phi in b.phis:
                    for pv in phi.incoming:
                        mark(pv.id)
                for ins in b.insts:
                    if ins.pred is not None or not _takes_special(ins):
                        for ov in ins.operand_values():
                            mark(ov.id)
                    elif ins.ast.opcode == "mov" and ins.defs:
                        xs = ins.operand_values()  # (used up by the first definition)
                        for d in ins.defs:
                            copies.setdefault(d.id, []).extend(x.id for x in xs)
            work = [v for v in marked if v in copies]
            while work:
                for x in copies.pop(work.pop(), ()):
                    if x not in marked:
                        marked.add(x)
                        if x in copies:
                            work.append(x)
            self._other_readers = marked
        return self._other_readers

    def single_use(self, v: Value) -> bool:
        if not self.wide_mul:
            return False
        if self.use_count is None:
            n: dict[int, int] = {}
            for b in self.func.blocks:
                for phi in b.phis:
                    for x in phi.incoming:
                        n[x.id] = n.get(x.id, 0) + 1
                for ins in b.insts:
                    for x in ins.operand_values():
                        n[x.id] = n.get(x.id, 0) + 1
            self.use_count = n
        return self.use_count.get(v.id, 0) <= 1

    def forward(self, d: Value, v: Value) -> None:
        """``d`` equals ``v``: copy propagation rewrites the uses as it reaches them;
        without it, they are rewritten here."""
        self.fwd[d.id] = v
        if "copy-prop" not in self.subs:
            replace_uses(self.func, d, v)

    def kill(self, inst: Inst) -> None:
        b = inst.block
        if b is not None:
            b.insts.remove(inst)
        inst.block = None

    def replace_inst(self, inst: Inst, new: Inst) -> None:
        """Put ``new`` in ``inst``'s place, defining ``inst``'s value."""
        b = inst.block
        assert b is not None
        d = inst.defs[0]
        new.defs = [d]
        d.inst = new
        new.loc = inst.loc
        idx = b.insts.index(inst)
        b.insts.pop(idx)
        inst.block = None
        insert_before(b, idx, new)

    def mov_const(self, inst: Inst, d: Value, bits: int) -> bool:
        t = d.type
        if t == ".pred":
            imm = Imm(int(bits), str(int(bits)))
            mods: tuple[str, ...] = (".pred",)
        else:
            w = _width(t)
            if w < 16:
                return False
            it = t if t[1] == "f" and w in (32, 64) else f".b{w}"
            imm = imm_for(bits, it)  # type: ignore[assignment]
            if imm is None:
                return False
            mods = (it,)
        self.consts[d.id] = bits
        ops = inst.ast.operands
        if inst.opcode == "mov" and len(ops) == 2 and isinstance(ops[1], Imm):
            return False
        self.replace_inst(inst, make_inst(self.func, "mov", mods, [d.var], [imm]))
        self.changed = True
        return True

    def fold(self, inst: Inst) -> None:
        info = inst.info
        if info is None or inst.pred is not None or len(inst.defs) != 1 or inst.carry_in:
            return
        if inst.carry_out is not None or info.mem is not None or info.side_effects:
            return
        d = inst.defs[0]
        # a register copy stays a copy (copy propagation serves its uses): turning
        # wgmma accumulator copies of a zero register into moves of 0 cost ptxas 8 %
        # more SASS on triton/matmul_fp16.sm90a
        if "fold" in self.subs and inst.ast.opcode != "mov":
            bits = self.evaluate(inst)
            if bits is not None:
                if self.mov_const(inst, d, bits):
                    self.stats["instructions folded"] += 1
                return
        if "simplify" not in self.subs:
            return
        rw = simplify(inst, self.const_of, self.single_use)
        if rw is not None:
            self.apply(inst, d, rw)

    def evaluate(self, inst: Inst) -> int | None:
        consts = self.consts
        for u in inst.uses:
            if not isinstance(u, Imm) and u.id not in consts:
                return None  # (the loop below would give up there)
        ast = inst.ast
        names: list[str | Imm] = []
        types: dict[str, str] = {}
        inputs: dict[str, int] = {}
        for k, dv in enumerate(inst.defs):
            nm = f"%fold_d{k}"
            names.append(nm)
            types[nm] = dv.type
        for k, u in enumerate(inst.uses):
            if isinstance(u, Imm):
                names.append(u)
                continue
            if u.id not in self.consts:
                return None
            nm = f"%fold_u{k}"
            names.append(nm)
            types[nm] = u.type
            inputs[nm] = self.consts[u.id]
        for op in ast.operands:
            if not isinstance(op, Reg | Imm):
                return None
        info = inst.info
        assert info is not None
        it = iter(names)
        ops = list(ast.operands)
        defs = set(info.defs)
        try:
            for k in info.defs:
                if k < len(ops):
                    ops[k] = rebuild(ops[k], it)
            for k in info.uses:
                if k < len(ops) and k not in defs:
                    ops[k] = rebuild(ops[k], it)
        except (StopIteration, ValueError):
            return None
        folded = Instr(ast.opcode, ast.mods, ops)
        quick = evaluate_int(folded, types, inputs)
        if isinstance(quick, int):
            return quick
        res = evaluate(folded, types, inputs)
        if not res or "%fold_d0" not in res:
            return None
        return int(res["%fold_d0"][0])

    def apply(self, inst: Inst, d: Value, rw: Rewrite) -> None:
        if rw.bits is not None:
            if self.mov_const(inst, d, rw.bits):
                self.stats["instructions simplified"] += 1
            return
        if rw.value is not None and not rw.negate:
            v = self.find(rw.value)
            if compatible(d.type, v.type) and v.kind not in ("special", "undef"):
                self.forward(d, v)
                self.changed = True
                self.stats["instructions simplified"] += 1
            return
        if rw.value is not None and rw.negate:
            if inst.opcode == "not":
                return
            new = make_inst(self.func, "not", (".pred",), [d.var], [rw.value])
        elif rw.opcode is not None:
            if any(isinstance(x, Value) and x.kind in ("special", "undef") for x in rw.srcs):
                return
            new = make_inst(self.func, rw.opcode, rw.mods, [d.var], list(rw.srcs))
        else:
            return
        self.replace_inst(inst, new)
        self.changed = True
        self.stats["instructions simplified"] += 1

    # -- the sweep -------------------------------------------------------------
    def run(self, order: list[int] | None = None) -> bool:
        """One round; ``order``: the blocks in reverse postorder, if known."""
        func = self.func
        if order is None:
            order = reverse_postorder(func.cfg_succs(), 0)
        do_copy = "copy-prop" in self.subs
        do_fold = "fold" in self.subs or "simplify" in self.subs
        reach = bool(self.p.knob("CopyPropUseReachingDefs"))
        processed = 0
        for bi in order:
            b = func.blocks[bi]
            if do_copy:
                self.phis(b, reach)
            for inst in list(b.insts):
                if inst.block is None:
                    continue
                processed += 1
                if processed > self.budget:
                    self.stats["CopyPropBudget reached"] += 1
                    return self.changed
                if do_copy:
                    self.rewrite_uses(inst)
                if do_fold and self.fold_guard(inst):
                    continue
                if do_fold and inst.block is not None:
                    self.fold(inst)
                cur = inst if inst.block is not None else None
                if cur is None and inst.defs:
                    cur = inst.defs[0].inst if isinstance(inst.defs[0].inst, Inst) else None
                if cur is not None and cur.block is not None:
                    self.classify(cur)
        if do_copy:
            # uses across back edges saw copies found later in the sweep
            for bi in order:
                for phi in func.blocks[bi].phis:
                    self.phi_uses(phi)
        return self.changed

    def phi_uses(self, phi: Phi) -> None:
        var = phi.result.var
        for k, v in enumerate(phi.incoming):
            f = self.find(v)
            # an operand already in the phi's register needs no copy out of SSA;
            # its source in another register would need one on the edge
            if v.var == var and f.var != var and _still_defined(v):
                continue
            if f is not v and _same_class(f.type, phi.result.type):
                phi.incoming[k] = f
                self.changed = True

    def phis(self, b: Block, reach: bool) -> None:
        keep: list[Phi] = []
        for phi in b.phis:
            self.phi_uses(phi)
            if reach:
                srcs = {self.find(v).id: self.find(v) for v in phi.incoming}
                srcs.pop(phi.result.id, None)
                if len(srcs) == 1:
                    (s,) = srcs.values()
                    if s.kind != "undef" and _same_class(s.type, phi.result.type):
                        if compatible(phi.result.type, s.type):
                            self.fwd[phi.result.id] = s
                            self.stats["phis resolved"] += 1
                            self.changed = True
            keep.append(phi)
        b.phis = keep


def dce(func: Func) -> int:
    """Delete side-effect-free instructions and phis whose results nothing live
    reads; return how many were deleted."""
    live_insts: set[int] = set()
    live_phis: set[int] = set()
    work: list[Value] = []
    push = work.append

    def reads(inst: Inst) -> None:  # (Inst.operand_values, onto the worklist)
        if inst.pred is not None:
            push(inst.pred)
        for u in inst.uses:
            if type(u) is Value:
                push(u)
        if inst.olds is not None:
            for o in inst.olds:
                if o is not None:
                    push(o)
        if inst.carry_in is not None:
            push(inst.carry_in)

    for b in func.blocks:
        for inst in b.insts:
            info = inst.info
            if (
                info is None
                or inst.raw is not None
                or info.side_effects
                or info.terminator
                or info.mem in ("write", "rw")
                or not inst.defs
                and inst.carry_out is None
            ):
                live_insts.add(id(inst))
                reads(inst)
    while work:
        d = work.pop().inst
        if d is None:
            continue
        if type(d) is Phi:
            if id(d) not in live_phis:
                live_phis.add(id(d))
                work.extend(d.incoming)
        elif id(d) not in live_insts and d.block is not None:
            live_insts.add(id(d))
            reads(d)  # type: ignore[arg-type]
    removed = 0
    for b in func.blocks:
        insts = b.insts
        if not all(id(i) in live_insts for i in insts):
            b.insts = [i for i in insts if id(i) in live_insts]
            removed += len(insts) - len(b.insts)
        phis = b.phis
        if phis and not all(id(p) in live_phis for p in phis):
            b.phis = [p for p in phis if id(p) in live_phis]
            removed += len(phis) - len(b.phis)
    return removed


@register
class GeneralOptimize(FunctionPass):
    idempotent = True
    name = "general-optimize"
    phase = 13
    description = "copy propagation, constant folding, simplification and DCE to a fixed point"
    knobs = (
        Knob("GeneralOptimizeSubPasses", "str", "copy-prop,fold,simplify,dce",
             "comma list of sub-passes to run: " + ", ".join(SUBPASSES), spec=SPEC),
        Knob("GeneralOptimizeWideMul", "bool", False,
             "turn cvt.s64.s32 + shl/mul.lo.b64 into mul.wide (ptxas -O3 made 8 % more "
             "SASS of it on triton/matmul_fp16.sm90a: off by default)", spec=SPEC),
        Knob("GeneralOptimizeIterations", "int", 8,
             "most rounds of the sub-passes per run (the fixed-point budget)", spec=SPEC, lo=1),
        Knob("CopyPropBudget", "int", 1_000_000,
             "most instructions one copy-propagation sweep rewrites", spec=SPEC, lo=0),
        Knob("CopyPropGlobalBudget", "int", 1_000_000,
             "most uses rewritten in another block than the copy, per sweep", spec=SPEC, lo=0),
        Knob("CopyPropForceGlobal", "bool", False,
             "ignore CopyPropGlobalBudget", spec=SPEC),
        Knob("CopyPropAddr", "bool", True,
             "propagate into address operands and fold add-constant into offsets", spec=SPEC),
        Knob("CopyPropConstantBank", "bool", True,
             "write module-variable addresses into the addresses that read them", spec=SPEC),
        Knob("CopyPropUseReachingDefs", "bool", True,
             "see through phis whose operands all resolve to one value", spec=SPEC),
        Knob("CopyPropPreAllocReg", "bool", True,
             "propagate copies of special (fixed) registers into mov/cvt", spec=SPEC),
        Knob("CopyPropNoWriteNonRR", "bool", False,
             "never turn a register operand into an immediate", spec=SPEC),
        Knob("CopyPropNonRegMultiDef", "bool", True,
             "propagate predicated copies under a matching guard", spec=SPEC),
        Knob("CopyPropNoMmaCb", "bool", False,
             "leave tensor-core (mma/wgmma) operands alone", spec=SPEC),
        Knob("LateCopyPropComplPred", "bool", True,
             "under the opposite guard, read the value a predicated copy kept", spec=SPEC),
    )  # fmt: skip

    def global_spaces(self) -> dict[str, str]:
        out: dict[str, str] = {}
        mod = self.module
        if mod is None:
            return out
        for g in mod.ast.globals:
            space = getattr(g, "space", None)
            name = getattr(g, "name", None)
            if isinstance(space, str) and isinstance(name, str):
                if space in (".global", ".shared", ".const"):
                    out[name] = space
        return out

    def subpasses(self) -> set[str]:
        raw = str(self.knob("GeneralOptimizeSubPasses"))
        subs = {s.strip() for s in raw.split(",") if s.strip()}
        if "all" in subs:
            subs = set(SUBPASSES)
        unknown = subs - set(SUBPASSES)
        if unknown:
            raise ValueError(f"unknown GeneralOptimizeSubPasses entry {sorted(unknown)[0]!r}")
        return subs

    def run(self, func: Func, am: AnalysisManager) -> bool:
        subs = self.subpasses()
        # Inside the pipeline, a run that ended in a round changing nothing left the
        # function at a fixed point: until a pass reports a change to it (or the
        # module's variables change), a run with the same knobs would be that one
        # round again, changing nothing and counting what it counted.
        memo: dict[object, object] | None = am.memo if am.ir_version is not None else None
        key = (GeneralOptimize, id(func), repr(sorted(self.options.items())))
        gvars = self.global_spaces()
        if memo is not None:
            rec = cast("_FixedPoint | None", memo.get(key))
            if rec is not None:
                f0, seen, gv0, counted = rec
                if f0 is func and seen == am.changes.get(id(func), 0) and gv0 == gvars:
                    self.stats.update(counted)
                    return False
        changed = False
        rounds = int(self.knob("GeneralOptimizeIterations"))  # type: ignore[call-overload]
        swept_clean = False  # the code is as the last dce left it (nothing dead in it)
        # (no sub-pass touches a terminator: the CFG and its order stay as they are)
        order = reverse_postorder(func.cfg_succs(), 0)
        for _ in range(rounds):
            before = Counter(self.stats)
            step = False
            if subs - {"dce"}:
                step = _Sweep(self, func, subs, gvars).run(order)
            if "dce" in subs and not (swept_clean and not step):
                swept_clean = True
                n = dce(func)
                if n:
                    self.stats["dead instructions removed"] += n
                    step = True
            if not step:
                if memo is not None:
                    # (a True result counts as one more change to the function)
                    seen = am.changes.get(id(func), 0) + int(changed)
                    memo[key] = (func, seen, gvars, self.stats - before)
                break
            changed = True
        else:
            self.stats["GeneralOptimizeIterations reached"] += 1
        return changed
