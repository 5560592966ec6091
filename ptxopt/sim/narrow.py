"""Narrow floating-point formats of ``cvt``: fp8 (e4m3, e5m2), fp6 (e2m3, e3m2), fp4
(e2m1), the exponent-only scale format ue8m0 and tf32.

Encoding rounds an exact binary64 value (every f32/f16/bf16 input is exact in
binary64) to the format's grid: the quantum of a value is ``2**(max(e, emin) - m)``
for its binary exponent ``e``, the format's minimum normal exponent ``emin`` and ``m``
mantissa bits; dividing by the quantum is exact (a power of two), so rounding the
quotient to an integer in the requested direction and multiplying back gives the
correctly rounded value, subnormals included.  Overflow follows the format (PTX ISA
9.0, section 9.7.9.21 and the OCP Microscaling Formats specification v1.0):

=========  ====  ==========  =============  =============================================
format     bias  max finite  inf / NaN      ``.satfinite`` / overflow
=========  ====  ==========  =============  =============================================
e4m3       7     448         - / S.1111.111 overflow and +-Inf give +-448, NaN gives 0x7f
e5m2       15    57344       IEEE-like      overflow and +-Inf give +-57344, NaN 0x7f
e2m3       1     7.5         - / -          saturates; NaN gives +7.5 (0x1f)
e3m2       3     28          - / -          saturates; NaN gives +28 (0x1f)
e2m1       1     6           - / -          saturates; NaN gives +6 (0x7)
=========  ====  ==========  =============  =============================================

``.relu`` turns a negative result into +0 (NaN stays NaN).  ue8m0 holds a biased
exponent only (``2**(k - 127)``, 0xff is NaN): ``.rz`` takes the binary32 exponent
field, ``.rp`` adds one when the significand is not exactly 1; the sign is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

F64 = np.float64


@dataclass(frozen=True, slots=True)
class Fmt:
    name: str
    ebits: int
    mbits: int
    bias: int
    ieee: bool  # all-ones exponent is Inf/NaN (e5m2)
    nan: int | None  # positive NaN code the format produces, None: no NaN

    @property
    def bits(self) -> int:
        return 1 + self.ebits + self.mbits

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def max_finite(self) -> float:
        top = (1 << self.ebits) - 1
        if self.ieee:
            top -= 1
            frac = 2 - 2.0**-self.mbits
        elif self.nan is not None:  # e4m3: S.1111.111 is NaN, S.1111.110 is the max
            frac = 2 - 2.0 ** (1 - self.mbits)
        else:
            frac = 2 - 2.0**-self.mbits
        return float(frac * 2.0 ** (top - self.bias))


FORMATS = {
    "e4m3": Fmt("e4m3", 4, 3, 7, False, 0x7F),
    "e5m2": Fmt("e5m2", 5, 2, 15, True, 0x7F),
    "e2m3": Fmt("e2m3", 2, 3, 1, False, None),
    "e3m2": Fmt("e3m2", 3, 2, 3, False, None),
    "e2m1": Fmt("e2m1", 2, 1, 1, False, None),
}


def _exponent(a: Any) -> Any:
    """``floor(log2(a))`` for positive finite binary64 ``a`` (exact)."""
    with np.errstate(all="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0))).astype(np.int64)
    # log2 may be off by one next to powers of two: fix it exactly
    e = np.where(np.ldexp(1.0, e) > a, e - 1, e)
    return np.where(np.ldexp(1.0, e + 1) <= a, e + 1, e)


def encode(x: Any, fmt: Fmt, mode: str = "rn", relu: bool = False) -> np.ndarray:
    """Round binary64 values ``x`` to ``fmt`` with saturation to the largest finite
    value (``.satfinite``, mandatory for these formats); return the codes (uint32)."""
    x = np.asarray(x, dtype=F64)
    nan = np.isnan(x)
    neg = np.signbit(x) & ~nan
    if relu:
        x = np.where(neg, 0.0, x)
        neg = np.zeros_like(neg)
    a = np.where(nan | np.isinf(x), 0.0, np.abs(x))
    q = np.maximum(_exponent(a), fmt.emin) - fmt.mbits
    scaled = np.ldexp(a, -q)  # exact: a power-of-two scaling
    if mode == "rn":
        k = np.rint(scaled)
    else:  # directed modes act on magnitudes
        away = neg if mode == "rm" else ~neg if mode == "rp" else np.zeros_like(neg)
        k = np.where(away, np.ceil(scaled), np.floor(scaled))
    v = np.ldexp(k, q)
    v = np.where(np.isinf(x) | (v > fmt.max_finite), fmt.max_finite, v)
    code = _pack(v, fmt) | np.where(neg, 1 << (fmt.bits - 1), 0)
    # NaN: the format's NaN, or (formats without one) the largest finite value
    nan_code = fmt.nan if fmt.nan is not None else int(_pack(np.array(fmt.max_finite), fmt))
    return np.where(nan, nan_code, code).astype(np.uint32)


def _pack(v: Any, fmt: Fmt) -> Any:
    """Codes of non-negative finite values ``v`` that lie on the format's grid."""
    v = np.asarray(v, dtype=F64)
    e = _exponent(v)
    normal = (v > 0) & (e >= fmt.emin)
    ef = np.where(normal, e + fmt.bias, 0)
    m = np.ldexp(v, fmt.mbits - np.where(normal, e, fmt.emin)).astype(np.int64)
    m = np.where(normal, m - (1 << fmt.mbits), m)
    return (ef << fmt.mbits) | m


def decode(code: Any, fmt: Fmt) -> np.ndarray:
    """Values (binary64, NaN for NaN codes) of the codes ``code``."""
    c = np.asarray(code).astype(np.int64) & ((1 << fmt.bits) - 1)
    sign = np.where((c >> (fmt.bits - 1)) & 1 == 1, -1.0, 1.0)
    ef = (c >> fmt.mbits) & ((1 << fmt.ebits) - 1)
    m = c & ((1 << fmt.mbits) - 1)
    normal = ef > 0
    sig = np.where(normal, m + (1 << fmt.mbits), m).astype(F64)
    v = np.ldexp(sig, (np.where(normal, ef - fmt.bias, fmt.emin) - fmt.mbits).astype(np.int64))
    top = ef == (1 << fmt.ebits) - 1
    if fmt.ieee:
        v = np.where(top & (m == 0), np.inf, np.where(top, np.nan, v))
    elif fmt.nan is not None:
        v = np.where(top & (m == (1 << fmt.mbits) - 1), np.nan, v)
    return sign * v


def encode_ue8m0(x: Any, mode: str, satfinite: bool) -> np.ndarray:
    """binary32 values -> ue8m0 codes (``.rz``/``.rp``; see the module docstring)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    ef = (u >> 23) & 0xFF
    frac = u & 0x7FFFFF
    nan = (ef == 0xFF) & (frac != 0)
    inf = (ef == 0xFF) & (frac == 0)
    # .rp: one up when the significand is not exactly a power of two, except for
    # values at or below 2**-127 (binary32 subnormals up to 0x00400000)
    up = (frac != 0) & ~nan & ~inf & ((ef > 0) | (frac > 0x400000))
    k = ef + np.where(up, 1, 0) if mode == "rp" else ef
    if satfinite:
        k = np.where(inf | (k > 0xFE), 0xFE, k)
    k = np.where(nan, 0xFF, np.minimum(k, 0xFF))
    return k.astype(np.uint32)


def decode_ue8m0_to_bf16(code: Any) -> np.ndarray:
    """ue8m0 codes -> bfloat16 bit patterns: ``2**(k - 127)`` (0xff: NaN 0x7fff)."""
    k = np.asarray(code).astype(np.int64) & 0xFF
    bits = np.where(k == 0, 0x0040, k << 7)  # 2**-127 is a bfloat16 subnormal
    return np.where(k == 0xFF, 0x7FFF, bits).astype(np.uint16)


def tf32_bits(x: Any, mode: str, satfinite: bool, relu: bool) -> np.ndarray:
    """binary32 values -> tf32 in a 32-bit container (10 mantissa bits kept, the low
    13 bits zero): ``rna`` rounds to nearest with ties away from zero, ``rn`` ties to
    even, ``rz`` truncates; ``.satfinite`` turns overflow and +-Inf into the largest
    finite tf32 value.  A NaN is truncated like any other pattern (an H100 turns
    0x7f800001 into 0x7f800000); the ISA does not say what it becomes."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    sign = u & 0x80000000
    mag = u & 0x7FFFFFFF
    nan = mag > 0x7F800000
    inf = mag == 0x7F800000
    low = mag & 0x1FFF
    keep = mag - low
    if mode == "rna":
        keep = keep + np.where(low >= 0x1000, 0x2000, 0)
    elif mode == "rn":
        odd = (keep >> 13) & 1
        keep = keep + np.where((low > 0x1000) | ((low == 0x1000) & (odd == 1)), 0x2000, 0)
    r = np.where(inf, 0x7F800000, keep)
    max_tf32 = 0x7F7FE000
    if satfinite:
        r = np.where(r >= 0x7F800000, max_tf32, r)
    r = r | sign
    if relu:
        r = np.where((sign != 0) & ~nan, 0, r)
    r = np.where(nan, u & 0xFFFFE000, r)
    return r.astype(np.uint32)
