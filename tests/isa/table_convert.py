"""Edge tables: ``cvt`` between every pair of integer and floating-point types with
every rounding modifier the ISA allows and ``.sat``/``.ftz``/``.relu``/``.satfinite``,
the packed narrow formats (e4m3, e5m2, e2m3, e3m2, e2m1, ue8m0, tf32) and ``cvt.pack``
(PTX ISA 9.0, sections 9.7.9.21 and 9.7.9.22).  References: exact values rounded once.

One kernel per source type reads the input once and converts it with every form.

Readings settled on an H100 (the ISA does not fix NaN results): float-to-integer
conversions saturate; NaN gives 0 when converting f16/bf16/f32 to a type of at most
32 bits and the pattern 0x80...0 (the most negative value's bits) from f64 or into a
64-bit type.  A NaN converted between float types: f64 -> f32/f16/bf16 keeps sign and
the top payload bits and sets the quiet bit; f32/f16/bf16 -> f64 keeps sign and payload
and sets the quiet bit; bf16 -> f32 is the plain bit shift (a signalling NaN stays
signalling); f16 -> f32 and conversions into f16/bf16 from f32 give the canonical NaN;
``cvt.rni.f64.f64`` quiets; ``cvt.ftz.f64.f32`` first canonicalizes (0x7fffffffe0000000).
``.relu`` turns negative results (and -0) into +0 and keeps NaN (as the canonical NaN);
fp8 conversions of NaN give 0x7f (e4m3 and e5m2).  ``cvt.rna.tf32.f32`` truncates a NaN
(0x7f800001 becomes 0x7f800000); ``.satfinite`` tf32 results of NaN inputs follow no
stated rule on the hardware and are left out.  The fp6/fp4
and ue8m0 forms need sm_100a and are checked against the interpreter only (their
NaN and saturation rules follow the host conversions in CUDA's ``cuda_fp4.hpp``,
``cuda_fp6.hpp`` and ``cuda_fp8.hpp``: NaN to +MAXNORM for fp6/fp4).
"""

from __future__ import annotations

from fractions import Fraction
from functools import partial

from lanes import Case, make
from refs import (
    BF16,
    CANONICAL_NAN,
    E2M1,
    E2M3,
    E3M2,
    E4M3,
    E5M2,
    F16,
    F32,
    F64,
    Fmt,
    Val,
    decode,
    edge_floats,
    edge_ints,
    encode,
    flush,
    saturate,
    signed,
    wrap,
)

FAMILY = "convert"
INTS = ("u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64")
FLOATS = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64}
IRND = {"rni": "rn", "rzi": "rz", "rmi": "rm", "rpi": "rp"}
FRND = ("rn", "rz", "rm", "rp")
# exact conversions: no rounding modifier
WIDENING = {("f16", "f32"), ("f16", "f64"), ("bf16", "f32"), ("bf16", "f64"), ("f32", "f64")}


def _bits(t: str) -> int:
    return int(t[1:]) if t[0] in "us" else FLOATS[t].bits


def _int_value(x: int, t: str) -> int:
    return signed(x, _bits(t)) if t[0] == "s" else wrap(x, _bits(t))


def _src_val(x: int, t: str, ftz: bool = False) -> Val:
    if t in FLOATS:
        v = decode(x, FLOATS[t])
        return flush(v, FLOATS[t]) if ftz and t == "f32" else v
    return Val.of(Fraction(_int_value(x, t)))


def _to_int(v: Val, t: str, mode: str) -> int:
    """Float to integer: round to an integer, saturate to the type's range, NaN to 0."""
    bits = _bits(t)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t[0] == "s" else (0, (1 << bits) - 1)
    if v.kind == "nan":
        return 0
    if v.kind == "inf":
        return lo if v.neg else hi
    q = v.value
    n = q.numerator // q.denominator
    rem = q - n
    if rem:
        if mode == "rn":
            n += 1 if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2) else 0
        elif mode == "rp":
            n += 1
        elif mode == "rz" and q < 0:
            n += 1
    return min(max(n, lo), hi)


def _round_integral(v: Val, mode: str) -> Val:
    """Round to an integral value keeping the type (``cvt.rni.f32.f32``)."""
    if v.kind != "num" or v.mag == 0:
        return v
    n = _to_int(v, "s64", mode) if abs(v.value) < 2**62 else None
    if n is None:
        return v
    return Val("num", v.neg, Fraction(abs(n)))


def _convert(
    x: int,
    src: str,
    dst: str,
    mode: str,
    *,
    irnd: bool = False,
    sat: bool = False,
    ftz: bool = False,
    relu: bool = False,
    satfinite: bool = False,
) -> int:
    v = _src_val(x, src, ftz)
    if dst in INTS:
        if src in INTS:
            iv = _int_value(x, src)
            if sat:
                b = _bits(dst)
                lo, hi = (
                    (-(1 << (b - 1)), (1 << (b - 1)) - 1) if dst[0] == "s" else (0, (1 << b) - 1)
                )
                iv = min(max(iv, lo), hi)
            return iv
        if v.kind == "nan":
            return 1 << (_bits(dst) - 1) if src == "f64" or _bits(dst) == 64 else 0
        return _to_int(v, dst, mode)
    fmt = FLOATS[dst]
    if v.kind == "nan":
        return 0 if sat else _float_nan(x, src, dst, ftz)
    if irnd:
        v = _round_integral(v, mode)
        mode = "rn"
    if relu and v.neg:
        v = Val("num")
    bits = encode(v, fmt, mode, satfinite=satfinite)
    r = decode(bits, fmt)
    if ftz and dst == "f32":
        r = flush(r, fmt)
    if sat:
        r = saturate(r)
    return encode(r, fmt, mode, satfinite=satfinite)


def _fits(src: str, dst: str) -> bool:
    """Every value of integer type ``src`` is representable in ``dst``."""
    sb, db = _bits(src), _bits(dst)
    if src[0] == dst[0]:
        return db >= sb
    return src[0] == "u" and db > sb


MANT = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52}


def _float_nan(x: int, src: str, dst: str, ftz: bool) -> int:
    """The NaN a float-to-float conversion produces (see the module docstring)."""
    sb, db = FLOATS[src].bits, FLOATS[dst].bits
    sign = (x >> (sb - 1)) & 1
    payload = x & ((1 << MANT[src]) - 1)
    if ftz and src == "f32":
        sign, payload, src = 0, (1 << 23) - 1, "f32"
    if src == "bf16" and dst == "f32":
        return x << 16
    if dst == "f64" or (src == dst == "f64"):
        shift = MANT["f64"] - MANT[src]
        body = (0x7FF << 52) | (1 << 51) | (payload << shift)
        return (sign << 63) | body
    if src == "f64":
        shift = MANT["f64"] - MANT[dst]
        exp_bits = FLOATS[dst].ebits
        top = ((1 << exp_bits) - 1) << MANT[dst]
        return (sign << (db - 1)) | top | (1 << (MANT[dst] - 1)) | (payload >> shift)
    return CANONICAL_NAN[dst]


def _forms(src: str) -> list[tuple[str, str, dict[str, object]]]:
    """(instruction, destination type, reference options) for one source type."""
    forms: list[tuple[str, str, dict[str, object]]] = []
    for dst in INTS:
        if src in INTS:
            forms.append((f"cvt.{dst}.{src}", dst, {}))
            if not _fits(src, dst):  # ptxas allows .sat only where it can clamp
                forms.append((f"cvt.sat.{dst}.{src}", dst, {"sat": True}))
        else:
            for r, mode in IRND.items():
                forms.append((f"cvt.{r}.{dst}.{src}", dst, {"mode": mode}))
            if src == "f32":
                forms.append((f"cvt.rzi.ftz.{dst}.f32", dst, {"mode": "rz", "ftz": True}))
    for dst in FLOATS:
        if src in INTS:
            for mode in FRND:
                if dst == "bf16" and mode in ("rm", "rp"):
                    continue
                forms.append((f"cvt.{mode}.{dst}.{src}", dst, {"mode": mode}))
            if dst != "bf16":  # no .sat with a bf16 destination
                forms.append((f"cvt.rn.sat.{dst}.{src}", dst, {"mode": "rn", "sat": True}))
            continue
        widen = (src, dst) in WIDENING
        if dst == src:
            for r, mode in IRND.items():
                forms.append((f"cvt.{r}.{dst}.{src}", dst, {"mode": mode, "irnd": True}))
            if src == "f32":
                forms.append(("cvt.ftz.f32.f32", dst, {"mode": "rn", "ftz": True}))
                forms.append(("cvt.sat.f32.f32", dst, {"mode": "rn", "sat": True}))
                forms.append(
                    (
                        "cvt.rni.ftz.sat.f32.f32",
                        dst,
                        {"mode": "rn", "irnd": True, "ftz": True, "sat": True},
                    )
                )
        elif widen:
            forms.append((f"cvt.{dst}.{src}", dst, {"mode": "rn"}))
            if src == "f32":
                forms.append((f"cvt.ftz.{dst}.f32", dst, {"mode": "rn", "ftz": True}))
        else:
            for mode in FRND:
                forms.append((f"cvt.{mode}.{dst}.{src}", dst, {"mode": mode}))
            if "bf16" not in (src, dst):  # no .sat on conversions involving bf16
                forms.append((f"cvt.rn.sat.{dst}.{src}", dst, {"mode": "rn", "sat": True}))
            if src == "f32" and dst in ("f16", "bf16"):
                for mode in ("rn", "rz"):
                    forms.append((f"cvt.{mode}.relu.{dst}.f32", dst, {"mode": mode, "relu": True}))
                    forms.append(
                        (f"cvt.{mode}.satfinite.{dst}.f32", dst, {"mode": mode, "satfinite": True})
                    )
                forms.append(
                    (
                        f"cvt.rn.relu.satfinite.{dst}.f32",
                        dst,
                        {"mode": "rn", "relu": True, "satfinite": True},
                    )
                )
    return forms


def _scalar_cases() -> list[Case]:
    out = []
    for src in (*INTS, *FLOATS):
        if src in INTS:
            vals = edge_ints(_bits(src))
            # values that round: odd integers above 2**24 and 2**53, halfway cases
            big = [(1 << 24) + 1, (1 << 24) + 3, (1 << 53) + 1, 0xFFFFFFFFFFFFFC00, 3 << 60]
            vals = sorted(set(vals) | {wrap(b, _bits(src)) for b in big})
        else:
            vals = edge_floats(FLOATS[src])
            if src in ("f32", "f64"):
                more = [1.5, 2.5, -2.5, -0.5, 0.5, 65504.0, 65520.0, 3e38, -1e10, 4294967296.0]
                vals = sorted(set(vals) | {encode(Val.of(Fraction(m)), FLOATS[src]) for m in more})
        forms = _forms(src)
        body, outputs = [], {}
        for k, (text, dst, opts) in enumerate(forms):
            reg = ".b16" if dst == "bf16" else ""
            body.append(f"{text} %o{k}, %a;")
            mode = str(opts.pop("mode", "rn"))
            ref = partial(_convert, src=src, dst=dst, mode=mode, **opts)  # type: ignore[arg-type]
            outputs[f"o{k}"] = (dst, ref, reg) if reg else (dst, ref)
        in_reg = ".b16" if src == "bf16" else ""
        inputs = {"a": (src, vals, in_reg) if in_reg else (src, vals)}
        out.append(make(f"cvt.from.{src}", FAMILY, "\n".join(body), inputs, outputs))
    return out


NARROW = {"e4m3x2": E4M3, "e5m2x2": E5M2, "e2m3x2": E2M3, "e3m2x2": E3M2, "e2m1x2": E2M1}


def _narrow(x: int, fmt: Fmt, relu: bool, src: Fmt = F32) -> int:
    """One element of a ``.satfinite`` narrow conversion (NaN: the format's NaN 0x7f
    for fp8, +MAXNORM for fp6/fp4)."""
    v = decode(x, src)
    if v.kind == "nan":
        return 0x7F if fmt.kind != "fin" else encode(Val("num", False, fmt.max_finite), fmt)
    if relu and v.neg:
        v = Val("num")
    return encode(v, fmt, "rn", satfinite=True)


def _narrow_pair(x: int, y: int, fmt: Fmt, relu: bool, width: int) -> int:
    return (_narrow(x, fmt, relu) << width) | _narrow(y, fmt, relu)


def _widen(code: int, fmt: Fmt, relu: bool) -> int:
    v = decode(code, fmt)
    if v.kind == "nan":
        return CANONICAL_NAN["f16"]
    if relu and v.neg:
        v = Val("num")
    return encode(v, F16)


def _narrow_cases() -> list[Case]:
    out = []
    f32 = edge_floats(F32)
    extra = [0x43E00000, 0x43E80000, 0x43F00000, 0x47600000, 0x47700000, 0x40F00000, 0x40C00000]
    extra += [0x3E800000, 0x3C000000, 0x3B800000, 0x41E00000, 0x41F00000, 0x40E80000]
    vals = sorted(set(f32) | set(extra) | {v | 0x80000000 for v in extra})
    a = vals
    b = vals[::-1]
    for name, fmt in NARROW.items():
        width = 4 if name == "e2m1x2" else 8
        target = "sm_89" if fmt in (E4M3, E5M2) else "sm_100a"
        version = "8.1" if target == "sm_89" else "8.6"
        dreg = ".b8" if width == 4 else ".b16"
        mem = "b8" if width == 4 else "b16"
        body = [
            f"cvt.rn.satfinite.{name}.f32 %d, %a, %b;",
            f"cvt.rn.satfinite.relu.{name}.f32 %e, %a, %b;",
        ]
        outputs = {
            "d": (mem, partial(_narrow_pair, fmt=fmt, relu=False, width=width), dreg),
            "e": (mem, partial(_narrow_pair, fmt=fmt, relu=True, width=width), dreg),
        }
        out.append(
            make(
                f"cvt.{name}.f32",
                FAMILY,
                "\n".join(body),
                {"a": ("f32", a), "b": ("f32", b)},
                outputs,
                target=target,
                version=version,
            )
        )
        codes = list(range(1 << (2 * width))) if width == 4 else list(range(0, 1 << 16, 97))
        if fmt.kind == "fin" and width == 8:
            codes = [c & 0x3F3F for c in codes]
        field = (1 << width) - 1

        def to_f16x2(
            c: int, fmt: Fmt = fmt, width: int = width, field: int = field, relu: bool = False
        ) -> int:
            hi, lo = (c >> width) & field, c & field
            return (_widen(hi, fmt, relu) << 16) | _widen(lo, fmt, relu)

        out.append(
            make(
                f"cvt.f16x2.{name}",
                FAMILY,
                f"cvt.rn.f16x2.{name} %d, %a;\ncvt.rn.relu.f16x2.{name} %e, %a;",
                {"a": (mem, codes, dreg)},
                {
                    "d": ("b32", to_f16x2),
                    "e": ("b32", partial(to_f16x2, relu=True)),
                },
                target=target,
                version=version,
            )
        )
    f16 = edge_floats(F16)
    words = [v | (f16[(i * 5 + 1) % len(f16)] << 16) for i, v in enumerate(f16)]
    for name in ("e4m3x2", "e5m2x2"):
        fmt = NARROW[name]

        def from_f16x2(w: int, fmt: Fmt = fmt, relu: bool = False) -> int:
            return (_narrow(w >> 16, fmt, relu, F16) << 8) | _narrow(w & 0xFFFF, fmt, relu, F16)

        out.append(
            make(
                f"cvt.{name}.f16x2",
                FAMILY,
                f"cvt.rn.satfinite.{name}.f16x2 %d, %a;\n"
                f"cvt.rn.satfinite.relu.{name}.f16x2 %e, %a;",
                {"a": ("b32", words)},
                {
                    "d": ("b16", from_f16x2, ".b16"),
                    "e": ("b16", partial(from_f16x2, relu=True), ".b16"),
                },
                target="sm_89",
                version="8.1",
            )
        )
    out += _ue8m0_cases(vals) + _tf32_cases(vals)
    return out


def _ue8m0(x: int, mode: str, satfinite: bool) -> int:
    """f32 -> ue8m0: the exponent field, plus one for ``.rp`` when the value lies
    strictly above a power of two (and above 2**-127); overflow is NaN (0xff) or,
    with ``.satfinite``, 2**127 (0xfe)."""
    ef, frac = (x >> 23) & 0xFF, x & 0x7FFFFF
    if ef == 0xFF and frac:
        return 0xFF
    k = ef
    if mode == "rp" and ef != 0xFF and frac and (ef > 0 or frac > 0x400000):
        k += 1
    if satfinite and k >= 0xFF:
        return 0xFE
    return min(k, 0xFF)


def _ue8m0_cases(vals: list[int]) -> list[Case]:
    out = []
    a, b = vals, vals[::-1]
    body, outputs = [], {}
    for k, (mode, sat) in enumerate((("rz", False), ("rp", False), ("rz", True), ("rp", True))):
        body.append(f"cvt.{mode}{'.satfinite' if sat else ''}.ue8m0x2.f32 %o{k}, %a, %b;")
        outputs[f"o{k}"] = (
            "b16",
            lambda x, y, m=mode, s=sat: (_ue8m0(x, m, s) << 8) | _ue8m0(y, m, s),
            ".b16",
        )
    out.append(
        make(
            "cvt.ue8m0x2.f32",
            FAMILY,
            "\n".join(body),
            {"a": ("f32", a), "b": ("f32", b)},
            outputs,
            target="sm_100a",
            version="8.6",
        )
    )

    def back(c: int) -> int:
        def one(k: int) -> int:
            return 0x7FFF if k == 0xFF else 0x0040 if k == 0 else k << 7

        return (one(c >> 8) << 16) | one(c & 0xFF)

    out.append(
        make(
            "cvt.bf16x2.ue8m0x2",
            FAMILY,
            "cvt.rn.bf16x2.ue8m0x2 %d, %a;",
            {"a": ("b16", list(range(0, 1 << 16, 257)) + [0xFF00, 0x00FF, 0xFE01], ".b16")},
            {"d": ("b32", back)},
            target="sm_100a",
            version="8.6",
        )
    )
    return out


def _tf32(x: int, mode: str, satfinite: bool, relu: bool) -> int:
    v = decode(x, F32)
    if v.kind == "nan":
        return x & 0xFFFFE000
    if relu and v.neg:
        return 0
    tf32 = Fmt("tf32", 8, 10)
    r = encode(v, tf32, mode, satfinite=satfinite)
    return r << 13


def _tf32_cases(vals: list[int]) -> list[Case]:
    ties = [0x3F801000, 0x3F803000, 0x3F800FFF, 0xBF801000, 0x7F7FF000, 0x7F7FEFFF]
    a = sorted(set(vals) | set(ties))
    finite = [x for x in a if decode(x, F32).kind != "nan"]
    out = [
        make(
            "cvt.rna.tf32.f32",
            FAMILY,
            "cvt.rna.tf32.f32 %d, %a;",
            {"a": ("f32", a)},
            {"d": ("b32", partial(_tf32, mode="rna", satfinite=False, relu=False))},
            version="8.1",
        ),
        make(
            "cvt.rna.satfinite.tf32.f32",
            FAMILY,
            "cvt.rna.satfinite.tf32.f32 %d, %a;",
            {"a": ("f32", finite)},
            {"d": ("b32", partial(_tf32, mode="rna", satfinite=True, relu=False))},
            version="8.1",
        ),
    ]
    body, outputs = [], {}
    forms = [("rn", True, False), ("rz", True, False), ("rn", True, True), ("rz", False, True)]
    for k, (mode, sat, relu) in enumerate(forms):
        mods = f".{mode}" + (".satfinite" if sat else "") + (".relu" if relu else "")
        body.append(f"cvt{mods}.tf32.f32 %o{k}, %a;")
        outputs[f"o{k}"] = ("b32", partial(_tf32, mode=mode, satfinite=sat, relu=relu))
    out.append(
        make(
            "cvt.rn/rz.tf32.f32",
            FAMILY,
            "\n".join(body),
            {"a": ("f32", a)},
            outputs,
            target="sm_100a",
            version="8.6",
        )
    )
    return out


def _pack(a: int, b: int, c: int, t: str) -> int:
    n = int(t[1:])
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t[0] == "s" else (0, (1 << n) - 1)
    ta = min(max(signed(a, 32), lo), hi) & ((1 << n) - 1)
    tb = min(max(signed(b, 32), lo), hi) & ((1 << n) - 1)
    d = (ta << n) | tb
    if n < 16:
        d |= c << (2 * n)
    return wrap(d, 32)


def _pack_cases() -> list[Case]:
    vals = [0, 1, 2, 3, 7, 8, 15, 16, 127, 128, 255, 256, 32767, 32768, 65535, 65536]
    vals += [wrap(-v, 32) for v in vals[1:]] + [0x7FFFFFFF, 0x80000000]
    a = [x for x in vals for _ in range(4)]
    b = [vals[(i * 7) % len(vals)] for i in range(len(a))]
    c = [0, 0xFFFFFFFF, 0xAB, 0x12345678] * (len(a) // 4)
    out = []
    for t in ("u16", "s16"):
        out.append(
            make(
                f"cvt.pack.sat.{t}.s32",
                FAMILY,
                f"cvt.pack.sat.{t}.s32 %d, %a, %b;",
                {"a": ("s32", a), "b": ("s32", b)},
                {"d": ("b32", lambda x, y, t=t: _pack(x, y, 0, t))},
            )
        )
    for t in ("u8", "s8", "u4", "s4", "u2", "s2"):
        out.append(
            make(
                f"cvt.pack.sat.{t}.s32.b32",
                FAMILY,
                f"cvt.pack.sat.{t}.s32.b32 %d, %a, %b, %c;",
                {"a": ("s32", a), "b": ("s32", b), "c": ("b32", c)},
                {"d": ("b32", partial(_pack, t=t))},
                version="8.1" if t.endswith(("4", "2")) else "8.6",
            )
        )
    return out


def cases() -> list[Case]:
    return _scalar_cases() + _narrow_cases() + _pack_cases()
