"""Constant evaluation of the plain integer instructions, without the interpreter.

:func:`ptxopt.ir.fold.evaluate` runs an instruction through the SIMT interpreter's
handler, which needs numpy and the interpreter (about 0.15 s to import).  The folds
general-optimize meets on real kernels are mostly a handful of integer forms --
``setp.ne.b32`` of two constants, ``add.s32``, ``and.b16``, integer ``cvt`` -- so
those are computed here on Python integers, and only the rest goes to the
interpreter.  :func:`evaluate_int` answers a form it knows completely or says
:data:`DEFER`; ``tests/test_int_fold.py`` checks every form it answers against the
interpreter on edge and random values.

Covered (no guard, no ``.sat``/``.cc``/``.hi``/``.wide``; every register operand of
the instruction type's width):

* ``add``/``sub``/``mul.lo`` on ``.u``/``.s`` 16/32/64 (wrap-around);
* ``and``/``or``/``xor`` on ``.b`` 16/32/64;
* ``setp`` with one destination, no combining predicate: ``eq``/``ne`` on any 16-,
  32- or 64-bit integer type, ``lt``/``le``/``gt``/``ge`` on ``.s`` types and
  ``lo``/``ls``/``hi``/``hs`` on ``.u`` types;
* ``cvt`` between 16-, 32- and 64-bit integer types without rounding or saturation
  (extend by the source type's signedness, truncate to the destination).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ptxopt.ir.immediates import imm_bits
from ptxopt.ptx.ast import Imm, Instr, Operand, Reg

__all__ = ["DEFER", "FOLDABLE", "evaluate_int"]

#: opcodes evaluated at compile time when every source is a constant (never the
#: ``.approx`` forms, whose hardware results the interpreter only approximates, nor
#: integer ``div``/``rem``, undefined for a zero divisor)
FOLDABLE = frozenset(
    {
        "mov", "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "min", "max",
        "abs", "neg", "and", "or", "xor", "not", "cnot", "shl", "shr", "shf",
        "lop3", "popc", "clz", "bfe", "bfi", "brev", "bfind", "prmt", "setp", "set",
        "selp", "slct", "cvt", "copysign", "testp", "dp4a", "dp2a", "fma", "div",
        "sqrt", "rcp",
    }
)  # fmt: skip


class _Defer:
    def __repr__(self) -> str:
        return "DEFER"


#: "not a form computed here": ask the interpreter
DEFER: Final = _Defer()

# integer type -> (signed, bits); .b types compare and wrap as unsigned
_INT: dict[str, tuple[bool, int]] = {}
for _n in (16, 32, 64):
    _INT[f".u{_n}"] = (False, _n)
    _INT[f".s{_n}"] = (True, _n)
    _INT[f".b{_n}"] = (False, _n)
_REG_WIDTH = {f".{k}{n}": n for k in "usb" for n in (8, 16, 32, 64)}

_ARITH = {"add", "sub", "mul"}
_LOGIC = {"and", "or", "xor"}
_SIGNED_CMP = {".lt", ".le", ".gt", ".ge"}
_UNSIGNED_CMP = {".lo", ".ls", ".hi", ".hs"}


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) & 1 else v


def _source(
    op: object, optype: str, width: int, types: Mapping[str, str], inputs: Mapping[str, int]
) -> int | None:
    """The bit pattern of one source operand, or None when it is not a plain
    register of the operand's width or an immediate."""
    if type(op) is Imm:
        return imm_bits(op, optype)
    if type(op) is Reg:
        rt = types.get(op.name)
        if rt is None or _REG_WIDTH.get(rt) != width:
            return None
        v = inputs.get(op.name, 0)
        return v & ((1 << width) - 1) if isinstance(v, int) else None
    return None


def _two_sources(
    ops: list[Operand], optype: str, width: int, types: Mapping[str, str], inputs: Mapping[str, int]
) -> tuple[int, int] | None:
    a = _source(ops[1], optype, width, types, inputs)
    b = _source(ops[2], optype, width, types, inputs)
    return None if a is None or b is None else (a, b)


def _dest_ok(op: object, width: int | None, types: Mapping[str, str]) -> bool:
    if type(op) is not Reg:
        return False
    rt = types.get(op.name)
    if width is None:
        return rt == ".pred"
    return rt is not None and _REG_WIDTH.get(rt) == width


def evaluate_int(ins: Instr, types: Mapping[str, str], inputs: Mapping[str, int]) -> int | _Defer:
    """The bit pattern ``ins`` writes to its (only) destination, computed without the
    interpreter, or :data:`DEFER` when ``ins`` is not one of the forms above."""
    if ins.pred is not None:
        return DEFER
    op, mods, ops = ins.opcode, ins.mods, ins.operands
    if op in _ARITH or op in _LOGIC:
        if len(mods) != (2 if op == "mul" else 1) or len(ops) != 3:
            return DEFER
        if op == "mul" and mods[0] != ".lo":
            return DEFER
        t = mods[-1]
        k = _INT.get(t)
        if k is None or (op in _LOGIC) != (t[1] == "b"):
            return DEFER
        width = k[1]
        ab = _two_sources(ops, t, width, types, inputs)
        if ab is None or not _dest_ok(ops[0], width, types):
            return DEFER
        a, b = ab
        mask = (1 << width) - 1
        if op == "add":
            return (a + b) & mask
        if op == "sub":
            return (a - b) & mask
        if op == "mul":
            return (a * b) & mask
        if op == "and":
            return a & b
        if op == "or":
            return a | b
        return a ^ b
    if op == "setp":
        if len(mods) != 2 or len(ops) != 3:
            return DEFER
        cmp, t = mods
        k = _INT.get(t)
        if k is None:
            return DEFER
        signed, width = k
        if cmp in _SIGNED_CMP:
            if not (signed and t[1] == "s"):
                return DEFER
        elif cmp in _UNSIGNED_CMP:
            if t[1] != "u":
                return DEFER
        elif cmp not in (".eq", ".ne"):
            return DEFER
        ab = _two_sources(ops, t, width, types, inputs)
        if ab is None or not _dest_ok(ops[0], None, types):
            return DEFER
        a, b = ab
        if signed:
            a, b = _signed(a, width), _signed(b, width)
        if cmp == ".eq":
            r = a == b
        elif cmp == ".ne":
            r = a != b
        elif cmp in (".lt", ".lo"):
            r = a < b
        elif cmp in (".le", ".ls"):
            r = a <= b
        elif cmp in (".gt", ".hi"):
            r = a > b
        else:
            r = a >= b
        return int(r)
    if op == "cvt":
        if len(mods) != 2 or len(ops) != 2:
            return DEFER
        dt, st = mods
        dk, sk = _INT.get(dt), _INT.get(st)
        if dk is None or sk is None or dt[1] == "b" or st[1] == "b":
            return DEFER
        dw, sw = dk[1], sk[1]
        if not _dest_ok(ops[0], dw, types):
            return DEFER
        src = _source(ops[1], st, sw, types, inputs)
        if src is None:
            return DEFER
        return (_signed(src, sw) if sk[0] else src) & ((1 << dw) - 1)
    return DEFER
