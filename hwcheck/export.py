#!/usr/bin/env python3
"""Export the edge-value tables (``tests/isa``) as a bundle the GPU runner executes.

    python hwcheck/export.py BUNDLE_DIR [--arch sm_90] [--family F ...]

writes ``manifest.json`` (cases, their ports and lane counts), ``inputs.npz`` and one
cubin per case assembled here with ptxas for ``--arch`` (cases whose target needs a
newer GPU are listed with ``"cubin": null``).  The bundle is self-contained: copy it
to a machine with a GPU and run ``hwcheck/run_gpu.py`` there.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "isa"))
sys.path.insert(0, str(ROOT))

from lanes import Case, buffers, kernel_text  # noqa: E402
from tables import all_cases  # noqa: E402


def sm(target: str) -> int:
    return int("".join(ch for ch in target[3:] if ch.isdigit()))


def runnable(case: Case, arch: str) -> bool:
    """A case runs on ``arch`` when its target is not newer and is not an
    architecture-specific (``a``/``f``) target of another GPU."""
    if case.target.endswith(("a", "f")) and case.target != arch:
        return False
    return sm(case.target) <= sm(arch)


def assemble(ptx: str, arch: str, out: Path) -> str | None:
    """Assemble for ``arch`` (the module's own .target is replaced); ptxas's error
    text on failure."""
    lines = [ln if not ln.startswith(".target") else f".target {arch}" for ln in ptx.splitlines()]
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text("\n".join(lines) + "\n")
        r = subprocess.run(
            ["ptxas", f"-arch={arch}", "-O3", str(src), "-o", str(out)],
            capture_output=True,
            text=True,
        )
    return None if r.returncode == 0 else r.stderr.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--family", action="append", default=[])
    args = ap.parse_args()
    bundle = Path(args.bundle)
    bundle.mkdir(parents=True, exist_ok=True)
    cases = [c for c in all_cases() if not args.family or c.family in args.family]
    manifest: dict[str, object] = {"arch": args.arch, "cases": []}
    arrays: dict[str, np.ndarray] = {}
    failed = 0
    for idx, case in enumerate(cases):
        entry: dict[str, object] = {
            "name": case.name,
            "family": case.family,
            "lanes": case.lanes,
            "inputs": [{"name": p.name, "dtype": np.dtype(p.dtype).str} for p in case.inputs],
            "outputs": [{"name": p.name, "dtype": np.dtype(p.dtype).str} for p in case.outputs],
            "cubin": None,
        }
        for p, arr in zip(case.inputs, buffers(case), strict=False):
            arrays[f"{idx}/{p.name}"] = arr
        if runnable(case, args.arch):
            name = f"{idx:04d}.cubin"
            err = assemble(kernel_text(case), args.arch, bundle / name)
            if err is None:
                entry["cubin"] = name
            else:
                failed += 1
                entry["ptxas_error"] = err
                print(f"ptxas rejected {case.family}:{case.name}: {err}", file=sys.stderr)
        manifest["cases"].append(entry)  # type: ignore[attr-defined]
    np.savez_compressed(bundle / "inputs.npz", **arrays)
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=1))
    n = len(cases)
    print(f"{n} cases exported to {bundle} ({failed} rejected by ptxas)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
