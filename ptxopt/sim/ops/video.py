"""Video instructions (PTX ISA 9.0, section 9.7.18): the scalar ``vadd``, ``vsub``,
``vabsdiff``, ``vmin``, ``vmax``, ``vshl``, ``vshr``, ``vmad``, ``vset`` and the SIMD
``vadd2``/``vsub2``/``vavrg2``/``vabsdiff2``/``vmin2``/``vmax2``/``vset2`` and their
four-way ``...4`` forms.

Scalar forms select a byte (``.b0``-``.b3``), a half-word (``.h0``/``.h1``) or the
whole word of each source, sign- or zero-extend it by the source type, compute
exactly (Python-integer semantics in int64), optionally clamp to the range of the
destination *field* (the selected byte/half-word of ``d``, else the 32-bit type),
then either apply the secondary operation (``.add``/``.min``/``.max`` with ``c``) or
merge the low bits into the selected field of ``c`` (``d.b1``: ``d = c`` with byte 1
replaced).  The secondary operation is not saturated; the result is truncated to 32
bits.

SIMD forms pick their lanes from the 8 bytes (4 half-words) of ``{b, a}`` with the
source selectors (``.b3210``/``.b7654``, ``.h10``/``.h32`` by default), operate per
lane, clamp per lane with ``.sat`` (to s8/u8 or s16/u16 by ``dtype``) and either merge
the lanes named by ``d``'s mask into ``c`` or, with ``.add``, add the (sign-extended)
masked lanes to ``c``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr, Operand, Sel
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.values import TYPES, Reader

I64 = np.int64
_U32 = TYPES[".u32"]
_B32 = TYPES[".b32"]

_SCALAR_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "vadd": lambda a, b: a + b,
    "vsub": lambda a, b: a - b,
    "vabsdiff": lambda a, b: np.abs(a - b),
    "vmin": np.minimum,
    "vmax": np.maximum,
}
_SIMD_OPS: dict[str, Callable[[Any, Any], Any]] = {
    **_SCALAR_OPS,
    # rounds half away from zero toward +inf: (a + b + 1) >> 1 when a + b >= 0
    "vavrg": lambda a, b: np.where(a + b >= 0, (a + b + 1) >> 1, (a + b) >> 1),
}
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    ".eq": np.equal,
    ".ne": np.not_equal,
    ".lt": np.less,
    ".le": np.less_equal,
    ".gt": np.greater,
    ".ge": np.greater_equal,
}


def _split(op: Operand, ins: Instr) -> tuple[Operand, str, bool]:
    """(register or immediate, selector, negated) of a video operand."""
    if isinstance(op, Sel):
        return op.reg, op.sel, op.neg
    return op, "", False


def _types(ins: Instr, n: int) -> list[bool]:
    """Signedness of the first ``n`` type modifiers (``.s32``: True)."""
    ts = [m for m in ins.mods if m in (".u32", ".s32")]
    if len(ts) < n:
        raise SimError(ins.span, f"'{ins.name}': expected {n} type modifiers")
    return [t == ".s32" for t in ts[:n]]


def _part(x: Any, sel: str, signed: bool) -> Any:
    """Byte / half-word / word ``sel`` of 32-bit ``x`` (int64 holding the bits),
    sign- or zero-extended."""
    if sel.startswith("b"):
        v, w = (x >> (8 * int(sel[1]))) & 0xFF, 8
    elif sel.startswith("h"):
        v, w = (x >> (16 * int(sel[1]))) & 0xFFFF, 16
    else:
        v, w = x & 0xFFFFFFFF, 32
    if signed:
        v = v - ((v >> (w - 1)) << w)
    return v


def _field_range(sel: str, signed: bool) -> tuple[int, int]:
    w = 8 if sel.startswith("b") else 16 if sel.startswith("h") else 32
    if signed:
        return -(1 << (w - 1)), (1 << (w - 1)) - 1
    return 0, (1 << w) - 1


def _merge(tmp: Any, c: Any, dsel: str) -> Any:
    """Low bits of ``tmp`` into the ``dsel`` field of ``c`` (``dsel`` empty: ``tmp``)."""
    if not dsel:
        return tmp
    shift, width = (8 * int(dsel[1]), 8) if dsel[0] == "b" else (16 * int(dsel[1]), 16)
    mask = ((1 << width) - 1) << shift
    return ((tmp << shift) & mask) | (c & ~mask & 0xFFFFFFFF)


def _reader(d: Decoder, op: Operand, ins: Instr) -> Reader:
    """Reader of a source as int64 holding its 32 bits."""
    r = d.rd(op, _U32, ins)
    return lambda m, s: np.asarray(r(m, s)).astype(I64)


def _scalar(d: Decoder, ins: Instr, pc: int, compute: Callable[..., Any], nsrc: int) -> Op:
    """Shared frame of the scalar forms: ``compute(ta, tb[, c])`` gets the selected,
    extended sources and returns the value before saturation/secondary/merge."""
    ops = ins.operands
    dst, dsel, _ = _split(ops[0], ins)
    srcs = [_split(o, ins) for o in ops[1 : 1 + nsrc]]
    return _finish(d, ins, pc, dst, dsel, srcs, compute)


def _finish(
    d: Decoder,
    ins: Instr,
    pc: int,
    dst: Operand,
    dsel: str,
    srcs: list[tuple[Operand, str, bool]],
    compute: Callable[..., Any],
) -> Op:
    ops = ins.operands
    has_c = len(ops) > len(srcs) + 1
    secondary = next((m for m in ins.mods if m in (".add", ".min", ".max")), None)
    if dsel and secondary:
        raise SimError(ins.span, f"'{ins.name}': a destination selector excludes {secondary}")
    if (dsel or secondary) and not has_c:
        raise SimError(ins.span, f"'{ins.name}': expected a third source operand c")
    dsigned = _types(ins, 1)[0] if ins.opcode != "vset" else False
    csigned = dsigned or (ins.opcode == "vset" and _types(ins, 1)[0])
    sat = ".sat" in ins.mods
    lo, hi = _field_range(dsel, dsigned)
    readers = [(_reader(d, o, ins), sel) for o, sel, _ in srcs]
    rc = _reader(d, ops[len(srcs) + 1], ins) if has_c else None
    w = d.wr(dst, _B32, ins)

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        vals = [r(m, s) for r, _ in readers]
        tmp = compute(*vals)
        if sat:
            tmp = np.clip(tmp, lo, hi)
        c = rc(m, s) if rc is not None else I64(0)
        if secondary is not None:
            # c takes dtype's sign; vset has none and takes atype's (as an H100 does)
            cv = _part(c, "", csigned)
            tmp = tmp + cv if secondary == ".add" else _SCALAR_OPS["v" + secondary[1:]](tmp, cv)
        res = _merge(tmp & 0xFFFFFFFF, c, dsel)
        if w is not None:
            w(m, s, t, (np.asarray(res) & 0xFFFFFFFF).astype(np.uint32), pc)

    return Op("alu", ins, run)


@handles("vadd", "vsub", "vabsdiff", "vmin", "vmax")
def op_video_arith(d: Decoder, ins: Instr, pc: int) -> Op:
    _, asig, bsig = _types(ins, 3)
    fn = _SCALAR_OPS[ins.opcode]
    (_, asel, _), (_, bsel, _) = (_split(o, ins) for o in ins.operands[1:3])

    def compute(a: Any, b: Any) -> Any:
        return fn(_part(a, asel, asig), _part(b, bsel, bsig))

    return _scalar(d, ins, pc, compute, 2)


@handles("vshl", "vshr")
def op_video_shift(d: Decoder, ins: Instr, pc: int) -> Op:
    """``vshl/vshr.dtype.atype.u32{.sat}.{clamp,wrap}``: the shift amount (unsigned)
    is clamped to 32 or taken mod 32; ``vshr`` of a signed source is arithmetic."""
    _, asig = _types(ins, 2)
    wrap = ".wrap" in ins.mods
    left = ins.opcode == "vshl"
    (_, asel, _), (_, bsel, _) = (_split(o, ins) for o in ins.operands[1:3])

    def compute(a: Any, b: Any) -> Any:
        ta = _part(a, asel, asig)
        tb = _part(b, bsel, False)
        tb = tb & 31 if wrap else np.minimum(tb, 32)
        if left:  # up to 65 bits: exact in Python integers
            return np.asarray(ta, dtype=object) << np.asarray(tb, dtype=object)
        return ta >> tb

    return _scalar(d, ins, pc, compute, 2)


@handles("vset")
def op_vset(d: Decoder, ins: Instr, pc: int) -> Op:
    asig, bsig = _types(ins, 2)
    cmp = next((m for m in ins.mods if m in _COMPARE), None)
    if cmp is None:
        raise SimError(ins.span, f"'{ins.name}': missing comparison")
    fn = _COMPARE[cmp]
    (_, asel, _), (_, bsel, _) = (_split(o, ins) for o in ins.operands[1:3])

    def compute(a: Any, b: Any) -> Any:
        return fn(_part(a, asel, asig), _part(b, bsel, bsig)).astype(I64)

    return _scalar(d, ins, pc, compute, 2)


@handles("vmad")
def op_vmad(d: Decoder, ins: Instr, pc: int) -> Op:
    """``vmad.dtype.atype.btype{.po}{.sat}{.scale} d, {-}a, {-}b, {-}c``: the product of
    the selected sources, negated when exactly one of them is, plus ``c`` (negated
    with ``-c``) plus 1 with ``.po``, computed exactly, shifted right by 7 or 15
    (``.shr7``/``.shr15``), clamped with ``.sat`` to s32 or u32 by the signedness of
    the final result (signed if any source type is, or any operand is negated)."""
    _, asig, bsig = _types(ins, 3)
    ops = ins.operands
    if len(ops) != 4:
        raise SimError(ins.span, f"'{ins.name}': expected 4 operands")
    dst, dsel, _ = _split(ops[0], ins)
    (ra, asel, aneg), (rb, bsel, bneg), (rcop, csel, cneg) = (_split(o, ins) for o in ops[1:])
    if dsel or csel:
        raise SimError(ins.span, f"'{ins.name}': d and c take no selector")
    po = ".po" in ins.mods
    sat = ".sat" in ins.mods
    shift = 7 if ".shr7" in ins.mods else 15 if ".shr15" in ins.mods else 0
    pneg = aneg != bneg
    signed = asig or bsig or pneg or cneg
    lo, hi = (-(2**31), 2**31 - 1) if signed else (0, 2**32 - 1)
    read_a, read_b, read_c = (_reader(d, o, ins) for o in (ra, rb, rcop))
    w = d.wr(dst, _B32, ins)

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        # the product needs up to 64 bits plus sign: exact in Python integers
        pa = np.asarray(_part(read_a(m, s), asel, asig), dtype=object)
        p = pa * np.asarray(_part(read_b(m, s), bsel, bsig), dtype=object)
        c = np.asarray(_part(read_c(m, s), "", signed), dtype=object)
        if pneg:
            p = -p
        if cneg:
            c = -c
        r = (p + c + (1 if po else 0)) >> shift
        if sat:
            r = np.clip(r, lo, hi)
        if w is not None:
            w(m, s, t, (np.asarray(r, dtype=object) & 0xFFFFFFFF).astype(np.uint32), pc)

    return Op("alu", ins, run)


# -- SIMD forms ----------------------------------------------------------------------


def _lanes_of(sel: str, default: str, n: int) -> list[int]:
    """Source lane indices (into the 8 bytes / 4 half-words of ``{b, a}``) of result
    lanes 0..n-1: the selector's digits name lanes from the highest result lane down."""
    digits = (sel or default)[1:]
    if len(digits) != n:
        raise ValueError(sel)
    return [int(ch) for ch in reversed(digits)]


def _mask_of(sel: str, n: int) -> list[bool]:
    """Result lanes a SIMD destination mask (``.h10``, ``.b3210`` ...) writes."""
    if not sel:
        return [True] * n
    return [str(i) in sel[1:] for i in range(n)]


@handles(
    "vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2", "vset2",
    "vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4", "vset4",
)  # fmt: skip
def op_video_simd(d: Decoder, ins: Instr, pc: int) -> Op:
    n = int(ins.opcode[-1])
    width = 32 // n
    base = ins.opcode[:-1]
    is_set = base == "vset"
    sig = _types(ins, 2 if is_set else 3)
    dsig = False if is_set else sig[0]
    asig, bsig = sig[-2], sig[-1]
    ops = ins.operands
    if len(ops) != 4:
        raise SimError(ins.span, f"'{ins.name}': expected 4 operands")
    dst, dsel, _ = _split(ops[0], ins)
    (ra, asel, _), (rb, bsel, _) = (_split(o, ins) for o in ops[1:3])
    unit = "h" if n == 2 else "b"
    for sel in (dsel, asel, bsel):
        if sel and sel[0] != unit:
            raise SimError(ins.span, f"'{ins.name}': selector .{sel} does not fit {n} lanes")
    try:
        alanes = _lanes_of(asel, "h10" if n == 2 else "b3210", n)
        blanes = _lanes_of(bsel, "h32" if n == 2 else "b7654", n)
    except ValueError:
        raise SimError(ins.span, f"'{ins.name}': a source selector needs {n} digits") from None
    mask = _mask_of(dsel, n)
    fn: Callable[[Any, Any], Any]
    if is_set:
        cmp = next((m for m in ins.mods if m in _COMPARE), None)
        if cmp is None:
            raise SimError(ins.span, f"'{ins.name}': missing comparison")
        cfn = _COMPARE[cmp]
        fn = lambda x, y: cfn(x, y).astype(I64)  # noqa: E731
    else:
        fn = _SIMD_OPS[base]
    accumulate = ".add" in ins.mods
    sat = ".sat" in ins.mods
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if dsig else (0, (1 << width) - 1)
    read_a, read_b, read_c = (_reader(d, o, ins) for o in (ra, rb, ops[3]))
    w = d.wr(dst, _B32, ins)
    field = (1 << width) - 1

    def lane(v: Any, k: int, signed: bool) -> Any:
        x = (v >> (width * k)) & field
        return x - ((x >> (width - 1)) << width) if signed else x

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a, b, c = read_a(m, s), read_b(m, s), read_c(m, s)
        both = (b << 32) | a  # bytes 0-3 from a, 4-7 from b
        res = c if accumulate else I64(0)
        for i in range(n):
            ti = fn(lane(both, alanes[i], asig), lane(both, blanes[i], bsig))
            if sat:
                ti = np.clip(ti, lo, hi)
            if accumulate:
                if mask[i]:
                    res = res + ti
            else:
                part = ti if mask[i] else lane(c, i, False)
                res = res | ((part & field) << (width * i))
        if w is not None:
            w(m, s, t, (np.asarray(res) & 0xFFFFFFFF).astype(np.uint32), pc)

    return Op("alu", ins, run)
