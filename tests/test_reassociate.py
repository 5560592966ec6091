"""reassociate (ptxas phase 50): flatten, canonical order, left-leaning rebuild, SUB
absorbed only inside ADD trees, constant folding, distribution, windowed local CSE and
every knob.  Outputs run against their inputs in the interpreter."""

from __future__ import annotations

from commoning_helpers import count, kernel, opt

from ptxopt.pipeline import available_passes

RA = ["reassociate"]

# (a + b) + c and (a + c) + b: one value after reassociation
TWO_TREES = """
 add.s32 %r4, %r1, %r2;
 add.s32 %r5, %r4, %r3;
 add.s32 %r6, %r1, %r3;
 add.s32 %r7, %r6, %r2;
 st.global.u32 [%rd4], %r5;
 st.global.u32 [%rd4+4], %r7;
"""


def _adds(out: str) -> int:
    return count(out, r"add\.s32") + count(out, r"sub\.s32")


def test_differently_nested_sums_become_one() -> None:
    out = opt(kernel(TWO_TREES), RA)
    assert _adds(out) == 2
    stores = [ln for ln in out.splitlines() if "st.global.u32" in ln]
    assert stores[0].split(",")[-1] == stores[1].split(",")[-1]  # same register stored


def test_left_leaning_canonical_chain_is_left_alone() -> None:
    body = """
 add.s32 %r4, %r1, %r2;
 add.s32 %r5, %r4, %r3;
 st.global.u32 [%rd4], %r5;
"""
    text = kernel(body)
    assert opt(text, RA, check=False) == opt(text, [], check=False)


def test_sub_absorbed_into_add_tree_and_constants_folded() -> None:
    body = """
 sub.s32 %r4, %r3, %r40;
 add.s32 %r5, %r4, 7;
 add.s32 %r6, %r5, %r2;
 add.s32 %r7, %r6, -3;
 st.global.u32 [%rd4], %r7;
"""
    out = opt(kernel(body), RA)
    assert _adds(out) == 3  # r2 + r3 - n + 4
    assert count(out, r"sub\.s32") == 1 and count(out, r"neg") == 0
    assert ", 4;" in out


def test_lone_sub_kept() -> None:
    body = """
 sub.s32 %r4, %r3, %r2;
 st.global.u32 [%rd4], %r4;
"""
    out = opt(kernel(body), RA)
    assert count(out, r"sub\.s32") == 1 and count(out, r"neg") == 0


def test_shared_inner_value_stays_a_leaf() -> None:
    body = """
 add.s32 %r4, %r1, %r2;
 add.s32 %r5, %r4, %r3;
 add.s32 %r6, %r4, %r40;
 st.global.u32 [%rd4], %r5;
 st.global.u32 [%rd4+4], %r6;
"""
    out = opt(kernel(body), RA)
    assert _adds(out) == 3


def test_bitwise_and_mul_trees() -> None:
    body = """
 xor.b32 %r4, %r3, %r2;
 xor.b32 %r5, %r4, %r40;
 xor.b32 %r6, %r40, %r2;
 xor.b32 %r7, %r6, %r3;
 mul.lo.s32 %r8, %r2, 3;
 mul.lo.s32 %r9, %r8, %r3;
 mul.lo.s32 %r10, %r9, 5;
 add.s32 %r11, %r5, %r7;
 add.s32 %r11, %r11, %r10;
 st.global.u32 [%rd4], %r11;
"""
    out = opt(kernel(body), RA)
    assert count(out, r"xor") == 2
    assert count(out, r"mul\.lo") == 2 and ", 15;" in out


def test_float_trees_need_fast_math() -> None:
    body = """
 mov.b32 %f1, %r2;
 mov.b32 %f2, %r3;
 mov.b32 %f3, %r40;
 add.f32 %f4, %f1, %f2;
 add.f32 %f5, %f4, %f3;
 add.f32 %f6, %f1, %f3;
 add.f32 %f7, %f6, %f2;
 mov.b32 %r4, %f5;
 mov.b32 %r5, %f7;
 st.global.u32 [%rd4], %r4;
 st.global.u32 [%rd4+4], %r5;
"""
    text = kernel(body)
    assert count(opt(text, RA), r"add\.f32") == 4
    fast = opt(text, RA, {"ReassociateFastMath": True}, check=False)
    assert count(fast, r"add\.f32") == 2


def test_distribution_budget() -> None:
    body = """
 mul.lo.s32 %r4, %r2, %r40;
 mul.lo.s32 %r5, %r40, %r3;
 add.s32 %r6, %r4, %r5;
 add.s32 %r7, %r6, %r1;
 st.global.u32 [%rd4], %r7;
"""
    text = kernel(body)
    assert count(opt(text, RA), r"mul\.lo") == 1
    assert count(opt(text, RA, {"DistributeAndReassociateMulBudget": 0}), r"mul\.lo") == 2


def test_large_immediate_in_64_bit_add() -> None:
    body = """
 add.s64 %rd6, %rd4, 2147483647;
 add.s64 %rd7, %rd6, %rd5;
 add.s64 %rd8, %rd7, 2147483647;
 st.global.u64 [%rd4], %rd8;
"""
    text = kernel(body)
    out = opt(text, RA)
    assert "4294967294" not in out
    wide = opt(text, RA, {"ReassociateLargeImmInUIADD64": True})
    assert "4294967294" in wide


def test_allow_reassociate_cse_off() -> None:
    text = kernel(TWO_TREES)
    off = opt(text, RA, {"AllowReassociateCSE": False}, check=False)
    assert off == opt(text, [], check=False)


def test_budget_and_skip() -> None:
    text = kernel(TWO_TREES)
    base = opt(text, [], check=False)
    assert opt(text, RA, {"ReassociateCSEBudget": 0}, check=False) == base
    assert opt(text, RA, {"ReassociateCSESkip": 1000}, check=False) == base
    assert _adds(opt(text, RA, {"ReassociateCSESkip": 2})) == 2


def test_window_limits_local_cse() -> None:
    body = """
 mul.lo.s32 %r4, %r2, %r3;
 add.s32 %r20, %r1, 1;
 add.s32 %r21, %r20, 1;
 add.s32 %r22, %r21, 1;
 mul.lo.s32 %r5, %r2, %r3;
 st.global.u32 [%rd4], %r4;
 st.global.u32 [%rd4+4], %r5;
 st.global.u32 [%rd4+8], %r22;
"""
    text = kernel(body)
    assert count(opt(text, RA), r"mul\.lo") == 1
    assert count(opt(text, RA, {"ReassociateCSEWindow": 1}), r"mul\.lo") == 2


def test_registered_at_phase_50() -> None:
    cls = available_passes()["reassociate"]
    assert cls.phase == 50
    assert {k.name for k in cls.knobs} >= {
        "AllowReassociateCSE",
        "ReassociateCSEBudget",
        "ReassociateCSEWindow",
        "ReassociateCSESkip",
        "ReassociateLargeImmInUIADD64",
        "DistributeAndReassociateMulBudget",
    }


def test_negation_reaches_leaves_under_a_subtracted_sum() -> None:
    body = """
 add.s32 %r4, %r2, %r3;
 sub.s32 %r5, %r40, %r4;
 add.s32 %r6, %r5, %r1;
 st.global.u32 [%rd4], %r6;
"""
    out = opt(kernel(body), RA)
    assert count(out, r"sub\.s32") == 2 and count(out, r"add\.s32") == 1
