"""Depth-first orders of a CFG: postorder, reverse postorder and retreating edges.

Iterative depth-first search (an explicit stack of ``(node, next successor)`` pairs, so there
is no recursion limit), visiting successors in list order.  Only nodes reachable from the entry
are numbered.  A *retreating* edge ``u -> v`` is one whose target is still on the DFS stack
when the edge is explored (``v`` is a DFS-tree ancestor of ``u``, or ``u`` itself); see Aho,
Lam, Sethi and Ullman, *Compilers* (2nd ed.), section 9.6.3.  In a reducible CFG the retreating
edges are exactly the back edges ``u -> h`` where ``h`` dominates ``u``; in an irreducible one
some retreating edges are not back edges (``loops.py`` tells them apart).
"""

from __future__ import annotations

from ptxopt.analysis.graph import Succs
from ptxopt.record import Record, set_field


def postorder(succs: Succs, entry: int = 0) -> list[int]:
    """Nodes reachable from ``entry`` in DFS postorder."""
    n = len(succs)
    seen = [False] * n
    seen[entry] = True
    order: list[int] = []
    stack_nodes = [entry]
    stack_next = [0]
    while stack_nodes:
        u = stack_nodes[-1]
        su = succs[u]
        i = stack_next[-1]
        while i < len(su):
            v = su[i]
            i += 1
            if not seen[v]:
                seen[v] = True
                stack_next[-1] = i
                stack_nodes.append(v)
                stack_next.append(0)
                break
        else:
            stack_nodes.pop()
            stack_next.pop()
            order.append(u)
    return order


def reverse_postorder(succs: Succs, entry: int = 0) -> list[int]:
    """Nodes reachable from ``entry`` in reverse postorder (the entry comes first)."""
    order = postorder(succs, entry)
    order.reverse()
    return order


def rpo_numbers(rpo: list[int], n: int) -> list[int]:
    """Position of each node in ``rpo``; ``-1`` for nodes not in it (unreachable)."""
    num = [-1] * n
    for i, u in enumerate(rpo):
        num[u] = i
    return num


class DfsInfo(Record):
    """One depth-first search from the entry.

    ``preorder``/``rpo`` list reachable nodes; ``pre_num``/``rpo_num`` give each node's
    position (``-1`` when unreachable); ``parent`` is the DFS-tree parent (``-1`` for the entry
    and unreachable nodes); ``retreating`` lists the edges whose target was on the DFS stack,
    in the order they were explored (parallel edges are listed once per copy).
    """

    __slots__ = ("preorder", "rpo", "pre_num", "rpo_num", "parent", "retreating")
    preorder: list[int]
    rpo: list[int]
    pre_num: list[int]
    rpo_num: list[int]
    parent: list[int]
    retreating: list[tuple[int, int]]

    def __init__(
        self,
        preorder: list[int],
        rpo: list[int],
        pre_num: list[int],
        rpo_num: list[int],
        parent: list[int],
        retreating: list[tuple[int, int]],
    ) -> None:
        set_field(self, "preorder", preorder)
        set_field(self, "rpo", rpo)
        set_field(self, "pre_num", pre_num)
        set_field(self, "rpo_num", rpo_num)
        set_field(self, "parent", parent)
        set_field(self, "retreating", retreating)

    def reachable(self, u: int) -> bool:
        return self.rpo_num[u] >= 0


def depth_first(succs: Succs, entry: int = 0) -> DfsInfo:
    """Run one DFS and classify its retreating edges."""
    n = len(succs)
    pre_num = [-1] * n
    parent = [-1] * n
    on_stack = [False] * n
    preorder = [entry]
    pre_num[entry] = 0
    on_stack[entry] = True
    post: list[int] = []
    retreating: list[tuple[int, int]] = []
    stack_nodes = [entry]
    stack_next = [0]
    while stack_nodes:
        u = stack_nodes[-1]
        su = succs[u]
        i = stack_next[-1]
        while i < len(su):
            v = su[i]
            i += 1
            if pre_num[v] < 0:
                pre_num[v] = len(preorder)
                preorder.append(v)
                parent[v] = u
                on_stack[v] = True
                stack_next[-1] = i
                stack_nodes.append(v)
                stack_next.append(0)
                break
            if on_stack[v]:
                retreating.append((u, v))
        else:
            stack_nodes.pop()
            stack_next.pop()
            on_stack[u] = False
            post.append(u)
    post.reverse()
    return DfsInfo(preorder, post, pre_num, rpo_numbers(post, n), parent, retreating)


def retreating_edges(succs: Succs, entry: int = 0) -> list[tuple[int, int]]:
    """Edges whose target is on the DFS stack when explored (back edges of the DFS tree)."""
    return depth_first(succs, entry).retreating
