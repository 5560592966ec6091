"""Arithmetic statements: integers of 8/16/32/64 bits, carry chains, floats, conversions,
predicates.

Only operations whose result PTX defines for every input are emitted: a divisor is
forced odd and, when signed, away from -1 (no division by zero, no ``MIN / -1``);
shift counts of any size are fine (PTX clamps them); float operations are the
correctly rounded ones (no ``.approx``, whose precision the ISA leaves open).
"""

from __future__ import annotations

from fuzz.kernelgen.core import Ctx, Gen, feature

BIN32 = (
    "add.s32", "add.u32", "sub.s32", "sub.u32", "mul.lo.s32", "mul.lo.u32", "mul.hi.s32",
    "mul.hi.u32", "min.s32", "min.u32", "max.s32", "max.u32", "and.b32", "or.b32", "xor.b32",
    "shl.b32", "shr.u32", "shr.s32", "shr.b32", "add.sat.s32", "sub.sat.s32", "mul24.lo.s32",
    "mul24.lo.u32", "mul24.hi.s32", "mul24.hi.u32",
)  # fmt: skip
UN32 = (
    "not.b32", "neg.s32", "abs.s32", "popc.b32", "clz.b32", "brev.b32", "bfind.u32",
    "bfind.s32", "bfind.shiftamt.u32", "cnot.b32", "mov.b32",
)  # fmt: skip
TER32 = (
    "mad.lo.s32", "mad.lo.u32", "mad.hi.s32", "mad.hi.u32", "mad.hi.sat.s32", "sad.u32",
    "sad.s32", "mad24.lo.s32", "mad24.hi.u32", "shf.l.wrap.b32", "shf.r.wrap.b32",
    "shf.l.clamp.b32", "shf.r.clamp.b32", "prmt.b32", "prmt.b32.f4e",
    "prmt.b32.b4e", "prmt.b32.rc8", "prmt.b32.ecl", "prmt.b32.ecr", "prmt.b32.rc16",
    "dp4a.u32.u32", "dp4a.s32.s32", "dp4a.s32.u32", "dp2a.lo.u32.u32", "dp2a.hi.s32.s32",
    "slct.b32.s32",
)  # fmt: skip
BIN64 = (
    "add.s64", "add.u64", "sub.s64", "mul.lo.s64", "mul.lo.u64", "mul.hi.s64", "mul.hi.u64",
    "min.s64", "min.u64", "max.s64", "max.u64", "and.b64", "or.b64", "xor.b64",
)  # fmt: skip
SHIFT64 = ("shl.b64", "shr.u64", "shr.s64", "shr.b64")
UN64 = ("not.b64", "neg.s64", "abs.s64", "brev.b64", "mov.b64", "cnot.b64")
COUNT64 = ("popc.b64", "clz.b64", "bfind.u64", "bfind.s64")
BIN16 = (
    "add.u16", "add.s16", "sub.u16", "sub.s16", "mul.lo.u16", "mul.lo.s16", "mul.hi.u16",
    "mul.hi.s16", "min.u16", "min.s16", "max.u16", "max.s16", "and.b16", "or.b16", "xor.b16",
)  # fmt: skip
SHIFT16 = ("shl.b16", "shr.u16", "shr.s16", "shr.b16")
UN16 = ("not.b16", "neg.s16", "abs.s16", "cnot.b16", "mov.b16")
ROUND = ("", ".rn", ".rz", ".rm", ".rp")
FCMP = (
    "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan",
)  # fmt: skip
ICMP = ("eq", "ne", "lt", "le", "gt", "ge")
UCMP = ("eq", "ne", "lo", "ls", "hi", "hs")
TESTP = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")
# integer types of conversions: suffix -> register class
ITYPES = {
    "u16": "h", "s16": "h", "u32": "r", "s32": "r", "u64": "rd", "s64": "rd",
}  # fmt: skip


def write(
    g: Gen,
    ctx: Ctx,
    cls: str,
    text: str,
    srcs: tuple[str, ...],
    varying: bool = False,
    guarded: bool = True,
) -> str:
    """Emit ``text`` (``{d}`` is the destination) overwriting a pool register of class
    ``cls``, under a random guard when guards are on and ``guarded``.  A guarded write
    keeps the old value in lanes where the guard is false, so the result is varying
    when the guard or the old value is."""
    pre, guard_varying = g.guard(ctx) if guarded else ("", False)
    d = g.src(cls)
    v = varying or g.pool_varying(srcs) or guard_varying or (bool(pre) and g.varying(d))
    g.set_flag(d, v or not ctx.uniform)
    g.emit(pre + text.format(d=d))
    return d


def temp(g: Gen, cls: str, text: str, srcs: tuple[str, ...]) -> str:
    """An unguarded temporary (``{t}`` in ``text``), defined in every lane."""
    t = g.temp(cls)
    g.set_flag(t, g.pool_varying(srcs))
    g.emit(text.format(t=t))
    return t


def safe_divisor(g: Gen, cls: str, bits: int, signed: bool, b: str) -> str:
    """``b`` made odd (never 0) and, for signed division, never -1."""
    t = temp(g, cls, f"or.b{bits} {{t}}, {b}, 1;", (b,))
    if signed:
        q = temp(g, "p", f"setp.eq.s{bits} {{t}}, {t}, -1;", (t,))
        g.emit(f"selp.b{bits} {t}, 1, {t}, {q};")
    return t


def _div(g: Gen, ctx: Ctx, cls: str, bits: int) -> None:
    signed = g.chance(0.5)
    a, b = g.src(cls), g.operand(cls)
    t = safe_divisor(g, cls, bits, signed, b)
    op = g.choice(("div", "rem"))
    write(g, ctx, cls, f"{op}.{'s' if signed else 'u'}{bits} {{d}}, {a}, {t};", (a, t))


@feature("int32", 6)
def int32(g: Gen, ctx: Ctx) -> None:
    k = g.rng.random()
    a = g.src("r")
    if k < 0.45:
        b = g.operand("r")
        write(g, ctx, "r", f"{g.choice(BIN32)} {{d}}, {a}, {b};", (a, b))
    elif k < 0.6:
        write(g, ctx, "r", f"{g.choice(UN32)} {{d}}, {a};", (a,))
    elif k < 0.85:
        op = g.choice(TER32)
        b, c = g.src("r"), g.operand("r")
        write(g, ctx, "r", f"{op} {{d}}, {a}, {b}, {c};", (a, b, c))
    elif k < 0.9:
        b, c, e = g.src("r"), g.field(), g.field()
        if g.chance(0.5):
            write(g, ctx, "r", f"bfi.b32 {{d}}, {a}, {b}, {c}, {e};", (a, b, c, e))
        else:
            op = g.choice(("bfe.u32", "bfe.s32"))
            write(g, ctx, "r", f"{op} {{d}}, {a}, {c}, {e};", (a, c, e))
    elif k < 0.95:
        b, c = g.src("r"), g.src("r")
        lut = g.rng.randrange(256)
        write(g, ctx, "r", f"lop3.b32 {{d}}, {a}, {b}, {c}, {lut};", (a, b, c))
    else:
        _div(g, ctx, "r", 32)


@feature("int64", 4)
def int64(g: Gen, ctx: Ctx) -> None:
    k = g.rng.random()
    a = g.src("rd")
    if k < 0.35:
        b = g.operand("rd")
        write(g, ctx, "rd", f"{g.choice(BIN64)} {{d}}, {a}, {b};", (a, b))
    elif k < 0.45:
        s = g.operand("r")
        write(g, ctx, "rd", f"{g.choice(SHIFT64)} {{d}}, {a}, {s};", (a, s))
    elif k < 0.55:
        write(g, ctx, "rd", f"{g.choice(UN64)} {{d}}, {a};", (a,))
    elif k < 0.62:
        write(g, ctx, "r", f"{g.choice(COUNT64)} {{d}}, {a};", (a,))
    elif k < 0.72:
        x, y = g.src("r"), g.operand("r")
        op = g.choice(("mul.wide.s32", "mul.wide.u32"))
        write(g, ctx, "rd", f"{op} {{d}}, {x}, {y};", (x, y))
    elif k < 0.78:
        b, c = g.src("rd"), g.operand("rd")
        op = g.choice(("mad.lo.s64", "mad.lo.u64", "mad.hi.u64", "mad.hi.s64"))
        write(g, ctx, "rd", f"{op} {{d}}, {a}, {b}, {c};", (a, b, c))
    elif k < 0.84:
        x, y = g.src("r"), g.src("r")
        write(g, ctx, "rd", f"mov.b64 {{d}}, {{{{{x}, {y}}}}};", (x, y))
    elif k < 0.89:
        _unpack64(g, ctx, a)
    elif k < 0.94:
        pos, ln = g.field(), g.field()
        op = g.choice(("bfe.u64", "bfe.s64"))
        write(g, ctx, "rd", f"{op} {{d}}, {a}, {pos}, {ln};", (a, pos, ln))
    else:
        _div(g, ctx, "rd", 64)


def _unpack64(g: Gen, ctx: Ctx, a: str) -> None:
    """``mov.b64 {lo, hi}, a`` into two distinct pool registers (unguarded)."""
    pool = g.scope.pool["r"]
    lo, hi = g.rng.sample(pool, 2)
    for d in (lo, hi):
        g.set_flag(d, g.varying(a) or not ctx.uniform)
    g.emit(f"mov.b64 {{{lo}, {hi}}}, {a};")


@feature("int16", 3)
def int16(g: Gen, ctx: Ctx) -> None:
    k = g.rng.random()
    a = g.src("h")
    if k < 0.45:
        b = g.operand("h")
        write(g, ctx, "h", f"{g.choice(BIN16)} {{d}}, {a}, {b};", (a, b))
    elif k < 0.55:
        s = g.operand("r")
        write(g, ctx, "h", f"{g.choice(SHIFT16)} {{d}}, {a}, {s};", (a, s))
    elif k < 0.65:
        write(g, ctx, "h", f"{g.choice(UN16)} {{d}}, {a};", (a,))
    elif k < 0.75:
        b, c = g.src("h"), g.operand("h")
        op = g.choice(("mad.lo.s16", "mad.lo.u16", "mad.hi.s16"))
        write(g, ctx, "h", f"{op} {{d}}, {a}, {b}, {c};", (a, b, c))
    elif k < 0.9:
        b = g.operand("h")
        op = g.choice(("mul.wide.s16", "mul.wide.u16"))
        write(g, ctx, "r", f"{op} {{d}}, {a}, {b};", (a, b))
    else:
        _div(g, ctx, "h", 16)


@feature("int8", 2)
def int8(g: Gen, ctx: Ctx) -> None:
    """Byte conversions: truncation, sign and zero extension, saturation."""
    sat = ".sat" if g.chance(0.2) else ""
    k = g.rng.random()
    if k < 0.4:
        a = g.src("r")
        op = g.choice(("cvt.s32.s8", "cvt.u32.u8", "cvt.s32.u8", "cvt.u32.s8"))
        write(g, ctx, "r", f"{op} {{d}}, {a};", (a,))
    elif k < 0.6:
        a = g.src("r")
        op = g.choice(("s8.s32", "u8.u32", "u8.s32", "s8.u32"))
        write(g, ctx, "r", f"cvt{sat}.{op} {{d}}, {a};", (a,))
    elif k < 0.8:
        a = g.src("h")
        op = g.choice(("s16.s8", "u16.u8", "s16.u8", "u16.s8"))
        write(g, ctx, "h", f"cvt.{op} {{d}}, {a};", (a,))
    else:
        a = g.src("h")
        op = g.choice(("s8.s16", "u8.u16", "u8.s16", "s8.u16"))
        write(g, ctx, "h", f"cvt{sat}.{op} {{d}}, {a};", (a,))


@feature("carry", 2)
def carry(g: Gen, ctx: Ctx) -> None:
    """An ``add.cc``/``addc`` (or ``sub``/``mad``) chain: the flag flows through
    instructions that may write any registers; links after the first may be guarded
    (a guarded-off link leaves the flag as it was)."""
    wide = g.chance(0.3)
    cls, ty = ("rd", "u64") if wide else ("r", "u32")
    kind = g.choice(("add", "sub", "mad")) if not wide else g.choice(("add", "sub"))
    n = g.rng.randint(2, 4)
    flag_varying = False  # the carry depends on every source of the chain so far
    for i in range(n):
        last = i == n - 1
        a, b = g.src(cls), g.operand(cls)
        srcs: tuple[str, ...]
        if kind == "mad":
            c = g.operand(cls)
            op = ("mad" if i == 0 else "madc") + "." + g.choice(("lo", "hi"))
            text, srcs = f"{op}{'' if last else '.cc'}.{ty} {{d}}, {a}, {b}, {c};", (a, b, c)
        else:
            op = kind if i == 0 else kind + "c"
            text, srcs = f"{op}{'' if last else '.cc'}.{ty} {{d}}, {a}, {b};", (a, b)
        if i == 0:
            d = g.src(cls)
            g.set_flag(d, g.pool_varying(srcs) or not ctx.uniform)
            g.emit(text.format(d=d))
        else:
            d = write(g, ctx, cls, text, srcs, varying=flag_varying)
        flag_varying = flag_varying or g.varying(d)


def _float_bin(g: Gen, ctx: Ctx, cls: str, ty: str, f32: bool) -> None:
    a, b = g.src(cls), g.operand(cls)
    op = g.choice(("add", "sub", "mul"))
    mods = g.choice(ROUND)
    if f32 and g.chance(0.3):
        mods += ".ftz"
    if f32 and g.chance(0.15):
        mods += ".sat"
    write(g, ctx, cls, f"{op}{mods}.{ty} {{d}}, {a}, {b};", (a, b))


def _float_misc(g: Gen, ctx: Ctx, cls: str, ty: str, f32: bool) -> None:
    ftz = ".ftz" if f32 and g.chance(0.3) else ""
    a = g.src(cls)
    k = g.rng.random()
    if k < 0.25:
        b, c = g.src(cls), g.operand(cls)
        rnd = g.choice(ROUND[1:])
        sat = ".sat" if f32 and g.chance(0.15) else ""
        write(g, ctx, cls, f"fma{rnd}{ftz}{sat}.{ty} {{d}}, {a}, {b}, {c};", (a, b, c))
    elif k < 0.4:
        b = g.operand(cls)
        rnd = g.choice(ROUND[1:])
        write(g, ctx, cls, f"div{rnd}{ftz}.{ty} {{d}}, {a}, {b};", (a, b))
    elif k < 0.5:
        op = g.choice(("sqrt", "rcp"))
        rnd = g.choice(ROUND[1:])
        write(g, ctx, cls, f"{op}{rnd}{ftz}.{ty} {{d}}, {a};", (a,))
    elif k < 0.7:
        b = g.operand(cls)
        op = g.choice(("min", "max"))
        nan = ".NaN" if f32 and g.chance(0.3) else ""
        write(g, ctx, cls, f"{op}{ftz}{nan}.{ty} {{d}}, {a}, {b};", (a, b))
    elif k < 0.85:
        op = g.choice(("abs", "neg"))
        write(g, ctx, cls, f"{op}{ftz}.{ty} {{d}}, {a};", (a,))
    elif k < 0.93:
        b = g.src(cls)
        write(g, ctx, cls, f"copysign.{ty} {{d}}, {a}, {b};", (a, b))
    else:
        p = g.src("p")
        b = g.operand(cls)
        write(g, ctx, cls, f"selp.{ty} {{d}}, {a}, {b}, {p};", (a, b, p))


@feature("float32", 4)
def float32(g: Gen, ctx: Ctx) -> None:
    if g.chance(0.45):
        _float_bin(g, ctx, "f", "f32", True)
    elif g.chance(0.85):
        _float_misc(g, ctx, "f", "f32", True)
    else:
        _half(g, ctx)


def _half(g: Gen, ctx: Ctx) -> None:
    """f16 arithmetic in 16-bit registers."""
    a, b = g.src("h"), g.src("h")
    op = g.choice(("add", "sub", "mul"))
    rnd = g.choice(("", ".rn"))
    write(g, ctx, "h", f"{op}{rnd}.f16 {{d}}, {a}, {b};", (a, b))


@feature("float64", 3)
def float64(g: Gen, ctx: Ctx) -> None:
    if g.chance(0.45):
        _float_bin(g, ctx, "fd", "f64", False)
    else:
        _float_misc(g, ctx, "fd", "f64", False)


@feature("convert", 3)
def convert(g: Gen, ctx: Ctx) -> None:
    k = g.rng.random()
    if k < 0.35:  # integer widths
        dt, st = g.choice(ITYPES), g.choice(ITYPES)
        sat = ".sat" if g.chance(0.2) and _may_saturate(dt, st) else ""
        a = g.src(ITYPES[st])
        write(g, ctx, ITYPES[dt], f"cvt{sat}.{dt}.{st} {{d}}, {a};", (a,))
    elif k < 0.55:  # integer -> float
        st = g.choice(("s32", "u32", "s64", "u64", "s16", "u16"))
        dt, dcls = g.choice((("f32", "f"), ("f64", "fd")))
        a = g.src(ITYPES[st])
        rnd = g.choice(ROUND[1:])
        write(g, ctx, dcls, f"cvt{rnd}.{dt}.{st} {{d}}, {a};", (a,))
    elif k < 0.75:  # float -> integer
        st, scls = g.choice((("f32", "f"), ("f64", "fd")))
        dt = g.choice(("s32", "u32", "s64", "u64", "s16", "u16"))
        ftz = ".ftz" if st == "f32" and g.chance(0.3) else ""
        sat = ".sat" if g.chance(0.2) else ""
        a = g.src(scls)
        rnd = g.choice((".rni", ".rzi", ".rmi", ".rpi"))
        write(g, ctx, ITYPES[dt], f"cvt{rnd}{ftz}{sat}.{dt}.{st} {{d}}, {a};", (a,))
    elif k < 0.9:  # float <-> float, round to integral, half
        _float_convert(g, ctx)
    else:  # bit casts
        if g.chance(0.5):
            a = g.src("r")
            write(g, ctx, "f", f"mov.b32 {{d}}, {a};", (a,))
        else:
            a = g.src("fd")
            write(g, ctx, "rd", f"mov.b64 {{d}}, {a};", (a,))


def _may_saturate(dt: str, st: str) -> bool:
    """ptxas accepts ``cvt.sat`` between integers only where a value can be out of range."""
    dbits, sbits = int(dt[1:]), int(st[1:])
    if dt[0] == "s" and st[0] == "u":
        return dbits <= sbits
    return dbits < sbits or (dt[0] == "u" and st[0] == "s")


def _float_convert(g: Gen, ctx: Ctx) -> None:
    k = g.rng.random()
    ftz = ".ftz" if g.chance(0.3) else ""
    if k < 0.25:
        a = g.src("f")
        write(g, ctx, "fd", f"cvt{ftz}.f64.f32 {{d}}, {a};", (a,))
    elif k < 0.5:
        a = g.src("fd")
        rnd = g.choice(ROUND[1:])
        write(g, ctx, "f", f"cvt{rnd}{ftz}.f32.f64 {{d}}, {a};", (a,))
    elif k < 0.7:
        a = g.src("f")
        rnd = g.choice((".rni", ".rzi", ".rmi", ".rpi"))
        write(g, ctx, "f", f"cvt{rnd}{ftz}.f32.f32 {{d}}, {a};", (a,))
    elif k < 0.85:
        a = g.src("f")
        rnd = g.choice(ROUND[1:])
        write(g, ctx, "h", f"cvt{rnd}.f16.f32 {{d}}, {a};", (a,))
    else:
        a = g.src("h")
        write(g, ctx, "f", f"cvt.f32.f16 {{d}}, {a};", (a,))


@feature("predicates", 4)
def predicates(g: Gen, ctx: Ctx) -> None:
    k = g.rng.random()
    if k < 0.55:
        setp(g, ctx)
    elif k < 0.7:
        a, b = g.src("p"), g.src("p")
        op = g.choice(("and", "or", "xor"))
        write(g, ctx, "p", f"{op}.pred {{d}}, {a}, {b};", (a, b))
    elif k < 0.78:
        a = g.src("p")
        write(g, ctx, "p", f"not.pred {{d}}, {a};", (a,))
    elif k < 0.9:
        cls, ty = g.choice((("r", "b32"), ("rd", "b64"), ("h", "b16")))
        a, b, p = g.src(cls), g.operand(cls), g.src("p")
        write(g, ctx, cls, f"selp.{ty} {{d}}, {a}, {b}, {p};", (a, b, p))
    else:
        cls, ty = g.choice((("f", "f32"), ("fd", "f64")))
        a = g.src(cls)
        write(g, ctx, "p", f"testp.{g.choice(TESTP)}.{ty} {{d}}, {a};", (a,))


def compare(g: Gen) -> tuple[str, str, str]:
    """A random comparison: (``cmp.type``, a, b) over pool registers."""
    cls, ty = g.choice(
        (("r", "s32"), ("r", "u32"), ("rd", "s64"), ("rd", "u64"), ("h", "s16"), ("r", "b32"),
         ("f", "f32"), ("fd", "f64"))
    )  # fmt: skip
    if ty[0] == "f":
        cmp = g.choice(FCMP)
    elif ty[0] == "u":
        cmp = g.choice(UCMP + ICMP)
    elif ty[0] == "b":
        cmp = g.choice(("eq", "ne"))
    else:
        cmp = g.choice(ICMP)
    ftz = ".ftz" if ty == "f32" and g.chance(0.3) else ""
    return f"{cmp}{ftz}.{ty}", g.src(cls), g.operand(cls)


def setp(g: Gen, ctx: Ctx) -> None:
    cmp, a, b = compare(g)
    k = g.rng.random()
    if k < 0.6:
        write(g, ctx, "p", f"setp.{cmp} {{d}}, {a}, {b};", (a, b))
    elif k < 0.8:
        c = g.src("p")
        bop = g.choice(("and", "or", "xor"))
        neg = "!" if g.chance(0.3) else ""
        name, rest = cmp.split(".", 1)
        write(g, ctx, "p", f"setp.{name}.{bop}.{rest} {{d}}, {a}, {b}, {neg}{c};", (a, b, c))
    else:
        p, q = g.rng.sample(g.scope.pool["p"], 2)
        for d in (p, q):
            g.set_flag(d, g.pool_varying((a, b)) or not ctx.uniform)
        g.emit(f"setp.{cmp} {p}|{q}, {a}, {b};")
