"""Hand-written PTX tests of the SIMT interpreter: reconvergence, barriers, warp
shuffles with inactive lanes, atomics' return values, memory errors, exact floats."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ptxopt.sim import SimError, differential, launch
from ptxopt.sim.cli import main as cli_main

HDR = ".version 8.0\n.target sm_80\n.address_size 64\n"


def kern(body: str, params: str = ".param .u64 pout", regs: str = "") -> str:
    decl = (
        ".reg .pred %p<8>;\n.reg .b16 %h<8>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<16>;\n"
        ".reg .f32 %f<16>;\n.reg .f64 %fd<8>;\n" + regs
    )
    return HDR + f".visible .entry k({params})\n{{\n{decl}{body}\n}}\n"


# store %r9 (per thread) to out[global thread id]
STORE = """
    ld.param.u64 %rd1, [pout];
    mov.u32 %r20, %ctaid.x;
    mov.u32 %r21, %ntid.x;
    mov.u32 %r22, %tid.x;
    mad.lo.s32 %r23, %r20, %r21, %r22;
    mul.wide.u32 %rd2, %r23, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r9;
"""


def run_u32(body: str, n: int, grid: int = 1, **kw: object) -> np.ndarray:
    out = np.zeros(n * grid, dtype=np.uint32)
    launch(kern(body + STORE), "k", grid, n, [out], **kw)  # type: ignore[arg-type]
    return out


def test_divergent_if_else_reconverges_before_ballot() -> None:
    body = """
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra EVEN;
    activemask.b32 %r3;        // odd lanes only
    bra JOIN;
EVEN:
    activemask.b32 %r3;        // even lanes only
JOIN:
    activemask.b32 %r4;        // reconverged: every lane
    setp.ne.u32 %p2, %r3, %r4;
    vote.sync.ballot.b32 %r5, %p2, 0xffffffff;
    xor.b32 %r9, %r3, %r5;
"""
    out = run_u32(body, 32)
    even, odd = 0x55555555, 0xAAAAAAAA
    # ballot: every lane saw a partial mask inside the branch -> all bits set
    exp = np.array([(even if i % 2 == 0 else odd) ^ 0xFFFFFFFF for i in range(32)], dtype=np.uint32)
    assert np.array_equal(out, exp)


def test_loop_with_divergent_trip_counts() -> None:
    body = """
    mov.u32 %r1, %tid.x;
    mov.u32 %r9, 0;
    mov.u32 %r2, 0;
LOOP:
    setp.gt.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    add.u32 %r9, %r9, %r2;
    add.u32 %r2, %r2, 1;
    bra LOOP;
DONE:
    activemask.b32 %r3;
    setp.ne.u32 %p2, %r3, 0xffffffff;
    @%p2 trap;
"""
    out = run_u32(body, 32)
    assert np.array_equal(out, np.array([i * (i + 1) // 2 for i in range(32)], np.uint32))


def test_barrier_exchanges_shared_memory_between_warps() -> None:
    body = """
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, sm;
    add.u32 %r4, %r3, %r2;
    mul.lo.u32 %r5, %r1, 7;
    st.shared.u32 [%r4], %r5;
    bar.sync 0;
    sub.u32 %r6, 95, %r1;          // read the mirror thread, in another warp
    shl.b32 %r6, %r6, 2;
    add.u32 %r6, %r3, %r6;
    ld.shared.u32 %r9, [%r6];
"""
    src = kern(body + STORE, regs=".shared .align 4 .b8 sm[384];\n")
    out = np.zeros(96 * 3, dtype=np.uint32)
    res = launch(src, "k", 3, 96, [out])
    assert np.array_equal(out, np.tile((95 - np.arange(96)) * 7, 3).astype(np.uint32))
    assert res.barriers == 3 * 3


def test_barrier_deadlock_is_reported() -> None:
    body = """
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 32;
    @%p1 bra A;
    bar.sync 1;
    bra E;
A:
    bar.sync 0;
E:
    ret;
"""
    with pytest.raises(SimError, match="deadlock"):
        launch(kern(body), "k", 1, 64, [np.zeros(1, np.uint32)])


def test_divergent_barrier_within_warp_is_reported() -> None:
    body = """
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra A;
    ret;
A:
    bar.sync 0;
    ret;
"""
    with pytest.raises(SimError, match="part of warp"):
        launch(kern(body), "k", 1, 32, [np.zeros(1, np.uint32)])


def test_exited_warps_do_not_block_barrier() -> None:
    body = """
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, 32;
    @%p1 exit;
    bar.sync 0;
    mov.u32 %r9, 5;
"""
    out = run_u32(body, 64)
    assert list(out[:32]) == [5] * 32 and list(out[32:]) == [0] * 32


def test_shfl_in_partial_warp_and_out_of_range_sources() -> None:
    # block of 20 threads: lanes 20..31 do not exist
    body = """
    mov.u32 %r1, %tid.x;
    mul.lo.u32 %r2, %r1, 10;
    shfl.sync.down.b32 %r3|%p1, %r2, 3, 0x1f, 0xfffff;
    shfl.sync.idx.b32 %r4, %r2, 5, 0x1f, 0xfffff;
    shfl.sync.bfly.b32 %r5, %r2, 1, 0x1f, 0xfffff;
    selp.u32 %r6, 1000000, 0, %p1;
    add.u32 %r9, %r3, %r6;
    add.u32 %r9, %r9, %r4;
    shl.b32 %r5, %r5, 12;
    add.u32 %r9, %r9, %r5;
"""
    out = run_u32(body, 20)
    lane = np.arange(20)
    down = np.where(lane + 3 <= 31, (lane + 3) * 10, lane * 10)
    # source lanes 20..22 do not exist: the value read there is the register's
    # current content (0 for never-written lanes); the predicate still says in-range
    down = np.where(lane + 3 >= 20, 0, down)
    exp = down + 1000000 + 50 + (((lane ^ 1) * 10) << 12)
    assert np.array_equal(out, exp.astype(np.uint32))


def test_shfl_up_with_segments() -> None:
    # width 8: c = ((32 - 8) << 8) | 0
    body = """
    mov.u32 %r1, %tid.x;
    shfl.sync.up.b32 %r9|%p1, %r1, 2, 0x1800, 0xffffffff;
"""
    out = run_u32(body, 32)
    lane = np.arange(32)
    exp = np.where(lane % 8 >= 2, lane - 2, lane)
    assert np.array_equal(out, exp.astype(np.uint32))


def test_shfl_membermask_naming_a_lane_that_skips_it_is_an_error() -> None:
    # lanes 8..31 wait at B (never exit, never execute the shfl): undefined, reported
    body = """
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 8;
    @%p1 bra A;
    bra B;
A:
    shfl.sync.idx.b32 %r9, %r1, 0, 0x1f, 0xffffffff;
B:
    ret;
"""
    with pytest.raises(SimError, match="membermask"):
        launch(kern(body), "k", 1, 32, [np.zeros(1, np.uint32)])


def test_shfl_membermask_naming_lanes_that_exit_waits_for_the_others_only() -> None:
    # lanes 8..31 exit on the other path: the shfl waits only for lanes 0..7 (ISA 9.7.13)
    body = """
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 8;
    @%p1 bra A;
    ret;
A:
    shfl.sync.idx.b32 %r9, %r1, 3, 0x1f, 0xffffffff;
    add.u32 %r9, %r9, 100;
"""
    out = run_u32(body, 32)
    assert list(out[:8]) == [103] * 8 and not out[8:].any()


def test_vote_and_match_and_redux() -> None:
    body = """
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 3;
    match.any.sync.b32 %r3, %r2, 0xffffffff;
    redux.sync.add.u32 %r4, %r1, 0xffffffff;
    setp.lt.u32 %p1, %r1, 40;
    vote.sync.all.pred %p2, %p1, 0xffffffff;
    selp.u32 %r5, 1, 0, %p2;
    add.u32 %r9, %r3, %r4;
    add.u32 %r9, %r9, %r5;
"""
    out = run_u32(body, 32)
    lane = np.arange(32)
    groups = np.array([sum(1 << j for j in range(32) if j % 4 == i % 4) for i in lane])
    exp = (groups + 496 + 1) & 0xFFFFFFFF
    assert np.array_equal(out, exp.astype(np.uint32))


def test_atomic_add_returns_values_in_lane_order() -> None:
    body = """
    ld.param.u64 %rd5, [pcnt];
    atom.global.add.u32 %r9, [%rd5], 1;
"""
    src = kern(body + STORE, params=".param .u64 pout, .param .u64 pcnt")
    out = np.zeros(96, np.uint32)
    cnt = np.zeros(1, np.uint32)
    launch(src, "k", 1, 96, [out, cnt])
    assert cnt[0] == 96
    assert np.array_equal(out, np.arange(96, dtype=np.uint32))


def test_atomic_cas_exch_inc_and_shared_atomics() -> None:
    body = """
    ld.param.u64 %rd5, [pcnt];
    mov.u32 %r1, %tid.x;
    atom.global.exch.b32 %r2, [%rd5], %r1;          // previous lane's id (or 0)
    add.s64 %rd6, %rd5, 4;
    atom.global.cas.b32 %r3, [%rd6], %r1, 100;      // only lane 0 swaps (0 == tid)
    add.s64 %rd7, %rd5, 8;
    atom.global.inc.u32 %r4, [%rd7], 9;             // wraps at 10
    mov.u32 %r6, sh;
    atom.shared.max.s32 %r7, [%r6], %r1;
    bar.sync 0;
    ld.shared.u32 %r8, [sh];
    mad.lo.u32 %r9, %r2, 1000, %r3;
    mad.lo.u32 %r9, %r4, 100000, %r9;
    mad.lo.u32 %r9, %r8, 10000000, %r9;
"""
    src = kern(
        body + STORE,
        params=".param .u64 pout, .param .u64 pcnt",
        regs=".shared .align 4 .b8 sh[4];\n",
    )
    out = np.zeros(32, np.uint32)
    cnt = np.zeros(3, np.uint32)
    launch(src, "k", 1, 32, [out, cnt])
    lane = np.arange(32)
    exch = np.r_[0, lane[:-1]]
    cas = np.where(lane == 0, 0, 100)
    inc = lane % 10
    exp = exch * 1000 + cas + inc * 100000 + 31 * 10000000
    assert np.array_equal(out, exp.astype(np.uint32))
    assert list(cnt) == [31, 100, 32 % 10]


def test_atomic_float_add_is_sequential_in_lane_order() -> None:
    body = """
    ld.param.u64 %rd5, [pcnt];
    mov.u32 %r1, %tid.x;
    cvt.rn.f32.u32 %f1, %r1;
    mul.f32 %f1, %f1, 0f3DCCCCCD;   // 0.1 * tid
    atom.global.add.f32 %f2, [%rd5], %f1;
    mov.b32 %r9, %f2;
"""
    src = kern(body + STORE, params=".param .u64 pout, .param .u64 pcnt")
    out = np.zeros(256, np.uint32)
    acc = np.zeros(1, np.float32)
    launch(src, "k", 1, 256, [out, acc])
    vals = np.arange(256).astype(np.float32) * np.float32(0.1)
    s = np.float32(0)
    olds = []
    for v in vals:
        olds.append(s)
        s = np.float32(s + v)
    assert acc[0] == s
    assert np.array_equal(out.view(np.float32), np.array(olds, np.float32))


def test_out_of_bounds_access_names_instruction_lane_and_address() -> None:
    body = """
    ld.param.u64 %rd1, [pout];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
"""
    with pytest.raises(SimError) as ei:
        launch(kern(body), "k", 1, 40, [np.zeros(33, np.uint32)], filename="oob.ptx")
    msg = str(ei.value)
    assert msg.startswith("<input>:") or "oob" in msg or ":" in msg.split("error")[0]
    assert "thread (33, 0, 0)" in msg and "out-of-bounds" in msg and "0x" in msg


def test_misaligned_access_is_an_error() -> None:
    body = """
    ld.param.u64 %rd1, [pout];
    ld.global.u32 %r1, [%rd1+2];
"""
    with pytest.raises(SimError, match="misaligned"):
        launch(kern(body), "k", 1, 1, [np.zeros(4, np.uint32)])


def _fma_f32_lanes(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``fma.rn.f32`` of the 512 lane triples, run in the interpreter: the result bits."""
    body = """
    ld.param.u64 %rd4, [pa];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mad.lo.u32 %r1, %r2, 256, %r1;
    mul.wide.u32 %rd5, %r1, 4;
    add.s64 %rd6, %rd4, %rd5;
    ld.global.f32 %f1, [%rd6];
    add.s64 %rd7, %rd6, 2048;
    ld.global.f32 %f2, [%rd7];
    add.s64 %rd8, %rd7, 2048;
    ld.global.f32 %f3, [%rd8];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    mov.b32 %r9, %f4;
"""
    src = kern(body + STORE, params=".param .u64 pout, .param .u64 pa")
    out = np.zeros(512, np.uint32)
    launch(src, "k", 2, 256, [out, np.concatenate([a, b, c]).astype(np.float32)])
    return out


def _f32_rne(x: Fraction) -> np.float32:
    """``x`` rounded to the nearest binary32, ties to even (normal range, nonzero)."""
    f = np.float32(float(x))
    near = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    dist = [abs(Fraction(float(g)) - x) for g in near]
    best = min(dist)
    ties = [g for g, d in zip(near, dist, strict=True) if d == best]
    return min(ties, key=lambda g: int(g.view(np.uint32)) & 1)


def test_fma_f32_is_single_rounding() -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal(512).astype(np.float32)
    b = rng.standard_normal(512).astype(np.float32)
    c = (-(a.astype(np.float64) * b.astype(np.float64))).astype(np.float32)  # cancellation
    out = _fma_f32_lanes(a, b, c)
    exact = [
        float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
        for x, y, z in zip(a, b, c, strict=True)
    ]
    # exact values of these products fit in float64, so one rounding to f32 is reference
    ref = np.array(exact, dtype=np.float64).astype(np.float32)
    assert np.array_equal(out.view(np.float32), ref)


def test_fma_f32_midpoints_and_zeros() -> None:
    """The cases a binary64 sum gets wrong or only nearly right: a sum the binary64
    rounding puts exactly on a binary32 midpoint (the tie must not be broken to even:
    the exact value lies below it), exact midpoints (ties to even), and zeros of every
    sign (IEEE: two zeros keep their common sign, an exact cancellation is +0)."""
    one_up = np.float32(1 + 2.0**-23)  # odd mantissa: the tie above it breaks upwards
    just_under = np.float32((1 - 2.0**-23) * 2.0**-24)  # one_up * this = 2^-24 - 2^-70
    rows = [
        (one_up, just_under, one_up),  # 1 + 2^-23 + 2^-24 - 2^-70 -> 1 + 2^-23
        (-one_up, just_under, -one_up),
        (one_up, -just_under, -one_up),
        (np.float32(1), one_up, np.float32(2.0**-24)),  # exact midpoint -> 1 + 2^-22
        (np.float32(1), np.float32(1), np.float32(2.0**-24)),  # exact midpoint -> 1
        (np.float32(-1), np.float32(3), np.float32(3 * 2.0**-25)),
        (np.float32(0), np.float32(0), np.float32(0)),
        (np.float32(-0.0), np.float32(0), np.float32(-0.0)),  # -0 + -0 = -0
        (np.float32(-0.0), np.float32(0), np.float32(0)),  # -0 + +0 = +0
        (np.float32(0), np.float32(5), np.float32(-0.0)),
        (np.float32(-2), np.float32(3), np.float32(6)),  # exact cancellation: +0
        (np.float32(-0.0), np.float32(-0.0), np.float32(-0.0)),  # +0 + -0 = +0
    ]
    k = len(rows)
    a = np.array([r[0] for r in rows] * (512 // k + 1), np.float32)[:512]
    b = np.array([r[1] for r in rows] * (512 // k + 1), np.float32)[:512]
    c = np.array([r[2] for r in rows] * (512 // k + 1), np.float32)[:512]
    out = _fma_f32_lanes(a, b, c)
    for i in range(k):
        x = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        if x == 0:
            zero_p = a[i] == 0 or b[i] == 0
            neg = zero_p and c[i] == 0 and np.signbit(a[i]) ^ np.signbit(b[i]) and np.signbit(c[i])
            ref = np.float32(-0.0 if neg else 0.0)
        else:
            ref = _f32_rne(x)
        assert out[i] == ref.view(np.uint32), (i, rows[i], hex(out[i]))
    assert out[0] == one_up.view(np.uint32)  # not the tie broken to even
    assert np.array_equal(out[k : 2 * k], out[:k])


def test_cvt_rounding_modes() -> None:
    body = """
    mov.f32 %f1, 0fC0300000;        // -2.75
    cvt.rzi.s32.f32 %r1, %f1;       // -2
    cvt.rmi.s32.f32 %r2, %f1;       // -3
    cvt.rni.s32.f32 %r3, %f1;       // -3
    cvt.rpi.s32.f32 %r4, %f1;       // -2
    mov.f64 %fd1, 0d3FF0000000000001;   // 1 + 2^-52
    cvt.rp.f32.f64 %f2, %fd1;           // next float after 1
    cvt.rz.f32.f64 %f3, %fd1;           // 1
    mov.b32 %r5, %f2;
    mov.b32 %r6, %f3;
    mov.f32 %f4, 0f7F7FFFFF;
    cvt.rzi.u32.f32 %r7, %f4;            // saturates to 0xffffffff
    cvt.rn.f16.f32 %h1, %f1;
    cvt.u32.u16 %r8, %h1;
    mov.u32 %r10, %tid.x;
    setp.eq.u32 %p1, %r10, 0;   @%p1 mov.u32 %r9, %r1;
    setp.eq.u32 %p1, %r10, 1;   @%p1 mov.u32 %r9, %r2;
    setp.eq.u32 %p1, %r10, 2;   @%p1 mov.u32 %r9, %r3;
    setp.eq.u32 %p1, %r10, 3;   @%p1 mov.u32 %r9, %r4;
    setp.eq.u32 %p1, %r10, 4;   @%p1 mov.u32 %r9, %r5;
    setp.eq.u32 %p1, %r10, 5;   @%p1 mov.u32 %r9, %r6;
    setp.eq.u32 %p1, %r10, 6;   @%p1 mov.u32 %r9, %r7;
    setp.eq.u32 %p1, %r10, 7;   @%p1 mov.u32 %r9, %r8;
"""
    out = run_u32(body, 8)
    m = (1 << 32) - 1
    assert list(out) == [
        -2 & m,
        -3 & m,
        -3 & m,
        -2 & m,
        0x3F800001,
        0x3F800000,
        m,
        int(np.float16(-2.75).view(np.uint16)),
    ]


def test_integer_semantics() -> None:
    body = """
    mov.u32 %r1, 0xfffffff9;        // -7
    div.s32 %r2, %r1, 2;            // -3 (truncating)
    rem.s32 %r3, %r1, 2;            // -1
    mul.hi.u32 %r4, %r1, %r1;       // high half of (2^32-7)^2
    add.cc.u32 %r5, %r1, 10;        // carry out
    addc.u32 %r6, 0, 0;             // 1
    bfe.s32 %r7, 0x0000f000, 12, 4; // -1
    prmt.b32 %r8, 0x33221100, 0x77665544, 0x4567;
    mov.u32 %r10, %tid.x;
    setp.eq.u32 %p1, %r10, 0;   @%p1 mov.u32 %r9, %r2;
    setp.eq.u32 %p1, %r10, 1;   @%p1 mov.u32 %r9, %r3;
    setp.eq.u32 %p1, %r10, 2;   @%p1 mov.u32 %r9, %r4;
    setp.eq.u32 %p1, %r10, 3;   @%p1 mov.u32 %r9, %r5;
    setp.eq.u32 %p1, %r10, 4;   @%p1 mov.u32 %r9, %r6;
    setp.eq.u32 %p1, %r10, 5;   @%p1 mov.u32 %r9, %r7;
    setp.eq.u32 %p1, %r10, 6;   @%p1 mov.u32 %r9, %r8;
"""
    out = run_u32(body, 7)
    m = (1 << 32) - 1
    assert list(out) == [-3 & m, -1 & m, ((2**32 - 7) ** 2) >> 32, 3, 1, m, 0x44556677]


def test_predicated_off_lanes_keep_old_value() -> None:
    body = """
    mov.u32 %r9, 7;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 3;
    @%p1 mov.u32 %r9, 1;
"""
    out = run_u32(body, 6)
    assert list(out) == [1, 1, 1, 7, 7, 7]


def test_recursive_and_indirect_calls() -> None:
    src = (
        HDR
        + """
.func (.param .b32 r) fact(.param .b32 n)
{
    .reg .pred %p1; .reg .b32 %r<5>;
    ld.param.b32 %r1, [n];
    setp.le.s32 %p1, %r1, 1;
    @%p1 bra BASE;
    sub.s32 %r2, %r1, 1;
    {
        .param .b32 a0; .param .b32 r0;
        st.param.b32 [a0], %r2;
        call (r0), fact, (a0);
        ld.param.b32 %r3, [r0];
    }
    mul.lo.s32 %r4, %r3, %r1;
    st.param.b32 [r], %r4;
    ret;
BASE:
    st.param.b32 [r], 1;
    ret;
}
.func (.param .b32 r) twice(.param .b32 n)
{
    .reg .b32 %r<3>;
    ld.param.b32 %r1, [n];
    shl.b32 %r2, %r1, 1;
    st.param.b32 [r], %r2;
    ret;
}
.visible .entry k(.param .u64 pout)
{
    .reg .pred %p1; .reg .b32 %r<12>; .reg .b64 %rd<8>;
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 7;
    setp.lt.u32 %p1, %r1, 16;
    mov.u64 %rd4, fact;
    @!%p1 mov.u64 %rd4, twice;
    proto: .callprototype (.param .b32 _) _ (.param .b32 _);
    {
        .param .b32 a0; .param .b32 r0;
        st.param.b32 [a0], %r2;
        call (r0), %rd4, (a0), proto;
        ld.param.b32 %r9, [r0];
    }
    ld.param.u64 %rd1, [pout];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r9;
    ret;
}
"""
    )
    out = np.zeros(32, np.uint32)
    res = launch(src, "k", 1, 32, [out])
    import math

    exp = [math.factorial(max(i % 8, 1)) if i < 16 else 2 * (i % 8) for i in range(32)]
    assert list(out) == exp
    assert res.calls > 32


def test_uniformity_violations_are_recorded() -> None:
    body = """
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    add.u32 %r9, %r2, 1;
"""
    out = np.zeros(64, np.uint32)
    res = launch(kern(body + STORE), "k", 2, 32, [out], uniform_claims={"k": ["%r1", "%r2"]})
    regs = {v.register for v in res.violations}
    assert regs == {"%r1"}
    v = res.violations[0]
    assert v.function == "k" and "mov.u32" in v.instruction and len(v.values) == 32


def test_tensor_core_instruction_is_unsupported_by_name() -> None:
    src = kern("    movmatrix.sync.aligned.m8n8.trans.b16 %r1, %r2;\n")
    with pytest.raises(SimError, match="movmatrix.*unsupported by the interpreter"):
        launch(src, "k", 1, 32, [np.zeros(1, np.uint32)])


def test_differential_finds_first_difference() -> None:
    a = kern("    mov.u32 %r9, %tid.x;\n" + STORE)
    b = kern("    mov.u32 %r9, %tid.x;\n    min.u32 %r9, %r9, 40;\n" + STORE)

    def make(seed: int, grid: int, block: int) -> list[np.ndarray]:
        return [np.zeros(grid * block, np.uint32)]

    ok = differential(a, a, "k", [(1, 20), (2, 48)], None, make, trials=2)
    assert ok and ok.trials == 4
    bad = differential(a, b, "k", [(1, 20), (2, 48)], None, make, trials=2)
    assert not bad and bad.index == 41 and bad.arg == 0


def test_cli_runs_and_reports_errors(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    import pathlib

    p = pathlib.Path(str(tmp_path)) / "k.ptx"
    p.write_text(kern("    mov.u32 %r9, %tid.x;\n" + STORE))
    assert cli_main(["run", str(p), "-k", "k", "-g", "1", "-b", "8", "--arg", "u32:8"]) == 0
    assert "lane-instructions" in capsys.readouterr().out
    assert cli_main(["run", str(p), "-k", "k", "-g", "1", "-b", "9", "--arg", "u32:8"]) == 1
    err = capsys.readouterr().err
    assert f"{p}:" in err and "error: out-of-bounds" in err


BRA_UNI = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [k_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	ld.param.u32 %r1, [k_param_1];
	mov.u32 %r2, %tid.x;
	setp.lt.u32 %p1, COND;
	mov.u32 %r3, 1;
	@%p1 bra.uni $L_skip;
	mov.u32 %r3, 2;
$L_skip:
	mul.wide.u32 %rd3, %r2, 4;
	add.s64 %rd3, %rd2, %rd3;
	st.global.u32 [%rd3], %r3;
	ret;
}
"""


def test_uniform_bra_uni_runs() -> None:
    out = np.zeros(40, dtype=np.uint32)
    launch(BRA_UNI.replace("COND", "%r1, 5"), "k", 1, 40, [out, np.uint32(3)])
    assert (out == 1).all()


def test_divergent_bra_uni_is_an_error() -> None:
    out = np.zeros(40, dtype=np.uint32)
    with pytest.raises(SimError, match="bra.uni is divergent"):
        launch(BRA_UNI.replace("COND", "%r2, %r1"), "k", 1, 40, [out, np.uint32(3)])


def test_saturating_s32_add_and_sub() -> None:
    ptx = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<6>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd3, %r1, 8;
	add.s64 %rd3, %rd2, %rd3;
	ld.global.v2.u32 {%r2, %r3}, [%rd3];
	add.sat.s32 %r4, %r2, %r3;
	sub.sat.s32 %r5, %r2, %r3;
	st.global.v2.u32 [%rd3], {%r4, %r5};
	ret;
}
"""
    v = np.array([2**31 - 1, 5, -(2**31), 3, 7, -9, -(2**31), 1], dtype=np.int32)
    x = v.copy()
    launch(ptx, "k", 1, 4, [x])
    a, b = v[0::2].astype(np.int64), v[1::2].astype(np.int64)
    assert x[0::2].tolist() == np.clip(a + b, -(2**31), 2**31 - 1).tolist()
    assert x[1::2].tolist() == np.clip(a - b, -(2**31), 2**31 - 1).tolist()


def test_compiled_module_cache_is_bounded_by_instructions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interpreter keeps compiled modules for repeated launches, but not more
    decoded instructions than its bound: the oldest go first, the newest always stays."""
    import sys

    sim_launch = sys.modules["ptxopt.sim.launch"]  # (the package's ``launch`` is the function)
    monkeypatch.setattr(sim_launch, "_CACHE", type(sim_launch._CACHE)())
    small = [kern(f"    mov.u32 %r9, {k};" + STORE) for k in range(3)]
    size = len(sim_launch.compile_module(small[0]).code)
    monkeypatch.setattr(sim_launch, "_CACHE_OPS", 2 * size)
    for src in small[1:]:
        sim_launch.compile_module(src)
    assert [k[0] for k in sim_launch._CACHE] == small[1:]
    monkeypatch.setattr(sim_launch, "_CACHE_OPS", size - 1)  # even one is over the bound
    big = kern("    mov.u32 %r9, 7;\n    add.u32 %r9, %r9, 1;" + STORE)
    sim_launch.compile_module(big)
    assert [k[0] for k in sim_launch._CACHE] == [big]
    out = np.zeros(4, np.uint32)
    launch(big, "k", 1, 4, [out])
    assert out.tolist() == [8, 8, 8, 8]


def test_a_dropped_compiled_module_is_freed_without_the_collector() -> None:
    """The decoder and its operand builder form no reference cycle: a compiled module
    (whose decoder holds the whole AST) is freed as soon as it is dropped, not at the
    cyclic collector's next full collection."""
    import gc
    import sys
    import weakref

    sim_launch = sys.modules["ptxopt.sim.launch"]
    comp = sim_launch._compile(kern("    mov.u32 %r9, 3;" + STORE), "t.ptx")
    dec = weakref.ref(comp.dec)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del comp
        assert dec() is None
    finally:
        if enabled:
            gc.enable()
