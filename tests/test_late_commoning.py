"""late-commoning (ptxas phase 64): the gate and ForceLateCommoning, equivalence classes
over the dominator tree, predicate compatibility (same guard, complementary guards),
move representatives and DisableMoveCommoning, loads.  Outputs run against their
inputs in the interpreter."""

from __future__ import annotations

from commoning_helpers import count, kernel, opt

from ptxopt.phases import resolve_named_phases
from ptxopt.pipeline import available_passes
from ptxopt.transforms.late_commoning import class_bit

LC = ["late-commoning"]
FORCE = {"ForceLateCommoning": True}

# predicated code (what if-conversion leaves) plus a redundancy after a join
PREDICATED = """
 setp.lt.u32 %p1, %r2, %r3;
 @%p1 add.s32 %r5, %r2, %r3;
 @!%p1 add.s32 %r5, %r2, %r3;
 mul.lo.s32 %r6, %r2, %r3;
 @%p1 bra J;
 xor.b32 %r7, %r2, 9;
 st.global.u32 [%rd4+8], %r7;
J:
 mul.lo.s32 %r8, %r2, %r3;
 add.s32 %r9, %r6, %r8;
 st.global.u32 [%rd4], %r5;
 st.global.u32 [%rd4+4], %r9;
"""

PLAIN = """
 mul.lo.s32 %r6, %r2, %r3;
 mul.lo.s32 %r8, %r3, %r2;
 add.s32 %r9, %r6, %r8;
 st.global.u32 [%rd4], %r9;
"""


def test_runs_where_predicated_code_exists() -> None:
    out = opt(kernel(PREDICATED, "sm_80"), LC)
    assert count(out, r"mul\.lo") == 1  # commoned across the join (dominance)
    assert count(out, r"@!?%p\d+ add") == 0 and count(out, r"add\.s32") == 2


def test_gate_and_force() -> None:
    text = kernel(PLAIN, "sm_80")
    assert opt(text, LC, check=False) == opt(text, [], check=False)  # nothing predicated
    assert count(opt(text, LC, FORCE), r"mul\.lo") == 1


def test_same_guard_commoned_other_guard_not() -> None:
    body = """
 setp.lt.u32 %p1, %r2, %r3;
 setp.lt.u32 %p2, %r3, 77;
 mov.u32 %r5, %r40;
 @%p1 add.s32 %r5, %r2, 3;
 mov.u32 %r6, %r40;
 @%p1 add.s32 %r6, %r2, 3;
 mov.u32 %r7, %r40;
 @%p2 add.s32 %r7, %r2, 3;
 add.s32 %r8, %r5, %r6;
 add.s32 %r8, %r8, %r7;
 st.global.u32 [%rd4], %r8;
"""
    out = opt(kernel(body), LC)
    assert count(out, r"@%p\d+ add") == 2


def test_complementary_pair_needs_exclusive_first() -> None:
    body = """
 setp.lt.u32 %p1, %r2, %r3;
 @%p1 add.s32 %r5, %r2, %r3;
 st.global.u32 [%rd4+4], %r5;
 @!%p1 add.s32 %r5, %r2, %r3;
 st.global.u32 [%rd4], %r5;
"""
    out = opt(kernel(body), LC)
    assert count(out, r"@!?%p\d+ add") == 2  # the first result is read on its own


def test_move_commoning_and_its_knob() -> None:
    body = """
 mov.u32 %r4, %r2;
 mul.lo.s32 %r6, %r4, %r3;
 mul.lo.s32 %r8, %r2, %r3;
 add.s32 %r9, %r6, %r8;
 st.global.u32 [%rd4], %r9;
"""
    text = kernel(body)
    assert count(opt(text, LC, FORCE), r"mul\.lo") == 1
    off = opt(text, LC, {**FORCE, "DisableMoveCommoning": True})
    assert count(off, r"mul\.lo") == 2


def test_loads_only_inside_a_block_without_aliasing_store() -> None:
    body = """
 ld.global.u32 %r4, [%rd5+8];
 ld.global.u32 %r5, [%rd5+8];
 st.global.u32 [%rd5+8], %r2;
 ld.global.u32 %r6, [%rd5+8];
 add.s32 %r7, %r4, %r5;
 add.s32 %r7, %r7, %r6;
 st.global.u32 [%rd4], %r7;
"""
    out = opt(kernel(body), LC, FORCE)
    assert count(out, r"ld\.global\.u32") == 2 + 2  # two of the header's, two here


def test_class_signature_bits() -> None:
    from ptxopt.ir.lift import lift_module
    from ptxopt.ptx.parser import parse

    mod = lift_module(parse(kernel(PLAIN), "<t>"))
    insts = list(mod.funcs[0].instructions())
    bits = {class_bit(i) for i in insts if i.ast.opcode == "mul"}
    assert len(bits) == 1 and next(iter(bits)).bit_count() == 1


def test_registered_at_phase_64() -> None:
    cls = available_passes()["late-commoning"]
    assert cls.phase == 64
    assert {k.name for k in cls.knobs} == {"ForceLateCommoning", "DisableMoveCommoning"}
    steps = resolve_named_phases(
        ["LateOriCommoning", "OriReassociateAndCommon"], available_passes()
    )
    assert [s.pass_name for s in steps] == ["late-commoning", "reassociate"]
