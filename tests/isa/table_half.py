"""Edge tables: half precision - f16, bf16 and the packed f16x2/bf16x2 forms of
``add``/``sub``/``mul``/``fma`` (``.rn``, ``.ftz``, ``.sat``, ``.relu``), ``min``/``max``
(``.NaN``, ``.xorsign.abs``), ``abs``/``neg`` and the packed comparisons (PTX ISA 9.0,
sections 9.7.4 and 9.7.7).  Each half of a packed register is an independent lane of
the reference.

Readings settled on an H100: every NaN result, ``abs``/``neg`` of a NaN included, is
the canonical NaN 0x7fff; ``.ftz`` flushes results whose exact value is below the
smallest normal (before rounding), as for f32.
"""

from __future__ import annotations

from functools import partial

from lanes import Case, grid, make
from refs import (
    BF16,
    CANONICAL_NAN,
    F16,
    Fmt,
    Val,
    add,
    decode,
    edge_floats,
    encode,
    flush,
    fma,
    mul,
    neg,
    round_val,
)
from table_float import _compare, _minmax

FAMILY = "half"
FMT = {"f16": F16, "bf16": BF16}


def _relu(bits: int, fmt: Fmt) -> int:
    v = decode(bits, fmt)
    if v.kind == "nan":
        return CANONICAL_NAN[fmt.name]
    return encode(Val("num"), fmt) if v.neg else bits


def _arith(x: int, y: int, op: str, fmt: Fmt, ftz: bool, sat: bool) -> int:
    a, b = decode(x, fmt), decode(y, fmt)
    if ftz:
        a, b = flush(a, fmt), flush(b, fmt)
    if op == "sub":
        b = neg(b)
    r = mul(a, b) if op == "mul" else add(a, b, "rn")
    return round_val(r, fmt, "rn", ftz, sat)


def _fma(x: int, y: int, z: int, fmt: Fmt, ftz: bool, sat: bool, relu: bool) -> int:
    a, b, c = (decode(v, fmt) for v in (x, y, z))
    if ftz:
        a, b, c = (flush(v, fmt) for v in (a, b, c))
    r = round_val(fma(a, b, c, "rn"), fmt, "rn", ftz, sat)
    return _relu(r, fmt) if relu else r


def _packed(fn: object, *words: int) -> int:
    """Apply a per-half reference to the low and high halves of 32-bit words."""
    lo = fn(*(w & 0xFFFF for w in words))  # type: ignore[operator]
    hi = fn(*(w >> 16 for w in words))  # type: ignore[operator]
    return (hi << 16) | lo


def _pairs(vals: list[int]) -> list[int]:
    """Packed words: each value in the low half with another value in the high half."""
    return [v | (vals[(i * 7 + 3) % len(vals)] << 16) for i, v in enumerate(vals)]


def _arith_cases() -> list[Case]:
    out = []
    for t, fmt in FMT.items():
        vals = edge_floats(fmt)
        a, b = grid(vals, vals)
        pa, pb = grid(_pairs(vals), _pairs(vals[::2]))
        forms = [("add", False, False), ("sub", False, False), ("mul", False, False)]
        if t == "f16":
            forms += [("add", True, False), ("mul", False, True), ("sub", True, True)]
        for packed in (False, True):
            ty = t + ("x2" if packed else "")
            mem = "b32" if packed else t
            body, outputs = [], {}
            for k, (op, ftz, sat) in enumerate(forms):
                mods = ".rn" + (".ftz" if ftz else "") + (".sat" if sat else "")
                body.append(f"{op}{mods}.{ty} %o{k}, %a, %b;")
                ref = partial(_arith, op=op, fmt=fmt, ftz=ftz, sat=sat)
                outputs[f"o{k}"] = (mem, partial(_packed, ref) if packed else ref)
            inputs = {"a": (mem, pa if packed else a), "b": (mem, pb if packed else b)}
            out.append(make(f"add/sub/mul.{ty}", FAMILY, "\n".join(body), inputs, outputs))
    return out


def _fma_cases() -> list[Case]:
    out = []
    for t, fmt in FMT.items():
        vals = edge_floats(fmt)[::2]
        a, b, c = grid(vals, vals, vals[::2])
        forms = [(False, False, False), (False, False, True)]
        if t == "f16":
            forms += [(True, False, False), (False, True, False), (True, True, False)]
        for packed in (False, True):
            ty = t + ("x2" if packed else "")
            mem = "b32" if packed else t
            cols = [_pairs(list(col)) if packed else col for col in (a, b, c)]
            body, outputs = [], {}
            for k, (ftz, sat, relu) in enumerate(forms):
                mods = ".rn" + (".ftz" if ftz else "") + (".sat" if sat else "")
                mods += ".relu" if relu else ""
                body.append(f"fma{mods}.{ty} %o{k}, %a, %b, %c;")
                ref = partial(_fma, fmt=fmt, ftz=ftz, sat=sat, relu=relu)
                outputs[f"o{k}"] = (mem, partial(_packed, ref) if packed else ref)
            inputs = {"a": (mem, cols[0]), "b": (mem, cols[1]), "c": (mem, cols[2])}
            out.append(make(f"fma.{ty}", FAMILY, "\n".join(body), inputs, outputs))
    return out


def _minmax_cases() -> list[Case]:
    out = []
    for t, fmt in FMT.items():
        vals = edge_floats(fmt)
        a, b = grid(vals, vals)
        pa, pb = grid(_pairs(vals), _pairs(vals[::2]))
        forms = [("", False, False, False), (".NaN", False, True, False)]
        forms += [(".xorsign.abs", False, False, True)]
        if t == "f16":
            forms += [(".ftz", True, False, False), (".ftz.NaN", True, True, False)]
        for packed in (False, True):
            ty = t + ("x2" if packed else "")
            mem = "b32" if packed else t
            for op in ("min", "max"):
                body, outputs = [], {}
                for k, (mods, ftz, nan, xs) in enumerate(forms):
                    body.append(f"{op}{mods}.{ty} %o{k}, %a, %b;")
                    ref = partial(_minmax, fmt=fmt, op=op, ftz=ftz, nan=nan, xorsign=xs)
                    outputs[f"o{k}"] = (mem, partial(_packed, ref) if packed else ref)
                inputs = {"a": (mem, pa if packed else a), "b": (mem, pb if packed else b)}
                out.append(make(f"{op}.{ty}", FAMILY, "\n".join(body), inputs, outputs))
    return out


def _sign_cases() -> list[Case]:
    out = []
    for t, fmt in FMT.items():
        vals = edge_floats(fmt)
        words = _pairs(vals)

        def sign_op(x: int, flip: bool, fmt: Fmt = fmt) -> int:
            if decode(x, fmt).kind == "nan":
                return CANONICAL_NAN[fmt.name]
            return x ^ 0x8000 if flip else x & 0x7FFF

        out.append(
            make(
                f"abs/neg.{t}",
                FAMILY,
                f"abs.{t} %d, %a;\nneg.{t} %e, %a;\nabs.{t}x2 %f, %w;\nneg.{t}x2 %g, %w;",
                {"a": (t, vals), "w": ("b32", words)},
                {
                    "d": (t, lambda x, w, f=sign_op: f(x, False)),
                    "e": (t, lambda x, w, f=sign_op: f(x, True)),
                    "f": ("b32", lambda x, w, f=sign_op: _packed(partial(f, flip=False), w)),
                    "g": ("b32", lambda x, w, f=sign_op: _packed(partial(f, flip=True), w)),
                },
            )
        )
    return out


def _compare_cases() -> list[Case]:
    """``setp.cmp.f16x2 p|q`` (low and high halves) and ``set.cmp.f16x2.f16x2`` (1.0 or
    0 per half) for a few comparisons."""
    out = []
    for t, fmt in FMT.items():
        vals = edge_floats(fmt)
        pa, pb = grid(_pairs(vals), _pairs(vals[::2]))
        one = encode(Val.of(1), fmt)
        body = []
        outputs = {}
        for k, cmp in enumerate(("lt", "equ", "ne", "geu", "nan")):
            body.append(f"setp.{cmp}.{t}x2 %p{k}|%q{k}, %a, %b;")
            lo = partial(_compare, cmp=cmp, fmt=fmt)
            outputs[f"p{k}"] = ("pred", lambda x, y, f=lo: f(x & 0xFFFF, y & 0xFFFF))
            outputs[f"q{k}"] = ("pred", lambda x, y, f=lo: f(x >> 16, y >> 16))
            body.append(f"set.{cmp}.{t}x2.{t}x2 %s{k}, %a, %b;")
            outputs[f"s{k}"] = (
                "b32",
                lambda x, y, f=lo, one=one: _packed(lambda u, v: one * f(u, v), x, y),
            )
        out.append(
            make(
                f"setp/set.{t}x2",
                FAMILY,
                "\n".join(body),
                {"a": ("b32", pa), "b": ("b32", pb)},
                outputs,
            )
        )
    return out


def cases() -> list[Case]:
    return _arith_cases() + _fma_cases() + _minmax_cases() + _sign_cases() + _compare_cases()
