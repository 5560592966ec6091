"""gvn-cse (ptxas phase 49): every knob, every mode, the per-SM dispatch, the memory and
barrier scope breaks, predicate compatibility and the eligibility classes.  Every
output is also run against its input in the interpreter (``opt`` checks it)."""

from __future__ import annotations

import pytest
from commoning_helpers import count, kernel, opt

from ptxopt.knobs import KnobError, parse_assignments
from ptxopt.phases import resolve_named_phases
from ptxopt.pipeline import available_passes
from ptxopt.transforms.gvn_cse import plan_for, runs_by_default, sm_number

GVN = ["gvn-cse"]

# a commutative pair in one block, a product repeated in a one-predecessor successor
# (same extended basic block) and after a join, and an xor in one arm and the join
CFG_BODY = """
 add.s32 %r4, %r2, %r3;
 add.s32 %r5, %r3, %r2;
 mul.lo.s32 %r6, %r2, %r3;
 st.global.u32 [%rd4], %r5;
 st.global.u32 [%rd4+4], %r6;
 setp.lt.u32 %p1, %r1, 7;
 @%p1 bra ARM;
 mul.lo.s32 %r7, %r2, %r3;
 xor.b32 %r8, %r4, %r3;
 add.s32 %r11, %r7, %r8;
 st.global.u32 [%rd4+8], %r11;
ARM:
 mul.lo.s32 %r9, %r2, %r3;
 xor.b32 %r10, %r4, %r3;
 st.global.u32 [%rd4+12], %r9;
 st.global.u32 [%rd4+4], %r10;
"""


def _counts(out: str) -> tuple[int, int, int]:
    return (count(out, r"add\.s32"), count(out, r"mul\.lo"), count(out, r"xor"))


def test_commutative_operands_share_a_value_number() -> None:
    out = opt(kernel(CFG_BODY), GVN)
    assert count(out, r"add\.s32") == 2  # %r5 = %r3 + %r2 is %r4
    assert "add.s32 \t%r4, %r2, %r3;" in out


def test_sm_dispatch_default_targets() -> None:
    assert [runs_by_default(sm) for sm in (60, 70, 75, 80, 86, 89, 90, 100, 120)] == [
        True, True, True, False, False, False, True, True, True,
    ]  # fmt: skip
    assert sm_number("sm_90a") == 90 and sm_number(None) is None
    text = kernel(CFG_BODY, "sm_80")
    assert opt(text, GVN, check=False) == opt(text, [], check=False)  # Ampere: no-op
    assert _counts(opt(text, GVN, arch="sm_86")) == (3, 3, 2)  # Ampere/Ada family too
    assert _counts(opt(text, GVN, {"EnableGvnCse": 1})) == (2, 1, 2)


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_enable_gvn_cse_zero_turns_it_off(arch: str) -> None:
    text = kernel(CFG_BODY, arch)
    assert opt(text, GVN, {"EnableGvnCse": 0}, check=False) == opt(text, [], check=False)


@pytest.mark.parametrize(
    ("mode", "arch", "expect"),
    [
        # (add.s32, mul.lo, xor) left; the input has 3, 3, 2
        (0, "sm_90", (3, 3, 2)),
        (1, "sm_90", (2, 3, 2)),  # single block: only the commutative pair
        (2, "sm_75", (2, 2, 2)),  # EBB pre-pass: across the one-predecessor edge only
        (2, "sm_90", (2, 1, 2)),  # no pre-pass on sm_90: across the join too
        (3, "sm_75", (2, 1, 2)),
        (4, "sm_75", (2, 2, 2)),  # mode 4 without the enhanced scope = mode 2
        (4, "sm_90", (2, 1, 2)),  # with it = mode 3
        (5, "sm_75", (2, 1, 2)),
        (6, "sm_75", (2, 1, 2)),
        (7, "sm_90", (3, 3, 2)),  # beyond 6: nothing
    ],
)
def test_modes_scope(mode: int, arch: str, expect: tuple[int, int, int]) -> None:
    out = opt(kernel(CFG_BODY, arch), GVN, {"EnableGvnCseMode": mode})
    assert _counts(out) == expect


def test_mode_plans() -> None:
    assert plan_for(0, 90) is None and plan_for(7, 90) is None
    p1, p2, p2h = plan_for(1, 75), plan_for(2, 75), plan_for(2, 90)
    assert p1 is not None and p1.scope == "local"
    assert p2 is not None and p2.scope == "ebb"
    assert p2h is not None and p2h.scope == "dominator"
    p5, p5h = plan_for(5, 75), plan_for(5, 90)
    assert p5 is not None and p5.join_scan and p5h is not None
    assert len(p5h.classes) > len(p5.classes)  # special classes need the enhanced scope


SIN_BODY = """
 cvt.rn.f32.u32 %f1, %r2;
 sin.approx.f32 %f2, %f1;
 sin.approx.f32 %f3, %f1;
 add.f32 %f4, %f2, %f3;
 mov.b32 %r4, %f4;
 st.global.u32 [%rd4], %r4;
"""


@pytest.mark.parametrize(
    ("mode", "arch", "sins"),
    [(4, "sm_90", 2), (5, "sm_75", 2), (5, "sm_90", 1), (6, "sm_75", 1)],
)
def test_transcendental_class_needs_enhanced_scope(mode: int, arch: str, sins: int) -> None:
    out = opt(kernel(SIN_BODY, arch), GVN, {"EnableGvnCseMode": mode})
    assert count(out, r"sin\.approx") == sins


VOTE_BODY = """
 setp.lt.u32 %p1, %r2, %r3;
 vote.sync.ballot.b32 %r4, %p1, -1;
 vote.sync.ballot.b32 %r5, %p1, -1;
 shfl.sync.idx.b32 %r6, %r2, 3, 31, -1;
 shfl.sync.idx.b32 %r7, %r2, 3, 31, -1;
 add.s32 %r8, %r4, %r5;
 add.s32 %r9, %r6, %r7;
 st.global.u32 [%rd4], %r8;
 st.global.u32 [%rd4+4], %r9;
"""


def test_warp_class_in_mode_6() -> None:
    text = kernel(VOTE_BODY, "sm_75")
    assert count(opt(text, GVN), r"vote") == 2
    out = opt(text, GVN, {"EnableGvnCseMode": 6})
    assert count(out, r"vote") == 1 and count(out, r"shfl") == 1


def test_per_instruction_gate() -> None:
    text = kernel(CFG_BODY)
    # the first eligible instructions are the parameter loads and address arithmetic
    assert _counts(opt(text, GVN, {"EnableGvnCsePerInstr": 0})) == (3, 3, 2)
    assert _counts(opt(text, GVN, {"EnableGvnCsePerInstr": 12})) == (2, 3, 2)
    assert _counts(opt(text, GVN, {"EnableGvnCsePerInstr": -1})) == (2, 1, 2)


# -- memory and barriers ----------------------------------------------------------------


def _loads(body: str, arch: str = "sm_90", **knobs: object) -> int:
    out = opt(kernel(body, arch), GVN, dict(knobs))
    return count(out, r"ld\.global\.u32") + count(out, r"ld\.shared") - 2


def test_load_not_commoned_across_aliasing_store() -> None:
    body = """
 ld.global.u32 %r4, [%rd4];
 st.global.u32 [%rd4], %r2;
 ld.global.u32 %r5, [%rd4];
 add.s32 %r6, %r4, %r5;
 st.global.u32 [%rd4+4], %r6;
"""
    assert _loads(body) == 2


def test_load_not_commoned_across_overlapping_wider_store() -> None:
    body = """
 ld.global.u32 %r4, [%rd4+4];
 st.global.v2.u32 [%rd4], {%r2, %r3};
 ld.global.u32 %r5, [%rd4+4];
 add.s32 %r6, %r4, %r5;
 st.global.u32 [%rd4+12], %r6;
"""
    assert _loads(body) == 2


def test_load_not_commoned_across_generic_store() -> None:
    body = """
 ld.global.u32 %r4, [%rd4];
 cvta.global.u64 %rd6, %rd4;
 st.u32 [%rd6], %r2;
 ld.global.u32 %r5, [%rd4];
 add.s32 %r6, %r4, %r5;
 st.global.u32 [%rd4+4], %r6;
"""
    assert _loads(body) == 2


def test_load_commoned_across_unaliased_stores() -> None:
    body = """
 ld.global.u32 %r4, [%rd4];
 st.global.u32 [%rd4+4], %r2;
 mov.u32 %r20, sh;
 st.shared.u32 [%r20], %r3;
 ld.global.u32 %r5, [%rd4];
 add.s32 %r6, %r4, %r5;
 st.global.u32 [%rd4+8], %r6;
"""
    assert _loads(body) == 1


@pytest.mark.parametrize("sync", ["bar.sync 0;", "membar.gl;", "fence.acq_rel.gpu;"])
def test_barrier_is_a_scope_break_for_loads(sync: str) -> None:
    body = f"""
 ld.global.u32 %r4, [%rd5+8];
 {sync}
 ld.global.u32 %r5, [%rd5+8];
 add.s32 %r6, %r4, %r5;
 st.global.u32 [%rd4], %r6;
"""
    assert _loads(body) == 2


def test_readonly_loads_cross_stores_and_barriers() -> None:
    body = """
 ld.global.nc.u32 %r4, [%rd5+8];
 ld.const.u32 %r11, [ctab+4];
 st.global.u32 [%rd4], %r2;
 bar.sync 0;
 ld.global.nc.u32 %r5, [%rd5+8];
 ld.const.u32 %r12, [ctab+4];
 ld.param.u32 %r13, [n];
 add.s32 %r6, %r4, %r5;
 add.s32 %r6, %r6, %r11;
 add.s32 %r6, %r6, %r12;
 add.s32 %r6, %r6, %r13;
 st.global.u32 [%rd4+4], %r6;
"""
    out = opt(kernel(body), GVN)
    assert count(out, r"ld\.global\.nc") == 1
    assert count(out, r"ld\.const") == 1
    assert count(out, r"ld\.param\.u32") == 1


def test_volatile_atomic_and_clock_never_commoned() -> None:
    body = """
 ld.volatile.global.u32 %r4, [%rd4];
 ld.volatile.global.u32 %r5, [%rd4];
 atom.global.add.u32 %r6, [%rd4+4], 1;
 atom.global.add.u32 %r7, [%rd4+4], 1;
 mov.u32 %r8, %clock;
 mov.u32 %r9, %clock;
 sub.s32 %r10, %r9, %r8;
 add.s32 %r11, %r4, %r5;
 add.s32 %r11, %r11, %r6;
 add.s32 %r11, %r11, %r7;
 st.global.u32 [%rd4+8], %r11;
 setp.gt.s32 %p1, %r10, -1;
 selp.u32 %r12, 1, 0, %p1;
 st.global.u32 [%rd4+12], %r12;
"""
    out = opt(kernel(body), GVN)
    assert count(out, r"ld\.volatile") == 2
    assert count(out, r"atom") == 2
    assert count(out, r"mov\.u32\s+%r\d+, %clock") == 2


def test_load_across_join_needs_mode_5_and_clean_arms() -> None:
    body = """
 ld.global.u32 %r4, [%rd5+8];
 setp.lt.u32 %p1, %r1, 7;
 @%p1 bra ARM;
 st.global.u32 [%rd5+12], %r3;
ARM:
 ld.global.u32 %r5, [%rd5+8];
 add.s32 %r6, %r4, %r5;
 st.global.u32 [%rd4], %r6;
"""
    assert _loads(body) == 2  # mode 4: a join is a scope break for loads
    assert _loads(body, EnableGvnCseMode=5) == 1  # the arm's store cannot alias
    dirty = body.replace("[%rd5+12], %r3", "[%rd5+8], %r3")
    assert _loads(dirty, EnableGvnCseMode=5) == 2  # it writes the loaded word


def test_load_in_loop_not_commoned_with_store_in_loop() -> None:
    body = """
 ld.global.u32 %r4, [%rd4];
 mov.u32 %r7, 0;
LOOP:
 ld.global.u32 %r5, [%rd4];
 add.s32 %r6, %r5, 1;
 st.global.u32 [%rd4], %r6;
 add.s32 %r7, %r7, 1;
 setp.lt.u32 %p1, %r7, 3;
 @%p1 bra LOOP;
 add.s32 %r8, %r4, %r5;
 st.global.u32 [%rd4+4], %r8;
"""
    assert _loads(body, EnableGvnCseMode=6) == 2


# -- predicates and types ------------------------------------------------------------------


def test_predicate_compatibility() -> None:
    body = """
 setp.lt.u32 %p1, %r1, 9;
 mov.u32 %r4, 0;
 @%p1 add.s32 %r4, %r2, %r3;
 mov.u32 %r5, 0;
 @!%p1 add.s32 %r5, %r2, %r3;
 add.s32 %r6, %r2, %r3;
 st.global.u32 [%rd4], %r4;
 st.global.u32 [%rd4+4], %r5;
 st.global.u32 [%rd4+8], %r6;
"""
    out = opt(kernel(body), GVN)
    assert count(out, r"@%p\d+ add") == 1 and count(out, r"@!%p\d+ add") == 1
    assert count(out, r"add\.s32") == 3  # guarded and unguarded sums stay apart


def test_same_guard_same_old_value_is_commoned() -> None:
    body = """
 setp.lt.u32 %p1, %r1, 9;
 ld.global.u32 %r4, [%rd5+8];
 @%p1 add.s32 %r4, %r2, 5;
 ld.global.u32 %r5, [%rd5+8];
 @%p1 add.s32 %r5, %r2, 5;
 st.global.u32 [%rd4], %r4;
 st.global.u32 [%rd4+4], %r5;
"""
    out = opt(kernel(body), GVN)
    assert count(out, r"@%p\d+ add") == 1


def test_result_types_kept_apart() -> None:
    body = """
 mov.b32 %f1, %r2;
 mov.b32 %r4, %r2;
 add.f32 %f2, %f1, %f1;
 mov.b32 %r5, %f2;
 add.s32 %r6, %r4, %r5;
 st.global.u32 [%rd4], %r6;
"""
    out = opt(kernel(body), GVN)
    assert count(out, r"mov\.b32") >= 2


def test_knob_registry_and_named_phase() -> None:
    cls = available_passes()["gvn-cse"]
    assert cls.phase == 49
    names = {k.name for k in cls.knobs}
    assert names == {"EnableGvnCse", "EnableGvnCseMode", "EnableGvnCsePerInstr"}
    assert parse_assignments(["EnableGvnCseMode=3"]) == {"EnableGvnCseMode": 3}
    with pytest.raises(KnobError):
        parse_assignments(["EnableGvnCse=2"])
    steps = resolve_named_phases(["GvnCse"], available_passes())
    assert steps[0].pass_name == "gvn-cse" and steps[0].phase == 49


def test_constants_and_plain_copies_are_left_to_others() -> None:
    """Cost model: a constant materialization is free for ptxas to recompute and a
    plain copy computes nothing, so neither is commoned (see docs/commoning.md)."""
    body = """
 mov.u32 %r4, 7;
 mov.u32 %r5, 7;
 mov.b32 %r6, %r2;
 mov.b32 %r7, %r2;
 add.s32 %r8, %r4, %r5;
 add.s32 %r8, %r8, %r6;
 add.s32 %r8, %r8, %r7;
 st.global.u32 [%rd4], %r8;
"""
    out = opt(kernel(body), GVN, {"EnableGvnCseMode": 6})
    assert count(out, r"mov\.u32\s+%r\d+, 7;") == 2
    assert count(out, r"mov\.b32") == 2
