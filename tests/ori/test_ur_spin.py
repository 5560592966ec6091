"""Kernels whose lanes rejoin unsynchronised after a spin loop (ptxopt/ori/ur_alloc.py,
``_unsynced_spin``): ptxas keeps their 64 x 64-bit multiplies and ``%cluster_ctaid``
per-thread, and puts them in UR elsewhere.  The expectations come
from ptxas 13.0.88 SASS of these kernels (``nvdisasm -c``), quoted next to each one;
docs/uniform-registers.md, "Ninth round", has the experiments behind the rule."""

from __future__ import annotations

from pathlib import Path

from ptxopt.analysis.divergence import analyze_module
from ptxopt.ir.lift import lift_module
from ptxopt.ori.report import module_plans
from ptxopt.ori.ur_alloc import FuncPlan
from ptxopt.ptx.parser import parse

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
SPIN = "spin loop"


def _tile_kernel(
    guard: str = "@!%p1 bra JOIN;", spin: bool = True, after: str = "", target: str = "sm_90a"
) -> str:
    """A tile loop computing a FastDivmod-style ``mul.hi.u64`` of ``%ctaid`` and a
    parameter; in each tile the lanes picked by ``guard`` wait on an mbarrier
    (``spin``: in a loop until the phase completes, else one ``try_wait``)."""
    wait = "mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r20], %r21;\n"
    if spin:
        wait = "SPIN:\n" + wait + "@!%p2 bra SPIN;\n"
    return f""".version 8.0
.target {target}
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 m, .param .u32 s, .param .u32 ph, .param .u32 n)
{{
.reg .pred %p<4>;
.reg .b32 %r<40>;
.reg .b64 %rd<20>;
.shared .align 8 .b64 bar;
ld.param.u64 %rd1, [out];
ld.param.u64 %rd2, [m];
ld.param.u32 %r1, [s];
ld.param.u32 %r21, [ph];
ld.param.u32 %r22, [n];
mov.u32 %r2, %ctaid.x;
mov.u32 %r3, %tid.x;
mov.u32 %r8, %laneid;
cvta.to.global.u64 %rd7, %rd1;
mul.wide.u32 %rd8, %r3, 4;
add.s64 %rd9, %rd7, %rd8;
mov.u32 %r20, bar;
mov.u32 %r7, 0;
mov.u32 %r23, %r2;
TILE:
cvt.u64.u32 %rd3, %r23;
add.s64 %rd4, %rd3, %rd2;
mul.hi.u64 %rd5, %rd4, %rd2;
shr.u64 %rd6, %rd5, %r1;
cvt.u32.u64 %r4, %rd6;
elect.sync %r5|%p1, -1;
setp.ne.s32 %p3, %r8, 0;
{guard}
{wait}JOIN:
{after}
add.s32 %r7, %r7, %r4;
add.s32 %r23, %r23, 132;
setp.lt.u32 %p3, %r23, %r22;
@%p3 bra TILE;
add.s32 %r6, %r7, %r3;
st.global.u32 [%rd9], %r6;
ret;
}}
"""


def _plans(text: str, arch: str = "sm_90") -> dict[str, FuncPlan]:
    mod = lift_module(parse(text, "t.ptx"))
    return {p.name: p for p in module_plans(mod, analyze_module(mod), arch)}


def test_lanes_picked_around_a_spin_loop_keep_the_64x64_multiply_per_thread() -> None:
    # elect-guarded spin: ``IMAD.WIDE.U32 R4, ...`` x4 for the mul.hi
    w = _plans(_tile_kernel())["k"].webs["%rd5"]
    assert w.file == "R" and SPIN in w.why
    # the same guard by %laneid: a lane-picking branch as well
    w = _plans(_tile_kernel(guard="@%p3 bra JOIN;"))["k"].webs["%rd5"]
    assert w.file == "R" and SPIN in w.why
    # every lane spins (no guard): ``UIMAD.WIDE.U32 UR6, ...``
    assert _plans(_tile_kernel(guard=""))["k"].webs["%rd5"].file == "UR"
    # one try_wait, no loop, under the guard: ``UIMAD.WIDE.U32 UR8, ...``
    assert _plans(_tile_kernel(spin=False))["k"].webs["%rd5"].file == "UR"
    # ... also when a branch tests its result (the loop around it is the tile loop,
    # not a loop of the region): ``UIMAD.WIDE.U32 UR6, ...``
    once = _tile_kernel(spin=False).replace(
        "JOIN:\n", "@%p2 bra JOIN;\nst.shared.u32 [%r20+8], %r21;\nJOIN:\n"
    )
    assert _plans(once)["k"].webs["%rd5"].file == "UR"


def test_outside_a_loop_the_warp_never_meets_the_rejoined_code_again() -> None:
    # no tile loop (the multiply runs once, before the region): ``UIMAD.WIDE.U32 UR4``
    straight = _tile_kernel().replace("@%p3 bra TILE;\n", "")
    assert _plans(straight)["k"].webs["%rd5"].file == "UR"
    # the picked lanes wait and return: they never rejoin (the loop goes on without
    # them, so the divergence analysis calls the multiply varying; ptxas computes it
    # per-thread too, ``IMAD.WIDE.U32 R4``), and the rule is not what decides
    gone = _tile_kernel().replace("@!%p2 bra SPIN;\n", "@!%p2 bra SPIN;\nret;\n")
    assert SPIN not in _plans(gone)["k"].webs["%rd5"].why


def test_a_lane_test_around_a_volatile_spin_counts_at_sm80_too() -> None:
    # no elect.sync below sm_90: lanes picked by %laneid, spinning on a volatile
    # shared load; ptxas 13.0.88 at sm_80: ``IMAD.WIDE.U32 R4, ...`` for the mul.hi
    text = (
        _tile_kernel(guard="@%p3 bra JOIN;", target="sm_80")
        .replace("elect.sync %r5|%p1, -1;\n", "")
        .replace(
            "mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r20], %r21;",
            "ld.volatile.shared.u32 %r9, [%r20];\nsetp.eq.s32 %p2, %r9, %r21;",
        )
    )
    w = _plans(text, "sm_80")["k"].webs["%rd5"]
    assert w.file == "R" and SPIN in w.why


def _fp8(sync: bool) -> dict[str, FuncPlan]:
    text = (CORPUS / "cutlass/hopper_fp8_gemm.sm90a.ptx").read_text()
    if sync:
        # where the producer's elected lane rejoins the warp after its k-loop, whose
        # mbarrier wait spins (``$L__BB0_505``: elect.sync, ``@%p601 bra $L__BB0_511``)
        assert text.count("$L__BB0_511:\n") == 1
        text = text.replace("$L__BB0_511:\n", "$L__BB0_511:\n\tbar.warp.sync -1;\n")
    mod = lift_module(parse(text, "hopper_fp8_gemm.sm90a.ptx"))
    return {p.name: p for p in module_plans(mod, analyze_module(mod), "sm_90")}


def test_a_warp_sync_where_the_lanes_rejoin_restores_ur_mode() -> None:
    """cutlass/hopper_fp8_gemm.sm90a.ptx at sm_90: the tile scheduler's ``mul.hi.u64 %rd345``
    (line 521) is ``IMAD.WIDE.U32 R12, R19, R22, RZ`` and ``%cluster_ctaid.y`` (line
    270) ``S2R R8, SR_CTAID.Y``; with ``bar.warp.sync -1`` after the rejoin, all ten
    FastDivmod multiplies are ``UIMAD.WIDE.U32`` (``UIMAD.WIDE.U32 UR4, UR12, UR20,
    URZ`` for line 521) and ``%cluster_ctaid.y`` reaches UR."""
    (plain,) = _fp8(False).values()
    assert plain.webs["%rd345"].file == "R" and SPIN in plain.webs["%rd345"].why
    assert plain.webs["%r279"].file == "R" and SPIN in plain.webs["%r279"].why
    (synced,) = _fp8(True).values()
    assert synced.webs["%rd345"].file == "UR"
    assert synced.webs["%r279"].file == "UR"
