"""Lift a PTX function (AST) into the SSA IR.

1. *Flatten*: nested ``{ }`` blocks are dissolved by scope resolution
   (:mod:`ptxopt.ir.scopes`): every register, variable and label declared in a
   block gets a name unique in the function (``LAB_WAIT`` → ``LAB_WAIT_1`` in a
   sibling block), every reference resolves to the innermost visible
   declaration, and :attr:`Func.origins` remembers the source spelling.
2. *Blocks*: a block starts at every label (all labels are kept: debug sections
   refer to them) and after every terminator; edges come from ``bra``,
   ``brx.idx`` tables, ``ret``/``exit``/``trap`` and fall-through.
3. *SSA* by Cytron et al. (1991) with pruned phis: phis are placed on the
   iterated dominance frontier of each register's definition blocks, only where
   the register is live-in, then names are resolved by a pre-order walk of the
   dominator tree.
"""

from __future__ import annotations

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.liveness import bits_of, liveness
from ptxopt.ir.core import CARRY, Block, Func, Inst, IRModule, Phi, Value
from ptxopt.ir.operands import reg_names
from ptxopt.ir.regtypes import RegTypes
from ptxopt.ir.scopes import Item, resolve_scopes
from ptxopt.ptx.ast import (
    BranchTargets,
    Function,
    Imm,
    Instr,
    Module,
    PtxError,
    Reg,
    Sym,
)
from ptxopt.ptx.opcodes import OpInfo, is_special_register, lookup
from ptxopt.ptx.parser import enter_range


def lift_module(mod: Module) -> IRModule:
    funcs = [lift_function(fn) for fn in mod.functions if fn.body is not None]
    return IRModule(mod, funcs)


# ---------------------------------------------------------------------------
# 2. blocks and edges

# The table entry of each instruction form met, by opcode, modifiers and operand
# count (what :func:`lookup` keys its own cache by; a call's entry depends on its
# operands too).  Kept here so that the compiled lifter asks the interpreted table
# once per form, not once per instruction.
_INFOS: dict[tuple[str, tuple[str, ...], int], OpInfo] = {}


def _build_blocks(func: Func, items: list[Item]) -> None:
    blocks: list[Block] = []
    cur: Block | None = None
    label_block: dict[str, Block] = {}
    for kind, obj, loc in items:
        if kind == "label":
            name: str = obj  # type: ignore[assignment]
            if cur is None or cur.insts:
                cur = Block(len(blocks), [])
                blocks.append(cur)
            cur.labels.append(name)
            label_block[name] = cur
            continue
        if cur is None:
            cur = Block(len(blocks), [])
            blocks.append(cur)
        if kind == "raw":
            raw = Inst(Instr("", (), []), None, [], [])
            raw.raw = obj.text  # type: ignore[attr-defined]
            raw.block = cur
            cur.insts.append(raw)
            continue
        ins: Instr = obj  # type: ignore[assignment]
        if ins.opcode != "call":
            key = (ins.opcode, ins.mods, len(ins.operands))
            info = _INFOS.get(key)
            if info is None:
                info = _INFOS[key] = lookup(ins)
        else:
            info = lookup(ins)
        inst = Inst(ins, info, [], [], None, loc)
        inst.block = cur
        cur.insts.append(inst)
        if info.terminator:
            cur = None
    if not blocks:
        blocks.append(Block(0, []))
    tables: dict[str, list[str]] = {
        st.name: st.labels for st in func.head if isinstance(st, BranchTargets)
    }

    for i, b in enumerate(blocks):
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        succs: list[Block] = []
        term = b.terminator
        if term is None:
            if nxt is not None:
                succs.append(nxt)
                b.fallthrough = nxt
        else:
            ast = term.ast
            op = ast.opcode
            if op == "bra":
                tgt = ast.operands[-1]
                if not isinstance(tgt, Sym):
                    raise PtxError(ast.span, "expected a label as branch target")
                succs.append(_target(label_block, tgt.name, ast.span))
            elif op == "brx":
                tbl = ast.operands[-1]
                if not isinstance(tbl, Sym) or tbl.name not in tables:
                    raise PtxError(ast.span, "brx.idx needs a .branchtargets table")
                for lab in tables[tbl.name]:
                    succs.append(_target(label_block, lab, ast.span))
            if ast.pred is not None and nxt is not None:
                succs.append(nxt)
                b.fallthrough = nxt
        seen: set[int] = set()
        for s in succs:
            if id(s) not in seen:
                seen.add(id(s))
                b.succs.append(s)
                s.preds.append(b)
    if blocks[0].preds:
        entry = Block(0, [])
        entry.succs.append(blocks[0])
        entry.fallthrough = blocks[0]
        blocks[0].preds.insert(0, entry)
        blocks.insert(0, entry)
    func.blocks = blocks
    func.renumber()


# ---------------------------------------------------------------------------
# 3. SSA construction


def lift_function(fn: Function) -> Func:
    func = Func(fn)
    for p in fn.params + fn.rets:
        if p.space == ".reg":
            func.declare(p.name, p.type)
    scoped = resolve_scopes(fn)
    for name, rtype in scoped.regs:
        func.declare(name, rtype)
    for stem, count, rtype in scoped.ranges:
        func.declare_range(stem, count, rtype)
    func.head.extend(scoped.head)
    func.scopes = scoped.scopes
    func.origins = scoped.origins
    _build_blocks(func, scoped.items)
    _construct_ssa(func)
    return func


def _target(label_block: dict[str, Block], name: str, span: object) -> Block:
    blk = label_block.get(name)
    if blk is None:
        raise PtxError(span, f"branch to undefined label '{name}'")  # type: ignore[arg-type]
    return blk


def _bitset(indices: list[int] | set[int]) -> int:
    if not indices:
        return 0
    buf = bytearray((max(indices) >> 3) + 1)
    for k in indices:
        buf[k >> 3] |= 1 << (k & 7)
    return int.from_bytes(buf, "little")


def _construct_ssa(func: Func) -> None:
    blocks = func.blocks
    n = len(blocks)
    reg_types = func.reg_types
    names = _Names(reg_types)  # every register's index (see _Names)
    var_index = names.index
    var_names = names.names
    known = names.known

    # Upward-exposed uses and definitions per block, gathered as index lists and
    # turned into bitsets once per block (per-operand big-int updates would cost
    # O(registers) each).  The instructions' name lists become index lists here
    # (pred and carry codes live in ``extra`` until renaming).
    index_get = var_index.get
    uses = [0] * n
    defs = [0] * n
    def_blocks: dict[int, list[int]] = {}
    extra: dict[int, tuple[int, int]] = {}  # id(inst) -> (pred code, carry-in code)
    only_uses: dict[int, list[int]] = {}  # id(info) -> its use slots that are no def slots
    carry_k = -1
    for b in blocks:
        used: list[int] = []
        defined: set[int] = set()
        for inst in b.insts:
            info = inst.info
            if info is None:
                continue
            # the register names of the def slots, then of the use slots
            ast = inst.ast
            ops = ast.operands
            nops = len(ops)
            dnames: list[str] = []
            unames: list[str] = []
            tied: list[bool] | None = None
            rmw = info.rmw
            for slot in info.defs:
                if slot < nops:
                    start = len(dnames)
                    o = ops[slot]
                    if type(o) is Reg:
                        dnames.append(o.name)  # type: ignore[union-attr]
                    else:
                        reg_names(o, dnames)
                    if slot in rmw:
                        if tied is None:
                            tied = [False] * start
                        tied.extend([True] * (len(dnames) - start))
                    elif tied is not None:
                        tied.extend([False] * (len(dnames) - start))
            use_slots = only_uses.get(id(info))
            if use_slots is None:
                use_slots = only_uses[id(info)] = [k for k in info.uses if k not in info.defs]
            for slot in use_slots:
                if slot < nops:
                    o = ops[slot]
                    if type(o) is Reg:
                        unames.append(o.name)  # type: ignore[union-attr]
                    elif type(o) is not Imm:
                        reg_names(o, unames)
            inst.slot_names = dnames + unames
            # tied old values: predicated (partial) definitions, read-modify-write slots
            olds: list[bool | None] | None = None
            if ast.pred is not None and dnames:
                olds = [True] * len(dnames)
            elif tied is not None and any(tied):
                olds = [True if t else None for t in tied]
            inst.olds = olds  # type: ignore[assignment]
            ucodes: list[int] = []
            for nm in unames:
                k = index_get(nm)
                if k is None:
                    k = known(nm, ast)
                ucodes.append(k)
                if k >= 0 and k not in defined:
                    used.append(k)
            inst.uses = ucodes  # type: ignore[assignment]
            pk = ck = -1
            if ast.pred is not None:
                nm = ast.pred.name
                k = index_get(nm)
                if k is None:
                    k = known(nm, ast)
                pk = k
                if k >= 0 and k not in defined:
                    used.append(k)
            if olds is not None:
                for j, t in enumerate(olds):
                    if t is not None:
                        nm = dnames[j]
                        k = index_get(nm)
                        if k is None:
                            k = known(nm, ast)
                        if k >= 0 and k not in defined:
                            used.append(k)
            if info.carry_in:
                if carry_k < 0:
                    carry_k = known(CARRY, ast)
                ck = carry_k
                if ck not in defined:
                    used.append(ck)
            if pk != -1 or ck != -1:
                extra[id(inst)] = (pk, ck)
            dcodes: list[int] = []
            for nm in dnames:
                k = index_get(nm)
                if k is None:
                    k = known(nm, ast, True)
                elif k < 0:
                    raise PtxError(ast.span, f"cannot write to '{nm}'")
                dcodes.append(k)
                if k not in defined:
                    defined.add(k)
                    def_blocks.setdefault(k, []).append(b.index)
            if info.carry_out:
                if carry_k < 0:
                    carry_k = known(CARRY, ast)
                if carry_k not in defined:
                    defined.add(carry_k)
                    def_blocks.setdefault(carry_k, []).append(b.index)
            inst.defs = dcodes  # type: ignore[assignment]
        uses[b.index] = _bitset(used)
        defs[b.index] = _bitset(defined)
    func.reg_types.setdefault(CARRY, ".pred")
    succs = func.cfg_succs()
    live = liveness(succs, uses, defs)
    dom = DomTree.build(succs, 0)
    any_live = 0
    for x in live.live_in:
        any_live |= x
    live_vars = set(bits_of(any_live))

    # phi placement
    phi_var: dict[int, list[tuple[int, Phi]]] = {}
    for k, dblocks in def_blocks.items():
        if k not in live_vars:
            continue
        bit = 1 << k
        name = var_names[k]
        vtype = reg_types[name]
        for bi in dom.iterated_frontier(dblocks):
            if live.live_in[bi] & bit:
                blk = blocks[bi]
                phi = func.new_phi(name, vtype, blk)
                blk.phis.append(phi)
                phi_var.setdefault(bi, []).append((k, phi))
    for blk in blocks:
        blk.phis.sort(key=lambda p: var_index[p.result.var])

    # renaming
    stacks: list[list[Value]] = [[] for _ in var_names]
    param_by_name = {}
    for p in func.ast.params + func.ast.rets:
        if p.space == ".reg":
            v = func.new_value(p.name, p.type, "param")
            func.params.append(v)
            param_by_name[p.name] = v
            k = var_index.get(p.name)
            if k is not None and k >= 0:
                stacks[k].append(v)

    renamer = _Renamer(func, names, stacks, extra, carry_k)
    rename_block = renamer.block

    # iterative pre-order walk of the dominator tree
    work: list[tuple[int, list[int] | None]] = [(0, None)]
    while work:
        bi, pushed = work.pop()
        if pushed is not None:
            for k in pushed:
                stacks[k].pop()
            continue
        mine: list[int] = []
        rename_block(blocks[bi], mine)
        work.append((bi, mine))
        for c in reversed(dom.children[bi]):
            work.append((c, None))
    # unreachable blocks: resolved in layout order with no reaching definitions
    for b in blocks:
        if not dom.reachable(b.index):
            saved = [len(s) for s in stacks]
            mine = []
            rename_block(b, mine)
            for k, ln in enumerate(saved):
                del stacks[k][ln:]
    for b in blocks:
        for phi in b.phis:
            while len(phi.incoming) < len(b.preds):
                phi.incoming.append(func.undef(phi.result.var))
            phi.incoming = [
                v if v is not None else func.undef(phi.result.var) for v in phi.incoming
            ]


class _Names:
    """Every register of a function gets an index on first sight; a special register
    a negative one (-2 - its position in ``specials``; -1 means "none"): it is never
    defined, so it takes no part in liveness and reads as the function's value for
    it.  (A class, not a closure: compiled by mypyc, a closure and the frame it
    shares would refer to each other and keep the function alive until a garbage
    collection.)"""

    __slots__ = ("reg_types", "index", "names", "specials")

    def __init__(self, reg_types: RegTypes) -> None:
        self.reg_types = reg_types
        self.index: dict[str, int] = {}
        self.names: list[str] = []
        self.specials: list[str] = []

    def known(self, name: str, ast: Instr, write: bool = False) -> int:
        rt = self.reg_types
        # a name of a range is entered on first sight (what RegTypes.__missing__
        # does, without an interpreted call per register on the compiled build)
        if not dict.__contains__(rt, name) and enter_range(rt, rt.ranges, rt.order, name) is None:
            if name != CARRY:
                if write:
                    raise PtxError(ast.span, f"cannot write to '{name}'")
                if not is_special_register(name):
                    raise PtxError(ast.span, f"undeclared register '{name}'")
                k = self.index[name] = -2 - len(self.specials)
                self.specials.append(name)
                return k
        k = self.index[name] = len(self.names)
        self.names.append(name)
        return k


class _Renamer:
    """The renaming step: each register's stack of reaching values, and the walk of
    one block (a class for the reason given at :class:`_Names`)."""

    __slots__ = ("func", "names", "stacks", "extra", "carry_k")

    def __init__(
        self,
        func: Func,
        names: _Names,
        stacks: list[list[Value]],
        extra: dict[int, tuple[int, int]],
        carry_k: int,
    ) -> None:
        self.func = func
        self.names = names
        self.stacks = stacks
        self.extra = extra  # id(inst) -> (pred code, carry-in code)
        self.carry_k = carry_k

    def missing(self, k: int) -> Value:
        """The value of a register no definition reaches (or of a special one)."""
        if k < 0:
            return self.func.special(self.names.specials[-2 - k])
        return self.func.undef(self.names.names[k])

    def block(self, b: Block, pushed: list[int]) -> None:
        stacks = self.stacks
        var_index = self.names.index
        var_names = self.names.names
        reg_types = self.names.reg_types
        extra = self.extra
        missing = self.missing
        new_value = self.func.new_value
        no_extra = (-1, -1)
        for phi in b.phis:
            k = var_index[phi.result.var]
            stacks[k].append(phi.result)
            pushed.append(k)
        for inst in b.insts:
            info = inst.info
            if info is None:
                continue
            ucodes: list[int] = inst.uses  # type: ignore[assignment]
            inst.uses = [st[-1] if k >= 0 and (st := stacks[k]) else missing(k) for k in ucodes]
            dcodes: list[int] = inst.defs  # type: ignore[assignment]
            # (lifting keeps the tied flags there until this walk replaces them)
            olds: list[bool | None] | None = inst.olds  # type: ignore[assignment]
            pk, ck = extra.get(id(inst), no_extra)
            if pk != -1:
                inst.pred = stacks[pk][-1] if pk >= 0 and stacks[pk] else missing(pk)
            if olds is not None:
                inst.olds = [
                    (st[-1] if (st := stacks[dcodes[j]]) else missing(dcodes[j]))
                    if t is not None
                    else None
                    for j, t in enumerate(olds)
                ]
            if ck != -1:
                st = stacks[ck]
                inst.carry_in = st[-1] if st else missing(ck)
            new_defs: list[Value] = []
            for k in dcodes:
                nm = var_names[k]
                v = new_value(nm, reg_types[nm], "inst", inst, b)
                new_defs.append(v)
                stacks[k].append(v)
                pushed.append(k)
            inst.defs = new_defs
            if info.carry_out:
                v = new_value(CARRY, ".pred", "inst", inst, b)
                inst.carry_out = v
                stacks[self.carry_k].append(v)
                pushed.append(self.carry_k)
        for s in b.succs:
            j = s.preds.index(b)
            for phi in s.phis:
                while len(phi.incoming) < len(s.preds):
                    phi.incoming.append(None)  # type: ignore[arg-type]
                k = var_index[phi.result.var]
                st = stacks[k]
                phi.incoming[j] = st[-1] if st else missing(k)


__all__ = ["lift_module", "lift_function", "Imm"]
