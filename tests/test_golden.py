"""Golden files: ``tests/golden/<group>/<case>.ptx`` holds the input with the
pipeline on its first line (``// RUN: -p PASSES``); ``<case>.expected.ptx`` the
whole expected output.  ``pytest --update-golden`` writes the expected files; without
it a missing expected file is a failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import TESTS, ptxas_check

from ptxopt.driver import optimize
from ptxopt.pipeline import parse_pipeline

CASES = sorted(
    p for p in (TESTS / "golden").glob("*/*.ptx") if not p.name.endswith(".expected.ptx")
)


def _pipeline(text: str) -> list[str]:
    first = text.splitlines()[0]
    assert first.startswith("// RUN:"), "a golden input starts with '// RUN: -p PASSES'"
    args = first[len("// RUN:") :].split()
    spec = args[args.index("-p") + 1] if "-p" in args else None
    return parse_pipeline(spec)


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden(case: Path, update_golden: bool, tmp_path: Path) -> None:
    text = case.read_text()
    res = optimize(text, case.name, _pipeline(text), verify_each=True)
    expected = case.with_name(case.stem + ".expected.ptx")
    if update_golden:
        expected.write_text(res.text)
    assert expected.exists(), f"{expected.name} is missing: create it with --update-golden"
    assert res.text == expected.read_text()
    arch = res.module.ast.arch
    assert arch is not None
    ptxas_check(res.text, arch, tmp_path)


def test_missing_expectation_fails(tmp_path: Path) -> None:
    """A case without its expected file fails and writes nothing (only
    ``--update-golden`` creates expectations)."""
    case = tmp_path / "g" / "new_case.ptx"
    case.parent.mkdir()
    case.write_text(CASES[0].read_text())
    with pytest.raises(AssertionError, match="is missing"):
        test_golden(case, False, tmp_path)
    assert not case.with_name("new_case.expected.ptx").exists()
    test_golden(case, True, tmp_path)  # --update-golden creates it, then it passes
    assert case.with_name("new_case.expected.ptx").exists()
