"""Editing SSA functions: the small vocabulary every transformation pass shares.

* :func:`replace_uses` redirects every read of a value (operands, guards, tied old
  values, carry inputs, phi operands) to another value or, where the slot allows it,
  an immediate.
* :func:`make_inst` builds a new instruction from an opcode, modifiers, destination
  values and sources (values or immediates), with an AST template whose register
  slots line up with ``defs``/``uses`` exactly as :mod:`ptxopt.ir.lift` makes them.
* :func:`fresh_var` declares a new register of a type; :func:`new_def` creates the
  SSA value an instruction defines.
* :func:`insert_before`, :func:`insert_at_end` (before the terminator) and
  :func:`remove` place and delete instructions.

A pass that edits through these functions keeps the verifier's invariants (every
value defined once, register classes consistent, block links current); dominance is
the pass's own business.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ptxopt.ir.core import Block, Func, Inst, Phi, Value
from ptxopt.ptx.ast import DebugLoc, Imm, Instr, Operand, Reg
from ptxopt.ptx.opcodes import lookup

__all__ = [
    "fresh_var",
    "insert_at_end",
    "insert_before",
    "make_inst",
    "new_def",
    "remove",
    "replace_uses",
]


def replace_uses(
    func: Func,
    old: Value,
    new: Value | Imm,
    users: Iterable[Inst | Phi] | None = None,
) -> int:
    """Make every reader of ``old`` read ``new`` instead; return the number of
    operand slots changed.  ``users`` (e.g. ``DefUse.uses_of(old)``) limits the scan;
    without it the whole function is scanned.  An immediate replaces only ordinary
    use slots: guards, tied old values, carries and phi operands need a value, and
    are left reading ``old`` (the count tells the caller whether all went)."""
    if users is None:
        users = [p for b in func.blocks for p in b.phis] + list(func.instructions())
    n = 0
    is_value = isinstance(new, Value)
    for u in users:
        if isinstance(u, Phi):
            if is_value:
                for k, v in enumerate(u.incoming):
                    if v is old:
                        u.incoming[k] = new  # type: ignore[assignment]
                        n += 1
            continue
        uses = u.uses
        for k, w in enumerate(uses):
            if w is old:
                uses[k] = new
                n += 1
        if not is_value:
            continue
        if u.pred is old:
            u.pred = new  # type: ignore[assignment]
            n += 1
        if u.olds is not None:
            for k, o in enumerate(u.olds):
                if o is old:
                    u.olds[k] = new  # type: ignore[assignment]
                    n += 1
        if u.carry_in is old:
            u.carry_in = new  # type: ignore[assignment]
            n += 1
    return n


def fresh_var(func: Func, vtype: str, stem: str = "%px") -> str:
    """Declare and return a new register name of type ``vtype`` (``%px3``)."""
    k = len(func.reg_types)
    while True:
        name = f"{stem}{k}"
        if name not in func.reg_types:
            func.declare(name, vtype)
            return name
        k += 1


def new_def(func: Func, var: str, inst: Inst, block: Block | None = None) -> Value:
    """A new SSA value of register ``var`` (declared) defined by ``inst``."""
    return func.new_value(var, func.reg_types[var], "inst", inst, block or inst.block)


def _operand(src: Value | Imm) -> Operand:
    return src if isinstance(src, Imm) else Reg(src.var)


def make_inst(
    func: Func,
    opcode: str,
    mods: Sequence[str],
    dsts: Sequence[str],
    srcs: Sequence[Value | Imm | Operand],
    *,
    pred: Value | None = None,
    pred_neg: bool = False,
    olds: Sequence[Value | None] | None = None,
    loc: DebugLoc | None = None,
) -> Inst:
    """A new instruction ``@pred opcode.mods dsts, srcs`` (not yet in a block).

    ``dsts`` are register names (declared, e.g. by :func:`fresh_var`); each gets a new
    SSA value.  ``srcs`` are values (a register slot each), immediates, or other AST
    operands taken verbatim (a label, an address without registers).  A guarded
    instruction is a partial definition: ``olds`` must then give, per destination,
    the value the register keeps where the guard is false."""
    ops: list[Operand] = [Reg(d) for d in dsts]
    uses: list[Value | Imm] = []
    for s in srcs:
        if isinstance(s, Value):
            ops.append(Reg(s.var))
            uses.append(s)
        else:
            ops.append(s)
    ast = Instr(opcode, tuple(mods), ops, Reg(pred.var) if pred is not None else None, pred_neg)
    info = lookup(ast)
    inst = Inst(ast, info, [], uses, pred, loc)
    inst.defs = [new_def(func, d, inst) for d in dsts]
    inst.slot_names = list(dsts) + [u.var for u in uses if isinstance(u, Value)]
    if pred is not None and dsts:
        if olds is None or len(olds) != len(dsts):
            raise ValueError("a guarded instruction needs one old value per destination")
        inst.olds = list(olds)
    return inst


def _attach(inst: Inst, block: Block) -> None:
    inst.block = block
    for v in inst.result_values():
        v.block = block


def insert_before(block: Block, index: int, inst: Inst) -> None:
    """Insert ``inst`` at position ``index`` of ``block``."""
    _attach(inst, block)
    block.insts.insert(index, inst)


def insert_at_end(block: Block, inst: Inst) -> None:
    """Append ``inst`` to ``block``, before its terminator if it has one."""
    _attach(inst, block)
    if block.terminator is not None:
        block.insts.insert(len(block.insts) - 1, inst)
    else:
        block.insts.append(inst)


def remove(inst: Inst) -> None:
    """Delete ``inst`` from its block (its results must be unused)."""
    b = inst.block
    if b is not None:
        b.insts.remove(inst)
    inst.block = None
