#!/usr/bin/env python3
"""Compare GPU results of an exported bundle with the references and the interpreter.

    python hwcheck/compare.py BUNDLE_DIR RESULTS_DIR [--family F] [--show N]

For every case that ran on the GPU, prints the lanes where the hardware disagrees with
the reference written from the ISA text (``tests/isa``) and with the interpreter
(``ptxopt.sim``), and a summary line per family.  Cases whose hardware deviation from
the ISA text is documented (``Case.hw_deviation``) are reported as such.  Exit status
1 when any other case disagrees.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "isa"))
sys.path.insert(0, str(ROOT))

from lanes import Case, digest, input_digest, mismatches, run_interpreter  # noqa: E402
from tables import all_cases  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle")
    ap.add_argument("results")
    ap.add_argument("--family", action="append", default=[])
    ap.add_argument("--show", type=int, default=4)
    ap.add_argument("--record", help="write the per-case digests of the GPU's outputs here")
    args = ap.parse_args()
    manifest = json.loads((Path(args.bundle) / "manifest.json").read_text())
    results = np.load(Path(args.results) / "results.npz")
    device = json.loads((Path(args.results) / "results.json").read_text())["device"]
    by_name = {f"{c.family}:{c.name}": c for c in all_cases()}
    stats: Counter[str] = Counter()
    record: dict[str, object] = {}
    bad = 0
    for idx, entry in enumerate(manifest["cases"]):
        key = f"{entry['family']}:{entry['name']}"
        case = by_name.get(key)
        if case is None or (args.family and case.family not in args.family):
            continue
        if f"{idx}/{case.outputs[0].name}" not in results.files:
            stats[f"{case.family} not run"] += 1
            continue
        hw = {p.name: results[f"{idx}/{p.name}"] for p in case.outputs}
        record[key] = {
            "inputs": input_digest(case),
            "outputs": {n: digest(a) for n, a in sorted(hw.items())},
        }
        ref_diff = mismatches(case, hw, args.show)
        sim_diff = _against(case, hw, args.show)
        checks = case.lanes * len(case.outputs)
        stats[f"{case.family} checks"] += checks
        if ref_diff and case.hw_deviation:
            stats[f"{case.family} cases with a documented deviation of the hardware"] += 1
            print(f"[documented deviation] {case.name}: {case.hw_deviation}")
            print("\n".join(f"  {d}" for d in ref_diff))
        elif ref_diff:
            bad += 1
            stats[f"{case.family} cases where hardware != reference"] += 1
            print("\n".join(f"[hw vs reference] {d}" for d in ref_diff))
        if sim_diff and not case.hw_deviation:
            bad += 1
            stats[f"{case.family} cases where hardware != interpreter"] += 1
            print("\n".join(f"[hw vs interpreter] {d}" for d in sim_diff))
    if args.record:
        doc = {"device": device, "cases": dict(sorted(record.items()))}
        Path(args.record).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"device: {device}")
    for k in sorted(stats):
        print(f"  {k}: {stats[k]}")
    return 1 if bad else 0


def _against(case: Case, hw: dict[str, np.ndarray], show: int) -> list[str]:
    """The interpreter's differences from the hardware (the hardware as expectation)."""
    try:
        got = run_interpreter(case)
    except Exception as e:  # noqa: BLE001 - report and go on with the other cases
        return [f"{case.name}: interpreter failed: {e}"]
    hw_case = Case(
        case.name,
        case.family,
        case.body,
        case.inputs,
        case.outputs,
        case.values,
        hw,
        any_nan=case.any_nan,
    )
    return mismatches(hw_case, got, show)


if __name__ == "__main__":
    sys.exit(main())
