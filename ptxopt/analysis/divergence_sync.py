"""Sync dependence: where the lanes split by one divergent branch meet again.

Used by the varying propagation (spec 01: "Phi over a divergent merge -> always varying").
For a divergent terminator in block ``B`` with immediate post-dominator ``P`` (over a CFG
whose virtual exit also collects predicated ``ret``/``exit`` of ``.func`` bodies):

1. **Joins** (label propagation, as in Karrenberg & Hack, "Whole-function vectorization",
   CGO 2011, and LLVM's ``SyncDependenceAnalysis``): each successor of ``B`` starts its own
   label; labels flow forward through the *divergent region* (blocks reachable from ``B``
   without passing ``P``) in reverse-postorder priority; a block reached by two different
   labels is a join and starts a label of its own.  ``P`` is a join when two labels reach
   it.  Arms that are chains of any length, nested regions and loop exits are all covered,
   and joins that are not ``P`` (hidden divergence) are found too.
2. **Desynchronised loops** (temporal divergence): when a loop containing ``B`` has its
   header inside the region, lanes leave ``B``'s region after different numbers of trips
   round that loop; the loop's header phis are varying (they hold per-lane trip-dependent
   values at ``P`` and after the loop).  For an irreducible cycle containing ``B`` whose
   entry lies in the region, every phi of the cycle is varying (conservative).
3. **Repeated executions**: a block of the region may run once per lane group; a result
   that is not a function of its operands alone (a load, a vote, a clock read) computed in
   the region and used outside it is varying (:attr:`DivergentRegion.blocks` lets the
   propagator apply this).

Cost: O(size of the region) per divergent branch (a heap keyed by RPO number), so
O(n x nesting depth) overall.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from ptxopt.analysis.loops import LoopForest
from ptxopt.analysis.postdominators import PostDomTree
from ptxopt.analysis.rpo import reverse_postorder, rpo_numbers


@dataclass(slots=True)
class DivergentRegion:
    """What one divergent branch at ``branch`` implies (block indices)."""

    branch: int
    ipdom: int  # may be the virtual exit (== CfgContext.exit)
    joins: list[int]  # blocks whose phis merge lanes split at the branch (P included)
    desync_headers: list[int]  # headers of loops desynchronised by the branch
    irreducible_blocks: list[int]  # blocks of irreducible cycles desynchronised by it
    blocks: list[int]  # the region itself (P excluded), in visiting order


class CfgContext:
    """Structural facts about one function's CFG that the propagation needs.

    Nodes ``0 .. n-1`` are blocks; node ``n`` (:attr:`ret_node`) is an extra sink that
    blocks ending in a *predicated* ``ret``/``exit``/``trap`` of a ``.func`` also reach (the
    lanes that return there merge their results with the others at the virtual exit);
    :attr:`exit` (``n + 1``) is the post-dominator tree's virtual exit.
    """

    def __init__(self, succs: list[list[int]], cond_ret: list[bool]) -> None:
        n = len(succs)
        self.n = n
        self.ret_node = n
        aug = [list(s) for s in succs]
        for b, flag in enumerate(cond_ret):
            if flag:
                aug[b].append(n)
        aug.append([])
        self.succs = aug
        self.pdt = PostDomTree.build(aug, 0)
        self.exit = self.pdt.exit
        self.ipdom = self.pdt.ipdom
        self.loops = LoopForest.build(aug, 0)
        rpo = reverse_postorder(aug, 0)
        num = rpo_numbers(rpo, n + 1)
        # Unreachable blocks sort after every reachable one, in index order.
        self.order = [num[b] if num[b] >= 0 else n + 1 + b for b in range(n + 1)]
        self.irr_of: dict[int, list[int]] = {}
        for i, r in enumerate(self.loops.irreducible):
            for b in r.blocks:
                self.irr_of.setdefault(b, []).append(i)
        self._stamp = [0] * (n + 2)
        self._label = [-1] * (n + 2)
        self._cur = 0

    @property
    def irreducible(self) -> bool:
        return not self.loops.is_reducible

    def in_last_region(self, b: int) -> bool:
        """Was block ``b`` part of the region computed by the latest :meth:`region` call?
        (The return sink and the virtual exit never are.)"""
        return b < self.n and self._stamp[b] == self._cur

    def region(self, b: int) -> DivergentRegion:
        """Joins, desynchronised loops and blocks of a divergent branch in block ``b``."""
        self._cur += 1
        cur = self._cur
        stamp = self._stamp
        label = self._label
        order = self.order
        succs = self.succs
        p = self.ipdom[b]
        joins: list[int] = []
        blocks: list[int] = []
        p_label = -1
        p_join = False
        heap: list[tuple[int, int]] = []

        def reach(y: int, lab: int) -> None:
            nonlocal p_label, p_join
            if y == p:
                if p_label < 0:
                    p_label = lab
                elif p_label != lab:
                    p_join = True
                return
            if stamp[y] != cur:
                stamp[y] = cur
                label[y] = lab
                blocks.append(y)
                heapq.heappush(heap, (order[y], y))
            else:
                ly = label[y]
                if ly != lab and ly != y:
                    label[y] = y
                    joins.append(y)
                    heapq.heappush(heap, (order[y], y))

        for s in succs[b]:
            reach(s, s)
        while heap:
            _, x = heapq.heappop(heap)
            lx = label[x]
            for y in succs[x]:
                reach(y, lx)
        if p_join and p < self.n:
            joins.append(p)

        desync: list[int] = []
        lf = self.loops
        lp = lf.loop_of[b] if b < len(lf.loop_of) else -1
        while lp >= 0:
            h = lf.loops[lp].header
            if stamp[h] == cur:
                desync.append(h)
            lp = lf.loops[lp].parent
        irr: list[int] = []
        for ri in self.irr_of.get(b, ()):
            r = lf.irreducible[ri]
            if any(stamp[e] == cur for e in r.entries):
                irr.extend(r.blocks)
        joins = [j for j in joins if j < self.n]
        blocks = [x for x in blocks if x < self.n]
        return DivergentRegion(b, p, joins, desync, irr, blocks)
