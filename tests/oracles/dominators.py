"""Reference dominators: set dataflow and the deletion definition; virtual-exit post-dominators.

Deliberately naive (quadratic or worse); only for small random graphs in tests.
"""

from __future__ import annotations

from collections.abc import Sequence

Succs = Sequence[Sequence[int]]


def reachable_from(succs: Succs, start: int, removed: int = -1) -> set[int]:
    """Nodes reachable from ``start`` without entering ``removed``."""
    if start == removed:
        return set()
    seen = {start}
    work = [start]
    while work:
        u = work.pop()
        for v in succs[u]:
            if v != removed and v not in seen:
                seen.add(v)
                work.append(v)
    return seen


def preds(succs: Succs) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in succs]
    for u, su in enumerate(succs):
        for v in su:
            out[v].append(u)
    return out


def dominator_sets(succs: Succs, entry: int = 0) -> dict[int, set[int]]:
    """Dom(n) = {n} | intersection of Dom(p) over reachable preds, to a fixed point."""
    reach = reachable_from(succs, entry)
    pr = preds(succs)
    dom = {u: set(reach) for u in reach}
    dom[entry] = {entry}
    changed = True
    while changed:
        changed = False
        for u in sorted(reach):
            if u == entry:
                continue
            ps = [dom[p] for p in pr[u] if p in reach]
            new = set.intersection(*ps) | {u}
            if new != dom[u]:
                dom[u] = new
                changed = True
    return dom


def dominator_sets_by_deletion(succs: Succs, entry: int = 0) -> dict[int, set[int]]:
    """d dominates n iff n is unreachable from the entry once d is deleted."""
    reach = reachable_from(succs, entry)
    dom: dict[int, set[int]] = {u: {u} for u in reach}
    for d in reach:
        without = reachable_from(succs, entry, removed=d)
        for u in reach:
            if u not in without:
                dom[u].add(d)
    return dom


def idoms_from_sets(dom: dict[int, set[int]], n: int, entry: int) -> list[int]:
    """The strict dominator of each node that all its other strict dominators dominate."""
    idom = [-1] * n
    for u, ds in dom.items():
        if u == entry:
            idom[u] = entry
            continue
        strict = ds - {u}
        for d in strict:
            if all(e in dom[d] for e in strict):
                idom[u] = d
    return idom


def frontier_by_definition(succs: Succs, dom: dict[int, set[int]], n: int) -> list[set[int]]:
    """DF(x) = {y | x dominates a reachable pred of y, and x does not strictly dominate y}."""
    pr = preds(succs)
    df: list[set[int]] = [set() for _ in range(n)]
    for y in dom:
        for p in pr[y]:
            if p not in dom:
                continue
            for x in dom[p]:
                if not (x in dom[y] and x != y):
                    df[x].add(y)
    return df


def iterated_frontier(df: list[set[int]], nodes: set[int]) -> set[int]:
    """DF+ as the limit of DF(S | DF_i)."""
    result: set[int] = set()
    while True:
        new = set()
        for x in nodes | result:
            new |= df[x]
        if new == result:
            return result
        result = new


def dfs_rpo(succs: Succs, entry: int) -> list[int]:
    """Recursive DFS reverse postorder, successors in list order."""
    seen: set[int] = set()
    post: list[int] = []

    def visit(u: int) -> None:
        seen.add(u)
        for v in succs[u]:
            if v not in seen:
                visit(v)
        post.append(u)

    visit(entry)
    return post[::-1]


def exit_augmented_reverse(succs: Succs, entry: int = 0) -> list[list[int]]:
    """Reversed CFG plus virtual exit ``n``: exit -> every node without successors, and
    exit -> one node of every sink cycle (highest RPO number, else highest index)."""
    n = len(succs)
    reach = [reachable_from(succs, u) for u in range(n)]
    rpo = dfs_rpo(succs, entry)
    rnum = {u: i for i, u in enumerate(rpo)}
    extra: list[int] = [u for u in range(n) if not succs[u]]
    done: set[int] = set()
    for u in range(n):
        if not succs[u] or u in done:
            continue
        scc = {v for v in reach[u] if u in reach[v]}
        if reach[u] == scc:  # nothing leaves: an infinite sink
            done |= scc
            in_rpo = [v for v in scc if v in rnum]
            extra.append(max(in_rpo, key=rnum.__getitem__) if in_rpo else max(scc))
    rev: list[list[int]] = [[] for _ in range(n + 1)]
    for u, su in enumerate(succs):
        for v in su:
            rev[v].append(u)
    rev[n] = sorted(extra)
    return rev
