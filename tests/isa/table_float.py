"""Edge tables: f32/f64 arithmetic in every rounding mode with ``.ftz``/``.sat``,
``div``/``rcp``/``sqrt`` (IEEE forms), ``min``/``max`` with NaN and signed zeros,
``abs``/``neg``/``copysign``/``testp`` and the comparisons ``setp``/``set``/``slct``
(PTX ISA 9.0, sections 9.7.3 and 9.7.6).  References: exact rational arithmetic
rounded once (``refs.py``).

Readings settled on an H100 (the ISA does not fix NaN payloads; see ``hwcheck/``):

* f32: every NaN result is the canonical NaN 0x7fffffff, ``abs``/``neg`` of a NaN
  included (they act on the sign bit of every other value).
* f64: a NaN operand propagates, quieted, with its sign and payload; ``add``/``sub``/
  ``mul``/``min``/``max`` prefer ``b``'s NaN over ``a``'s, ``div`` prefers ``a``'s,
  ``fma`` takes ``b``'s, then ``c``'s, then ``a``'s;
  ``abs``/``neg`` return the quieted NaN unchanged; an invalid operation (0 * inf,
  inf - inf, 0 / 0, sqrt of a negative number) gives 0xfff8000000000000.
* ``.ftz`` flushes a result that is tiny after rounding to the format's precision
  with an unbounded exponent (IEEE 754's tininess after rounding): 0x00800000 *
  0x3f7fffff (exactly 2^-127 * (2 - 2^-23)) gives +0 although it rounds to the smallest
  normal, 2^-126 * 2^-126 - 2^-126 does not flush; ``.sat`` turns NaN into +0;
  ``min``/``max`` order -0 below +0;
  ``.xorsign.abs`` takes the sign from both operands' sign bits, a NaN's included.
* ``testp.normal`` is true for +-0 (the ISA text says so explicitly).
"""

from __future__ import annotations

from functools import partial

from lanes import Case, grid, make
from refs import (
    CANONICAL_NAN,
    F32,
    F64,
    Fmt,
    Val,
    add,
    decode,
    div,
    edge_floats,
    encode,
    f64_nan,
    flush,
    fma,
    is_nan_bits,
    mul,
    neg,
    quiet,
    round_val,
    sqrt_round,
)

FAMILY = "float"
MODES = ("rn", "rz", "rm", "rp")
FMT = {"f32": F32, "f64": F64}


def FMA_NAN_ORDER(a: int, b: int, c: int) -> list[int]:  # noqa: N802 - a constant rule
    """Which NaN operand of an ``fma.f64`` propagates first: ``b``, then ``c``, then
    ``a`` (measured on an H100)."""
    return [b, c, a]


def _extra(fmt: Fmt) -> list[int]:
    """Ordinary values that make sums and products round: 1/3, 2/3, 10, 0.1 and
    values whose product overflows or underflows."""
    if fmt is F32:
        return [0x3EAAAAAB, 0x3F2AAAAB, 0x41200000, 0x3DCCCCCD, 0x7E800000, 0x00800001, 0xBF7FFFFF]
    return [
        0x3FD5555555555555,
        0x3FE5555555555555,
        0x4024000000000000,
        0x3FB999999999999A,
        0x7FD0000000000000,
        0x0010000000000001,
        0xBFEFFFFFFFFFFFFF,
    ]


def _values(fmt: Fmt) -> list[int]:
    return sorted(set(edge_floats(fmt)) | set(_extra(fmt)))


def _binary(x: int, y: int, op: str, fmt: Fmt, mode: str, ftz: bool, sat: bool) -> int:
    a, b = decode(x, fmt), decode(y, fmt)
    if ftz:
        a, b = flush(a, fmt), flush(b, fmt)
    if op == "sub":
        b = neg(b)
    r = mul(a, b) if op == "mul" else add(a, b, mode)
    if fmt is F64 and r.kind == "nan":
        return f64_nan([y, x], invalid=True)
    return round_val(r, fmt, mode, ftz, sat)


def _arith_cases() -> list[Case]:
    out = []
    for t, fmt in FMT.items():
        vals = _values(fmt)
        a, b = grid(vals, vals)
        for op in ("add", "sub", "mul"):
            forms = [(f"{op}.{m}.{t}", m, False, False) for m in MODES]
            if t == "f32":
                forms += [
                    (f"{op}.rn.ftz.{t}", "rn", True, False),
                    (f"{op}.rz.ftz.{t}", "rz", True, False),
                    (f"{op}.rn.sat.{t}", "rn", False, True),
                    (f"{op}.rm.ftz.sat.{t}", "rm", True, True),
                ]
            body = "\n".join(f"{name} %o{k}, %a, %b;" for k, (name, *_) in enumerate(forms))
            outputs = {
                f"o{k}": (t, partial(_binary, op=op, fmt=fmt, mode=m, ftz=z, sat=s))
                for k, (_, m, z, s) in enumerate(forms)
            }
            out.append(make(f"{op}.{t}", FAMILY, body, {"a": (t, a), "b": (t, b)}, outputs))
    return out


def _fma_ref(x: int, y: int, z: int, fmt: Fmt, mode: str, ftz: bool, sat: bool) -> int:
    a, b, c = (decode(v, fmt) for v in (x, y, z))
    if ftz:
        a, b, c = (flush(v, fmt) for v in (a, b, c))
    r = fma(a, b, c, mode)
    if fmt is F64 and r.kind == "nan":
        return f64_nan(FMA_NAN_ORDER(x, y, z), invalid=True)
    return round_val(r, fmt, mode, ftz, sat)


def _fma_cases() -> list[Case]:
    out = []
    for t, fmt in FMT.items():
        vals = _values(fmt)
        nans = [x for x in vals if decode(x, fmt).kind == "nan"][:2]
        small = sorted(set(vals[:: max(1, len(vals) // 10)]) | set(nans))
        a, b, c = grid(small, small, small)
        forms = [(f"fma.{m}.{t}", m, False, False) for m in MODES]
        if t == "f32":
            forms += [
                ("fma.rn.ftz.f32", "rn", True, False),
                ("fma.rn.sat.f32", "rn", False, True),
                ("fma.rz.ftz.sat.f32", "rz", True, True),
            ]
        body = "\n".join(f"{name} %o{k}, %a, %b, %c;" for k, (name, *_) in enumerate(forms))
        outputs = {
            f"o{k}": (t, partial(_fma_ref, fmt=fmt, mode=m, ftz=z, sat=s))
            for k, (_, m, z, s) in enumerate(forms)
        }
        out.append(make(f"fma.{t}", FAMILY, body, {"a": (t, a), "b": (t, b), "c": (t, c)}, outputs))
    return out


def _div_ref(x: int, y: int, fmt: Fmt, mode: str, ftz: bool) -> int:
    a, b = decode(x, fmt), decode(y, fmt)
    if ftz:
        a, b = flush(a, fmt), flush(b, fmt)
    r = div(a, b)
    if fmt is F64 and r.kind == "nan":
        return f64_nan([x, y], invalid=True)
    return round_val(r, fmt, mode, ftz)


def _rcp_ref(x: int, fmt: Fmt, mode: str, ftz: bool) -> int:
    if fmt is F64 and is_nan_bits(x, fmt):
        return quiet(x, fmt)
    one = encode(Val.of(1), fmt)
    return _div_ref(one, x, fmt, mode, ftz)


def _sqrt_ref(x: int, fmt: Fmt, mode: str, ftz: bool) -> int:
    a = decode(x, fmt)
    if ftz:
        a = flush(a, fmt)
    r = sqrt_round(a, fmt, mode)
    if decode(r, fmt).kind == "nan":
        return f64_nan([x], invalid=True) if fmt is F64 else CANONICAL_NAN[fmt.name]
    return round_val(decode(r, fmt), fmt, mode, ftz)


def _ieee_cases() -> list[Case]:
    """``div.rnd``, ``rcp.rnd`` and ``sqrt.rnd``: correctly rounded (the ``.approx`` and
    ``.full`` forms are not exact and are left out)."""
    out = []
    for t, fmt in FMT.items():
        vals = _values(fmt)
        a, b = grid(vals, vals)
        ftzs = (False, True) if t == "f32" else (False,)
        forms = [(m, z) for m in MODES for z in ftzs]
        name = {True: ".ftz", False: ""}
        body = "\n".join(f"div.{m}{name[z]}.{t} %o{k}, %a, %b;" for k, (m, z) in enumerate(forms))
        outputs = {
            f"o{k}": (t, partial(_div_ref, fmt=fmt, mode=m, ftz=z))
            for k, (m, z) in enumerate(forms)
        }
        out.append(make(f"div.{t}", FAMILY, body, {"a": (t, a), "b": (t, b)}, outputs))
        body = "\n".join(
            f"rcp.{m}{name[z]}.{t} %r{k}, %a;\nsqrt.{m}{name[z]}.{t} %s{k}, %a;"
            for k, (m, z) in enumerate(forms)
        )
        outputs = {}
        for k, (m, z) in enumerate(forms):
            outputs[f"r{k}"] = (t, partial(_rcp_ref, fmt=fmt, mode=m, ftz=z))
            outputs[f"s{k}"] = (t, partial(_sqrt_ref, fmt=fmt, mode=m, ftz=z))
        out.append(make(f"rcp/sqrt.{t}", FAMILY, body, {"a": (t, vals)}, outputs))
    return out


def _less(a: Val, b: Val) -> bool:
    """Total order of non-NaN values with -0 below +0."""
    ka = (-1 if a.neg else 1) * (float("inf") if a.kind == "inf" else 0)
    kb = (-1 if b.neg else 1) * (float("inf") if b.kind == "inf" else 0)
    if ka or kb:
        return ka < kb
    if a.value != b.value:
        return a.value < b.value
    return a.neg and not b.neg


def _minmax(x: int, y: int, fmt: Fmt, op: str, ftz: bool, nan: bool, xorsign: bool) -> int:
    a, b = decode(x, fmt), decode(y, fmt)
    if ftz:
        a, b = flush(a, fmt), flush(b, fmt)
    top = fmt.bits - 1
    sign = bool((x >> top) ^ (y >> top))
    if xorsign:
        a, b = Val(a.kind, False, a.mag), Val(b.kind, False, b.mag)
    if a.kind == "nan" and b.kind == "nan" or nan and (a.kind == "nan" or b.kind == "nan"):
        if fmt is F64:
            return f64_nan([y, x], invalid=False)
        return CANONICAL_NAN[fmt.name]
    if a.kind == "nan":
        r = b
    elif b.kind == "nan":
        r = a
    else:
        first = _less(a, b) if op == "min" else _less(b, a)
        r = a if first else b
    if xorsign:
        r = Val(r.kind, sign, r.mag)
    return encode(r, fmt)


def _minmax_cases() -> list[Case]:
    out = []
    for t, fmt in FMT.items():
        vals = _values(fmt)
        a, b = grid(vals, vals)
        forms = [("", False, False, False)]
        if t == "f32":
            forms += [
                (".ftz", True, False, False),
                (".NaN", False, True, False),
                (".ftz.NaN", True, True, False),
                (".xorsign.abs", False, False, True),
                (".NaN.xorsign.abs", False, True, True),
            ]
        for op in ("min", "max"):
            body = "\n".join(f"{op}{mods}.{t} %o{k}, %a, %b;" for k, (mods, *_) in enumerate(forms))
            outputs = {
                f"o{k}": (t, partial(_minmax, fmt=fmt, op=op, ftz=z, nan=n, xorsign=x))
                for k, (_, z, n, x) in enumerate(forms)
            }
            out.append(
                make(
                    f"{op}.{t}",
                    FAMILY,
                    body,
                    {"a": (t, a), "b": (t, b)},
                    outputs,
                    version="8.6",
                )
            )
    return out


def _sign_cases() -> list[Case]:
    """``abs``/``neg`` (sign bit only, ``.ftz`` flushes first), ``copysign`` (the sign of
    ``a`` on the value of ``b``) and ``testp``."""
    out = []
    for t, fmt in FMT.items():
        vals = _values(fmt)
        top = 1 << (fmt.bits - 1)
        tiny = 2**fmt.emin

        def ftz_bits(x: int, fmt: Fmt = fmt) -> int:
            return encode(flush(decode(x, fmt), fmt), fmt) if decode(x, fmt).kind == "num" else x

        def sign_op(x: int, flip: bool, ftz: bool = False, fmt: Fmt = fmt, top: int = top) -> int:
            if is_nan_bits(x, fmt):
                return quiet(x, fmt) if fmt is F64 else CANONICAL_NAN[fmt.name]
            x = ftz_bits(x) if ftz else x
            return x ^ top if flip else x & ~top

        outputs = {
            "d": (t, partial(sign_op, flip=False)),
            "e": (t, partial(sign_op, flip=True)),
        }
        body = f"abs.{t} %d, %a;\nneg.{t} %e, %a;"
        if t == "f32":
            body += "\nabs.ftz.f32 %f, %a;\nneg.ftz.f32 %g, %a;"
            outputs["f"] = (t, partial(sign_op, flip=False, ftz=True))
            outputs["g"] = (t, partial(sign_op, flip=True, ftz=True))
        tests = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")

        def testp(x: int, what: str, fmt: Fmt = fmt, tiny: object = tiny) -> int:
            v = decode(x, fmt)
            return int(
                {
                    "finite": v.kind == "num",
                    "infinite": v.kind == "inf",
                    "number": v.kind != "nan",
                    "notanumber": v.kind == "nan",
                    "normal": v.kind == "num" and (v.mag >= tiny or v.mag == 0),  # type: ignore[operator]
                    "subnormal": v.kind == "num" and 0 < v.mag < tiny,  # type: ignore[operator]
                }[what]
            )

        for k, what in enumerate(tests):
            body += f"\ntestp.{what}.{t} %p{k}, %a;"
            outputs[f"p{k}"] = ("pred", partial(testp, what=what))
        out.append(make(f"abs/neg/testp.{t}", FAMILY, body, {"a": (t, vals)}, outputs))
        a, b = grid(vals, vals[::3])
        out.append(
            make(
                f"copysign.{t}",
                FAMILY,
                f"copysign.{t} %d, %a, %b;",
                {"a": (t, a), "b": (t, b)},
                {"d": (t, lambda x, y, top=top: (y & ~top) | (x & top))},
            )
        )
    return out


CMP = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


def _compare(x: int, y: int, cmp: str, fmt: Fmt, ftz: bool = False) -> int:
    a, b = decode(x, fmt), decode(y, fmt)
    if ftz:
        a, b = flush(a, fmt), flush(b, fmt)
    unordered = a.kind == "nan" or b.kind == "nan"
    if cmp == "num":
        return int(not unordered)
    if cmp == "nan":
        return int(unordered)
    if unordered:
        return int(cmp.endswith("u"))
    base = cmp[:-1] if cmp.endswith("u") else cmp

    def key(v: Val) -> tuple[int, object]:
        if v.kind == "inf":
            return (-1 if v.neg else 1, 0)
        return (0, v.value)

    ka, kb = key(a), key(b)
    return int(
        {
            "eq": ka == kb,
            "ne": ka != kb,
            "lt": ka < kb,
            "le": ka <= kb,
            "gt": ka > kb,
            "ge": ka >= kb,
        }[base]  # type: ignore[operator]
    )


def _compare_cases() -> list[Case]:
    out = []
    for t, fmt in FMT.items():
        vals = _values(fmt)
        a, b = grid(vals, vals)
        body = "\n".join(f"setp.{c}.{t} %p{k}, %a, %b;" for k, c in enumerate(CMP))
        outputs = {f"p{k}": ("pred", partial(_compare, cmp=c, fmt=fmt)) for k, c in enumerate(CMP)}
        if t == "f32":
            body += "\nsetp.lt.ftz.f32 %q0, %a, %b;\nsetp.equ.ftz.f32 %q1, %a, %b;"
            outputs["q0"] = ("pred", partial(_compare, cmp="lt", fmt=fmt, ftz=True))
            outputs["q1"] = ("pred", partial(_compare, cmp="equ", fmt=fmt, ftz=True))
        out.append(make(f"setp.{t}", FAMILY, body, {"a": (t, a), "b": (t, b)}, outputs))
        one = encode(Val.of(1), F32)
        body = (
            f"set.gtu.u32.{t} %d, %a, %b;\nset.lt.s32.{t} %e, %a, %b;\n"
            f"set.ne.f32.{t} %f, %a, %b;\nsetp.le.and.{t} %g|%h, %a, %b, %q;"
        )
        q = [k % 2 for k in range(len(a))]
        out.append(
            make(
                f"set/setp.and.{t}",
                FAMILY,
                body,
                {"a": (t, a), "b": (t, b), "q": ("pred", q)},
                {
                    "d": ("u32", lambda x, y, q, f=fmt: 0xFFFFFFFF * _compare(x, y, "gtu", f)),
                    "e": ("s32", lambda x, y, q, f=fmt: -_compare(x, y, "lt", f)),
                    "f": ("f32", lambda x, y, q, f=fmt, one=one: one * _compare(x, y, "ne", f)),
                    "g": ("pred", lambda x, y, q, f=fmt: _compare(x, y, "le", f) & q),
                    "h": ("pred", lambda x, y, q, f=fmt: (1 - _compare(x, y, "le", f)) & q),
                },
            )
        )
    vals = _values(F32)
    ints = [0, 5, 0xFFFFFFFF, 0x80000000]
    a, c = grid(ints, vals)
    body = "slct.s32.f32 %d, %a, %e, %c;\nslct.ftz.s32.f32 %f, %a, %e, %c;\nnot.b32 %e, %a;"
    body = "not.b32 %e, %a;\n" + body.replace("\nnot.b32 %e, %a;", "")
    out.append(
        make(
            "slct.f32",
            FAMILY,
            body,
            {"a": ("s32", a), "c": ("f32", c)},
            {
                "e": ("s32", lambda x, z: ~x),
                "d": ("s32", lambda x, z: x if _compare(z, 0, "ge", F32) else ~x),
                "f": ("s32", lambda x, z: x if _compare(z, 0, "ge", F32, True) else ~x),
            },
        )
    )
    return out


def cases() -> list[Case]:
    return (
        _arith_cases()
        + _fma_cases()
        + _ieee_cases()
        + _minmax_cases()
        + _sign_cases()
        + _compare_cases()
    )
