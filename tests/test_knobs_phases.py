"""The knob registry, the phase table and the pipeline's handling of both."""

from __future__ import annotations

from typing import ClassVar

import pytest

from ptxopt.analysis.manager import PRESERVE_ALL, AnalysisManager
from ptxopt.cli import main
from ptxopt.driver import optimize
from ptxopt.ir.core import Func
from ptxopt.knobs import Knob, KnobError, parse_assignments, parse_value
from ptxopt.phases import PHASES, default_steps, resolve_named_phases, resolve_pass_list
from ptxopt.transforms.base import REGISTRY, FunctionPass, register

PTX = """
.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""

KNOBS = {
    "i": Knob("i", "int", 4, lo=0, hi=5),
    "b": Knob("b", "bool", False),
    "f": Knob("f", "float", 0.25),
    "c": Knob("c", "str", "a", choices=("a", "b")),
}


def test_parse_value_types_and_ranges() -> None:
    assert parse_value(KNOBS["i"], "0x3") == 3
    assert parse_value(KNOBS["b"], "true") is True
    assert parse_value(KNOBS["b"], "0") is False
    assert parse_value(KNOBS["f"], "0.5") == 0.5
    assert parse_value(KNOBS["c"], "b") == "b"
    for knob, bad in (("i", "6"), ("i", "-1"), ("i", "x"), ("b", "2"), ("c", "z"), ("f", "q")):
        with pytest.raises(KnobError, match=knob):
            parse_value(KNOBS[knob], bad)


def test_parse_assignments_errors_name_the_problem() -> None:
    assert parse_assignments(["i=2", "b=1"], KNOBS) == {"i": 2, "b": True}
    with pytest.raises(KnobError, match="Name=Value"):
        parse_assignments(["i"], KNOBS)
    with pytest.raises(KnobError, match="did you mean i"):
        parse_assignments(["I=1"], KNOBS)
    with pytest.raises(KnobError, match="unknown knob 'zz'"):
        parse_assignments(["zz=1"], KNOBS)


class _Counting(FunctionPass):
    name = "test-knob-counter"
    description = "test pass: counts functions, reads one knob"
    preserves = PRESERVE_ALL
    knobs: ClassVar[tuple[Knob, ...]] = (Knob("TestCounterStep", "int", 1, lo=0),)

    def run(self, func: Func, am: AnalysisManager) -> bool:
        self.stats["functions seen"] += int(self.knob("TestCounterStep"))  # type: ignore[call-overload]
        return False


@pytest.fixture
def counting_pass():  # type: ignore[no-untyped-def]
    register(_Counting)
    yield _Counting
    REGISTRY.pop(_Counting.name, None)


def test_pass_receives_knob_and_reports_stats(counting_pass: type[FunctionPass]) -> None:
    assert counting_pass.knobs[0].owner == "test-knob-counter"
    res = optimize(PTX, "k.ptx", ["test-knob-counter"], knobs={"TestCounterStep": 7})
    assert res.report.stats["test-knob-counter"]["functions seen"] == 7
    res = optimize(PTX, "k.ptx", ["test-knob-counter"])
    assert res.report.stats["test-knob-counter"]["functions seen"] == 1
    with pytest.raises(ValueError, match="unknown knob"):
        optimize(PTX, "k.ptx", ["test-knob-counter"], knobs={"Nope": 1})


def test_phase_table_order_and_placements() -> None:
    numbers = [p.number for p in PHASES if p.number is not None]
    assert numbers == sorted(numbers)
    go = [p.number for p in PHASES if p.pass_name == "general-optimize"]
    assert go == [13, 29, 37, 46, 58, 65]
    have = {"general-optimize", "gvn-cse", "propagate-varying-first"}
    steps = default_steps(have)
    assert [s.label for s in steps][:2] == ["general-optimize@13", "general-optimize@29"]
    assert "gvn-cse@49" in [s.label for s in steps]
    # disabling one placement keeps the others; a phase number or ptxas name works too
    labels = [s.label for s in default_steps(have, ["general-optimize@29", "GvnCse", "53"])]
    assert "general-optimize@29" not in labels and "general-optimize@13" in labels
    assert "gvn-cse@49" not in labels and "propagate-varying-first@53" not in labels
    assert [s.label for s in default_steps(have, ["general-optimize"])] == [
        "gvn-cse@49",
        "propagate-varying-first@53",
    ]


def test_named_phases_and_pass_lists() -> None:
    have = {"general-optimize", "propagate-varying-first"}
    steps = resolve_named_phases(["GeneralOptimizeLate", "OriCopyProp", "53"], have)
    assert [s.label for s in steps] == [
        "general-optimize@58",
        "OriCopyProp",
        "propagate-varying-first@53",
    ]
    assert steps[1].knobs
    with pytest.raises(ValueError, match="unknown phase 'Bogus'"):
        resolve_named_phases(["Bogus"], have)
    with pytest.raises(ValueError, match="not implemented"):
        resolve_named_phases(["GvnCse"], have)
    assert [s.label for s in resolve_pass_list("general-optimize@37,default", have)][:2] == [
        "general-optimize@37",
        "general-optimize@13",
    ]
    with pytest.raises(ValueError, match="unknown pass 'none-such'"):
        resolve_pass_list("general-optimize@37,none-such", have)
    assert resolve_pass_list("none", have) == []


def test_cli_knob_and_phase_errors(capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "k.ptx"
    src.write_text(PTX)
    assert main(["opt", str(src), "--knob", "NoSuchKnob=1"]) == 2
    assert "unknown knob 'NoSuchKnob'" in capsys.readouterr().err
    assert main(["opt", str(src), "--named-phases", "Bogus"]) == 2
    assert "unknown phase" in capsys.readouterr().err
    assert main(["opt", str(src), "-O", "-p", "none"]) == 2
    assert "exclusive" in capsys.readouterr().err
    assert main(["opt", str(src), "--disable", "bogus@1"]) == 2
    out = tmp_path / "o.ptx"
    assert main(["opt", str(src), "-O", "--disable", "53", "--stats", "-o", str(out)]) == 0
    assert "st.global.u32" in out.read_text()
    assert main(["passes"]) == 0
    listing = capsys.readouterr().out
    assert "GeneralOptimizeLate" in listing and "general-optimize@58" in listing
