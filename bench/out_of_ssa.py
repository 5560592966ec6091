"""Leaving SSA, measured: CSSA against the legacy destruction and the naive baseline.

Usage (from the repository root)::

    python bench/out_of_ssa.py [--no-fold] [--only SUBSTR] [--skip-large] [--no-ptxas]
    python bench/out_of_ssa.py --pipeline default [--variants input,old,cssa]
    python bench/out_of_ssa.py --fuzz N [--seed S]

For each corpus file the program is lifted, its register-to-register ``mov``s are
folded into their uses (a local copy propagation, here only: it creates the
overlapping live ranges, swaps and lost copies that leaving SSA must handle; without
it, with ``-p none``, every variant finds the input's own registers), and SSA is left
in each way:

* ``input``: the input PTX as given;
* ``old``: the legacy destruction (``--knob do-cssa=0``);
* ``naive``: one copy per phi operand and result (``cssa-coalesce=0``);
* ``simt``: CSSA coalescing under the SIMT condition (``cssa-coalesce=1``);
* ``cssa``: CSSA, the default (``cssa-coalesce=2``);
* ``movs``: CSSA coalescing the program's own moves too (``cssa-coalesce=3``).

Columns: register-to-register ``mov`` instructions left, PTX instructions, and
``ptxas -O3`` registers and SASS instructions (summed over the kernels, for the
file's own target).  Every output is assembled; a rejection is reported.  The
timing line compares leaving SSA with the whole round trip on the largest file.

``--pipeline P`` runs the pass pipeline ``P`` (``default``: what ``ptxopt opt -O``
runs, whose copy propagation creates the interference) instead of the local folding.
``--variants`` keeps only the listed columns.

``--fuzz N`` runs N random kernels (``fuzz/kernelgen``) with the same folding through
every variant and compares each with the original in the interpreter, bit for bit.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.effect import corpus_entries, ptx_instructions  # noqa: E402
from ptxopt.ir.core import Func, Inst, IRModule, Value  # noqa: E402
from ptxopt.ir.cssa import CssaOptions, destructor_for  # noqa: E402
from ptxopt.ir.lift import lift_module  # noqa: E402
from ptxopt.ir.lower import print_ir_module  # noqa: E402
from ptxopt.oracle import assemble  # noqa: E402
from ptxopt.ptx.ast import Instr, Reg, Scope, Stmt  # noqa: E402
from ptxopt.ptx.parser import deep_recursion, no_gc, parse  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"

VARIANTS: dict[str, CssaOptions | None] = {
    "input": None,
    "old": CssaOptions(enabled=False),
    "naive": CssaOptions(level=0),
    "simt": CssaOptions(level=1),
    "cssa": CssaOptions(level=2),
    "movs": CssaOptions(level=3),
}


def fold_copies(fn: Func) -> int:
    """Forward every unguarded same-type register ``mov`` to its readers and drop it."""
    repl: dict[int, Value] = {}

    def res(v: Value) -> Value:
        while v.id in repl:
            v = repl[v.id]
        return v

    n = 0
    for b in fn.blocks:
        keep: list[Inst] = []
        for inst in b.insts:
            src = inst.uses[0] if len(inst.uses) == 1 else None
            if (
                inst.opcode == "mov"
                and inst.ast.pred is None
                and len(inst.defs) == 1
                and inst.olds is None
                and isinstance(src, Value)
                and src.kind in ("inst", "phi")
                and src.type == inst.defs[0].type
                and isinstance(inst.ast.operands[1], Reg)
            ):
                repl[inst.defs[0].id] = src
                n += 1
                continue
            keep.append(inst)
        b.insts = keep
    if not repl:
        return 0
    for b in fn.blocks:
        for phi in b.phis:
            phi.incoming = [res(v) for v in phi.incoming]
        for inst in b.insts:
            inst.uses = [res(u) if isinstance(u, Value) else u for u in inst.uses]
            if inst.pred is not None:
                inst.pred = res(inst.pred)
            if inst.olds is not None:
                inst.olds = [res(o) if o is not None else None for o in inst.olds]
    return n


def reg_movs(text: str) -> int:
    """``mov`` instructions whose source and destination are both registers."""

    def count(body: list[Stmt]) -> int:
        n = 0
        for st in body:
            if isinstance(st, Instr):
                ops = st.operands
                if (
                    st.opcode == "mov"
                    and len(ops) == 2
                    and isinstance(ops[0], Reg)
                    and isinstance(ops[1], Reg)
                    and "." not in ops[1].name[1:]  # %tid.x and friends are not registers
                ):
                    n += 1
            elif isinstance(st, Scope):
                n += count(st.body)
        return n

    return sum(count(f.body) for f in parse(text).functions if f.body is not None)


def lower(
    text: str, name: str, opts: CssaOptions | None, fold: bool, pipeline: str | None = None
) -> tuple[str, float]:
    """The variant's output and the seconds spent leaving SSA and printing."""
    if opts is None:
        return text, 0.0
    with no_gc(), deep_recursion():
        mod: IRModule = lift_module(parse(text, name))
        if pipeline is not None:
            from ptxopt.pipeline import parse_pipeline, run_pipeline

            run_pipeline(mod, parse_pipeline(pipeline))
        elif fold:
            for fn in mod.funcs:
                fold_copies(fn)
        t0 = time.perf_counter()
        out = print_ir_module(mod, destructor_for(mod, opts))
        return out, time.perf_counter() - t0


def ptxas_figures(text: str, arch: str) -> tuple[int, int, str]:
    a = assemble(text, arch)
    if not a.ok:
        return -1, -1, a.error[:200]
    regs = sum(f.registers for f in a.functions.values())
    sass = sum(f.sass_instructions or 0 for f in a.functions.values())
    return regs, sass, ""


def measure(
    only: str, skip_large: bool, fold: bool, use_ptxas: bool, pipeline: str | None = None
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for entry in corpus_entries(only, skip_large):
        path = CORPUS / entry["path"]
        text = path.read_text()
        arch = entry["target"]
        row: dict[str, object] = {"path": entry["path"], "arch": arch}
        for vname, opts in VARIANTS.items():
            out, secs = lower(text, str(path), opts, fold, pipeline)
            fig: dict[str, object] = {
                "movs": reg_movs(out),
                "ptx": ptx_instructions(out),
                "seconds": secs,
            }
            if use_ptxas:
                regs, sass, err = ptxas_figures(out, arch)
                fig.update(regs=regs, sass=sass, error=err)
            row[vname] = fig
        rows.append(row)
        print(_line(row, use_ptxas), flush=True)
    return rows


def _line(row: dict[str, object], use_ptxas: bool) -> str:
    parts = [f"{str(row['path']):52s}"]
    for v in VARIANTS:
        f = row[v]
        assert isinstance(f, dict)
        cell = f"{f['movs']:>5}/{f['ptx']:<6}"
        if use_ptxas:
            cell += f" {f['regs']:>4}r {f['sass']:>6}s"
            if f.get("error"):
                cell += " REJECTED"
        parts.append(cell)
    return " | ".join(parts)


def summary(rows: list[dict[str, object]], use_ptxas: bool) -> str:
    out = []
    keys = ["movs", "ptx"] + (["regs", "sass"] if use_ptxas else [])
    for v in VARIANTS:
        tot = {k: sum(int(r[v][k]) for r in rows) for k in keys}  # type: ignore[index]
        out.append(f"{v:6s} " + "  ".join(f"{k}={tot[k]}" for k in keys))
    for v in [v for v in VARIANTS if v != "input"]:
        worse_movs = [
            r["path"]
            for r in rows
            if r[v]["movs"] > r["input"]["movs"]  # type: ignore[index,operator]
        ]
        line = f"{v:6s} files with more reg-reg movs than the input: {len(worse_movs)}"
        if use_ptxas:
            worse_regs = [
                r["path"]
                for r in rows
                if r[v]["regs"] > r["input"]["regs"]  # type: ignore[index,operator]
            ]
            line += f"; with more ptxas registers: {len(worse_regs)}"
        out.append(line)
    return "\n".join(out)


def timing(only: str = "") -> str:
    """Leaving SSA (CSSA, default level) against the whole round trip on the largest
    corpus file."""
    from ptxopt.driver import optimize

    entries = corpus_entries(only)
    big = max(entries, key=lambda e: (CORPUS / e["path"]).stat().st_size)
    path = CORPUS / big["path"]
    text = path.read_text()
    t0 = time.perf_counter()
    res = optimize(text, str(path), [], knobs={"do-cssa": True})
    total = time.perf_counter() - t0
    t_lower = dict(res.report.times).get("lower (out of SSA + print)", 0.0)
    old = optimize(text, str(path), [], knobs={"do-cssa": False})
    t_old = dict(old.report.times).get("lower (out of SSA + print)", 0.0)
    lines = text.count("\n")
    return (
        f"{big['path']} ({lines} lines): round trip {total:.2f}s, leaving SSA + printing "
        f"{t_lower:.2f}s with CSSA ({100 * t_lower / total:.1f}%), {t_old:.2f}s with the "
        f"legacy destruction; CSSA's own share {100 * (t_lower - t_old) / total:.1f}%"
    )


def fuzz(count: int, seed: int, log: Callable[[str], None] = print) -> tuple[int, int]:
    """Random kernels, copies folded, every variant against the original."""
    from fuzz.kernelgen import layout_of, make_args, shapes_for
    from fuzz.kernels import KERNEL, generate
    from ptxopt.sim import differential

    runs = mismatches = 0
    for s in range(seed, seed + count):
        ptx = generate(s)
        layout = layout_of(ptx)

        def make(
            trial: int, grid: object, block: object, s: int = s, layout: object = layout
        ) -> list[object]:
            return list(make_args(layout, s * 7919 + trial, grid, block))  # type: ignore[arg-type]

        for vname, opts in VARIANTS.items():
            if opts is None:
                continue
            out, _ = lower(ptx, "<fuzz>", opts, True)
            res = differential(ptx, out, KERNEL, shapes_for(s), None, make, trials=1)
            if res.both_failed:
                break
            runs += 1
            if not res.ok:
                mismatches += 1
                log(f"seed {s} {vname}: {res.message[:300]}")
        if (s - seed + 1) % 100 == 0:
            log(f"{s - seed + 1} kernels, {runs} runs, {mismatches} mismatches")
    return runs, mismatches


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--no-fold", action="store_true")
    ap.add_argument("--no-ptxas", action="store_true")
    ap.add_argument("--fuzz", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pipeline", default=None, help="pass pipeline instead of the folding")
    ap.add_argument("--variants", default="", help="comma list of columns to keep")
    args = ap.parse_args(argv)
    if args.variants:
        keep = args.variants.split(",")
        unknown = [v for v in keep if v not in VARIANTS]
        if unknown:
            ap.error(f"unknown variant {unknown[0]} (one of {', '.join(VARIANTS)})")
        for v in list(VARIANTS):
            if v not in keep:
                del VARIANTS[v]
    if args.fuzz:
        runs, bad = fuzz(args.fuzz, args.seed)
        print(f"fuzz: {args.fuzz} kernels, {runs} runs, {bad} mismatches")
        return 1 if bad else 0
    print(
        "cells: reg-reg movs / PTX instrs [ptxas regs, SASS instrs]; columns: "
        + ", ".join(VARIANTS)
    )
    how = f"pipeline {args.pipeline}" if args.pipeline else "copies folded"
    print(f"# {how}; file's own target")
    rows = measure(args.only, args.skip_large, not args.no_fold, not args.no_ptxas, args.pipeline)
    print(summary(rows, not args.no_ptxas))
    print(timing(args.only))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
