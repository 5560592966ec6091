"""Helpers shared by the PTX-level uniform passes (spec 02): immediates of a given
register type, the operand slots an immediate may take, and constant bytes.

Not a pass (nothing here registers); ``replace-uniforms-with-imm``,
``promote-local`` and ``optimize-uniform-atomic`` import it.
"""

from __future__ import annotations

import re
import struct

from ptxopt.ir.core import Func, Inst, Value
from ptxopt.ir.operands import reg_names
from ptxopt.ptx.ast import Imm, Reg
from ptxopt.ptx.initializer import layout
from ptxopt.ptx.types import bit_width, is_float, is_signed

# Opcodes whose plain register sources PTX accepts as immediates (ptxas checked on
# the corpus); anything else keeps a register and reads it through a mov.
IMM_SOURCE_OPS = frozenset(
    {
        "add",
        "sub",
        "mul",
        "mad",
        "mul24",
        "mad24",
        "min",
        "max",
        "and",
        "or",
        "xor",
        "shl",
        "shr",
        "setp",
        "selp",
        "mov",
        "div",
        "rem",
        "fma",
    }
)


def imm_for(bits: int, vtype: str) -> Imm:
    """The immediate whose bits are ``bits`` for a register of type ``vtype``
    (``0f``/``0d`` spelling for floats, decimal or hex for integers)."""
    width = bit_width(vtype)
    bits &= (1 << width) - 1
    if vtype == ".f32":
        return Imm(struct.unpack("<f", bits.to_bytes(4, "little"))[0], f"0f{bits:08X}", "f32")
    if vtype == ".f64":
        return Imm(struct.unpack("<d", bits.to_bytes(8, "little"))[0], f"0d{bits:016X}", "f64")
    if is_signed(vtype) and bits >> (width - 1):
        value = bits - (1 << width)
        return Imm(value, str(value), "int")
    if bits < 1 << 31:
        return Imm(bits, str(bits), "int")
    return Imm(bits, f"0x{bits:X}", "int")


def load_bits(data: bytes, offset: int, ld_type: str, reg_type: str) -> int | None:
    """The register bits a ``ld`` of ``ld_type`` at ``offset`` of ``data`` writes into
    a register of ``reg_type`` (sign- or zero-extended); None if out of range."""
    size = bit_width(ld_type) // 8
    if size == 0 or offset < 0 or offset + size > len(data):
        return None
    raw = int.from_bytes(data[offset : offset + size], "little")
    rw = bit_width(reg_type)
    if rw > size * 8 and is_signed(ld_type) and raw >> (size * 8 - 1):
        raw |= ((1 << rw) - 1) ^ ((1 << (size * 8)) - 1)
    return raw & ((1 << rw) - 1)


_HEX_FLOAT = re.compile(r"0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}")
_NUMBER = re.compile(r"[-+]?0[xX][0-9a-fA-F]+U?|[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?U?")


def initializer_bytes(text: str, vtype: str, dims: list[int | None]) -> bytes | None:
    """Bytes of an initializer of an array of ``vtype`` with dimensions ``dims``
    (short rows and missing trailing elements are zero, as ptxas lays them out); None
    when it names a symbol or is not understood."""
    try:
        width = bit_width(vtype)
    except ValueError:
        return None
    size = max(width // 8, 1)

    def item(tok: str) -> bytes | None:
        low = tok.lower()
        if _HEX_FLOAT.fullmatch(tok):
            if (low[1] == "f") != (size == 4) or size not in (4, 8):
                return None
            return int(tok[2:], 16).to_bytes(size, "little")
        if not _NUMBER.fullmatch(tok):
            return None  # an address, or an expression: not a constant we can fold
        t = tok.rstrip("U")
        if re.fullmatch(r"[-+]?(0[xX][0-9a-fA-F]+|[0-9]+)", t) and not is_float(vtype):
            return (int(t, 0) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        if is_float(vtype) and size in (4, 8):
            return struct.pack("<f" if size == 4 else "<d", float(t))
        return None

    return layout(text, dims, 0, size, item)


def reg_use_slots(inst: Inst) -> dict[int, int]:
    """Use index -> operand index, for the uses that are a plain register operand
    (not an address, vector element, negated predicate ...)."""
    info = inst.info
    out: dict[int, int] = {}
    if info is None:
        return out
    ops = inst.ast.operands
    k = 0
    for i in info.uses:
        if i >= len(ops) or i in info.defs:
            continue
        names: list[str] = []
        reg_names(ops[i], names)
        if isinstance(ops[i], Reg) and len(names) == 1:
            out[k] = i
        k += len(names)
    return out


def fold_immediate(func: Func, value: Value, bits: int, users: list[Inst]) -> int:
    """Replace reads of ``value`` (whose register holds ``bits``) by an immediate in
    plain source slots of instructions that accept one, spelled for the
    instruction's type; return how many slots changed."""
    n = 0
    rw = bit_width(value.type)
    for u in users:
        info = u.info
        if info is None or info.name not in IMM_SOURCE_OPS or info.type is None:
            continue
        itype = info.type
        if is_float(itype):
            if itype not in (".f32", ".f64") or bit_width(itype) != rw:
                continue
            imm = imm_for(bits, itype)
        else:
            imm = imm_for(bits, value.type if not is_float(value.type) else f".b{rw}")
        slots = reg_use_slots(u)
        for k, w in enumerate(u.uses):
            if w is value and k in slots:
                # keep one register source: an all-immediate instruction is a
                # constant for general-optimize to fold, not a form to print
                if sum(isinstance(x, Value) for x in u.uses) <= 1:
                    break
                u.uses[k] = imm
                n += 1
    return n
