"""Comparison and selection: ``setp``, ``set`` (scalar and packed half pairs), ``selp``
and ``slct`` (PTX ISA 9.0, sections 9.7.6 and 9.7.7)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr, Pair
from ptxopt.sim import floats as fl
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.ops.floating import ftz16
from ptxopt.sim.values import (
    TYPES,
    Ty,
    types_of,
)


def _compare(d: Decoder, ins: Instr, cmp: str, ty: Ty) -> Callable[[Any, Any], Any]:
    if ty.kind in ("h", "bf"):
        conv = _half_to_f32(ty)

        base = _compare(d, ins, cmp, TYPES[".f32"])
        return lambda a, b: base(conv(a), conv(b))
    if ty.kind == "f":
        un = cmp.endswith("u") and cmp not in ("lu",)
        c = cmp[:-1] if un and cmp not in ("num", "nan") else cmp
        fns = {
            "eq": np.equal,
            "ne": np.not_equal,
            "lt": np.less,
            "le": np.less_equal,
            "gt": np.greater,
            "ge": np.greater_equal,
        }
        if cmp == "num":
            return lambda a, b: ~(np.isnan(a) | np.isnan(b))
        if cmp == "nan":
            return lambda a, b: np.isnan(a) | np.isnan(b)
        if c not in fns:
            raise SimError(ins.span, f"unknown comparison .{cmp}")
        fn = fns[c]
        if un:
            return lambda a, b: fn(a, b) | np.isnan(a) | np.isnan(b)
        if c == "ne":
            return lambda a, b: np.not_equal(a, b) & ~(np.isnan(a) | np.isnan(b))
        return fn
    # integers: lo/ls/hi/hs are unsigned comparisons
    ufns = {"lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
    if cmp in ufns:
        f = ufns[cmp]
        ut = ty.ut
        return lambda a, b: f(np.asarray(a).astype(ut), np.asarray(b).astype(ut))
    fns = {
        "eq": np.equal,
        "ne": np.not_equal,
        "lt": np.less,
        "le": np.less_equal,
        "gt": np.greater,
        "ge": np.greater_equal,
    }
    if cmp not in fns:
        raise SimError(ins.span, f"unknown comparison .{cmp}")
    return fns[cmp]


@handles("setp")
def op_setp(d: Decoder, ins: Instr, pc: int) -> Op:
    ts = types_of(ins.mods)
    ty = ts[-1]
    cmp = ins.mods[0][1:]
    boolop = next((m[1:] for m in ins.mods[1:] if m in (".and", ".or", ".xor")), None)
    ftz = ".ftz" in ins.mods
    packed = ty.kind in ("h2", "bf2")
    dst = ins.operands[0]
    pt = TYPES[".pred"]
    if isinstance(dst, Pair):
        wp, wq = d.wr(dst.first, pt, ins), d.wr(dst.second, pt, ins)
    else:
        wp, wq = d.wr(dst, pt, ins), None
    rc = d.rd(ins.operands[3], pt, ins) if boolop else None
    bop = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(boolop or "")
    if packed:
        # setp.f16x2 p|q, a, b: p from the lower halves, q from the upper halves,
        # each combined with c by the boolean operator
        if not isinstance(dst, Pair):
            raise SimError(ins.span, f"'{ins.name}': packed compare needs p|q")
        halves = _half_pair_compare(d, ins, cmp, ty, ftz)

        def run_packed(m: Any, s: Any, t: np.ndarray) -> None:
            lo, hi = halves(m, s)
            if bop is not None and rc is not None:
                c = rc(m, s)
                lo, hi = bop(lo, c), bop(hi, c)
            if wp is not None:
                wp(m, s, t, lo, pc)
            if wq is not None:
                wq(m, s, t, hi, pc)

        return Op("alu", ins, run_packed)
    fn = _compare(d, ins, cmp, ty)
    if ftz and ty.kind == "h":
        fn0 = fn
        fn = lambda a, b: fn0(ftz16(a), ftz16(b))  # noqa: E731
    elif ftz and ty.kind == "f" and ty.size == 4:
        fn1 = fn
        fn = lambda a, b: fn1(fl.ftz32(a), fl.ftz32(b))  # noqa: E731
    ra = d.rd(ins.operands[1], ty, ins)
    rb = d.rd(ins.operands[2], ty, ins)

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        r = fn(ra(m, s), rb(m, s))
        r = np.asarray(r)
        if bop is not None and rc is not None:
            c = rc(m, s)
            p = bop(r, c)
            q = bop(~r, c)
        else:
            p, q = r, ~r
        if wp is not None:
            wp(m, s, t, p, pc)
        if wq is not None:
            wq(m, s, t, q, pc)

    return Op("alu", ins, run)


def _half_pair_compare(
    d: Decoder, ins: Instr, cmp: str, ty: Ty, ftz: bool
) -> Callable[[Any, Any], tuple[Any, Any]]:
    """Reader of the (lower, upper) half comparisons of packed f16x2/bf16x2."""
    hty = TYPES[".f16"] if ty.kind == "h2" else TYPES[".bf16"]
    fn = _compare(d, ins, cmp, hty)
    b32 = TYPES[".b32"]
    ra = d.rd(ins.operands[1], b32, ins)
    rb = d.rd(ins.operands[2], b32, ins)
    m16 = np.uint32(0xFFFF)
    s16 = np.uint32(16)

    def split(x: Any) -> tuple[Any, Any]:
        x = np.asarray(x).astype(np.uint32)
        lo = (x & m16).astype(np.uint16)
        hi = (x >> s16).astype(np.uint16)
        if hty.kind == "h":
            lo, hi = lo.view(np.float16), hi.view(np.float16)
            if ftz:
                lo, hi = ftz16(lo), ftz16(hi)
        return lo, hi

    def run(m: Any, s: Any) -> tuple[Any, Any]:
        alo, ahi = split(ra(m, s))
        blo, bhi = split(rb(m, s))
        return np.asarray(fn(alo, blo)), np.asarray(fn(ahi, bhi))

    return run


@handles("set")
def op_set(d: Decoder, ins: Instr, pc: int) -> Op:
    ts = types_of(ins.mods)
    dty, sty = ts[0], ts[-1]
    cmp = ins.mods[0][1:]
    boolop = next((m[1:] for m in ins.mods[1:] if m in (".and", ".or", ".xor")), None)
    bop = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(boolop or "")
    ftz = ".ftz" in ins.mods
    if sty.kind in ("h2", "bf2"):
        # set.CmpOp.dtype.f16x2 d, a, b: each half of d is 1.0 (f16x2/bf16x2
        # destinations) or 0xFFFF (u32/s32) where the halves compare true, else 0
        halves = _half_pair_compare(d, ins, cmp, sty, ftz)
        rc = d.rd(ins.operands[3], TYPES[".pred"], ins) if boolop else None
        one16 = {"h2": 0x3C00, "bf2": 0x3F80}.get(dty.kind, 0xFFFF)
        w = d.wr(ins.operands[0], TYPES[".b32"], ins)

        def run_packed(m: Any, s: Any, t: np.ndarray) -> None:
            lo, hi = halves(m, s)
            if bop is not None and rc is not None:
                c = rc(m, s)
                lo, hi = bop(lo, c), bop(hi, c)
            r = np.where(lo, np.uint32(one16), np.uint32(0)) | np.where(
                hi, np.uint32(one16 << 16), np.uint32(0)
            )
            if w is not None:
                w(m, s, t, r.astype(np.uint32), pc)

        return Op("alu", ins, run_packed)
    fn = _compare(d, ins, cmp, sty)
    if ftz and sty.kind == "h":
        fn0 = fn
        fn = lambda a, b: fn0(ftz16(a), ftz16(b))  # noqa: E731
    elif ftz and sty.kind == "f" and sty.size == 4:
        fn1 = fn
        fn = lambda a, b: fn1(fl.ftz32(a), fl.ftz32(b))  # noqa: E731
    if dty.kind == "f":
        one: Any = dty.dt(1.0)
    elif dty.kind == "h":
        one = np.float16(1.0)
    elif dty.kind == "bf":
        dty = TYPES[".b16"]
        one = np.uint16(0x3F80)
    else:
        one = np.array(-1).astype(dty.ut).view(dty.dt)[()]
    zero = dty.dt(0)
    srcs = [sty, sty] + ([TYPES[".pred"]] if boolop else [])

    def f(a: Any, b: Any, *c: Any) -> Any:
        r = np.asarray(fn(a, b))
        if bop is not None:
            r = bop(r, c[0])
        return np.where(r, one, zero).astype(dty.dt)

    return d.alu1(ins, pc, dty, srcs, f)


@handles("selp")
def op_selp(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    return d.alu1(
        ins,
        pc,
        ty,
        [ty, ty, TYPES[".pred"]],
        lambda a, b, c: np.asarray(np.where(c, a, b)).astype(ty.dt),
    )


@handles("slct")
def op_slct(d: Decoder, ins: Instr, pc: int) -> Op:
    """``slct.dtype.ctype d, a, b, c``: ``c >= 0 ? a : b`` (``.ftz``: a subnormal f32
    ``c`` counts as a zero of its sign, -0 >= 0 holding)."""
    ts = types_of(ins.mods)
    dty, cty = ts[0], ts[-1]
    ftz = ".ftz" in ins.mods and cty.kind == "f"

    def f(a: Any, b: Any, c: Any) -> Any:
        c = np.asarray(c)
        if ftz:
            c = fl.ftz32(c)
        return np.where(c >= 0, a, b).astype(dty.dt)

    return d.alu1(ins, pc, dty, [dty, dty, cty], f)


def _half_to_f32(ty: Ty) -> Callable[[Any], Any]:
    if ty.kind == "h":
        return lambda a: np.asarray(a).astype(np.float32)
    return lambda a: fl.bf16_bits_to_f32(np.asarray(a).astype(np.uint16))
