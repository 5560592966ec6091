"""Regressions from issue #17: each wrong result or gap it lists, as a kernel that
failed (or was refused) before and passes now.  Expected values are written out from
the ISA text and were confirmed on an H100 (``hwcheck/``) unless the test says
otherwise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import ptxas_check

from ptxopt.driver import optimize
from ptxopt.ptx.ast import PtxError, Sel
from ptxopt.ptx.parser import parse
from ptxopt.sim import SimError, launch

HDR = ".version 8.6\n.target sm_90\n.address_size 64\n"


def run(body: str, n_out: int = 4, threads: int = 1, target: str = "sm_90") -> np.ndarray:
    """Run ``body`` (with ``%rd1`` pointing at the output words) and return them."""
    ptx = (
        HDR.replace("sm_90", target)
        + ".visible .entry k(.param .u64 out)\n{\n"
        + ".reg .b64 %rd<8>;\n.reg .b32 %r<16>;\n.reg .b16 %h<8>;\n.reg .f32 %f<8>;\n"
        + ".reg .pred %p<4>;\nld.param.u64 %rd1, [out];\n"
        + body
        + "\nret;\n}\n"
    )
    out = np.zeros(n_out * threads, np.uint32)
    launch(ptx, "k", 1, threads, [out])
    return out


def test_sub_cc_leaves_the_carry_of_a_plus_not_b_plus_one() -> None:
    # 1 - 2 borrows: the flag is 0 (not 1), so addc gives 0 and subc subtracts one more
    out = run(
        """
    mov.u32 %r1, 1;
    mov.u32 %r2, 2;
    sub.cc.u32 %r3, %r1, %r2;
    addc.u32 %r4, 0, 0;
    sub.cc.u32 %r3, %r2, %r1;
    addc.u32 %r5, 0, 0;
    sub.cc.u32 %r3, %r1, %r2;
    subc.u32 %r6, 10, 3;
    add.cc.u32 %r3, %r1, %r2;
    subc.u32 %r7, 10, 3;
    st.global.v4.u32 [%rd1], {%r4, %r5, %r6, %r7};
"""
    )
    assert list(out) == [0, 1, 6, 6]


def test_cvt_pack_sat_u8_and_s8_put_c_above_the_packed_pair() -> None:
    out = run(
        """
    mov.u32 %r1, 300;
    mov.u32 %r2, -5;
    mov.u32 %r3, 0xAB;
    cvt.pack.sat.u8.s32.b32 %r4, %r1, %r2, %r3;
    cvt.pack.sat.s8.s32.b32 %r5, %r1, %r2, %r3;
    cvt.pack.sat.u16.s32 %r6, %r2, %r1;
    st.global.v2.u32 [%rd1], {%r4, %r5};
    st.global.u32 [%rd1+8], %r6;
"""
    )
    assert list(out[:3]) == [0x00ABFF00, 0x00AB7FFB, 0x0000012C]


def test_fma_rn_bf16x2_rounds_each_half_once() -> None:
    # hi: 2*3+5 = 11 (0x4130), lo: 3*4+3 = 15 (0x4170)
    out = run(
        """
    mov.b32 %r1, 0x40004040;
    mov.b32 %r2, 0x40404080;
    mov.b32 %r3, 0x40a04040;
    fma.rn.bf16x2 %r4, %r1, %r2, %r3;
    mov.b16 %h2, 0x4000;
    mov.b16 %h3, 0x4040;
    mov.b16 %h4, 0x40a0;
    fma.rn.bf16 %h1, %h2, %h3, %h4;
    cvt.u32.u16 %r5, %h1;
    st.global.v2.u32 [%rd1], {%r4, %r5};
"""
    )
    assert list(out[:2]) == [0x41304170, 0x4130]


def test_fp8_conversions_both_ways() -> None:
    out = run(
        """
    mov.f32 %f1, 0f43E80000;    // 464: rounds to even past 448 -> saturates to 448
    mov.f32 %f2, 0f41880000;    // 17: halfway between 16 and 18 -> 16 (even)
    cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2;
    cvt.rn.satfinite.e5m2x2.f32 %h2, %f1, %f2;
    cvt.rn.f16x2.e4m3x2 %r3, %h1;
    cvt.rn.f16x2.e5m2x2 %r4, %h2;
    cvt.u32.u16 %r1, %h1;
    cvt.u32.u16 %r2, %h2;
    st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};
""",
        target="sm_89",
    )
    assert list(out) == [0x7E58, 0x5F4C, 0x5F004C00, 0x5F004C00]


def test_bmsk_szext_fns() -> None:
    out = run(
        """
    bmsk.clamp.b32 %r1, 4, 40;
    bmsk.wrap.b32 %r2, 4, 36;
    szext.wrap.s32 %r3, 0x80, 8;
    fns.b32 %r4, 0xF0F0, 0, 5;
    st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};
"""
    )
    assert list(out) == [0xFFFFFFF0, 0xF0, 0xFFFFFF80, 12]


VIDEO = """
    mov.u32 %r1, 0x80ff7f01;
    mov.u32 %r2, 0x017f80ff;
    mov.u32 %r3, 5;
    vadd.u32.u32.u32.sat.add %r4, %r1.b1, %r2.b2, %r3;
    mov.u32 %r9, 40;
    vshr.u32.u32.u32.clamp %r5, %r1, %r9;
    vadd4.s32.s32.s32.sat %r6, %r1, %r2, %r3;
    vmad.s32.s32.s32 %r7, -%r3, %r3.b0, %r3;
    st.global.v4.u32 [%rd1], {%r4, %r5, %r6, %r7};
"""


def test_video_instructions_run() -> None:
    assert list(run(VIDEO)) == [0x103, 0, 0x817EFF00, (5 - 25) & 0xFFFFFFFF]


def test_video_operands_parse_print_and_assemble(tmp_path: Path) -> None:
    ptx = (
        HDR
        + ".visible .entry k(.param .u64 out)\n{\n.reg .b64 %rd<8>;\n.reg .b32 %r<16>;\n"
        + "ld.param.u64 %rd1, [out];\n"
        + VIDEO
        + "vset2.u32.u32.ne.add %r8.h1, %r1.h01, %r2.h32, %r3;\n"
        + "st.global.u32 [%rd1], %r8;\nret;\n}\n"
    )
    mod = parse(ptx)
    ops = [o for fn in mod.functions for i in fn.body or [] for o in getattr(i, "operands", [])]
    sels = {str(o) for o in ops if isinstance(o, Sel)}
    assert {"%r1.b1", "%r2.b2", "-%r3", "%r3.b0", "%r8.h1", "%r1.h01", "%r2.h32"} <= sels
    out = optimize(ptx).text
    assert "%r1.b1" in out and "-%r3" in out and "%r8.h1" in out
    assert optimize(out).text == out  # printing is a fixed point
    ptxas_check(out, "sm_90", tmp_path)


def test_selectors_outside_video_instructions_are_errors() -> None:
    bad = HDR + ".visible .entry k()\n{\n.reg .b32 %r<4>;\nadd.u32 %r1, %r2.b0, 1;\nret;\n}\n"
    with pytest.raises(PtxError, match=r"<input>:7:1: error: a selector \.b0 is only allowed"):
        parse(bad)


def test_vote_sync_waits_only_for_lanes_that_have_not_exited() -> None:
    # lane 5 takes the other path and exits; the ballot of the other 31 lanes completes
    out = run(
        """
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd1, %rd1, %rd2;
    setp.ne.u32 %p1, %r1, 5;
    @%p1 bra VOTE;
    exit;
VOTE:
    setp.gt.u32 %p2, %r1, 3;
    vote.sync.ballot.b32 %r2, %p2, 0xffffffff;
    st.global.u32 [%rd1], %r2;
""",
        n_out=1,
        threads=32,
    )
    want = sum(1 << k for k in range(4, 32) if k != 5)
    assert list(out[:5]) == [want] * 5 and out[5] == 0 and all(out[6:] == want)


def test_async_and_texture_instructions_are_refused_by_name_and_line() -> None:
    # wgmma and the async copies run now (test_sim_async, test_sim_matrix); other
    # instructions it does not run (movmatrix) are refused, naming it and its line
    body = "    movmatrix.sync.aligned.m8n8.trans.b16 %r2, %r1;\n"
    with pytest.raises(SimError, match=r"<input>:\d+:\d+: error: 'movmatrix"):
        run(body, target="sm_90a")


def test_video_operand_of_a_register_declared_in_an_inner_scope() -> None:
    # the inner %r1 shadows the outer one; its selected byte must be the inner's
    out = run(
        """
    mov.u32 %r1, 7;
    {
    .reg .b32 %r1;
    mov.u32 %r1, 0x0300;
    vadd.u32.u32.u32 %r2, %r1.b1, 1;
    }
    add.u32 %r3, %r1, 0;
    st.global.v2.u32 [%rd1], {%r2, %r3};
"""
    )
    assert list(out[:2]) == [4, 7]


IGNORED_MODS = """.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 out)
{
.reg .b32 %r<8>;
.reg .b64 %rd<6>;
.reg .pred %p<2>;
ld.rank.param.u64 %rd1, [out];
cvta.to.global.u64 %rd1, %rd1;
mov.interleave_layout.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
ld.global.finite.u32 %r2, [%rd3];
mul.lo.b8x16.s32 %r3, %r2, 7;
add.acc::f32.s32 %r4, %r3, %r1;
setp.swizzle_mode.lt.u32 %p1, %r4, 100;
selp.fill_mode.b32 %r5, %r4, %r2, %p1;
st.element_stride.global.u32 [%rd3], %r5;
ret;
}
"""


def test_modifiers_ptxas_ignores_are_ignored(tmp_path: Path) -> None:
    """ptxas 13.0 accepts the tensormap field names, testp's classes and a few shape
    names on any instruction and leaves the SASS unchanged: so do the interpreter and
    every pass (found by fuzz/mutate.py as false rejects)."""
    from ptxopt.sim.checker import differential

    plain = IGNORED_MODS
    for m in (".rank", ".interleave_layout", ".finite", ".b8x16", ".acc::f32", ".swizzle_mode",
              ".fill_mode", ".element_stride"):  # fmt: skip
        plain = plain.replace(m, "")
    res = optimize(IGNORED_MODS, "m.ptx", ["default"], verify_each=True)
    for text in (IGNORED_MODS, res.text):
        diff = differential(
            plain,
            text,
            "k",
            [(1, 32), (2, 7)],
            None,
            lambda seed: [np.random.default_rng(seed).integers(0, 300, 64).astype(np.uint32)],
        )
        assert diff.ok, diff.message
    ptxas_check(res.text, "sm_90", tmp_path)


def test_special_register_written_through_a_vector(tmp_path: Path) -> None:
    """ptxas accepts ``{%r1, %ctaid.x}`` as a destination and later reads of
    ``%ctaid.x`` see the loaded word (measured on sm_90: the S2UR disappears);
    reads before it see the real register.  Found by fuzz/mutate.py as a false
    reject."""
    body = """
    mov.u32 %r1, %ctaid.x;
    mov.u64 %rd2, 0x0000000700000005;
    mov.b64 {%r2, %ctaid.x}, %rd2;
    mov.u32 %r3, %ctaid.x;
    cvt.u64.u32 %rd3, %ctaid.x;
    cvt.u32.u64 %r4, %rd3;
    st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};
"""
    out = run(body)
    assert list(out) == [0, 5, 7, 7]
    ptx = (
        HDR + ".visible .entry k(.param .u64 out)\n{\n"
        ".reg .b64 %rd<8>;\n.reg .b32 %r<16>;\nld.param.u64 %rd1, [out];\n" + body + "ret;\n}\n"
    )
    res = optimize(ptx, "s.ptx", ["default"], verify_each=True)
    got = np.zeros(4, np.uint32)
    launch(res.text, "k", 1, 1, [got])
    assert list(got) == [0, 5, 7, 7]
    ptxas_check(res.text, "sm_90", tmp_path)
    with pytest.raises(PtxError, match="special register"):
        optimize(ptx.replace("mov.b64 {%r2, %ctaid.x}, %rd2;", "mov.u32 %ctaid.x, 5;"), "s.ptx")


def test_declarations_of_nothing_round_trip(tmp_path: Path) -> None:
    """ptxas accepts `.global .u64 ;` at module level and `.b32;` in a body (found by
    fuzz/mutate.py as false rejects): the first is printed as written, the second
    dropped."""
    src = (
        HDR + ".common .global .align 8 .u64 ;\n.visible .entry k(.param .u64 out)\n{\n"
        ".reg .b64 %rd<2>;\n.b32;\n.v2 .b32;\nld.param.u64 %rd1, [out];\nret;\n}\n"
    )
    out = optimize(src, "d.ptx", ["default"], verify_each=True).text
    assert ".common .global .align 8 .u64 ;" in out and ".b32;" not in out
    ptxas_check(out, "sm_90", tmp_path)


def test_bit_typed_load_and_store_with_a_wider_float_register(tmp_path: Path) -> None:
    """ptxas accepts ld/st.b16 with an .f32 register and ld.b32 with an .f64 one (found
    by fuzz/mutate.py as a false reject); the ISA's rule for wider registers applies:
    a load zero-extends, a store keeps the low bits."""
    src = (
        HDR + ".visible .entry k(.param .u64 out)\n{\n"
        ".reg .b32 %r<8>;\n.reg .f32 %f<4>;\n.reg .f64 %fd<4>;\n.reg .b64 %rd<4>;\n"
        "ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd1, %rd1;\n"
        "ld.global.b16 %f1, [%rd1];\nmov.b32 %r1, %f1;\n"
        "ld.global.b32 %fd1, [%rd1+4];\nmov.b64 %rd2, %fd1;\nmov.b64 {%r2, %r3}, %rd2;\n"
        "mov.f32 %f2, 0f3f80abcd;\nst.global.b16 [%rd1+16], %f2;\n"
        "st.global.b32 [%rd1+20], %r1;\nst.global.v2.b32 [%rd1+24], {%r2, %r3};\nret;\n}\n"
    )
    out = optimize(src, "b.ptx", ["default"], verify_each=True).text
    for text in (src, out):
        buf = np.zeros(8, np.uint32)
        buf[0], buf[1] = 0xABCD3C00, 0x12345678
        launch(text, "k", 1, 1, [buf])
        assert [int(x) for x in buf[4:]] == [0xABCD, 0x3C00, 0x12345678, 0]
    ptxas_check(out, "sm_90", tmp_path)


def test_0d_literal_in_a_bit_operation_is_its_bit_pattern() -> None:
    # measured on sm_80: and.b64 with 0d3ff0000000000000 is LOP3 ... 0x3ff00000 on the
    # high word, and -0d3ff0... (which ptxas takes) is -1.0: 0xbff00000; 1.0 as an
    # integer (1) was used before
    out = run(
        """
        mov.b64 %rd2, -1;
        and.b64 %rd3, %rd2, 0d3ff0000000000000;
        st.global.u64 [%rd1], %rd3;
        and.b64 %rd4, %rd2, -0d3ff0000000000000;
        st.global.u64 [%rd1+8], %rd4;
        """
    )
    assert out.tolist() == [0, 0x3FF00000, 0, 0xBFF00000]


# mov.b64 of a 0d constant expression: the 64 bits ptxas -O3 materializes for it
# (sm_80 SASS, read off the IMAD.MOV/MOV/HFMA2.MMA immediates of both words)
ZERO_D_BITS = [
    ("-0d0000000000000000", 0x8000000000000000),
    ("0d7ff8000000000001", 0x7FF8000000000001),  # a NaN payload is kept
    ("-0d7ff0000000000000", 0xFFF0000000000000),
    ("0dFFFFFFFFFFFFFFFF", 0xFFFFFFFFFFFFFFFF),
    ("-0dFFFFFFFFFFFFFFFF", 0x7FFFFFFFFFFFFFFF),  # negation flips the sign of a NaN
    ("--0d8000000000000005", 0x8000000000000005),
    ("(0d3ff0000000000000)*2.0", 0x4000000000000000),
]


@pytest.mark.parametrize("literal, bits", ZERO_D_BITS, ids=[c[0] for c in ZERO_D_BITS])
def test_0d_constant_expression_bits(literal: str, bits: int, tmp_path: Path) -> None:
    body = f"mov.b64 %rd3, {literal};\nst.global.u64 [%rd1], %rd3;"
    out = run(body, n_out=2)
    assert int(out[0]) | int(out[1]) << 32 == bits
    # the printed module keeps the value (the expression is folded to one literal)
    ptx = (
        HDR + ".visible .entry k(.param .u64 out)\n{\n.reg .b64 %rd<8>;\n"
        "ld.param.u64 %rd1, [out];\n" + body + "\nret;\n}\n"
    )
    printed = optimize(ptx, "b.ptx", []).text
    again = np.zeros(2, np.uint32)
    launch(printed, "k", 1, 1, [again])
    assert again.tolist() == out.tolist()
    ptxas_check(printed, "sm_90", tmp_path)
