"""Every corpus file survives parse -> lift -> verify -> lower -> print, ptxas accepts
the result for the file's own target, and printing is a fixed point."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import TESTS, corpus_files, ptxas_check

from ptxopt.driver import optimize
from ptxopt.ptx.parser import parse
from ptxopt.ptx.printer import print_module

FILES = corpus_files() + sorted((TESTS / "ptx").glob("*.ptx"))
BIG = 10_000  # lines; the largest Triton file takes ptxas tens of seconds


def _id(p: Path) -> str:
    return str(p.relative_to(TESTS))


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_roundtrip_ptxas_accepts(path: Path, tmp_path: Path) -> None:
    text = path.read_text()
    res = optimize(text, str(path), [], verify_each=True)
    arch = res.module.ast.arch
    assert arch is not None
    # the round trip keeps every function, label and debug section
    src = parse(text, str(path))
    out = parse(res.text, "out")
    assert [f.name for f in out.functions] == [f.name for f in src.functions]
    assert sum(1 for it in out.items if getattr(it, "name", "") == ".section") == sum(
        1 for it in src.items if getattr(it, "name", "") == ".section"
    )
    if text.count("\n") > BIG and not pytest.importorskip("os").environ.get("CI"):
        pytest.skip("large file: ptxas takes long; checked in CI")
    ptxas_check(res.text, arch, tmp_path)


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_print_is_fixed_point(path: Path) -> None:
    once = print_module(parse(path.read_text(), str(path)))
    twice = print_module(parse(once, "once"))
    assert once == twice


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_lowered_output_is_fixed_point(path: Path) -> None:
    first = optimize(path.read_text(), str(path), []).text
    second = optimize(first, "first", []).text
    assert first == second
