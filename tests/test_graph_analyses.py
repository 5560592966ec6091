"""Graph analyses (RPO, SCC, dominators, post-dominators, loops, liveness) against the slow
reference algorithms in ``tests/oracles`` on random CFGs, plus a few classic shapes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.dominators import (
    dfs_rpo,
    dominator_sets,
    dominator_sets_by_deletion,
    exit_augmented_reverse,
    frontier_by_definition,
    idoms_from_sets,
    iterated_frontier,
    reachable_from,
)
from oracles.liveness import naive_liveness
from oracles.loops import (
    cyclic_nodes_without_back_edges,
    is_reducible_t1t2,
    loop_parents,
    natural_loops,
)

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.graph import Graph, preds_of
from ptxopt.analysis.liveness import LivenessBudgetExceeded, bits_of, liveness
from ptxopt.analysis.loops import LoopForest
from ptxopt.analysis.postdominators import PostDomTree
from ptxopt.analysis.rpo import depth_first, postorder, reverse_postorder
from ptxopt.analysis.scc import tarjan_scc

Cfg = list[list[int]]


@st.composite
def cfgs(draw: st.DrawFn, max_nodes: int = 40) -> Cfg:
    """Random CFGs: mostly short forward edges with some backward/random ones, so that
    loops, nesting, irreducible cycles, self loops, sinks and unreachable nodes all occur."""
    n = draw(st.integers(1, max_nodes))
    succs: Cfg = []
    for u in range(n):
        k = draw(st.sampled_from([0, 1, 1, 2, 2, 2, 3]))
        out = []
        for _ in range(k):
            if draw(st.integers(0, 3)) == 0:
                out.append(draw(st.integers(0, n - 1)))  # anywhere, incl. back / self
            else:
                out.append(min(n - 1, u + draw(st.integers(1, 3))))
        succs.append(out)
    return succs


EXAMPLES = settings(max_examples=200, deadline=None)


# -- orders and SCCs ----------------------------------------------------------------------------


@EXAMPLES
@given(cfgs())
def test_rpo_matches_recursive_dfs(succs: Cfg) -> None:
    assert reverse_postorder(succs) == dfs_rpo(succs, 0)
    assert postorder(succs) == dfs_rpo(succs, 0)[::-1]
    info = depth_first(succs)
    assert info.rpo == dfs_rpo(succs, 0)
    pos = {u: i for i, u in enumerate(info.rpo)}
    for u, v in info.retreating:
        # target is a DFS-tree ancestor of the source (or the source itself)
        w = u
        while w != v and w != -1:
            w = info.parent[w]
        assert w == v
    # every edge not retreating goes forward in RPO
    retreating = set(info.retreating)
    for u in info.rpo:
        for v in succs[u]:
            if (u, v) not in retreating:
                assert pos[u] < pos[v]


@EXAMPLES
@given(cfgs())
def test_tarjan_scc(succs: Cfg) -> None:
    n = len(succs)
    res = tarjan_scc(succs)
    reach = [reachable_from(succs, u) for u in range(n)]
    for u in range(n):
        for v in range(n):
            same = v in reach[u] and u in reach[v]
            assert (res.comp_of[u] == res.comp_of[v]) == same
    # reverse topological: an edge never goes to a later component
    for u in range(n):
        for v in succs[u]:
            assert res.comp_of[v] <= res.comp_of[u]


# -- dominators ---------------------------------------------------------------------------------


@EXAMPLES
@given(cfgs())
def test_dominators_match_oracles(succs: Cfg) -> None:
    n = len(succs)
    dt = DomTree.build(succs, 0, check=True)
    dom = dominator_sets(succs)
    assert dom == dominator_sets_by_deletion(succs)
    assert dt.idom == idoms_from_sets(dom, n, 0)
    for a in range(n):
        for b in range(n):
            assert dt.dominates(a, b) == (b in dom and a in dom[b])
            assert dt.strictly_dominates(a, b) == (b in dom and a in dom[b] and a != b)
    for b in range(n):
        if b in dom:
            assert dt.depth[b] == len(dom[b]) - 1
            assert set(dt.dominators_of(b)) == dom[b]
            assert set(dt.subtree(b)) == {x for x in dom if b in dom[x]}
        else:
            assert dt.idom[b] == -1 and dt.depth[b] == -1 and dt.subtree(b) == []


@EXAMPLES
@given(cfgs(), st.data())
def test_nearest_common_dominator(succs: Cfg, data: st.DataObject) -> None:
    n = len(succs)
    dt = DomTree.build(succs)
    dom = dominator_sets(succs)
    a = data.draw(st.integers(0, n - 1))
    b = data.draw(st.integers(0, n - 1))
    expected = -1
    if a in dom and b in dom:
        common = dom[a] & dom[b]
        expected = max(common, key=lambda d: len(dom[d]))
    assert dt.nearest_common_dominator(a, b) == expected


@EXAMPLES
@given(cfgs(), st.data())
def test_dominance_frontiers(succs: Cfg, data: st.DataObject) -> None:
    n = len(succs)
    dt = DomTree.build(succs)
    dom = dominator_sets(succs)
    df = frontier_by_definition(succs, dom, n)
    assert [set(f) for f in dt.frontiers] == df
    assert all(len(f) == len(set(f)) for f in dt.frontiers)
    nodes = data.draw(st.sets(st.integers(0, n - 1), max_size=5))
    assert dt.iterated_frontier(nodes) == sorted(iterated_frontier(df, nodes))


def test_entry_with_back_edge_is_in_its_own_frontier() -> None:
    dt = DomTree.build([[1], [0, 2], []])
    assert dt.frontiers == [[0], [0], []]


# -- post-dominators ----------------------------------------------------------------------------


@EXAMPLES
@given(cfgs())
def test_postdominators_match_oracle(succs: Cfg) -> None:
    n = len(succs)
    pdt = PostDomTree.build(succs)
    rev = exit_augmented_reverse(succs)
    pdom = dominator_sets(rev, n)
    assert set(pdom) == set(range(n + 1))  # every node reaches the virtual exit
    assert pdt.ipdom == idoms_from_sets(pdom, n + 1, n)
    for a in range(n + 1):
        for b in range(n + 1):
            assert pdt.postdominates(a, b) == (a in pdom[b])
    assert [set(f) for f in pdt.frontiers] == frontier_by_definition(rev, pdom, n + 1)


def test_postdom_infinite_loop_and_control_dependence() -> None:
    # 0 -> 1 | 3; 1 <-> 2 loop forever; 3 exits.
    succs = [[1, 3], [2], [1], []]
    pdt = PostDomTree.build(succs)
    assert pdt.exit == 4 and pdt.exits == [3] and pdt.loop_sinks == [2]
    assert pdt.ipdom == [4, 2, 4, 4, 4]
    # 1 depends on 0's branch and on 2, whose artificial edge to the exit "leaves" the loop
    assert sorted(pdt.control_dependences(1)) == [0, 2]
    assert pdt.control_dependences(3) == [0]
    # diamond: the join post-dominates everything, the arms depend on the branch
    diamond = PostDomTree.build([[1, 2], [3], [3], []])
    assert diamond.ipdom == [3, 3, 3, 4, 4]
    assert diamond.control_dependences(1) == [0] and diamond.control_dependences(3) == []
    assert diamond.nearest_common_postdominator(1, 2) == 3


# -- loops --------------------------------------------------------------------------------------


@EXAMPLES
@given(cfgs())
def test_natural_loops_match_oracle(succs: Cfg) -> None:
    n = len(succs)
    lf = LoopForest.build(succs)
    expected = natural_loops(succs)
    assert {lp.header: set(lp.blocks) for lp in lf.loops} == expected
    parents = loop_parents(expected)
    by_header = {lp.header: lp for lp in lf.loops}
    for lp in lf.loops:
        assert lp.blocks[0] == lp.header
        assert len(lp.blocks) == len(set(lp.blocks))
        p = parents[lp.header]
        assert (lf.loops[lp.parent].header if lp.parent >= 0 else -1) == p
        assert lp.depth == (1 if p < 0 else by_header[p].depth + 1)
        assert all(lp.index in lf.loops[lp.parent].children for _ in [0] if lp.parent >= 0)
        body = expected[lp.header]
        assert set(lp.latches) == {u for u in body if lp.header in succs[u]}
        edges = [(u, v) for u in lp.blocks for v in succs[u] if v not in body]
        assert lp.exit_edges == edges
        assert lp.exiting == list(dict.fromkeys(u for u, _ in edges))
        assert set(lp.exits) == {v for _, v in edges}
    for b in range(n):
        containing = [h for h, body in expected.items() if b in body]
        if not containing:
            assert lf.loop_of[b] == -1 and lf.depth_of(b) == 0
        else:
            inner = min(containing, key=lambda h: len(expected[h]))
            assert lf.loops[lf.loop_of[b]].header == inner
            assert lf.depth_of(b) == len(containing)
        for lp in lf.loops:
            assert lf.contains(lp.index, b) == (b in expected[lp.header])


@EXAMPLES
@given(cfgs())
def test_irreducibility_detection(succs: Cfg) -> None:
    lf = LoopForest.build(succs)
    assert lf.is_reducible == is_reducible_t1t2(succs)
    cyclic = cyclic_nodes_without_back_edges(succs)
    assert {b for r in lf.irreducible for b in r.blocks} == cyclic
    pr = preds_of(succs)
    for r in lf.irreducible:
        assert len(r.entries) >= 2
        inside = set(r.blocks)
        reach = reachable_from(succs, 0)
        assert set(r.entries) == {
            b for b in inside if any(p in reach and p not in inside for p in pr[b])
        }
        if r.loop >= 0:
            assert inside <= set(lf.loops[r.loop].blocks)
            for c in lf.loops[r.loop].children:
                assert not inside <= set(lf.loops[c].blocks)
        else:
            assert not any(inside <= set(lp.blocks) for lp in lf.loops)


def test_classic_two_entry_loop_is_irreducible() -> None:
    lf = LoopForest.build([[1, 2], [2], [1]])
    assert not lf.is_reducible
    assert lf.loops == []
    assert [(r.entries, r.blocks, r.loop) for r in lf.irreducible] == [([1, 2], [1, 2], -1)]


def test_irreducible_region_inside_a_natural_loop() -> None:
    # 0 -> 1 (header); 1 -> 2 | 3; 2 <-> 3 (two entries); 3 -> 4 latch -> 1; 4 -> 5 exit
    lf = LoopForest.build([[1], [2, 3], [3], [2, 4], [1, 5], []])
    assert [lp.header for lp in lf.loops] == [1]
    assert lf.loops[0].blocks == [1, 2, 3, 4] or set(lf.loops[0].blocks) == {1, 2, 3, 4}
    assert [(r.entries, r.loop) for r in lf.irreducible] == [([2, 3], 0)]


def test_nested_loops_shape() -> None:
    # 0 -> 1 (outer header) -> 2 (inner header) -> 3 -> 2 | 4; 4 -> 1 | 5; 5 exit
    lf = LoopForest.build([[1], [2], [3], [2, 4], [1, 5], []])
    outer, inner = lf.loops
    assert (outer.header, outer.parent, outer.depth, outer.children) == (1, -1, 1, [1])
    assert (inner.header, inner.parent, inner.depth, inner.latches) == (2, 0, 2, [3])
    assert outer.blocks == [1, 2, 3, 4] and outer.latches == [4]
    assert outer.exit_edges == [(4, 5)] and outer.exiting == [4] and outer.exits == [5]
    assert inner.exit_edges == [(3, 4)]
    assert lf.loop_of == [-1, 0, 1, 1, 0, -1]
    assert lf.top_level == [0] and lf.is_reducible


# -- liveness -----------------------------------------------------------------------------------


def _bits(s: set[int]) -> int:
    return sum(1 << i for i in s)


@EXAMPLES
@given(cfgs(max_nodes=25), st.data())
def test_liveness_matches_naive_fixpoint(succs: Cfg, data: st.DataObject) -> None:
    n = len(succs)
    vals = st.sets(st.integers(0, 9), max_size=3)
    per_block = st.lists(vals, min_size=n, max_size=n)
    uses, defs, phi_defs = data.draw(per_block), data.draw(per_block), data.draw(per_block)
    edges = [(u, v) for u in range(n) for v in succs[u]]
    phi_uses = dict(
        zip(edges, data.draw(st.lists(vals, min_size=len(edges), max_size=len(edges))), strict=True)
    )
    expect_in, expect_out = naive_liveness(succs, uses, defs, phi_defs, phi_uses)
    res = liveness(
        succs,
        [_bits(s) for s in uses],
        [_bits(s) for s in defs],
        phi_defs=[_bits(s) for s in phi_defs],
        phi_uses={e: _bits(s) for e, s in phi_uses.items()},
    )
    assert [set(bits_of(x)) for x in res.live_in] == expect_in
    assert [set(bits_of(x)) for x in res.live_out] == expect_out
    # without phis it is plain liveness
    plain = liveness(succs, [_bits(s) for s in uses], [_bits(s) for s in defs])
    none = [set[int]() for _ in range(n)]
    p_in, p_out = naive_liveness(succs, uses, defs, none, {})
    assert [set(bits_of(x)) for x in plain.live_in] == p_in
    assert [set(bits_of(x)) for x in plain.live_out] == p_out


def test_liveness_budget_is_reported() -> None:
    chain = [[i + 1] for i in range(50)] + [[]]
    uses = [0] * 50 + [1]
    with pytest.raises(LivenessBudgetExceeded, match="did not converge within 10"):
        liveness(chain, uses, [0] * 51, entry=0, budget=10)
    res = liveness(chain, uses, [0] * 51)
    assert res.live_in[0] == 1 and res.live_out[50] == 0


# -- scale without recursion --------------------------------------------------------------------


def test_deep_graphs_do_not_recurse() -> None:
    n = 30_000
    # a chain 0 -> 1 -> ... -> n-1 (exit) with a two-block loop at every odd node
    succs = [[i + 1, i - 1] if i % 2 else [i + 1] for i in range(n - 1)] + [[]]
    g = Graph.from_succs(succs)
    assert len(postorder(g.succs)) == n
    dt = DomTree.from_graph(g)
    assert dt.depth[n - 1] == n - 1
    pdt = PostDomTree.from_graph(g)
    assert pdt.depth[0] == n and pdt.loop_sinks == []
    lf = LoopForest.build(g.succs, g.entry, g.preds, dt)
    loops = (n - 1) // 2  # one per odd node except the exit
    assert len(lf.loops) == loops and lf.is_reducible
    assert len(tarjan_scc(g.succs).components) == n - loops
    assert liveness(g.succs, [0] * (n - 1) + [1], [0] * n).live_in[0] == 1
