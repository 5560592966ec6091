"""``ptxopt analyze IN --regfiles [--arch sm_XX] [--json]`` and ``--emit ori``.

One model (:func:`regfiles_report`, plain data) feeds both the JSON and the text, so
they cannot disagree.  Per function: every register web's file (R, P, UR, UP) with the
PTX lines (1-based) of its writes, the R2UR/UR2R bridges, the predicted UR/UP counts
and the phase-86 keep-alive markers; ``--emit ori`` prints the function listing with
each instruction's SASS class and the file of what it writes.
"""

from __future__ import annotations

from typing import Any

from ptxopt.ir.core import IRModule
from ptxopt.oracle import sm_number
from ptxopt.ori.conv_alloc import plan_conv_alloc
from ptxopt.ori.ur_alloc import NOT_WRITTEN, VARYING, FuncPlan, plan_function, with_callees
from ptxopt.ori.view import sass_class

__all__ = ["module_plans", "regfiles_report", "format_regfiles", "format_ori"]


def module_plans(
    mod: IRModule,
    md: Any,
    arch: str,
    *,
    max_attempts: int = 5,
    tolerate_bridges: bool = False,
    ur_lines: set[int] | None = None,
) -> list[FuncPlan]:
    sm = sm_number(arch)
    debug = "debug" in mod.ast.target
    plans = [
        plan_function(
            f,
            md.funcs[f.name],
            sm,
            max_attempts=max_attempts,
            debug=debug,
            tolerate_bridges=tolerate_bridges,
            ur_lines=ur_lines,
            module_vars=mod.ast.items,
        )
        for f in mod.funcs
    ]
    with_callees(mod.funcs, plans)
    return plans


def regfiles_report(mod: IRModule, md: Any, arch: str, *, max_attempts: int = 5) -> dict[str, Any]:
    plans = module_plans(mod, md, arch, max_attempts=max_attempts)
    funcs = []
    for f, p in zip(mod.funcs, plans, strict=True):
        writes = [(line, w.reg, w.file, w.cls) for w in p.webs.values() for line in w.lines]
        writes.sort()  # (line, register) is unique: one row per write
        rows = [{"line": a, "reg": r, "file": fl, "class": c} for a, r, fl, c in writes]
        conv = plan_conv_alloc(f, p)
        skip = (VARYING, NOT_WRITTEN, p.default_why)
        kept = [
            {"line": w.lines[0] if w.lines else 0, "reg": k, "file": w.file, "why": w.why}
            for k, w in p.webs.items()
            if w.file in ("R", "P") and w.why not in skip
        ]
        kept.sort(key=lambda r: (r["line"], r["reg"]))
        funcs.append(
            {
                "name": f.name,
                "kind": f.ast.kind,
                "regfiles": rows,
                "bridges": [{"kind": b.kind, "reg": b.reg, "line": b.line} for b in p.bridges],
                "ur_count": p.ur_count,
                "up_count": p.up_count,
                "converted": p.converted,
                "attempts": p.attempts,
                "budget_demoted": p.budget_demoted,
                "conv_alloc": [{"reg": c.reg, "line": c.line} for c in conv.markers],
                "diagnostics": p.diagnostics + conv.diagnostics,
                "kept_in_r": {k: w.why for k, w in sorted(p.webs.items()) if w.why},
                # the uniform webs kept per-thread, by their first write, and for those
                # the cost sent to R the bridges that keeping them in UR would take
                "uniform_kept_in_r": kept,
                "would_need": {
                    k: [{"kind": b.kind, "reg": b.reg, "line": b.line} for b in p.would_need(k)]
                    for k in sorted(p.needs)
                },
                "default_why": p.default_why,
            }
        )
    return {"arch": arch, "functions": funcs}


def format_regfiles(rep: dict[str, Any]) -> str:
    out = [f"uniform register model ({rep['arch']}, ptxas phases 74/86)"]
    for f in rep["functions"]:
        ur = [r for r in f["regfiles"] if r["file"] in ("UR", "UP")]
        out.append(
            f"\n{f['kind']} {f['name']}: {len({r['reg'] for r in ur})} webs in UR/UP, predicted "
            f"{f['ur_count']} UR, {f['up_count']} UP, {len(f['bridges'])} bridges, "
            f"{f['attempts']} attempts"
        )
        if f["default_why"]:
            out.append(f"  every value per-thread: {f['default_why']}")
        for r in ur:
            out.append(f"  line {r['line']:>6}  {r['reg']:<10} {r['file']:<3} {r['class']}")
        for r in f["uniform_kept_in_r"]:
            need = f["would_need"].get(r["reg"])
            tail = ""
            if need:
                tail = ": " + ", ".join(f"{b['kind']} {b['reg']} at line {b['line']}" for b in need)
            out.append(
                f"  line {r['line']:>6}  {r['reg']:<10} {r['file']:<3} kept: {r['why']}{tail}"
            )
        for b in f["bridges"]:
            out.append(f"  line {b['line']:>6}  {b['kind']} {b['reg']}")
        for c in f["conv_alloc"]:
            out.append(f"  line {c['line']:>6}  CONV.ALLOC {c['reg']}")
        for d in f["diagnostics"]:
            out.append(f"  diagnostic: {d}")
    return "\n".join(out) + "\n"


def format_ori(mod: IRModule, md: Any, arch: str) -> str:
    """The annotated listing: PTX line, SASS class (uniform mnemonic when converted),
    register files of the writes, PTX text."""
    from ptxopt.ori.capability import uniform_form

    sm = sm_number(arch)
    plans = module_plans(mod, md, arch)
    out: list[str] = []
    for f, p in zip(mod.funcs, plans, strict=True):
        out.append(f"// ori view of {f.name} ({arch}): {p.ur_count} UR, {p.up_count} UP")
        for b in f.blocks:
            out.append(f"{(b.labels or ['bb' + str(b.index)])[0]}:")
            for ins in b.insts:
                c = sass_class(ins)
                files = [p.webs[d.var].file for d in ins.defs if d.var in p.webs]
                uni = any(x in ("UR", "UP") for x in files)
                mn = (uniform_form(c, sm) or c) if uni else c
                dst = ",".join(f"{d.var}:{fl}" for d, fl in zip(ins.defs, files, strict=False))
                line = ins.ast.span.line if ins.ast.span is not None else 0
                out.append(f"  {line:>6}  {mn:<7} {dst:<24} {ins.ast.name}")
        out.append("")
    return "\n".join(out)
