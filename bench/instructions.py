"""Instructions the CPU executes for the ``-p none`` round trip, counted by
``valgrind --tool=callgrind``: a measure of the front end's work that a loaded or
throttled host does not disturb (wall time there varies by half between runs of the
same build; the count varies by well under 0.1 %).

For each interpreter given (one per installed build: ``--python A --python B``),
two runs under callgrind over the same files -- each doing the imports and one
round trip per file to warm the caches, the second run ``--rounds`` more rounds --
and the difference divided by the rounds: instructions per round, per PTX line, and
the ratio to the first interpreter's.  Prints also the functions whose own count
changed most between the first two builds (``--top N``).

    python bench/instructions.py [--python PY ...] [--files F ...] [--rounds N] [--top N]

Needs ``valgrind`` (and ``callgrind_annotate`` for ``--top``); the default files are
the Triton fp16 matmul (sm_80) and the CUB scan (sm_80); the default interpreter is
this one.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
DEFAULT_FILES = [CORPUS / "triton" / "matmul_fp16.sm80.ptx", CORPUS / "cub" / "scan.sm80.ptx"]

# run by each interpreter under callgrind: imports, one warm-up round, ROUNDS rounds
_DRIVER = """
import gc, sys
from ptxopt.driver import optimize
gc.disable()
texts = [open(f, encoding="latin-1").read() for f in sys.argv[2:]]
for t in texts:
    optimize(t, "x", [], release=True)
for _ in range(int(sys.argv[1])):
    for t in texts:
        optimize(t, "x", [], release=True)
"""


def count(python: str, rounds: int, files: list[str], out: Path) -> int:
    """Instructions of one callgrind run (its profile written to ``out``)."""
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python]
    done = subprocess.run(
        [*cmd, "-c", _DRIVER, str(rounds), *files],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),  # not a checkout: the interpreter's own ptxopt
        env=dict(os.environ, PYTHONSAFEPATH="1"),
    )
    m = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or m is None:
        raise SystemExit(f"{python}: callgrind failed:\n{done.stderr[-2000:]}")
    return int(m.group(1))


def own_counts(profile: Path) -> dict[str, int]:
    """Instructions per function (its own, callees excluded) of a callgrind profile."""
    text = subprocess.run(
        ["callgrind_annotate", "--auto=no", "--threshold=100", str(profile)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*?)(?: \[.*\])?$", line)
        if m and "PROGRAM TOTALS" not in line:
            name = m.group(2).rsplit(":", 1)[-1]
            out[name] = out.get(name, 0) + int(m.group(1).replace(",", ""))
    return out


def _rounds_only(base: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    """Per function, the instructions of the extra rounds (the second run less the first)."""
    return {k: v - base.get(k, 0) for k, v in more.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", action="append", default=[], help="an interpreter (repeat)")
    ap.add_argument("--files", nargs="+", default=[str(f) for f in DEFAULT_FILES])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--top", type=int, default=0, help="functions that changed most")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not on PATH", file=sys.stderr)
        return 1
    pythons = args.python or [sys.executable]
    lines = sum(Path(f).read_text(encoding="latin-1").count("\n") for f in args.files)
    print(f"{len(args.files)} files, {lines} lines, {args.rounds} rounds")
    tmp = Path(tempfile.mkdtemp(prefix="ptxopt-instructions-"))
    per_round: list[int] = []
    profiles: list[tuple[Path, Path]] = []
    try:
        for k, py in enumerate(pythons):
            base, more = tmp / f"{k}.0.out", tmp / f"{k}.n.out"
            n = (count(py, args.rounds, args.files, more) - count(py, 0, args.files, base)) // (
                args.rounds
            )
            per_round.append(n)
            profiles.append((base, more))
            ratio = f"{n / per_round[0]:.3f}" if k else "1.000"
            print(f"{py}: {n:,} instructions a round, {n / lines:,.0f} a line, ratio {ratio}")
        if args.top and len(profiles) >= 2:
            (a0, a1), (b0, b1) = profiles[0], profiles[1]
            a = _rounds_only(own_counts(a0), own_counts(a1))
            b = _rounds_only(own_counts(b0), own_counts(b1))
            diff = {k: (b.get(k, 0) - a.get(k, 0)) // args.rounds for k in set(a) | set(b)}
            print("functions whose own count changed most (second build - first, a round):")
            for name, d in sorted(diff.items(), key=lambda kv: abs(kv[1]), reverse=True)[
                : args.top
            ]:
                print(f"  {d:+14,d}  {name}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
