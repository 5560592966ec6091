"""The dynamic uniformity checker: claims are checked where values are written and
where they are read, so a value that is uniform at every write but differs between the
lanes that meet later (a join strictly before the post-dominator, temporal divergence)
is refuted by execution; the divergence analysis passes that check on every kernel of
``tests/divergence``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ptxopt.analysis.postdominators import PostDomTree
from ptxopt.ir.lift import lift_module
from ptxopt.ptx.parser import parse
from ptxopt.report.analyze_cli import analyze_text
from ptxopt.sim import launch

HERE = Path(__file__).parent / "divergence"
HIDDEN = (HERE / "hidden_join.ptx").read_text()


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def _lines(res: Any) -> set[int]:
    return {int(v.location.split(":")[1]) for v in res.violations}


def test_the_hidden_join_lies_strictly_before_the_post_dominator() -> None:
    fn = lift_module(parse(HIDDEN)).func("hidden_join")
    by_label = {lab: b.index for b in fn.blocks for lab in b.labels}
    branch = next(b.index for b in fn.blocks if b.terminator and "%p1" in str(b.terminator.ast))
    pdt = PostDomTree.build(fn.cfg_succs(), 0)
    assert pdt.ipdom[branch] == by_label["X"]
    assert by_label["J"] != by_label["X"]
    # J is reached from both arms of the branch
    preds_j = {p.index for p in fn.blocks[by_label["J"]].preds}
    assert len(preds_j) == 2 and by_label["L"] in preds_j


def test_a_value_uniform_at_every_write_is_refuted_where_it_is_read() -> None:
    """Lanes 0..15 reach J through L (%r3 = 2), lanes 16..31 through the other arm
    (%r3 = 1): each group writes %r5 at J with one value, so the write check passes;
    after the groups reconverge at X the store reads two values."""
    out = np.zeros(32, np.uint32)
    res = launch(HIDDEN, "hidden_join", 1, 32, [out, 9], uniform_claims={"hidden_join": ["%r5"]})
    assert list(out[:16]) == [3] * 16 and list(out[16:]) == [2] * 16
    assert _lines(res) == {_line(HIDDEN, "st.global.u32")}
    v = res.violations[0]
    assert v.register == "%r5" and set(v.values.values()) == {2, 3}


def test_reads_are_checked_over_the_active_lanes_only() -> None:
    """Inside one arm every lane agrees: a claim on %r3 holds where it is read at J
    (each arm's lanes execute J separately)."""
    res = launch(HIDDEN, "hidden_join", 1, 32, [np.zeros(32, np.uint32), 9],
                 uniform_claims={"hidden_join": ["%r3"]})  # fmt: skip
    assert not res.violations


def test_ssa_value_is_checked_where_it_is_read() -> None:
    """An SSA claim on the value %r5 gets at X (the phi) is refuted at the phi's block
    and at the store that reads it; the value defined at J is only written."""
    fn = lift_module(parse(HIDDEN)).func("hidden_join")
    phi = next(p.result for b in fn.blocks for p in b.phis if p.result.var == "%r5")
    at_j = next(d for b in fn.blocks for i in b.insts for d in i.defs if i.opcode == "add")
    out = np.zeros(32, np.uint32)
    res = launch(HIDDEN, "hidden_join", 1, 32, [out, 9], uniform_claims={"hidden_join": [phi]})
    assert _line(HIDDEN, "st.global.u32") in _lines(res)
    assert all(v.value == repr(phi) for v in res.violations)
    res = launch(HIDDEN, "hidden_join", 1, 32, [out, 9], uniform_claims={"hidden_join": [at_j]})
    assert not res.violations


TEMPORAL = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<4>;
\tmov.u32 %r1, %tid.x;
\tand.b32 %r2, %r1, 3;
\tmov.u32 %r3, 0;
LOOP:
\tadd.u32 %r3, %r3, 1;
\tmul.lo.u32 %r4, %r3, 10;
\tsetp.lt.u32 %p1, %r3, %r2;
\t@%p1 bra LOOP;
\tld.param.u64 %rd1, [out];
\tmul.wide.u32 %rd2, %r1, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r4;
\tret;
}
"""


def test_temporal_divergence_is_refuted_after_the_loop() -> None:
    """%r4 is written by all lanes still in the loop with one value per trip, but
    lanes leave after different trips: the store after the loop reads four values."""
    fn = lift_module(parse(TEMPORAL)).func("k")
    r4 = next(d for b in fn.blocks for i in b.insts for d in i.defs if i.opcode == "mul")
    out = np.zeros(32, np.uint32)
    res = launch(TEMPORAL, "k", 1, 32, [out], uniform_claims={"k": [r4]})
    assert _lines(res) == {_line(TEMPORAL, "st.global.u32")}
    assert set(res.violations[0].values.values()) == {10, 20, 30}
    # and the analysis calls it varying
    mod, md, _ = analyze_text(TEMPORAL, "<input>")
    f = mod.func("k")
    mul = next(d for b in f.blocks for i in b.insts for d in i.defs if i.opcode == "mul")
    assert md.funcs["k"].is_varying(mul)


def _entries(text: str) -> list[str]:
    return [ln.split(".entry", 1)[1].split("(", 1)[0].strip() for ln in text.splitlines()
            if ".entry" in ln]  # fmt: skip


# calls.ptx passes .reg parameters, which the interpreter does not run
CASES = sorted(p for p in HERE.glob("*.ptx") if p.name != "calls.ptx")


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
@pytest.mark.parametrize("n", [0, 2, 9, 100])
def test_analysis_claims_hold_by_execution(path: Path, n: int) -> None:
    """Every register and every SSA value the analysis calls uniform holds one value
    per warp wherever it is written or read (blocks of a whole and a partial warp)."""
    text = path.read_text()
    mod, md, rep = analyze_text(text, "<input>")
    for fr in rep["functions"]:
        if fr["name"] not in _entries(text):
            continue
        fn = mod.func(fr["name"])
        names = sorted(r for r, s in fr["registers"].items() if s == "uniform")
        values = [v for v in fn.values() if v.kind in ("inst", "phi")]
        ssa = [v for v in values if not md.funcs[fn.name].is_varying(v)]
        claims: dict[str, list[Any]] = {f["name"]: [] for f in rep["functions"]}
        for f in rep["functions"]:
            claims[f["name"]] = sorted(r for r, s in f["registers"].items() if s == "uniform")
        for block in (32, 37):
            for claim in ({**claims, fr["name"]: names}, {fr["name"]: ssa}):
                res = launch(text, fr["name"], 2, block, [np.zeros(4096, np.uint32), n],
                             uniform_claims=claim)  # fmt: skip
                assert not res.violations, [str(v) for v in res.violations[:3]]
