"""Golden files: ``tests/golden/<group>/<case>.ptx`` holds the input with the
pipeline on its first line (``// RUN: -p PASSES``); ``<case>.expected.ptx`` the
whole expected output.  ``pytest --update-golden`` rewrites the expected files."""

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
    if update_golden or not expected.exists():
        expected.write_text(res.text)
    assert res.text == expected.read_text()
    arch = res.module.ast.arch
    assert arch is not None
    ptxas_check(res.text, arch, tmp_path)
