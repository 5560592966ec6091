"""promote-local: per-thread stack frames and ``.local`` arrays become registers.

ptxas's ConvertMemoryToRegisterOrUniform (spec 02, sub_910840; gated by the general
optimization knob): a stack variable whose every access is known becomes one register
per slot, and the frame goes away.  At the PTX level the variables are the function's
``.local`` declarations (nvcc ``-O0``'s ``__local_depot``, numba's arrays, explicit
``.local`` arrays).  The steps:

1. **Pointer tracking.**  Starting from the variable's symbol (``mov.u64 %SPL, depot``,
   ``[depot+8]``), follow ``cvta.local`` (a generic pointer into the frame),
   ``add``/``sub`` of constants, copies, and at most one added register (a dynamic byte
   offset).  Any other use of a frame pointer - stored to memory, passed to a call,
   compared, merged by a phi, used by an atomic or by a load of another state space -
   means the address *escapes* and the variable stays in memory.
2. **Slots.**  The constant-offset accesses must tile the variable without partial
   overlap (one size per offset).  A dynamically indexed access is allowed when the
   variable is an array of equal slots with at most ``PromoteLocalDynamicBudget``
   elements: a load becomes a ``setp``/``selp`` chain over the slots, a store updates
   every slot with ``selp``.
3. **SSA construction** (Cytron et al.) for the slot registers: phis on the iterated
   dominance frontier of the blocks that store, renaming in dominator-tree pre-order.
   Slots start as zero, the value the interpreter gives fresh local memory (reading
   it before writing is undefined in PTX, and ptxas deletes the dead initialisation).
4. The pointer arithmetic left without users is deleted, and with it the ``.local``
   declaration: the frame shrinks (to zero bytes when nothing escapes).

A narrower access than its register (``st.u8`` of a 16-bit register, ``ld.s16`` into a
32-bit one) truncates and extends with ``cvt`` exactly as memory would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Func, Inst, Phi, Value
from ptxopt.ir.defuse import DefUse
from ptxopt.ir.edit import fresh_var, insert_before, make_inst, remove, replace_uses
from ptxopt.ir.operands import reg_names
from ptxopt.knobs import Knob
from ptxopt.ptx.ast import Addr, Imm, Instr, Operand, Reg, Sym, VarDecl, Vec
from ptxopt.ptx.types import bit_width, is_float, is_signed
from ptxopt.transforms.base import FunctionPass, register

__all__ = ["PromoteLocal", "run"]


@dataclass(slots=True)
class _Ptr:
    var: str
    off: int
    dyn: Value | None = None


@dataclass(slots=True)
class _Access:
    inst: Inst
    var: str
    off: int
    size: int  # bytes per element
    elems: int  # vector elements
    dyn: Value | None
    is_store: bool
    signed: bool


@dataclass
class _Var:
    name: str
    size: int
    escaped: str = ""
    accesses: list[_Access] = field(default_factory=list)
    chain: list[Inst] = field(default_factory=list)


def _local_vars(func: Func) -> dict[str, _Var]:
    out: dict[str, _Var] = {}
    for st in func.head:
        if isinstance(st, VarDecl) and st.space == ".local" and st.init is None:
            count = 1
            for d in st.dims:
                count *= d or 0
            try:
                size = max(bit_width(st.type) // 8, 1) * count
            except ValueError:
                continue
            if size > 0 and not st.vector:
                out[st.name] = _Var(st.name, size)
    return out


def _const_of(u: Value | Imm | None, consts: dict[int, int]) -> int | None:
    if isinstance(u, Imm) and u.kind == "int":
        return int(u.value)
    if isinstance(u, Value):
        return consts.get(u.id)
    return None


def _operand_value(inst: Inst, k: int) -> Value | Imm | None:
    """The value of plain source operand ``k`` (register slot or literal)."""
    op = inst.ast.operands[k]
    if isinstance(op, Imm):
        return op
    if not isinstance(op, Reg):
        return None
    # register slots before operand k (defs are not in uses)
    info = inst.info
    assert info is not None
    idx = 0
    for i in info.uses:
        if i in info.defs or i >= len(inst.ast.operands):
            continue
        if i == k:
            return inst.uses[idx] if idx < len(inst.uses) else None
        names: list[str] = []
        reg_names(inst.ast.operands[i], names)
        idx += len(names)
    return None


class _Tracker:
    def __init__(self, func: Func, vars_: dict[str, _Var]) -> None:
        self.func = func
        self.vars = vars_
        self.ptr: dict[int, _Ptr] = {}
        self.consts: dict[int, int] = {}

    def escape(self, name: str, why: str) -> None:
        v = self.vars[name]
        if not v.escaped:
            v.escaped = why

    def walk(self, dom: DomTree) -> None:
        for bi in dom.preorder:
            for inst in self.func.blocks[bi].insts:
                self.visit(inst)
        # phis merging frame pointers, and pointers read by unreachable code
        for b in self.func.blocks:
            for phi in b.phis:
                for v in phi.incoming:
                    p = self.ptr.get(v.id)
                    if p is not None:
                        self.escape(p.var, "pointer merged by a phi")

    def visit(self, inst: Inst) -> None:
        info = inst.info
        if info is None:
            return
        ops = inst.ast.operands
        name = info.name
        # constants (for offsets computed with mov)
        if name == "mov" and len(inst.defs) == 1 and len(ops) == 2:
            src = ops[1]
            if isinstance(src, Imm) and src.kind == "int":
                self.consts[inst.defs[0].id] = int(src.value)
                return
            if isinstance(src, Sym) and src.name in self.vars:
                self.ptr[inst.defs[0].id] = _Ptr(src.name, 0)
                return
        ptr_uses = [
            (k, u) for k, u in enumerate(inst.uses) if isinstance(u, Value) and u.id in self.ptr
        ]
        for o in inst.olds or ():
            if o is not None and o.id in self.ptr:
                self.escape(self.ptr[o.id].var, "pointer merged by a guarded write")
        if inst.pred is not None and inst.pred.id in self.ptr:
            self.escape(self.ptr[inst.pred.id].var, "pointer used as a guard")
        if info.mem is not None and info.name in ("ld", "st"):
            self.memory(inst, ptr_uses)
            return
        if not ptr_uses:
            if (
                name == "cvta"
                and len(ops) == 2
                and isinstance(ops[1], Sym)
                and ops[1].name in self.vars
            ):
                if ".local" in inst.ast.mods and ".to" not in inst.ast.mods:
                    self.ptr[inst.defs[0].id] = _Ptr(ops[1].name, 0)
            return
        first = self.ptr[ptr_uses[0][1].id]
        if len(ptr_uses) > 1 or inst.pred is not None or len(inst.defs) != 1:
            self.escape(first.var, f"pointer used by {inst.name}")
            return
        d = inst.defs[0]
        if name == "mov" or (
            name == "cvta" and ".local" in inst.ast.mods and ".to" not in inst.ast.mods
        ):
            self.ptr[d.id] = _Ptr(first.var, first.off, first.dyn)
            self.track(inst, first)
            return
        if name in ("add", "sub") and bit_width(d.type) == 64 and len(ops) == 3:
            k_ptr = ptr_uses[0][0]
            other_op = 2 if _operand_value(inst, 1) is inst.uses[k_ptr] else 1
            if name == "sub" and other_op != 2:
                self.escape(first.var, "pointer subtracted from a value")
                return
            other = _operand_value(inst, other_op)
            c = _const_of(other, self.consts)
            if c is not None:
                off = first.off + (c if name == "add" else -c)
                self.ptr[d.id] = _Ptr(first.var, off, first.dyn)
                self.track(inst, first)
                return
            if name == "add" and first.dyn is None and isinstance(other, Value):
                self.ptr[d.id] = _Ptr(first.var, first.off, other)
                self.track(inst, first)
                return
        self.escape(first.var, f"pointer used by {inst.name}")

    def track(self, inst: Inst, p: _Ptr) -> None:
        self.vars[p.var].chain.append(inst)

    def memory(self, inst: Inst, ptr_uses: list[tuple[int, Value]]) -> None:
        info = inst.info
        assert info is not None
        is_store = info.name == "st"
        ops = inst.ast.operands
        addr = ops[0] if is_store else ops[1]
        if not isinstance(addr, Addr):
            return
        base = addr.base
        p: _Ptr | None = None
        n_addr_regs = 0
        if isinstance(base, Sym) and base.name in self.vars:
            p = _Ptr(base.name, 0)
        elif isinstance(base, Reg):
            n_addr_regs = 1
            u = inst.uses[0] if inst.uses else None
            if isinstance(u, Value) and u.id in self.ptr:
                p = self.ptr[u.id]
        # a frame pointer among the stored data escapes
        for k, u in ptr_uses:
            if k >= n_addr_regs:
                self.escape(self.ptr[u.id].var, "pointer stored to memory")
        if p is None:
            return
        if info.space not in (".local", ""):
            self.escape(p.var, f"frame accessed as {info.space} memory")
            return
        if info.type is None or (is_float(info.type) and bit_width(info.type) < 32):
            self.escape(p.var, "access type")
            return
        elems = 1
        for m in inst.ast.mods:
            if m in (".v2", ".v4"):
                elems = int(m[2:])
        size = max(bit_width(info.type) // 8, 1)
        if size > 8:
            self.escape(p.var, "access size")
            return
        acc = _Access(
            inst, p.var, p.off + addr.offset, size, elems, p.dyn, is_store, is_signed(info.type)
        )
        self.vars[p.var].accesses.append(acc)


def _layout(v: _Var, budget: int) -> dict[int, int] | None:
    """Slot offset -> slot size for ``v``, or None (and ``v.escaped`` set)."""
    slots: dict[int, int] = {}
    for a in v.accesses:
        if a.dyn is not None:
            continue
        for e in range(a.elems):
            off = a.off + e * a.size
            if off < 0 or off + a.size > v.size:
                v.escaped = "access out of bounds"
                return None
            if slots.setdefault(off, a.size) != a.size:
                v.escaped = "accesses of different sizes at one offset"
                return None
    ordered = sorted(slots)
    for x, y in zip(ordered, ordered[1:], strict=False):
        if x + slots[x] > y:
            v.escaped = "overlapping accesses"
            return None
    dyn = [a for a in v.accesses if a.dyn is not None]
    if dyn:
        sz = dyn[0].size
        if any(a.size != sz or a.elems != 1 for a in v.accesses) or v.size % sz:
            v.escaped = "dynamic index into mixed slots"
            return None
        n = v.size // sz
        if n > budget:
            v.escaped = "dynamic index over budget"
            return None
        if any(a.off % sz for a in v.accesses):
            v.escaped = "unaligned dynamic access"
            return None
        slots = {k * sz: sz for k in range(n)}
    return slots


def _slot_type(size: int) -> str:
    return f".b{max(size * 8, 16)}"


class _Rewriter:
    def __init__(self, func: Func) -> None:
        self.func = func

    def before(
        self,
        at: Inst,
        opcode: str,
        mods: tuple[str, ...],
        vtype: str | None,
        srcs: Sequence[Value | Imm | Operand],
        pred: Value | None = None,
        olds: Sequence[Value | None] | None = None,
        var: str | None = None,
    ) -> Inst:
        dsts = [var] if var is not None else ([fresh_var(self.func, vtype, "%pl")] if vtype else [])
        inst = make_inst(self.func, opcode, mods, dsts, srcs, pred=pred, olds=olds, loc=at.loc)
        blk = at.block
        assert blk is not None
        insert_before(blk, blk.insts.index(at), inst)
        return inst


def _convert(
    rw: _Rewriter,
    at: Inst,
    src: Value,
    to_type: str,
    bits: int,
    signed: bool,
    var: str | None = None,
) -> Inst:
    """``src`` written as a ``to_type`` register, as memory of ``bits`` bits would
    pass it: a store keeps the low bits, a load extends them (signed or not)."""
    sw = bit_width(src.type)
    tw = bit_width(to_type)
    if sw == tw and bits >= tw:
        return rw.before(at, "mov", (f".b{tw}",), to_type, [src], var=var)
    if bits >= tw or sw > tw:  # store into a narrower slot: keep the low bits
        return rw.before(at, "cvt", (f".u{tw}", f".u{sw}"), to_type, [src], var=var)
    s = "s" if signed else "u"
    return rw.before(at, "cvt", (f".{s}{tw}", f".{s}{bits}"), to_type, [src], var=var)


def run(
    func: Func,
    am: AnalysisManager,
    budget: int = 8,
    stats: dict[str, int] | None = None,
    notes: list[str] | None = None,
) -> bool:
    vars_ = _local_vars(func)
    if not vars_:
        return False
    dom = am.get(DomTree, func)
    tr = _Tracker(func, vars_)
    tr.walk(dom)
    # a symbol of a frame variable read anywhere we did not understand escapes it
    known = {id(a.inst) for v in vars_.values() for a in v.accesses} | {
        id(i) for v in vars_.values() for i in v.chain
    }
    for inst in func.instructions():
        if id(inst) in known:
            continue
        for op in inst.ast.operands:
            for name in _syms(op):
                if name in vars_ and not (inst.info and inst.info.name in ("mov", "cvta")):
                    vars_[name].escaped = vars_[name].escaped or "symbol used directly"
    for v in vars_.values():
        if any(a.inst.block is None or not dom.reachable(a.inst.block.index) for a in v.accesses):
            v.escaped = v.escaped or "unreachable access"
    changed = False
    for v in vars_.values():
        layout = None if v.escaped else _layout(v, budget)
        if layout is None:
            why = v.escaped or "too many slots for a dynamic index"
            if stats is not None:
                stats[f"kept: {why}"] = stats.get(f"kept: {why}", 0) + 1
            if notes is not None:
                notes.append(f".local {v.name} ({v.size} bytes): kept: {why}")
            continue
        _promote(func, dom, v, layout)
        changed = True
        if stats is not None:
            stats["variables promoted"] = stats.get("variables promoted", 0) + 1
            stats["frame bytes removed"] = stats.get("frame bytes removed", 0) + v.size
        if notes is not None:
            done = f"promoted to {len(layout)} registers" if layout else "removed (no access)"
            notes.append(f".local {v.name} ({v.size} bytes): {done}")
    if changed:
        _cleanup(func, vars_)
    return changed


def _syms(op: object) -> list[str]:
    if isinstance(op, Sym):
        return [op.name]
    if isinstance(op, Addr) and isinstance(op.base, Sym):
        return [op.base.name]
    return []


def _promote(func: Func, dom: DomTree, v: _Var, layout: dict[int, int]) -> None:
    rw = _Rewriter(func)
    offs = sorted(layout)
    regs = {o: fresh_var(func, _slot_type(layout[o]), "%pl") for o in offs}
    # initial values (zero) at the top of the entry block
    entry = func.blocks[0]
    cur: dict[int, Value] = {}
    for o in offs:
        z = make_inst(func, "mov", (_slot_type(layout[o]),), [regs[o]], [Imm(0, "0")])
        insert_before(entry, 0, z)
        cur[o] = z.defs[0]
    # phis for each slot on the iterated frontier of the storing blocks
    store_blocks: dict[int, set[int]] = {o: set() for o in offs}
    for a in v.accesses:
        if not a.is_store:
            continue
        assert a.inst.block is not None
        touched = offs if a.dyn is not None else [a.off + e * a.size for e in range(a.elems)]
        for o in touched:
            store_blocks[o].add(a.inst.block.index)
    phis_at: dict[int, list[tuple[int, Phi]]] = {}
    for o in offs:
        if not store_blocks[o]:
            continue
        for bi in dom.iterated_frontier(store_blocks[o] | {0}):
            blk = func.blocks[bi]
            phi = func.new_phi(regs[o], func.reg_types[regs[o]], blk)
            blk.phis.append(phi)
            phis_at.setdefault(bi, []).append((o, phi))
    by_inst = {id(a.inst): a for a in v.accesses}
    # renaming: iterative dominator-tree walk
    stack: list[tuple[int, dict[int, Value]]] = [(0, dict(cur))]
    while stack:
        bi, state = stack.pop()
        state = dict(state)
        blk = func.blocks[bi]
        for o, phi in phis_at.get(bi, []):
            state[o] = phi.result
        for inst in list(blk.insts):
            acc = by_inst.get(id(inst))
            if acc is not None:
                _rewrite_access(rw, func, acc, layout, offs, regs, state)
        for s in blk.succs:
            k = s.preds.index(blk)
            for o, phi in phis_at.get(s.index, []):
                while len(phi.incoming) < len(s.preds):
                    phi.incoming.append(state[o])
                phi.incoming[k] = state[o]
        for c in reversed(dom.children[bi]):
            stack.append((c, state))
    # predecessors not reachable: feed the zero value
    for bi, lst in phis_at.items():
        blk = func.blocks[bi]
        for o, phi in lst:
            while len(phi.incoming) < len(blk.preds):
                phi.incoming.append(cur[o])


def _rewrite_access(
    rw: _Rewriter,
    func: Func,
    a: _Access,
    layout: dict[int, int],
    offs: list[int],
    regs: dict[int, str],
    state: dict[int, Value],
) -> None:
    inst = a.inst
    bits = a.size * 8
    if a.is_store:
        addr = inst.ast.operands[0]
        n_addr = 1 if isinstance(addr, Addr) and isinstance(addr.base, Reg) else 0
        it = iter(inst.uses[n_addr:])
        data = inst.ast.operands[1]
        elems = data.elems if isinstance(data, Vec) else (data,)
        vals_or_imm: list[Value | Imm] = [e if isinstance(e, Imm) else next(it) for e in elems]
        for e, src in enumerate(vals_or_imm):
            if a.dyn is None:
                o = a.off + e * a.size
                st = _slot_type(layout[o])
                if isinstance(src, Imm):
                    new = rw.before(inst, "mov", (st,), None, [src], var=regs[o])
                else:
                    new = _convert(rw, inst, src, st, bits, a.signed, var=regs[o])
                if inst.pred is not None:
                    new = (
                        rw.before(
                            inst,
                            "selp",
                            (st,),
                            None,
                            [new.defs[0], state[o], inst.pred],
                            var=regs[o],
                        )
                        if not inst.pred_neg
                        else rw.before(
                            inst,
                            "selp",
                            (st,),
                            None,
                            [state[o], new.defs[0], inst.pred],
                            var=regs[o],
                        )
                    )
                state[o] = new.defs[0]
            else:
                st = _slot_type(a.size)
                if isinstance(src, Imm):
                    val = rw.before(inst, "mov", (st,), st, [src]).defs[0]
                else:
                    val = _convert(rw, inst, src, st, bits, a.signed).defs[0]
                for o in offs:
                    hit = rw.before(
                        inst,
                        "setp",
                        (".eq", ".s64"),
                        ".pred",
                        [a.dyn, Imm(o - a.off, str(o - a.off))],
                    ).defs[0]
                    if inst.pred is not None:
                        g = (
                            rw.before(inst, "and", (".pred",), ".pred", [hit, inst.pred])
                            if not inst.pred_neg
                            else None
                        )
                        if g is None:
                            npred = rw.before(inst, "not", (".pred",), ".pred", [inst.pred]).defs[0]
                            g = rw.before(inst, "and", (".pred",), ".pred", [hit, npred])
                        hit = g.defs[0]
                    new = rw.before(inst, "selp", (st,), None, [val, state[o], hit], var=regs[o])
                    state[o] = new.defs[0]
        remove(inst)
        return
    # load (a vector destination may skip elements with ``_``)
    dst = inst.ast.operands[0]
    positions = (
        [k for k, el in enumerate(dst.elems) if isinstance(el, Reg)]
        if isinstance(dst, Vec)
        else [0]
    )
    for e, d in zip(positions, inst.defs, strict=True):
        if a.dyn is None:
            src = state[a.off + e * a.size]
        else:
            st = _slot_type(a.size)
            src = state[offs[0]]
            for o in offs[1:]:
                hit = rw.before(
                    inst, "setp", (".eq", ".s64"), ".pred", [a.dyn, Imm(o - a.off, str(o - a.off))]
                ).defs[0]
                src = rw.before(inst, "selp", (st,), st, [state[o], src, hit]).defs[0]
        dw = bit_width(d.type)
        sw = bit_width(src.type)
        if inst.pred is None:
            if dw == sw and bits >= dw:
                replace_uses(func, d, src)
                continue
            conv = _convert(rw, inst, src, d.type, bits, a.signed)
            replace_uses(func, d, conv.defs[0])
            continue
        # guarded load: the destination keeps its old value where the guard is false
        assert inst.olds is not None
        old = inst.olds[inst.defs.index(d)]
        if dw == sw and bits >= dw:
            mv = rw.before(inst, "mov", (f".b{dw}",), d.type, [src], pred=inst.pred, olds=[old])
        else:
            mv = _convert(rw, inst, src, d.type, bits, a.signed)
            mv = rw.before(
                inst, "mov", (f".b{dw}",), d.type, [mv.defs[0]], pred=inst.pred, olds=[old]
            )
        mv.pred_neg = inst.pred_neg
        mv.ast = Instr(mv.ast.opcode, mv.ast.mods, mv.ast.operands, mv.ast.pred, inst.pred_neg)
        replace_uses(func, d, mv.defs[0])
    remove(inst)


def _cleanup(func: Func, vars_: dict[str, _Var]) -> None:
    """Delete frame pointer arithmetic nobody reads and the promoted declarations."""
    promoted = {n for n, v in vars_.items() if not v.escaped}
    chain = [i for v in vars_.values() if not v.escaped for i in v.chain]
    roots = [
        i
        for i in func.instructions()
        if i.info is not None
        and i.info.name in ("mov", "cvta")
        and len(i.ast.operands) == 2
        and isinstance(i.ast.operands[1], Sym)
        and i.ast.operands[1].name in promoted
    ]
    cands = chain + roots
    changed = True
    while changed:
        changed = False
        du = DefUse(func)
        for i in cands:
            if i.block is not None and all(du.is_dead(d) for d in i.defs):
                remove(i)
                changed = True
    still = set()
    for inst in func.instructions():
        for op in inst.ast.operands:
            still.update(_syms(op))
    func.head = [
        st
        for st in func.head
        if not (isinstance(st, VarDecl) and st.name in promoted and st.name not in still)
    ]


@register
class PromoteLocal(FunctionPass):
    name = "promote-local"
    description = "promote non-escaping .local variables / stack frames to registers"
    knobs = (
        Knob(
            "PromoteLocalDynamicBudget",
            "int",
            4,
            "most slots of an array indexed dynamically (selp chains); 0: constant offsets only"
            " (8 slots cost SASS: local_sort8 94 -> 264 on sm_90)",
            spec="02-uniform-registers.txt",
            lo=0,
            hi=64,
        ),
    )

    def run(self, func: Func, am: AnalysisManager) -> bool:
        counts: dict[str, int] = {}
        notes: list[str] = []
        budget = int(self.knob("PromoteLocalDynamicBudget"))  # type: ignore[call-overload]
        changed = run(func, am, budget, counts, notes)
        self.stats.update(counts)
        for n in notes:
            self.explain(func, n)
        return changed
