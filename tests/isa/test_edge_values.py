"""Edge-value tables per instruction family, run in the interpreter and compared bit
for bit with references written from the ISA text (``lanes.py``, ``refs.py``, the
``table_*.py`` modules) and, where a GPU run was recorded for the same kernel and
inputs (``hwcheck/results/h100.json``), with the bytes the H100 produced.  Cases
where the hardware is documented to contradict the ISA text (``Case.hw_deviation``)
follow the ISA."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ptxas_check
from lanes import Case, digest, input_digest, kernel_text, mismatches, run_interpreter
from tables import all_cases

CASES = all_cases()
RECORD = Path(__file__).resolve().parents[2] / "hwcheck" / "results" / "h100.json"
RECORDED: dict[str, dict] = json.loads(RECORD.read_text())["cases"]


def _hardware(case: Case) -> dict[str, str] | None:
    """The recorded GPU output digests of ``case``, when they apply to it."""
    entry = RECORDED.get(f"{case.family}:{case.name}")
    if entry is None or case.hw_deviation or entry["inputs"] != input_digest(case):
        return None
    return entry["outputs"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.family}:{c.name}" for c in CASES])
def test_edge_values(case: Case) -> None:
    got = run_interpreter(case)
    bad = mismatches(case, got)
    assert not bad, "\n".join(bad)
    hw = _hardware(case)
    if hw is not None:
        differ = [p.name for p in case.outputs if digest(got[p.name].astype(p.dtype)) != hw[p.name]]
        assert not differ, f"outputs {differ} differ from the H100's (hwcheck/results/h100.json)"


def test_hardware_record_covers_the_tables() -> None:
    """A stale record (tables changed since the GPU run) must be refreshed: at least
    nine tenths of the cases that can run on an sm_90 GPU are checked against it."""
    runnable = [c for c in CASES if c.target in ("sm_89", "sm_90") and not c.hw_deviation]
    checked = [c for c in runnable if _hardware(c) is not None]
    assert len(checked) >= 0.9 * len(runnable), (
        f"only {len(checked)} of {len(runnable)} cases match the hardware record: "
        "re-run hwcheck (see hwcheck/README.md)"
    )


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[f"{c.family}:{c.name}" for c in CASES])
def test_ptxas_accepts_edge_kernel(case: Case, tmp_path: Path) -> None:
    """Every edge kernel is PTX ptxas accepts for its target (so the tables test
    instructions as the ISA defines them, and the hardware kit can run them)."""
    ptxas_check(kernel_text(case), case.target, tmp_path)
