"""The corpus table (docs/corpus.md): what every corpus file is and how ptxopt fares
on it, judged by ptxas.

For each file of ``tests/corpus/manifest.json``: producer, target, lines, entry
kernels, instruction families (tensor cores, TMA, mbarriers, clusters ...), nested
``{ }`` blocks; then the round trip (``-p none``) accepted by ptxas for the file's
own target, the divergence analysis without errors and with the same branch
verdicts before and after the round trip, every registered pass's output accepted
by ptxas (a pass that changes nothing needs no check), and ptxas -O3 SASS
instructions and registers before -> after the round trip (:mod:`bench.effect`,
:mod:`ptxopt.oracle`).  Run::

    python bench/corpus_table.py [--only SUBSTR] [--jobs N] [-o docs/corpus.md]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from effect import CORPUS, corpus_entries, measure_file  # noqa: E402

from ptxopt.driver import optimize  # noqa: E402
from ptxopt.oracle import assemble  # noqa: E402
from ptxopt.pipeline import available_passes  # noqa: E402
from ptxopt.ptx.ast import Instr, Label, Scope, Stmt  # noqa: E402
from ptxopt.ptx.parser import parse  # noqa: E402
from ptxopt.report.analyze_cli import analyze_text  # noqa: E402

# (family, test on opcode and modifiers), in the order the table lists them
FAMILIES: list[tuple[str, Any]] = [
    ("wgmma", lambda op, m: op == "wgmma"),
    ("mma.sync", lambda op, m: op == "mma"),
    ("ldmatrix/stmatrix", lambda op, m: op in ("ldmatrix", "stmatrix")),
    ("TMA/bulk copy", lambda op, m: op == "cp" and ".bulk" in m),
    ("cp.async", lambda op, m: op == "cp" and ".async" in m and ".bulk" not in m),
    ("mbarrier", lambda op, m: op == "mbarrier"),
    ("cluster", lambda op, m: op in ("mapa", "getctarank") or ".cluster" in m and op != "fence"),
    ("fence.proxy", lambda op, m: op == "fence" and any(x.startswith(".proxy") for x in m)),
    ("setmaxnreg", lambda op, m: op == "setmaxnreg"),
    ("elect.sync", lambda op, m: op == "elect"),
    ("fp8 cvt", lambda op, m: op == "cvt" and any("e4m3" in x or "e5m2" in x for x in m)),
    ("shfl/vote/match/redux", lambda op, m: op in ("shfl", "vote", "match", "redux")),
    ("atom/red", lambda op, m: op in ("atom", "red")),
    ("bar", lambda op, m: op in ("bar", "barrier") and ".cluster" not in m),
    ("call", lambda op, m: op == "call"),
]


@dataclass
class Row:
    path: str
    producer: str
    target: str
    lines: int
    kernels: int
    families: dict[str, int] = field(default_factory=dict)
    blocks: int = 0  # nested { } blocks
    scoped_labels: int = 0  # labels declared inside them
    roundtrip_ok: bool = False
    analyze_ok: bool = False
    verdicts_same: bool = False
    branches: int = 0
    uniform_branches: int = 0
    passes_ok: dict[str, bool | None] = field(default_factory=dict)  # None: unchanged
    sass_before: int | None = None
    sass_after: int | None = None
    regs_before: int = 0
    regs_after: int = 0
    seconds: float = 0.0
    error: str = ""


def _walk(body: list[Stmt], row: Row, counts: Counter[str], depth: int) -> None:
    for st in body:
        if isinstance(st, Instr):
            for name, test in FAMILIES:
                if test(st.opcode, st.mods):
                    counts[name] += 1
                    break
        elif isinstance(st, Scope):
            row.blocks += 1
            _walk(st.body, row, counts, depth + 1)
        elif isinstance(st, Label) and depth:
            row.scoped_labels += 1


def _verdicts(text: str, name: str) -> tuple[list[Any], list[str], int, int]:
    _, _, rep = analyze_text(text, name)
    verdicts = [[b["uniform"] for b in f["branches"]] for f in rep["functions"]]
    n = sum(len(v) for v in verdicts)
    return verdicts, rep["stats"]["irreducible"], n, sum(sum(v) for v in verdicts)


def measure_row(entry: dict[str, Any]) -> Row:
    path = CORPUS / entry["path"]
    text = path.read_text()
    mod = parse(text, str(path))
    row = Row(
        entry["path"],
        entry["producer"],
        entry["target"],
        entry["lines"],
        len(entry["kernels"]),
    )
    counts: Counter[str] = Counter()
    for f in mod.functions:
        if f.body is not None:
            _walk(f.body, row, counts, 0)
    row.families = {name: counts[name] for name, _ in FAMILIES if counts[name]}
    t0 = time.perf_counter()
    try:
        baseline = optimize(text, str(path), []).text
        before, irr, row.branches, row.uniform_branches = _verdicts(text, str(path))
        row.analyze_ok = True
        after, irr_after, _, _ = _verdicts(baseline, "roundtrip")
        row.verdicts_same = before == after and irr == irr_after
        eff = measure_file(entry, [], {}, execute=False, targets=[entry["target"]])
        row.roundtrip_ok = not eff.rejected and not eff.error
        per = eff.targets.get(entry["target"], {})
        if per and all(k.sass_before is not None for k in per.values()):
            row.sass_before = sum(k.sass_before or 0 for k in per.values())
            row.sass_after = sum(k.sass_after or 0 for k in per.values())
        row.regs_before = sum(k.regs_before for k in per.values())
        row.regs_after = sum(k.regs_after for k in per.values())
        for name in sorted(available_passes()):
            out = optimize(text, str(path), [name]).text
            row.passes_ok[name] = None if out == baseline else assemble(out, entry["target"]).ok
    except Exception as e:  # report it in the table, keep going
        row.error = f"{type(e).__name__}: {str(e)[:200]}"
    row.seconds = time.perf_counter() - t0
    return row


def _yes(ok: bool) -> str:
    return "yes" if ok else "**NO**"


def format_markdown(rows: list[Row]) -> str:
    passes = sorted(available_passes())
    out = [
        "# The PTX corpus",
        "",
        "Generated by `python bench/corpus_table.py` (ptxas 13.0.88, nvdisasm from the",
        "`nvidia-cuda-nvdisasm` wheel); provenance of every file is in",
        "`tests/corpus/README.md`. Columns: *families* counts instructions of the",
        "families that matter for tensor-core and production code; *blocks* is the",
        "number of nested `{ }` blocks and, after the slash, the labels declared inside",
        "them; *round trip* is `ptxopt opt -p none` accepted by ptxas for the file's own",
        "target; *verdicts* says whether `ptxopt analyze` gives every conditional branch",
        "the same uniform/divergent verdict before and after the round trip (and no",
        "irreducible flow appears); *passes* is the number of registered passes whose",
        f"output ptxas accepts ({', '.join(passes)}; a pass that changes nothing counts as",
        "accepted); *SASS* and *regs* are ptxas -O3 instruction and register totals of",
        "all kernels before -> after the round trip.",
        "",
        "| file | producer | target | lines | kernels | families | blocks | round trip "
        "| verdicts (uniform/branches) | passes | SASS | regs |",
        "|---|---|---|---:|---:|---|---:|---|---|---|---|---|",
    ]
    for r in rows:
        if r.error:
            out.append(
                f"| {r.path} | {r.producer} | {r.target} | {r.lines} | {r.kernels} "
                f"| | | **ERROR** {r.error} | | | | |"
            )
            continue
        fam = ", ".join(f"{k} {v}" for k, v in r.families.items()) or "-"
        npass = sum(1 for v in r.passes_ok.values() if v is not False)
        sass = f"{r.sass_before} -> {r.sass_after}" if r.sass_before is not None else "n/a"
        out.append(
            f"| {r.path} | {r.producer} | {r.target} | {r.lines} | {r.kernels} | {fam} "
            f"| {r.blocks}/{r.scoped_labels} | {_yes(r.roundtrip_ok)} "
            f"| {_yes(r.verdicts_same)} ({r.uniform_branches}/{r.branches}) "
            f"| {npass}/{len(r.passes_ok)} | {sass} | {r.regs_before} -> {r.regs_after} |"
        )
    ok = [r for r in rows if not r.error]
    out += [
        "",
        f"{len(rows)} files, {sum(r.lines for r in rows)} lines; round trip accepted: "
        f"{sum(r.roundtrip_ok for r in ok)}/{len(rows)}; verdicts unchanged: "
        f"{sum(r.verdicts_same for r in ok)}/{len(rows)}; every pass accepted: "
        f"{sum(all(v is not False for v in r.passes_ok.values()) for r in ok)}/{len(rows)}.",
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="only corpus paths containing this")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("-o", "--output", help="write the markdown here (default: stdout)")
    args = ap.parse_args(argv)
    entries = corpus_entries(args.only)
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(measure_row, entries))
    for r in rows:
        print(f"{r.path}: {r.seconds:.1f} s {r.error}", file=sys.stderr)
    text = format_markdown(rows)
    if args.output:
        Path(args.output).write_text(text)
    else:
        print(text)
    bad = [r for r in rows if r.error or not r.roundtrip_ok or not r.verdicts_same]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
