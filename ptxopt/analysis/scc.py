"""Strongly connected components by Tarjan's algorithm, iteratively.

R. E. Tarjan, "Depth-first search and linear graph algorithms", SIAM J. Computing 1972.
One DFS keeps ``index`` and ``lowlink`` per node and a stack of visited nodes; a node whose
lowlink equals its index roots a component, popped off the stack.  The recursion is replaced
by an explicit stack of ``(node, next successor)`` so there is no recursion limit.
Components are produced in *reverse topological order* of the condensation: a component comes
before every component that can reach it (sinks first).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ptxopt.analysis.graph import Succs


@dataclass(frozen=True, slots=True)
class SccResult:
    """``components[c]``: the nodes of component ``c`` (reverse topological order of
    components); ``comp_of[u]``: the component of ``u`` (``-1`` for nodes not visited)."""

    components: list[list[int]]
    comp_of: list[int]

    def is_trivial(self, c: int, succs: Succs) -> bool:
        """A single node without a self loop (not part of any cycle)."""
        comp = self.components[c]
        return len(comp) == 1 and comp[0] not in succs[comp[0]]


def tarjan_scc(succs: Succs, roots: Iterable[int] | None = None) -> SccResult:
    """SCCs of the nodes reachable from ``roots`` (all nodes, in index order, by default)."""
    n = len(succs)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    comp_of = [-1] * n
    stack: list[int] = []
    components: list[list[int]] = []
    counter = 0
    for root in range(n) if roots is None else roots:
        if index[root] >= 0:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        call_nodes = [root]
        call_next = [0]
        while call_nodes:
            u = call_nodes[-1]
            su = succs[u]
            i = call_next[-1]
            descended = False
            while i < len(su):
                v = su[i]
                i += 1
                if index[v] < 0:
                    index[v] = low[v] = counter
                    counter += 1
                    stack.append(v)
                    on_stack[v] = True
                    call_next[-1] = i
                    call_nodes.append(v)
                    call_next.append(0)
                    descended = True
                    break
                if on_stack[v] and index[v] < low[u]:
                    low[u] = index[v]
            if descended:
                continue
            call_nodes.pop()
            call_next.pop()
            if low[u] == index[u]:
                c = len(components)
                comp: list[int] = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp_of[w] = c
                    comp.append(w)
                    if w == u:
                        break
                components.append(comp)
            if call_nodes:
                p = call_nodes[-1]
                if low[u] < low[p]:
                    low[p] = low[u]
    return SccResult(components, comp_of)
