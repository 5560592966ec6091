"""``-p none`` lowers with the registers' own names (``keep_names``) instead of the
CSSA destructor: on IR no pass has touched both must print the same text.  Checked
on every corpus file and on random kernels (irreducible loops, predication, calls,
carry chains)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.kernels import generate
from ptxopt.driver import optimize
from ptxopt.ir.cssa import CssaOptions, destructor_for
from ptxopt.ir.lift import lift_module
from ptxopt.ir.lower import print_ir_module
from ptxopt.ir.out_of_ssa import keep_names
from ptxopt.ptx.parser import parse

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*/*.ptx"))


def both(text: str) -> tuple[str, str]:
    mod = lift_module(parse(text))
    general = print_ir_module(mod, destructor_for(mod, CssaOptions.from_knobs(None, None)))
    return general, print_ir_module(lift_module(parse(text)), keep_names)


@pytest.mark.slow
@pytest.mark.parametrize("path", CORPUS, ids=[f"{p.parent.name}/{p.stem}" for p in CORPUS])
def test_corpus_file_prints_the_same(path: Path) -> None:
    general, kept = both(path.read_text(encoding="latin-1"))
    assert kept == general


@pytest.mark.parametrize("seed", range(7000000, 7000060))
def test_random_kernel_prints_the_same(seed: int) -> None:
    general, kept = both(generate(seed))
    assert kept == general


def test_the_driver_keeps_names_only_without_passes() -> None:
    # a pass that renames (general-optimize folds and copies) needs the real
    # destructor; without passes the output is the kept-names text
    text = generate(7000001)
    assert optimize(text, "k.ptx", []).text == both(text)[1]
    assert optimize(text, "k.ptx", None).text == both(text)[1]
