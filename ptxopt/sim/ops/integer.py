"""Integer arithmetic: ``add``/``sub`` (with ``.sat`` and the packed ``.u16x2``/
``.s16x2`` forms), the carry chain (``add.cc``, ``addc``, ``sub.cc``, ``subc``,
``mad.cc``, ``madc``), ``mul``/``mad`` (``.lo``/``.hi``/``.wide``), ``mul24``/``mad24``,
``sad``, ``div``/``rem``, ``abs``/``neg``, ``min``/``max`` and ``dp4a``/``dp2a``
(PTX ISA 9.0, sections 9.7.1 and 9.7.2).

The opcodes shared with floating point (``add``, ``mul``, ``div`` ...) are decoded
here and handed to :mod:`ptxopt.sim.ops.floating` for float types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr
from ptxopt.ptx.opcodes import CARRY_FLAG
from ptxopt.sim import floats as fl
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.ops.floating import float_binary, float_op, op_fma, sign_op
from ptxopt.sim.values import (
    TYPES,
    Reader,
    Ty,
    signed_of,
    types_of,
    unsigned_of,
)

_S32_MIN, _S32_MAX = np.int64(-(2**31)), np.int64(2**31 - 1)


def _saturating_s32(op: Any) -> Any:
    """``add.sat.s32`` / ``sub.sat.s32``: compute in 64 bits, clamp to the s32 range."""
    return lambda a, b: np.clip(op(a.astype(np.int64), b), _S32_MIN, _S32_MAX).astype(np.int32)


def _binary(d: Decoder, ins: Instr, pc: int, name: str) -> Op:
    ty = d.ty(ins)
    mods = set(ins.mods)
    if ty.kind in ("f", "h", "bf", "h2", "bf2"):
        return float_binary(d, ins, pc, name, ty, mods)
    if ty.kind in ("u2", "s2"):
        return _packed16(d, ins, pc, name, ty)
    sat = ".sat" in mods
    if name == "add":
        if ".cc" in mods or ins.opcode == "addc":
            return _carry(d, ins, pc, ty, sub=False)
        if sat:
            return d.alu1(ins, pc, ty, [ty, ty], _saturating_s32(np.add))
        return d.alu1(ins, pc, ty, [ty, ty], lambda a, b: a + b)
    if name == "sub":
        if ".cc" in mods or ins.opcode == "subc":
            return _carry(d, ins, pc, ty, sub=True)
        if sat:
            return d.alu1(ins, pc, ty, [ty, ty], _saturating_s32(np.subtract))
        return d.alu1(ins, pc, ty, [ty, ty], lambda a, b: a - b)
    if name in ("min", "max"):
        fn = np.minimum if name == "min" else np.maximum
        if ".relu" in mods:  # min/max.relu.s32: negative results become 0
            return d.alu1(ins, pc, ty, [ty, ty], lambda a, b: np.maximum(fn(a, b), ty.dt(0)))
        return d.alu1(ins, pc, ty, [ty, ty], fn)
    raise SimError(ins.span, f"'{ins.name}' unsupported")


@handles("add", "addc")
def op_add(d: Decoder, ins: Instr, pc: int) -> Op:
    return _binary(d, ins, pc, "add")


@handles("sub", "subc")
def op_sub(d: Decoder, ins: Instr, pc: int) -> Op:
    return _binary(d, ins, pc, "sub")


@handles("min")
def op_min(d: Decoder, ins: Instr, pc: int) -> Op:
    return _binary(d, ins, pc, "min")


@handles("max")
def op_max(d: Decoder, ins: Instr, pc: int) -> Op:
    return _binary(d, ins, pc, "max")


def _carry(
    d: Decoder,
    ins: Instr,
    pc: int,
    ty: Ty,
    sub: bool,
    first: Reader | None = None,
    second: int = 2,
) -> Op:
    """Add/subtract with carry-in (``addc``/``subc``/``madc``) and carry-out
    (``.cc``): ``first`` reads the first addend (operand 1 by default, the product
    half for ``mad``), ``second`` is the operand index of the other one.

    One adder serves both directions, as in the hardware (SASS ``IADD3``/``IADD3.X``
    with a negated operand): ``sub`` computes ``a + ~b + cin`` where the carry-in is
    1 for ``sub.cc`` and ``CC.CF`` for ``subc``, so the flag a subtraction leaves is
    the carry of that sum, i.e. *not* borrow (``1 - 2`` leaves ``CF = 0``), and
    ``subc`` subtracts one more exactly when the flag is 0.  ``add``/``mad`` compute
    ``a + b + cin`` with carry-in 0 or ``CC.CF``.  The flag is the bit above the
    type's width of the exact sum."""
    fname = d.prog.owner[pc].name
    cc = f"{fname}::{CARRY_FLAG}"
    cin = ins.opcode in ("addc", "subc", "madc")
    cout = ".cc" in ins.mods
    w = d.wr(ins.operands[0], ty, ins)
    a_r = first if first is not None else d.rd(ins.operands[1], TYPES[f".u{ty.size * 8}"], ins)
    b_r = d.rd(ins.operands[second], TYPES[f".u{ty.size * 8}"], ins)
    ut = ty.ut
    fixed_in = ut(1 if sub else 0)

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a = np.asarray(a_r(m, s)).astype(ut)
        b = np.asarray(b_r(m, s)).astype(ut)
        if sub:
            b = ~b
        c = m.R[cc][s].astype(ut) if cin else fixed_in
        r1 = a + b
        r = r1 + c
        carry = (r1 < a) | (r < r1)
        if cout:
            m.store_reg(cc, s, t, np.broadcast_to(carry, np.shape(r)), pc)
        if w is not None:
            w(m, s, t, r.astype(ut).view(ty.dt), pc)

    return Op("alu", ins, run)


def _packed16(d: Decoder, ins: Instr, pc: int, name: str, ty: Ty) -> Op:
    et = TYPES[".s16"] if ty.kind == "s2" else TYPES[".u16"]
    table: dict[str, Callable[..., Any]] = {
        "add": lambda a, b: a + b,
        "sub": lambda a, b: a - b,
        "min": np.minimum,
        "max": np.maximum,
    }
    fn = table[name]
    relu = ".relu" in ins.mods

    def f(a: Any, b: Any) -> Any:
        a = np.asarray(a, dtype=np.uint32)
        b = np.asarray(b, dtype=np.uint32)
        out = np.zeros(np.broadcast(a, b).shape, dtype=np.uint32)
        for k in (0, 16):
            x = (a >> np.uint32(k)).astype(np.uint16).view(et.dt)
            y = (b >> np.uint32(k)).astype(np.uint16).view(et.dt)
            r = fn(x, y)
            if relu:
                r = np.maximum(r, et.dt(0))
            out |= r.astype(et.dt).view(np.uint16).astype(np.uint32) << np.uint32(k)
        return out

    return d.alu1(ins, pc, ty, [ty, ty], f)


@handles("mul")
def op_mul(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    mods = set(ins.mods)
    if ty.kind in ("f", "h", "bf", "h2", "bf2"):
        return float_binary(d, ins, pc, "mul", ty, mods)
    mode = "hi" if ".hi" in mods else "wide" if ".wide" in mods else "lo"
    return _mul(d, ins, pc, ty, mode, None)


@handles("mad", "madc")
def op_mad(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    mods = set(ins.mods)
    if ty.kind in ("f", "h", "bf", "h2", "bf2"):
        return op_fma(d, ins, pc)
    if ".cc" in mods or ins.opcode == "madc":
        return _mad_carry(d, ins, pc, ty)
    mode = "hi" if ".hi" in mods else "wide" if ".wide" in mods else "lo"
    return _mul(d, ins, pc, ty, mode, 3)


def _mad_carry(d: Decoder, ins: Instr, pc: int, ty: Ty) -> Op:
    """``mad{c}.{hi,lo}{.cc}``: ``d = half(a * b) + c (+ CC.CF)``; the carry-out is
    that of the unsigned addition of the selected product half and ``c``."""
    if ".wide" in ins.mods:
        raise SimError(ins.span, f"'{ins.name}': .wide is not allowed with a carry")
    hi = ".hi" in ins.mods
    bits = ty.size * 8
    signed = ty.kind == "s"
    ut = ty.ut
    pa = d.rd(ins.operands[1], ty, ins)
    pb = d.rd(ins.operands[2], ty, ins)

    def product(m: Any, s: Any) -> Any:
        a = np.asarray(pa(m, s))
        b = np.asarray(pb(m, s))
        if not hi:
            return (a.astype(ut) * b.astype(ut)).astype(ut)
        if bits == 64:
            return np.asarray(mulhi64(a, b, signed)).astype(ut)
        wide = signed_of(ty.size * 2) if signed else unsigned_of(ty.size * 2)
        p = a.astype(wide) * b.astype(wide)
        return (p >> wide(bits)).astype(ut)

    return _carry(d, ins, pc, ty, sub=False, first=product, second=3)


def _mul(d: Decoder, ins: Instr, pc: int, ty: Ty, mode: str, addend: int | None) -> Op:
    bits = ty.size * 8
    signed = ty.kind == "s"
    out_ty = ty
    if mode == "wide":
        out_ty = TYPES[f".{'s' if signed else 'u'}{bits * 2}"]
    sat = ".sat" in ins.mods

    def f(a: Any, b: Any, *c: Any) -> Any:
        if mode == "lo":
            r = a * b
        elif mode == "wide":
            r = (
                a.astype(out_ty.dt) * b.astype(out_ty.dt)
                if np.ndim(a) or np.ndim(b)
                else (np.asarray(a).astype(out_ty.dt) * np.asarray(b).astype(out_ty.dt))
            )
        elif bits < 64:
            wide = signed_of(ty.size * 2) if signed else unsigned_of(ty.size * 2)
            p = np.asarray(a).astype(wide) * np.asarray(b).astype(wide)
            r = (p >> wide(bits)).astype(ty.dt)
        else:
            r = mulhi64(np.asarray(a), np.asarray(b), signed)
        if c:
            if sat and mode == "hi" and signed and bits == 32:
                return np.clip(np.asarray(r).astype(np.int64) + c[0], -(2**31), 2**31 - 1).astype(
                    np.int32
                )
            r = r + np.asarray(c[0]).astype(out_ty.dt)
        return r

    ins_ty = [ty, ty] + ([out_ty] if addend else [])
    return d.alu1(ins, pc, out_ty, ins_ty, f)


@handles("mul24")
def op_mul24(d: Decoder, ins: Instr, pc: int) -> Op:
    return _mul24(d, ins, pc, False)


@handles("mad24")
def op_mad24(d: Decoder, ins: Instr, pc: int) -> Op:
    return _mul24(d, ins, pc, True)


def _mul24(d: Decoder, ins: Instr, pc: int, add: bool) -> Op:
    """``mul24``/``mad24``: the 48-bit product of the low 24 bits of each source (sign-
    extended for .s32), bits 31..0 (``.lo``) or 47..16 (``.hi``); ``mad24.hi.sat.s32``
    clamps the sum with ``c`` to the s32 range."""
    ty = d.ty(ins)
    hi = ".hi" in ins.mods
    sat = ".sat" in ins.mods

    def f(a: Any, b: Any, *c: Any) -> Any:
        a = np.asarray(a).astype(np.int64)
        b = np.asarray(b).astype(np.int64)
        if ty.kind == "s":
            a = ((a & 0xFFFFFF) ^ 0x800000) - 0x800000
            b = ((b & 0xFFFFFF) ^ 0x800000) - 0x800000
        else:
            a &= 0xFFFFFF
            b &= 0xFFFFFF
        p = a * b
        r = (p >> 16) if hi else p
        if c and sat:
            s = ((r & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000  # the s32 half of the product
            r = np.clip(s + np.asarray(c[0]).astype(np.int64), -(2**31), 2**31 - 1)
            return (r & 0xFFFFFFFF).astype(np.uint32).view(ty.dt)
        r = (r & 0xFFFFFFFF).astype(np.uint32)
        if c:
            r = r + np.asarray(c[0]).astype(np.uint32)
        return r.view(ty.dt)

    return d.alu1(ins, pc, ty, [ty] * (3 if add else 2), f)


@handles("sad")
def op_sad(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)

    def f(a: Any, b: Any, c: Any) -> Any:
        d = np.where(a > b, a - b, b - a)
        return d.astype(ty.ut).view(ty.dt) + c

    return d.alu1(ins, pc, ty, [ty] * 3, f)


@handles("div")
def op_div(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    if ty.kind == "f":
        mode = d.rounding(ins)
        if mode != "rn" and ".approx" not in ins.mods and ".full" not in ins.mods:
            return float_op(
                d,
                ins,
                pc,
                ty,
                2,
                lambda a, b, fmt: fl.div_directed(a, b, fmt, mode),
                ".ftz" in ins.mods,
                False,
                op="div",
                nan_order=(0, 1),
            )
        exact = ".approx" not in ins.mods and ".full" not in ins.mods
        return float_op(
            d,
            ins,
            pc,
            ty,
            2,
            lambda a, b, fmt: a / b,
            ".ftz" in ins.mods,
            False,
            op="div" if exact else "",
            nan_order=(0, 1),
        )
    return d.alu1(ins, pc, ty, [ty, ty], lambda a, b: _idiv(a, b, ty)[0])


@handles("rem")
def op_rem(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    return d.alu1(ins, pc, ty, [ty, ty], lambda a, b: _idiv(a, b, ty)[1])


@handles("abs")
def op_abs(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    if ty.kind in ("f", "h", "bf", "h2", "bf2"):
        return sign_op(d, ins, pc, ty, "abs")
    return d.alu1(ins, pc, ty, [ty], lambda a: np.where(a < 0, -a, a).astype(ty.dt))


@handles("neg")
def op_neg(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    if ty.kind in ("f", "h", "bf", "h2", "bf2"):
        return sign_op(d, ins, pc, ty, "neg")
    return d.alu1(ins, pc, ty, [ty], lambda a: (-np.asarray(a)).astype(ty.dt))


@handles("dp4a")
def op_dp4a(d: Decoder, ins: Instr, pc: int) -> Op:
    return _dp(d, ins, pc, 4)


@handles("dp2a")
def op_dp2a(d: Decoder, ins: Instr, pc: int) -> Op:
    return _dp(d, ins, pc, 2)


def _dp(d: Decoder, ins: Instr, pc: int, n: int) -> Op:
    ts = types_of(ins.mods)
    ta, tb = ts[0], ts[1]
    hi = ".hi" in ins.mods
    out = TYPES[".s32"] if "s" in (ta.kind, tb.kind) else TYPES[".u32"]
    b32 = TYPES[".b32"]

    def f(a: Any, b: Any, c: Any) -> Any:
        a = np.asarray(a).astype(np.int64)
        b = np.asarray(b).astype(np.int64)
        acc = np.asarray(c).astype(np.int64)
        for i in range(n):
            if n == 4:
                x = (a >> (8 * i)) & 0xFF
                if ta.kind == "s":
                    x = (x ^ 0x80) - 0x80
                y = (b >> (8 * i)) & 0xFF
                if tb.kind == "s":
                    y = (y ^ 0x80) - 0x80
            else:
                x = (a >> (16 * i)) & 0xFFFF
                if ta.kind == "s":
                    x = (x ^ 0x8000) - 0x8000
                k = i + (2 if hi else 0)
                y = (b >> (8 * k)) & 0xFF
                if tb.kind == "s":
                    y = (y ^ 0x80) - 0x80
            acc = acc + x * y
        return (acc & 0xFFFFFFFF).astype(np.uint32)

    return d.alu1(ins, pc, out, [b32, b32, out], f)


def _idiv(a: Any, b: Any, ty: Ty) -> tuple[Any, Any]:
    """Truncating division and remainder with wrap; a zero divisor gives all ones for
    both (the ISA leaves it unspecified; that is what an H100 returns)."""
    a = np.asarray(a)
    b = np.asarray(b)
    a, b = np.broadcast_arrays(a, b)
    ut = ty.ut
    zero = b == 0
    bs = np.where(zero, ty.dt(1), b).astype(ty.dt)
    if ty.kind == "s":
        ua = np.where(a < 0, (-a.astype(ut)).astype(ut), a.astype(ut)) if a.size else a.astype(ut)
        ub = np.where(bs < 0, (-bs.astype(ut)).astype(ut), bs.astype(ut))
        uq = ua // ub
        ur = ua % ub
        neg_q = (a < 0) != (bs < 0)
        q = np.where(neg_q, (-uq).astype(ut), uq).astype(ut).view(ty.dt)
        r = np.where(a < 0, (-ur).astype(ut), ur).astype(ut).view(ty.dt)
    else:
        q = (a // bs).astype(ty.dt)
        r = (a % bs).astype(ty.dt)
    q = np.where(zero, np.array(-1).astype(ut).view(ty.dt)[()], q).astype(ty.dt)
    r = np.where(zero, np.array(-1).astype(ut).view(ty.dt)[()], r).astype(ty.dt)
    return q, r


def mulhi64(a: Any, b: Any, signed: bool) -> Any:
    ua = a.astype(np.uint64)
    ub = b.astype(np.uint64)
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    al, ah = ua & m32, ua >> s32
    bl, bh = ub & m32, ub >> s32
    ll = al * bl
    lh = al * bh
    hl = ah * bl
    hh = ah * bh
    mid = (ll >> s32) + (lh & m32) + (hl & m32)
    hi = hh + (lh >> s32) + (hl >> s32) + (mid >> s32)
    if signed:
        hi = hi - np.where(a < 0, ub, np.uint64(0)) - np.where(b < 0, ua, np.uint64(0))
        return hi.view(np.int64)
    return hi
