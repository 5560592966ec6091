"""Benchmark of the SIMT interpreter: lane-instructions per second.

(a) vector add of 2^20 float32 elements, (b) shared-memory block reduction,
(c) a kernel with heavy data-dependent divergence, and how the time of (a) grows
with the grid size.  Run: ``python bench/sim.py [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ptxopt.sim import launch  # noqa: E402

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"

VECADD = (
    HEADER
    + """
.visible .entry vecadd(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 pn)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<11>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    ld.param.u32 %r2, [pn];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.s32 %p1, %r1, %r2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.s32 %rd7, %r1, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd9];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd10], %f3;
DONE:
    ret;
}
"""
)

REDUCE = (
    HEADER
    + """
.visible .entry block_sum(.param .u64 pin, .param .u64 pout)
{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    .shared .align 4 .b8 buf[1024];
    ld.param.u64 %rd1, [pin];
    ld.param.u64 %rd2, [pout];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r4, %r2, %r3, %r1;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r5, [%rd4];
    shl.b32 %r6, %r1, 2;
    mov.u32 %r7, buf;
    add.s32 %r8, %r7, %r6;
    st.shared.u32 [%r8], %r5;
    bar.sync 0;
    shr.u32 %r9, %r3, 1;
LOOP:
    setp.eq.s32 %p1, %r9, 0;
    @%p1 bra END;
    setp.ge.u32 %p2, %r1, %r9;
    @%p2 bra SKIP;
    shl.b32 %r10, %r9, 2;
    add.s32 %r10, %r8, %r10;
    ld.shared.u32 %r11, [%r10];
    ld.shared.u32 %r5, [%r8];
    add.s32 %r5, %r5, %r11;
    st.shared.u32 [%r8], %r5;
SKIP:
    bar.sync 0;
    shr.u32 %r9, %r9, 1;
    bra LOOP;
END:
    setp.ne.s32 %p1, %r1, 0;
    @%p1 bra DONE;
    ld.shared.u32 %r5, [buf];
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd5, %rd2, %rd3;
    st.global.u32 [%rd5], %r5;
DONE:
    ret;
}
"""
)

DIVERGE = (
    HEADER
    + """
.visible .entry collatz(.param .u64 pin, .param .u64 pout)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [pin];
    ld.param.u64 %rd2, [pout];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r4, %r2, %r3, %r1;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r5, [%rd4];
    mov.u32 %r6, 0;
LOOP:
    setp.le.u32 %p1, %r5, 1;
    @%p1 bra END;
    and.b32 %r7, %r5, 1;
    setp.eq.s32 %p2, %r7, 0;
    @%p2 bra EVEN;
    mad.lo.s32 %r5, %r5, 3, 1;
    bra NEXT;
EVEN:
    shr.u32 %r5, %r5, 1;
NEXT:
    add.s32 %r6, %r6, 1;
    bra LOOP;
END:
    add.s64 %rd5, %rd2, %rd3;
    st.global.u32 [%rd5], %r6;
    ret;
}
"""
)


def _rate(res: object) -> float:
    return res.lane_instructions / res.seconds  # type: ignore[attr-defined]


def bench_vecadd(n: int, block: int = 256) -> tuple[float, float]:
    a = np.random.default_rng(1).random(n, dtype=np.float32)
    b = np.random.default_rng(2).random(n, dtype=np.float32)
    c = np.zeros(n, dtype=np.float32)
    launch(VECADD, "vecadd", (n + block - 1) // block, block, [a, b, c, np.int32(n)])  # warm
    dt = float("inf")
    for _ in range(3):  # best of three: the machine is shared
        t = time.perf_counter()
        r = launch(VECADD, "vecadd", (n + block - 1) // block, block, [a, b, c, np.int32(n)])
        dt = min(dt, time.perf_counter() - t)
    assert np.array_equal(c, a + b)
    return r.lane_instructions / dt, dt


def bench_reduce(nblocks: int, block: int = 256) -> tuple[float, float]:
    x = np.random.default_rng(3).integers(0, 1000, nblocks * block).astype(np.uint32)
    out = np.zeros(nblocks, dtype=np.uint32)
    t = time.perf_counter()
    r = launch(REDUCE, "block_sum", nblocks, block, [x, out])
    dt = time.perf_counter() - t
    assert np.array_equal(out, x.reshape(nblocks, block).sum(1, dtype=np.uint32))
    return r.lane_instructions / dt, dt


def bench_diverge(n: int, block: int = 128) -> tuple[float, float, int]:
    x = np.random.default_rng(4).integers(1, 2000, n).astype(np.uint32)
    out = np.zeros(n, dtype=np.uint32)
    t = time.perf_counter()
    r = launch(DIVERGE, "collatz", n // block, block, [x, out])
    dt = time.perf_counter() - t
    exp = np.zeros(n, dtype=np.uint32)
    v = x.astype(np.int64)
    while (v > 1).any():
        m = v > 1
        exp[m] += 1
        v = np.where(m, np.where(v % 2 == 0, v // 2, 3 * v + 1), v)
    assert np.array_equal(out, exp)
    return r.lane_instructions / dt, dt, r.divergent_branches


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ns = ap.parse_args()
    n = 1 << (16 if ns.quick else 20)
    rate, dt = bench_vecadd(n)
    print(f"(a) vector add, {n} elements:        {rate / 1e6:8.1f} M lane-instr/s ({dt:.3f} s)")
    nb = 64 if ns.quick else 1024
    rate, dt = bench_reduce(nb)
    print(f"(b) block reduction, {nb}x256 threads: {rate / 1e6:8.1f} M lane-instr/s ({dt:.3f} s)")
    nd = 1 << (12 if ns.quick else 16)
    rate, dt, div = bench_diverge(nd)
    print(
        f"(c) collatz divergence, {nd} threads: {rate / 1e6:8.1f} M lane-instr/s ({dt:.3f} s, "
        f"{div} divergent warp-branches)"
    )
    print("scaling of (a) with grid size:")
    prev = None
    for k in range(10, (17 if ns.quick else 21), 2):
        rate, dt = bench_vecadd(1 << k)
        ratio = "" if prev is None else f"  x{dt / prev:5.2f} time for x4 elements"
        print(f"    2^{k:2d} elements: {dt * 1e3:8.1f} ms  {rate / 1e6:8.1f} M lane-instr/s{ratio}")
        prev = dt


if __name__ == "__main__":
    main()
