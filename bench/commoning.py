"""What the commoning passes (gvn-cse, reassociate, late-commoning) do to the corpus.

Usage (from the repository root)::

    python bench/commoning.py [--config NAME ...] [--jobs N] [--skip-large] [--no-exec]
                              [--timing-only]

For each configuration (a pipeline plus knobs, :data:`CONFIGS`) the shared
measurement of :mod:`bench.effect` runs on every corpus file: PTX instructions
before/after, ``ptxas -O3`` SASS instructions, registers and frame before/after for
each target the file assembles for (sm_75/sm_80/sm_90), ptxas acceptance of every
output, and bit-identical execution of every runnable kernel.  A summary line per
configuration puts the PTX reduction next to the SASS change: where PTX shrinks and
SASS does not, ptxas already did the same work.

Then each pass is timed on the largest corpus file (its time in the pipeline, parse and
print excluded) against ``ptxas -O3`` on the same file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from effect import CORPUS, FileResult, corpus_entries, format_table, measure  # noqa: E402

from ptxopt.driver import optimize  # noqa: E402
from ptxopt.oracle import assemble  # noqa: E402

#: name -> (pipeline, knobs)
CONFIGS: dict[str, tuple[list[str], dict[str, object]]] = {
    # as ptxas dispatches it: on for sm_75 and sm_90 inputs, a no-op on sm_80 ones
    "gvn-cse": (["gvn-cse"], {}),
    # forced on every target, widest mode
    "gvn-cse-forced-mode6": (["gvn-cse"], {"EnableGvnCse": 1, "EnableGvnCseMode": 6}),
    "reassociate": (["reassociate"], {}),
    "late-commoning": (["late-commoning"], {"ForceLateCommoning": True}),
    "all-three": (
        ["gvn-cse", "reassociate", "late-commoning"],
        {"EnableGvnCse": 1, "ForceLateCommoning": True},
    ),
}


def summary(name: str, results: list[FileResult]) -> str:
    pb = sum(r.ptx_before for r in results)
    pa = sum(r.ptx_after for r in results)
    parts = [f"{name:22} PTX {pb}->{pa} ({_pct(pb, pa)})"]
    per: dict[str, list[int]] = {}
    for r in results:
        for arch, ks in r.targets.items():
            t = per.setdefault(arch, [0, 0, 0, 0])
            for k in ks.values():
                t[0] += k.sass_before or 0
                t[1] += k.sass_after or 0
                t[2] += k.regs_before
                t[3] += k.regs_after
    for arch, t in sorted(per.items()):
        parts.append(f"{arch} SASS {_pct(t[0], t[1])} regs {_pct(t[2], t[3])}")
    rej = sum(len(r.rejected) for r in results)
    mism = sum(len(r.exec_mismatches) for r in results)
    runs = sum(r.exec_runs for r in results)
    changed = sum(1 for r in results if r.changed)
    parts.append(f"files changed {changed}, rejected {rej}, runs {runs}, mismatches {mism}")
    return "; ".join(parts)


def _pct(a: int, b: int) -> str:
    return f"{100.0 * (b - a) / a:+.2f}%" if a else "n/a"


def timing() -> str:
    """Each pass's own time on the largest corpus file vs ptxas -O3 on it (one run of
    the three passes in a row; parse, lift and print are not counted)."""
    files = json.loads((CORPUS / "manifest.json").read_text())["files"]
    big = max(files, key=lambda e: e["lines"])
    text = (CORPUS / big["path"]).read_text()
    ptxas = assemble(text, big["target"], disassemble=False).seconds
    knobs: dict[str, object] = {
        "EnableGvnCse": 1,
        "EnableGvnCseMode": 6,
        "ForceLateCommoning": True,
    }
    passes = ["gvn-cse", "reassociate", "late-commoning"]
    res = optimize(text, big["path"], passes, knobs=knobs)
    times = dict(res.report.times)
    lines = [f"timing on {big['path']} ({big['lines']} lines), ptxas -O3 {ptxas:.2f} s:"]
    for name in passes:
        t = times.get(name, 0.0)
        lines.append(f"  {name:15} {t:.3f} s  ({t / ptxas:.3f} x ptxas)")
    for label, t in res.report.times:
        if label not in passes:
            lines.append(f"  ({label} {t:.2f} s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", action="append", choices=sorted(CONFIGS))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--no-exec", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--timing-only", action="store_true")
    ap.add_argument("--json", metavar="FILE", help="write the summaries as JSON")
    args = ap.parse_args(argv)
    bad = False
    sums: dict[str, str] = {}
    if not args.timing_only:
        entries = corpus_entries(args.only, args.skip_large)
        for name in args.config or list(CONFIGS):
            passes, knobs = CONFIGS[name]
            results = measure(
                [",".join(passes)],
                knobs,
                jobs=args.jobs,
                execute=not args.no_exec,
                entries=entries,
            )
            print(format_table(results, f"{name}: -p {','.join(passes)} {knobs or ''}"))
            print()
            sums[name] = summary(name, results)
            bad |= any(r.error or r.rejected or r.exec_mismatches for r in results)
        print("== summary ==")
        for s in sums.values():
            print(s)
    print(timing())
    if args.json:
        Path(args.json).write_text(json.dumps(sums, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
