"""Conversions: ``cvt`` between integer and floating-point types of every width, with
its rounding, ``.sat``, ``.relu`` and ``.ftz`` modifiers, and the packing forms (PTX ISA
9.0, section 9.7.9.21)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr
from ptxopt.sim import floats as fl
from ptxopt.sim import narrow as nf
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.ops.decoder import ROUNDING, Decoder, handles
from ptxopt.sim.ops.floating import saturate
from ptxopt.sim.values import TYPES, Ty, types_of

IROUND = {".rni": "rn", ".rzi": "rz", ".rmi": "rm", ".rpi": "rp"}


@handles("cvt")
def op_cvt(d: Decoder, ins: Instr, pc: int) -> Op:
    if ".pack" in ins.mods:
        return _cvt_pack(d, ins, pc)
    if ".rs" in ins.mods:
        raise SimError(
            ins.span,
            f"'{ins.name}': stochastic rounding (.rs) is not interpreted: the ISA text does "
            "not fix how each result consumes the random bits",
        )
    if any(m in NARROW for m in ins.mods):
        return _cvt_narrow(d, ins, pc)
    ts = types_of(ins.mods)
    if len(ts) < 2:
        raise SimError(ins.span, f"'{ins.name}': cvt needs two types")
    dty, sty = ts[0], ts[1]
    mods = set(ins.mods)
    opts = _Opts(
        sat=".sat" in mods,
        ftz=".ftz" in mods,
        relu=".relu" in mods,
        satfinite=".satfinite" in mods,
        irnd=next((IROUND[m] for m in ins.mods if m in IROUND), None),
        frnd=next((ROUNDING[m] for m in ins.mods if m in ROUNDING), None),
    )
    if dty.kind in ("h2", "bf2"):
        return _to_half_pair(d, ins, pc, dty, opts)
    if sty.kind in ("h2", "bf2") or dty.kind == "p" or sty.kind == "p":
        raise SimError(ins.span, f"'{ins.name}' unsupported")
    s_float = sty.kind in ("f", "h", "bf")
    d_float = dty.kind in ("f", "h", "bf")
    src_read = sty if sty.kind != "bf" else TYPES[".b16"]
    out_ty = dty if dty.kind != "bf" else TYPES[".b16"]
    if s_float and d_float:
        fn = _float_to_float(sty, dty, opts)
    elif s_float:
        return d.alu1(ins, pc, dty, [src_read], _float_to_int(sty, dty, opts))
    elif d_float:
        fn = _int_to_float(sty, dty, opts)
    else:
        return d.alu1(ins, pc, dty, [sty], _int_to_int(dty, opts.sat))
    return d.alu1(ins, pc, out_ty, [src_read], fn)


@dataclass(frozen=True, slots=True)
class _Opts:
    sat: bool
    ftz: bool
    relu: bool
    satfinite: bool
    irnd: str | None
    frnd: str | None


def _source_f64(sty: Ty, ftz: bool) -> Callable[[Any], Any]:
    """Reader of a float source as exact float64 values (``.ftz``: f32 subnormals
    flushed)."""

    def to_f64(a: Any) -> Any:
        a = np.asarray(a)
        if sty.kind == "bf":
            return fl.bf16_bits_to_f32(a).astype(np.float64)
        x = a.astype(np.float64)
        if ftz and sty.size == 4:
            x = np.where(np.abs(x) < np.finfo(np.float32).tiny, np.copysign(0.0, x), x)
        return x

    return to_f64


def _float_to_float(sty: Ty, dty: Ty, o: _Opts) -> Callable[[Any], Any]:
    """Between float types: exact value, integral rounding (``.rni`` ...), ``.sat``,
    ``.relu``, one rounding to the destination (``.satfinite``: no overflow to Inf),
    ``.ftz`` on f32 results; NaN results as :func:`_nan_between` describes."""
    mode = o.frnd or "rn"
    to_f64 = _source_f64(sty, o.ftz)
    src_bits = _bits_reader(sty)

    def ff(a: Any) -> Any:
        x = to_f64(a)
        if o.irnd is not None:
            x = _round_int(x, o.irnd)
        if o.sat:
            x = saturate(x)
        if o.relu:
            x = np.where(~np.isnan(x) & np.signbit(x), 0.0, x)
        if o.satfinite:
            big = _largest(dty)
            x = np.where(np.isnan(x), x, np.clip(x, -big, big))
        if dty.kind == "bf":
            r: Any = fl.f32_to_bf16_bits(fl.f64_to_f32_odd(x), mode)
        elif dty.kind == "h":
            r = fl.f64_to_f16(x, mode)
        elif dty.size == 4:
            r = fl.f64_to_f32(x, mode) if sty.size == 8 else x.astype(np.float32)
            if o.ftz:
                r = fl.ftz32(r)
        else:
            r = x
        nan = np.isnan(x)
        if not np.any(nan):
            return r
        bits = _nan_between(src_bits(a), sty, dty, o.ftz)
        out_bits = np.asarray(r).view(_UINT[dty.size]) if dty.kind != "bf" else np.asarray(r)
        res = np.where(nan, bits, out_bits).astype(_UINT[dty.size])
        return res if dty.kind == "bf" else res.view(dty.dt)

    return ff


_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
_MANT = {"h": 10, "bf": 7, 4: 23, 8: 52}


def _largest(ty: Ty) -> float:
    if ty.kind == "bf":
        return float(fl.bf16_bits_to_f32(np.array([0x7F7F], dtype=np.uint16))[0])
    return float(np.finfo(ty.dt).max)


def _bits_reader(ty: Ty) -> Callable[[Any], Any]:
    size = 2 if ty.kind in ("h", "bf") else ty.size

    def bits(a: Any) -> Any:
        a = np.asarray(a)
        if a.dtype.kind == "f":
            a = a.view(_UINT[size])
        return a.astype(np.uint64)

    return bits


def _mant(ty: Ty) -> int:
    return _MANT[ty.kind] if ty.kind in ("h", "bf") else _MANT[ty.size]


def _nan_between(bits: Any, sty: Ty, dty: Ty, ftz: bool) -> Any:
    """The NaN a conversion between float types returns (what an H100 does; the ISA
    leaves it open): into f64, the source's sign and payload with the quiet bit set
    (``.ftz`` from f32 canonicalizes first); from f64 into a narrower type, the sign,
    the top payload bits and the quiet bit; bf16 -> f32 is a plain bit shift; every
    other conversion gives the destination's canonical NaN."""
    ssize = 2 if sty.kind in ("h", "bf") else sty.size
    dsize = 2 if dty.kind in ("h", "bf") else dty.size
    sm, dm = _mant(sty), _mant(dty)
    sign = (bits >> np.uint64(8 * ssize - 1)) & np.uint64(1)
    payload = bits & np.uint64((1 << sm) - 1)
    if ftz and sty.kind == "f" and sty.size == 4:
        sign, payload = np.zeros_like(sign), np.full_like(payload, (1 << 23) - 1)
    if sty.kind == "bf" and dty.kind == "f" and dty.size == 4:
        return bits << np.uint64(16)
    exp_all = np.uint64(((1 << (8 * dsize - 1 - dm)) - 1) << dm)
    quiet = np.uint64(1 << (dm - 1))
    if dty.kind == "f" and dty.size == 8:
        body = exp_all | quiet | (payload << np.uint64(dm - sm))
    elif sty.kind == "f" and sty.size == 8:
        body = exp_all | quiet | (payload >> np.uint64(sm - dm))
    else:
        return np.full(np.shape(bits), (1 << (8 * dsize - 1)) - 1, dtype=np.uint64)
    return (sign << np.uint64(8 * dsize - 1)) | body


def _float_to_int(sty: Ty, dty: Ty, o: _Opts) -> Callable[[Any], Any]:
    """Round to an integer (``.rzi`` by default) and saturate to the destination's
    range.  NaN gives 0 from f16/bf16/f32 into at most 32 bits and the bits
    0x80...0 from f64 or into a 64-bit type (as an H100 does)."""
    mode = o.irnd or "rz"
    info = np.iinfo(dty.dt)
    lo, hi = float(info.min), float(info.max)
    to_f64 = _source_f64(sty, o.ftz)
    nan_bits = 1 << (8 * dty.size - 1) if (sty.size == 8 or dty.size == 8) else 0
    nan_value = np.array(nan_bits, dtype=dty.ut).view(dty.dt)[()]

    def fi(a: Any) -> Any:
        x = _round_int(to_f64(a), mode)
        nan = np.isnan(x)
        x = np.where(nan, 0.0, x)
        over = x >= hi  # hi may not be representable (2**63 - 1 rounds up)
        under = x <= lo
        inner = np.clip(x, lo, hi)
        r = np.where(over | under, 0.0, inner).astype(np.int64 if dty.kind == "s" else np.uint64)
        r = np.where(over, dty.dt(info.max), np.where(under, dty.dt(info.min), r.astype(dty.dt)))
        return np.where(nan, nan_value, r).astype(dty.dt)

    return fi


def _int_to_float(sty: Ty, dty: Ty, o: _Opts) -> Callable[[Any], Any]:
    """Round the exact integer once to the destination (64-bit sources: the binary64
    approximation plus its exact integer remainder); ``.sat`` clamps to [0, 1]."""
    mode = o.frnd or "rn"

    def iff(a: Any) -> Any:
        a = np.asarray(a)
        s = a.astype(np.float64)
        e = np.zeros(np.shape(s))
        if sty.size == 8:
            big = np.abs(s) >= 2.0**53
            if np.any(big):
                e = e.copy()
                for i in zip(*np.nonzero(big), strict=True):
                    e[i] = float(int(a[i]) - int(s[i]))
        if dty.kind == "bf":
            r: Any = fl.f32_to_bf16_bits(fl.f64_to_f32_odd(fl.round_to_odd(s, e)), mode)
        elif dty.kind == "h":
            r = fl.exact_to_format(s, e, "f16", mode)
        elif dty.size == 4:
            r = fl.exact_to_format(s, e, "f32", mode)
        else:
            r = fl.adjust64(s, e, mode)
        return saturate(r) if o.sat else r

    return iff


def _int_to_int(dty: Ty, sat: bool) -> Callable[[Any], Any]:
    """Sign- or zero-extend by the source type, then truncate, or (``.sat``) clamp."""
    dinfo = np.iinfo(dty.dt)

    def ii(a: Any) -> Any:
        a = np.asarray(a)
        if sat:
            if a.dtype == np.uint64:
                a = np.minimum(a, np.uint64(dinfo.max)) if dinfo.max < 2**64 else a
                return a.astype(dty.dt)
            if a.dtype == np.int64 and dty.dt == np.uint64:
                return np.maximum(a, 0).astype(np.uint64)
            return np.clip(
                a.astype(np.int64), max(dinfo.min, -(2**63)), min(dinfo.max, 2**63 - 1)
            ).astype(dty.dt)
        if a.dtype.itemsize < dty.size:
            return a.astype(dty.dt)
        return a.astype(dty.ut).view(dty.dt)

    return ii


def _to_half_pair(d: Decoder, ins: Instr, pc: int, dty: Ty, o: _Opts) -> Op:
    """``cvt.rn{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b``: ``a`` into the upper
    half, ``b`` into the lower half."""
    f32 = TYPES[".f32"]
    mode = o.frnd or "rn"
    half = "f16" if dty.kind == "h2" else "bf16"

    def pack(a: Any, b: Any) -> Any:
        hi = _f32_to_half_bits(np.asarray(a, dtype=np.float32), half, mode, o)
        lo = _f32_to_half_bits(np.asarray(b, dtype=np.float32), half, mode, o)
        return lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))

    return d.alu1(ins, pc, TYPES[".b32"], [f32, f32], pack)


def _round_int(x: Any, mode: str) -> Any:
    if mode == "rn":
        return np.rint(x)
    if mode == "rz":
        return np.trunc(x)
    if mode == "rm":
        return np.floor(x)
    return np.ceil(x)


def _f32_to_half_bits(x: Any, half: str, mode: str, o: _Opts) -> Any:
    x64 = x.astype(np.float64)
    if o.sat:
        x64 = saturate(x64)
    if o.relu:
        x64 = np.where(~np.isnan(x64) & np.signbit(x64), 0.0, x64)
    if o.satfinite:
        big = 65504.0 if half == "f16" else 3.3895313892515355e38
        x64 = np.where(np.isnan(x64), x64, np.clip(x64, -big, big))
    if half == "f16":
        r = fl.f64_to_f16(x64, mode).view(np.uint16)
    else:
        r = fl.f32_to_bf16_bits(x64.astype(np.float32), mode)
    return np.where(np.isnan(x64), np.uint16(0x7FFF), r)


_PACK_WIDTH = {".u16": 16, ".s16": 16, ".u8": 8, ".s8": 8, ".u4": 4, ".s4": 4, ".u2": 2, ".s2": 2}


def _cvt_pack(d: Decoder, ins: Instr, pc: int) -> Op:
    """``cvt.pack.sat.T.s32{.b32} d, a, b{, c}``: ``a`` and ``b`` are clamped to the
    range of the n-bit type ``T`` and packed into the low ``2n`` bits of ``d`` (``a``
    above ``b``); for n < 16 the low ``32 - 2n`` bits of ``c`` fill the bits above:
    ``d = c << 2n | sat(a) << n | sat(b)`` (PTX ISA 9.0, section 9.7.9.22)."""
    ctype = next((m for m in ins.mods if m in _PACK_WIDTH), None)
    if ctype is None:
        raise SimError(ins.span, f"'{ins.name}': expected a .u16/.s16/.u8/.s8/.u4/.s4/.u2/.s2 type")
    n = _PACK_WIDTH[ctype]
    if ctype[1] == "s":
        lo, hi = -(1 << (n - 1)), (1 << (n - 1)) - 1
    else:
        lo, hi = 0, (1 << n) - 1
    field = (1 << n) - 1
    s32, b32 = TYPES[".s32"], TYPES[".b32"]

    def sat(x: Any) -> Any:
        return np.clip(np.asarray(x).astype(np.int64), lo, hi) & field

    def pack(a: Any, b: Any, *c: Any) -> Any:
        r = (sat(a) << n) | sat(b)
        if c:
            r = r | (np.asarray(c[0]).astype(np.int64) << (2 * n))
        return (r & 0xFFFFFFFF).astype(np.uint32)

    srcs = [s32, s32] + ([b32] if n < 16 else [])
    return d.alu1(ins, pc, b32, srcs, pack)


#: packed narrow formats of cvt: name -> (element format, elements, field width)
NARROW = {
    ".e4m3x2": ("e4m3", 2, 8),
    ".e5m2x2": ("e5m2", 2, 8),
    ".e2m3x2": ("e2m3", 2, 8),
    ".e3m2x2": ("e3m2", 2, 8),
    ".e2m1x2": ("e2m1", 2, 4),
    ".ue8m0x2": ("ue8m0", 2, 8),
    ".tf32": ("tf32", 1, 32),
}


def _cvt_narrow(d: Decoder, ins: Instr, pc: int) -> Op:
    """Conversions to and from the packed narrow formats (see :mod:`ptxopt.sim.narrow`):
    ``cvt.rn.satfinite{.relu}.F.f32 d, a, b`` (``a`` in the upper field),
    ``cvt.rn.satfinite{.relu}.F.f16x2 d, a``, ``cvt.rn{.relu}.f16x2.F d, a``,
    ``cvt.{rz,rp}{.satfinite}.ue8m0x2.{f32,bf16x2}``, ``cvt.rn.bf16x2.ue8m0x2`` and
    ``cvt.{rna,rn,rz}{.satfinite}{.relu}.tf32.f32``."""
    types = [m for m in ins.mods if m in NARROW or m in TYPES]
    if len(types) != 2:
        raise SimError(ins.span, f"'{ins.name}': expected a destination and a source type")
    dst, src = types
    relu = ".relu" in ins.mods
    satfinite = ".satfinite" in ins.mods
    mode = next((m[1:] for m in ins.mods if m in (".rn", ".rz", ".rp", ".rm", ".rna")), "rn")
    b16, b32, f32 = TYPES[".b16"], TYPES[".b32"], TYPES[".f32"]
    if dst == ".tf32":
        return d.alu1(ins, pc, b32, [f32], lambda a: nf.tf32_bits(a, mode, satfinite, relu))
    if dst in NARROW:
        fmt, _, width = NARROW[dst]
        out = TYPES[".b8"] if width == 4 else b16

        def enc(x: Any) -> Any:
            if fmt == "ue8m0":
                return nf.encode_ue8m0(x, mode, satfinite)
            return nf.encode(np.asarray(x, dtype=np.float64), nf.FORMATS[fmt], mode, relu)

        def join(hi: Any, lo: Any) -> Any:
            return ((hi << np.uint32(width)) | lo).astype(out.ut)

        if src == ".f32":
            return d.alu1(ins, pc, out, [f32, f32], lambda a, b: join(enc(a), enc(b)))
        if src in (".f16x2", ".bf16x2"):
            if src == ".f16x2":

                def value(h: Any) -> Any:
                    return h.astype(np.uint16).view(np.float16).astype(np.float32)
            else:

                def value(h: Any) -> Any:
                    return fl.bf16_bits_to_f32(h)

            def halves(a: Any) -> Any:
                a = np.asarray(a).astype(np.uint32)
                return join(enc(value(a >> np.uint32(16))), enc(value(a & np.uint32(0xFFFF))))

            return d.alu1(ins, pc, out, [b32], halves)
        raise SimError(ins.span, f"'{ins.name}': unsupported source type {src}")
    fmt, _, width = NARROW[src]
    inp = TYPES[".b8"] if width == 4 else b16
    field = np.uint32((1 << width) - 1)
    if fmt == "ue8m0":

        def to_bf16x2(a: Any) -> Any:
            a = np.asarray(a).astype(np.uint32)
            hi = nf.decode_ue8m0_to_bf16(a >> np.uint32(8)).astype(np.uint32)
            lo = nf.decode_ue8m0_to_bf16(a & field).astype(np.uint32)
            return (hi << np.uint32(16)) | lo

        return d.alu1(ins, pc, b32, [inp], to_bf16x2)
    ef = nf.FORMATS[fmt]

    def to_f16(c: Any) -> Any:
        v = nf.decode(c, ef)
        if relu:  # negative values and -0 become +0
            v = np.where(~np.isnan(v) & np.signbit(v), 0.0, v)
        h = v.astype(np.float16).view(np.uint16).astype(np.uint32)
        return np.where(np.isnan(v), np.uint32(0x7FFF), h)  # canonical NaN

    def to_f16x2(a: Any) -> Any:
        a = np.asarray(a).astype(np.uint32)
        return (to_f16(a >> np.uint32(width)) << np.uint32(16)) | to_f16(a & field)

    return d.alu1(ins, pc, b32, [inp], to_f16x2)
