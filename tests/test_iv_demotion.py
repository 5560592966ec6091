"""iv-demotion: which loops demote at which level, and execution at boundary values.

Each kernel below runs a few iterations near 2^31 / 2^32 (the start is a parameter),
so the interpreter exercises the exact edges the proofs are about: i + step crossing
2^31 and 2^32, n = 0, 1, negative starts, huge strides.  Original and demoted PTX must
produce identical memory for every level 0-5 and with versioning."""

from __future__ import annotations

import numpy as np
import pytest

from ptxopt.driver import optimize
from ptxopt.sim import differential

HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"

# u32 start/n/step widened to 64 bits; counter escapes; acc += i inside the loop.
UNSIGNED = (
    HEAD
    + """
.visible .entry k(.param .u64 out, .param .u32 start, .param .u32 n, .param .u32 step)
{
    .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<16>;
    ld.param.u64 %rd9, [out];
    ld.param.u32 %r1, [start]; ld.param.u32 %r2, [n]; ld.param.u32 %r3, [step];
    mov.u32 %r4, %tid.x;
    add.s32 %r5, %r1, %r4;
    cvt.u64.u32 %rd1, %r5;
    cvt.u64.u32 %rd2, %r2;
    cvt.u64.u32 %rd3, %r3;
    mov.u64 %rd5, 0;
    setp.ge.u64 %p1, %rd1, %rd2;
    @%p1 bra DONE;
LOOP:
    add.s64 %rd5, %rd5, %rd1;
    xor.b64 %rd5, %rd5, 77;
    add.s64 %rd1, %rd1, %rd3;
    setp.lt.u64 %p2, %rd1, %rd2;
    @%p2 bra LOOP;
DONE:
    cvt.u64.u32 %rd10, %r4;
    shl.b64 %rd11, %rd10, 3;
    add.s64 %rd12, %rd9, %rd11;
    st.global.u64 [%rd12], %rd5;
    ret;
}
"""
)

# the same with a mask making n < 2^30: provable, i escapes, address built from i
MASKED = (
    HEAD
    + """
.visible .entry k(.param .u64 out, .param .u32 start, .param .u32 n, .param .u32 step)
{
    .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<16>; .reg .b32 %q<4>;
    ld.param.u64 %rd9, [out];
    ld.param.u32 %r1, [start]; ld.param.u32 %r2, [n]; ld.param.u32 %r3, [step];
    and.b32 %r1, %r1, 1073741823;
    and.b32 %r2, %r2, 1073741823;
    and.b32 %r3, %r3, 255;
    add.s32 %r3, %r3, 1;
    mov.u32 %r4, %tid.x;
    add.s32 %r5, %r1, %r4;
    cvt.u64.u32 %rd1, %r5;
    cvt.u64.u32 %rd2, %r2;
    cvt.u64.u32 %rd3, %r3;
    mov.u64 %rd5, 0;
    setp.ge.u64 %p1, %rd1, %rd2;
    @%p1 bra DONE;
LOOP:
    add.s64 %rd5, %rd5, %rd1;
    shl.b64 %rd6, %rd1, 1;
    xor.b64 %rd5, %rd5, %rd6;
    cvt.u32.u64 %q1, %rd1;
    add.s32 %q2, %q1, 1;
    @%p1 bra SKIP;
    mul.lo.s64 %rd7, %rd1, 5;
    add.s64 %rd5, %rd5, %rd7;
SKIP:
    add.s64 %rd1, %rd1, %rd3;
    setp.lt.u64 %p2, %rd1, %rd2;
    @%p2 bra LOOP;
DONE:
    cvt.u64.u32 %rd10, %r4;
    shl.b64 %rd11, %rd10, 4;
    add.s64 %rd12, %rd9, %rd11;
    st.global.u64 [%rd12], %rd5;
    st.global.u64 [%rd12+8], %rd1;
    ret;
}
"""
)

# signed counter from an s32 start (may be negative) up to a masked bound
SIGNED = (
    HEAD
    + """
.visible .entry k(.param .u64 out, .param .s32 start, .param .u32 n, .param .u32 step)
{
    .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<16>;
    ld.param.u64 %rd9, [out];
    ld.param.s32 %r1, [start]; ld.param.u32 %r2, [n]; ld.param.u32 %r3, [step];
    min.s32 %r1, %r1, 1000000;
    and.b32 %r2, %r2, 1073741823;
    and.b32 %r3, %r3, 7;
    add.s32 %r3, %r3, 1;
    cvt.s64.s32 %rd1, %r1;
    cvt.u64.u32 %rd2, %r2;
    cvt.u64.u32 %rd3, %r3;
    mov.u64 %rd5, 0;
LOOP:
    add.s64 %rd5, %rd5, %rd1;
    mul.lo.s64 %rd6, %rd1, 3;
    xor.b64 %rd5, %rd5, %rd6;
    add.s64 %rd1, %rd1, %rd3;
    setp.lt.s64 %p2, %rd1, %rd2;
    @%p2 bra LOOP;
    mov.u32 %r4, %tid.x;
    cvt.u64.u32 %rd10, %r4;
    shl.b64 %rd11, %rd10, 4;
    add.s64 %rd12, %rd9, %rd11;
    st.global.u64 [%rd12], %rd5;
    st.global.u64 [%rd12+8], %rd1;
    ret;
}
"""
)

# grid-stride with 64-bit n and a pointer recurrence (LLVM's saxpy shape)
GRID = (
    HEAD
    + """
.visible .entry k(.param .u64 out, .param .u64 start, .param .u64 n, .param .u64 step)
{
    .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<20>;
    ld.param.u64 %rd9, [out];
    ld.param.u64 %rd1, [start]; ld.param.u64 %rd2, [n]; ld.param.u64 %rd3, [step];
    mov.u32 %r4, %tid.x;
    cvt.u64.u32 %rd10, %r4;
    add.s64 %rd1, %rd1, %rd10;
    shl.b64 %rd11, %rd10, 4;
    add.s64 %rd12, %rd9, %rd11;
    mov.u64 %rd5, 0;
    setp.ge.u64 %p1, %rd1, %rd2;
    @%p1 bra DONE;
    shl.b64 %rd16, %rd1, 2;
    shl.b64 %rd4, %rd3, 2;
LOOP:
    add.s64 %rd5, %rd5, %rd16;
    add.s64 %rd1, %rd1, %rd3;
    add.s64 %rd16, %rd16, %rd4;
    setp.lt.u64 %p2, %rd1, %rd2;
    @%p2 bra LOOP;
DONE:
    st.global.u64 [%rd12], %rd5;
    ret;
}
"""
)

U32 = (1 << 32) - 1
BOUNDARY_U = [
    # (start, n, step)
    (0, 0, 1),
    (0, 1, 1),
    (5, 3, 1),
    ((1 << 31) - 40, (1 << 31) + 5, 3),
    ((1 << 31) - 40, (1 << 31) - 1, 7),
    (U32 - 60, U32, 3),
    (U32 - 60, U32, 1),
    (U32 - 90, U32 - 1, 64),
    (U32 - 5, U32, U32),
    (10, 40, (1 << 31) + 1),
]
BOUNDARY_S = [
    # (start, n, step): n is masked below 2^30, start clamped to 10^6
    (0, 0, 1),
    (0, 1, 1),
    (-40, 5, 3),
    (-5, 0, 1),
    ((1 << 31) - 1, 3, 7),
    (-100, 1 << 30, 1),
    (-7, -1 % (1 << 32) & ~((1 << 30) - 1), 1),
]
BOUNDARY_64 = [
    (0, 0, 1),
    (0, 1, 1),
    ((1 << 31) - 40, (1 << 31) + 5, 3),
    (U32 - 60, U32, 3),
    (U32 - 60, U32 + 30, 3),
    ((1 << 32) + 3, (1 << 32) + 50, 2),
    (U32 - 5, 1 << 40, U32),
    (10, 40, (1 << 32) + 1),
    (1 << 63, (1 << 63) + 40, 3),
]


def _make(start: int, n: int, step: int, signed: bool, wide: bool):  # type: ignore[no-untyped-def]
    def make(seed: int = 0) -> list[object]:
        out = np.zeros(64, np.uint64)
        if wide:
            return [out, np.uint64(start), np.uint64(n % (1 << 64)), np.uint64(step)]
        s = np.int32(start) if signed else np.uint32(start % (1 << 32))
        return [out, s, np.uint32(n % (1 << 32)), np.uint32(step)]

    return make


def _opt(text: str, **knobs: object) -> tuple[str, list[str]]:
    res = optimize(text, passes=["iv-demotion"], knobs=knobs, verify_each=True)
    return res.text, [ln for ln in res.text.splitlines() if "newBaseIV" in ln]


def _check(
    text: str, out: str, cases: list[tuple[int, int, int]], signed: bool, wide: bool
) -> None:
    for start, n, step in cases:
        res = differential(text, out, "k", 1, 4, _make(start, n, step, signed, wide), trials=1)
        assert res.ok, (start, n, step, res.message)


KNOB_SETS = [{"remat-iv": lv} for lv in range(6)] + [{"remat-iv": 4, "remat-iv-version": True}]


@pytest.mark.parametrize(
    "knobs", KNOB_SETS, ids=lambda k: "-".join(f"{a}={b}" for a, b in k.items())
)
@pytest.mark.parametrize(
    "name,text,cases,signed,wide",
    [
        ("unsigned", UNSIGNED, BOUNDARY_U, False, False),
        ("masked", MASKED, BOUNDARY_U, False, False),
        ("signed", SIGNED, BOUNDARY_S, True, False),
        ("grid", GRID, BOUNDARY_64, False, True),
    ],
    ids=["unsigned", "masked", "signed", "grid"],
)
def test_boundary_values_execute_identically(
    name: str,
    text: str,
    cases: list[tuple[int, int, int]],
    signed: bool,
    wide: bool,
    knobs: dict[str, object],
) -> None:
    out, _ = _opt(text, **knobs)
    _check(text, out, cases, signed, wide)


def test_levels_gate_use_categories() -> None:
    # MASKED has same-block, cross-block, exit-compare and escape uses
    assert not _opt(MASKED, **{"remat-iv": 0})[1]
    assert not _opt(MASKED, **{"remat-iv": 2})[1]
    assert _opt(MASKED, **{"remat-iv": 3})[1]
    assert _opt(MASKED, **{"remat-iv": 4})[1]


def test_signed_counter_demotes_with_sign_extension() -> None:
    out, marks = _opt(SIGNED)
    assert marks
    assert "cvt.s64.s32" in out and "setp.lt.s32" in out
    assert "mul.wide.s32" in out  # mul.lo.s64 of the counter became a widening multiply


def test_exit_test_rewrite_makes_u32_loop_demotable() -> None:
    out, marks = _opt(UNSIGNED, **{"remat-iv": 4})
    assert marks and "%newICmp_dist" in out
    out, marks = _opt(UNSIGNED, **{"remat-iv": 4, "remat-iv-exit-rewrite": False})
    assert not marks


def test_dead_wide_iv_is_deleted() -> None:
    out, _ = _opt(MASKED)
    body = out.split("LOOP:")[1].split("DONE:")[0] if "LOOP:" in out else out
    assert "add.s64" not in body.split("SKIP:")[-1] or "newInc" in body
    assert "setp.lt.u64" not in out


def test_dump_names_each_decision(capsys: pytest.CaptureFixture[str]) -> None:
    optimize(GRID, passes=["iv-demotion"], knobs={"dump-remat-iv": 1})
    err = capsys.readouterr().err
    assert "remat-iv: k loop LOOP phiNode" in err and "kept" in err
    optimize(MASKED, passes=["iv-demotion"], knobs={"dump-remat-iv": 1})
    assert "demoted [range]" in capsys.readouterr().err


def test_explain_reports_every_decision() -> None:
    """``--explain`` carries the same decisions as ``dump-remat-iv``, without the
    knob, one line per candidate IV."""
    res = optimize(GRID, passes=["iv-demotion"])
    notes = res.report.notes["iv-demotion"]
    stats = res.report.stats["iv-demotion"]
    assert len(notes) == stats["IVs demoted"] + stats["IVs kept wide"]
    assert all(n.startswith("k: loop LOOP phiNode ") for n in notes)
    masked = optimize(MASKED, passes=["iv-demotion"]).report.notes["iv-demotion"]
    assert any(": demoted [range]: " in n for n in masked)


def test_versioning_guards_a_demoted_copy() -> None:
    for knobs in ({"remat-iv": 5}, {"remat-iv": 4, "remat-iv-version": True}):
        out, marks = _opt(GRID, **knobs)
        assert marks, knobs
        assert "bra.uni \t$L__ivdemo_v0_0" in out or "bra.uni \t$L__ptxopt_edge" in out
        assert "setp.le.u64" in out and "mul.wide.u32" in out  # the offset recurrence
        assert "setp.lt.u64" in out  # the original loop stays as the fallback
    out, marks = _opt(GRID, **{"remat-iv": 4})
    assert not marks


def test_profitability_knobs() -> None:
    # one in-loop extension: refused when no extension is allowed
    assert _opt(MASKED, **{"remat-iv-max-clones": 0})[1] == []
    assert _opt(MASKED, **{"remat-iv-max-clones": 1})[1]
    # the offset recurrence of GRID is rebuilt from the narrow counter unless disabled
    out, _ = _opt(GRID, **{"remat-iv": 5})
    assert "mul.wide.u32" in out
    out, marks = _opt(GRID, **{"remat-iv": 5, "remat-iv-pointer-uses": 0})
    assert marks and "mul.wide.u32" not in out


# counting down past zero: the last i - 3 is negative and escapes (sign extension)
DOWN = (
    HEAD
    + """
.visible .entry k(.param .u64 out, .param .s32 start, .param .u32 n, .param .u32 step)
{
    .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<16>;
    ld.param.u64 %rd9, [out];
    ld.param.s32 %r1, [start];
    min.s32 %r1, %r1, 1000;
    max.s32 %r1, %r1, 0;
    cvt.s64.s32 %rd1, %r1;
    mov.u64 %rd5, 0;
LOOP:
    add.s64 %rd5, %rd5, %rd1;
    add.s64 %rd1, %rd1, -3;
    setp.gt.s64 %p2, %rd1, 0;
    @%p2 bra LOOP;
    mov.u32 %r4, %tid.x;
    cvt.u64.u32 %rd10, %r4;
    shl.b64 %rd11, %rd10, 4;
    add.s64 %rd12, %rd9, %rd11;
    st.global.u64 [%rd12], %rd5;
    st.global.u64 [%rd12+8], %rd1;
    ret;
}
"""
)


def test_down_counter_escaping_below_zero() -> None:
    out, marks = _opt(DOWN)
    assert marks and "cvt.s64.s32" in out
    _check(DOWN, out, [(0, 0, 0), (1, 0, 0), (2, 0, 0), (100, 0, 0), (-5, 0, 0)], True, False)
