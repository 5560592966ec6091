"""Compile time: the varying-propagation passes analyse the module once per run, not
once per function (which made -O quadratic in the number of functions), and not at
all when no pass changed the module since the last analysis."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import pytest

import ptxopt.analysis.divergence as div
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.driver import optimize
from ptxopt.ir.lift import lift_module
from ptxopt.pipeline import parse_pipeline, run_pipeline
from ptxopt.ptx.parser import parse

PTX = (files("ptxopt") / "examples" / "reduce.ptx").read_text()


@pytest.mark.parametrize("passes", ["propagate-varying-first", "propagate-varying-second"])
def test_module_analysis_once_per_pass(passes: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = div.analyze_module

    def counting(mod, **kw):  # type: ignore[no-untyped-def]
        calls.append(mod)
        return real(mod, **kw)

    monkeypatch.setattr(div, "analyze_module", counting)
    res = optimize(PTX, "r.ptx", parse_pipeline(f"{passes},general-optimize,{passes}"))
    assert len(res.module.funcs) > 3
    assert res.report.changed["general-optimize"] > 0
    assert len(calls) == 2  # once per run of the pass


@pytest.mark.parametrize("passes", ["propagate-varying-first", "propagate-varying-second"])
def test_unchanged_module_not_analysed_again(passes: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = div.analyze_module

    def counting(mod, **kw):  # type: ignore[no-untyped-def]
        calls.append(mod)
        return real(mod, **kw)

    monkeypatch.setattr(div, "analyze_module", counting)
    ptx = optimize(PTX, "r.ptx", parse_pipeline("general-optimize")).text
    # nothing left for general-optimize to change: the second run keeps the first result
    mod = lift_module(parse(ptx, "r.ptx"))
    am = AnalysisManager()
    report = run_pipeline(mod, parse_pipeline(f"{passes},general-optimize,{passes}"), am=am)
    assert report.changed["general-optimize"] == 0
    assert len(calls) == 1
    assert am.ir_version is None  # not tracked outside the pipeline
    # the result kept is the one a fresh analysis gives
    fresh = real(mod)
    for f in mod.funcs:
        kept = am.cached(div.Divergence, f)
        assert kept is not None and kept.same_as(fresh.funcs[f.name])
    # outside the pipeline, propagate_varying recomputes
    div.propagate_varying(mod.funcs[0], am, 70)
    assert len(calls) == 2


def test_restarted_rounds_reuse_unchanged_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    """A restart of the module analysis re-analyses only the functions whose inputs
    (parameter flags, callees' return flags) changed; every result is what a fresh
    analysis with the final inputs gives."""
    text = (Path(__file__).parent / "corpus" / "cuda" / "control.O3.sm90.ptx").read_text()
    mod = lift_module(parse(text, "control.ptx"))
    calls = []
    real = div.analyze_function

    def counting(f, env, **kw):  # type: ignore[no-untyped-def]
        calls.append(f.name)
        return real(f, env, **kw)

    monkeypatch.setattr(div, "analyze_function", counting)
    md = div.analyze_module(mod)
    assert md.stats.restarts >= 1
    assert len(calls) < md.stats.rounds * len(mod.funcs)
    index = {f.name: i for i, f in enumerate(mod.funcs)}

    def call_ret(site, k):  # type: ignore[no-untyped-def]
        st = md.table.get(index[site.callee]) if site.callee in index else None
        return True if st is None or k >= len(st.rets) else st.rets[k]

    for f in mod.funcs:
        entry = f.ast.kind == ".entry"
        st = md.table.get(index[f.name])
        assert st is not None
        params = [False] * len(f.ast.params) if entry else list(st.params)
        fresh = real(f, div.FuncEnv(entry, params, call_ret))
        got = md.funcs[f.name]
        assert got.same_as(fresh)
        assert got.ret_varying == fresh.ret_varying
        assert got.arg_varying == fresh.arg_varying
