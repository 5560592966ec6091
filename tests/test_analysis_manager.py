"""AnalysisManager: caching per (analysis, function), invalidation by preserved set."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

import pytest

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.graph import Graph
from ptxopt.analysis.loops import LoopForest
from ptxopt.analysis.manager import (
    PRESERVE_ALL,
    PRESERVE_NONE,
    AnalysisCycleError,
    AnalysisManager,
)
from ptxopt.analysis.postdominators import PostDomTree


class Fn:
    """A stand-in function: anything with cfg_succs() works; equal-looking functions are
    still different keys (identity, not equality)."""

    def __init__(self, succs: list[list[int]]) -> None:
        self.succs = succs

    def cfg_succs(self) -> Sequence[Sequence[int]]:
        return self.succs

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fn) and other.succs == self.succs

    __hash__ = None  # type: ignore[assignment]  # unhashable on purpose: keyed by id


@dataclass(slots=True)
class Counter:
    value: int
    calls: list[int]

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> Self:
        assert isinstance(fn, Fn)
        calls = getattr(fn, "calls", [])
        calls.append(1)
        return cls(len(fn.succs), calls)


def test_get_caches_per_function_identity() -> None:
    am = AnalysisManager()
    f, g = Fn([[1], []]), Fn([[1], []])
    dt = am.get(DomTree, f)
    assert am.get(DomTree, f) is dt
    assert am.get(DomTree, g) is not dt  # equal but distinct function
    assert am.is_cached(Graph, f)  # DomTree asked for the Graph
    assert am.stats.hits == 1
    assert am.get(DomTree, f) is dt and am.stats.hits == 2  # hits add up
    assert am.cached(LoopForest, f) is None
    assert am.cached_analyses(f) == [DomTree, Graph]


def test_dependencies_come_from_the_cache() -> None:
    am = AnalysisManager()
    f = Fn([[1], [1, 2], []])
    dt = am.get(DomTree, f)
    lf = am.get(LoopForest, f)
    assert am.get(DomTree, f) is dt
    assert [lp.header for lp in lf.loops] == [1]
    assert am.get(PostDomTree, f).ipdom == [1, 2, 3, 3]


def test_invalidate_keeps_only_preserved() -> None:
    am = AnalysisManager()
    f = Fn([[1], []])
    dt = am.get(DomTree, f)
    lf = am.get(LoopForest, f)
    g = am.get(Graph, f)
    am.invalidate(f, frozenset({DomTree, Graph}))
    assert am.cached(DomTree, f) is dt and am.cached(Graph, f) is g
    assert am.cached(LoopForest, f) is None
    assert am.get(LoopForest, f) is not lf
    am.invalidate(f, PRESERVE_ALL)
    assert am.cached_analyses(f) == [DomTree, Graph, LoopForest]
    am.invalidate(f, PRESERVE_NONE)
    assert am.cached_analyses(f) == []
    am.get(DomTree, f)
    am.invalidate(f, None)
    assert am.cached_analyses(f) == []
    assert am.stats.invalidated == 1 + 3 + 2


def test_invalidate_one_function_leaves_others() -> None:
    am = AnalysisManager()
    f, g = Fn([[]]), Fn([[]])
    df, dg = am.get(DomTree, f), am.get(DomTree, g)
    am.invalidate(f)
    assert am.cached(DomTree, f) is None and am.cached(DomTree, g) is dg
    assert am.get(DomTree, f) is not df
    am.forget(g)
    assert am.cached(DomTree, g) is None
    am.clear()
    assert am.cached(DomTree, f) is None


def test_cache_keeps_function_alive_so_ids_are_not_reused() -> None:
    am = AnalysisManager()
    first = am.get(Graph, Fn([[1], []]))
    # The temporary function is kept alive by the cache, so a new one gets another id.
    second = am.get(Graph, Fn([[]]))
    assert first.num_nodes == 2 and second.num_nodes == 1


def test_user_analysis_and_compute_fresh() -> None:
    am = AnalysisManager()
    f = Fn([[1], [], []])
    f.calls = []  # type: ignore[attr-defined]
    c = am.get(Counter, f)
    assert c.value == 3 and am.get(Counter, f) is c and len(f.calls) == 1  # type: ignore[attr-defined]
    fresh = am.compute_fresh(Counter, f)
    assert fresh is not c and fresh == c and am.cached(Counter, f) is c


@dataclass(slots=True)
class Selfish:
    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> Self:
        am.get(Selfish, fn)
        return cls()


def test_cycles_are_reported() -> None:
    am = AnalysisManager()
    with pytest.raises(AnalysisCycleError, match="Selfish -> Selfish"):
        am.get(Selfish, Fn([[]]))


def test_graph_needs_a_cfg_source() -> None:
    with pytest.raises(TypeError, match="cfg_succs"):
        AnalysisManager().get(Graph, object())
