"""Reference semantics written from the PTX ISA 9.0 text, independent of the
interpreter: integers are Python integers, floating-point values are exact
:class:`fractions.Fraction` (with explicit signed zeros, infinities and NaN), and
every rounding is done once, from the exact value, by :func:`round_to`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

# -- integers ---------------------------------------------------------------------------


def wrap(x: int, bits: int) -> int:
    """``x`` modulo ``2**bits`` (the bit pattern)."""
    return x & ((1 << bits) - 1)


def signed(x: int, bits: int) -> int:
    """The two's-complement value of the ``bits``-bit pattern ``x``."""
    x = wrap(x, bits)
    return x - (1 << bits) if x >> (bits - 1) else x


def clamp(x: int, lo: int, hi: int) -> int:
    return lo if x < lo else hi if x > hi else x


def int_range(bits: int, is_signed: bool) -> tuple[int, int]:
    if is_signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def edge_ints(bits: int) -> list[int]:
    """Edge values of a ``bits``-wide integer type, as bit patterns: 0, 1, 2, the
    extremes of both signed and unsigned ranges and their neighbours, alternating
    patterns and a few ordinary values."""
    m = (1 << bits) - 1
    h = 1 << (bits - 1)
    vals = {0, 1, 2, 3, 7, m, m - 1, h, h - 1, h + 1, 0x55555555 & m, 0xAAAAAAAA & m}
    vals |= {(1 << (bits // 2)) & m, ((1 << (bits // 2)) - 1) & m, 100 & m, wrap(-100, bits)}
    return sorted(vals)


# -- floating point ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fmt:
    """A binary floating-point format: ``ebits`` exponent bits, ``mbits`` stored
    mantissa bits; ``kind`` says what the all-ones exponent means: ``"ieee"`` (Inf and
    NaN), ``"fn"`` (finite, only S.1..1.1..1 is NaN: e4m3) or ``"fin"`` (no Inf, no
    NaN: e2m1, e2m3, e3m2)."""

    name: str
    ebits: int
    mbits: int
    kind: str = "ieee"

    @property
    def bits(self) -> int:
        return 1 + self.ebits + self.mbits

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def max_finite(self) -> Fraction:
        top = (1 << self.ebits) - 1
        mant = (1 << self.mbits) - 1
        if self.kind == "ieee":
            top -= 1
        elif self.kind == "fn":
            mant -= 1
        return Fraction((1 << self.mbits) + mant, 1 << self.mbits) * Fraction(2) ** (
            top - self.bias
        )


F16 = Fmt("f16", 5, 10)
BF16 = Fmt("bf16", 8, 7)
F32 = Fmt("f32", 8, 23)
F64 = Fmt("f64", 11, 52)
E4M3 = Fmt("e4m3", 4, 3, "fn")
E5M2 = Fmt("e5m2", 5, 2)
E2M3 = Fmt("e2m3", 2, 3, "fin")
E3M2 = Fmt("e3m2", 3, 2, "fin")
E2M1 = Fmt("e2m1", 2, 1, "fin")
FORMATS = {f.name: f for f in (F16, BF16, F32, F64, E4M3, E5M2, E2M3, E3M2, E2M1)}

#: canonical NaN bit patterns NVIDIA hardware produces
CANONICAL_NAN = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF, "f64": 0x7FFFFFFFFFFFFFFF}


@dataclass(frozen=True, slots=True)
class Val:
    """An exact floating-point datum: ``kind`` is ``"num"`` (``mag`` >= 0 with the
    sign ``neg``, so -0 exists), ``"inf"`` or ``"nan"``."""

    kind: str
    neg: bool = False
    mag: Fraction = Fraction(0)

    @property
    def value(self) -> Fraction:
        return -self.mag if self.neg else self.mag

    @staticmethod
    def of(q: Fraction, neg_zero: bool = False) -> Val:
        return Val("num", q < 0 or (q == 0 and neg_zero), abs(q))


NAN = Val("nan")


@lru_cache(maxsize=1 << 16)
def decode(bits: int, fmt: Fmt) -> Val:
    neg = bool((bits >> (fmt.bits - 1)) & 1)
    e = (bits >> fmt.mbits) & ((1 << fmt.ebits) - 1)
    m = bits & ((1 << fmt.mbits) - 1)
    top = (1 << fmt.ebits) - 1
    if e == top and fmt.kind == "ieee":
        return Val("inf", neg) if m == 0 else NAN
    if e == top and fmt.kind == "fn" and m == (1 << fmt.mbits) - 1:
        return NAN
    sig = m if e == 0 else (1 << fmt.mbits) | m
    exp = (fmt.emin if e == 0 else e - fmt.bias) - fmt.mbits  # value = sig * 2**exp
    mag = Fraction(sig << exp) if exp >= 0 else Fraction(sig, 1 << -exp)
    return Val("num", neg, mag)


def _floor_log2(q: Fraction) -> int:
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()
    return e if (n >= d << e if e >= 0 else n << -e >= d) else e - 1


def _round_int(num: int, den: int, mode: str, neg: bool) -> int:
    """Round the magnitude ``num / den`` of a value of sign ``neg`` to an integer."""
    n, rem = divmod(num, den)
    if rem == 0:
        return n
    twice = 2 * rem
    if mode == "rn":
        return n + 1 if twice > den or (twice == den and n % 2) else n
    if mode == "rna":
        return n + 1 if twice >= den else n
    if mode == "rz":
        return n
    if mode == "rp":
        return n if neg else n + 1
    if mode == "rm":
        return n + 1 if neg else n
    raise ValueError(mode)


def encode(v: Val, fmt: Fmt, mode: str = "rn", *, satfinite: bool = False) -> int:
    """Round ``v`` once to ``fmt`` in ``mode`` and return the bit pattern.  Overflow
    gives Inf (or the largest finite value where the mode rounds toward zero), with
    ``satfinite`` always the largest finite value, +-Inf included; NaN gives the
    canonical NaN (positive, all mantissa bits set)."""
    sign = (1 << (fmt.bits - 1)) if v.neg else 0
    top = (1 << fmt.ebits) - 1
    if v.kind == "nan":
        return (top << fmt.mbits) | ((1 << fmt.mbits) - 1)
    if v.kind == "inf":
        return sign | (_max_code(fmt) if satfinite or fmt.kind != "ieee" else top << fmt.mbits)
    if v.mag == 0:
        return sign
    n, d = v.mag.numerator, v.mag.denominator
    e = max(_floor_log2(v.mag), fmt.emin)
    s = fmt.mbits - e  # scaled = mag * 2**s has mbits+1 integer bits (fewer if subnormal)
    k = _round_int(n << s, d, mode, v.neg) if s >= 0 else _round_int(n, d << -s, mode, v.neg)
    if k >> (fmt.mbits + 1):  # rounded up into the next binade
        k >>= 1
        e += 1
    code = _code(e, k, fmt)
    if code is None or code > _max_code(fmt):
        away = mode in ("rn", "rna") or (mode == "rp" and not v.neg) or (mode == "rm" and v.neg)
        if satfinite or not away or fmt.kind == "fin":
            return sign | _max_code(fmt)
        if fmt.kind == "ieee":
            return sign | (top << fmt.mbits)
        return sign | (top << fmt.mbits) | ((1 << fmt.mbits) - 1)
    return sign | code


def _code(e: int, k: int, fmt: Fmt) -> int | None:
    """Bits of ``k * 2**(e - mbits)`` (``k < 2**(mbits+1)``; subnormal when ``k`` has
    no leading bit); None beyond the exponent field."""
    if k < (1 << fmt.mbits):
        return k  # subnormal (e == emin) or zero
    ef = e + fmt.bias
    if ef >= (1 << fmt.ebits):
        return None
    return (ef << fmt.mbits) | (k - (1 << fmt.mbits))


def _max_code(fmt: Fmt) -> int:
    top = (1 << fmt.ebits) - 1
    mant = (1 << fmt.mbits) - 1
    if fmt.kind == "ieee":
        return ((top - 1) << fmt.mbits) | mant
    if fmt.kind == "fn":
        return (top << fmt.mbits) | (mant - 1)
    return (top << fmt.mbits) | mant


def _pack(mag: Fraction, fmt: Fmt) -> int:
    return encode(Val("num", False, mag), fmt, "rz")


def _round_unbounded(v: Val, fmt: Fmt, mode: str) -> Fraction:
    """``|v|`` rounded to ``mbits + 1`` significant bits, without an exponent range."""
    e = _floor_log2(v.mag)
    s = fmt.mbits - e
    n, d = v.mag.numerator, v.mag.denominator
    k = _round_int(n << s, d, mode, v.neg) if s >= 0 else _round_int(n, d << -s, mode, v.neg)
    return Fraction(k) / Fraction(2) ** s


def edge_floats(fmt: Fmt) -> list[int]:
    """Edge bit patterns of ``fmt``: signed zeros, the smallest subnormal, the largest
    subnormal, the smallest normal, 1, values next to 1, the largest finite value,
    infinities and NaNs (quiet and signalling where they exist), and a few ordinary
    values of both signs."""
    sign = 1 << (fmt.bits - 1)
    top = (1 << fmt.ebits) - 1
    one = fmt.bias << fmt.mbits
    mant = (1 << fmt.mbits) - 1
    pos = {
        0,
        1,
        mant,
        1 << fmt.mbits,
        one,
        one + 1,
        one - 1,
        one + (1 << (fmt.mbits - 1)) if fmt.mbits else one,
        _pack(fmt.max_finite, fmt),
        _pack(fmt.max_finite, fmt) - 1,
        (fmt.bias + 1) << fmt.mbits | 1,
        (fmt.bias + 2) << fmt.mbits | (mant // 3),
    }
    if fmt.kind == "ieee":
        pos |= {top << fmt.mbits, (top << fmt.mbits) | mant, (top << fmt.mbits) | 1}
    if fmt.kind == "fn":
        pos |= {(top << fmt.mbits) | mant}
    out = set(pos) | {p | sign for p in pos}
    return sorted(out)


# -- exact arithmetic on Val ------------------------------------------------------------


def flush(v: Val, fmt: Fmt) -> Val:
    """``.ftz``: a subnormal becomes a zero of the same sign."""
    if v.kind == "num" and 0 < v.mag < Fraction(2) ** fmt.emin:
        return Val("num", v.neg, Fraction(0))
    return v


def _zero_sum_sign(mode: str) -> bool:
    """Sign of an exact zero sum of operands of opposite signs (IEEE 754)."""
    return mode == "rm"


def add(a: Val, b: Val, mode: str) -> Val:
    if a.kind == "nan" or b.kind == "nan":
        return NAN
    if a.kind == "inf" or b.kind == "inf":
        if a.kind == "inf" and b.kind == "inf" and a.neg != b.neg:
            return NAN
        return a if a.kind == "inf" else b
    s = a.value + b.value
    if s == 0:
        if a.mag == 0 and b.mag == 0 and a.neg == b.neg:
            return Val("num", a.neg)
        return Val("num", _zero_sum_sign(mode))
    return Val.of(s)


def neg(a: Val) -> Val:
    return a if a.kind == "nan" else Val(a.kind, not a.neg, a.mag)


def mul(a: Val, b: Val) -> Val:
    if a.kind == "nan" or b.kind == "nan":
        return NAN
    sign = a.neg != b.neg
    if a.kind == "inf" or b.kind == "inf":
        if (a.kind == "num" and a.mag == 0) or (b.kind == "num" and b.mag == 0):
            return NAN
        return Val("inf", sign)
    return Val("num", sign, a.mag * b.mag)


def fma(a: Val, b: Val, c: Val, mode: str) -> Val:
    """``a * b + c`` exactly (the product is not rounded)."""
    p = mul(a, b)
    if p.kind == "nan" or c.kind == "nan":
        return NAN
    return add(p, c, mode)


def div(a: Val, b: Val) -> Val:
    if a.kind == "nan" or b.kind == "nan":
        return NAN
    sign = a.neg != b.neg
    if a.kind == "inf":
        return NAN if b.kind == "inf" else Val("inf", sign)
    if b.kind == "inf":
        return Val("num", sign)
    if b.mag == 0:
        return NAN if a.mag == 0 else Val("inf", sign)
    return Val("num", sign, a.mag / b.mag)


def sqrt_round(a: Val, fmt: Fmt, mode: str) -> int:
    """Correctly rounded square root: the root is bracketed by integer square roots
    of the value scaled by a large even power of two; the rounding of the bracket's
    midpoint-free interior decides every mode."""
    if a.kind == "nan" or (a.neg and not (a.kind == "num" and a.mag == 0)):
        return encode(NAN, fmt)
    if a.kind == "inf" or a.mag == 0:
        return encode(a, fmt, mode)
    import math

    k = 2 * (fmt.mbits + 8 + max(0, -_floor_log2(a.mag)))
    scaled = a.mag * Fraction(4) ** k
    n = scaled.numerator // scaled.denominator
    r = math.isqrt(n)
    exact = r * r == n and scaled.denominator == 1
    q = Fraction(r, 2**k) if exact else Fraction(2 * r + 1, 2 ** (k + 1))
    return encode(Val("num", False, q), fmt, mode)


def saturate(v: Val) -> Val:
    """``.sat``: clamp to [0, 1], NaN to +0."""
    if v.kind == "nan":
        return Val("num")
    if v.neg:
        return Val("num")
    if v.kind == "inf" or v.mag > 1:
        return Val("num", False, Fraction(1))
    return v


def round_val(v: Val, fmt: Fmt, mode: str, ftz: bool = False, sat: bool = False) -> int:
    """Encode the exact result ``v`` of an arithmetic instruction: ``.ftz`` flushes a
    result that is tiny *after rounding* to the format's precision with an unbounded
    exponent (IEEE 754's second tininess rule) to a zero of its sign - confirmed on an
    H100; ``.sat`` clamps the rounded value to [0, 1]; NaN results are the canonical
    NaN."""
    if v.kind == "nan":
        return encode(Val("num"), fmt) if sat else CANONICAL_NAN[fmt.name]
    if (
        ftz
        and v.kind == "num"
        and v.mag
        and _round_unbounded(v, fmt, mode) < Fraction(2) ** fmt.emin
    ):
        v = Val("num", v.neg)
    r = decode(encode(v, fmt, mode), fmt)
    if sat:
        r = saturate(r)
    return encode(r, fmt, mode)


# -- NaN results (settled on an H100; the ISA does not fix NaN payloads) ---------------


def is_nan_bits(bits: int, fmt: Fmt) -> bool:
    return decode(bits, fmt).kind == "nan"


def quiet(bits: int, fmt: Fmt) -> int:
    """A NaN with its quiet bit (the top mantissa bit) set, sign and payload kept."""
    return bits | (1 << (fmt.mbits - 1))


def f64_nan(operands: list[int], invalid: bool) -> int:
    """The NaN a binary64 instruction returns: the first NaN operand in the given
    priority order, quieted; an invalid operation on non-NaN operands (0 * inf,
    inf - inf, 0 / 0, sqrt of a negative) gives 0xfff8000000000000."""
    for x in operands:
        if is_nan_bits(x, F64):
            return quiet(x, F64)
    assert invalid
    return 0xFFF8000000000000
