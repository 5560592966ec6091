"""A short fixed-seed run of the mutation fuzzer (fuzz/mutate.py): ptxopt must not
crash, hang, break its error contract, reject what ptxas accepts or print what
ptxas rejects; a few false accepts are tolerated (the goal is < 0.5 %)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import PTXAS

ROOT = Path(__file__).parent.parent


@pytest.mark.ptxas
def test_fixed_seed_mutants(tmp_path: Path) -> None:
    if PTXAS is None:
        pytest.skip("ptxas is not on PATH (install the CUDA 13.0 toolkit to run oracle tests)")
    summary = tmp_path / "s.json"
    subprocess.run(
        [sys.executable, str(ROOT / "fuzz" / "mutate.py"), "-n", "30", "--seed", "3", "-j", "2",
         "--max-lines", "400", "--no-findings", "--quiet", "--json", str(summary),
         "--cache", str(tmp_path / "cache.pickle")],
        check=False,
        capture_output=True,
        timeout=300,
    )  # fmt: skip
    counts = json.loads(summary.read_text())["counts"]
    assert sum(counts.values()) == 30
    for cls in ("CRASH", "HANG", "CONTRACT", "FALSE-REJECT", "BROKEN-OUTPUT"):
        assert counts.get(cls, 0) == 0, counts
