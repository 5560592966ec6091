"""Post-dominator tree and post-dominance frontiers (control dependence).

Post-dominators are dominators of the reversed CFG (Cooper-Harvey-Kennedy, see
``dominators.py``) rooted at a *virtual exit* node numbered ``n`` (one past the last block).
Its CFG predecessors are:

* every node with no successors (``ret``/``exit``/``trap`` blocks), in index order, and
* for every *infinite-loop sink* -- a strongly connected component (Tarjan, ``scc.py``) that
  has edges but none leaving it, so it can never reach an exit -- one chosen node: the one with
  the highest reverse-postorder number of a DFS from the entry (the last block of the loop in
  layout-like order, usually its latch); for a sink not reachable from the entry, the node with
  the highest index.  Every node that cannot reach a real exit reaches such a sink, so after
  these edges every node, including nodes unreachable from the entry, has a post-dominator.
  The same rule is used by LLVM's post-dominator tree in spirit (connect one node of each
  "reverse-unreachable" region to the virtual root); the choice of node is ours.

The post-dominance frontier of ``x`` is the dominance frontier of ``x`` in the reversed graph:
``y`` is in ``PDF(x)`` iff ``x`` is control dependent on the branch in ``y`` (Ferrante,
Ottenstein and Warren, "The program dependence graph and its use in optimization", TOPLAS 1987;
Cytron et al. 1991, section 6).

Conventions: ``ipdom[exit] == exit`` where ``exit == n``; every real node has an ipdom in
``0 .. n``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.graph import Graph, Succs, check_graph, preds_of
from ptxopt.analysis.rpo import postorder
from ptxopt.analysis.scc import tarjan_scc

if TYPE_CHECKING:
    from ptxopt.analysis.manager import AnalysisManager


def virtual_exit_preds(succs: Succs, entry: int = 0) -> tuple[list[int], list[int]]:
    """Return ``(exits, loop_sinks)``: nodes without successors, and the node chosen from each
    infinite-loop sink component (see the module docstring), each list sorted."""
    n = len(succs)
    exits = [u for u in range(n) if not succs[u]]
    scc = tarjan_scc(succs)
    comp_of = scc.comp_of
    leaves = [False] * len(scc.components)
    for u in range(n):
        cu = comp_of[u]
        su = succs[u]
        if not su:
            leaves[cu] = True  # an exit node is its own (finite) sink
            continue
        for v in su:
            if comp_of[v] != cu:
                leaves[cu] = True
                break
    post = postorder(succs, entry)
    post_num = [-1] * n
    for i, u in enumerate(post):
        post_num[u] = i
    sinks: list[int] = []
    for c, comp in enumerate(scc.components):
        if leaves[c]:
            continue
        # Highest RPO number == lowest postorder number among reachable nodes.
        reach = [u for u in comp if post_num[u] >= 0]
        if reach:
            sinks.append(min(reach, key=post_num.__getitem__))
        else:
            sinks.append(max(comp))
    sinks.sort()
    return exits, sinks


@dataclass(slots=True)
class PostDomTree:
    """Post-dominator tree over nodes ``0 .. n`` where ``n`` is the virtual exit.

    ``tree`` is the dominator tree of the reversed, exit-augmented graph; ``exits`` the real
    exit nodes; ``loop_sinks`` the nodes given an artificial edge to the virtual exit because
    they sit in a loop that never exits.
    """

    tree: DomTree
    exit: int
    exits: list[int]
    loop_sinks: list[int]

    @classmethod
    def build(
        cls,
        succs: Succs,
        entry: int = 0,
        preds: Sequence[Sequence[int]] | None = None,
        *,
        check: bool = False,
    ) -> PostDomTree:
        if check:
            check_graph(succs, entry)
        if preds is None:
            preds = preds_of(succs)
        n = len(succs)
        exits, sinks = virtual_exit_preds(succs, entry)
        # Reversed graph: successors are CFG predecessors, the virtual exit leads to its preds.
        rsuccs: list[Sequence[int]] = list(preds)
        rsuccs.append(exits + sinks)
        rpreds: list[Sequence[int]] = list(succs)
        rpreds.append(())
        for u in exits:
            rpreds[u] = (n,)
        for u in sinks:
            rpreds[u] = (*succs[u], n)
        tree = DomTree.build(rsuccs, n, rpreds)
        return cls(tree, n, exits, sinks)

    @classmethod
    def from_graph(cls, g: Graph) -> PostDomTree:
        return cls.build(g.succs, g.entry, g.preds)

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> PostDomTree:
        """Analysis-manager entry point (``fn`` must provide its :class:`Graph`)."""
        return cls.from_graph(am.get(Graph, fn))

    @property
    def ipdom(self) -> list[int]:
        """Immediate post-dominator per node (length ``n + 1``; ``ipdom[exit] == exit``)."""
        return self.tree.idom

    @property
    def children(self) -> list[list[int]]:
        return self.tree.children

    @property
    def depth(self) -> list[int]:
        return self.tree.depth

    def postdominates(self, a: int, b: int) -> bool:
        """``a`` post-dominates ``b`` (reflexive); ``a``/``b`` may be the virtual exit."""
        return self.tree.dominates(a, b)

    def strictly_postdominates(self, a: int, b: int) -> bool:
        return a != b and self.tree.dominates(a, b)

    def nearest_common_postdominator(self, a: int, b: int) -> int:
        """Deepest common post-dominator (possibly the virtual exit)."""
        return self.tree.nearest_common_dominator(a, b)

    @property
    def frontiers(self) -> list[list[int]]:
        """``frontiers[x]``: post-dominance frontier of ``x`` = the branch nodes ``x`` is
        control dependent on (length ``n + 1``; the virtual exit's entry is empty)."""
        return self.tree.frontiers

    def control_dependences(self, x: int) -> list[int]:
        """Nodes whose branch decides whether ``x`` executes (``PDF(x)``)."""
        return self.tree.frontiers[x]

    def iterated_frontier(self, nodes: Sequence[int]) -> list[int]:
        return self.tree.iterated_frontier(nodes)
