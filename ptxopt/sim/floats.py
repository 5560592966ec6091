"""Floating-point helpers with exact rounding for the SIMT interpreter.

All operations work on numpy arrays.  Correctly rounded results for ``fma`` and for
the directed rounding modes (``.rz``/``.rm``/``.rp``) come from *error-free
transformations* (Knuth's TwoSum, Dekker's TwoProduct, see Muller et al., "Handbook
of Floating-Point Arithmetic", ch. 4) followed by *round-to-odd* (Boldo and
Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
rounding to odd", IEEE TC 2008): an exact value ``s + e`` held in two doubles is
first rounded to odd in binary64, after which any rounding to a format with at
most 51 significand bits (binary32, binary16, bfloat16) is correct, single rounding.

Lanes where a binary64 error-free transformation is not exact (overflow, deep
underflow, the rare inexact third term of a binary64 ``fma``) fall back to exact
rational arithmetic with :class:`fractions.Fraction`, one lane at a time.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

F32 = np.float32
F64 = np.float64

MODES = ("rn", "rz", "rm", "rp")


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: ``s + e == a + b`` exactly (finite, no overflow)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


_SPLIT = F64(134217729.0)  # 2**27 + 1


def two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's TwoProduct (Veltkamp splitting): ``p + e == a * b`` exactly when no
    overflow or underflow occurs."""
    p = a * b
    ca = _SPLIT * a
    ah = ca - (ca - a)
    al = a - ah
    cb = _SPLIT * b
    bh = cb - (cb - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def round_to_odd(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Round the exact value ``s + e`` (``s = RN(s + e)``) to odd in binary64."""
    s = np.asarray(s, dtype=F64)
    inexact = (e != 0) & np.isfinite(s)
    if not np.any(inexact):
        return s
    out = s.copy()
    si = s[inexact]
    ei = np.asarray(e)[inexact] if np.ndim(e) else np.full(si.shape, e)
    toward_zero = np.sign(ei) != np.sign(si)
    t = np.where(toward_zero, np.nextafter(si, F64(0.0)), si)
    bits = t.view(np.uint64) | np.uint64(1)
    out[inexact] = bits.view(F64)
    return out


def _directed_fix(r: np.ndarray, x: np.ndarray, mode: str, dt: type) -> np.ndarray:
    """Adjust ``r = RN(x)`` (format ``dt``) to the directed mode, ``x`` exact-ish f64
    (round-to-odd preserves the comparison against every representable value)."""
    if mode == "rn":
        return r
    rx = r.astype(F64)
    if mode == "rz":
        fix = np.abs(rx) > np.abs(x)
        target = np.zeros_like(r)
    elif mode == "rm":
        fix = rx > x
        target = np.full_like(r, -np.inf)
    elif mode == "rp":
        fix = rx < x
        target = np.full_like(r, np.inf)
    else:  # pragma: no cover - checked by callers
        raise ValueError(mode)
    if np.any(fix):
        r = r.copy()
        r[fix] = np.nextafter(r[fix], target[fix]).astype(dt)
    return r


def f64_to_f32(x: np.ndarray, mode: str = "rn") -> np.ndarray:
    x = np.asarray(x, dtype=F64)
    r = x.astype(F32)
    return _directed_fix(r, x, mode, F32)


def f64_to_f16(x: np.ndarray, mode: str = "rn") -> np.ndarray:
    x = np.asarray(x, dtype=F64)
    r = x.astype(np.float16)
    return _directed_fix(r, x, mode, np.float16)


def f64_to_f32_odd(x: np.ndarray) -> np.ndarray:
    """binary64 -> binary32 rounded to odd (for a later correct rounding to bf16)."""
    x = np.asarray(x, dtype=F64)
    r = x.astype(F32)
    rx = r.astype(F64)
    inexact = (rx != x) & np.isfinite(x)
    if not np.any(inexact):
        return r
    r = r.copy()
    ri = r[inexact]
    over = np.abs(rx[inexact]) > np.abs(x[inexact])
    ri = np.where(over, np.nextafter(ri, F32(0.0)), ri)
    r[inexact] = (ri.view(np.uint32) | np.uint32(1)).view(F32)
    return r


def f32_to_bf16_bits(x: np.ndarray, mode: str = "rn") -> np.ndarray:
    """binary32 values -> bfloat16 bit patterns (uint16) with the given rounding."""
    u = np.asarray(x, dtype=F32).view(np.uint32).astype(np.uint32)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    low = u & np.uint32(0xFFFF)
    hi = u >> np.uint32(16)
    neg = (u >> np.uint32(31)).astype(bool)
    if mode == "rn":
        bias = np.uint32(0x7FFF) + (hi & np.uint32(1))
        r = (u + bias) >> np.uint32(16)
    elif mode == "rz":
        r = hi
    elif mode in ("rm", "rp"):
        up = (low != 0) & (neg if mode == "rm" else ~neg)
        r = hi + up.astype(np.uint32)
    else:
        raise ValueError(mode)
    r = np.where(nan, np.uint32(0x7FFF), r)
    return r.astype(np.uint16)


def bf16_bits_to_f32(b: np.ndarray) -> np.ndarray:
    return (np.asarray(b).astype(np.uint32) << np.uint32(16)).view(F32)


def exact_to_format(s: np.ndarray, e: np.ndarray, fmt: str, mode: str) -> np.ndarray:
    """Round the exact value ``s + e`` to ``fmt`` ("f32", "f16", "bf16" bits)."""
    o = round_to_odd(s, e)
    if fmt == "f32":
        return f64_to_f32(o, mode)
    if fmt == "f16":
        return f64_to_f16(o, mode)
    if fmt == "bf16":
        return f32_to_bf16_bits(f64_to_f32_odd(o), mode)
    raise ValueError(fmt)


# ---------------------------------------------------------------------------
# Exact rational fallback (binary64 results)


def _fma_frac(a: float, b: float, c: float, mode: str) -> float:
    if math.isfinite(a) and math.isfinite(b) and math.isinf(c):
        return c  # the exact product is finite, whatever its binary64 rounding
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return a * b + c
    q = Fraction(a) * Fraction(b) + Fraction(c)
    if q == 0:
        return _exact_zero(math.copysign(1.0, a) * math.copysign(1.0, b) < 0, a * b == 0, c, mode)
    return round_fraction(q, "f64", mode)


def _exact_zero(product_neg: bool, product_zero: bool, c: float, mode: str) -> float:
    """The sign of an exact zero ``a * b + c`` (IEEE 754): the common sign when the
    product and ``c`` are zeros of one sign, else -0 only in ``rm``."""
    c_neg = math.copysign(1.0, c) < 0
    if product_zero and c == 0 and product_neg == c_neg:
        return -0.0 if c_neg else 0.0
    return -0.0 if mode == "rm" else 0.0


def fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str = "rn") -> np.ndarray:
    """Correctly rounded binary64 fused multiply-add."""
    a, b, c = np.broadcast_arrays(
        np.asarray(a, dtype=F64), np.asarray(b, dtype=F64), np.asarray(c, dtype=F64)
    )
    p, ep = two_prod(a, b)
    s1, e1 = two_sum(p, c)
    t, et = two_sum(e1, ep)
    s, e2 = two_sum(s1, t)
    big = F64(2.0**995)
    tiny = F64(2.0**-960)
    ap = np.abs(p)
    bad = (
        (et != 0)
        | ~np.isfinite(s)
        | (np.abs(a) > big)
        | (np.abs(b) > big)
        | (np.abs(c) > big)
        | ((ap < tiny) & (ap != 0))
        | ((p == 0) & (a != 0) & (b != 0))
    )
    if mode != "rn":
        res = s.copy()
        up = (e2 > 0) & (mode == "rp" or (mode == "rz" and False))
        if mode == "rp":
            res = np.where(e2 > 0, np.nextafter(s, np.inf), s)
        elif mode == "rm":
            res = np.where(e2 < 0, np.nextafter(s, -np.inf), s)
        else:
            res = np.where((e2 != 0) & (np.sign(e2) != np.sign(s)), np.nextafter(s, 0.0), s)
        del up
        s = res
    # an exact zero (the transformations are exact on these lanes): IEEE's sign rule
    pz = np.where((a == 0) | (b == 0), a * b, p)
    s = np.where(bad, s, fix_zero_sign(s, pz, c, mode))
    if np.any(bad):
        s = np.array(s, dtype=F64, copy=True)
        for i in zip(*np.nonzero(bad), strict=True):
            s[i] = _fma_frac(float(a[i]), float(b[i]), float(c[i]), mode)
    return s


_MID32 = np.uint64(1 << 28)  # low 29 bits of a binary64 at a binary32 midpoint
_LOW29 = np.uint64((1 << 29) - 1)
_NORMAL32 = F64(2.0**-125)


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str = "rn") -> np.ndarray:
    """Correctly rounded binary32 fused multiply-add (one rounding).

    The product of two binary32 values is exact in binary64, so ``s = RN64(p + c)``
    is off by less than half a binary64 ulp; rounding ``s`` to binary32 gives the
    correctly rounded result unless ``s`` lies exactly on a binary32 midpoint that the
    first rounding made (an exact midpoint is a true tie, which the conversion breaks to
    even), or is NaN or nonzero below the normal binary32 range: only those lanes take
    the exact path.  A zero ``s`` is exact (a sum of two binary64 values never rounds to
    zero) and binary64 addition in round-to-nearest already gives it the IEEE sign
    (``x + -x`` is +0, two zeros keep their common sign), so zeros -- masked lanes, zero
    accumulators -- stay on the fast path, and so do the exact midpoints that sums of
    binary32 values of nearby exponents often are."""
    p = np.asarray(a, dtype=F32).astype(F64) * np.asarray(b, dtype=F32).astype(F64)
    c64 = np.asarray(c, dtype=F32).astype(F64)
    if mode == "rn" and p.ndim:
        s = p + c64
        mag = np.abs(s)
        hard = ~((mag >= _NORMAL32) | (mag == 0))
        mid = (s.view(np.uint64) & _LOW29) == _MID32
        if mid.any():
            with np.errstate(invalid="ignore"):  # (an infinite lane is not a midpoint)
                hard |= mid & (two_sum(p, c64)[1] != 0)
        if not hard.any():
            return s.astype(F32)
        out = s.astype(F32)
        c64 = np.broadcast_to(c64, p.shape)
        ph, ch = p[hard], c64[hard]
        sh, eh = two_sum(ph, ch)
        out[hard] = exact_to_format(fix_zero_sign(sh, ph, ch, mode), eh, "f32", mode)
        return out
    s, e = two_sum(p, c64)
    return exact_to_format(fix_zero_sign(s, p, c64, mode), e, "f32", mode)


def add_directed(a: np.ndarray, b: np.ndarray, fmt: str, mode: str) -> np.ndarray:
    """``a + b`` for binary32/16/bf16 inputs given as float64, rounded once."""
    a, b = np.asarray(a, dtype=F64), np.asarray(b, dtype=F64)
    s, e = two_sum(a, b)
    return exact_to_format(fix_zero_sign(s, a, b, mode), e, fmt, mode)


def mul_directed(a: np.ndarray, b: np.ndarray, fmt: str, mode: str) -> np.ndarray:
    p, e = two_prod(np.asarray(a, dtype=F64), np.asarray(b, dtype=F64))
    return exact_to_format(p, e, fmt, mode)


def fma_small(a: np.ndarray, b: np.ndarray, c: np.ndarray, fmt: str, mode: str) -> np.ndarray:
    """fma for formats whose product is exact in binary64 (f16, bf16, f32)."""
    p = np.asarray(a, dtype=F64) * np.asarray(b, dtype=F64)
    c64 = np.asarray(c, dtype=F64)
    s, e = two_sum(p, c64)
    return exact_to_format(fix_zero_sign(s, p, c64, mode), e, fmt, mode)


def add64(a: np.ndarray, b: np.ndarray, mode: str) -> np.ndarray:
    a, b = np.broadcast_arrays(np.asarray(a, dtype=F64), np.asarray(b, dtype=F64))
    with np.errstate(all="ignore"):
        s, e = two_sum(a, b)
    out = adjust64(fix_zero_sign(s, a, b, mode), e, mode)
    over = ~np.isfinite(s) & np.isfinite(a) & np.isfinite(b)
    if np.any(over):  # overflow in round-to-nearest: round the exact sum instead
        out = np.array(out, dtype=F64, copy=True)
        for i in zip(*np.nonzero(over), strict=True):
            out[i] = round_fraction(Fraction(float(a[i])) + Fraction(float(b[i])), "f64", mode)
    return out


def mul64(a: np.ndarray, b: np.ndarray, mode: str) -> np.ndarray:
    a = np.asarray(a, dtype=F64)
    b = np.asarray(b, dtype=F64)
    if mode == "rn":
        return a * b
    r = fma64(a, b, np.zeros(np.broadcast(a, b).shape), mode)
    # a zero product (exact or underflowed) has the sign of a * b
    sign = np.signbit(a) ^ np.signbit(b)
    return np.where(r == 0, np.where(sign, -0.0, 0.0), r)


def adjust64(s: np.ndarray, e: np.ndarray, mode: str) -> np.ndarray:
    if mode == "rn":
        return s
    fin = np.isfinite(s)
    if mode == "rp":
        return np.where(fin & (e > 0), np.nextafter(s, np.inf), s)
    if mode == "rm":
        return np.where(fin & (e < 0), np.nextafter(s, -np.inf), s)
    return np.where(fin & (e != 0) & (np.sign(e) != np.sign(s)), np.nextafter(s, 0.0), s)


def ftz32(x: np.ndarray) -> np.ndarray:
    """Flush binary32 subnormals to sign-preserving zero."""
    x = np.asarray(x, dtype=F32)
    sub = (np.abs(x) < np.finfo(F32).tiny) & (x != 0)
    if np.any(sub):
        return np.where(sub, np.copysign(F32(0.0), x), x).astype(F32)
    return x


# ---------------------------------------------------------------------------
# Correctly rounded division and square root in the directed modes
#
# ``q = RN(a / b)`` and ``s = RN(sqrt(x))`` in binary64 leave exactly representable
# remainders ``a - q*b`` and ``x - s*s`` (Boldo and Daumas, "Representable
# correcting terms for possibly underflowing floating point operations", ARITH
# 2003), which one correctly rounded ``fma`` computes exactly.  The remainder's
# sign says on which side of ``q`` (``s``) the exact result lies: for binary64
# results that decides the directed rounding, for binary32 results round-to-odd
# in binary64 followed by the final rounding is correct.  Lanes near the ends of
# the binary64 range (where the remainder could underflow) use exact rational or
# integer arithmetic instead.

_FORMATS = {"f16": (11, -14, 15), "f32": (24, -126, 127), "f64": (53, -1022, 1023)}


def round_fraction(q: Fraction, fmt: str, mode: str) -> float:
    """Round the exact rational ``q`` to ``fmt`` ("f16", "f32", "f64") in ``mode``
    (subnormals and overflow included); the result is returned as a Python float."""
    p, emin, emax = _FORMATS[fmt]
    if q == 0:
        return 0.0
    neg = q < 0
    a = -q if neg else q
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    largest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    away = mode == ("rm" if neg else "rp")
    if e > emax:
        if mode == "rn" or away:
            return -math.inf if neg else math.inf
        return float(-largest if neg else largest)
    qe = max(e, emin) - p + 1
    scaled = a / Fraction(2) ** qe
    n = scaled.numerator // scaled.denominator
    rem = scaled - n
    if rem:
        if mode == "rn":
            if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n & 1):
                n += 1
        elif away:
            n += 1
    r = Fraction(n) * Fraction(2) ** qe
    if r > largest:
        if mode == "rn" or away:
            return -math.inf if neg else math.inf
        r = largest
    v = math.ldexp(n, qe) if r != largest else float(largest)
    return -v if neg else v


def sqrt_fraction(x: float) -> Fraction:
    """A rational with the same rounding as ``sqrt(x)`` (``x > 0`` finite) in every
    format of at most 53 bits: the exact root when it is rational, else a value
    strictly between the two 64+-bit truncations that bracket it."""
    fx = Fraction(x)
    k = fx.denominator.bit_length() - 1  # denominator is 2**k
    j = (k + 1) // 2 + 64
    big = fx.numerator * 4**j // fx.denominator
    r = math.isqrt(big)
    if r * r == big:
        return Fraction(r, 2**j)
    return Fraction(2 * r + 1, 2 ** (j + 1))


def _sign_fix(r: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(np.signbit(b), -r, r)


def div_directed(a: np.ndarray, b: np.ndarray, fmt: str, mode: str) -> np.ndarray:
    """Correctly rounded ``a / b`` for binary32 or binary64 operands (as arrays of
    that format) in any rounding mode."""
    a64, b64 = np.broadcast_arrays(np.asarray(a, dtype=F64), np.asarray(b, dtype=F64))
    with np.errstate(all="ignore"):
        q = a64 / b64
        r = fma64(-q, b64, a64, "rn")
    fin = np.isfinite(q) & np.isfinite(a64) & np.isfinite(b64)
    e = np.where(fin, _sign_fix(r, b64), 0.0)
    if fmt == "f32":
        return f64_to_f32(round_to_odd(q, e), mode)
    out = adjust64(q, e, mode)
    lo, hi = F64(2.0**-900), F64(2.0**1000)
    aq, aa, ab = np.abs(q), np.abs(a64), np.abs(b64)
    edge = (
        np.isfinite(a64)
        & np.isfinite(b64)
        & (a64 != 0)
        & (b64 != 0)
        & ~((aq > lo) & (aq < hi) & (aa > lo) & (aa < hi) & (ab > lo) & (ab < hi))
    )
    if np.any(edge):
        out = np.array(out, dtype=F64, copy=True)
        for i in zip(*np.nonzero(edge), strict=True):
            out[i] = round_fraction(Fraction(float(a64[i])) / Fraction(float(b64[i])), fmt, mode)
    return out


def sqrt_directed(x: np.ndarray, fmt: str, mode: str) -> np.ndarray:
    """Correctly rounded square root of binary32 or binary64 operands in any mode."""
    x64 = np.asarray(x, dtype=F64)
    with np.errstate(all="ignore"):
        s = np.sqrt(x64)
        r = fma64(-s, s, x64, "rn")
    e = np.where(np.isfinite(s) & (x64 > 0), r, 0.0)
    if fmt == "f32":
        return f64_to_f32(round_to_odd(s, e), mode)
    out = adjust64(s, e, mode)
    edge = np.isfinite(x64) & (x64 > 0) & ((x64 < F64(2.0**-900)) | (x64 > F64(2.0**1000)))
    if np.any(edge):
        out = np.array(out, dtype=F64, copy=True)
        for i in zip(*np.nonzero(edge), strict=True):
            out[i] = round_fraction(sqrt_fraction(float(x64[i])), fmt, mode)
    return out


# ---------------------------------------------------------------------------
# NaN results and flush-to-zero as the hardware produces them (settled on an H100)

CANONICAL_F32 = np.uint32(0x7FFFFFFF)
DEFAULT_NAN_F64 = np.uint64(0xFFF8000000000000)
_QUIET_F64 = np.uint64(1 << 51)


def canonical_nan32(r: np.ndarray) -> np.ndarray:
    """Every NaN of a binary32 result becomes the canonical NaN 0x7fffffff."""
    r = np.asarray(r, dtype=F32)
    nan = np.isnan(r)
    if not nan.any():  # (the method: np.any's generic wrapper costs more than the test)
        return r
    return np.where(nan, CANONICAL_F32.view(F32), r).astype(F32)


def propagate_nan64(r: np.ndarray, args: list[np.ndarray], order: tuple[int, ...]) -> np.ndarray:
    """binary64 NaN results: the first NaN operand in ``order``, quieted (sign and
    payload kept); an invalid operation on non-NaN operands gives 0xfff8000000000000."""
    r = np.asarray(r, dtype=F64)
    nan = np.isnan(r)
    if not nan.any():
        return r
    bits = np.full(r.shape, DEFAULT_NAN_F64, dtype=np.uint64)
    for k in reversed(order):
        a = np.broadcast_to(np.asarray(args[k], dtype=F64), r.shape)
        bits = np.where(np.isnan(a), a.view(np.uint64) | _QUIET_F64, bits)
    out = r.copy()
    out[nan] = bits[nan].view(F64)
    return out


def _exact(op: str, xs: list[float]) -> Fraction | None:
    """The exact result of ``op`` on finite operands (None when not finite)."""
    if not all(math.isfinite(x) for x in xs):
        return None
    q = [Fraction(x) for x in xs]
    if op == "add":
        return q[0] + q[1]
    if op == "sub":
        return q[0] - q[1]
    if op == "mul":
        return q[0] * q[1]
    if op == "fma":
        return q[0] * q[1] + q[2]
    if op == "div":
        return q[0] / q[1] if q[1] else None
    if op == "rcp":
        return 1 / q[0] if q[0] else None
    return None


def flush_tiny(
    r: np.ndarray, args: list[np.ndarray], op: str, smallest_normal: float, mode: str = "rn"
) -> np.ndarray:
    """``.ftz`` on a result: zero (of the result's sign) when the result is tiny after
    rounding to the format's precision with an unbounded exponent (IEEE 754's
    tininess after rounding, which the hardware uses): below the smallest normal,
    or equal to it while the exact value rounds below it at full precision."""
    r = np.asarray(r)
    mag = np.abs(r.astype(F64))
    tiny = mag < smallest_normal
    edge = mag == smallest_normal
    if op and edge.any():
        tiny = tiny.copy()
        bits = 24 if smallest_normal == 2.0**-126 else 11
        shaped = [np.broadcast_to(np.asarray(a, dtype=F64), r.shape) for a in args]
        for i in zip(*np.nonzero(edge), strict=True):
            q = _exact(op, [float(a[i]) for a in shaped])
            if q is not None and _round_bits(abs(q), bits, mode, q < 0) < smallest_normal:
                tiny[i] = True
    if not (tiny & (r != 0)).any():
        return r
    return np.where(tiny, np.copysign(np.zeros((), dtype=r.dtype), r), r).astype(r.dtype)


def _round_bits(q: Fraction, bits: int, mode: str, neg: bool) -> Fraction:
    """``q > 0`` rounded to ``bits`` significant bits (no exponent range)."""
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    scale = Fraction(2) ** (bits - 1 - e)
    x = q * scale
    n = x.numerator // x.denominator
    rem = x - n
    if rem:
        if mode == "rn":
            n += 1 if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2) else 0
        elif mode == ("rm" if neg else "rp"):
            n += 1
    return n / scale


def fix_zero_sign(r: np.ndarray, x: np.ndarray, y: np.ndarray, mode: str) -> np.ndarray:
    """Zero results of a sum ``x + y`` computed exactly (``x`` may be a product whose
    zero-ness and sign are all that matter here): IEEE 754 gives the common sign of
    two zeros of one sign, and otherwise +0, or -0 in ``rm``, for an exact zero."""
    r = np.asarray(r)
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    zero = r == 0
    if not zero.any():
        return r
    exact = zero & (x == -y)  # cancellation, or two zeros
    both_zero = (x == 0) & (y == 0)
    same = both_zero & (np.signbit(x) == np.signbit(y))
    neg = np.where(same, np.signbit(x), mode == "rm")
    fixed = np.where(neg, -0.0, 0.0).astype(r.dtype)
    return np.where(exact, fixed, r).astype(r.dtype)
