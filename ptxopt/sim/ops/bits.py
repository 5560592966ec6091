"""Logic, shifts and bit manipulation: ``and``/``or``/``xor``/``not``/``cnot``, ``lop3``,
``shl``/``shr``, the funnel shift ``shf``, ``popc``, ``clz``, ``bfind``, ``brev``,
``bfe``/``bfi``, ``bmsk``, ``szext``, ``fns`` and the byte permute ``prmt`` (PTX ISA 9.0,
sections 9.7.1 and 9.7.8)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ptxopt.ptx.ast import Imm, Instr, Pair
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.memory import UNSIGNED
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.values import (
    TYPES,
)


@handles("and")
def op_and(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    return d.alu1(ins, pc, ty, [ty, ty], lambda a, b: a & b)


@handles("or")
def op_or(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    return d.alu1(ins, pc, ty, [ty, ty], lambda a, b: a | b)


@handles("xor")
def op_xor(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    return d.alu1(ins, pc, ty, [ty, ty], lambda a, b: a ^ b)


@handles("not")
def op_not(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    return d.alu1(ins, pc, ty, [ty], lambda a: ~np.asarray(a))


@handles("cnot")
def op_cnot(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    return d.alu1(ins, pc, ty, [ty], lambda a: (np.asarray(a) == 0).astype(ty.dt))


@handles("shl")
def op_shl(d: Decoder, ins: Instr, pc: int) -> Op:
    return _shift(d, ins, pc, "l")


@handles("shr")
def op_shr(d: Decoder, ins: Instr, pc: int) -> Op:
    return _shift(d, ins, pc, "r")


def _shift(d: Decoder, ins: Instr, pc: int, direction: str) -> Op:
    ty = d.ty(ins)
    bits = ty.size * 8
    u32 = TYPES[".u32"]

    def f(a: Any, b: Any) -> Any:
        a = np.asarray(a)
        amt = np.minimum(np.asarray(b).astype(np.int64), bits)
        big = amt >= bits
        sa = np.where(big, 0, amt).astype(ty.dt)
        if direction == "l":
            r = a << sa
            return np.where(big, ty.dt(0), r).astype(ty.dt)
        r = a >> sa
        if ty.kind == "s":
            return np.where(big, np.where(a < 0, ty.dt(-1), ty.dt(0)), r).astype(ty.dt)
        return np.where(big, ty.dt(0), r).astype(ty.dt)

    return d.alu1(ins, pc, ty, [ty, u32], f)


@handles("lop3")
def op_lop3(d: Decoder, ins: Instr, pc: int) -> Op:
    """``lop3.b32 d, a, b, c, immLut`` (bit i of ``d`` is bit ``4a+2b+c`` of the LUT)
    and ``lop3.{and,or,xor}.b32 d|p, a, b, c, immLut, q``: also ``p = (d != 0) op q``."""
    ty = TYPES[".b32"]
    ops = ins.operands
    lut_op = ops[4] if len(ops) > 4 else None
    if not isinstance(lut_op, Imm):
        raise SimError(ins.span, "lop3 needs an immediate LUT")
    lut = int(lut_op.value)
    boolop = next((m[1:] for m in ins.mods if m in (".and", ".or", ".xor")), None)
    dst = ops[0]
    if boolop is not None:
        if not isinstance(dst, Pair) or len(ops) != 6:
            raise SimError(ins.span, f"'{ins.name}': expected d|p, a, b, c, immLut, q")
        w, wp = d.wr(dst.first, ty, ins), d.wr(dst.second, TYPES[".pred"], ins)
        rq: Any = d.rd(ops[5], TYPES[".pred"], ins)
        combine = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[boolop]
    else:
        w, wp, rq = d.wr(dst, ty, ins), None, None
    rs = [d.rd(o, ty, ins) for o in ops[1:4]]

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a, b, c = (np.asarray(r(m, s)) for r in rs)
        out = np.zeros(np.broadcast(a, b, c).shape, dtype=np.uint32)
        for i in range(8):
            if lut >> i & 1:
                x = a if i & 4 else ~a
                y = b if i & 2 else ~b
                z = c if i & 1 else ~c
                out |= x & y & z
        if w is not None:
            w(m, s, t, out, pc)
        if wp is not None and rq is not None:
            wp(m, s, t, combine(out != 0, rq(m, s)), pc)

    return Op("alu", ins, run)


@handles("popc")
def op_popc(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    return d.alu1(ins, pc, TYPES[".u32"], [ty], lambda a: _popcount(a, ty.size))


@handles("clz")
def op_clz(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    bits = ty.size * 8

    def f(a: Any) -> Any:
        return (bits - _bitlen(np.asarray(a).astype(np.uint64))).astype(np.uint32)

    return d.alu1(ins, pc, TYPES[".u32"], [ty], f)


@handles("bfind")
def op_bfind(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    bits = ty.size * 8
    shiftamt = ".shiftamt" in ins.mods

    def f(a: Any) -> Any:
        a = np.asarray(a)
        if ty.kind == "s":
            a = np.where(a < 0, ~a, a)
        u = a.astype(ty.ut).astype(np.uint64)
        pos = _bitlen(u) - 1
        r = np.where(u == 0, -1, (bits - 1 - pos) if shiftamt else pos)
        return (r & 0xFFFFFFFF).astype(np.uint32)

    return d.alu1(ins, pc, TYPES[".u32"], [ty], f)


@handles("brev")
def op_brev(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    bits = ty.size * 8

    def f(a: Any) -> Any:
        a = np.asarray(a).astype(np.uint64)
        r = np.zeros(a.shape, dtype=np.uint64)
        for i in range(bits):
            r |= ((a >> np.uint64(i)) & np.uint64(1)) << np.uint64(bits - 1 - i)
        return r.astype(ty.ut)

    return d.alu1(ins, pc, ty, [ty], f)


@handles("bfe")
def op_bfe(d: Decoder, ins: Instr, pc: int) -> Op:
    """``bfe.type d, a, b, c``: ``len = c`` bits of ``a`` from ``pos = b``; bit i of
    ``d`` is ``a[pos + i]`` for ``i < len`` and ``pos + i <= msb``, else the sign bit
    ``a[min(pos + len - 1, msb)]`` (0 for unsigned types or ``len == 0``).  The ISA
    restricts ``pos`` and ``len`` to 0..255; beyond that the 32-bit forms take them
    mod 256 and the 64-bit forms whole (as an H100 does)."""
    ty = d.ty(ins)
    bits = ty.size * 8
    field_range = 0xFF if bits == 32 else 0xFFFFFFFF
    u32 = TYPES[".u32"]
    one = np.uint64(1)

    def f(a: Any, b: Any, c: Any) -> Any:
        a = np.asarray(a).astype(ty.ut).astype(np.uint64)
        pos = np.asarray(b).astype(np.int64) & field_range
        ln = np.asarray(c).astype(np.int64) & field_range
        a, pos, ln = np.broadcast_arrays(a, pos, ln)
        field_ = np.where(pos >= bits, np.uint64(0), a >> np.minimum(pos, 63).astype(np.uint64))
        k = np.minimum(ln, np.maximum(bits - pos, 0))  # bits taken from a
        low = np.where(k >= 64, np.uint64(2**64 - 1), (one << k.astype(np.uint64)) - one)
        r = field_ & low
        if ty.kind == "s":
            sbit_pos = np.minimum(pos + ln - 1, bits - 1).astype(np.uint64)
            sbit = (ln != 0) & (((a >> sbit_pos) & one) == one)
            r = np.where(sbit, r | ~low, r)
        return r.astype(ty.ut).view(ty.dt)

    return d.alu1(ins, pc, ty, [ty, u32, u32], f)


@handles("bfi")
def op_bfi(d: Decoder, ins: Instr, pc: int) -> Op:
    """``bfi.type f, a, b, c, d``: ``b`` with its ``len = d`` bits from ``pos = c``
    replaced by the low bits of ``a`` (bits past the msb are dropped); ``pos``/``len``
    beyond 255 as for ``bfe``."""
    ty = d.ty(ins)
    bits = ty.size * 8
    u32 = TYPES[".u32"]
    field_range = 0xFF if bits == 32 else 0xFFFFFFFF

    def f(a: Any, b: Any, c: Any, d: Any) -> Any:
        a = np.asarray(a).astype(np.uint64)
        b = np.asarray(b).astype(np.uint64)
        pos = np.asarray(c).astype(np.int64) & field_range
        ln = np.asarray(d).astype(np.int64) & field_range
        a, b, pos, ln = np.broadcast_arrays(a, b, pos, ln)
        ln = np.minimum(ln, bits)
        mask = np.where(
            ln >= 64,
            np.uint64(2**64 - 1),
            (np.uint64(1) << ln.astype(np.uint64)) - np.uint64(1),
        )
        sh = np.minimum(pos, 63).astype(np.uint64)
        m2 = np.where(pos >= bits, np.uint64(0), mask << sh)
        r = (b & ~m2) | ((a << sh) & m2)
        return r.astype(ty.ut)

    return d.alu1(ins, pc, ty, [ty, ty, u32, u32], f)


@handles("prmt")
def op_prmt(d: Decoder, ins: Instr, pc: int) -> Op:
    b32 = TYPES[".b32"]
    mode = next((m for m in ins.mods if m in (".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16")), "")

    def f(a: Any, b: Any, c: Any) -> Any:
        a, b, c = np.broadcast_arrays(
            np.asarray(a).astype(np.uint64),
            np.asarray(b).astype(np.uint64),
            np.asarray(c).astype(np.uint64),
        )
        x = a | (b << np.uint64(32))  # bytes 0..7
        out = np.zeros(a.shape, dtype=np.uint64)
        for i in range(4):
            if mode == "":
                sel = (c >> np.uint64(4 * i)) & np.uint64(0xF)
                idx = sel & np.uint64(7)
                byte = (x >> (idx * np.uint64(8))) & np.uint64(0xFF)
                msb = (sel & np.uint64(8)) != 0
                sign = np.where((byte & np.uint64(0x80)) != 0, np.uint64(0xFF), np.uint64(0))
                byte = np.where(msb, sign, byte)
            else:
                s = c & np.uint64(3)
                table = _PRMT_MODES[mode]
                idx = np.zeros(a.shape, dtype=np.uint64)
                for k in range(4):
                    idx = np.where(s == k, np.uint64(table[k][i]), idx)
                byte = (x >> (idx * np.uint64(8))) & np.uint64(0xFF)
            out |= byte << np.uint64(8 * i)
        return out.astype(np.uint32)

    return d.alu1(ins, pc, b32, [b32, b32, b32], f)


@handles("shf")
def op_shf(d: Decoder, ins: Instr, pc: int) -> Op:
    b32 = TYPES[".b32"]
    left = ".l" in ins.mods
    wrap = ".wrap" in ins.mods

    def f(a: Any, b: Any, c: Any) -> Any:
        a, b, c = np.broadcast_arrays(
            np.asarray(a).astype(np.uint64),
            np.asarray(b).astype(np.uint64),
            np.asarray(c).astype(np.uint64),
        )
        n = c & np.uint64(31) if wrap else np.minimum(c, np.uint64(32))
        x = (b << np.uint64(32)) | a
        if left:
            return ((x << n) >> np.uint64(32)).astype(np.uint32)
        return (x >> n).astype(np.uint32)

    return d.alu1(ins, pc, b32, [b32, b32, TYPES[".u32"]], f)


_PRMT_MODES = {
    ".f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    ".b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    ".rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    ".ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    ".ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    ".rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}


def _popcount(a: Any, size: int) -> Any:
    a = np.asarray(a).astype(UNSIGNED[size])
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(a).astype(np.uint32)
    v = a.astype(np.uint64)  # pragma: no cover
    c = np.zeros(v.shape, dtype=np.uint32)
    for i in range(size * 8):
        c += ((v >> np.uint64(i)) & np.uint64(1)).astype(np.uint32)
    return c


def _bitlen(u: Any) -> Any:
    """Number of significant bits of uint64 values (0 for 0)."""
    u = np.asarray(u, dtype=np.uint64)
    n = np.zeros(u.shape, dtype=np.int64)
    x = u.copy()
    for sh in (32, 16, 8, 4, 2, 1):
        big = x >= (np.uint64(1) << np.uint64(sh))
        n = n + np.where(big, sh, 0)
        x = np.where(big, x >> np.uint64(sh), x)
    return n + (x > 0)


def _u64(x: Any) -> Any:
    return np.asarray(x).astype(np.uint32).astype(np.int64)


@handles("bmsk")
def op_bmsk(d: Decoder, ins: Instr, pc: int) -> Op:
    """``bmsk.{clamp,wrap}.b32 d, a, b``: ``b`` ones starting at bit ``a``; positions
    and widths are taken mod 32, ``.clamp`` makes ``a >= 32`` an empty mask and a
    width ``b >= 32`` (or one reaching past bit 31) a mask up to bit 31; a width of
    0 mod 32 without those overflows is empty."""
    clamp = ".clamp" in ins.mods
    b32, u32 = TYPES[".b32"], TYPES[".u32"]
    ones = np.int64(0xFFFFFFFF)

    def f(a: Any, b: Any) -> Any:
        a, b = np.broadcast_arrays(_u64(a), _u64(b))
        a1, b1 = a & 31, b & 31
        total = a1 + b1
        mask0 = (ones << a1) & ones
        overflow = total >= 32
        if clamp:
            mask0 = np.where(a >= 32, 0, mask0)
            overflow = overflow | (a >= 32) | (b >= 32)
        mask1 = np.where(total >= 32, 0, (ones << np.minimum(total, 32)) & ones)
        mask1 = np.where(overflow, 0, np.where(b1 == 0, ones, mask1))
        return (mask0 & ~mask1 & ones).astype(np.uint32)

    return d.alu1(ins, pc, b32, [u32, u32], f)


@handles("szext")
def op_szext(d: Decoder, ins: Instr, pc: int) -> Op:
    """``szext.{clamp,wrap}.{u32,s32} d, a, b``: sign- or zero-extend the low ``N = b``
    bits of ``a``; ``N`` is taken mod 32 (``.wrap``) or ``N >= 32`` keeps ``a``
    (``.clamp``); ``N = 0`` gives 0."""
    ty = d.ty(ins)
    clamp = ".clamp" in ins.mods
    signed = ty.kind == "s"
    u32 = TYPES[".u32"]
    ones = np.int64(0xFFFFFFFF)

    def f(a: Any, b: Any) -> Any:
        a, b = np.broadcast_arrays(_u64(a), _u64(b))
        b1 = b & 31
        too_large = (b >= 32) if clamp else np.zeros(b.shape, dtype=bool)
        mask = np.where(too_large, 0, (ones << b1) & ones)
        if signed:
            sign = ((a >> ((b1 - 1) & 31)) & 1) == 1
            sign &= (b1 != 0) & ~too_large
        else:
            sign = np.zeros(a.shape, dtype=bool)
        r = (a & ~mask & ones) | np.where(sign, mask, 0)
        return r.astype(np.uint32).view(ty.dt)

    return d.alu1(ins, pc, ty, [ty, u32], f)


@handles("fns")
def op_fns(d: Decoder, ins: Instr, pc: int) -> Op:
    """``fns.b32 d, mask, base, offset``: the position of the ``|offset|``-th set bit of
    ``mask`` counting from bit ``base`` upwards (offset > 0) or downwards (offset < 0),
    ``base`` itself included; offset 0 asks whether bit ``base`` is set.  Not found:
    0xffffffff.  (``base > 31`` is undefined; it finds nothing here.)"""
    b32, u32, s32 = TYPES[".b32"], TYPES[".u32"], TYPES[".s32"]
    pos = np.arange(32, dtype=np.int64)

    def f(mask: Any, base: Any, offset: Any) -> Any:
        mask, base, offset = np.broadcast_arrays(
            _u64(mask), _u64(base), np.asarray(offset).astype(np.int64)
        )
        bits = ((mask[..., None] >> pos) & 1) == 1
        up = offset > 0
        within = np.where(up[..., None], pos >= base[..., None], pos <= base[..., None])
        hit = bits & within
        # rank of each set bit counted from base in the search direction
        rank_up = np.cumsum(hit, axis=-1)
        rank_down = np.cumsum(hit[..., ::-1], axis=-1)[..., ::-1]
        rank = np.where(up[..., None], rank_up, rank_down)
        want = np.abs(offset)[..., None]
        found = hit & (rank == want)
        first = np.where(found.any(-1), np.argmax(found, axis=-1), -1)
        at_base = (base < 32) & (((mask >> np.minimum(base, 31)) & 1) == 1)
        r = np.where(offset == 0, np.where(at_base, base, -1), first)
        return (r & 0xFFFFFFFF).astype(np.uint32)

    return d.alu1(ins, pc, b32, [b32, u32, s32], f)
