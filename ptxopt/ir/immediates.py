"""Immediates and bit patterns, without the interpreter.

:func:`imm_bits` reads the bit pattern an operand of a given type takes from an
immediate; :func:`imm_for` spells a bit pattern as the immediate such an operand
accepts (decimal integers, ``0f``/``0d`` hex floats).  Every optimizing run asks
these for its constants, most never fold an instruction: keeping them free of numpy
and the interpreter (which :mod:`ptxopt.ir.fold` needs) saves the 100 ms those take
to import.  The one conversion that needs IEEE single-precision rounding (a decimal
or ``0d`` literal read by an ``.f32`` operand) is left to the interpreter's reader;
``tests/test_immediates.py`` checks every answer against it.
"""

from __future__ import annotations

import struct

from ptxopt.ptx.ast import Imm

__all__ = ["imm_bits", "imm_for"]

# the types with a plain bit pattern: kind ("u", "s", "b", "f", "p") and bytes
_KINDS: dict[str, tuple[str, int]] = {".pred": ("p", 1), ".tf32": ("b", 4)}
for _n in (8, 16, 32, 64):
    for _k in ("u", "s", "b"):
        _KINDS[f".{_k}{_n}"] = (_k, _n // 8)
_KINDS[".f32"] = ("f", 4)
_KINDS[".f64"] = ("f", 8)


def imm_bits(imm: Imm, optype: str) -> int | None:
    """The bit pattern (of ``optype``'s width) that an operand of type ``optype``
    reads from ``imm``; None for types without a plain bit pattern."""
    k = _KINDS.get(optype)
    if k is None:
        return None
    kind, size = k
    v = imm.value
    if kind == "p":
        return int(bool(v))
    text = imm.text
    try:
        if kind == "f":
            if imm.kind == "f32" and size == 4:
                return int(text[2:], 16)
            if imm.kind == "f64" and text[:2] in ("0d", "0D") and size == 8:
                return int(text[2:], 16)
            if size == 8:
                return int.from_bytes(struct.pack("<d", float(v)), "little")
            from ptxopt.ir.fold import imm_bits_rounded

            return imm_bits_rounded(imm, optype)  # rounding to single precision
        if imm.kind == "f32":
            iv = int(text[2:], 16)
        elif imm.kind != "int" and text[:2] in ("0d", "0D"):
            iv = int(text[2:], 16)
        else:
            iv = int(v)
    except (ValueError, OverflowError, TypeError):
        return None
    return iv & ((1 << (8 * size)) - 1)


def imm_for(bits: int, optype: str) -> Imm | None:
    """The immediate that an operand of type ``optype`` reads as ``bits``; None
    where PTX has no immediate of that type (half, packed, 128-bit, predicate)."""
    k = _KINDS.get(optype)
    if k is None or k[0] == "p":
        return None
    kind, size = k
    w = size * 8
    bits &= (1 << w) - 1
    if kind == "f":
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
