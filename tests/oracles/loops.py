"""Reference loops: brute-force natural loops and T1/T2 reducibility."""

from __future__ import annotations

from collections.abc import Sequence

from .dominators import dominator_sets, preds, reachable_from

Succs = Sequence[Sequence[int]]


def natural_loops(succs: Succs, entry: int = 0) -> dict[int, set[int]]:
    """header -> blocks: for each back edge u -> h (h dominates u), h plus every node that
    reaches u without passing through h; merged per header."""
    dom = dominator_sets(succs, entry)
    pr = preds(succs)
    loops: dict[int, set[int]] = {}
    for u in dom:
        for h in succs[u]:
            if h in dom[u]:
                body = loops.setdefault(h, {h})
                work = [u]
                while work:
                    x = work.pop()
                    if x in body:
                        continue
                    body.add(x)
                    work.extend(p for p in pr[x] if p in dom)
    return loops


def loop_parents(loops: dict[int, set[int]]) -> dict[int, int]:
    """header -> header of the smallest other loop containing it (-1 if none)."""
    out = {}
    for h, body in loops.items():
        best = -1
        for h2, body2 in loops.items():
            if h2 != h and body <= body2 and (best < 0 or len(body2) < len(loops[best])):
                best = h2
        out[h] = best
    return out


def is_reducible_t1t2(succs: Succs, entry: int = 0) -> bool:
    """Hecht-Ullman T1 (drop self loops) / T2 (merge a node into its unique predecessor)
    applied to the reachable subgraph; reducible iff it collapses to one node."""

    reach = reachable_from(succs, entry)
    sx: dict[int, set[int]] = {u: {v for v in succs[u]} for u in reach}
    changed = True
    while changed:
        changed = False
        for u in list(sx):
            sx[u].discard(u)  # T1
        for v in list(sx):
            if v == entry:
                continue
            ps = [u for u in sx if v in sx[u]]
            if len(ps) == 1:  # T2
                u = ps[0]
                sx[u].discard(v)
                sx[u] |= sx[v]
                del sx[v]
                changed = True
                break
    return len(sx) == 1


def cyclic_nodes_without_back_edges(succs: Succs, entry: int = 0) -> set[int]:
    """Nodes on a cycle once the dominator back edges are removed (reachable part only)."""

    dom = dominator_sets(succs, entry)
    fwd = [[v for v in succs[u] if u in dom and v not in dom[u]] for u in range(len(succs))]
    return {u for u in dom if any(u in reachable_from(fwd, v) for v in fwd[u])}
