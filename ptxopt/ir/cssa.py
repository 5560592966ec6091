"""Leaving SSA through conventional SSA (spec 05) with divergence-aware coalescing.

The phases follow the order the spec gives; the copies are *virtual* (variables with a
definition point, a value and uses) until the end, where they become the parallel
copies :mod:`ptxopt.ir.lower` prints.

1. **Numbering.**  Blocks get dominator-tree preorder numbers; every variable a
   definition point ``(block, position)`` ordered by them.  Positions inside a block:
   entry values (parameters, registers read before any write) ``-3``/``-2``, phi
   definitions ``-1``, consumer copies ``-0.5``, instruction ``i`` at ``i``, the
   copy feeding a tied (predicated) write at ``i - 0.25``, and the producer copies
   at ``n - 1.125`` just before the terminator (``n - 0.125`` in a block without
   one), so they follow the consumer copies even in a block holding only a branch.
2. **PHI map.**  Every phi gets a number in block order (:attr:`Cssa.phi_ids`).
3. **Producer copies** ("pcp").  For each phi and each incoming edge, a fresh
   variable ``pcpN`` is defined by a copy placed before the predecessor's terminator
   and the phi reads it instead of the original operand.  The copy sits in the
   predecessor, never in the join: a warp that ran both sides of a divergent branch
   has written each lane's value before it reconverges.
4. **Consumer-side propagation.**  The phi itself now defines a ``pcp`` variable and
   the phi's old result is re-defined by a copy at the top of the join block; every
   reader of the phi keeps reading the old result.  The phi, its ``pcp`` definition
   and its producer copies form one congruence class that is interference-free by
   construction (Sreedhar et al.'s method I).  A tied old value (the value a
   predicated write keeps in inactive lanes) is handled the same way: a copy right
   before the instruction, in the class of the instruction's result.
5. **Cleanup**, only after propagation: copies nothing reads (those of a phi whose
   result is never used) are erased.
6. **Coalescing** (``cssa-coalesce``): affinities, most frequent first (loop depth),
   merge two classes when no member of one interferes with a member of the other.
   Interference is Boissinot et al.'s (CGO 2009): two variables interfere when one is
   live where the other is defined *and* they hold different values (a copy holds
   its source's value); classes are checked in one linear walk of their members in
   dominance order (Budimlić et al.'s dominance forest), testing each variable only
   against the nearest dominating members of the other class.  Levels:

   * ``0``: no coalescing of the pcp copies (one copy per phi operand, plus one per
     phi result: the naive baseline); tied writes and values of one PTX register still
     share a register when they do not interfere;
   * ``1``: coalescing under the SIMT condition (``docs/cssa.md``): besides per-thread
     interference, a class holding a warp-uniform value that something other than a
     copy reads is never merged with a class that merges lanes of a divergent branch
     (a phi at a divergent join, or a loop left by lanes in different iterations),
     so the value keeps a register that holds one value per warp;
   * ``2`` (default): coalescing by per-thread interference alone, which is exact
     for PTX's per-thread registers (uniform values may share a register with lanes
     merged at a divergent join);
   * ``3``: also the program's own register-to-register ``mov`` instructions; a ``mov``
     whose two sides end up in one register is deleted.

   At every level the affinities are tried in order: tied writes, then phi copies
   (inner loops first), then program moves (level 3), then values of one source
   register (so the input's own register names are kept wherever possible).

Every class then gets one PTX register (its source register's name when free), and
the copies whose two sides differ are emitted: producer copies as one parallel copy
before each predecessor's terminator, consumer copies as one parallel copy after the
join's labels, tie copies just before their instruction.  Since a producer copy is
treated as live out of its whole block, no edge ever needs splitting, ``brx.idx``
tables included.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.loops import LoopForest
from ptxopt.ir.core import CARRY, Func, Inst, IRModule, Phi, Value
from ptxopt.ir.out_of_ssa import Assignment, Copy, destruct
from ptxopt.ptx.ast import Imm, Reg

#: Coalescing levels of ``cssa-coalesce`` (see the module docstring).
LEVEL_NONE, LEVEL_SIMT, LEVEL_THREAD, LEVEL_MOVS = 0, 1, 2, 3

_NEG_INF = float("-inf")
_KEY = attrgetter("key")  # a variable's dominance-order sort key


@dataclass(slots=True)
class CssaStats:
    """What leaving SSA did to one function (``cssa-verbosity`` prints it)."""

    phis: int = 0
    producer_copies: int = 0
    consumer_copies: int = 0
    tie_copies: int = 0
    erased: int = 0
    coalesced: int = 0
    interference: int = 0
    divergence_blocked: int = 0
    movs_deleted: int = 0
    copies_left: int = 0

    def line(self, name: str) -> str:
        return (
            f"cssa {name}: {self.phis} phis; pcp copies {self.producer_copies} producer + "
            f"{self.consumer_copies} consumer, {self.tie_copies} tie; {self.erased} erased; "
            f"{self.coalesced} coalesced, {self.interference} refused (interference), "
            f"{self.divergence_blocked} refused (divergence); {self.movs_deleted} movs "
            f"deleted; {self.copies_left} copies left"
        )


class _Var:
    """A variable of the conventional-SSA program: an SSA value or a virtual copy."""

    __slots__ = (
        "id",
        "block",
        "pos",
        "type",
        "value",
        "name",
        "uniform",
        "real_use",
        "mixing",
        "origin",
        "key",
    )

    def __init__(
        self, vid: int, block: int, pos: float, vtype: str, name: str, origin: Value | None
    ) -> None:
        self.id = vid
        self.block = block
        self.pos = pos
        self.type = vtype
        self.value = vid  # the value it holds (a copy holds its source's)
        self.name = name  # the PTX register it came from ("" for a pcp variable)
        self.uniform = True
        self.real_use = False  # read by something other than a copy
        self.mixing = False  # merges lanes that took different paths of a divergent branch
        self.origin = origin
        # the dominance-order sort key (``Cssa._key``), set once the dominator tree exists
        self.key: tuple[int, float, int] = (0, pos, vid)


class _Class:
    __slots__ = ("members", "has_uniform", "has_mixing", "pinned", "type")

    def __init__(self, v: _Var, pinned: str | None) -> None:
        self.members = [v]  # sorted in dominance order
        self.has_uniform = v.uniform and v.real_use
        self.has_mixing = v.mixing
        self.pinned = pinned
        self.type = v.type


# A copy of the conventional-SSA program: (destination var, source var or a special
# register's name).
_VCopy = tuple[_Var, "_Var | str"]


class Cssa:
    """Conventional SSA of one function and its coalescing; :meth:`assignment` gives
    the registers and copies for :mod:`ptxopt.ir.lower`."""

    def __init__(
        self,
        func: Func,
        *,
        level: int = LEVEL_THREAD,
        simt: SimtFacts | None = None,
        divergence_aware: bool = True,
        log: Callable[[str], None] | None = None,
        verbosity: int = 0,
    ) -> None:
        self.func = func
        self.level = level
        self.simt = simt
        self.divergence_aware = divergence_aware and simt is not None
        self.log = log
        self.verbosity = verbosity
        self.stats = CssaStats()
        self.vars: dict[int, _Var] = {}
        self.next_id = func.next_id
        self.phi_ids: dict[int, int] = {}  # id(phi) -> number (phase 2)
        self.producer: dict[int, list[_VCopy]] = {}  # block -> parallel copy at its end
        # block -> parallel copy at its top: (phi's old result, the phi's pcp variable)
        self.consumer: dict[int, list[tuple[_Var, _Var]]] = {}
        self.tie: dict[int, list[_VCopy]] = {}  # id(inst) -> copies before it
        self.dead_edge: list[tuple[int, Phi, Value]] = []  # copies on unreachable preds
        self.mov_pairs: list[tuple[Inst, _Var, _Var]] = []
        self.uses: dict[int, list[tuple[int, float]]] = {}
        self.cls: dict[int, _Class] = {}
        self.pcp_count = 0
        self.copy_of: dict[int, _Var] = {}  # copy destination -> source

    # -- phases 1-5 ---------------------------------------------------------------------

    def build(self) -> None:
        func = self.func
        succs = func.cfg_succs()
        self.dom = DomTree.build(succs, 0)
        dom = self.dom
        self.depth = LoopForest.build(succs, 0, domtree=dom)
        for p in func.params:
            self._var(p, 0, -2.0)
        for u in func.undefs.values():
            if u.var != CARRY:
                self._var(u, 0, -3.0)
        pinned = {p.name for p in func.ast.params + func.ast.rets if p.space == ".reg"}
        self.pinned_names = pinned
        phi_n = 0
        for b in func.blocks:
            bi = b.index
            for phi in b.phis:
                if phi.result.var == CARRY:
                    continue
                self.phi_ids[id(phi)] = phi_n
                phi_n += 1
                self._var(phi.result, bi, -0.5)  # re-defined by the consumer copy
            for i, inst in enumerate(b.insts):
                for d in inst.result_values():
                    if d.var != CARRY:
                        self._var(d, bi, float(i))
        self.stats.phis = phi_n
        # uses of the program's own instructions (tied olds go through a copy)
        for b in func.blocks:
            bi = b.index
            if not dom.reachable(bi):
                continue
            for i, inst in enumerate(b.insts):
                pos = float(i)
                for v in _real_operands(inst):
                    var = self.vars.get(v.id)
                    if var is not None:
                        var.real_use = True
                        self._use(var, bi, pos)
                if inst.olds is not None:
                    self._ties(inst, bi, pos)
                self._mov_affinity(inst)
        # phases 3 and 4: producer copies, then the phi's own pcp and consumer copy
        for b in func.blocks:
            for phi in b.phis:
                if id(phi) in self.phi_ids:
                    self._convert_phi(phi)
        self._cleanup()  # only now: propagation is complete
        self._liveness(self._candidates())
        if True:
            # value equality (Boissinot): a copy holds its source's value; sources
            # dominate their copies, so one pass in dominance order resolves chains
            copies = [self.vars[i] for i in self.copy_of if i in self.vars]
            for var in sorted(copies, key=_KEY):
                var.value = self.copy_of[var.id].value
        if self.simt is not None:
            for var in self.vars.values():
                if var.origin is not None:
                    var.uniform = self.simt.uniform(var.origin)
                    var.mixing = self.simt.mixing(var.origin)
        for k in {id(k): k for k in self.cls.values()}.values():
            k.has_uniform = any(m.uniform and m.real_use for m in k.members)
            k.has_mixing = any(m.mixing for m in k.members)

    def _var(self, v: Value, block: int, pos: float) -> _Var:
        var = _Var(v.id, block, pos, v.type, v.var, v)
        var.key = self._make_key(var)
        self.vars[v.id] = var
        return var

    def _new(self, block: int, pos: float, vtype: str, name: str = "") -> _Var:
        var = _Var(self.next_id, block, pos, vtype, name, None)
        var.key = self._make_key(var)
        self.next_id += 1
        self.vars[var.id] = var
        return var

    def _use(self, var: _Var, block: int, pos: float) -> None:
        self.uses.setdefault(var.id, []).append((block, pos))

    def _source(self, v: Value) -> _Var | str:
        if v.kind == "special":
            return v.var
        return self.vars[v.id]

    def _ties(self, inst: Inst, bi: int, pos: float) -> None:
        assert inst.olds is not None
        for k, old in enumerate(inst.olds):
            if old is None or old.kind == "undef":
                continue  # nothing to keep: inactive lanes may hold anything
            d = self.vars[inst.defs[k].id]
            t = self._new(bi, pos - 0.25, d.type)
            src = self._source(old)
            if isinstance(src, _Var):
                self.copy_of[t.id] = src
                self._use(src, bi, pos - 0.25)
            t.uniform = True
            self._use(t, bi, pos)
            self.tie.setdefault(id(inst), []).append((t, src))
            self.stats.tie_copies += 1
            self.cls[t.id] = self.cls.get(d.id) or self._singleton(d)
            self._add_member(self.cls[t.id], t)
            t.origin = inst.defs[k]  # uniform as the result it is merged with

    def _mov_affinity(self, inst: Inst) -> None:
        """A plain register-to-register ``mov``: its result holds its source's value."""
        if inst.opcode != "mov" or inst.ast.pred is not None or len(inst.defs) != 1:
            return
        if len(inst.uses) != 1 or inst.olds is not None:
            return
        src = inst.uses[0]
        if not isinstance(src, Value) or src.kind == "special" or src.var == CARRY:
            return
        ops = inst.ast.operands
        if len(ops) != 2 or not isinstance(ops[1], Reg):
            return
        d = self.vars[inst.defs[0].id]
        s = self.vars[src.id]
        if d.type != s.type:
            return
        self.copy_of[d.id] = s
        self.mov_pairs.append((inst, s, d))

    def _convert_phi(self, phi: Phi) -> None:
        b = phi.block
        bi = b.index
        res = self.vars[phi.result.id]
        web = self._new(bi, -1.0, res.type)  # the phi now defines this variable
        web.origin = phi.result
        self._use(web, bi, -0.5)
        self.consumer.setdefault(bi, []).append((res, web))
        self.stats.consumer_copies += 1
        klass = self._singleton(web)
        seen: set[int] = set()
        for j, inc in enumerate(phi.incoming):
            pred = b.preds[j]
            pi = pred.index
            if pi in seen:
                continue
            seen.add(pi)
            if not self.dom.reachable(pi):
                self.dead_edge.append((pi, phi, inc))
                continue
            n = len(pred.insts)
            # strictly between the block's last instruction (or its consumer copies,
            # at -0.5, in a block holding nothing but a branch) and its terminator
            pos = n - 1.125 if pred.terminator is not None else n - 0.125
            c = self._new(pi, pos, res.type)
            c.origin = phi.result
            src = self._source(inc)
            if isinstance(src, _Var):
                self.copy_of[c.id] = src
                self._use(src, pi, pos)
            self.producer.setdefault(pi, []).append((c, src))
            self.stats.producer_copies += 1
            self._add_member(klass, c)
            self.cls[c.id] = klass

    def _candidates(self) -> set[int]:
        """The variables :meth:`coalesce` may try to merge: the members of the classes
        built so far (a tied result with its copy, a phi's web with its copies), the
        ends of copies (ties, phi copies, plain ``mov``) and the values of a register
        defined more than once.  Only these ever meet in an interference test; the
        others (most registers of compiler-generated PTX are written once) need no
        liveness."""
        out: set[int] = set(self.cls)
        add = out.add
        for copies in self.tie.values():
            for t, src in copies:
                add(t.id)
                if isinstance(src, _Var):
                    add(src.id)
        for pc in self.producer.values():
            for c, src in pc:
                add(c.id)
                if isinstance(src, _Var):
                    add(src.id)
        for cc in self.consumer.values():
            for res, web in cc:
                add(res.id)
                add(web.id)
        for _inst, s, d in self.mov_pairs:
            add(s.id)
            add(d.id)
        first: dict[str, int] = {}
        for var in self.vars.values():
            if var.origin is not None and var.name:
                seen = first.setdefault(var.name, var.id)
                if seen != var.id:
                    add(seen)
                    add(var.id)
        return out

    def _liveness(self, candidates: set[int] | None = None) -> None:
        """Live-out sets per block (path exploration from each use, as
        :class:`~ptxopt.ir.ssa_liveness.SsaLiveness`) and the last use per block, of
        ``candidates`` (default: every variable)."""
        blocks = self.func.blocks
        n = len(blocks)
        preds = [[p.index for p in b.preds] for b in blocks]
        live_in: list[set[int]] = [set() for _ in range(n)]
        live_out: list[set[int]] = [set() for _ in range(n)]
        last: dict[tuple[int, int], float] = {}
        variables = self.vars
        for vid, uses in self.uses.items():
            if candidates is not None and vid not in candidates:
                continue
            var = variables[vid]
            db = var.block
            dpos = var.pos
            for b, pos in uses:
                key = (vid, b)
                if last.get(key, _NEG_INF) < pos:
                    last[key] = pos
                if b == db and dpos < pos:
                    continue
                if vid in live_in[b]:
                    continue  # (explored from an earlier use)
                stack = [b]
                while stack:
                    x = stack.pop()
                    li = live_in[x]
                    if vid in li:
                        continue
                    li.add(vid)
                    for pi in preds[x]:
                        live_out[pi].add(vid)
                        if pi != db and vid not in live_in[pi]:
                            stack.append(pi)
        for bi, copies in self.producer.items():
            for c, _src in copies:
                live_out[bi].add(c.id)
        self.live_out = live_out
        self.last = last

    def live_after(self, var: _Var, block: int, pos: float) -> bool:
        return var.id in self.live_out[block] or self.last.get((var.id, block), _NEG_INF) > pos

    def _cleanup(self) -> None:
        """Phase 5: erase the copies of phis whose result nothing reads."""
        for bi in list(self.consumer):
            keep: list[tuple[_Var, _Var]] = []
            for res, web in self.consumer[bi]:
                if res.id in self.uses:
                    keep.append((res, web))
                    continue
                self.stats.erased += 1
                klass = self.cls[web.id]
                for c in klass.members:
                    if c is not web:
                        self._drop_producer(c)
                        del self.vars[c.id]
                        del self.cls[c.id]
                klass.members = [web]
            self.consumer[bi] = keep

    def _drop_producer(self, c: _Var) -> None:
        copies = self.producer.get(c.block, [])
        for k, (dst, src) in enumerate(copies):
            if dst is c:
                del copies[k]
                self.stats.erased += 1
                if isinstance(src, _Var):
                    uses = self.uses.get(src.id, [])
                    if (c.block, c.pos) in uses:
                        uses.remove((c.block, c.pos))
                        if not uses:
                            del self.uses[src.id]
                return

    # -- classes and interference -------------------------------------------------------

    def _make_key(self, v: _Var) -> tuple[int, float, int]:
        pre = self.dom.pre[v.block]
        return (pre if pre >= 0 else 1 << 40 | v.block, v.pos, v.id)

    @staticmethod
    def _key(v: _Var) -> tuple[int, float, int]:
        """Dominance order: dominator-tree preorder of the block, then position."""
        return v.key

    def _singleton(self, v: _Var) -> _Class:
        pinned = v.name if v.name in self.pinned_names else None
        k = _Class(v, pinned)
        self.cls[v.id] = k
        return k

    def _add_member(self, k: _Class, v: _Var) -> None:
        k.members.append(v)
        k.members.sort(key=_KEY)
        k.has_uniform = k.has_uniform or (v.uniform and v.real_use)
        k.has_mixing = k.has_mixing or v.mixing

    def class_of(self, v: _Var) -> _Class:
        k = self.cls.get(v.id)
        return k if k is not None else self._singleton(v)

    def _dominates(self, a: _Var, c: _Var) -> bool:
        if a.block == c.block:
            return a.pos <= c.pos
        return self.dom.dominates(a.block, c.block)

    def interfere(self, x: _Class, y: _Class) -> bool:
        """Do classes ``x`` and ``y`` (each interference-free) interfere?  One walk of
        their members in dominance order with a stack of dominating members."""
        xs, ys = x.members, y.members
        nx, ny = len(xs), len(ys)
        merged: list[tuple[_Var, bool]] = []
        i = j = 0
        while i < nx and j < ny:
            if xs[i].key <= ys[j].key:
                merged.append((xs[i], True))
                i += 1
            else:
                merged.append((ys[j], False))
                j += 1
        merged.extend((v, True) for v in xs[i:])
        merged.extend((v, False) for v in ys[j:])
        pre = self.dom.pre
        dlast = self.dom.last
        live_out = self.live_out
        last = self.last
        stack: list[tuple[_Var, bool]] = []
        # the members of each class on the stack, in stack order (the walk below looks
        # at the other class's only)
        on_x: list[_Var] = []
        on_y: list[_Var] = []
        for c, side in merged:
            cb, cp, cv = c.block, c.pos, c.value
            while stack:  # pop what does not dominate c (as _dominates)
                a, aside = stack[-1]
                ab = a.block
                if ab == cb:
                    if a.pos <= cp:
                        break
                else:
                    pa = pre[ab]
                    pc = pre[cb]
                    if pa >= 0 and pc >= 0 and pa <= pc <= dlast[ab]:
                        break
                stack.pop()
                (on_x if aside else on_y).pop()
            first: _Var | None = None
            lo = live_out[cb]
            for a in reversed(on_y if side else on_x):
                av = a.value
                if a.block == cb and a.pos == cp and av != cv:
                    return True  # written by the same instruction or parallel copy
                if first is None:
                    first = a
                    if av == cv:
                        break
                elif av != first.value:
                    break
                # (live_after(a, cb, cp))
                if av != cv and (a.id in lo or last.get((a.id, cb), _NEG_INF) > cp):
                    return True
            stack.append((c, side))
            (on_x if side else on_y).append(c)
        return False

    def try_merge(self, a: _Var, b: _Var, simt: bool = True) -> bool:
        x = self.class_of(a)
        y = self.class_of(b)
        if x is y:
            return True
        if x.type != y.type or (x.pinned and y.pinned and x.pinned != y.pinned):
            return False
        if (
            simt
            and self.divergence_aware
            and ((x.has_uniform and y.has_mixing) or (y.has_uniform and x.has_mixing))
        ):
            self.stats.divergence_blocked += 1
            if self._saying(2):
                self._say(2, f"  keep apart (divergence): {self._show(a)} / {self._show(b)}")
            return False
        if self.interfere(x, y):
            self.stats.interference += 1
            if self._saying(2):
                self._say(2, f"  keep apart (interference): {self._show(a)} / {self._show(b)}")
            return False
        if len(x.members) < len(y.members):
            x, y = y, x
        x.members = sorted(x.members + y.members, key=_KEY)
        x.has_uniform = x.has_uniform or y.has_uniform
        x.has_mixing = x.has_mixing or y.has_mixing
        x.pinned = x.pinned or y.pinned
        for m in y.members:
            self.cls[m.id] = x
        self.stats.coalesced += 1
        if self._saying(2):
            self._say(2, f"  coalesce {self._show(a)} with {self._show(b)}")
        return True

    def coalesce(self) -> None:
        reach = self.dom.reachable
        depth = self.depth.depth_of
        # ties first: the instruction form wants them in one register
        for copies in self.tie.values():
            for t, src in copies:
                if isinstance(src, _Var) and reach(src.block):
                    self.try_merge(t, src, simt=False)
        if self.level >= LEVEL_SIMT:
            aff: list[tuple[int, int, _Var, _Var | str]] = []
            for bi, pc in self.producer.items():
                for c, src in pc:
                    if isinstance(src, _Var) and reach(src.block):
                        aff.append((-depth(bi), len(aff), c, src))
            for bi, cc in self.consumer.items():
                for res, web in cc:
                    aff.append((-depth(bi), len(aff), res, web))
            aff.sort(key=lambda t: (t[0], t[1]))
            for _d, _k, a, b in aff:
                if isinstance(b, _Var):
                    self.try_merge(a, b)
        if self.level >= LEVEL_MOVS:
            for _inst, s, d in sorted(self.mov_pairs, key=lambda t: -depth(t[2].block)):
                if reach(s.block) and reach(d.block):
                    self.try_merge(s, d)
        # values of one source register: keep the input's names where possible
        by_name: dict[str, list[_Var]] = {}
        for var in self.vars.values():
            if var.origin is not None and var.name and reach(var.block):
                by_name.setdefault(var.name, []).append(var)
        for group in by_name.values():
            if len(group) < 2:
                continue
            group.sort(key=_KEY)
            for v in group[1:]:
                self.try_merge(group[0], v)

    # -- the result -----------------------------------------------------------------------

    def assignment(self) -> Assignment:
        from ptxopt.ir.out_of_ssa import _Namer

        asg = Assignment({})
        namer = _Namer(self.func, asg)
        names: dict[int, str] = {}  # id(class) -> register
        single: dict[int, str] = {}  # var id -> register, for variables never merged
        taken: set[str] = set()
        classes: dict[int, _Class] = {}
        loose: list[_Var] = []
        for var in self.vars.values():
            k = self.cls.get(var.id)
            if k is None:
                loose.append(var)
            else:
                classes.setdefault(id(k), k)
        key = self._key
        order: list[tuple[tuple[int, float, int], _Class | _Var]] = [
            (key(k.members[0]), k) for k in classes.values()
        ]
        order.extend((key(v), v) for v in loose)
        order.sort(key=lambda t: t[0])
        pinned = self.pinned_names
        for _k, item in order:
            if isinstance(item, _Class):
                if item.pinned:
                    names[id(item)] = item.pinned
                    taken.add(item.pinned)
            elif item.name in pinned:
                single[item.id] = item.name
                taken.add(item.name)
        for _k, item in order:
            members = item.members if isinstance(item, _Class) else [item]
            if isinstance(item, _Class):
                if id(item) in names:
                    continue
            elif item.id in single:
                continue
            choice = None
            for m in members:
                if m.name and m.name not in taken and m.origin is not None:
                    if m.name in pinned:
                        continue
                    choice = m.name
                    break
            if choice is None:
                base = next((m.name for m in members if m.name), "")
                if base:
                    choice = namer.fresh(base, members[0].type)
                else:
                    while True:
                        self.pcp_count += 1
                        choice = f"%pcp{self.pcp_count}"
                        if choice not in namer.taken:
                            break
                    namer.taken.add(choice)
                    asg.new_regs[choice] = members[0].type
            taken.add(choice)
            if isinstance(item, _Class):
                names[id(item)] = choice
            else:
                single[item.id] = choice

        def reg(v: _Var | str) -> str:
            if isinstance(v, str):
                return v
            k = self.cls.get(v.id)
            return names[id(k)] if k is not None else single[v.id]

        for vid, var in self.vars.items():
            if vid < self.func.next_id:
                asg.reg[vid] = reg(var)
        left = 0

        def source(v: _Var | str, dst: str) -> str | Imm:
            """A copy's source; a constant is written again rather than copied,
            unless coalescing already put it in the destination's register."""
            r = reg(v)
            imm = _rematerializable(v) if r != dst else None
            return imm if imm is not None else r

        for bi, pc in self.producer.items():
            copies = _dedupe([(reg(c), source(s, reg(c)), c.type) for c, s in pc])
            if copies:
                asg.block_copies[bi] = copies
                left += len(copies)
        for bi, cc in self.consumer.items():
            copies = _dedupe([(reg(r), reg(w), r.type) for r, w in cc])
            if copies:
                asg.start_copies[bi] = copies
                left += len(copies)
        for iid, tc in self.tie.items():
            copies = _dedupe([(reg(t), source(s, reg(t)), t.type) for t, s in tc])
            if copies:
                asg.tie_copies[iid] = copies
                left += len(copies)
        for pi, phi, inc in self.dead_edge:
            web = self.producer_web(phi)
            if web is None:
                continue
            dst = reg(web)
            src = inc.var if inc.kind == "special" else asg.reg.get(inc.id, inc.var)
            if src != dst:
                asg.block_copies.setdefault(pi, []).append((dst, src, phi.result.type))
        for inst, s, d in self.mov_pairs:
            if reg(s) == reg(d) and inst.slot_names[0] != inst.slot_names[1]:
                asg.drop.add(id(inst))
                self.stats.movs_deleted += 1
        self.stats.copies_left = left
        return asg

    def producer_web(self, phi: Phi) -> _Var | None:
        res = self.vars[phi.result.id]
        for r, w in self.consumer.get(phi.block.index, []):
            if r is res:
                return w
        return None

    # -- diagnostics ---------------------------------------------------------------------

    def _saying(self, level: int) -> bool:
        """Is a line of ``level`` printed?  (Test before building it.)"""
        return self.log is not None and self.verbosity >= level

    def _say(self, level: int, text: str) -> None:
        if self.log is not None and self.verbosity >= level:
            self.log(text)

    def _show(self, v: _Var) -> str:
        if v.origin is not None and v.id < self.func.next_id:
            return f"{v.name}.{v.id}"
        return f"%pcp{v.id - self.func.next_id}"

    def dump(self) -> str:
        """The conventional-SSA form: copies named ``%pcpN``, where they sit."""
        lines = [f"*** conventional SSA of {self.func.name} ***"]
        show = self._show
        for b in self.func.blocks:
            label = b.labels[0] if b.labels else f"block{b.index}"
            lines.append(f"{label}:")
            for phi in b.phis:
                web = self.producer_web(phi)
                if web is None:
                    continue
                ops = []
                for c in self.class_of(web).members:
                    if c is not web and c.origin is phi.result and c.pos > -0.5:
                        if c.block != b.index or c.pos != -1.0:
                            ops.append(f"[{show(c)}, block{c.block}]")
                lines.append(f"\t{show(web)} = phi {', '.join(ops)}")
            for res, web in self.consumer.get(b.index, []):
                lines.append(f"\t{show(res)} = pcp {show(web)}")
            lines.append(f"\t... {len(b.insts)} instructions")
            for c, src in self.producer.get(b.index, []):
                s = src if isinstance(src, str) else show(src)
                lines.append(f"\t{show(c)} = pcp {s}")
        return "\n".join(lines)


def _rematerializable(v: _Var | str) -> Imm | None:
    """The immediate a copy may write instead of reading ``v``: ``v`` is the result of
    an unguarded ``mov`` of an integer or hex-float literal (a constant that copy
    propagation or commoning shared between registers).  Writing the literal keeps
    the copy from being a register-to-register move and from reading ``v``."""
    if isinstance(v, str) or v.origin is None or v.origin.kind != "inst":
        return None
    inst = v.origin.inst
    if not isinstance(inst, Inst) or inst.opcode != "mov" or inst.pred is not None:
        return None
    if len(inst.defs) != 1 or inst.olds is not None or v.type == ".pred":
        return None
    ops = inst.ast.operands
    if len(ops) != 2 or not isinstance(ops[1], Imm):
        return None
    imm = ops[1]
    if imm.kind == "int" or imm.text[:2].lower() in ("0f", "0d"):
        return imm
    return None


def _real_operands(inst: Inst) -> list[Value]:
    out: list[Value] = []
    if inst.pred is not None:
        out.append(inst.pred)
    for u in inst.uses:
        if isinstance(u, Value):
            out.append(u)
    if inst.carry_in is not None:
        out.append(inst.carry_in)
    return out


def _dedupe(copies: list[Copy]) -> list[Copy]:
    out: list[Copy] = []
    seen: set[str] = set()
    for dst, src, t in copies:
        if dst == src or dst in seen:
            continue
        seen.add(dst)
        out.append((dst, src, t))
    return out


@dataclass
class CssaOptions:
    """The knobs of leaving SSA (spec 05)."""

    enabled: bool = True  # do-cssa: off is the legacy way
    level: int = LEVEL_THREAD  # cssa-coalesce
    verbosity: int = 0  # cssa-verbosity
    dump_before: bool = False  # dump-before-cssa
    divergence_aware: bool | None = None  # None: only at level 1
    log: Callable[[str], None] | None = None
    stats: list[tuple[str, CssaStats]] = field(default_factory=list)

    @classmethod
    def from_knobs(
        cls, knobs: dict[str, object] | None, log: Callable[[str], None] | None = None
    ) -> CssaOptions:
        k = knobs or {}
        return cls(
            enabled=bool(k.get("do-cssa", True)),
            level=int(k.get("cssa-coalesce", LEVEL_THREAD)),  # type: ignore[call-overload]
            verbosity=int(k.get("cssa-verbosity", 0)),  # type: ignore[call-overload]
            dump_before=bool(k.get("dump-before-cssa", False)),
            log=log,
        )

    def emit(self, text: str) -> None:
        if self.log is not None:
            self.log(text)
        else:
            print(text, file=sys.stderr)


def destructor_for(mod: IRModule, opts: CssaOptions) -> Callable[[Func], Assignment]:
    """The SSA-destruction function :func:`ptxopt.ir.lower.print_ir_module` should use."""
    if not opts.enabled:
        return destruct
    if opts.dump_before:
        from ptxopt.ir.dump import dump_module

        opts.emit("IR Module before CSSA:\n" + dump_module(mod))
    aware = opts.divergence_aware
    if aware is None:
        aware = opts.level == LEVEL_SIMT
    simt: SimtFacts | None = None
    if aware:
        simt = SimtFacts.of_module(mod)

    def run(func: Func) -> Assignment:
        c = Cssa(
            func,
            level=opts.level,
            simt=simt,
            divergence_aware=aware,
            log=opts.emit,
            verbosity=opts.verbosity,
        )
        c.build()
        if opts.verbosity >= 3:
            opts.emit(c.dump())
        c.coalesce()
        out = c.assignment()
        opts.stats.append((func.name, c.stats))
        if opts.verbosity >= 1:
            opts.emit(c.stats.line(func.name))
        return out

    return run


class SimtFacts:
    """What the divergence analysis says about the values of a module: warp-uniform
    values, and phis that merge lanes split at a divergent branch (spec 01's sync
    dependence: a join before the post-dominator, a loop left in different
    iterations, an irreducible cycle)."""

    _MIXING = frozenset({"join", "loop", "irreducible"})

    def __init__(self, by_value: dict[int, object]) -> None:
        self.by_value = by_value  # id(value) -> its function's Divergence

    @classmethod
    def of_module(cls, mod: IRModule) -> SimtFacts:
        from ptxopt.analysis.divergence import analyze_module

        md = analyze_module(mod)
        by_value: dict[int, object] = {}
        for f in mod.funcs:
            d = md.funcs.get(f.name)
            if d is None:
                continue
            for v in f.values():
                by_value[id(v)] = d
            for u in f.undefs.values():
                by_value[id(u)] = d
        return cls(by_value)

    def uniform(self, v: Value) -> bool:
        d = self.by_value.get(id(v))
        return d is not None and d.is_uniform(v)  # type: ignore[attr-defined]

    def mixing(self, v: Value) -> bool:
        if v.kind != "phi":
            return False
        d = self.by_value.get(id(v))
        if d is None:
            return True
        r = d.reason(v)  # type: ignore[attr-defined]
        return r is not None and r[0] in self._MIXING


def destruct_cssa(
    func: Func,
    *,
    level: int = LEVEL_THREAD,
    simt: SimtFacts | None = None,
    divergence_aware: bool = True,
) -> Assignment:
    """Leave SSA for one function (library entry for tests and benchmarks)."""
    c = Cssa(func, level=level, simt=simt, divergence_aware=divergence_aware)
    c.build()
    c.coalesce()
    return c.assignment()
