"""Rules of the uniform register model (ptxopt/ori/ur_alloc.py) read off ptxas 13.0.88
SASS, one small kernel each: the file the model predicts for the webs the rule is
about (docs/uniform-registers.md, third round, has the SASS each one comes from)."""

from __future__ import annotations

from ptxopt.analysis.divergence import analyze_module
from ptxopt.ir.lift import lift_module
from ptxopt.ori.conv_alloc import plan_conv_alloc
from ptxopt.ori.ur_alloc import FuncPlan, plan_function
from ptxopt.ptx.parser import parse

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
REGS = ".reg .b32 %r<16>; .reg .b64 %rd<12>; .reg .pred %p<6>;"


def _kernel(body: str) -> str:
    return (
        HEAD
        + ".visible .entry k(.param .u64 p, .param .u32 n)\n{\n"
        + REGS
        + "\n"
        + body
        + "ret;\n}\n"
    )


def _plan(text: str, sm: int) -> FuncPlan:
    mod = lift_module(parse(text, "t.ptx"))
    md = analyze_module(mod)
    return plan_function(mod.func("k"), md.funcs["k"], sm)


def _files(text: str, sm: int) -> dict[str, str]:
    return {k: w.file for k, w in _plan(text, sm).webs.items()}


def _assert_r_because(text: str, reg: str, why: str, sms: tuple[int, ...] = (80, 90)) -> None:
    """``reg`` is per-thread at every target of ``sms``, for the reason ``why``."""
    for sm in sms:
        w = _plan(text, sm).webs[reg]
        assert w.file == "R", (sm, w.why)
        assert w.why.startswith(why), (sm, w.why)


# cuda/elementwise.O3.sm75.ptx lines 32-38: the grid-stride index
FOLDED_WIDE = _kernel(
    """mov.u32 %r1, %ntid.x;
mov.u32 %r2, %ctaid.x;
mul.wide.u32 %rd1, %r2, %r1;
mov.u32 %r3, %tid.x;
cvt.u64.u32 %rd2, %r3;
add.s64 %rd3, %rd1, %rd2;
ld.param.u64 %rd4, [p];
shl.b64 %rd5, %rd3, 2;
add.s64 %rd6, %rd4, %rd5;
st.global.u32 [%rd6], %r3;
"""
)


def test_uniform_wide_multiply_read_by_per_thread_adds_is_folded() -> None:
    """``mul.wide.u32 %rd1, %ctaid, %ntid; add.s64 %rd3, %rd1, %tid`` is one
    ``IMAD.WIDE.U32 R2, R5, c[0x0][0x0], R2`` at sm_80: the product is no register, and
    with %ntid in the IMAD's constant slot %ctaid is read in R (``S2R R5``)."""
    _assert_r_because(FOLDED_WIDE, "%rd1", "multiply folded")
    assert _files(FOLDED_WIDE, 80)["%r2"] == "R"
    # a uniform reader keeps the product a UIMAD.WIDE
    uniform = FOLDED_WIDE.replace("add.s64 %rd3, %rd1, %rd2;", "add.s64 %rd3, %rd1, 16;")
    assert _files(uniform, 80)["%rd1"] == "UR"


# numba/clamp_count.sm80.ptx lines 50-55: %ntid and %ctaid each also feed a uniform cvt
COPIED_FACTOR = _kernel(
    """mov.u32 %r1, %ntid.x;
cvt.s64.s32 %rd7, %r1;
mov.u32 %r2, %ctaid.x;
cvt.s64.s32 %rd8, %r2;
mul.wide.s32 %rd1, %r1, %r2;
mov.u32 %r3, %tid.x;
cvt.s64.s32 %rd2, %r3;
add.s64 %rd3, %rd1, %rd2;
add.s64 %rd9, %rd7, %rd8;
add.s64 %rd10, %rd3, %rd9;
ld.param.u64 %rd4, [p];
shl.b64 %rd5, %rd10, 2;
add.s64 %rd6, %rd4, %rd5;
st.global.u32 [%rd6], %r3;
"""
)


def test_folded_wide_factor_read_uniformly_is_copied_below_sm90() -> None:
    """sm_80: %ntid holds the IMAD.WIDE's constant slot and %ctaid, which a uniform
    ``cvt`` reads too, stays UR and is copied to R (``S2UR UR6, SR_CTAID.X`` ...
    ``IMAD.U32 R5, RZ, RZ, UR6; IMAD.WIDE R4, R5, c[0x0][0x0], R8``); sm_90 computes
    it in R (``S2R R4, SR_CTAID.X``)."""
    assert _files(COPIED_FACTOR, 80)["%r2"] == "UR"
    assert _files(COPIED_FACTOR, 90)["%r2"] == "R"
    for sm in (80, 90):
        assert _files(COPIED_FACTOR, sm)["%rd1"] == "R"


# cuda/atomics.O3.sm75.ptx lines 190-192 at sm_80: USHF, then ISETP reading UR4
ZERO_TEST = _kernel(
    """mov.u32 %r1, %ctaid.x;
shr.u32 %r2, %r1, 1;
setp.eq.s32 %p1, %r2, 0;
@%p1 bra DONE;
add.s32 %r3, %r2, 7;
mov.u32 %r4, %tid.x;
add.s32 %r5, %r4, %r3;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r5;
DONE:
"""
)


def test_branch_compare_with_zero_is_a_per_thread_isetp() -> None:
    """``setp.eq %p1, %r2, 0; @%p1 bra`` is ``ISETP.NE.AND P1, PT, RZ, UR4, PT``: the
    predicate is a P, the compared value stays UR."""
    for sm in (80, 90):
        f = _files(ZERO_TEST, sm)
        assert f["%p1"] == "P" and f["%r2"] == "UR"
    # against a non-zero immediate: UISETP + PLOP3, as before
    assert _files(ZERO_TEST.replace("%r2, 0;", "%r2, 3;"), 80)["%p1"] == "UP"


# cub/histogram.sm90.ptx line 1448: setp.ge %p13, %ctaid.y-derived, <param>
PARAM_TEST = _kernel(
    """mov.u32 %r1, %ctaid.y;
add.s32 %r2, %r1, 1;
ld.param.u32 %r3, [n];
setp.ge.s32 %p1, %r2, %r3;
@%p1 bra DONE;
mov.u32 %r4, %tid.x;
add.s32 %r5, %r4, %r2;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r5;
DONE:
"""
)

PARAM_LATCH = _kernel(
    """mov.u32 %r1, %ctaid.y;
ld.param.u32 %r3, [n];
LOOP:
add.s32 %r1, %r1, 1;
mov.u32 %r4, %tid.x;
add.s32 %r5, %r4, %r1;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r5;
setp.lt.s32 %p1, %r1, %r3;
@%p1 bra LOOP;
"""
)


def test_branch_compare_with_a_parameter_is_per_thread_on_sm90() -> None:
    """On sm_90 a forward branch on ``value <op> parameter`` is one per-thread ISETP
    (``ISETP.LE.AND P0, PT, R4, UR4, PT``); sm_80 keeps UISETP; a loop latch's compare
    of the counter with the bound stays UISETP on both."""
    assert _files(PARAM_TEST, 90)["%p1"] == "P"
    assert _files(PARAM_TEST, 80)["%p1"] == "UP"
    assert _files(PARAM_LATCH, 90)["%p1"] == "UP"


# cub/histogram.sm80.ptx lines 190-191 at sm_80: LOP3.LUT P0, RZ, R0, 0x3, RZ, 0xc0, !PT
MASK_TEST = _kernel(
    """mov.u32 %r1, %ctaid.x;
and.b32 %r2, %r1, 3;
setp.eq.s32 %p1, %r2, 0;
selp.b32 %r3, 1, 2, %p1;
mov.u32 %r4, %tid.x;
add.s32 %r5, %r4, %r3;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r5;
"""
)


def test_mask_tested_against_zero_is_no_register() -> None:
    """``and %r2, %r1, 3; setp.eq %p1, %r2, 0`` is one LOP3 that writes the predicate:
    the mask is never a UR write."""
    for sm in (80, 90):
        p = _plan(MASK_TEST, sm)
        assert p.webs["%r2"].file == "R"
        assert p.webs["%r2"].why.startswith("mask tested against zero")
    # a mask compared with anything but zero is an ordinary ULOP3
    assert _files(MASK_TEST.replace("%r2, 0;", "%r2, 1;"), 80)["%r2"] == "UR"


# cutlass/hopper_fp8_gemm.sm90a.ptx lines 130 and 145 at sm_90: IMAD.MOV.U32 R6, RZ, RZ, 0x1
# and SEL R6, RZ, 0x1, !P0 on the two paths into $L__BB0_12
VARIABLE = _kernel(
    """mov.u32 %r1, %ctaid.x;
setp.eq.s32 %p1, %r1, 5;
mov.u32 %r2, 1;
@%p1 bra JOIN;
add.s32 %r2, %r1, 3;
JOIN:
mov.u32 %r4, %tid.x;
add.s32 %r5, %r4, %r2;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r5;
"""
)


def test_variable_with_different_values_read_per_thread_is_r() -> None:
    """A register written with different values on two paths and read only by
    per-thread instructions is a variable ptxas keeps in R."""
    for sm in (80, 90):
        p = _plan(VARIABLE, sm)
        assert p.webs["%r2"].file == "R"
        assert p.webs["%r2"].why.startswith("a variable")
    # a uniform reader keeps it UR
    read = VARIABLE.replace(
        "add.s32 %r5, %r4, %r2;", "add.s32 %r6, %r2, 9;\nadd.s32 %r5, %r4, %r6;"
    )
    assert _files(read, 80)["%r2"] == "UR"
    # the same value on both paths is no variable
    same = VARIABLE.replace("add.s32 %r2, %r1, 3;", "mov.u32 %r2, 1;")
    assert not _plan(same, 80).webs["%r2"].why.startswith("a variable")


# cutlass/hopper_fp8_gemm.sm90a.ptx lines 3015-3016 at sm_90: UPRMT UR16, UR9, 0x654, UR16
# then SYNCS.ARRIVE.TRANS64.RED.A1T0 RZ, [UR16], RZ
CLUSTER_ARRIVE = (
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
    ".visible .entry k(.param .u64 p)\n{\n"
    ".reg .b32 %r<8>; .reg .b64 %rd<4>;\n"
    ".shared .align 8 .b64 bar[2];\n"
    "mov.u32 %r1, bar;\n"
    "mov.u32 %r2, %cluster_ctarank;\n"
    "xor.b32 %r3, %r2, 1;\n"
    "mapa.shared::cluster.u32 %r4, %r1, %r3;\n"
    "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r4];\n"
    "ret;\n}\n"
)


def test_cluster_address_is_a_uprmt_read_by_syncs_from_ur() -> None:
    """``mapa.shared::cluster`` puts the rank into the address's top byte (``UPRMT``)
    and ``mbarrier.arrive`` reads its shared address from UR (``SYNCS ... [UR16]``)."""
    p = _plan(CLUSTER_ARRIVE, 90)
    assert p.webs["%r4"].cls == "PRMT"
    assert p.webs["%r4"].file == "UR"
    assert not [b for b in p.bridges if b.reg == "%r4"]


# Fourth round.

# cutlass/ampere_fmha.sm80.ptx lines 251-300: shfl.sync.idx from lane %r288 (mov 0) of a
# uniform value emits nothing, and the compare of the result reads UR24
LANE_REGISTER = _kernel(
    """mov.u32 %r1, %ctaid.x;
ld.param.u32 %r2, [n];
add.s32 %r3, %r1, %r2;
mov.u32 %r4, 0;
mov.u32 %r5, 31;
mov.u32 %r6, -1;
shfl.sync.idx.b32 %r7|%p1, %r3, %r4, %r5, %r6;
add.s32 %r8, %r7, 5;
mov.u32 %r9, %tid.x;
add.s32 %r10, %r9, %r8;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r10;
"""
)

# cutlass/ampere_conv2d_fprop.sm80.ptx line 671 at sm_90: SHFL.IDX PT, R20, R20, RZ, 0x1f ;
# R2UR UR13, R20 (the warp index, varying to the divergence analysis, read uniformly);
# cuda/reduce.O3.sm75.ptx lines 279-282: SHFL.IDX PT, R8, R2, RZ, 0x1f read by IADD3
KEPT_SHUFFLE = _kernel(
    """mov.u32 %r1, %tid.x;
shr.u32 %r2, %r1, 5;
mov.u32 %r4, 0;
mov.u32 %r5, 31;
mov.u32 %r6, -1;
shfl.sync.idx.b32 %r7|%p1, %r2, %r4, %r5, %r6;
add.s32 %r8, %r7, 5;
add.s32 %r10, %r1, %r8;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r10;
"""
)


def test_broadcast_from_a_lane_register_holding_an_immediate() -> None:
    """A lane in a register that holds an immediate is the constant lane ptxas sees:
    the broadcast of a uniform value is dropped and its readers stay UR; the shuffle's
    lane-valid predicate is no UP."""
    for sm in (80, 90):
        p = _plan(LANE_REGISTER, sm)
        assert p.webs["%r7"].file == "UR" and p.webs["%r8"].file == "UR"
        assert p.webs["%p1"].file == "P"
        assert not [b for b in p.bridges if b.reg in ("%r3", "%r7")]
    # a lane that is a computed value is an ordinary (per-thread) shuffle
    computed = LANE_REGISTER.replace("mov.u32 %r4, 0;", "add.s32 %r4, %r1, 0;")
    assert _files(computed, 80)["%r7"] == "R"


def test_kept_shuffle_reaches_ur_only_for_uniform_readers() -> None:
    """The broadcast of a value the divergence analysis calls varying keeps its SHFL:
    the result is copied into UR (R2UR) when uniform instructions read it, and stays
    in R when only per-thread instructions do."""
    for sm in (80, 90):
        assert _files(KEPT_SHUFFLE, sm)["%r7"] == "UR"
    per_thread = KEPT_SHUFFLE.replace(
        "add.s32 %r8, %r7, 5;\nadd.s32 %r10, %r1, %r8;", "add.s32 %r10, %r1, %r7;"
    )
    for sm in (80, 90):
        assert _files(per_thread, sm)["%r7"] == "R"


# cutlass/hopper_mixed_dtype_gemm.sm90a.ptx lines 20757-21058 at sm_90 (curand skip-ahead):
# the inner loop's counter is MOV R17, RZ ... VIADD R17, R17, 0x10, and the shift by it
# SHF.L.U32 R15, R10, R17, RZ, because the outer loop's trip count is per-thread
NESTED_COUNTER = _kernel(
    """mov.u32 %r1, %tid.x;
mov.u32 %r9, 0;
OUTER:
mov.u32 %r2, 0;
INNER:
mov.u32 %r3, 1;
shl.b32 %r4, %r3, %r2;
add.s32 %r9, %r9, %r4;
add.s32 %r2, %r2, 16;
setp.ne.s32 %p1, %r2, 32;
@%p1 bra INNER;
shr.u32 %r1, %r1, 1;
setp.ne.s32 %p2, %r1, 0;
@%p2 bra OUTER;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r9;
"""
)


def test_register_written_twice_inside_a_divergent_region_is_per_thread() -> None:
    """A uniform loop counter of a loop nested in a loop whose exit is per-thread: the
    register is written more than once and once inside the divergent region, so it is
    per-thread, and so is the shift that reads it."""
    for sm in (80, 90):
        p = _plan(NESTED_COUNTER, sm)
        assert p.webs["%r2"].file == "R"
        assert p.webs["%r2"].why.startswith("written more than once")
        assert p.webs["%r4"].file == "R"
    # with a uniform outer trip count the counter is UR again
    uniform = NESTED_COUNTER.replace("mov.u32 %r1, %tid.x;", "mov.u32 %r1, %ctaid.x;")
    assert _files(uniform, 80)["%r2"] == "UR"
    # an early exit on a per-thread condition opens no divergent region
    early = NESTED_COUNTER.replace(
        "mov.u32 %r9, 0;",
        "mov.u32 %r9, 0;\nsetp.eq.s32 %p3, %r1, 7;\n@%p3 bra END;",
    ).replace("ret;", "END:\nret;")
    early = early.replace("mov.u32 %r1, %tid.x;", "mov.u32 %r1, %tid.x;\nmov.u32 %r5, %ctaid.x;")
    early = early.replace(
        "shr.u32 %r1, %r1, 1;\nsetp.ne.s32 %p2, %r1, 0;",
        "shr.u32 %r5, %r5, 1;\nsetp.ne.s32 %p2, %r5, 0;",
    )
    assert _files(early, 80)["%r2"] == "UR"


def test_divergence_analysis_hands_the_model_its_regions() -> None:
    """The regions the rule above reads are the ones the divergence analysis computed
    for its divergent branches: the outer loop's per-thread exit branch has one, which
    holds the inner loop's blocks, and a uniform branch has none."""
    mod = lift_module(parse(NESTED_COUNTER, "t.ptx"))
    div = analyze_module(mod).funcs["k"]
    func = mod.func("k")
    divergent = [b.index for b in func.blocks if div.branch_divergent(b.index)]
    assert divergent and sorted(div.regions) == divergent
    inner = next(b.index for b in func.blocks if "INNER" in b.labels)
    assert all(inner in div.regions[b] for b in divergent)
    uniform = NESTED_COUNTER.replace("mov.u32 %r1, %tid.x;", "mov.u32 %r1, %ctaid.x;")
    assert analyze_module(lift_module(parse(uniform, "t.ptx"))).funcs["k"].regions == {}


# triton/layer_norm_fwd.sm80.ptx lines 54-63, reduced: the row base of a per-thread
# load, parameter + (uniform row * stride) * 4, added to (tid * 4)
OFFSET_BASE = _kernel(
    """ld.param.u64 %rd1, [p];
mov.u32 %r1, %ctaid.x;
ld.param.u32 %r2, [n];
mul.lo.s32 %r3, %r2, %r1;
mul.wide.s32 %rd2, %r3, 4;
add.s64 %rd3, %rd1, %rd2;
mov.u32 %r4, %tid.x;
mul.wide.u32 %rd4, %r4, 4;
add.s64 %rd5, %rd3, %rd4;
ld.global.u32 %r5, [%rd5];
add.s32 %r6, %r5, 1;
st.global.u32 [%rd5], %r6;
"""
)
OFFSET_REASON = "64-bit base of a per-thread global/generic address (IMAD.WIDE / IADD3)"


def test_a_scaled_base_read_once_by_an_address_add_is_fused_per_thread() -> None:
    """ptxas 13.0.88 computes the base of lines 12-13 into the per-thread address:
    ``IMAD.WIDE R2, R2, R3, c[0x0][0x160]; IMAD.WIDE.U32 R2, R5, 0x4, R2`` at sm_80,
    ``LDC.64 R2, c[0x0][0x210]; IMAD.WIDE R2, R5, 0x4, R2; IMAD.WIDE.U32 R2, R7, 0x4,
    R2`` at sm_90: neither the product nor the base is ever a UR."""
    for sm in (80, 90):
        p = _plan(OFFSET_BASE, sm)
        assert p.webs["%rd3"].file == "R" and p.webs["%rd3"].why == OFFSET_REASON
        assert p.webs["%rd2"].file == "R"


def test_a_base_read_by_several_addresses_or_later_stays_uniform() -> None:
    """The same base read by several address adds (triton/attention_bwd_bf16.sm90a.ptx
    line 76, four readers: ``UIMAD.WIDE UR6, UR33, 0x2, UR6``) or by one in a later
    block (triton/attention_bwd_fp16.sm80.ptx line 205) is not fused into them; nor
    is a sum that is stored as a value rather than used as an address."""
    two = OFFSET_BASE.replace(
        "st.global.u32 [%rd5], %r6;",
        "add.s64 %rd6, %rd3, 4096;\nadd.s64 %rd7, %rd6, %rd4;\nst.global.u32 [%rd7], %r6;",
    )
    later = OFFSET_BASE.replace(
        "mov.u32 %r4, %tid.x;", "bra.uni NEXT;\nNEXT:\nmov.u32 %r4, %tid.x;"
    )
    data = OFFSET_BASE.replace(
        "ld.global.u32 %r5, [%rd5];", "st.global.u64 [%rd1], %rd5;\nld.global.u32 %r5, [%rd1];"
    ).replace("st.global.u32 [%rd5], %r6;", "st.global.u32 [%rd1+8], %r6;")
    for text in (two, later, data):
        for sm in (80, 90):
            assert _plan(text, sm).webs["%rd3"].why != OFFSET_REASON


def test_a_product_fused_into_a_per_thread_base_reads_its_factor_in_r() -> None:
    """The scaled product of that base is folded into the base's per-thread IMAD.WIDE
    like a product read by varying adds, so the 32-bit row index is read by an
    instruction whose one UR/constant slot is taken: ``S2R R6, SR_CTAID.X ; IMAD R10,
    R6, c[0x0][0x190], RZ ; ... IMAD.WIDE R4, R10, R7, c[0x0][0x160]``
    (triton/layer_norm_fwd.sm80.ptx lines 41-60 at sm_80; ``S2R R23, SR_CTAID.X ; IMAD
    R21, R23, UR8, RZ`` in layer_norm_fwd.sm90a.ptx at sm_90).  When the base is not
    fused (read in a later block) the whole chain stays uniform."""
    for sm in (75, 80, 90):
        p = _plan(OFFSET_BASE, sm)
        assert p.webs["%rd2"].why.startswith("multiply folded into the per-thread add"), sm
        for k in ("%r3", "%r1"):
            assert p.webs[k].file == "R" and p.webs[k].why.startswith("needs bridges"), (sm, k)
    later = OFFSET_BASE.replace(
        "mov.u32 %r4, %tid.x;", "bra.uni NEXT;\nNEXT:\nmov.u32 %r4, %tid.x;"
    )
    for sm in (80, 90):
        files = _files(later, sm)
        assert all(files[k] == "UR" for k in ("%r1", "%r3", "%rd2", "%rd3")), (sm, files)
    # criterion 4 does not hold in a kernel named cutlass: no per-thread base to fuse into
    mod = lift_module(parse(OFFSET_BASE, "t.ptx"))
    md = analyze_module(mod)
    p = plan_function(mod.func("k"), md.funcs["k"], 80, kernel_name="cutlass_k")
    assert not p.webs["%rd2"].why.startswith("multiply folded"), p.webs["%rd2"].why


def _through_address(text: str) -> str:
    """``text`` with every ``ld.param`` of ``p`` / ``n`` read through a register that
    holds the parameter's address (``mov.b64 %pa0, p; add.s64 %pa1, %pa0, 16``), as
    CUTLASS's PTX reads its Params struct (cutlass/ampere_fmha.sm80.ptx lines 49-50)."""
    body = text.replace("[p]", "[%pa1+-16]").replace("[n]", "[%pa1+-8]")
    address = " .reg .b64 %pa<2>;\nmov.b64 %pa0, p;\nadd.s64 %pa1, %pa0, 16;"
    return body.replace(REGS, REGS + address)


def test_a_parameter_read_through_its_address_is_the_parameter() -> None:
    """ptxas folds a parameter's address into the ``ld.param`` that reads it: at sm_90
    ``mov.b64 %rd1, p; add.s64 %rd2, %rd1, 16; ld.param.u32 %r1, [%rd2+-8]`` is
    ``LDC R0, c[0x0][0x218]`` (n itself), at sm_80 the IMAD reads ``c[0x0][0x168]``
    directly.  So every decision is the one for the direct ``ld.param [n]``, and the
    address registers are no UR."""
    kernels = [FOLDED_WIDE, COPIED_FACTOR, ZERO_TEST, PARAM_TEST, PARAM_LATCH, OFFSET_BASE]
    changed = 0
    for text in kernels:
        via = _through_address(text)
        changed += via != text
        for sm in (80, 90):
            direct, folded = _plan(text, sm), _plan(via, sm)
            assert folded.webs["%pa1"].file == "R"
            assert folded.webs["%pa1"].why.startswith("a parameter's address")
            assert not [b for b in folded.bridges if b.reg.startswith("%pa")]
            for k, w in direct.webs.items():
                assert (folded.webs[k].file, folded.webs[k].cost) == (w.file, w.cost), (k, sm)
            assert folded.ur_count == direct.ur_count
    assert changed == len(kernels)


def test_an_address_plus_a_register_or_written_twice_is_no_parameter_address() -> None:
    """Only an immediate offset, written once, makes a fixed constant-bank offset: an
    address plus a register is an indexed read, and a register written on two paths
    has no one offset."""
    head = REGS + " .reg .b64 %pa<2>;\nmov.b64 %pa0, p;\n"
    tail = "ld.param.u32 %r1, [%pa1+-8];\nmov.u32 %r2, %ctaid.x;\nadd.s32 %r3, %r1, %r2;\n"
    tail += "setp.lt.u32 %p1, %r3, 7;\n@%p1 bra DONE;\nst.global.u32 [%rd9], %r3;\nDONE:\n"
    indexed = _kernel("ld.param.u64 %rd9, [p];\nadd.s64 %pa1, %pa0, %rd9;\n" + tail)
    twice = _kernel(
        "ld.param.u64 %rd9, [p];\nsetp.eq.s64 %p2, %rd9, 0;\nadd.s64 %pa1, %pa0, 16;\n"
        "@%p2 add.s64 %pa1, %pa0, 8;\n" + tail
    )
    for text in (indexed, twice):
        text = text.replace(REGS, head)
        for sm in (80, 90):
            assert not _plan(text, sm).webs["%pa1"].why.startswith("a parameter's address")
    # the same with one immediate write is one
    once = _kernel("ld.param.u64 %rd9, [p];\nadd.s64 %pa1, %pa0, 16;\n" + tail).replace(REGS, head)
    assert _plan(once, 90).webs["%pa1"].why.startswith("a parameter's address")


# cutlass/ampere_tf32_gemm.sm80.ptx lines 362-364: a uniform compare whose only readers
# are per-thread selects (the selected values vary)
PRED_FOR_SELECT = _kernel(
    """ld.param.u32 %r1, [n];
setp.eq.s32 %p1, %r1, 16;
mov.u32 %r2, %tid.x;
selp.b32 %r3, %r2, 0, %p1;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r3;
"""
)


def test_a_predicate_read_by_a_per_thread_select_is_p() -> None:
    """No per-thread SASS instruction but PLOP3 (the UP -> P copy) and HGMMA's scale-d
    names a UP: ``ISETP.NE.AND P5, PT, R11.reuse, 0x10, PT`` feeds the SEL at sm_80.  A
    uniform reader (here a uniform select) keeps the compare in UP."""
    for sm in (80, 90):
        p = _plan(PRED_FOR_SELECT, sm)
        assert p.webs["%p1"].file == "P"
        assert p.webs["%p1"].why.startswith("needs bridges")
    uniform = PRED_FOR_SELECT.replace(
        "selp.b32 %r3, %r2, 0, %p1;",
        "selp.b32 %r4, %r1, 3, %p1;\nsetp.ne.s32 %p2, %r4, 0;\n@%p2 bra done;\nmov.u32 %r3, %r2;",
    ).replace("ret;", "done:\nret;")
    for sm in (80, 90):
        assert _files(uniform, sm)["%p1"] == "UP"


WGMMA_HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"

# triton/matmul_fp16.sm90a.ptx: a wgmma whose scale-d is a uniform predicate
PRED_FOR_WGMMA = (
    WGMMA_HEAD
    + """.visible .entry k(.param .u64 p, .param .u32 n)
{
.reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<4>; .reg .f32 %f<8>;
ld.param.u32 %r1, [n];
setp.ne.s32 %p1, %r1, 0;
ld.param.u64 %rd1, [p];
mov.f32 %f1, 0f00000000;
mov.f32 %f2, 0f00000000;
mov.f32 %f3, 0f00000000;
mov.f32 %f4, 0f00000000;
wgmma.fence.sync.aligned;
wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd1, %p1, 1, 1, 0, 0;
wgmma.commit_group.sync.aligned;
wgmma.wait_group.sync.aligned 0;
st.global.f32 [%rd1], %f1;
ret;
}
"""
)


def test_a_predicate_read_as_wgmma_scale_d_stays_up() -> None:
    """HGMMA reads its scale-d predicate from UP (``HGMMA.64x128x16.F32.BF16 R88,
    gdesc[UR20], RZ, !UPT, gsb0``): a wgmma reader costs the compare no bridge."""
    p = _plan(PRED_FOR_WGMMA, 90)
    assert p.webs["%p1"].file == "UP"
    assert not any(b.reg == "%p1" for b in p.bridges)


# cutlass/hopper_mixed_dtype_gemm.sm90a.ptx lines 1855-1871: the pipeline's phase bit,
# flipped uniformly and read by the mbarrier waits
PHASE_FOR_WAIT = (
    WGMMA_HEAD
    + """.visible .entry k(.param .u64 p, .param .u32 n)
{
.reg .b32 %r<12>; .reg .b64 %rd<8>; .reg .pred %p<4>;
.shared .align 8 .b64 bar;
ld.param.u32 %r1, [n];
mov.u32 %r2, bar;
add.s32 %r3, %r1, 1;
setp.eq.s32 %p1, %r3, 7;
selp.u32 %r4, 1, 0, %p1;
xor.b32 %r5, %r1, %r4;
waitLoop:
mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], %r5;
@!%p2 bra waitLoop;
ret;
}
"""
)


def test_the_phase_read_by_an_mbarrier_wait_stays_uniform() -> None:
    """ptxas keeps the phase bit in UR and copies it into R at the wait (``IMAD.U32 R16,
    RZ, RZ, UR4 ; SHF.L.U32 R16, R16, 0x1f, RZ ; SYNCS.PHASECHK.TRANS64.TRYWAIT P0,
    [UR12], R16``): the wait costs the phase no bridge; its address is read from UR."""
    p = _plan(PHASE_FOR_WAIT, 90)
    assert p.webs["%r5"].file == "UR"
    assert p.webs["%r4"].file == "UR"
    assert p.webs["%p1"].file == "UP"
    assert not any(b.reg == "%r5" for b in p.bridges)


# triton/cumsum.sm80.ptx lines 33-43: the block's offset or'ed with a masked thread index
SHIFT_OR = _kernel(
    """mov.u32 %r1, %ctaid.x;
shl.b32 %r2, %r1, 8;
mov.u32 %r3, %tid.x;
and.b32 %r4, %r3, 127;
or.b32 %r5, %r2, %r4;
ld.param.u64 %rd1, [p];
mul.wide.s32 %rd2, %r5, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r5;
"""
)


def test_a_shift_or_ed_with_disjoint_bits_folds_like_an_add() -> None:
    """``shl.b32 %r2, %r1, 8; or.b32 %r5, %r2, %r4`` with ``%r4 < 256`` is ``IMAD R0, R3,
    0x100, R0`` (``%ctaid`` by ``S2R R3``) at sm_80 and sm_90: the shift is no register
    and the immediate holds the IMAD's slot."""
    _assert_r_because(SHIFT_OR, "%r2", "multiply folded")
    assert _files(SHIFT_OR, 80)["%r1"] == "R"
    # a mask reaching the shifted bits: the or is no add, so no IMAD; the mask and the
    # or fuse into one LOP3 whose immediate holds the slot, and the shift is computed
    # per-thread anyway (``S2R R0; SHF.L.U32 R0, R0, 0x8, RZ; LOP3.LUT R5, R0, 0x1ff,
    # R5, 0xf8, !PT`` at sm_80 and sm_90)
    overlapping = SHIFT_OR.replace("and.b32 %r4, %r3, 127;", "and.b32 %r4, %r3, 511;")
    for sm in (80, 90):
        w = _plan(overlapping, sm).webs["%r2"]
        assert w.file == "R" and not w.why.startswith("multiply folded"), (sm, w.why)


# cub/radix_sort.sm80.ptx lines 3695-3697: the complement of a shifted mask, read by
# per-thread and
COMPLEMENT = _kernel(
    """ld.param.u32 %r1, [n];
mov.u32 %r2, -1;
shl.b32 %r3, %r2, %r1;
not.b32 %r4, %r3;
mov.u32 %r5, %tid.x;
and.b32 %r6, %r5, %r4;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r6;
"""
)


def test_a_complement_read_only_by_per_thread_logic_is_per_thread() -> None:
    """``not.b32 %r1226, %r1225`` read only by a per-thread ``and`` is ``LOP3.LUT R10,
    RZ, R6, RZ, 0x33, !PT`` at sm_80: computed in R beside its reader.  A uniform
    reader keeps it uniform."""
    _assert_r_because(COMPLEMENT, "%r4", "complement read only by per-thread logic", (80,))
    uniform = COMPLEMENT.replace(
        "and.b32 %r6, %r5, %r4;", "and.b32 %r7, %r1, %r4;\nand.b32 %r6, %r5, %r7;"
    )
    assert _files(uniform, 80)["%r4"] == "UR"
    # an add reads the complement from its UR slot
    added = COMPLEMENT.replace("and.b32 %r6, %r5, %r4;", "add.s32 %r6, %r5, %r4;")
    assert _files(added, 80)["%r4"] == "UR"


def _lop3_kernel(reader: str) -> str:
    return _kernel(
        "ld.param.u64 %rd1, [p];\nmov.u32 %r1, %ctaid.x;\nshl.b32 %r2, %r1, 6;\n"
        "mov.u32 %r3, %tid.x;\nshr.u32 %r4, %r3, 3;\n"
        + reader
        + "cvta.to.global.u64 %rd2, %rd1;\nmul.wide.u32 %rd3, %r3, 4;\n"
        "add.s64 %rd4, %rd2, %rd3;\nst.global.u32 [%rd4], %r9;\n"
    )


def test_an_inner_logic_immediate_takes_the_slot_of_the_fused_lop3() -> None:
    # ``or.b32 %r5, %r4, 30; or.b32 %r9, %r5, %r2`` is one ``LOP3.LUT R5, R0, 0x1e, R5,
    # 0xfe, !PT`` at sm_80 and sm_90, with %r2 = ``IMAD.SHL.U32 R0, R0, 0x40, RZ`` (S2R)
    fused = _lop3_kernel("or.b32 %r5, %r4, 30;\nor.b32 %r9, %r5, %r2;\n")
    for sm in (80, 90):
        w = _plan(fused, sm).webs["%r2"]
        assert w.file == "R" and w.why.startswith("needs bridges"), (sm, w.why)
    # the same with xor (``LOP3.LUT R5, R0, 0x1e, R5, 0x96, !PT``)
    xor = _lop3_kernel("xor.b32 %r5, %r4, 30;\nxor.b32 %r9, %r5, %r2;\n")
    assert _files(xor, 90)["%r2"] == "R"
    # without the inner immediate: ``S2UR UR4; USHF.L.U32 UR4, UR4, 0x6, URZ;
    # LOP3.LUT R5, R0, UR4, RZ, 0xfc, !PT``
    plain = _lop3_kernel("or.b32 %r9, %r4, %r2;\n")
    assert _files(plain, 80)["%r2"] == "UR" and _files(plain, 90)["%r2"] == "UR"
    # an all-ones mask folds away (``and %r5, %r4, -1`` is %r4): no immediate left,
    # ``S2UR UR4; USHF.L.U32 UR4, UR4, 0x6, URZ; LOP3.LUT R5, R0, UR4, RZ, 0xfc, !PT``
    ones = _lop3_kernel("and.b32 %r5, %r4, -1;\nor.b32 %r9, %r5, %r2;\n")
    assert _files(ones, 90)["%r2"] == "UR"


# llvm/saxpy_i64.sm75.ptx lines 37-50: a grid stride, its byte stride, two loop steps
STEPPED = _kernel(
    """ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mov.u32 %r2, %ntid.x;
mov.u32 %r3, %nctaid.x;
mul.wide.u32 %rd3, %r2, %r3;
cvt.u64.u32 %rd4, %r1;
cvta.to.global.u64 %rd5, %rd1;
shl.b64 %rd6, %rd4, 2;
add.s64 %rd7, %rd5, %rd6;
shl.b64 %rd8, %rd3, 2;
mov.u64 %rd9, 0;
LOOP:
st.global.u64 [%rd7], %rd9;
add.s64 %rd7, %rd7, %rd8;
add.s64 %rd9, %rd9, %rd3;
setp.lt.u64 %p1, %rd9, %rd1;
@%p1 bra LOOP;
"""
)


def test_a_shift_stepping_a_pointer_folds_into_a_lea() -> None:
    """``shl.b64 %rd8, %rd3, 2`` read by the pointer step ``add.s64 %rd7, %rd7, %rd8``
    while ``%rd3`` itself steps ``%rd9``: ``IMAD.WIDE.U32 R2, R2, c[0x0][0xc], RZ`` and
    ``LEA R11, P1, R2, R11, 0x2`` at sm_80 (``LDC R2, c[0x0][0xc]; IMAD.WIDE.U32 R2, R2,
    UR4, RZ`` at sm_90): the shift is no register and the stride is R."""
    _assert_r_because(STEPPED, "%rd8", "shift folded into the per-thread pointer step")
    for sm in (80, 90):
        assert _files(STEPPED, sm)["%rd3"] == "R", sm
    # the stride read per-thread by an add into another register: the same
    # (``IMAD.WIDE.U32 R2``, ``IMAD.SHL.U32 R19, R2, 0x4, RZ`` at sm_80)
    other = STEPPED.replace(
        "add.s64 %rd9, %rd9, %rd3;",
        "add.s64 %rd10, %rd7, %rd3;\nst.global.u64 [%rd10], %rd9;\nadd.s64 %rd9, %rd9, 1;",
    )
    for sm in (80, 90):
        assert _files(other, sm)["%rd3"] == "R", sm
    # the stride read only through the shift: ``UIMAD.WIDE.U32 UR4, UR4, UR5, URZ;
    # USHF.L.U32 UR4, UR4, 0x2, URZ`` and the step ``IADD3 R4, P1, R4, UR4, RZ``
    alone = STEPPED.replace("add.s64 %rd9, %rd9, %rd3;", "add.s64 %rd9, %rd9, 1;")
    # the shift read by an add into another register: ``USHF.L.U32 UR8, UR4, 0x2, URZ;
    # IADD3 R10, P0, R2, UR8, RZ`` at sm_80
    unstepped = other.replace(
        "add.s64 %rd7, %rd7, %rd8;",
        "add.s64 %rd11, %rd7, %rd8;\nst.global.u64 [%rd11], %rd9;\nadd.s64 %rd7, %rd7, 8;",
    )
    for text in (alone, unstepped):
        for sm in (80, 90):
            files = _files(text, sm)
            assert (files["%rd3"], files["%rd8"]) == ("UR", "UR"), sm


# cuda/reduce.O3.sm90.ptx lines 430-443: a warp sum stored by every thread
REDUCED = _kernel(
    """ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd2, %rd3;
ld.global.u32 %r2, [%rd4];
mov.u32 %r3, -1;
redux.sync.add.u32 %r4, %r2, %r3;
st.global.u32 [%rd4], %r4;
"""
)


def test_a_warp_reduction_is_written_in_ur() -> None:
    """``REDUX.SUM UR6, R0 ; MOV R5, UR6`` at sm_80 and sm_90: REDUX reads a register of
    each thread and writes a UR, and the store reads a copy, so the sum is UR with no
    bridge of phase 74 and no R2UR for its source; the member mask ``-1`` is no operand
    of REDUX (2 UR names with the descriptor).  A debug target has it in UR too
    (``REDUX.SUM UR62, R13``, cuda/reduce.G.sm90.ptx line 1704) without being one of
    phase 74's conversions, so phase 86 keeps nothing alive for it."""
    for sm in (80, 90):
        p = _plan(REDUCED.replace(".target sm_90", f".target sm_{sm}"), sm)
        assert (p.webs["%r4"].file, p.webs["%r3"].file) == ("UR", "R"), sm
        assert p.bridges == [] and p.ur_count == 2, sm  # ptxas: 2
    text = REDUCED.replace(".target sm_90", ".target sm_90, debug")
    mod = lift_module(parse(text, "t.ptx"))
    md = analyze_module(mod)
    p = plan_function(mod.func("k"), md.funcs["k"], 90, debug=True)
    assert p.webs["%r4"].file == "UR"
    assert p.uniform == set() and p.ur_count == 3  # the descriptor's two names and REDUX
    assert plan_conv_alloc(mod.func("k"), p).markers == []
