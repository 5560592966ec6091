"""The Python API (``ptxopt.optimize``/``analyze``/``explain``) and its lazy loading."""

from __future__ import annotations

import subprocess
import sys
from importlib.resources import files

import pytest

import ptxopt
from ptxopt.ptx.ast import PtxError

PTX = (files("ptxopt") / "examples" / "reduce.ptx").read_text()


def test_import_is_light() -> None:
    code = "import sys, ptxopt; print(sorted(m for m in sys.modules if m.startswith('ptxopt')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['ptxopt']"


def test_optimize_matches_cli_driver() -> None:
    from ptxopt.driver import optimize
    from ptxopt.pipeline import parse_pipeline

    want = optimize(PTX, "<ptx>", parse_pipeline("default")).text
    assert ptxopt.optimize(PTX) == want
    assert ptxopt.optimize(PTX, passes=None) == want
    none = optimize(PTX, "<ptx>", []).text
    assert ptxopt.optimize(PTX, passes="none") == none == ptxopt.optimize(PTX, passes=[])


def test_optimize_named_passes_and_stats() -> None:
    out = ptxopt.optimize(PTX, passes="mark-uniform-branches", arch="sm_80", verify_each=True)
    assert out.count("bra.uni") == 2 and PTX.count("bra.uni") == 0
    assert ptxopt.optimize(PTX, passes=["mark-uniform-branches"]) == out


def test_optimize_errors() -> None:
    with pytest.raises(ValueError, match="unknown pass 'nope'"):
        ptxopt.optimize(PTX, passes="nope")
    with pytest.raises(ValueError, match="unknown knob 'NoSuchKnob'"):
        ptxopt.optimize(PTX, knobs={"NoSuchKnob": 1})
    with pytest.raises(ValueError, match="unknown knob"):
        ptxopt.optimize(PTX, knobs=["NoSuchKnob=1"])
    with pytest.raises(PtxError, match=r"unknown modifier '\.u99'") as e:
        ptxopt.optimize(PTX.replace("mov.u32", "mov.u99", 1), filename="bad.ptx")
    assert str(e.value).startswith("bad.ptx:")


def test_knob_values_are_checked() -> None:
    from ptxopt.knobs import registry

    knobs = [k for k in registry().values() if k.type in ("int", "bool")]
    if not knobs:  # nothing registered declares one yet
        return
    k = knobs[0]
    good = k.default
    assert ptxopt.optimize(PTX, knobs={k.name: good}, passes="none")
    with pytest.raises(ValueError, match=k.name):
        ptxopt.optimize(PTX, knobs={k.name: "not-a-number"}, passes="none")


def test_analyze_and_explain() -> None:
    report = ptxopt.analyze(PTX)
    names = [f["name"] for f in report["functions"]]
    assert names[0] == "block_reduce_sum" and len(names) == len(set(names))
    k = report["functions"][0]
    assert k["registers"]["%r3"] == "varying" and k["registers"]["%r1"] == "uniform"
    s = k["summary"]
    assert s["uniform_branches"] + s["divergent_branches"] == s["branches"]
    why = ptxopt.explain(PTX, "block_reduce_sum:%r28")
    assert "%tid.x" in why and why.startswith("block_reduce_sum: %r28")
    assert "no register" in ptxopt.explain(PTX, "%nothere")


def test_unknown_attribute() -> None:
    with pytest.raises(AttributeError):
        _ = ptxopt.specialise  # type: ignore[attr-defined]
