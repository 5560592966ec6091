"""Dominator tree, dominance frontiers and iterated dominance frontiers.

Immediate dominators by Cooper, Harvey and Kennedy, "A Simple, Fast Dominance Algorithm"
(Software Practice & Experience, 2001): iterate ``idom(b) = intersect(processed preds of b)``
over the reachable nodes in reverse postorder until nothing changes, where ``intersect`` walks
two fingers up the tree comparing RPO numbers.  The whole iteration runs on RPO numbers, so
"higher in the tree" is simply "smaller integer".

Dominance frontiers by the same paper's runner formulation (equivalent to Cytron, Ferrante,
Rosen, Wegman and Zadeck, TOPLAS 1991): for every predecessor ``p`` of ``b``, walk from ``p`` up
to ``idom(b)`` (exclusive) adding ``b`` to each frontier passed.  The entry is treated as having
an implicit predecessor outside the graph (its walk runs to the root), so a back edge into the
entry puts the entry into its own frontier, exactly as the definition
``DF(x) = {y | x dominates a predecessor of y and x does not strictly dominate y}`` says.
Iterated dominance frontiers (Cytron et al.'s phi placement) by the usual worklist over DF.

Conventions: ``idom[entry] == entry``; nodes unreachable from the entry have ``idom == -1``,
``depth == -1``, dominate nothing and are dominated by nothing, have empty frontiers and are
ignored when they appear as predecessors.  ``dominates(a, b)`` is O(1) through pre-order
numbers of the dominator tree (``a`` dominates ``b`` iff ``pre[a] <= pre[b] <= last[a]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ptxopt.analysis.graph import Graph, Succs, check_graph, preds_of
from ptxopt.analysis.rpo import reverse_postorder, rpo_numbers
from ptxopt.record import Node

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from ptxopt.analysis.manager import AnalysisManager


def immediate_dominators(
    succs: Succs, entry: int = 0, preds: Sequence[Sequence[int]] | None = None
) -> tuple[list[int], list[int]]:
    """Return ``(idom, rpo)``: the immediate dominator of every node (``idom[entry] == entry``,
    ``-1`` when unreachable) and the reverse postorder that was used."""
    if preds is None:
        preds = preds_of(succs)
    n = len(succs)
    rpo = reverse_postorder(succs, entry)
    num = rpo_numbers(rpo, n)
    # Predecessors in RPO-number space; unreachable predecessors are dropped.
    rpreds: list[list[int]] = []
    for u in rpo:
        rp = []
        for p in preds[u]:
            q = num[p]
            if q >= 0:
                rp.append(q)
        rpreds.append(rp)
    m = len(rpo)
    dom = [-1] * m
    dom[0] = 0
    changed = True
    while changed:
        changed = False
        for b in range(1, m):
            new = -1
            for p in rpreds[b]:
                if dom[p] < 0:
                    continue
                if new < 0:
                    new = p
                    continue
                a = p
                c = new
                while a != c:
                    while a > c:
                        a = dom[a]
                    while c > a:
                        c = dom[c]
                new = a
            if dom[b] != new:
                dom[b] = new
                changed = True
    idom = [-1] * n
    for b in range(m):
        idom[rpo[b]] = rpo[dom[b]]
    return idom, rpo


# what equality looks at (repr: without preds)
_COMPARED = (
    "entry",
    "idom",
    "children",
    "depth",
    "preorder",
    "pre",
    "last",
    "rpo",
    "rpo_num",
    "preds",
)


class DomTree(Node):
    """Dominator tree of a CFG (see the module docstring for conventions).

    ``idom[b]``: immediate dominator; ``children[b]``: dominator-tree children in RPO order;
    ``depth[b]``: tree depth (entry 0); ``preorder``: reachable nodes in tree pre-order;
    ``pre[b]``/``last[b]``: pre-order number of ``b`` and of its last descendant;
    ``rpo``/``rpo_num``: the CFG reverse postorder used to build the tree.
    """

    __slots__ = (*_COMPARED, "_frontiers")

    def __init__(
        self,
        entry: int,
        idom: list[int],
        children: list[list[int]],
        depth: list[int],
        preorder: list[int],
        pre: list[int],
        last: list[int],
        rpo: list[int],
        rpo_num: list[int],
        preds: Sequence[Sequence[int]],
        _frontiers: list[list[int]] | None = None,
    ) -> None:
        self.entry = entry
        self.idom = idom
        self.children = children
        self.depth = depth
        self.preorder = preorder
        self.pre = pre
        self.last = last
        self.rpo = rpo
        self.rpo_num = rpo_num
        self.preds = preds
        self._frontiers = _frontiers

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in _COMPARED)

    __hash__ = None  # type: ignore[assignment]  # mutable: as a dataclass, unhashable

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in _COMPARED[:-1])
        return f"DomTree({fields})"

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        succs: Succs,
        entry: int = 0,
        preds: Sequence[Sequence[int]] | None = None,
        *,
        check: bool = False,
    ) -> DomTree:
        if check:
            check_graph(succs, entry)
        if preds is None:
            preds = preds_of(succs)
        idom, rpo = immediate_dominators(succs, entry, preds)
        n = len(succs)
        children: list[list[int]] = [[] for _ in range(n)]
        for b in rpo:
            if b != entry:
                children[idom[b]].append(b)
        depth = [-1] * n
        pre = [-1] * n
        last = [-1] * n
        preorder: list[int] = []
        depth[entry] = 0
        stack = [entry]
        while stack:
            u = stack.pop()
            pre[u] = len(preorder)
            preorder.append(u)
            ch = children[u]
            du = depth[u] + 1
            for i in range(len(ch) - 1, -1, -1):
                c = ch[i]
                depth[c] = du
                stack.append(c)
        for i in range(len(preorder) - 1, -1, -1):
            u = preorder[i]
            if last[u] < i:
                last[u] = i
            if u != entry:
                p = idom[u]
                if last[p] < last[u]:
                    last[p] = last[u]
        return cls(
            entry, idom, children, depth, preorder, pre, last, rpo, rpo_numbers(rpo, n), preds
        )

    @classmethod
    def from_graph(cls, g: Graph) -> DomTree:
        return cls.build(g.succs, g.entry, g.preds)

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> DomTree:
        """Analysis-manager entry point (``fn`` must provide its :class:`Graph`)."""
        return cls.from_graph(am.get(Graph, fn))

    # -- queries ----------------------------------------------------------------------------

    @property
    def num_nodes(self) -> int:
        return len(self.idom)

    def reachable(self, b: int) -> bool:
        return self.pre[b] >= 0

    def parent(self, b: int) -> int:
        """Immediate dominator, or ``-1`` for the entry and unreachable nodes."""
        return -1 if b == self.entry else self.idom[b]

    def dominates(self, a: int, b: int) -> bool:
        """``a`` dominates ``b`` (reflexive).  False when either is unreachable."""
        pa = self.pre[a]
        pb = self.pre[b]
        return pa >= 0 and pb >= 0 and pa <= pb <= self.last[a]

    def strictly_dominates(self, a: int, b: int) -> bool:
        return a != b and self.dominates(a, b)

    def nearest_common_dominator(self, a: int, b: int) -> int:
        """Deepest node dominating both ``a`` and ``b``; ``-1`` if either is unreachable."""
        depth = self.depth
        if depth[a] < 0 or depth[b] < 0:
            return -1
        idom = self.idom
        while depth[a] > depth[b]:
            a = idom[a]
        while depth[b] > depth[a]:
            b = idom[b]
        while a != b:
            a = idom[a]
            b = idom[b]
        return a

    def subtree(self, a: int) -> list[int]:
        """Nodes dominated by ``a`` (``a`` first), in dominator-tree pre-order."""
        if self.pre[a] < 0:
            return []
        return self.preorder[self.pre[a] : self.last[a] + 1]

    def dominators_of(self, b: int) -> list[int]:
        """All dominators of ``b`` from ``b`` up to the entry (empty when unreachable)."""
        if self.pre[b] < 0:
            return []
        out = [b]
        while b != self.entry:
            b = self.idom[b]
            out.append(b)
        return out

    # -- frontiers --------------------------------------------------------------------------

    @property
    def frontiers(self) -> list[list[int]]:
        """``frontiers[x]``: the dominance frontier of ``x``, in RPO order (computed once)."""
        if self._frontiers is None:
            self._frontiers = self._compute_frontiers()
        return self._frontiers

    def _compute_frontiers(self) -> list[list[int]]:
        n = len(self.idom)
        df: list[list[int]] = [[] for _ in range(n)]
        idom = self.idom
        pre = self.pre
        entry = self.entry
        preds = self.preds
        for b in self.rpo:
            ps = preds[b]
            if len(ps) < 2 and b != entry:
                # A single predecessor is b's immediate dominator: the walk is empty.
                continue
            stop = -1 if b == entry else idom[b]
            for p in ps:
                if pre[p] < 0:
                    continue
                r = p
                while r != stop:
                    dr = df[r]
                    if dr and dr[-1] == b:
                        break  # this runner, and everything above it, already has b
                    dr.append(b)
                    r = -1 if r == entry else idom[r]
        return df

    def iterated_frontier(self, nodes: Iterable[int]) -> list[int]:
        """DF+ of a node set (where phis go for a variable defined in ``nodes``), sorted."""
        df = self.frontiers
        n = len(self.idom)
        in_result = bytearray(n)
        queued = bytearray(n)
        work: list[int] = []
        for x in nodes:
            if not queued[x]:
                queued[x] = 1
                work.append(x)
        result: list[int] = []
        while work:
            x = work.pop()
            for y in df[x]:
                if not in_result[y]:
                    in_result[y] = 1
                    result.append(y)
                    if not queued[y]:
                        queued[y] = 1
                        work.append(y)
        result.sort()
        return result
