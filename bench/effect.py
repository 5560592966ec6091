"""What a pass pipeline does to the corpus, judged by ptxas: the shared measurement.

Every pass benchmark (``bench/redundancy.py``, ``bench/iv_demotion.py`` ...) calls
:func:`measure` with its pipeline and prints :func:`format_table`; run directly it
measures any pipeline::

    python bench/effect.py -p general-optimize [--knob Name=Value] [--skip-large]
                           [--only SUBSTR] [--jobs N] [--no-exec]

For each corpus file (``tests/corpus/manifest.json``) and each measurement target it
can be assembled for (:func:`ptxopt.oracle.targets_for`: sm_75, sm_80, sm_90 at or
above its ``.target``, or its own ``sm_90a``): PTX instructions before/after, and
``ptxas -O3`` SASS instructions, registers and stack frame before/after, per kernel
and in total.  "Before" is the input PTX as given; "after" is ptxopt's output.  Every
output must be accepted by ptxas; runnable kernels are executed before and after in
the interpreter on the manifest's launches and must agree bit for bit.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "corpus"
LARGE_LINES = 10_000

from ptxopt.driver import optimize  # noqa: E402
from ptxopt.oracle import assemble, find_nvdisasm, find_ptxas, targets_for  # noqa: E402
from ptxopt.ptx.ast import Instr, Scope, Stmt  # noqa: E402
from ptxopt.ptx.parser import parse  # noqa: E402


def ptx_instructions(text: str) -> int:
    """Instructions in a PTX text (nested scopes included; labels, declarations and
    directives excluded)."""

    def count(body: list[Stmt]) -> int:
        n = 0
        for st in body:
            if isinstance(st, Instr):
                n += 1
            elif isinstance(st, Scope):
                n += count(st.body)
        return n

    return sum(count(f.body) for f in parse(text).functions if f.body is not None)


@dataclass
class KernelFigures:
    sass_before: int | None
    sass_after: int | None
    regs_before: int
    regs_after: int
    frame_before: int
    frame_after: int


@dataclass
class FileResult:
    path: str
    ptx_before: int = 0
    ptx_after: int = 0
    changed: bool = False
    seconds: float = 0.0  # ptxopt's time on the file (in-process)
    ptxas_seconds: float = 0.0  # ptxas -O3 on the input, first target
    # target -> kernel -> figures
    targets: dict[str, dict[str, KernelFigures]] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)  # targets where ptxas rejected the output
    exec_runs: int = 0
    exec_mismatches: list[str] = field(default_factory=list)
    error: str = ""


def _maker(references: Any, launch: dict[str, Any]) -> Callable[[int], list[Any]]:
    def make(seed: int) -> list[Any]:
        ln = copy.deepcopy(launch)
        for a in ln["args"]:
            if a.get("kind") == "array" and "seed" in a:
                a["seed"] += 1000 * seed
        return list(references.make_args(ln))

    return make


def _references() -> Any:
    spec = importlib.util.spec_from_file_location("corpus_refs_effect", CORPUS / "references.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def measure_file(
    entry: dict[str, Any],
    passes: Sequence[str],
    knobs: dict[str, object],
    execute: bool = True,
    targets: Sequence[str] | None = None,
) -> FileResult:
    """Measure one manifest entry (see the module docstring)."""
    path = CORPUS / entry["path"]
    text = path.read_text()
    res = FileResult(entry["path"])
    try:
        t0 = time.perf_counter()
        out = optimize(text, str(path), list(passes), knobs=knobs).text
        res.seconds = time.perf_counter() - t0
    except Exception as e:  # report, keep measuring the other files
        res.error = f"{type(e).__name__}: {e}"
        return res
    res.ptx_before = ptx_instructions(text)
    res.ptx_after = ptx_instructions(out)
    res.changed = out != optimize(text, str(path), []).text
    for arch in targets or targets_for(entry["target"]):
        a = assemble(text, arch)
        if not res.ptxas_seconds:
            res.ptxas_seconds = a.seconds
        b = assemble(out, arch)
        if not b.ok:
            res.rejected.append(f"{arch}: {b.error[:300]}")
            continue
        if not a.ok:
            continue
        per: dict[str, KernelFigures] = {}
        for name, fa in a.functions.items():
            fb = b.functions.get(name)
            if fb is None:
                continue
            per[name] = KernelFigures(
                fa.sass_instructions,
                fb.sass_instructions,
                fa.registers,
                fb.registers,
                fa.stack_frame,
                fb.stack_frame,
            )
        res.targets[arch] = per
    if execute and entry.get("launches") and res.changed:
        from ptxopt.sim import differential

        refs = _references()
        for launch in entry["launches"]:
            d = differential(
                text,
                out,
                launch["kernel"],
                launch["grid"],
                launch["block"],
                _maker(refs, launch),
                trials=1,
                shared_bytes=launch.get("shared_bytes", 0),
            )
            res.exec_runs += 1
            if not d.ok or d.both_failed:
                res.exec_mismatches.append(f"{launch['kernel']}: {d.message}")
    return res


def corpus_entries(only: str = "", skip_large: bool = False) -> list[dict[str, Any]]:
    files = json.loads((CORPUS / "manifest.json").read_text())["files"]
    return [f for f in files if only in f["path"] and not (skip_large and f["lines"] > LARGE_LINES)]


def measure(
    passes: Sequence[str],
    knobs: dict[str, object] | None = None,
    *,
    only: str = "",
    skip_large: bool = False,
    jobs: int = 2,
    execute: bool = True,
    entries: list[dict[str, Any]] | None = None,
) -> list[FileResult]:
    """Measure ``passes`` on the corpus (files in parallel)."""
    if find_ptxas() is None:
        raise SystemExit("bench/effect.py needs ptxas (PATH or PTXOPT_PTXAS)")
    entries = entries if entries is not None else corpus_entries(only, skip_large)
    knobs = knobs or {}
    if jobs <= 1:
        return [measure_file(e, passes, knobs, execute) for e in entries]
    with ProcessPoolExecutor(jobs) as pool:
        futs = [pool.submit(measure_file, e, passes, knobs, execute) for e in entries]
        return [f.result() for f in futs]


def _sum(vals: list[int | None]) -> int | None:
    return None if any(v is None for v in vals) else sum(v for v in vals if v is not None)


def format_table(results: list[FileResult], title: str = "") -> str:
    """Per file and target: PTX, SASS, registers and frame before -> after; totals
    per target; the list of rejections, mismatches and SASS regressions."""
    lines = [f"== {title} ==" if title else ""]
    hdr = f"{'file':44} {'target':7} {'PTX':>13} {'SASS':>13} {'regs':>11} {'frame':>9}"
    lines.append(hdr)
    totals: dict[str, list[int]] = {}
    worse: list[str] = []
    for r in results:
        if r.error:
            lines.append(f"{r.path:44} ERROR {r.error}")
            continue
        first = True
        for arch, per in r.targets.items():
            sb = _sum([k.sass_before for k in per.values()])
            sa = _sum([k.sass_after for k in per.values()])
            rb = sum(k.regs_before for k in per.values())
            ra = sum(k.regs_after for k in per.values())
            fb = sum(k.frame_before for k in per.values())
            fa = sum(k.frame_after for k in per.values())
            ptx = f"{r.ptx_before}->{r.ptx_after}" if first else ""
            first = False
            sass = f"{sb}->{sa}" if sb is not None else "n/a"
            lines.append(
                f"{r.path:44} {arch:7} {ptx:>13} {sass:>13} {rb:>4}->{ra:<5} {fb:>3}->{fa:<4}"
            )
            t = totals.setdefault(arch, [0, 0, 0, 0, 0, 0])
            for i, v in enumerate((sb or 0, sa or 0, rb, ra, fb, fa)):
                t[i] += v
            for name, k in per.items():
                if (k.sass_after or 0) > (k.sass_before or 0) or k.regs_after > k.regs_before:
                    worse.append(
                        f"{r.path} {arch} {name}: SASS {k.sass_before}->{k.sass_after}, "
                        f"regs {k.regs_before}->{k.regs_after}"
                    )
    lines.append("")
    lines.append("totals per target (SASS instructions, registers, stack frame bytes):")
    for arch, t in sorted(totals.items()):
        lines.append(
            f"  {arch:7} SASS {t[0]}->{t[1]} ({_pct(t[0], t[1])}), "
            f"regs {t[2]}->{t[3]} ({_pct(t[2], t[3])}), frame {t[4]}->{t[5]}"
        )
    pb = sum(r.ptx_before for r in results)
    pa = sum(r.ptx_after for r in results)
    lines.append(f"  PTX instructions {pb}->{pa} ({_pct(pb, pa)})")
    rej = [f"{r.path} {x}" for r in results for x in r.rejected]
    mism = [f"{r.path} {x}" for r in results for x in r.exec_mismatches]
    runs = sum(r.exec_runs for r in results)
    lines.append(
        f"  ptxas rejected: {len(rej)}; executed launches: {runs}, mismatches: {len(mism)}"
    )
    t_opt = sum(r.seconds for r in results)
    t_ptxas = sum(r.ptxas_seconds for r in results)
    if t_ptxas:
        lines.append(
            f"  time: ptxopt {t_opt:.2f} s vs ptxas -O3 {t_ptxas:.2f} s "
            f"(ratio {t_opt / t_ptxas:.3f})"
        )
    lines += [f"  REJECTED {x}" for x in rej] + [f"  MISMATCH {x}" for x in mism]
    if worse:
        lines.append(f"  kernels whose SASS or registers grew ({len(worse)}):")
        lines += [f"    {w}" for w in worse]
    return "\n".join(lines)


def _pct(a: int, b: int) -> str:
    return f"{100.0 * (b - a) / a:+.1f}%" if a else "n/a"


def main(argv: Sequence[str] | None = None) -> int:
    from ptxopt.knobs import parse_assignments

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-p", "--passes", required=True, help="pipeline (as for ptxopt opt -p)")
    ap.add_argument("--knob", action="append", default=[], metavar="Name=Value")
    ap.add_argument("--only", default="", help="only corpus paths containing this")
    ap.add_argument("--skip-large", action="store_true", help=f"skip files > {LARGE_LINES} lines")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-exec", action="store_true", help="skip the interpreter check")
    ap.add_argument("--json", metavar="FILE", help="also write the raw figures as JSON")
    args = ap.parse_args(argv)
    if find_nvdisasm() is None:
        print("note: no nvdisasm (pip install 'ptxopt[oracle]'): SASS counts are n/a")
    results = measure(
        [args.passes],
        parse_assignments(args.knob),
        only=args.only,
        skip_large=args.skip_large,
        jobs=args.jobs,
        execute=not args.no_exec,
    )
    print(format_table(results, f"-p {args.passes}"))
    if args.json:
        from dataclasses import asdict

        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    bad = any(r.error or r.rejected or r.exec_mismatches for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
