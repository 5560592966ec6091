#!/usr/bin/env python3
"""Regenerate the ISA coverage table: ``ptxopt/report/isa_facts.json``,
``docs/isa-coverage.md`` and the README's list of instructions the interpreter does
not run.

    python scripts/isa_coverage.py [--probe] [--check]

Facts that need ptxas or the test tables are gathered here:

* ``version``/``target``: the smallest ``.target`` (with ``.version 9.0``), then the
  smallest ``.version`` at that target, at which ptxas accepts the row's first sample
  (``--probe`` re-measures every row; otherwise only rows without a value);
* ``ptxas_printed``: ptxas accepts what ``ptxopt opt -p none`` prints for every sample;
* ``edge``: an edge-value table (``tests/isa``) executes the instruction.

``--check`` regenerates everything in memory and exits 1 if a file would change.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "isa"))

from ptxopt.driver import optimize  # noqa: E402
from ptxopt.ptx.isa import ISA, IsaInstr, kernel_for  # noqa: E402
from ptxopt.report import isa_coverage as cov  # noqa: E402

FACTS = ROOT / "ptxopt" / "report" / cov.FACTS_FILE
DOC = ROOT / "docs" / "isa-coverage.md"
README = ROOT / "README.md"
BEGIN, END = "<!-- begin unsupported (scripts/isa_coverage.py) -->", "<!-- end unsupported -->"

TARGETS = [
    "sm_10", "sm_20", "sm_30", "sm_32", "sm_35", "sm_50", "sm_52", "sm_53", "sm_60",
    "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_88",
    "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_103a", "sm_110a", "sm_120",
    "sm_120a",
]  # fmt: skip
VERSIONS = [
    "1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "2.0", "2.1", "2.2", "2.3", "3.0", "3.1",
    "3.2", "4.0", "4.1", "4.2", "4.3", "5.0", "6.0", "6.1", "6.2", "6.3", "6.4", "6.5",
    "7.0", "7.1", "7.2", "7.3", "7.4", "7.5", "7.6", "7.7", "7.8", "8.0", "8.1", "8.2",
    "8.3", "8.4", "8.5", "8.6", "8.7", "8.8", "9.0",
]  # fmt: skip


def _sm(target: str) -> int:
    return int(re.sub(r"\D", "", target))


def ptxas_ok(text: str, target: str) -> bool:
    arch = target if _sm(target) >= 75 else "sm_75"
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(text)
        r = subprocess.run(
            ["ptxas", f"-arch={arch}", str(src), "-o", str(Path(d) / "k.cubin")],
            capture_output=True,
        )
    return r.returncode == 0


def _kernel(sample: str, version: str, target: str) -> str:
    text = kernel_for(sample, version=version, target=target)
    if float(version) < 2.3:  # .address_size came with PTX 2.3
        text = text.replace(".address_size 64\n", "")
    return text


def probe(instr: IsaInstr) -> tuple[str, str]:
    sample = instr.samples[0]
    target = next(t for t in TARGETS if ptxas_ok(_kernel(sample, "9.0", t), t))
    version = next(v for v in VERSIONS if ptxas_ok(_kernel(sample, v, target), target))
    return version, target


def printed_ok(instr: IsaInstr) -> bool:
    for sample in instr.samples:
        target = next(t for t in ("sm_100a", "sm_90a") if ptxas_ok(kernel_for(sample, target=t), t))
        out = optimize(kernel_for(sample, target=target)).text
        if not ptxas_ok(out, target):
            return False
    return True


def edge_rows() -> set[str]:
    from tables import all_cases

    out: set[str] = set()
    for case in all_cases():
        for name in case.opcodes():
            row = cov.row_of(name)
            if row is not None:
                out.add(row)
    return out


def gather(reprobe: bool) -> dict[str, dict[str, object]]:
    old = json.loads(FACTS.read_text())["instructions"] if FACTS.exists() else {}
    edge = edge_rows()
    facts: dict[str, dict[str, object]] = {}
    for instr in ISA:
        prev = old.get(instr.name, {})
        if reprobe or "version" not in prev:
            version, target = probe(instr)
        else:
            version, target = prev["version"], prev["target"]
        facts[instr.name] = {
            "version": version,
            "target": target,
            "ptxas_printed": printed_ok(instr),
            "edge": instr.name in edge,
        }
        print(instr.name, facts[instr.name], file=sys.stderr)
    return facts


def readme_text(current: str, paragraph: str) -> str:
    start, end = current.index(BEGIN), current.index(END)
    return current[: start + len(BEGIN)] + "\n" + paragraph + "\n" + current[end:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probe", action="store_true", help="re-measure every version/target")
    ap.add_argument("--check", action="store_true", help="exit 1 if a file would change")
    args = ap.parse_args()
    facts = gather(args.probe)
    facts_text = json.dumps({"instructions": facts}, indent=1, sort_keys=True) + "\n"
    if not args.check:
        FACTS.write_text(facts_text)
    rows = [cov.measure(i, facts) for i in ISA]
    outputs = {
        FACTS: facts_text,
        DOC: cov.format_markdown(rows),
        README: readme_text(README.read_text(), cov.format_unsupported(rows)),
    }
    changed = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
    if args.check:
        for p in changed:
            print(f"{p.relative_to(ROOT)} is out of date", file=sys.stderr)
        return 1 if changed else 0
    for p in changed:
        p.write_text(outputs[p])
    print(json.dumps(cov.totals(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
