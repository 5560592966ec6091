"""Special registers written through a vector destination.

ptxas 13.0 refuses a special register as a scalar destination (``mov.u32 %ctaid.z,
1``: "Read-only special register cannot be destination argument"), but accepts one as
an element of a vector destination (``ld.global.v2.u32 {%r1, %ctaid.z}, [%rd1]``,
``mov.b64 {%r1, %tid.x}, %rd1``).  It then treats the name as an ordinary register of
the function: measured on sm_90, a later ``mov.u32 %r3, %ctaid.z`` reads the loaded
word (the ``S2UR SR_CTAID.Z`` disappears from the SASS).

:func:`rename_written_special_registers` gives such a function the same meaning in
plain PTX: each written special register becomes a fresh register, declared at the
top of the body and initialized there from the special register, and every mention
of the name in the body refers to the fresh register.  Functions that write no
special register are left alone.
"""

from __future__ import annotations

from dataclasses import replace

from ptxopt.ptx.ast import (
    Addr,
    Function,
    Instr,
    Operand,
    Pair,
    ParenList,
    PtxError,
    Reg,
    RegDecl,
    RegImm,
    Scope,
    Sel,
    Stmt,
    Vec,
)
from ptxopt.ptx.opcodes import is_special_register, lookup

_WIDE = ("%clock64", "%globaltimer", "%gridid")


def _instrs(body: list[Stmt]) -> list[Instr]:
    out: list[Instr] = []
    stack = [body]
    while stack:
        for st in stack.pop():
            if isinstance(st, Instr):
                out.append(st)
            elif isinstance(st, Scope):
                stack.append(st.body)
    return out


def _written(ins: Instr) -> list[str]:
    """Special registers written as vector elements by ``ins``."""
    if not any(isinstance(op, Vec) for op in ins.operands):
        return []
    try:
        info = lookup(ins)
    except PtxError:
        return []  # the validator reports it
    names: list[str] = []
    for k in info.defs:
        op = ins.operands[k] if k < len(ins.operands) else None
        if isinstance(op, Vec):
            for e in op.elems:
                if isinstance(e, Reg) and is_special_register(e.name):
                    names.append(e.name)
    return names


def _fresh(name: str, taken: set[str]) -> str:
    base = "%__sreg_" + name[1:].replace(".", "_")
    out, k = base, 0
    while out in taken:
        k += 1
        out = f"{base}_{k}"
    return out


def _rename(op: Operand, m: dict[str, str]) -> Operand:
    if isinstance(op, Reg):
        new = m.get(op.name)
        return Reg(new) if new is not None else op
    if isinstance(op, Vec):
        return Vec(tuple(_rename(e, m) for e in op.elems))
    if isinstance(op, RegImm):
        r = m.get(op.reg.name)
        return RegImm(Reg(r), op.offset) if r is not None else op
    if isinstance(op, Sel):
        r = m.get(op.reg.name)
        return Sel(Reg(r), op.sel, op.neg) if r is not None else op
    if isinstance(op, Pair):
        return Pair(_rename(op.first, m), _rename(op.second, m))
    if isinstance(op, Addr):
        base = _rename(op.base, m) if op.base is not None else None
        return replace(op, base=base, extra=tuple(_rename(e, m) for e in op.extra))
    if isinstance(op, ParenList):
        return ParenList(tuple(_rename(e, m) for e in op.items))
    return op


def rename_written_special_registers(fn: Function) -> None:
    """Rewrite ``fn``'s body in place (see the module docstring)."""
    if fn.body is None:
        return
    instrs = _instrs(fn.body)
    written: list[str] = []
    for ins in instrs:
        for n in _written(ins):
            if n not in written:
                written.append(n)
    if not written:
        return
    taken = {r.name for ins in instrs for r in _regs(ins)}
    mapping: dict[str, str] = {}
    for n in written:
        mapping[n] = _fresh(n, taken)
        taken.add(mapping[n])
    for ins in instrs:
        ins.operands = [_rename(op, mapping) for op in ins.operands]
        if ins.pred is not None and ins.pred.name in mapping:
            ins.pred = Reg(mapping[ins.pred.name])
    head: list[Stmt] = []
    for n, new in mapping.items():
        base = n.split(".")[0]
        t = ".u64" if base in _WIDE or (base.startswith("%pm") and base.endswith("_64")) else ".u32"
        head.append(RegDecl(".b" + t[2:], [(new, None)], span=fn.span))
        head.append(Instr("mov", (t,), [Reg(new), Reg(n)], span=fn.span))
    fn.body[:0] = head


def _regs(ins: Instr) -> list[Reg]:
    out: list[Reg] = []
    stack: list[object] = list(ins.operands)
    while stack:
        op = stack.pop()
        if isinstance(op, Reg):
            out.append(op)
        elif isinstance(op, Vec):
            stack.extend(op.elems)
        elif isinstance(op, RegImm | Sel):
            stack.append(op.reg)
        elif isinstance(op, Pair):
            stack.extend((op.first, op.second))
        elif isinstance(op, Addr):
            stack.append(op.base)
            stack.extend(op.extra)
        elif isinstance(op, ParenList):
            stack.extend(op.items)
    return out
