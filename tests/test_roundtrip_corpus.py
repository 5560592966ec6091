"""Every corpus file survives parse -> lift -> verify -> lower -> print with the same
branch verdicts (divergence analysis before and after), ptxas accepts the result for
the file's own target, and printing is a fixed point."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import TESTS, corpus_files, corpus_param, ptxas_check

from ptxopt.driver import optimize
from ptxopt.ptx.parser import parse
from ptxopt.ptx.printer import print_module
from ptxopt.report.analyze_cli import analyze_text


def branch_verdicts(text: str, name: str) -> tuple[object, ...]:
    """Per function, the uniform/divergent verdict of every conditional branch, and
    the functions with irreducible control flow."""
    mod, _, rep = analyze_text(text, name)
    mod.release()  # only the report is read: no cycles left for the collector
    verdicts = [(f["name"], [b["uniform"] for b in f["branches"]]) for f in rep["functions"]]
    return verdicts, rep["stats"]["irreducible"]


FILES = [
    corpus_param(p, p, id=str(p.relative_to(TESTS)))
    for p in corpus_files() + sorted((TESTS / "ptx").glob("*.ptx"))
]


@pytest.mark.parametrize("path", FILES)
def test_roundtrip_ptxas_accepts(path: Path, tmp_path: Path) -> None:
    text = path.read_text()
    res = optimize(text, str(path), [], verify_each=True, release=True)
    src = parse(text, str(path))
    arch = src.arch
    assert arch is not None
    # the round trip keeps every function, label and debug section
    out = parse(res.text, "out")
    assert [f.name for f in out.functions] == [f.name for f in src.functions]
    assert sum(1 for it in out.items if getattr(it, "name", "") == ".section") == sum(
        1 for it in src.items if getattr(it, "name", "") == ".section"
    )
    assert branch_verdicts(res.text, "out") == branch_verdicts(text, str(path))
    ptxas_check(res.text, arch, tmp_path)


@pytest.mark.parametrize("path", FILES)
def test_print_is_fixed_point(path: Path) -> None:
    once = print_module(parse(path.read_text(), str(path)))
    twice = print_module(parse(once, "once"))
    assert once == twice


@pytest.mark.parametrize("path", FILES)
def test_lowered_output_is_fixed_point(path: Path) -> None:
    first = optimize(path.read_text(), str(path), [], release=True).text
    second = optimize(first, "first", [], release=True).text
    assert first == second
