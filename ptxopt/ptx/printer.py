"""Deterministic PTX printer for the AST.

The output is canonical: one statement per line, a tab per nesting level,
operands separated by ``", "``.  Printing is a fixed point:
``print(parse(print(parse(x)))) == print(parse(x))``.
"""

from __future__ import annotations

from ptxopt.ptx.ast import (
    BranchTargets,
    DebugLoc,
    Directive,
    Function,
    Imm,
    Instr,
    Label,
    Module,
    Operand,
    Param,
    RawStmt,
    Reg,
    RegDecl,
    Scope,
    Stmt,
    Sym,
    VarDecl,
)


def format_instr(ins: Instr) -> str:
    guard = ""
    if ins.pred is not None:
        guard = f"@!{ins.pred.name} " if ins.pred_neg else f"@{ins.pred.name} "
    name = ins.opcode + "".join(ins.mods)
    if not ins.operands:
        return f"{guard}{name};"
    ops = ", ".join([o.name if type(o) is Reg else _operand(o) for o in ins.operands])  # type: ignore[union-attr]
    return f"{guard}{name} \t{ops};"


def _operand(o: Operand) -> str:
    """``str(o)``; the two kinds most common after registers read directly (an
    address or a vector: its own ``__str__``, compiled with it in ``nodes``)."""
    c = type(o)
    if c is Imm:
        return o.text  # type: ignore[union-attr]
    if c is Sym:
        return o.name  # type: ignore[union-attr]
    return str(o)


def format_var(v: VarDecl) -> str:
    parts = list(v.linkage)
    parts.append(v.space)
    parts.extend(a for a in v.attrs if not a.startswith(".attribute"))
    if v.align is not None:
        parts.append(f".align {v.align}")
    if v.vector:
        parts.append(v.vector)
    parts.extend(a for a in v.attrs if a.startswith(".attribute"))
    if v.type:
        parts.append(v.type)
    dims = "".join("[]" if d is None else f"[{d}]" for d in v.dims)
    text = " ".join(parts) + f" {v.name}{dims}"
    if v.init is not None:
        text += f" = {v.init}"
    return text + ";"


def format_reg_decl(d: RegDecl) -> str:
    parts = [".reg"]
    if d.align is not None:
        parts.append(f".align {d.align}")
    if d.vector:
        parts.append(d.vector)
    parts.append(d.type)
    names = ", ".join(n if c is None else f"{n}<{c}>" for n, c in d.names)
    return " ".join(parts) + f" {names};"


def format_param(p: Param) -> str:
    parts = [p.space]
    if p.align is not None:
        parts.append(f".align {p.align}")
    if p.type:
        parts.append(p.type)
    parts.extend(p.attrs)
    dims = "".join("[]" if d is None else f"[{d}]" for d in p.dims)
    return " ".join(parts) + f" {p.name}{dims}"


def format_loc(loc: DebugLoc) -> str:
    text = f".loc\t{loc.file} {loc.line} {loc.col}"
    if loc.extra:
        text += f", {loc.extra}"
    return text


def _body_lines(body: list[Stmt], depth: int, out: list[str]) -> None:
    ind = "\t" * depth
    for st in body:
        t = type(st)
        if t is Instr:
            out.append(ind + format_instr(st))  # type: ignore[arg-type]
        elif t is Label:
            out.append(f"{st.name}:")  # type: ignore[union-attr]
        elif t is RegDecl:
            out.append(ind + format_reg_decl(st))  # type: ignore[arg-type]
        elif t is DebugLoc:
            out.append(ind + format_loc(st))  # type: ignore[arg-type]
        elif t is VarDecl:
            out.append(ind + format_var(st))  # type: ignore[arg-type]
        elif t is Scope:
            out.append(ind + "{")
            _body_lines(st.body, depth + 1, out)  # type: ignore[union-attr]
            out.append(ind + "}")
        elif t is BranchTargets:
            labels = ", ".join(st.labels)  # type: ignore[union-attr]
            out.append(f"{ind}{st.name}: .branchtargets {labels};")  # type: ignore[union-attr]
        elif t is RawStmt:
            out.append(ind + st.text)  # type: ignore[union-attr]
        else:  # pragma: no cover - the AST has no other statement kinds
            raise TypeError(f"unknown statement {st!r}")


def format_signature(fn: Function) -> list[str]:
    head = " ".join([*fn.linkage, fn.kind])
    if fn.rets:
        head += " (" + ", ".join(format_param(p) for p in fn.rets) + ")"
    head += f" {fn.name}"
    lines = [head]
    if fn.params or fn.kind == ".entry":
        if fn.params:
            lines[-1] += "("
            for k, p in enumerate(fn.params):
                sep = "," if k + 1 < len(fn.params) else ""
                lines.append(f"\t{format_param(p)}{sep}")
            lines.append(")")
        else:
            lines[-1] += "()"
    for a in fn.attrs:
        lines.append(a)
    for d in fn.directives:
        lines.append(d)
    return lines


def format_function(fn: Function, body_lines: list[str] | None = None) -> str:
    """Print a function; ``body_lines`` overrides the body (used by the lowering)."""
    lines = format_signature(fn)
    if fn.body is None and body_lines is None:
        lines[-1] += ";"
        return "\n".join(lines)
    lines.append("{")
    if body_lines is None:
        assert fn.body is not None
        _body_lines(fn.body, 1, lines)
    else:
        lines.extend(body_lines)
    lines.append("}")
    return "\n".join(lines)


def format_body(body: list[Stmt], depth: int = 1) -> list[str]:
    out: list[str] = []
    _body_lines(body, depth, out)
    return out


def print_module(mod: Module, bodies: dict[int, list[str]] | None = None) -> str:
    """Print ``mod``.  ``bodies`` maps ``id(function)`` to replacement body lines."""
    out: list[str] = []
    for item in mod.items:
        if isinstance(item, Directive):
            out.append(item.text)
            if item.name == ".address_size":
                out.append("")
        elif isinstance(item, VarDecl):
            out.append(format_var(item))
        elif isinstance(item, Function):
            if out and out[-1] != "":
                out.append("")
            body = bodies.get(id(item)) if bodies else None
            out.append(format_function(item, body))
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
