"""Memory: global loads and stores, shared memory exchanged across barriers, atomics.

Race freedom by construction: a thread writes global memory only in its own output
words; a shared-memory word is written by its owner thread, read by others only after
a barrier, and written again only after another barrier; atomics on words several
threads touch use operations whose final value does not depend on their order
(integer add, and, or, xor, min, max) and never let the returned old value escape;
atomics whose result is used target the thread's own words.
"""

from __future__ import annotations

from fuzz.kernelgen.arith import temp, write
from fuzz.kernelgen.core import Ctx, Gen, feature

# load/store types: suffix -> (register classes it may go to, bytes)
LOAD_TYPES = {
    "u8": (("r", "h"), 1), "s8": (("r", "h"), 1), "u16": (("h", "r"), 2),
    "s16": (("h", "r"), 2), "u32": (("r",), 4), "s32": (("r",), 4), "b32": (("r", "f"), 4),
    "f32": (("f",), 4), "b64": (("rd", "fd"), 8), "u64": (("rd",), 8), "f64": (("fd",), 8),
}  # fmt: skip
CACHE_LD = ("", ".ca", ".cg", ".cs", ".lu", ".cv")
CACHE_ST = ("", ".wb", ".cg", ".cs", ".wt")
CONTENDED_OPS = ("add", "and", "or", "xor", "min", "max")


def _offset(g: Gen, words: int, size: int, first: int = 0) -> int:
    """A byte offset aligned to ``size`` inside ``words`` words starting at ``first``."""
    return first * 4 + g.rng.randrange(words * 4 // size) * size


@feature("memory", 4, kernel_only=True)
def memory(g: Gen, ctx: Ctx) -> None:
    k = g.rng.random()
    f = g.facts
    if k < 0.35:  # this thread's input (read-only)
        ty = g.choice(LOAD_TYPES)
        classes, size = LOAD_TYPES[ty]
        cache = ".nc" if g.chance(0.2) else g.choice(CACHE_LD)
        off = _offset(g, g.in_words, size)
        write(g, ctx, g.choice(classes), f"ld.global{cache}.{ty} {{d}}, [{f.pin}+{off}];", (),
              varying=True)  # fmt: skip
    elif k < 0.5:  # words every thread reads: uniform
        ty = g.choice(LOAD_TYPES)
        classes, size = LOAD_TYPES[ty]
        off = _offset(g, g.uin_words, size)
        write(g, ctx, g.choice(classes), f"ld.global.nc.{ty} {{d}}, [{f.puin}+{off}];", ())
    elif k < 0.65:  # vector load
        n = g.choice(("2", "4"))
        regs = g.rng.sample(g.scope.pool["r"], int(n))
        off = _offset(g, g.in_words, 4 * int(n))
        for r in regs:
            g.set_flag(r, True)
        g.emit(f"ld.global.v{n}.u32 {{{', '.join(regs)}}}, [{f.pin}+{off}];")
    elif k < 0.85:  # store to this thread's scratch words
        ty = g.choice(LOAD_TYPES)
        classes, size = LOAD_TYPES[ty]
        first, words = g.scratch
        off = _offset(g, words, size, first)
        pre, _ = g.guard(ctx)
        g.emit(f"{pre}st.global{g.choice(CACHE_ST)}.{ty} [{f.pout}+{off}], {g.src(classes[0])};")
    else:  # read back scratch (written by this thread or initial)
        ty = g.choice(LOAD_TYPES)
        classes, size = LOAD_TYPES[ty]
        first, words = g.scratch
        off = _offset(g, words, size, first)
        write(g, ctx, classes[0], f"ld.global.{ty} {{d}}, [{f.pout}+{off}];", (), varying=True)


@feature("shared", 3, uniform_only=True)
def shared(g: Gen, ctx: Ctx) -> None:
    """Write my word, barrier, read another thread's word, barrier."""
    f = g.facts
    wide = g.chance(0.3)
    cls, ty, size = ("rd", "b64", 8) if wide else ("r", "b32", 4)
    src = g.src(cls)
    mine = temp(g, "r", f"mad.lo.u32 {{t}}, {f.ltid}, {size}, {f.sh};", (f.ltid,))
    g.emit(f"st.shared.{ty} [{mine}], {src};")
    g.emit(g.choice(("bar.sync 0;", "barrier.sync 0;", f"bar.sync 0, {f.nthr32};")))
    shift = g.operand("r")
    other = temp(g, "r", f"add.u32 {{t}}, {f.ltid}, {shift};", (f.ltid, shift))
    g.emit(f"rem.u32 {other}, {other}, {f.nthr};")
    g.emit(f"mad.lo.u32 {other}, {other}, {size}, {f.sh};")
    write(g, ctx, cls, f"ld.shared.{ty} {{d}}, [{other}];", (), varying=True)
    g.emit("bar.sync 0;")


@feature("shared-atomic", 1.5, uniform_only=True)
def shared_atomic(g: Gen, ctx: Ctx) -> None:
    """Every thread (or a guarded subset) updates one shared counter; after a barrier
    all read the same total (CTA-uniform)."""
    f = g.facts
    op = g.choice(CONTENDED_OPS)
    ty = "u32" if op in ("add", "min", "max") else "b32"
    if op in ("min", "max") and g.chance(0.5):
        ty = "s32"
    word = g.rng.randrange(4) * 4
    pre, _ = g.guard(ctx)
    v = g.operand("r")
    g.emit("bar.sync 0;")
    if g.chance(0.5):
        g.emit(f"{pre}red.shared.{op}.{ty} [{f.shc}+{word}], {v};")
    else:
        junk = g.temp("r")
        g.emit(f"{pre}atom.shared.{op}.{ty} {junk}, [{f.shc}+{word}], {v};")
    g.emit("bar.sync 0;")
    write(g, ctx, "r", f"ld.shared.u32 {{d}}, [{f.shc}+{word}];", ())
    g.emit("bar.sync 0;")


@feature("atomic", 3, kernel_only=True)
def atomic(g: Gen, ctx: Ctx) -> None:
    if g.chance(0.5):
        _contended(g, ctx)
    else:
        _private(g, ctx)


def _contended(g: Gen, ctx: Ctx) -> None:
    """Order-independent updates of the words all threads share; no result escapes."""
    f = g.facts
    # one operation and type per kernel: two different operations on overlapping words
    # (xor.b64 and add.u32, min.s32 and and.b32) do not commute, so the result would
    # depend on the order threads run in
    spec: tuple[str, bool, str] | None = getattr(g, "acc_spec", None)
    if spec is None:
        op = g.choice(CONTENDED_OPS)
        wide = g.chance(0.3)
        if op in ("and", "or", "xor"):
            ty = "b64" if wide else "b32"
        elif op == "add":
            ty = "u64" if wide else "u32"
        else:
            ty = g.choice(("u64", "s64")) if wide else g.choice(("u32", "s32"))
        spec = (op, wide, ty)
        g.acc_spec = spec  # type: ignore[attr-defined]
    op, wide, ty = spec
    size = 8 if wide else 4
    v = g.operand("rd" if wide else "r")
    pre, _ = g.guard(ctx)
    if g.chance(0.5):
        addr = f"[{f.pacc}+{_offset(g, g.acc_words, size)}]"
    else:  # a varying word
        s = g.src("r")
        ix = temp(g, "r", f"and.b32 {{t}}, {s}, {g.acc_words * 4 // size - 1};", (s,))
        a = temp(g, "rd", f"mul.wide.u32 {{t}}, {ix}, {size};", (ix,))
        g.emit(f"add.s64 {a}, {a}, {f.pacc};")
        addr = f"[{a}]"
    scope = g.choice(("", "", ".gpu", ".cta", ".sys"))
    sem = g.choice(("", "", ".relaxed")) if scope else ""
    if g.chance(0.5):
        g.emit(f"{pre}red{sem}{scope}.global.{op}.{ty} {addr}, {v};")
    else:
        junk = g.temp("rd" if wide else "r")
        g.emit(f"{pre}atom{sem}{scope}.global.{op}.{ty} {junk}, {addr}, {v};")


PRIVATE = {
    "add": ("u32", "u64", "f32"), "exch": ("b32", "b64"), "cas": ("b32", "b64"),
    "inc": ("u32",), "dec": ("u32",), "min": ("u32", "s32", "u64", "s64"),
    "max": ("u32", "s32", "u64", "s64"), "and": ("b32", "b64"), "or": ("b32", "b64"),
    "xor": ("b32", "b64"),
}  # fmt: skip


def _private(g: Gen, ctx: Ctx) -> None:
    """Atomics on this thread's scratch words: the old value is deterministic."""
    f = g.facts
    op = g.choice(PRIVATE)
    ty = g.choice(PRIVATE[op])
    cls = "f" if ty == "f32" else ("rd" if ty.endswith("64") else "r")
    size = 8 if ty.endswith("64") else 4
    first, words = g.scratch
    off = _offset(g, words, size, first)
    b = g.operand(cls)
    c = f", {g.operand(cls)}" if op == "cas" else ""
    write(g, ctx, cls, f"atom.global.{op}.{ty} {{d}}, [{f.pout}+{off}], {b}{c};", (),
          varying=True)  # fmt: skip


UNIFORM_OPS = {
    "add": ("u32", "s32", "u64"), "and": ("b32", "b64"), "or": ("b32", "b64"),
    "xor": ("b32", "b64"), "min": ("u32", "s32", "u64", "s64"),
    "max": ("u32", "s32", "u64", "s64"), "inc": ("u32",),
}  # fmt: skip


@feature("uniform-atomic", 2, kernel_only=True)
def uniform_atomic(g: Gen, ctx: Ctx) -> None:
    """Atomics at a warp-uniform address whose old values are used: a scratch word of
    the CTA's first thread, touched only by the CTA's first warp (so only lane order
    decides the results), reached by all of that warp or by a data-dependent subset."""
    f = g.facts
    end = g.label()
    out = temp(g, "p", f"setp.ge.u32 {{t}}, {f.ltid}, 32;", (f.ltid,))
    g.emit(f"@{out} bra {end};")
    if g.chance(0.5):
        g.emit(f"@{g.src('p')} bra {end};")
    op = g.choice(UNIFORM_OPS)
    ty = g.choice(UNIFORM_OPS[op])
    cls = "rd" if ty.endswith("64") else "r"
    size = 8 if cls == "rd" else 4
    first, words = g.scratch
    off = _offset(g, words, size, first)
    if op == "inc":
        v = "-1" if g.chance(0.7) else str(g.rng.randrange(1, 40))
    elif g.chance(0.3):
        v = str(g.rng.randrange(-3, 9))
    else:
        v = g.operand(cls)
    addr = f"[{f.pcta0}+{off}]"
    if op != "inc" and g.chance(0.3):
        g.emit(f"red.global.{op}.{ty} {addr}, {v};")
    else:
        write(g, ctx, cls, f"atom.global.{op}.{ty} {{d}}, {addr}, {v};", (), varying=True,
              guarded=g.chance(0.2))  # fmt: skip
    g.place(end)


LOCAL_TYPES = {"u32": ("r", 4), "s32": ("r", 4), "f32": ("f", 4), "u64": ("rd", 8),
               "u16": ("h", 2), "s16": ("h", 2), "u8": ("r", 1), "s8": ("h", 1)}  # fmt: skip


@feature("local-frame", 1.5, kernel_only=True)
def local_frame(g: Gen, ctx: Ctx) -> None:
    """A per-thread ``.local`` array used like nvcc -O0 frames: stores and loads at
    constant offsets through the local symbol or a ``cvta.local`` generic pointer,
    sometimes a dynamically indexed word, sometimes the pointer escaping into the
    frame's last (never read) word."""
    name = f"fk_loc{g.label()[2:]}"
    g.emit(f".local .align 8 .b8 {name}[32];")
    base = temp(g, "rd", f"mov.u64 {{t}}, {name};", ())
    gen = temp(g, "rd", f"cvta.local.u64 {{t}}, {base};", (base,))
    g.set_flag(gen, True)
    # one slot size per frame (promotable), or any mix (kept in memory)
    size = g.choice((4, 4, 8, 0))
    types = [t for t, (_, sz) in LOCAL_TYPES.items() if size in (0, sz)]
    step = size or 4
    init = "u64" if step == 8 else "u32"
    zero = g.operand("rd" if step == 8 else "r", 0.0)
    for k in range(0, 24, step):  # defined contents (the last word is the escape slot)
        g.emit(f"st.local.{init} [{base}+{k}], {zero};")
    if g.chance(0.2):
        g.emit(f"st.u64 [{gen}+24], {gen};")
    for _ in range(g.rng.randint(2, 6)):
        via = g.choice((f"{base}", f"{gen}"))
        sp = ".local" if via == base else ""
        if step == 4 and g.chance(0.25):  # dynamic index into the 32-bit words 0..5
            s = g.src("r")
            ix = temp(g, "r", f"rem.u32 {{t}}, {s}, 6;", (s,))
            a = temp(g, "rd", f"mul.wide.u32 {{t}}, {ix}, 4;", (ix,))
            g.emit(f"add.s64 {a}, {a}, {via};")
            if g.chance(0.5):
                g.emit(f"st{sp}.u32 [{a}], {g.operand('r')};")
            else:
                write(g, ctx, "r", f"ld{sp}.u32 {{d}}, [{a}];", (), varying=True)
            continue
        ty = g.choice(types)
        cls, sz = LOCAL_TYPES[ty]
        off = g.rng.randrange(24 // sz) * sz
        if g.chance(0.5):
            g.emit(f"st{sp}.{ty} [{via}+{off}], {g.operand(cls)};")
        else:
            write(g, ctx, cls, f"ld{sp}.{ty} {{d}}, [{via}+{off}];", (), varying=True)


@feature("param-load", 1, kernel_only=True)
def param_load(g: Gen, ctx: Ctx) -> None:
    """Re-read a scalar kernel parameter wherever a statement may go (in loops and
    branches): material for specialization and speculative hoisting."""
    cls, ty, name = g.choice(
        (("r", "u32", "fk_a"), ("rd", "u64", "fk_b"), ("f", "f32", "fk_c"), ("fd", "f64", "fk_d"))
    )
    write(g, ctx, cls, f"ld.param.{ty} {{d}}, [{name}];", ())
