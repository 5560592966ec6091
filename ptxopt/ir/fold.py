"""Constant evaluation of PTX instructions with the interpreter's semantics.

Folding must agree bit for bit with what the instruction computes at run time:
wrap-around, ``.sat`` clamping, rounding modes, ``.ftz``, NaN payloads, shift amounts
past the width, ``cvt`` saturation and so on.  Rather than restating those rules,
:func:`evaluate` runs the instruction through the SIMT interpreter's own handler
(:mod:`ptxopt.sim.ops`) on a machine of a few lanes whose registers hold the
constant inputs, and reads the results back.  The interpreter is the project's
reference for PTX semantics (it is itself checked against the ISA edge tables), so a
fold can only disagree with execution where the interpreter does.

Only instructions that are pure per-lane functions of their operands are evaluated
(:data:`FOLDABLE`); anything that touches memory, the warp, special registers or
the carry flag is refused.

:func:`imm_for` and :func:`imm_bits` (spelling a bit pattern as an immediate and
reading one back) live in :mod:`ptxopt.ir.immediates`, which needs no numpy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ptxopt.ir.immediates import imm_bits, imm_for
from ptxopt.ir.int_fold import FOLDABLE
from ptxopt.ptx.ast import Imm, Instr, Reg
from ptxopt.ptx.opcodes import lookup
from ptxopt.sim.errors import SimError
from ptxopt.sim.ops import HANDLERS, Decoder
from ptxopt.sim.values import TYPES, Operands, imm_scalar

__all__ = ["FOLDABLE", "evaluate", "imm_bits", "imm_bits_rounded", "imm_for", "width_of"]


def width_of(rtype: str) -> int:
    """Bits of a register type (``.pred``: 1)."""
    if rtype == ".pred":
        return 1
    return TYPES[rtype].size * 8


class _Func:
    name = "fold"


class _Prog:
    owner: Mapping[int, _Func] = {0: _Func()}
    funcs: Mapping[str, object] = {}


class _FoldDecoder(Decoder):
    """A decoder with no program: register types come from the caller."""

    def __init__(self, reg_types: Mapping[str, str]) -> None:  # noqa: D107
        self.prog = _Prog()  # type: ignore[assignment]
        self.symbols = {}
        self.reg_types = {r: TYPES[t].ut for r, t in reg_types.items()}
        self.func = None
        self.ops = Operands(self)
        self.func_index = {}


class _Stats:
    steps = 0


class _Machine:
    """Just enough machine for a per-lane ``alu`` op: registers and stores."""

    def __init__(self, regs: dict[str, np.ndarray], lanes: int) -> None:
        self.R = regs
        self.wmask = None
        self.claims = None
        self.stats = _Stats()
        self.all_tids = np.arange(lanes)

    def store_reg(self, name: str, sel: Any, tids: np.ndarray, bits: Any, pc: int) -> None:
        self.R[name][sel] = bits


def evaluate(
    ins: Instr,
    reg_types: Mapping[str, str],
    inputs: Mapping[str, int | Sequence[int]],
    lanes: int = 1,
) -> dict[str, np.ndarray] | None:
    """Run ``ins`` (no guard) on ``lanes`` lanes whose registers named in ``inputs``
    hold the given bit patterns (one int, or one per lane); return every register
    the instruction writes as an unsigned array (``bool`` for predicates), or None
    when the instruction is not foldable or the interpreter cannot run it."""
    if ins.pred is not None or ins.opcode not in FOLDABLE or ".approx" in ins.mods:
        return None
    info = lookup(ins)
    if ins.opcode == "div" and (info.type is None or info.type[1] != "f"):
        return None  # integer division by zero has no PTX-defined result
    if info.mem is not None or info.carry_in or info.carry_out or info.side_effects:
        return None
    handler = HANDLERS.get(ins.opcode)
    if handler is None:
        return None
    regs: dict[str, np.ndarray] = {}
    for name, t in reg_types.items():
        ut = TYPES[t].ut
        val = inputs.get(name, 0)
        if ut is np.bool_:
            arr = np.array(val, dtype=np.int64) != 0
            regs[name] = np.broadcast_to(arr, (lanes,)).copy()
        else:
            mask = (1 << (8 * np.dtype(ut).itemsize)) - 1
            if isinstance(val, int):
                vals = [val & mask] * lanes
            else:
                vals = [int(v) & mask for v in val]
            regs[name] = np.array(vals, dtype=ut)
    try:
        dec = _FoldDecoder(reg_types)
        op = handler(dec, ins, 0)
        if op.kind != "alu" or op.fn is None:
            return None
        m = _Machine(regs, lanes)
        with np.errstate(all="ignore"):
            op.fn(m, slice(None), np.arange(lanes))
    except (SimError, KeyError, ValueError, TypeError, OverflowError, IndexError):
        return None
    out: dict[str, np.ndarray] = {}
    for k in info.defs:
        if k < len(ins.operands):
            op_ = ins.operands[k]
            from ptxopt.ir.operands import regs_of

            for r in regs_of(op_):
                if isinstance(r, Reg) and r.name in regs:
                    out[r.name] = regs[r.name]
    return out


def imm_bits_rounded(imm: Imm, optype: str) -> int | None:
    """:func:`imm_bits` where the interpreter's reader is needed: a literal rounded
    to ``optype`` (a decimal or ``0d`` literal read by an ``.f32`` operand)."""
    t = TYPES.get(optype)
    if t is None:
        return None
    with np.errstate(all="ignore"):  # a literal past FLT_MAX reads as infinity
        try:
            v = imm_scalar(imm, t, None)
        except (ValueError, OverflowError, TypeError):
            return None
        return int(np.array(v, dtype=t.dt).view(t.ut))
