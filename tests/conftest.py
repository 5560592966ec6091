"""Shared fixtures: golden-file updating; hypothesis profiles (CI runs derandomized, so a
run is reproducible; elsewhere hypothesis searches new examples every time)."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# the fuzzers (fuzz/) live beside the package: make them importable from any directory
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

settings.register_profile("ci", derandomize=True, print_blob=True)
# mutation testing (scripts/mutation_score.py) runs the tests once per mutant
settings.register_profile("mutation", derandomize=True, max_examples=15, deadline=None)
if os.environ.get("MUTANT_UNDER_TEST"):
    settings.load_profile("mutation")
elif os.environ.get("CI"):
    settings.load_profile("ci")

if os.environ.get("PTXOPT_TEST_INSTALLED"):  # .ci/run: the installed package is tested
    import ptxopt

    here = Path(ptxopt.__file__).resolve().parent
    assert here != ROOT / "ptxopt", f"testing the source tree ({here}), not the installed package"

_skipped: list[str] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection made -- the imported modules (numpy, Triton, the package), the
    parameter lists, the corpus manifest -- lives until the process ends: moved out of
    the collector's generations, it is not walked again by every full collection that
    the tests' large modules trigger."""
    gc.collect()
    gc.freeze()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI every test runs: a skip (a missing tool, an unset variable) is a failure."""
    if os.environ.get("CI") and _skipped and exitstatus == 0:
        print(f"\nCI: {len(_skipped)} tests skipped (first: {_skipped[0]}); none may be")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", help="rewrite golden files from current output"
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))
