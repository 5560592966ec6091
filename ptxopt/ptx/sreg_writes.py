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

from ptxopt.ir.operands import rebuild, reg_names
from ptxopt.ptx.ast import Function, Instr, Operand, PtxError, Reg, RegDecl, Scope, Stmt, Vec
from ptxopt.ptx.opcodes import is_special_register, lookup
from ptxopt.ptx.validate import special_register_type


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


def _rename(op: Operand, mapping: dict[str, str]) -> Operand:
    names: list[str] = []
    reg_names(op, names)
    if not any(n in mapping for n in names):
        return op
    return rebuild(op, iter([mapping.get(n, n) for n in names]))


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
    names: list[str] = []
    for ins in instrs:
        for op in ins.operands:
            reg_names(op, names)
    taken = set(names)
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
        t = special_register_type(n)
        head.append(RegDecl(".b" + t[2:], [(new, None)], span=fn.span))
        head.append(Instr("mov", (t,), [Reg(new), Reg(n)], span=fn.span))
    fn.body[:0] = head
