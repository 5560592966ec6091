"""Algebraic simplification rules for single SSA instructions.

:func:`simplify` looks at one unguarded instruction, the constants known for its
operands and the instructions defining them, and returns what the result can be
replaced by (:class:`Rewrite`): an existing value, a constant bit pattern, or a
cheaper instruction.  Every rule is exact at the bit level on every input (the unit
tests check each one against the interpreter at edge values):

* identities and absorbing elements of integer ``add``/``sub``/``mul.lo``/``and``/
  ``or``/``xor``/``min``/``max`` and of the predicate logic ops;
* shifts by constants (by zero; ``shl``/``shr.u`` past the width give zero);
* ``selp`` with equal arms or a constant condition;
* the ``selp 1, 0, p`` + ``setp.ne/eq r, 0`` round trip back to ``p`` / ``!p``;
* sign/zero-extension chains (``cvt`` of a ``cvt``): a truncation of an extension is
  the original value, two extensions of the same kind are one;
* address arithmetic: ``shl.b64 (cvt.s64.s32 x), k`` and ``mul.lo.s64 (cvt.s64.s32
  x), c`` become ``mul.wide.s32 x, c`` (exact: the product of two 32-bit values
  fits in 64 bits), and ``add (add x, c1), c2`` becomes ``add x, c1+c2``.

Float rules are left out: on the GPU, ``x * 1.0`` and ``x + 0.0`` change NaN
payloads, signed zeros or denormals, so none is exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ptxopt.ir.core import Inst, Value
from ptxopt.ir.immediates import imm_for
from ptxopt.ptx.ast import Imm, Reg
from ptxopt.ptx.types import bit_width

__all__ = ["Rewrite", "simplify"]


@dataclass(slots=True)
class Rewrite:
    """The result of an instruction is ``value``, or the constant ``bits``, or the
    result of the new instruction ``opcode.mods srcs`` (same destination)."""

    value: Value | None = None
    bits: int | None = None
    opcode: str | None = None
    mods: tuple[str, ...] = ()
    srcs: tuple[Value | Imm, ...] = ()
    negate: bool = False  # value is a predicate to be negated (not.pred)


ConstOf = Callable[[Value | Imm, str], int | None]

_INT_KINDS = ("u", "s", "b")
# the opcodes some rule of :func:`simplify` looks at
_HANDLED = frozenset(
    {"add", "sub", "mul", "and", "or", "xor", "min", "max", "shl", "shr", "selp", "setp", "cvt"}
)


def _int_type(t: str | None) -> tuple[int, str] | None:
    if t is None or len(t) < 3 or t[1] not in _INT_KINDS:
        return None
    try:
        w = int(t[2:])
    except ValueError:
        return None
    return (w, t[1]) if w in (16, 32, 64) else None


def _src(inst: Inst, k: int) -> Value | Imm | None:
    """Source operand ``k`` (0-based, after the destination) of a simple
    ``op d, a, b[, c]`` instruction: its use slot or its immediate."""
    ops = inst.ast.operands
    info = inst.info
    if info is None or len(info.defs) != 1 or info.defs[0] != 0:
        return None
    idx = 1 + k
    if idx >= len(ops):
        return None
    op = ops[idx]
    if type(op) is Imm:
        return op
    # use slots are in operand order; count register operands before idx
    slot = 0
    for j in range(1, idx):
        t = type(ops[j])
        if t is Reg:
            slot += 1
        elif t is not Imm:
            return None
    if type(op) is not Reg or slot >= len(inst.uses):
        return None
    return inst.uses[slot]


def _plain(inst: Inst) -> bool:
    """An unguarded, single-destination, non-carry instruction with only register
    and immediate operands."""
    if inst.pred is not None or inst.carry_in is not None or inst.carry_out is not None:
        return False
    if len(inst.defs) != 1:
        return False
    for o in inst.ast.operands:
        t = type(o)
        if t is not Reg and t is not Imm:
            return False
    return True


def _def_inst(v: Value | Imm | None) -> Inst | None:
    if isinstance(v, Value) and v.kind == "inst" and isinstance(v.inst, Inst):
        ins = v.inst
        if ins.block is not None and _plain(ins):
            return ins
    return None


def simplify(
    inst: Inst, const_of: ConstOf, single_use: Callable[[Value], bool] | None = None
) -> Rewrite | None:
    """A cheaper equivalent of ``inst``'s result, or None.  ``single_use`` tells
    whether a value has one reader: the address rules fire only then (a shared
    extension feeding several shifts is cheaper for ptxas than several wide
    multiplies: measured +8 % SASS on triton/matmul_fp16.sm90a)."""
    op = inst.ast.opcode
    if op not in _HANDLED:
        return None  # no rule below applies
    one = single_use or (lambda v: True)
    if not _plain(inst) or inst.info is None:
        return None
    mods = inst.ast.mods
    t = inst.info.type
    if op in ("add", "sub", "mul", "and", "or", "xor", "min", "max", "shl", "shr", "selp"):
        a, b = _src(inst, 0), _src(inst, 1)
        if a is None or b is None:
            return None
    else:
        a = b = None
    if op == "selp" and t is not None and t != ".pred":
        c = _src(inst, 2)
        if a is None or b is None or c is None:
            return None
        if a is b and isinstance(a, Value):
            return Rewrite(value=a)
        if isinstance(a, Imm) and isinstance(b, Imm):
            ca, cb = const_of(a, t), const_of(b, t)
            if ca is not None and ca == cb:
                return Rewrite(bits=ca)
        cc = const_of(c, ".pred")
        if cc is not None:
            pick = a if cc else b
            if isinstance(pick, Value):
                return Rewrite(value=pick)
            pc = const_of(pick, t)
            if pc is not None:
                return Rewrite(bits=pc)
        return None
    if op == "setp":
        return _setp_roundtrip(inst, const_of)
    if op == "cvt":
        return _cvt_chain(inst)
    if t == ".pred" and op in ("and", "or", "xor"):
        return _pred_logic(op, a, b, const_of)
    it = _int_type(t)
    if it is None:
        return None
    w, kind = it
    mask = (1 << w) - 1
    ms = set(mods)
    if ms & {".sat", ".cc", ".hi", ".relu"} or (".wide" in ms and op != "mul"):
        return None
    if a is None or b is None:
        return None
    ca, cb = const_of(a, t), const_of(b, t)  # type: ignore[arg-type]
    av = a if isinstance(a, Value) else None
    bv = b if isinstance(b, Value) else None
    if op == "add":
        if cb == 0 and av is not None:
            return Rewrite(value=av)
        if ca == 0 and bv is not None:
            return Rewrite(value=bv)
        if av is not None and cb is not None:
            return _add_chain(inst, av, cb, t, w)  # type: ignore[arg-type]
        if bv is not None and ca is not None:
            return _add_chain(inst, bv, ca, t, w)  # type: ignore[arg-type]
        return None
    if op == "sub":
        if cb == 0 and av is not None:
            return Rewrite(value=av)
        if av is not None and av is bv:
            return Rewrite(bits=0)
        return None
    if op == "mul":
        if ".wide" in ms:
            if ca == 0 or cb == 0:
                return Rewrite(bits=0)
            return None
        if cb == 1 and av is not None:
            return Rewrite(value=av)
        if ca == 1 and bv is not None:
            return Rewrite(value=bv)
        if ca == 0 or cb == 0:
            return Rewrite(bits=0)
        if w == 64 and ".lo" in ms:
            if av is not None and cb is not None and one(av):
                return _wide_mul(av, cb, w)
            if bv is not None and ca is not None and one(bv):
                return _wide_mul(bv, ca, w)
        return None
    if op in ("and", "or", "xor"):
        if av is not None and av is bv:
            return Rewrite(bits=0) if op == "xor" else Rewrite(value=av)
        for x, k in ((av, cb), (bv, ca)):
            if x is None or k is None:
                continue
            if op == "and":
                if k == 0:
                    return Rewrite(bits=0)
                if k == mask:
                    return Rewrite(value=x)
            elif op == "or":
                if k == 0:
                    return Rewrite(value=x)
                if k == mask:
                    return Rewrite(bits=mask)
            elif k == 0:
                return Rewrite(value=x)
        return None
    if op in ("min", "max"):
        if av is not None and av is bv:
            return Rewrite(value=av)
        return None
    if op in ("shl", "shr"):
        amount = const_of(b, ".u32")  # type: ignore[arg-type]
        if amount is None:
            return None
        if amount == 0 and av is not None:
            return Rewrite(value=av)
        if amount >= w and (op == "shl" or kind != "s"):
            return Rewrite(bits=0)
        if op == "shl" and w == 64 and av is not None and amount <= 30 and one(av):
            return _wide_mul(av, 1 << amount, w)
        return None
    return None


def _pred_logic(op: str, a: object, b: object, const_of: ConstOf) -> Rewrite | None:
    av = a if isinstance(a, Value) else None
    bv = b if isinstance(b, Value) else None
    if av is not None and av is bv:
        return Rewrite(bits=0) if op == "xor" else Rewrite(value=av)
    ca = const_of(a, ".pred") if a is not None else None  # type: ignore[arg-type]
    cb = const_of(b, ".pred") if b is not None else None  # type: ignore[arg-type]
    for x, c in ((av, cb), (bv, ca)):
        if x is None or c is None:
            continue
        if op == "and":
            return Rewrite(value=x) if c else Rewrite(bits=0)
        if op == "or":
            return Rewrite(bits=1) if c else Rewrite(value=x)
        if c == 0:
            return Rewrite(value=x)
    return None


def _add_chain(inst: Inst, x: Value, c: int, t: str, w: int) -> Rewrite | None:
    """``add (add y, c1), c`` -> ``add y, c1 + c`` (wrap-around arithmetic)."""
    inner = _def_inst(x)
    if inner is None or inner.opcode != "add" or inner.ast.mods != inst.ast.mods:
        return None
    ia, ib = _src(inner, 0), _src(inner, 1)
    y: Value | None = None
    c1: int | None = None
    if isinstance(ia, Value) and isinstance(ib, Imm) and ib.kind == "int":
        y, c1 = ia, int(ib.value)
    elif isinstance(ib, Value) and isinstance(ia, Imm) and ia.kind == "int":
        y, c1 = ib, int(ia.value)
    if y is None or c1 is None:
        return None
    total = (c1 + c) & ((1 << w) - 1)
    imm = imm_for(total, t)
    if imm is None:
        return None
    return Rewrite(opcode="add", mods=inst.ast.mods, srcs=(y, imm))


def _wide_mul(x: Value, c: int, w: int) -> Rewrite | None:
    """``mul.lo.b64 (cvt.s64.s32 y), c`` -> ``mul.wide.s32 y, c`` when ``c`` is a
    32-bit value of the extension's signedness (exact: no 64-bit product of two
    such numbers wraps)."""
    inner = _def_inst(x)
    if inner is None or inner.opcode != "cvt" or inner.info is None:
        return None
    types = inner.info.types
    if len(types) != 2 or len(inner.ast.mods) != 2:
        return None
    dst, src = types
    if bit_width(dst) != 64 or src not in (".s32", ".u32"):
        return None
    y = inner.uses[0] if inner.uses else None
    if not isinstance(y, Value) or bit_width(y.type) != 32:
        return None
    signed = src == ".s32"
    c &= (1 << w) - 1
    if signed:
        cs = c - (1 << 64) if c >> 63 else c
        if not -(2**31) <= cs < 2**31:
            return None
        imm = Imm(cs, str(cs))
    else:
        if c >= 2**32:
            return None
        imm = Imm(c, str(c))
    return Rewrite(opcode="mul", mods=(".wide", src), srcs=(y, imm))


def _setp_roundtrip(inst: Inst, const_of: ConstOf) -> Rewrite | None:
    """``r = selp 1, 0, p`` (or ``0, 1``) then ``setp.ne/eq r, 0`` is ``p`` / ``!p``."""
    mods = inst.ast.mods
    if len(mods) != 2 or mods[0] not in (".ne", ".eq") or len(inst.ast.operands) != 3:
        return None
    t = mods[1]
    if _int_type(t) is None:
        return None
    a, b = _src(inst, 0), _src(inst, 1)
    if not isinstance(a, Value) or b is None or const_of(b, t) != 0:
        return None
    sel = _def_inst(a)
    if sel is None or sel.opcode != "selp" or sel.info is None or sel.info.type is None:
        return None
    if bit_width(sel.info.type) < bit_width(t):
        return None
    x, y, p = _src(sel, 0), _src(sel, 1), _src(sel, 2)
    if not isinstance(p, Value) or x is None or y is None:
        return None
    cx, cy = const_of(x, t), const_of(y, t)
    if cx is None or cy is None or (cx == 0) == (cy == 0):
        return None
    # the setp is true where the selp picked its nonzero arm
    true_when_p = (cx != 0) == (mods[0] == ".ne")
    return Rewrite(value=p, negate=not true_when_p)


def _cvt_chain(inst: Inst) -> Rewrite | None:
    """Extension chains: ``cvt.u32.u64 (cvt.u64.u32 x)`` is ``x``; a plain
    same-type ``cvt`` is a copy; two extensions of one signedness are one."""
    info = inst.info
    if info is None or len(info.types) != 2 or len(inst.ast.mods) != 2 or not inst.uses:
        return None
    dst, src = info.types
    x = inst.uses[0]
    if not isinstance(x, Value):
        return None
    di, si = _int_type(dst), _int_type(src)
    if di is None or si is None:
        return None
    if dst == src and bit_width(x.type) == di[0]:
        return Rewrite(value=x)
    inner = _def_inst(x)
    if inner is None or inner.opcode != "cvt" or inner.info is None or len(inner.ast.mods) != 2:
        return None
    idst, isrc = inner.info.types
    ii, io = _int_type(idst), _int_type(isrc)
    y = inner.uses[0] if inner.uses else None
    if ii is None or io is None or not isinstance(y, Value):
        return None
    if bit_width(y.type) != io[0] or bit_width(x.type) != ii[0]:
        return None
    # inner extends y (io bits) to ii bits; outer reads si bits of it
    if ii[0] > io[0] and si[0] == ii[0]:
        if di[0] == io[0]:  # truncate back to the original width
            return Rewrite(value=y)
        if di[0] > ii[0] and (io[1] == "s") == (si[1] == "s"):
            # extension of an extension of the same kind
            return Rewrite(opcode="cvt", mods=(dst, isrc), srcs=(y,))
    return None
