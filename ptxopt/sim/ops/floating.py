"""Floating-point arithmetic on f32/f64 and the half formats (f16, bf16, scalar and
packed): add/sub/mul, fma/mad, div, rcp/sqrt/rsqrt, the transcendental approximations,
min/max, abs/neg, copysign and testp (PTX ISA 9.0, sections 9.7.3 and 9.7.4).

``.rn`` add/sub/mul/div/sqrt use numpy's IEEE binary32/binary64 operations (correctly
rounded).  ``fma``/``mad`` and every directed rounding mode are exact (see
:mod:`ptxopt.sim.floats`).  Approximate instructions (``rcp.approx``, ``sqrt.approx``,
``rsqrt.approx``, ``div.approx``/``div.full``, ``ex2``/``lg2``/``sin``/``cos``/
``tanh.approx``) return the correctly rounded value of the exact function, which
hardware approximates to within a few ulp; results of such ops may differ from a GPU in
the last bits.

The ISA leaves NaN payloads open; the interpreter produces the bits an H100 does (see
``tests/isa/table_float.py``): f32, f16 and bf16 NaN results are the canonical NaN
(0x7fffffff, 0x7fff), ``abs``/``neg`` of a NaN included; an f64 NaN result is the first
NaN operand in the instruction's priority order, quieted, or 0xfff8000000000000 for an
invalid operation.  ``.ftz`` flushes results that are tiny after rounding to the
format's precision with an unbounded exponent (IEEE 754's tininess after rounding).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr
from ptxopt.sim import floats as fl
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.values import (
    TYPES,
    Ty,
)


def float_binary(d: Decoder, ins: Instr, pc: int, name: str, ty: Ty, mods: set[str]) -> Op:
    mode = d.rounding(ins)
    ftz = ".ftz" in mods
    sat = ".sat" in mods
    if name in ("min", "max"):
        return _min_max(d, ins, pc, name, ty, mods)

    def f(a: Any, b: Any, fmt: str) -> Any:
        if name == "sub":
            b = -b
        if name in ("add", "sub"):
            if fmt == "f64":
                if mode == "rn":
                    return a + b
                return fl.add64(a, b, mode)
            if fmt == "f32" and mode == "rn":
                return a.astype(np.float32) + b.astype(np.float32)
            return fl.add_directed(a, b, fmt, mode)
        # mul
        if fmt == "f64":
            return fl.mul64(a, b, mode)
        if fmt == "f32" and mode == "rn":
            return a.astype(np.float32) * b.astype(np.float32)
        return fl.mul_directed(a, b, fmt, mode)

    return float_op(d, ins, pc, ty, 2, f, ftz, sat, op=name, nan_order=(1, 0))


def _min_max(d: Decoder, ins: Instr, pc: int, name: str, ty: Ty, mods: set[str]) -> Op:
    """``min``/``max`` with -0 ordered below +0; a NaN operand is ignored (``.NaN``: it
    wins); ``.xorsign.abs`` compares magnitudes and gives the result the XOR of both
    operands' sign bits (a NaN's sign bit included)."""
    nan_wins = ".NaN" in mods
    xorsign = ".xorsign" in mods

    def mm(a: Any, b: Any, fmt: str) -> Any:
        a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
        sign = np.signbit(a) ^ np.signbit(b)
        if xorsign:
            a, b = np.abs(a), np.abs(b)
        pick_a = (a < b) if name == "min" else (a > b)
        # equal values: the zero of the right sign (min: -0, max: +0)
        neg_a = np.signbit(a)
        tie = (a == b) & (neg_a if name == "min" else ~neg_a)
        pick_a = pick_a | tie | np.isnan(b)
        r = np.where(pick_a & ~np.isnan(a), a, np.where(np.isnan(b), a, b))
        both = np.isnan(a) & np.isnan(b)
        if nan_wins:
            both = np.isnan(a) | np.isnan(b)
        r = np.where(both, np.nan, r).astype(a.dtype)
        if xorsign:
            r = np.where(np.isnan(r), r, np.copysign(np.abs(r), np.where(sign, -1.0, 1.0)))
        return np.asarray(r).astype(a.dtype)

    return float_op(
        d, ins, pc, ty, 2, mm, ".ftz" in mods, False, relu=".relu" in mods, nan_order=(1, 0)
    )


def float_op(
    d: Decoder,
    ins: Instr,
    pc: int,
    ty: Ty,
    nsrc: int,
    f: Callable[..., Any],
    ftz: bool,
    sat: bool,
    relu: bool = False,
    op: str = "",
    nan_order: tuple[int, ...] = (0,),
) -> Op:
    """Run ``f(*srcs, fmt)`` per format: f32/f64 get float arrays of the format;
    f16/bf16 get float64 arrays and return the rounded result (format values).
    ``op`` names the exact operation for ``.ftz``'s tininess test, ``nan_order`` the
    operands whose NaN an f64 result propagates, first to last."""
    kind = ty.kind
    if kind == "f":
        fmt = "f32" if ty.size == 4 else "f64"

        def g(*args: Any) -> Any:
            if ftz and fmt == "f32":
                args = tuple(fl.ftz32(a) for a in args)
            arrays = [np.asarray(a) for a in args]
            r = np.asarray(f(*arrays, fmt)).astype(ty.dt, copy=False)
            if ftz and fmt == "f32":
                r = fl.flush_tiny(r, arrays, op, 2.0**-126, d.rounding(ins))
            if sat:
                r = saturate(r)
            if relu:
                r = np.where(~np.isnan(r) & (np.signbit(r) | (r < 0)), ty.dt(0), r)
            if fmt == "f32":
                return fl.canonical_nan32(r)
            return fl.propagate_nan64(r, arrays, nan_order)

        return d.alu1(ins, pc, ty, [ty] * nsrc, g)
    # half formats, scalar or packed
    half = "bf" if kind in ("bf", "bf2") else "h"
    packed = kind in ("h2", "bf2")
    tiny16 = 2.0**-14 if half == "h" else 2.0**-126

    def to64(bits: Any) -> Any:
        bits = np.asarray(bits).astype(np.uint16)
        if half == "h":
            return bits.view(np.float16).astype(np.float64)
        return fl.bf16_bits_to_f32(bits).astype(np.float64)

    def from64(x: Any) -> Any:
        x = np.asarray(x, dtype=np.float64)
        if half == "h":
            r = x.astype(np.float16).view(np.uint16)
        else:
            r = fl.f32_to_bf16_bits(fl.f64_to_f32_odd(x))
        return r

    def one(*bits: Any) -> Any:
        xs = [to64(b) for b in bits]
        if ftz:
            xs = [np.where(np.abs(x) < tiny16, np.copysign(0.0, x), x) for x in xs]
        fmt = "f16" if half == "h" else "bf16"
        r = f(*xs, fmt)
        r = np.asarray(r)
        # f returns exact values (float64), binary16 values or bfloat16 bit patterns
        if r.dtype == np.float64:
            rb = from64(r)
        elif r.dtype == np.float16:
            rb = r.view(np.uint16)
        else:
            rb = r.astype(np.uint16)
        v = to64(rb)
        if ftz:
            v = fl.flush_tiny(v, xs, op, tiny16, d.rounding(ins))
        if sat:
            v = saturate(v)
        if relu:
            v = np.where(~np.isnan(v) & np.signbit(v), 0.0, v)
        return np.where(np.isnan(v), np.uint16(0x7FFF), from64(v)).astype(np.uint16)

    if not packed:
        return d.alu1(ins, pc, TYPES[".b16"], [TYPES[".b16"]] * nsrc, one)

    def two(*bits: Any) -> Any:
        ub = [np.asarray(b).astype(np.uint32) for b in bits]
        lo = one(*[b & np.uint32(0xFFFF) for b in ub]).astype(np.uint32)
        hi = one(*[b >> np.uint32(16) for b in ub]).astype(np.uint32)
        return lo | (hi << np.uint32(16))

    return d.alu1(ins, pc, TYPES[".b32"], [TYPES[".b32"]] * nsrc, two)


def sign_op(d: Decoder, ins: Instr, pc: int, ty: Ty, name: str) -> Op:
    """abs/neg on floats act on the sign bit (``.ftz`` flushes a subnormal first); a
    NaN gives the canonical NaN (f32, f16, bf16) or stays as it is, quieted (f64)."""
    bt = TYPES[f".b{ty.size * 8}"]
    ftz = ".ftz" in ins.mods
    packed = ty.kind in ("h2", "bf2")
    width = 16 if ty.kind in ("h", "bf", "h2", "bf2") else ty.size * 8
    exp_mask = {16: 0x7C00 if ty.kind in ("h", "h2") else 0x7F80, 32: 0x7F800000}
    exp_mask[64] = 0x7FF0000000000000

    def one(a: Any, w: int) -> Any:
        a = np.asarray(a).astype(np.uint64)
        sign = np.uint64(1 << (w - 1))
        e = np.uint64(exp_mask[w])
        nan = ((a & e) == e) & ((a & ~(e | sign)) != 0)
        if ftz and w == 32:
            sub = ((a & e) == 0) & (a & ~sign != 0)
            a = np.where(sub, a & sign, a)
        r = a & ~sign if name == "abs" else a ^ sign
        if w == 64:
            return np.where(nan, a | np.uint64(1 << 51), r)
        return np.where(nan, np.uint64((1 << (w - 1)) - 1), r)

    def f(a: Any) -> Any:
        if not packed:
            return one(a, width).astype(bt.ut)
        a = np.asarray(a).astype(np.uint64)
        lo = one(a & np.uint64(0xFFFF), 16)
        hi = one(a >> np.uint64(16), 16)
        return (lo | (hi << np.uint64(16))).astype(np.uint32)

    return d.alu1(ins, pc, bt, [bt], f)


@handles("fma")
def op_fma(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    mode = d.rounding(ins)
    mods = set(ins.mods)

    def f(a: Any, b: Any, c: Any, fmt: str) -> Any:
        if fmt == "f64":
            return fl.fma64(a, b, c, mode)
        if fmt == "f32":
            return fl.fma32(a, b, c, mode)
        return fl.fma_small(a, b, c, fmt, mode)

    return float_op(
        d,
        ins,
        pc,
        ty,
        3,
        f,
        ".ftz" in mods,
        ".sat" in mods,
        relu=".relu" in mods,
        op="fma",
        nan_order=(1, 2, 0),
    )


def _unary_float(d: Decoder, ins: Instr, pc: int, fn: Callable[[Any], Any]) -> Op:
    ty = d.ty(ins)
    mode = d.rounding(ins)
    exact_ops = ins.opcode in ("sqrt", "rcp") and ".approx" not in ins.mods
    if exact_ops and mode != "rn" and ty.kind == "f":
        if ins.opcode == "sqrt":

            def directed(a: Any, fmt: str) -> Any:
                return fl.sqrt_directed(a, fmt, mode)
        else:

            def directed(a: Any, fmt: str) -> Any:
                return fl.div_directed(np.ones_like(a), a, fmt, mode)

        return float_op(d, ins, pc, ty, 1, directed, ".ftz" in ins.mods, False, op=ins.opcode)

    def f(a: Any, fmt: str) -> Any:
        if fmt == "f32" and exact_ops:
            return fn(np.asarray(a, dtype=np.float32))
        if fmt == "f64":
            return fn(np.asarray(a, dtype=np.float64))
        with np.errstate(all="ignore"):
            return fn(np.asarray(a, dtype=np.float64))

    if ty.kind == "f" and ty.size == 4 and not exact_ops:

        def f32(a: Any, fmt: str) -> Any:
            return fl.f64_to_f32(fn(np.asarray(a, dtype=np.float64)))

        return float_op(d, ins, pc, ty, 1, f32, ".ftz" in ins.mods, False)
    op = ins.opcode if exact_ops else ""
    return float_op(d, ins, pc, ty, 1, f, ".ftz" in ins.mods, False, op=op)


@handles("rcp")
def op_rcp(d: Decoder, ins: Instr, pc: int) -> Op:
    return _unary_float(d, ins, pc, lambda a: np.divide(a.dtype.type(1), a))


@handles("sqrt")
def op_sqrt(d: Decoder, ins: Instr, pc: int) -> Op:
    return _unary_float(d, ins, pc, np.sqrt)


@handles("rsqrt")
def op_rsqrt(d: Decoder, ins: Instr, pc: int) -> Op:
    return _unary_float(d, ins, pc, lambda a: 1.0 / np.sqrt(a))


@handles("sin")
def op_sin(d: Decoder, ins: Instr, pc: int) -> Op:
    return _unary_float(d, ins, pc, np.sin)


@handles("cos")
def op_cos(d: Decoder, ins: Instr, pc: int) -> Op:
    return _unary_float(d, ins, pc, np.cos)


@handles("lg2")
def op_lg2(d: Decoder, ins: Instr, pc: int) -> Op:
    return _unary_float(d, ins, pc, np.log2)


@handles("ex2")
def op_ex2(d: Decoder, ins: Instr, pc: int) -> Op:
    return _unary_float(d, ins, pc, np.exp2)


@handles("tanh")
def op_tanh(d: Decoder, ins: Instr, pc: int) -> Op:
    return _unary_float(d, ins, pc, np.tanh)


@handles("copysign")
def op_copysign(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    return d.alu1(ins, pc, ty, [ty, ty], lambda a, b: np.copysign(b, a))


@handles("testp")
def op_testp(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    mods = set(ins.mods)
    tiny = np.finfo(ty.dt).tiny

    def f(a: Any) -> Any:
        if ".finite" in mods:
            return np.isfinite(a)
        if ".infinite" in mods:
            return np.isinf(a)
        if ".number" in mods:
            return ~np.isnan(a)
        if ".notanumber" in mods:
            return np.isnan(a)
        if ".normal" in mods:  # +-0 count as normal (the ISA says so)
            return np.isfinite(a) & ((np.abs(a) >= tiny) | (a == 0))
        if ".subnormal" in mods:
            return (np.abs(a) < tiny) & (a != 0)
        raise SimError(ins.span, f"'{ins.name}' unsupported")

    return d.alu1(ins, pc, TYPES[".pred"], [ty], f)


def saturate(x: Any) -> Any:
    """``.sat``: clamp to [0, 1]; NaN and -0 give +0."""
    x = np.asarray(x)
    zero = x.dtype.type(0)
    return np.where(np.isnan(x) | (x == 0), zero, np.clip(x, 0, 1)).astype(x.dtype)


def ftz16(x: Any) -> Any:
    """Flush binary16 subnormals to sign-preserving zero."""
    x = np.asarray(x)
    if x.dtype != np.float16:
        return x
    sub = (np.abs(x) < np.float16(2.0**-14)) & (x != 0)
    if np.any(sub):
        return np.where(sub, np.copysign(np.float16(0.0), x), x).astype(np.float16)
    return x
