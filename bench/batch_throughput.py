"""Throughput of ``ptxopt batch`` on the corpus: files/s and lines/s for ``--jobs``
1, 4 and 8 and for a local Ray (when Ray is installed), whole runs timed by the
command itself (its summary.json).

    python bench/batch_throughput.py [--passes -O|none] [--files GLOB] [--no-ray]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"


def run(paths: list[str], extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="ptxopt-batch-") as out:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        cmd = [sys.executable, "-m", "ptxopt.cli", "batch", *paths, *extra, "--out", out]
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.loads((Path(out) / "summary.json").read_text())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes", default="-O")
    ap.add_argument("--files", default="*/*.ptx")
    ap.add_argument("--no-ray", action="store_true")
    a = ap.parse_args()
    paths = [str(p) for p in sorted(CORPUS.glob(a.files))]
    sel = ["-O"] if a.passes == "-O" else ["-p", a.passes]
    print(f"{len(paths)} corpus files, pipeline {a.passes}, {os.cpu_count()} CPUs")
    print(f"{'runner':12} {'files':>6} {'failed':>6} {'seconds':>8} {'files/s':>8} {'lines/s':>9}")
    runs = [(f"--jobs {n}", ["--jobs", str(n)]) for n in (1, 4, 8)]
    if not a.no_ray:
        try:
            import ray  # noqa: F401

            runs.append(("ray (local)", ["--ray"]))
        except ImportError:
            print("(Ray not installed: pip install 'ptxopt[ray]')")
    for name, extra in runs:
        s = run(paths, sel + extra)
        print(
            f"{name:12} {s['files']:6d} {s['failed']:6d} {s['seconds']:8.2f} "
            f"{s['files_per_second']:8.2f} {s['lines_per_second']:9d}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
