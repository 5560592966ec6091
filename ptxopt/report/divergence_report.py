"""The divergence report: per function, every PTX register and conditional branch,
uniform or varying, with the chain back to the divergence root (``ptxopt analyze``).

JSON schema (stable; fields are only ever added)::

    {"functions": [{"name": str, "kind": ".entry" | ".func",
                    "registers": {"%r1": "uniform" | "varying", ...},
                    "ssa": {"%r1": [{"id": int, "uniform": bool, "why": str}, ...], ...},
                    "renamed": {"%r1_1": "%r1", ...},
                    "declared_in": {"%r1_1": int, ...},
                    "branches": [{"line": int, "target": str, "uniform": bool,
                                  "why": str}, ...],
                    "varying_addresses": [{"line": int, "instruction": str}, ...],
                    "summary": {"registers": int, "uniform_registers": int,
                                "values": int, "uniform_values": int,
                                "branches": int, "uniform_branches": int,
                                "divergent_branches": int}}, ...],
     "stats": {"rounds": int, "restarts": int, "budget_hit": bool,
               "irreducible": [function names]}}

A PTX register is ``"uniform"`` only when every SSA value it maps to is uniform.
``renamed`` maps a register declared in a nested ``{ }`` block whose spelling was
taken to its source spelling, and ``declared_in`` gives the line of that block
(scope resolution, :mod:`ptxopt.ir.scopes`).
"""

from __future__ import annotations

from typing import Any

from ptxopt.analysis.divergence import (
    Divergence,
    ModuleDivergence,
    branch_condition,
    describe,
    is_conditional_branch,
    register_names,
)
from ptxopt.ir.core import Func, Inst, IRModule, Value
from ptxopt.ptx.ast import Sym


def _line(inst: Inst) -> int:
    span = inst.ast.span
    return span.line if span is not None else 0


def _target(inst: Inst) -> str:
    ops = inst.ast.operands
    if ops and isinstance(ops[-1], Sym):
        return ops[-1].name
    return str(ops[-1]) if ops else ""


def _why(func: Func, res: Divergence, v: Value) -> str:
    r = res.reason(v)
    return "" if r is None else describe(func, r)


def function_report(func: Func, res: Divergence) -> dict[str, Any]:
    regs: dict[str, str] = {}
    ssa: dict[str, list[dict[str, Any]]] = {}
    renamed: dict[str, str] = {}
    declared_in: dict[str, int] = {}
    nvals = 0
    nuni = 0
    for name, vals in register_names(func).items():
        uni = True
        entries = []
        for v in vals:
            u = not res.is_varying(v)
            nvals += 1
            nuni += u
            uni = uni and u
            entries.append({"id": v.id, "uniform": u, "why": "" if u else _why(func, res, v)})
        regs[name] = "uniform" if uni else "varying"
        ssa[name] = entries
        origin = func.origins.get(name)
        if origin is not None and origin.spelling != name:
            renamed[name] = origin.spelling
            span = func.scopes[origin.block].span
            declared_in[name] = span.line if span is not None else 0
    branches = []
    for b in func.blocks:
        t = b.terminator
        if not is_conditional_branch(t):
            continue
        assert t is not None
        div = res.branch_divergent(b.index)
        why = ""
        if div:
            c = branch_condition(t)
            why = f"condition {c!r} is varying" if c is not None else "divergent"
        branches.append({"line": _line(t), "target": _target(t), "uniform": not div, "why": why})
    addrs = []
    for b in func.blocks:
        for inst in b.insts:
            if res.address_varying(inst):
                addrs.append({"line": _line(inst), "instruction": inst.ast.name})
    nb = len(branches)
    nub = sum(1 for x in branches if x["uniform"])
    return {
        "name": func.name,
        "kind": func.ast.kind,
        "registers": regs,
        "ssa": ssa,
        "renamed": renamed,
        "declared_in": declared_in,
        "branches": branches,
        "varying_addresses": addrs,
        "summary": {
            "registers": len(regs),
            "uniform_registers": sum(1 for s in regs.values() if s == "uniform"),
            "values": nvals,
            "uniform_values": nuni,
            "branches": nb,
            "uniform_branches": nub,
            "divergent_branches": nb - nub,
        },
    }


def module_report(mod: IRModule, md: ModuleDivergence) -> dict[str, Any]:
    funcs = [function_report(f, md.funcs[f.name]) for f in mod.funcs]
    return {
        "functions": funcs,
        "stats": {
            "rounds": md.stats.rounds,
            "restarts": md.stats.restarts,
            "budget_hit": md.stats.budget_hit,
            "irreducible": [f.name for f in mod.funcs if md.funcs[f.name].stats.irreducible],
        },
    }


def format_text(report: dict[str, Any]) -> str:
    """A terminal rendering of :func:`module_report`'s result."""
    lines: list[str] = []
    for fr in report["functions"]:
        s = fr["summary"]
        lines.append(
            f"{fr['kind']} {fr['name']}: {s['uniform_registers']}/{s['registers']} registers "
            f"uniform, {s['uniform_branches']}/{s['branches']} conditional branches uniform"
        )
        for name, state in fr["registers"].items():
            note = ""
            if name in fr["renamed"]:
                line = fr["declared_in"][name]
                note = f"  ({fr['renamed'][name]} of the block at line {line})"
            if state == "uniform":
                lines.append(f"  {name:<12} uniform{note}")
                continue
            why = next((e["why"] for e in fr["ssa"][name] if not e["uniform"]), "")
            lines.append(f"  {name:<12} varying   {why}{note}")
        for br in fr["branches"]:
            kind = "uniform" if br["uniform"] else "divergent"
            extra = f"  {br['why']}" if br["why"] else ""
            lines.append(f"  branch line {br['line']:<6} -> {br['target']:<16} {kind}{extra}")
        for a in fr["varying_addresses"]:
            lines.append(f"  varying address line {a['line']:<6} {a['instruction']}")
    st = report["stats"]
    lines.append(
        f"rounds {st['rounds']}, restarts {st['restarts']}"
        + (", BUDGET HIT" if st["budget_hit"] else "")
        + (
            f", irreducible control flow in {', '.join(st['irreducible'])}"
            if st["irreducible"]
            else ""
        )
    )
    return "\n".join(lines) + "\n"


def explain(mod: IRModule, md: ModuleDivergence, reg: str) -> str:
    """The root-cause chain of every SSA version of register ``reg`` (any function;
    ``func:%r1`` restricts to one)."""
    fname = None
    if ":" in reg:
        fname, reg = reg.split(":", 1)
    out: list[str] = []
    for f in mod.funcs:
        if fname is not None and f.name != fname:
            continue
        res = md.funcs[f.name]
        vals = register_names(f).get(reg)
        if not vals:
            continue
        out.append(f"{f.name}: {reg}")
        for v in vals:
            chain = res.explain(v)
            out.append(f"  {v!r}: " + ("uniform" if not res.is_varying(v) else "varying"))
            if res.is_varying(v):
                for val, why in chain:
                    out.append(f"    {val!r:<14} {why}")
    if not out:
        out.append(f"no register {reg} in any function")
    return "\n".join(out) + "\n"
