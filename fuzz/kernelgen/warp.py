"""Warp- and CTA-synchronous instructions: shuffles, votes, reductions, matches and
``bar.red``.

They appear only where every live thread of the CTA executes together (a uniform
:class:`~fuzz.kernelgen.core.Ctx`), with a full member mask.  A shuffle reads other
lanes' registers, which is undefined for lanes that do not exist, so it runs only in
CTAs made of whole warps (a uniform branch around it skips it otherwise); votes and
reductions are defined over the lanes that exist and run everywhere.
"""

from __future__ import annotations

from fuzz.kernelgen.arith import write
from fuzz.kernelgen.core import Ctx, Gen, feature

MASK = ("0xffffffff", "-1")


@feature("shuffle", 2, uniform_only=True)
def shuffle(g: Gen, ctx: Ctx) -> None:
    skip = g.label()
    g.emit(f"@{g.facts.partial} bra.uni {skip};")
    mode = g.choice(("up", "down", "bfly", "idx"))
    cls = g.choice(("r", "r", "f"))
    a, b, c = g.src(cls), g.operand("r", 0.7), g.operand("r", 0.7)
    mask = g.choice(MASK)
    if g.chance(0.3):
        p = g.src("p")
        d = g.rng.choice([x for x in g.scope.pool[cls] if x != a] or [a])
        g.set_flag(d, True)
        g.set_flag(p, True)
        g.emit(f"shfl.sync.{mode}.b32 {d}|{p}, {a}, {b}, {c}, {mask};")
    else:
        text = f"shfl.sync.{mode}.b32 {{d}}, {a}, {b}, {c}, {mask};"
        write(g, ctx, cls, text, (), True, guarded=False)
    g.place(skip)


@feature("vote", 2, uniform_only=True)
def vote(g: Gen, ctx: Ctx) -> None:
    q = g.src("p")
    neg = "!" if g.chance(0.3) else ""
    mask = g.choice(MASK)
    if g.chance(0.4):
        text = f"vote.sync.ballot.b32 {{d}}, {neg}{q}, {mask};"
        write(g, ctx, "r", text, (), True, guarded=False)
    else:
        mode = g.choice(("all", "any", "uni"))
        text = f"vote.sync.{mode}.pred {{d}}, {neg}{q}, {mask};"
        write(g, ctx, "p", text, (), True, guarded=False)


@feature("redux", 1.5, uniform_only=True)
def redux(g: Gen, ctx: Ctx) -> None:
    a = g.src("r")
    mask = g.choice(MASK)
    k = g.rng.random()
    if k < 0.6:
        op = g.choice(("add.u32", "add.s32", "min.u32", "min.s32", "max.u32", "max.s32",
                       "and.b32", "or.b32", "xor.b32"))  # fmt: skip
        write(g, ctx, "r", f"redux.sync.{op} {{d}}, {a}, {mask};", (), True, guarded=False)
    elif k < 0.8:
        write(g, ctx, "r", f"match.any.sync.b32 {{d}}, {a}, {mask};", (), True, guarded=False)
    else:
        p = g.src("p")
        pool = [x for x in g.scope.pool["r"] if x != a] or [a]
        d = g.rng.choice(pool)
        g.set_flag(d, True)
        g.set_flag(p, True)
        g.emit(f"match.all.sync.b32 {d}|{p}, {a}, {mask};")


@feature("bar-red", 1, uniform_only=True)
def bar_red(g: Gen, ctx: Ctx) -> None:
    """A CTA-wide reduction of a predicate: the result is the same in every thread."""
    p = g.src("p")
    neg = "!" if g.chance(0.3) else ""
    if g.chance(0.5):
        write(g, ctx, "r", f"bar.red.popc.u32 {{d}}, 0, {neg}{p};", (), guarded=False)
    else:
        op = g.choice(("and", "or"))
        write(g, ctx, "p", f"bar.red.{op}.pred {{d}}, 0, {neg}{p};", (), guarded=False)
