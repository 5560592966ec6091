"""gvn-cse: global value numbering and common-subexpression elimination (ptxas phase 49).

Spec 03, "Phase 49 -- GvnCse".  On SSA every value already has one definition, so a
value number is simply the leader instruction of an expression key
(:func:`ptxopt.ir.value_key.expr_key`: opcode, modifiers, result types, source value
ids, guard, old values; commutative sources in canonical order).  The pass walks the
dominator tree in pre-order with a scoped table: an instruction whose key is already
visible is redundant, its results are replaced by the leader's and it is deleted.

**Per-SM dispatch.**  ptxas calls GvnCse through the SM backend, whose entry is a
no-op on Kepler, Maxwell, Ampere and Ada.  Here the pass runs by default for sm_6x,
sm_7x and sm_90 and later and does nothing for sm_3x/5x/8x unless ``EnableGvnCse=1``
forces it (``EnableGvnCse=0`` turns it off everywhere; ``-1``, the default, follows the
target).  The "enhanced scope" capability of the backend (bit 6 of its flags) is
modelled as sm_90 and later.

**Modes** (``EnableGvnCseMode``, default 4):

====  =====================================================================================
0     nothing
1     simple: each block on its own (the table is cleared at every block)
2     standard, dominator-guided; on targets up to sm_7x the EBB pre-pass first splits
      the function into extended basic blocks (a root and the single-predecessor blocks
      below it) and commoning crosses blocks only inside one EBB
3     full: the whole dominator tree is the scope
4     full on targets with the enhanced scope (sm_90+), standard elsewhere
5     full, with extended block scope: plain loads are also commoned across a join when
      no block between the dominator and the join may write the loaded bytes; the
      MUFU-class and warp classes are eligible on enhanced targets
6     as 5, with the MUFU-class and warp classes eligible on every target
>6    nothing
====  =====================================================================================

**Eligibility classes** (:class:`~ptxopt.ir.value_key.Eligibility`): pure arithmetic,
logic, comparisons, conversions and moves always; transcendentals (``sin``, ``ex2``,
``rsqrt``, ``.approx`` ``rcp``/``sqrt`` ...) and ``.sync`` warp operations (``shfl``,
``vote``, ``redux``, ``match``) only in modes 5/6 as said above; atomics, volatile or
ordered memory operations, calls, and reads of clocks never.

**Memory.**  Loads from memory the kernel cannot write (``ld.const``,
``ld.global.nc``, ``ldu``, textures, ``ld.param`` of a parameter never stored to)
are commoned like arithmetic, across anything.  Any other load is commoned only while
no intervening store may alias it (:func:`~ptxopt.ir.value_key.may_alias`: different
state spaces, different variables, or disjoint offsets from one base register are
provably apart) and no barrier, fence, ordered or volatile access, or call came
between: those are scope breaks.  In modes 1-4 a join block is a scope break for
loads; in modes 5/6 the blocks between the join and its dominator are scanned (a
bounded search) and their stores join the list of intervening stores.

``EnableGvnCsePerInstr`` (default -1: all) limits how many eligible instructions are
looked up, in walk order: a bisection aid, like ptxas's per-instruction gate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.graph import Graph
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.commoning import Edits, ScopedTable, Users, common_into
from ptxopt.ir.core import Block, Func, Inst
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
from ptxopt.transforms.base import FunctionPass, register

#: Stores remembered between a load and its reuse; more make a full scope break.
STORE_WINDOW = 64
#: Blocks the join scan of modes 5/6 may visit before giving up (scope break).
JOIN_SCAN_BUDGET = 256

# instructions with side effects that neither write memory nor order it
_HARMLESS = frozenset({"prefetch", "prefetchu", "applypriority", "nanosleep", "pmevent", "brkpt"})


def sm_number(arch: str | None) -> int | None:
    """``"sm_90a"`` -> 90; ``None`` when unknown."""
    if not arch:
        return None
    m = re.match(r"sm_(\d+)", arch)
    return int(m.group(1)) if m else None


def runs_by_default(sm: int | None) -> bool:
    """Does ptxas's backend for ``sm`` implement GvnCse (Pascal, Volta/Turing, Hopper+)?"""
    if sm is None:
        return True
    return 60 <= sm < 80 or sm >= 90


def enhanced_scope(sm: int | None) -> bool:
    """The backend capability that enables modes 5/6 and the special classes."""
    return sm is not None and sm >= 90


def uses_ebb_prepass(sm: int | None) -> bool:
    """The EBB pre-pass runs before standard GVN on targets up to sm_7x."""
    return sm is not None and sm < 80


@dataclass(slots=True)
class Plan:
    """What one run does, after the mode dispatch."""

    scope: str  # "local", "ebb", "dominator"
    join_scan: bool  # modes 5/6: loads across clobber-free joins
    classes: frozenset[Eligibility] = field(default_factory=frozenset)


_BASE = frozenset({Eligibility.PURE, Eligibility.INVARIANT_LOAD, Eligibility.LOAD})
_SPECIAL = frozenset({Eligibility.TRANSCENDENTAL, Eligibility.WARP})


def plan_for(mode: int, sm: int | None) -> Plan | None:
    """The mode dispatcher (spec: ``EnableGvnCseMode`` 0-6 and the backend flags)."""
    enh = enhanced_scope(sm)
    if mode <= 0 or mode > 6:
        return None
    if mode == 4:
        mode = 3 if enh else 2
    if mode == 1:
        return Plan("local", False, _BASE)
    if mode == 2:
        return Plan("ebb" if uses_ebb_prepass(sm) else "dominator", False, _BASE)
    if mode == 3:
        return Plan("dominator", False, _BASE)
    special = mode == 6 or enh
    return Plan("dominator", True, _BASE | _SPECIAL if special else _BASE)


# -- the EBB pre-pass -------------------------------------------------------------------


def ebb_roots(func: Func) -> list[int]:
    """``root[b]``: the first block of the extended basic block holding ``b`` (a block
    with exactly one predecessor continues its predecessor's EBB)."""
    root = list(range(len(func.blocks)))
    order = _rpo(func)
    for bi in order:
        b = func.blocks[bi]
        if len(b.preds) == 1 and b.preds[0] is not b:
            root[bi] = root[b.preds[0].index]
    return root


def _rpo(func: Func) -> list[int]:
    seen = [False] * len(func.blocks)
    out: list[int] = []
    stack: list[tuple[Block, int]] = [(func.blocks[0], 0)] if func.blocks else []
    if func.blocks:
        seen[0] = True
    while stack:
        b, i = stack.pop()
        if i < len(b.succs):
            stack.append((b, i + 1))
            s = b.succs[i]
            if not seen[s.index]:
                seen[s.index] = True
                stack.append((s, 0))
        else:
            out.append(b.index)
    out.reverse()
    return out


def ebb_candidates(func: Func, root: list[int], classes: frozenset[Eligibility]) -> set[int]:
    """EBB roots worth walking: those holding two eligible instructions of one opcode
    (only such an EBB can contain a redundancy the EBB-scoped walk may remove)."""
    seen: dict[tuple[int, str], int] = {}
    out: set[int] = set()
    ro = readonly_param_symbols(func)
    for b in func.blocks:
        r = root[b.index]
        for inst in b.insts:
            if inst.info is None or eligibility(inst, ro) not in classes:
                continue
            k = (r, inst.ast.opcode)
            seen[k] = seen.get(k, 0) + 1
            if seen[k] >= 2:
                out.add(r)
    return out


# -- memory effects -------------------------------------------------------------------------


def memory_effect(inst: Inst) -> tuple[bool, list[MemAccess | None]]:
    """``(full, writes)``: whether ``inst`` is a scope break for every load, else the
    accesses it writes (``None`` in the list: a write to unknown bytes)."""
    info = inst.info
    if info is None:
        return (inst.raw is None, [])
    if info.name == "call" or info.barrier:
        return (True, [])
    if info.mem == "read":
        # a volatile/ordered read may be a synchronization point
        return (info.side_effects, [])
    if info.mem in ("write", "rw"):
        n = max(1, len(info.addrs))
        return (False, [mem_access(inst, k) for k in range(n)])
    if info.side_effects and not info.terminator and info.name not in _HARMLESS:
        return (True, [])
    return (False, [])


# -- the walk ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    leader: Inst
    time: int
    load: MemAccess | None  # the access of an ordinary load (None: not a plain load)
    plain_load: bool


class _Walker:
    def __init__(self, func: Func, am: AnalysisManager, plan: Plan, limit: int) -> None:
        self.func = func
        self.plan = plan
        self.dom = am.get(DomTree, func)
        self.users = Users(func)
        self.edits = Edits()
        self.table: ScopedTable[tuple[object, ...], _Entry] = ScopedTable()
        self.readonly = readonly_param_symbols(func)
        self.now = 0
        self.floor = 0  # entries older than this are out of scope
        self.clobber = 0  # plain loads older than this are stale
        self.stores: list[tuple[int, MemAccess | None]] = []
        self.store_start = 0
        self.limit = limit
        self.looked = 0
        self.replaced = 0
        self.by_class: dict[str, int] = {}
        self.root = ebb_roots(func) if plan.scope == "ebb" else None
        self.walk_roots = (
            ebb_candidates(func, self.root, plan.classes) if self.root is not None else None
        )
        self._effects: dict[int, tuple[bool, list[MemAccess | None]]] = {}

    # memory state ------------------------------------------------------------------

    def full_clobber(self) -> None:
        self.clobber = self.now
        self.store_start = len(self.stores)

    def add_store(self, acc: MemAccess | None) -> None:
        if len(self.stores) - self.store_start >= STORE_WINDOW:
            self.full_clobber()
            return
        self.stores.append((self.now, acc))

    def block_effect(self, b: Block) -> tuple[bool, list[MemAccess | None]]:
        eff = self._effects.get(b.index)
        if eff is None:
            full = False
            writes: list[MemAccess | None] = []
            for inst in b.insts:
                f, w = memory_effect(inst)
                if f:
                    full = True
                    break
                writes.extend(w)
            eff = (full, writes)
            self._effects[b.index] = eff
        return eff

    def enter_join(self, b: Block) -> None:
        """Memory state on entry to a block with several (or no) predecessors."""
        if not self.plan.join_scan:
            self.full_clobber()
            return
        idom = self.dom.parent(b.index)
        if idom < 0:
            self.full_clobber()
            return
        # every block that reaches b without passing through its dominator
        seen: set[int] = set()
        work = list(b.preds)
        budget = JOIN_SCAN_BUDGET
        writes: list[MemAccess | None] = []
        while work:
            p = work.pop()
            if p.index == idom or p.index in seen:
                continue
            seen.add(p.index)
            budget -= 1
            if budget < 0:
                self.full_clobber()
                return
            full, w = self.block_effect(p)
            if full:
                self.full_clobber()
                return
            writes.extend(w)
            work.extend(p.preds)
        for acc in writes:
            self.add_store(acc)

    # lookups -----------------------------------------------------------------------

    def visible(self, e: _Entry, acc: MemAccess | None) -> bool:
        if e.time <= self.floor:
            return False
        if not e.plain_load:
            return True
        if e.time <= self.clobber:
            return False
        stores = self.stores
        for i in range(len(stores) - 1, self.store_start - 1, -1):
            t, w = stores[i]
            if t <= e.time:
                break
            if may_alias(w, acc):
                return False
        return True

    def visit(self, inst: Inst) -> bool:
        """Process one instruction; True when it was removed."""
        self.now += 1
        full, writes = memory_effect(inst)
        if full:
            self.full_clobber()
        for w in writes:
            self.add_store(w)
        cls = eligibility(inst, self.readonly)
        if cls not in self.plan.classes:
            return False
        if self.limit >= 0 and self.looked >= self.limit:
            return False
        self.looked += 1
        key = expr_key(inst)
        if key is None:
            return False
        plain = cls is Eligibility.LOAD
        acc = mem_access(inst) if plain else None
        e = self.table.get(key)
        if e is not None and self.visible(e, acc):
            common_into(self.func, self.users, inst, e.leader, self.edits)
            self.replaced += 1
            self.by_class[cls.value] = self.by_class.get(cls.value, 0) + 1
            return True
        self.table.set(key, _Entry(inst, self.now, acc, plain))
        return False

    def enter_block(self, b: Block) -> None:
        scope = self.plan.scope
        if scope == "local":
            self.floor = self.now
            self.full_clobber()
        elif scope == "ebb" and self.root is not None and self.root[b.index] == b.index:
            self.floor = self.now
            self.full_clobber()
        elif len(b.preds) != 1:
            self.enter_join(b)
        self.now += 1

    def run(self) -> int:
        dom = self.dom
        blocks = self.func.blocks
        if not blocks:
            return 0
        # explicit stack: ("enter", b) / ("exit", saved state)
        stack: list[tuple[int, tuple[int, int, int, int] | None]] = [(dom.entry, None)]
        while stack:
            bi, saved = stack.pop()
            if saved is not None:
                self.table.pop()
                self.floor, self.clobber, n, self.store_start = saved
                del self.stores[n:]
                continue
            self.table.push()
            state = (self.floor, self.clobber, len(self.stores), self.store_start)
            stack.append((bi, state))
            b = blocks[bi]
            self.enter_block(b)
            skip = (
                self.walk_roots is not None
                and self.root is not None
                and (self.root[bi] not in self.walk_roots)
            )
            if not skip:
                for inst in list(b.insts):
                    self.visit(inst)
            else:
                self.now += len(b.insts)
            for c in reversed(dom.children[bi]):
                stack.append((c, None))
        self.edits.flush()
        return self.replaced


def run(func: Func, am: AnalysisManager, plan: Plan, limit: int = -1) -> tuple[int, dict[str, int]]:
    """Run one planned GVN-CSE over ``func``; return (instructions removed, by class)."""
    w = _Walker(func, am, plan, limit)
    n = w.run()
    return n, w.by_class


@register
class GvnCse(FunctionPass):
    name = "gvn-cse"
    phase = 49
    description = "global value numbering + CSE over the dominator tree (ptxas GvnCse)"
    preserves = frozenset({Graph, DomTree})
    knobs = (
        Knob(
            "EnableGvnCse",
            "int",
            -1,
            "-1: follow the target (on for sm_6x/7x/90+, off for sm_8x); 0: off; 1: force on",
            spec="03-copyprop-cse.txt",
            choices=(-1, 0, 1),
        ),
        Knob(
            "EnableGvnCseMode",
            "int",
            4,
            "0 off, 1 single-block, 2 dominator-guided (EBB pre-pass up to sm_7x), "
            "3 full, 4 full on sm_90+ else 2, 5 full + loads across clean joins, "
            "6 as 5 with MUFU/warp classes everywhere; >6 off",
            spec="03-copyprop-cse.txt",
            lo=0,
        ),
        Knob(
            "EnableGvnCsePerInstr",
            "int",
            -1,
            "look up at most this many eligible instructions (-1: all)",
            spec="03-copyprop-cse.txt",
            lo=-1,
        ),
    )

    def run(self, func: Func, am: AnalysisManager) -> bool:
        enable = int(self.knob("EnableGvnCse"))  # type: ignore[call-overload]
        sm = sm_number(self.arch)
        if enable == 0 or (enable < 0 and not runs_by_default(sm)):
            return False
        plan = plan_for(int(self.knob("EnableGvnCseMode")), sm)  # type: ignore[call-overload]
        if plan is None:
            return False
        limit = int(self.knob("EnableGvnCsePerInstr"))  # type: ignore[call-overload]
        n, by_class = run(func, am, plan, limit)
        if n:
            self.stats["instructions commoned"] += n
            for c, k in by_class.items():
                self.stats[f"commoned ({c})"] += k
        return n > 0
