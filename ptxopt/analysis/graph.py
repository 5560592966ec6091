"""Control-flow graph as plain integer adjacency lists.

The graph analyses in this package (RPO, dominators, post-dominators, loops, SCCs, liveness)
are independent of the IR: a CFG is the nodes ``0 .. n-1``, a successor list per node and an
entry node.  The IR hands in block indices.  :class:`Graph` bundles successors, predecessors
(computed once) and the entry, and is itself a cacheable analysis: an object with a
``cfg_succs()`` method (returning its successor lists; the entry is node 0) can be
asked for its ``Graph`` through :class:`ptxopt.analysis.manager.AnalysisManager`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ptxopt.record import Record, set_field

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from ptxopt.analysis.manager import AnalysisManager


Succs = Sequence[Sequence[int]]


def preds_of(succs: Succs) -> list[list[int]]:
    """Predecessor lists, one per node.  A node appears once per parallel edge, in the order
    the edges are met scanning nodes ``0 .. n-1`` and their successor lists."""
    preds: list[list[int]] = [[] for _ in range(len(succs))]
    for u, su in enumerate(succs):
        for v in su:
            preds[v].append(u)
    return preds


def check_graph(succs: Succs, entry: int = 0) -> None:
    """Raise ``ValueError`` if an edge or the entry names a node outside ``0 .. n-1``."""
    n = len(succs)
    if not 0 <= entry < n:
        raise ValueError(f"entry node {entry} is outside 0..{n - 1}")
    for u, su in enumerate(succs):
        for v in su:
            if not 0 <= v < n:
                raise ValueError(f"edge {u}->{v} leaves the graph of {n} nodes")


class Graph(Record):
    """An immutable CFG: successor and predecessor lists of nodes ``0 .. n-1`` and an entry."""

    __slots__ = ("succs", "preds", "entry")
    succs: tuple[tuple[int, ...], ...]
    preds: tuple[tuple[int, ...], ...]
    entry: int

    def __init__(
        self, succs: tuple[tuple[int, ...], ...], preds: tuple[tuple[int, ...], ...], entry: int = 0
    ) -> None:
        set_field(self, "succs", succs)
        set_field(self, "preds", preds)
        set_field(self, "entry", entry)

    @classmethod
    def from_succs(cls, succs: Succs, entry: int = 0, *, check: bool = True) -> Graph:
        if check:
            check_graph(succs, entry)
        frozen = tuple(tuple(s) for s in succs)
        return cls(frozen, tuple(tuple(p) for p in preds_of(frozen)), entry)

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> Graph:
        """Analysis-manager entry point: ``fn`` must have a ``cfg_succs()`` method."""
        cfg_succs = getattr(fn, "cfg_succs", None)
        if not callable(cfg_succs):
            raise TypeError(f"{type(fn).__name__} does not provide cfg_succs()")
        return cls.from_succs(cfg_succs(), 0)

    def __len__(self) -> int:
        return len(self.succs)

    @property
    def num_nodes(self) -> int:
        return len(self.succs)

    def edges(self) -> list[tuple[int, int]]:
        return [(u, v) for u, su in enumerate(self.succs) for v in su]
