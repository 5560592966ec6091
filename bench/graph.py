"""Time the CFG analyses on synthetic CFGs of 10^3 .. 10^6 blocks; print microseconds per
block so near-linear growth (a flat column) is visible.

    python bench/graph.py [--sizes 1000,10000,100000,1000000] [--repeat 3]

The CFGs are structured code with noise: straight-line blocks, if/else diamonds, loops nested
up to 4 deep, loop breaks, and forward jumps of up to 40 blocks that sometimes land inside a
loop (making it irreducible).  Each figure is the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.graph import Graph
from ptxopt.analysis.liveness import liveness
from ptxopt.analysis.loops import LoopForest
from ptxopt.analysis.postdominators import PostDomTree
from ptxopt.analysis.rpo import reverse_postorder
from ptxopt.analysis.scc import tarjan_scc


def synthetic_cfg(n: int, seed: int = 1) -> list[list[int]]:
    rng = random.Random(seed)
    succs: list[list[int]] = [[] for _ in range(n)]
    open_loops: list[int] = []
    i = 0
    while i < n - 1:
        r = rng.random()
        must_close = open_loops and i >= n - 2 - len(open_loops)
        if must_close or (r < 0.12 and open_loops):
            succs[i] = [open_loops.pop(), i + 1]  # latch
            i += 1
        elif r < 0.24 and len(open_loops) < 4 and i < n - 8:
            open_loops.append(i + 1)  # preheader i, header i + 1
            succs[i] = [i + 1]
            i += 1
        elif r < 0.50 and i + 3 < n - 1 - len(open_loops):
            succs[i] = [i + 1, i + 2]
            succs[i + 1] = [i + 3]
            succs[i + 2] = [i + 3]
            i += 3
        elif r < 0.53:
            succs[i] = [i + 1, min(n - 1, i + rng.randint(2, 40))]  # break / goto forward
            i += 1
        else:
            succs[i] = [i + 1]
            i += 1
    return succs


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


COLUMNS = ["graph", "rpo", "dom", "dom+DF", "postdom", "loops", "scc", "liveness"]


def measure(n: int, repeat: int) -> tuple[int, int, int, list[float]]:
    """Return (edges, loops, irreducible regions, seconds per analysis in COLUMNS order)."""
    succs = synthetic_cfg(n)
    g = Graph.from_succs(succs)
    rng = random.Random(2)
    uses = [rng.getrandbits(64) & rng.getrandbits(64) & rng.getrandbits(64) for _ in range(n)]
    defs = [rng.getrandbits(64) & rng.getrandbits(64) for _ in range(n)]
    dt = DomTree.from_graph(g)
    lf = LoopForest.build(g.succs, g.entry, g.preds, dt)

    def dom_df() -> None:
        DomTree.from_graph(g).frontiers  # noqa: B018

    timings = [
        best(lambda: Graph.from_succs(succs), repeat),
        best(lambda: reverse_postorder(g.succs), repeat),
        best(lambda: DomTree.from_graph(g), repeat),
        best(dom_df, repeat),
        best(lambda: PostDomTree.from_graph(g), repeat),
        best(lambda: LoopForest.build(g.succs, g.entry, g.preds, dt), repeat),
        best(lambda: tarjan_scc(g.succs), repeat),
        best(lambda: liveness(g.succs, uses, defs, preds=g.preds), repeat),
    ]
    return sum(len(s) for s in succs), len(lf.loops), len(lf.irreducible), timings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    head = f"{'blocks':>9} {'edges':>9} {'loops':>7} {'irred':>5}  "
    print(head + " ".join(f"{c:>8}" for c in COLUMNS))
    print(" " * len(head) + " ".join(f"{'us/blk':>8}" for _ in COLUMNS))
    for n in (int(s) for s in args.sizes.split(",")):
        edges, loops, irred, timings = measure(n, args.repeat if n < 1_000_000 else 1)
        print(
            f"{n:>9} {edges:>9} {loops:>7} {irred:>5}  "
            + " ".join(f"{t * 1e6 / n:>8.2f}" for t in timings),
            flush=True,
        )


if __name__ == "__main__":
    main()
