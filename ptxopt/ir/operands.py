"""Register slots of AST operands: enumerate them in a fixed order and rebuild an
operand with new register names (or immediates) in the same order.

The order is depth-first, left to right: ``{%a, _, %b}`` has slots ``%a, %b``;
``[%rd1+8]`` has ``%rd1``; ``%p|%q`` has ``%p, %q``; ``!%p`` has ``%p``; ``%r1.b0``
and ``%r2+7`` have ``%r1`` and ``%r2``.  The lifter and the lowering both walk operands
with these two functions, so slot ``k`` always means the same register occurrence.
"""

from __future__ import annotations

from collections.abc import Iterator

from ptxopt.ptx.ast import Addr, Imm, Not, Operand, Pair, ParenList, Reg, RegImm, Sel, Vec


def regs_of(op: Operand) -> Iterator[Reg]:
    t = type(op)
    if t is Reg:
        yield op  # type: ignore[misc]
    elif t is Addr:
        if op.base is not None:  # type: ignore[union-attr]
            yield from regs_of(op.base)  # type: ignore[union-attr]
        for e in op.extra:  # type: ignore[union-attr]
            yield from regs_of(e)
    elif t is Vec:
        for e in op.elems:  # type: ignore[union-attr]
            yield from regs_of(e)
    elif t is Pair:
        yield from regs_of(op.first)  # type: ignore[union-attr]
        yield from regs_of(op.second)  # type: ignore[union-attr]
    elif t is Not:
        yield op.operand  # type: ignore[union-attr]
    elif t is Sel or t is RegImm:
        yield op.reg  # type: ignore[union-attr]
    elif t is ParenList:
        for e in op.items:  # type: ignore[union-attr]
            yield from regs_of(e)


def reg_names(op: Operand, out: list[str]) -> None:
    """Append the register names of ``op``'s slots to ``out`` (same order as
    :func:`regs_of`, without generator overhead: used on every instruction)."""
    t = type(op)
    if t is Reg:
        out.append(op.name)  # type: ignore[union-attr]
    elif t is Addr:
        if op.base is not None:  # type: ignore[union-attr]
            reg_names(op.base, out)  # type: ignore[union-attr]
        for e in op.extra:  # type: ignore[union-attr]
            reg_names(e, out)
    elif t is Vec:
        for e in op.elems:  # type: ignore[union-attr]
            if type(e) is Reg:
                out.append(e.name)
            else:
                reg_names(e, out)
    elif t is Pair:
        reg_names(op.first, out)  # type: ignore[union-attr]
        reg_names(op.second, out)  # type: ignore[union-attr]
    elif t is Not:
        out.append(op.operand.name)  # type: ignore[union-attr]
    elif t is Sel or t is RegImm:
        out.append(op.reg.name)  # type: ignore[union-attr]
    elif t is ParenList:
        for e in op.items:  # type: ignore[union-attr]
            reg_names(e, out)


def rebuild(op: Operand, names: Iterator[str | Imm]) -> Operand:
    """Return ``op`` with each register slot replaced by the next item of ``names``
    (a register name, or an immediate where a constant was folded in)."""
    t = type(op)
    if t is Reg:
        new = next(names)
        if isinstance(new, Imm):
            return new
        return op if new == op.name else Reg(new)  # type: ignore[union-attr]
    if t is Addr:
        base = op.base  # type: ignore[union-attr]
        nb = rebuild(base, names) if base is not None else None
        extra = tuple(rebuild(e, names) for e in op.extra)  # type: ignore[union-attr]
        if isinstance(nb, Imm):
            return Addr(None, int(nb.value) + op.offset, extra)  # type: ignore[union-attr]
        return Addr(nb, op.offset, extra, op.plus_zero)  # type: ignore[union-attr]
    if t is Vec:
        return Vec(tuple(rebuild(e, names) for e in op.elems))  # type: ignore[union-attr]
    if t is Pair:
        return Pair(rebuild(op.first, names), rebuild(op.second, names))  # type: ignore[union-attr]
    if t is Not:
        new = next(names)
        if isinstance(new, Imm):
            raise ValueError("cannot fold an immediate into a negated predicate")
        return Not(Reg(new))
    if t is Sel:
        new = next(names)
        if isinstance(new, Imm):
            raise ValueError("cannot fold an immediate into a selected video operand")
        return Sel(Reg(new), op.sel, op.neg)  # type: ignore[union-attr]
    if t is RegImm:
        new = next(names)
        if isinstance(new, Imm):
            raise ValueError("cannot fold an immediate into a register-plus-constant operand")
        return op if new == op.reg.name else RegImm(Reg(new), op.offset)  # type: ignore[union-attr]
    if t is ParenList:
        return ParenList(tuple(rebuild(e, names) for e in op.items))  # type: ignore[union-attr]
    return op
