"""Leaving SSA: assign a PTX register to every SSA value and decide the copies.

This is the straightforward, always-correct destruction used until the spec's
CSSA + coalescing (spec 05) takes its place behind the same interface,
:func:`destruct`:

1. Every value starts in the register it was lifted from.  Values of one register
   that *interfere* (one is live where the other is defined) are separated: the
   later one gets a fresh register.  The check is Budimlić et al.'s (2002) walk
   over the values in dominator-tree order, testing each value only against its
   nearest dominating value of the same register.
2. A tied definition (a predicated write keeps its old value in inactive lanes; a
   read-modify-write accumulator) whose old value ended up in another register
   writes a fresh register, initialised by a copy placed just before it.
3. Every phi whose incoming value sits in another register gets a copy on that
   edge.  Copies of one edge form a *parallel* copy; the lowering places it before
   the predecessor's terminator (splitting the edge only when the predecessor has
   several successors) and sequentializes it (:mod:`ptxopt.ir.parallel_copy`).
"""

from __future__ import annotations

from ptxopt.analysis.dominators import DomTree
from ptxopt.ir.core import CARRY, Func, Value
from ptxopt.ir.ssa_liveness import SsaLiveness
from ptxopt.ptx.ast import Imm
from ptxopt.record import Node

Copy = tuple[str, "str | Imm", str]  # (destination, source, register type)


class Assignment(Node):
    """The result of SSA destruction for one function."""

    __slots__ = (
        "reg",
        "edge_copies",
        "tie_copies",
        "new_regs",
        "split_values",
        "block_copies",
        "start_copies",
        "drop",
        "identity",
    )
    reg: dict[int, str]
    edge_copies: dict[tuple[int, int], list[Copy]]
    tie_copies: dict[int, list[Copy]]  # id(inst) -> copies
    new_regs: dict[str, str]  # fresh name -> type
    split_values: int
    # CSSA: parallel copies before a block's terminator (for all its successors, no
    # edge splitting) and right after a block's labels; instructions left out
    block_copies: dict[int, list[Copy]]
    start_copies: dict[int, list[Copy]]
    drop: set[int]  # id(inst)
    # every value keeps its register and nothing was changed since lifting: each
    # instruction lowers to the one it was lifted from (see keep_names)
    identity: bool

    def __init__(
        self,
        reg: dict[int, str],
        edge_copies: dict[tuple[int, int], list[Copy]] | None = None,
        tie_copies: dict[int, list[Copy]] | None = None,
        new_regs: dict[str, str] | None = None,
        split_values: int = 0,
        block_copies: dict[int, list[Copy]] | None = None,
        start_copies: dict[int, list[Copy]] | None = None,
        drop: set[int] | None = None,
        identity: bool = False,
    ) -> None:
        self.reg = reg
        self.edge_copies = {} if edge_copies is None else edge_copies
        self.tie_copies = {} if tie_copies is None else tie_copies
        self.new_regs = {} if new_regs is None else new_regs
        self.split_values = split_values
        self.block_copies = {} if block_copies is None else block_copies
        self.start_copies = {} if start_copies is None else start_copies
        self.drop = set() if drop is None else drop
        self.identity = identity

    def name(self, v: Value | Imm) -> str | Imm:
        if isinstance(v, Imm):
            return v
        if v.kind == "special":
            return v.var
        return self.reg.get(v.id, v.var)


class _Namer:
    def __init__(self, func: Func, asg: Assignment) -> None:
        self.taken = set(func.reg_types) | {p.name for p in func.ast.params}
        self.func = func
        self.asg = asg
        self.counter: dict[str, int] = {}

    def fresh(self, base: str, vtype: str) -> str:
        stem = base.rstrip("0123456789") or base
        k = self.counter.get(stem, 0)
        while True:
            k += 1
            name = f"{stem}_s{k}"
            if name not in self.taken:
                break
        self.counter[stem] = k
        self.taken.add(name)
        self.asg.new_regs[name] = vtype
        return name


def keep_names(func: Func) -> Assignment:
    """SSA destruction of a function no pass has touched since lifting: every value
    takes back the register it was renamed from, and phis vanish.  SSA built by
    renaming one program's registers is conventional (no two versions of a register
    are live at once), so dropping the version numbers gives that program back; this
    skips the interference work of the general destructors.  Checked against the
    CSSA destructor on the corpus and on random kernels: the same text.  Only for IR
    as lifted: the lowering then prints every instruction as it was parsed."""
    return Assignment({}, identity=True)


def destruct(func: Func) -> Assignment:
    asg = Assignment({})
    namer = _Namer(func, asg)
    values = [v for v in func.values() if v.var != CARRY]
    for v in values:
        asg.reg[v.id] = v.var
    groups: dict[str, list[Value]] = {}
    for v in values:
        groups.setdefault(v.var, []).append(v)
    multi = {k: g for k, g in groups.items() if len(g) > 1}
    if multi:
        succs = func.cfg_succs()
        dom = DomTree.build(succs, 0)
        live = SsaLiveness(func)
        pos_cache: dict[int, tuple[int, int]] = {}
        # positions within blocks, computed once
        for b in func.blocks:
            for i, inst in enumerate(b.insts):
                for d in inst.result_values():
                    pos_cache[d.id] = (b.index, i)
            for phi in b.phis:
                pos_cache[phi.result.id] = (b.index, -1)
        for p in func.params:
            pos_cache[p.id] = (0, -2)
        pre = dom.pre
        for var, group in multi.items():
            members = [v for v in group if dom.reachable(pos_cache[v.id][0])]
            members.sort(key=lambda v: (pre[pos_cache[v.id][0]], pos_cache[v.id][1]))
            stack: list[Value] = []
            for w in members:
                wb, wp = pos_cache[w.id]
                while stack:
                    t = stack[-1]
                    tb, tp = pos_cache[t.id]
                    if dom.dominates(tb, wb) and (tb != wb or tp < wp):
                        break
                    stack.pop()
                if stack and live.live_after(stack[-1], wb, wp):
                    asg.reg[w.id] = namer.fresh(var, w.type)
                    asg.split_values += 1
                    continue
                stack.append(w)
    # ties
    for b in func.blocks:
        for inst in b.insts:
            if inst.olds is None:
                continue
            copies: list[Copy] = []
            for k, old in enumerate(inst.olds):
                if old is None:
                    continue
                d = inst.defs[k]
                src = asg.name(old)
                if old.kind == "undef" or src == asg.reg[d.id]:
                    continue
                fresh = namer.fresh(d.var, d.type)
                asg.reg[d.id] = fresh
                copies.append((fresh, src, d.type))
            if copies:
                asg.tie_copies[id(inst)] = copies
    # phi copies
    for b in func.blocks:
        for phi in b.phis:
            if phi.result.var == CARRY:
                continue
            dst = asg.reg[phi.result.id]
            for j, inc in enumerate(phi.incoming):
                if inc.kind == "undef":
                    continue
                src = asg.name(inc)
                if src != dst:
                    key = (b.preds[j].index, b.index)
                    asg.edge_copies.setdefault(key, []).append((dst, src, phi.result.type))
    return asg
