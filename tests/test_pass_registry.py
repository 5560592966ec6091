"""The pass registry and the pass base class: names are required, knobs get their
owner, options are validated and filled with defaults."""

from __future__ import annotations

import pytest

from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Func
from ptxopt.knobs import Knob
from ptxopt.transforms.base import REGISTRY, FunctionPass, register


def _pass(name: str, knobs: tuple[Knob, ...] = ()) -> type[FunctionPass]:
    class P(FunctionPass):
        def run(self, func: Func, am: AnalysisManager) -> bool:
            return False

    P.name = name
    P.knobs = knobs
    return P


def test_a_pass_without_a_name_is_refused() -> None:
    cls = _pass("")
    with pytest.raises(ValueError, match="P has no name"):
        register(cls)
    assert "" not in REGISTRY


def test_knobs_are_owned_by_their_pass_unless_declared_otherwise() -> None:
    mine, theirs = Knob("KMine", "int", 3), Knob("KTheirs", "bool", True, owner="other")
    cls = _pass("test-registry-owner", (mine, theirs))
    try:
        assert register(cls) is cls and REGISTRY["test-registry-owner"] is cls
        assert [(k.name, k.owner, k.default) for k in cls.knobs] == [
            ("KMine", "test-registry-owner", 3),
            ("KTheirs", "other", True),
        ]
    finally:
        REGISTRY.pop("test-registry-owner", None)


def test_options_default_validate_and_override() -> None:
    cls = _pass("test-registry-options", (Knob("KA", "int", 3), Knob("KB", "str", "x")))
    p = cls()
    assert p.options == {"KA": 3, "KB": "x"} and p.knob("KA") == 3
    assert cls(KA=7).knob("KA") == 7 and cls(KA=7).knob("KB") == "x"
    with pytest.raises(ValueError, match="pass 'test-registry-options' has no knob 'KC'"):
        cls(KC=1)
    assert p.arch is None and not p.stats


def test_varying_propagation_passes_change_nothing_and_say_so() -> None:
    from ptxopt.driver import optimize
    from ptxopt.transforms.mark_uniform_branches import run as mark

    text = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u32 n)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<3>;
\tld.param.u32 %r1, [n];
\tsetp.lt.u32 %p1, %r1, 4;
\t@%p1 bra L;
\tmov.u32 %r2, %tid.x;
L:
\tret;
}
"""
    passes = ["propagate-varying-first", "propagate-varying-second"]
    res = optimize(text, "v.ptx", passes)
    assert res.report.changed == {"propagate-varying-first": 0, "propagate-varying-second": 0}
    assert res.text == optimize(text, "v.ptx", []).text
    marked = optimize(text, "v.ptx", ["mark-uniform-branches"])
    assert marked.report.changed == {"mark-uniform-branches": 1} and "bra.uni" in marked.text
    am = AnalysisManager()
    fn = marked.module.funcs[0]
    assert mark(fn, am) is False  # already marked: nothing to do, and a real bool


def test_an_idempotent_pass_is_skipped_while_the_module_is_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """general-optimize runs at six placements of -O: once a run changes nothing, later
    placements are skipped until some pass changes the module (the output is the same:
    tests/test_passes_differential.py and the corpus checks run -O)."""
    from ptxopt.driver import optimize
    from ptxopt.transforms.general_optimize import GeneralOptimize

    calls: list[bool] = []
    real = GeneralOptimize.run

    def counted(self: GeneralOptimize, func: Func, am: AnalysisManager) -> bool:
        changed = real(self, func, am)
        calls.append(changed)
        return changed

    monkeypatch.setattr(GeneralOptimize, "run", counted)
    text = (
        ".version 8.0\n.target sm_80\n.address_size 64\n"
        ".visible .entry k(.param .u64 p)\n{\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<2>;\n"
        "\tld.param.u64 %rd1, [p];\n\tmov.u32 %r1, 5;\n\tadd.u32 %r2, %r1, 2;\n"
        "\tst.global.u32 [%rd1], %r2;\n\tret;\n}\n"
    )
    go = "general-optimize"
    optimize(text, "t.ptx", [go, go, go, go])
    assert calls == [True, False]  # the third and fourth placements are skipped
    calls.clear()
    # other knob values are another pass as far as the fixed point goes
    from ptxopt.phases import Step

    other = Step(go, go, None, {"GeneralOptimizeIterations": 3})
    optimize(text, "t.ptx", [go, other, go, other])
    assert calls == [True, False, False]
    calls.clear()
    monkeypatch.setattr(GeneralOptimize, "idempotent", False)
    optimize(text, "t.ptx", [go, go, go])
    assert calls == [True, False, False]
