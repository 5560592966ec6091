"""Loop forest: natural loops with nesting, plus detection of irreducible cycles.

Natural loops (Aho, Lam, Sethi, Ullman, *Compilers* 2nd ed., section 9.6.6): a back edge is an
edge ``u -> h`` where ``h`` dominates ``u``; the loop of header ``h`` is ``h`` plus every node
that reaches one of its latches without passing through ``h``; loops sharing a header are
merged.  The forest is built bottom-up the way LLVM's ``LoopInfoBase::analyze`` does it:
headers are processed in decreasing RPO number (an inner header is dominated by, hence numbered
after, every outer one), and the backward walk from the latches jumps over already-discovered
inner loops through a union-find on loops (path compression), attaching each as a child of the
loop being built.  Every node is claimed once, so this is near-linear.

Irreducibility: a CFG is reducible iff removing its back edges leaves an acyclic graph (Hecht
and Ullman, 1974).  The remaining cycles are found as the non-trivial strongly connected
components (Tarjan, ``scc.py``) of the reachable subgraph without back edges; each is reported
as an :class:`IrreducibleRegion` with its entry nodes (members with a predecessor outside the
region, or the CFG entry).  Such cycles are not loops of the forest (no header dominates them):
passes that need loop structure must treat them conservatively.

Only nodes reachable from the entry take part; unreachable nodes have ``loop_of == -1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.graph import Graph, Succs, preds_of
from ptxopt.analysis.scc import tarjan_scc

if TYPE_CHECKING:
    from ptxopt.analysis.manager import AnalysisManager


@dataclass(slots=True)
class Loop:
    """One natural loop.  Block and latch lists are in RPO order (the header first);
    ``depth`` is 1 for an outermost loop; ``parent`` is ``-1`` for an outermost loop."""

    index: int
    header: int
    parent: int
    children: list[int]
    depth: int
    blocks: list[int]
    latches: list[int]
    exit_edges: list[tuple[int, int]]
    exiting: list[int]
    exits: list[int]


@dataclass(frozen=True, slots=True)
class IrreducibleRegion:
    """A cycle no single dominating header controls: its ``entries`` (sorted by RPO),
    its ``blocks`` (RPO order) and the innermost natural ``loop`` containing it (or ``-1``)."""

    entries: list[int]
    blocks: list[int]
    loop: int


@dataclass(slots=True)
class LoopForest:
    """Natural loops numbered in header-RPO order (a parent before its children).

    ``loop_of[b]``: innermost loop containing ``b`` (``-1`` if none); ``top_level``: outermost
    loops; ``irreducible``: irreducible cycles; ``is_reducible``: no irreducible cycle exists.
    """

    loops: list[Loop]
    loop_of: list[int]
    top_level: list[int]
    irreducible: list[IrreducibleRegion]
    is_reducible: bool
    _pre: list[int]
    _last: list[int]

    @classmethod
    def build(
        cls,
        succs: Succs,
        entry: int = 0,
        preds: Sequence[Sequence[int]] | None = None,
        domtree: DomTree | None = None,
    ) -> LoopForest:
        if preds is None:
            preds = preds_of(succs)
        dt = domtree if domtree is not None else DomTree.build(succs, entry, preds)
        return _build_forest(succs, preds, dt)

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> LoopForest:
        """Analysis-manager entry point (uses the cached :class:`Graph` and :class:`DomTree`)."""
        g = am.get(Graph, fn)
        return cls.build(g.succs, g.entry, g.preds, am.get(DomTree, fn))

    def contains(self, loop: int, b: int) -> bool:
        """Loop ``loop`` contains block ``b`` (directly or in a nested loop).  O(1)."""
        lb = self.loop_of[b]
        return lb >= 0 and self._pre[loop] <= self._pre[lb] <= self._last[loop]

    def loop_contains_loop(self, outer: int, inner: int) -> bool:
        """``inner`` is ``outer`` or nested in it."""
        return self._pre[outer] <= self._pre[inner] <= self._last[outer]

    def depth_of(self, b: int) -> int:
        """Loop nesting depth of block ``b`` (0 outside every loop)."""
        lb = self.loop_of[b]
        return 0 if lb < 0 else self.loops[lb].depth

    def is_header(self, b: int) -> bool:
        lb = self.loop_of[b]
        return lb >= 0 and self.loops[lb].header == b

    def in_irreducible(self) -> list[bool]:
        """Per node: does it belong to an irreducible region?"""
        out = [False] * len(self.loop_of)
        for r in self.irreducible:
            for b in r.blocks:
                out[b] = True
        return out


def _build_forest(succs: Succs, preds: Sequence[Sequence[int]], dt: DomTree) -> LoopForest:
    n = len(succs)
    rpo = dt.rpo
    rpo_num = dt.rpo_num
    pre = dt.pre
    last = dt.last

    # Back edges u -> h (h dominates u), latches per header.
    latches: list[list[int]] = [[] for _ in range(n)]
    headers: list[int] = []
    for u in rpo:
        pu = pre[u]
        for h in succs[u]:
            if pre[h] <= pu <= last[h]:
                lh = latches[h]
                if not lh:
                    headers.append(h)
                if not lh or lh[-1] != u:  # parallel edges u -> h are adjacent here
                    lh.append(u)
    headers.sort(key=rpo_num.__getitem__, reverse=True)

    # Bottom-up discovery with a union-find over loops.
    loop_of = [-1] * n
    hdr: list[int] = []
    parent: list[int] = []
    uf: list[int] = []
    for h in headers:
        cur = len(hdr)
        hdr.append(h)
        parent.append(-1)
        uf.append(cur)
        loop_of[h] = cur
        work = [u for u in latches[h] if u != h]
        while work:
            x = work.pop()
            lx = loop_of[x]
            if lx < 0:
                loop_of[x] = cur
                for p in preds[x]:
                    if rpo_num[p] >= 0:
                        work.append(p)
                continue
            r = lx
            while uf[r] != r:
                r = uf[r]
            while uf[lx] != r:  # path compression
                nxt = uf[lx]
                uf[lx] = r
                lx = nxt
            if r == cur:
                continue
            uf[r] = cur
            parent[r] = cur
            for p in preds[hdr[r]]:
                if rpo_num[p] >= 0:
                    work.append(p)

    # Renumber loops in header-RPO order (reverse of discovery order).
    k = len(hdr)
    for b in range(n):
        if loop_of[b] >= 0:
            loop_of[b] = k - 1 - loop_of[b]
    hdr.reverse()
    parent = [(-1 if p < 0 else k - 1 - p) for p in reversed(parent)]
    depth = [0] * k
    children: list[list[int]] = [[] for _ in range(k)]
    top_level: list[int] = []
    for i in range(k):
        p = parent[i]
        if p < 0:
            depth[i] = 1
            top_level.append(i)
        else:
            depth[i] = depth[p] + 1
            children[p].append(i)

    # Pre-order numbering of the loop forest for O(1) containment.
    lpre = [0] * k
    llast = [0] * k
    order: list[int] = []
    stack = list(reversed(top_level))
    while stack:
        i = stack.pop()
        lpre[i] = len(order)
        order.append(i)
        stack.extend(reversed(children[i]))
    for j in range(len(order) - 1, -1, -1):
        i = order[j]
        if llast[i] < j:
            llast[i] = j
        p = parent[i]
        if p >= 0 and llast[p] < llast[i]:
            llast[p] = llast[i]

    blocks: list[list[int]] = [[] for _ in range(k)]
    for b in rpo:
        lb = loop_of[b]
        while lb >= 0:
            blocks[lb].append(b)
            lb = parent[lb]

    loops: list[Loop] = []
    for i in range(k):
        exit_edges: list[tuple[int, int]] = []
        exiting: list[int] = []
        exit_set: dict[int, None] = {}
        pi = lpre[i]
        li = llast[i]
        for u in blocks[i]:
            leaves = False
            for v in succs[u]:
                lv = loop_of[v]
                if lv < 0 or not pi <= lpre[lv] <= li:
                    exit_edges.append((u, v))
                    exit_set[v] = None
                    leaves = True
            if leaves:
                exiting.append(u)
        h = hdr[i]
        loops.append(
            Loop(
                index=i,
                header=h,
                parent=parent[i],
                children=children[i],
                depth=depth[i],
                blocks=blocks[i],
                latches=sorted(latches[h], key=rpo_num.__getitem__),
                exit_edges=exit_edges,
                exiting=exiting,
                exits=sorted(exit_set, key=rpo_num.__getitem__),
            )
        )

    irreducible = _irreducible_regions(succs, preds, dt, loop_of, parent, depth)
    return LoopForest(loops, loop_of, top_level, irreducible, not irreducible, lpre, llast)


def _irreducible_regions(
    succs: Succs,
    preds: Sequence[Sequence[int]],
    dt: DomTree,
    loop_of: list[int],
    parent: list[int],
    depth: list[int],
) -> list[IrreducibleRegion]:
    n = len(succs)
    pre = dt.pre
    last = dt.last
    rpo_num = dt.rpo_num
    # Forward (non-back) edges of the reachable subgraph.  Cheap exit: if DFS found no
    # retreating edge that is not a back edge, the graph is reducible -- but the SCC pass is
    # linear anyway, so run it unconditionally.
    fwd: list[list[int]] = [[] for _ in range(n)]
    for u in dt.rpo:
        pu = pre[u]
        fwd[u] = [v for v in succs[u] if not pre[v] <= pu <= last[v]]
    scc = tarjan_scc(fwd, [dt.entry])
    regions: list[IrreducibleRegion] = []
    comp_of = scc.comp_of
    for c, comp in enumerate(scc.components):
        if len(comp) < 2:
            continue  # self loops are always back edges, so singletons are acyclic here
        comp.sort(key=rpo_num.__getitem__)
        entries = []
        for b in comp:
            if b == dt.entry or any(rpo_num[p] >= 0 and comp_of[p] != c for p in preds[b]):
                entries.append(b)
        # Innermost natural loop containing every block.
        lca = loop_of[comp[0]]
        for b in comp[1:]:
            if lca < 0:
                break
            lb = loop_of[b]
            if lb < 0:
                lca = -1
                break
            while depth[lb] > depth[lca]:
                lb = parent[lb]
            while depth[lca] > depth[lb]:
                lca = parent[lca]
            while lb != lca:
                lb = parent[lb]
                lca = parent[lca]
        regions.append(IrreducibleRegion(entries, comp, lca))
    regions.sort(key=lambda r: rpo_num[r.blocks[0]])
    return regions
