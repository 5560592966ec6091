"""Inputs and launch shapes for generated kernels.

Input words are edge-biased: besides uniformly random bits, zero, small signed
integers, the extremes of 8/16/32/64-bit integers and the special floats (signed
zeros, infinities, NaNs, denormals, the largest finite values) are frequent, so
comparisons, overflow, saturation and rounding corners are reached.  Launch shapes
cover whole warps, a partial warp, several warps with a partial last one, 2-D and 3-D
blocks and several CTAs.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from fuzz.kernelgen.core import EDGE_F32, EDGE_F64, EDGE_INT
from fuzz.kernelgen.kernel import Layout

Shape = tuple[Any, Any]
SHAPES: tuple[Shape, ...] = (
    (1, 32),
    (2, 64),
    (1, 7),
    (3, 37),
    ((2, 1), (8, 4)),
    (1, (5, 3, 2)),
    (2, 96),
    (1, 1),
)
_EDGE_WORDS = np.array(
    sorted(
        {v & 0xFFFFFFFF for v in EDGE_INT[32]}
        | {v for v in EDGE_INT[16]}
        | set(EDGE_F32)
        | {v >> 32 for v in EDGE_F64}
        | {v & 0xFFFFFFFF for v in range(-8, 9)}
    ),
    dtype=np.uint32,
)


def _count(d: Any) -> int:
    if isinstance(d, int):
        return d
    n = 1
    for x in d:
        n *= int(x)
    return n


def edge_words(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` 32-bit words: half edge values, a quarter small integers, a quarter random."""
    pick = rng.random(n)
    edge = _EDGE_WORDS[rng.integers(0, len(_EDGE_WORDS), n)]
    small = rng.integers(-8, 9, n).astype(np.int64).astype(np.uint32)
    rand = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    return np.where(pick < 0.5, edge, np.where(pick < 0.75, small, rand)).astype(np.uint32)


def make_args(layout: Layout, seed: int, grid: Any, block: Any) -> list[Any]:
    """The kernel arguments (in, uin, out, acc, a, b, c, d) for one launch."""
    rng = np.random.default_rng(seed)
    threads = _count(grid) * _count(block)
    r = random.Random(seed)
    a = r.choice(EDGE_INT[32]) if r.random() < 0.7 else r.randrange(-8, 9) & 0xFFFFFFFF
    b = r.choice(EDGE_INT[64]) if r.random() < 0.7 else r.randrange(-8, 9) & (2**64 - 1)
    c = np.array([r.choice(EDGE_F32)], dtype=np.uint32).view(np.float32)[0]
    d = np.array([r.choice(EDGE_F64)], dtype=np.uint64).view(np.float64)[0]
    return [
        edge_words(rng, threads * layout.in_words),
        edge_words(rng, layout.uin_words),
        edge_words(rng, threads * layout.out_words),
        edge_words(rng, layout.acc_words),
        a,
        b,
        c,
        d,
    ]


def shapes_for(seed: int, n: int = 3) -> list[Shape]:
    """``n`` launch shapes for a seed: always one whole-warp and one partial-warp shape."""
    r = random.Random(seed ^ 0x5EED)
    rest = [s for s in SHAPES[2:]]
    r.shuffle(rest)
    chosen = [SHAPES[r.randrange(2)], (1, 7) if r.random() < 0.5 else (3, 37)]
    chosen += [s for s in rest if s not in chosen]
    return chosen[:n]
