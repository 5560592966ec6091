"""Immediates and bit patterns without the interpreter.

:func:`imm_bits` and :func:`imm_for` give exactly what :func:`ptxopt.ir.fold.imm_bits`
and :func:`ptxopt.ir.fold.imm_for` give; the common cases (integer and predicate
types, hexadecimal float literals, non-NaN float patterns) are computed here in plain
Python, the others by :mod:`ptxopt.ir.fold`.  Copy propagation reads and writes
immediates all the time but folds an instruction (with the interpreter, on numpy)
only now and then: this way ``ptxopt opt -O`` imports numpy only when it folds.
"""

from __future__ import annotations

import struct

from ptxopt.ptx.ast import Imm

__all__ = ["imm_bits", "imm_for"]

# (kind, size in bytes) of each register type, as the interpreter's
# ``ptxopt.sim.values.TYPES`` has them (tests/test_immediates.py compares)
KINDS: dict[str, tuple[str, int]] = {
    ".b8": ("b", 1), ".b16": ("b", 2), ".b32": ("b", 4), ".b64": ("b", 8), ".b128": ("q", 16),
    ".u8": ("u", 1), ".u16": ("u", 2), ".u32": ("u", 4), ".u64": ("u", 8),
    ".s8": ("s", 1), ".s16": ("s", 2), ".s32": ("s", 4), ".s64": ("s", 8),
    ".f16": ("h", 2), ".f32": ("f", 4), ".f64": ("f", 8), ".bf16": ("bf", 2),
    ".f16x2": ("h2", 4), ".bf16x2": ("bf2", 4), ".u16x2": ("u2", 4), ".s16x2": ("s2", 4),
    ".tf32": ("b", 4), ".pred": ("p", 1),
}  # fmt: skip

_INT_KINDS = ("u", "s", "b")


def _nan(bits: int, size: int) -> bool:
    if size == 4:
        return bits & 0x7F800000 == 0x7F800000 and bits & 0x007FFFFF != 0
    return bits & 0x7FF0000000000000 == 0x7FF0000000000000 and bits & 0xFFFFFFFFFFFFF != 0


def imm_bits(imm: Imm, optype: str) -> int | None:
    """The bit pattern (of ``optype``'s width) that an operand of type ``optype``
    reads from ``imm``; None for types without a plain bit pattern."""
    t = KINDS.get(optype)
    if t is None:
        return _slow_bits(imm, optype)
    kind, size = t
    if kind in _INT_KINDS:
        # (ptxopt.sim.values.imm_scalar, then the bits of the register type)
        try:
            if imm.kind == "int":
                iv = int(imm.value)
            elif imm.kind == "f32":
                iv = int(imm.text[2:], 16)
            elif imm.text.lower().startswith("0d"):
                iv = int(imm.text.lower()[2:], 16)
            else:
                iv = int(imm.value)
        except (ValueError, OverflowError, TypeError):
            return None
        return iv & ((1 << (8 * size)) - 1)
    if kind == "p":
        return int(bool(imm.value))
    if kind != "f":
        return None
    # a hexadecimal literal of the operand's width is its bit pattern
    if (
        imm.kind == "f32"
        and size == 4
        or (imm.kind == "f64" and imm.text[:2].lower() == "0d" and size == 8)
    ):
        try:
            iv = int(imm.text[2:], 16)
        except ValueError:
            return None
        if iv < 1 << (8 * size) and not _nan(iv, size):
            return iv
    return _slow_bits(imm, optype)  # decimal literals are rounded by numpy


def imm_for(bits: int, optype: str) -> Imm | None:
    """The immediate that an operand of type ``optype`` reads as ``bits``; None
    where PTX has no immediate of that type (half, packed, 128-bit, predicate)."""
    t = KINDS.get(optype)
    if t is None:
        return _slow_for(bits, optype)
    kind, size = t
    if kind not in ("u", "s", "b", "f"):
        return None
    w = size * 8
    bits &= (1 << w) - 1
    if kind == "f":
        if _nan(bits, size):
            return _slow_for(bits, optype)
        if w == 32:
            val = struct.unpack("<f", bits.to_bytes(4, "little"))[0]
            return Imm(val, f"0f{bits:08X}", "f32")
        val = struct.unpack("<d", bits.to_bytes(8, "little"))[0]
        return Imm(val, f"0d{bits:016X}", "f64")
    if kind == "s" and bits >> (w - 1):
        v = bits - (1 << w)
        return Imm(v, str(v))
    if w <= 8:
        return None  # 8-bit instruction types do not exist outside ld/st/cvt
    return Imm(bits, str(bits) if bits < 1 << 31 else f"0x{bits:X}")


def _slow_bits(imm: Imm, optype: str) -> int | None:
    from ptxopt.ir.fold import imm_bits as fold_imm_bits

    return fold_imm_bits(imm, optype)


def _slow_for(bits: int, optype: str) -> Imm | None:
    from ptxopt.ir.fold import imm_for as fold_imm_for

    return fold_imm_for(bits, optype)
