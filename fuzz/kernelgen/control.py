"""Control flow: structured ifs, multi-way branches, loops (uniform or with divergent
exits, ``break``/``continue``, 32- or 64-bit counters), irreducible cycles, early exit.

Every cycle carries its own counter, so every kernel terminates.  The uniformity flags
of a cycle are a fixed point: the body is generated, and when a register it leaves
varying was assumed uniform at the head, the body is thrown away and generated again
from the widened assumption (:func:`cyclic`).  After a join, a register is varying
when it is varying on any incoming path.
"""

from __future__ import annotations

from collections.abc import Callable

from fuzz.kernelgen.arith import temp
from fuzz.kernelgen.core import Ctx, Gen, feature

Flags = set[str]


def _n(g: Gen) -> int:
    return g.rng.randint(1, 4)


def _bra(g: Gen, uniform: bool) -> str:
    """``bra.uni`` sometimes where every active lane is known to agree."""
    return "bra.uni" if uniform and g.chance(0.3) else "bra"


def cyclic(g: Gen, region: Callable[[], tuple[Flags, Flags]]) -> None:
    """Emit a cyclic region whose uniformity assumptions hold on every iteration.

    ``region()`` emits the code from the current flags and returns the varying sets on
    its back edges and at its exits.  When a back edge brings a varying register the
    head assumed uniform, the region is regenerated with that register varying."""
    entry = set(g.scope.varying)
    for _ in range(4):
        cp = g.checkpoint()
        g.scope.varying = set(entry)
        back, exits = region()
        if back <= entry:
            g.scope.varying = exits
            return
        entry |= back
        g.rollback(cp)
    g.scope.varying = g.all_pool() | entry
    _, exits = region()
    g.scope.varying = exits | g.all_pool()


@feature("if", 5, compound=True)
def if_(g: Gen, ctx: Ctx) -> None:
    p = g.src("p")
    uni = not g.varying(p)
    neg = "!" if g.chance(0.4) else ""
    has_else = g.chance(0.5)
    l_else, l_end = g.label(), g.label()
    g.emit(f"@{neg}{p} {_bra(g, uni)} {l_else if has_else else l_end};")
    inner = ctx.nested(uniform=uni)
    before = set(g.scope.varying)
    g.statements(inner, _n(g))
    if has_else:
        after_then = set(g.scope.varying)
        g.emit(f"bra.uni {l_end};")
        g.place(l_else)
        g.scope.varying = set(before)
        g.statements(inner, _n(g))
        g.scope.varying |= after_then
    else:
        g.scope.varying |= before
    g.place(l_end)


@feature("switch", 1.5, compound=True)
def switch(g: Gen, ctx: Ctx) -> None:
    """``brx.idx`` over a ``.branchtargets`` table; arms may share a join."""
    n = g.rng.randint(2, 4)
    a = g.src("r")
    idx = temp(g, "r", f"rem.u32 {{t}}, {a}, {n};", (a,))
    uni = not g.varying(idx)
    arms = [g.label() for _ in range(n)]
    table, end = g.label(), g.label()
    g.emit(f"{table}: .branchtargets {', '.join(arms)};")
    g.emit(f"brx.idx{'.uni' if uni and g.chance(0.3) else ''} {idx}, {table};")
    inner = ctx.nested(uniform=uni)
    before = set(g.scope.varying)
    after: Flags = set()
    for i, arm in enumerate(arms):
        g.place(arm)
        g.scope.varying = set(before)
        g.statements(inner, _n(g))
        after |= g.scope.varying
        if i < n - 1:
            g.emit(f"bra.uni {end};")
    g.scope.varying = after
    g.place(end)


def _counter(g: Gen, ctx: Ctx, divergent: bool) -> tuple[str, str, str, bool]:
    """(counter, bound operand, type, bound is varying): a 32- or 64-bit trip count of
    1..4, an immediate or derived from a pool register."""
    wide = g.chance(0.25)
    cls, ty = ("rd", "u64") if wide else ("r", "u32")
    bits = 64 if wide else 32
    if g.chance(0.4) and not divergent:
        bound, varying = str(g.rng.randint(1, 4)), False
    else:
        src = g.src(cls)
        b = temp(g, cls, f"and.b{bits} {{t}}, {src}, 3;", (src,))
        g.emit(f"add.{ty} {b}, {b}, 1;")
        bound, varying = b, g.varying(b)
    c = g.temp(cls)
    g.set_flag(c, varying or not ctx.uniform)
    g.emit(f"mov.{ty} {c}, 0;")
    return c, bound, ty, varying


@feature("loop", 4, compound=True)
def loop(g: Gen, ctx: Ctx) -> None:
    """A counted loop; ``divergent-loop`` adds per-thread trip counts and ``break``s on
    varying predicates (temporal divergence after the loop)."""
    divergent = g.has("divergent-loop") and g.chance(0.5)
    c, bound, ty, bound_varying = _counter(g, ctx, divergent)
    divergent = divergent or bound_varying
    head, done = g.label(), g.label()

    def region() -> tuple[Flags, Flags]:
        g.place(head)
        inner = ctx.nested(uniform=not divergent, loop=True)
        g.statements(inner, _n(g))
        exits: Flags = set()
        if g.chance(0.4):
            q = g.src("p")
            if divergent or not g.varying(q):
                g.emit(f"@{q} {_bra(g, not g.varying(q))} {done};")
                exits |= g.scope.varying
        back = _continue_part(g, inner, c, bound, ty, head)
        return back, exits | back

    cyclic(g, region)
    g.place(done)


def _continue_part(g: Gen, inner: Ctx, c: str, bound: str, ty: str, head: str) -> Flags:
    """The rest of a loop body, an optional ``continue``, the latch; the back-edge flags."""
    latch = g.label() if g.chance(0.3) else None
    at_latch: Flags = set()
    rest = inner
    if latch is not None:
        q = g.src("p")
        g.emit(f"@{q} bra {latch};")
        at_latch |= g.scope.varying
        rest = inner.nested(uniform=not g.varying(q))
    g.statements(rest, _n(g))
    at_latch |= g.scope.varying
    g.scope.varying = at_latch
    if latch is not None:
        g.place(latch)
    t = g.temp("p")
    g.emit(f"add.{ty} {c}, {c}, 1;")
    g.emit(f"setp.lt.{ty} {t}, {c}, {bound};")
    g.emit(f"@{t} {_bra(g, inner.uniform and not g.varying(c))} {head};")
    return set(g.scope.varying)


@feature("irreducible", 1.5, compound=True)
def irreducible(g: Gen, ctx: Ctx) -> None:
    """A cycle of two blocks entered at either one: ``@p bra B; A: ...; B: ...; bra A``."""
    p = g.src("p")
    uni = not g.varying(p)
    limit = g.rng.randint(2, 5)
    ic = g.temp("r")
    g.emit(f"mov.u32 {ic}, 0;")
    la, lb, out = g.label(), g.label(), g.label()
    g.emit(f"@{p} {_bra(g, uni)} {lb};")

    def region() -> tuple[Flags, Flags]:
        entry = set(g.scope.varying)
        g.place(la)
        inner = ctx.nested(uniform=uni, loop=True)
        g.statements(inner, _n(g))
        q = g.temp("p")
        g.emit(f"add.u32 {ic}, {ic}, 1;")
        g.emit(f"setp.ge.u32 {q}, {ic}, {limit};")
        g.emit(f"@{q} bra {out};")
        exit_a = set(g.scope.varying)
        g.scope.varying |= entry
        g.place(lb)
        g.statements(inner, _n(g))
        q2 = g.temp("p")
        g.emit(f"add.u32 {ic}, {ic}, 1;")
        g.emit(f"setp.lt.u32 {q2}, {ic}, {limit};")
        if g.chance(0.4):
            r = g.src("p")
            if not uni or not g.varying(r):
                g.emit(f"and.pred {q2}, {q2}, {r};")
        g.emit(f"@{q2} bra {la};")
        return set(g.scope.varying), exit_a | g.scope.varying

    cyclic(g, region)
    g.place(out)


@feature("exit", 0.7, kernel_only=True)
def early_exit(g: Gen, ctx: Ctx) -> None:
    """``@p exit`` outside cycles; no barrier or warp-synchronous code may follow."""
    if ctx.loop_depth:
        return
    p = g.src("p")
    g.emit(f"@{'!' if g.chance(0.5) else ''}{p} exit;")
    g.no_sync = True


@feature("wide-iv-loop", 1.5)
def wide_iv_loop(g: Gen, ctx: Ctx) -> None:
    """A loop with a 64-bit counter whose start, bound and stride come from edge-valued
    32- or 64-bit registers (near 2^31, 2^32, negative): the shapes IV demotion proves,
    rewrites (``n - i > s``) or versions.  At most four trips, whatever the inputs:
    the bound is ``start + k * step`` computed with wrap-around, and a bound that
    wrapped below the start skips the loop."""
    kind = g.rng.randrange(4)
    k = g.rng.randint(1, 4)
    down = kind == 1 and g.chance(0.5)  # signed, counting down past the bound
    a, t = g.src("r"), g.src("r")
    s32 = temp(g, "r", f"and.b32 {{t}}, {t}, 3;", (t,))
    g.emit(f"add.u32 {s32}, {s32}, 1;")
    if kind in (0, 2) and g.chance(0.4):
        g.emit(f"shl.b32 {s32}, {s32}, {g.rng.choice((29, 30))};")  # strides up to 2^31
    i, n, s, acc = g.temp("rd"), g.temp("rd"), g.temp("rd"), g.temp("rd")
    n32 = g.temp("r")
    cmp = "u64"
    srcs: tuple[str, ...] = (a, t)
    if kind == 0:  # unsigned 32-bit values widened
        g.emit(f"mad.lo.u32 {n32}, {s32}, {k}, {a};")
        g.emit(f"cvt.u64.u32 {i}, {a};")
        g.emit(f"cvt.u64.u32 {n}, {n32};")
    elif kind == 1:  # signed, clamped to +-2^30
        a2 = temp(g, "r", f"min.s32 {{t}}, {a}, 1073741824;", (a,))
        g.emit(f"max.s32 {a2}, {a2}, -1073741824;")
        if down:
            g.emit(f"mul.lo.s32 {n32}, {s32}, {k};")
            g.emit(f"sub.s32 {n32}, {a2}, {n32};")
        else:
            g.emit(f"mad.lo.s32 {n32}, {s32}, {k}, {a2};")
        g.emit(f"cvt.s64.s32 {i}, {a2};")
        g.emit(f"cvt.s64.s32 {n}, {n32};")
        cmp = "s64"
    elif kind == 2:  # 64-bit start and bound (a versioning candidate)
        b = g.src("rd")
        srcs += (b,)
        g.emit(f"mov.b64 {i}, {b};")
        g.emit(f"cvt.u64.u32 {s}, {s32};")
        g.emit(f"mad.lo.u64 {n}, {s}, {k}, {b};")
    else:  # masked below 2^30: provable as it is
        a2 = temp(g, "r", f"and.b32 {{t}}, {a}, 1073741823;", (a,))
        g.emit(f"mad.lo.u32 {n32}, {s32}, {k}, {a2};")
        g.emit(f"cvt.u64.u32 {i}, {a2};")
        g.emit(f"cvt.u64.u32 {n}, {n32};")
    g.emit(f"cvt.u64.u32 {s}, {s32};")
    varying = g.varying(*srcs) or not ctx.uniform
    for r in (i, n, s, acc, n32):
        g.set_flag(r, varying)
    head, done = g.label(), g.label()
    p, q = g.temp("p"), g.temp("p")
    g.set_flag(p, varying)
    g.set_flag(q, varying)
    g.emit(f"mov.u64 {acc}, 0;")
    off = step_off = ""
    if g.chance(0.5):  # an offset recurrence alongside the counter
        off, step_off = g.temp("rd"), g.temp("rd")
        g.set_flag(off, varying)
        g.set_flag(step_off, varying)
        g.emit(f"shl.b64 {off}, {i}, 3;")
        g.emit(f"shl.b64 {step_off}, {s}, 3;")
    g.emit(f"setp.{'le' if down else 'ge'}.{cmp} {p}, {i}, {n};")
    g.emit(f"@{p} bra {done};")
    g.place(head)
    w = g.temp("rd")
    g.set_flag(w, varying)
    g.emit(f"add.s64 {acc}, {acc}, {i};")
    g.emit(f"{g.choice(('shl.b64', 'mul.lo.u64'))} {w}, {i}, {g.rng.randint(1, 5)};")
    g.emit(f"xor.b64 {acc}, {acc}, {w};")
    if off and not down:
        g.emit(f"xor.b64 {acc}, {acc}, {off};")
        g.emit(f"add.s64 {off}, {off}, {step_off};")
    g.emit(f"{'sub' if down else 'add'}.s64 {i}, {i}, {s};")
    g.emit(f"setp.{'gt' if down else 'lt'}.{cmp} {q}, {i}, {n};")
    g.emit(f"@{q} bra {head};")
    g.place(done)
    d = g.dest("rd", ctx, varying)
    if g.chance(0.5):
        g.emit(f"xor.b64 {d}, {acc}, {i};")  # the counter escapes
    else:
        g.emit(f"mov.b64 {d}, {acc};")
