"""Compile time: the varying-propagation passes analyse the module once per run, not
once per function (which made -O quadratic in the number of functions)."""

from __future__ import annotations

from importlib.resources import files

import pytest

import ptxopt.analysis.divergence as div
from ptxopt.driver import optimize
from ptxopt.pipeline import parse_pipeline

PTX = (files("ptxopt") / "examples" / "reduce.ptx").read_text()


@pytest.mark.parametrize("passes", ["propagate-varying-first", "propagate-varying-second"])
def test_module_analysis_once_per_pass(passes: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = div.analyze_module

    def counting(mod, **kw):  # type: ignore[no-untyped-def]
        calls.append(mod)
        return real(mod, **kw)

    monkeypatch.setattr(div, "analyze_module", counting)
    res = optimize(PTX, "r.ptx", parse_pipeline(f"{passes},{passes}"))
    assert len(res.module.funcs) > 3
    assert len(calls) == 2  # once per run of the pass
