"""Human-readable dump of the SSA IR (``--dump-ssa``, ``--dump-before/--dump-after``).

Each block is listed with its labels, predecessors and successors, then its phis and
instructions.  SSA values are written ``%reg.N`` (the PTX register and the value
number); implicit operands are shown after the instruction: the old values a guarded
or read-modify-write definition keeps (``keeps``) and the carry flag (``cc-in`` /
``cc-out``).  The output is deterministic.
"""

from __future__ import annotations

from ptxopt.ir.core import Func, Inst, IRModule, Value
from ptxopt.ir.operands import rebuild
from ptxopt.ptx.ast import Imm, Instr, Reg
from ptxopt.ptx.printer import format_instr


def _v(v: Value | Imm) -> str:
    if isinstance(v, Imm):
        return v.text
    if v.kind == "special":
        return v.var
    if v.kind == "undef":
        return f"{v.var}.undef"
    return f"{v.var}.{v.id}"


def format_inst(inst: Inst) -> str:
    if inst.raw is not None:
        return inst.raw
    info = inst.info
    ast = inst.ast
    assert info is not None
    names: list[str | Imm] = [_v(d) for d in inst.defs]
    names.extend(_v(u) for u in inst.uses)
    it = iter(names)
    ops = list(ast.operands)
    for k in info.defs:
        if k < len(ops):
            ops[k] = rebuild(ops[k], it)
    for k in info.uses:
        if k < len(ops) and k not in info.defs:
            ops[k] = rebuild(ops[k], it)
    pred = Reg(_v(inst.pred)) if inst.pred is not None else None
    text = format_instr(Instr(ast.opcode, ast.mods, ops, pred, ast.pred_neg)).replace(" \t", " ")
    extra = [f"line {ast.span.line}"] if ast.span is not None else []
    if inst.olds and any(o is not None for o in inst.olds):
        extra.append("keeps " + ", ".join(_v(o) for o in inst.olds if o is not None))
    if inst.carry_in is not None:
        extra.append(f"cc-in {_v(inst.carry_in)}")
    if inst.carry_out is not None:
        extra.append(f"cc-out {_v(inst.carry_out)}")
    if extra:
        text += "    // " + "; ".join(extra)
    return text


def dump_function(func: Func) -> str:
    out = [f"function {func.name} ({len(func.blocks)} blocks)"]
    if func.params:
        out.append("  params: " + ", ".join(_v(p) for p in func.params))
    for b in func.blocks:
        labels = " ".join(b.labels)
        preds = " ".join(f"bb{p.index}" for p in b.preds) or "-"
        succs = " ".join(f"bb{s.index}" for s in b.succs) or "-"
        head = f"bb{b.index}" + (f" [{labels}]" if labels else "")
        out.append(f"{head}:    preds: {preds}    succs: {succs}")
        for phi in b.phis:
            args = ", ".join(
                f"[{_v(v)}, bb{p.index}]" for v, p in zip(phi.incoming, b.preds, strict=True)
            )
            out.append(f"    {_v(phi.result)} = phi {args}")
        for inst in b.insts:
            out.append("    " + format_inst(inst))
    return "\n".join(out)


def dump_module(mod: IRModule) -> str:
    return "\n\n".join(dump_function(f) for f in mod.funcs) + "\n"
