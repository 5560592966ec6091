"""SIMT interpreter: asynchronous copies and their synchronization - cp.async with
zero-fill and groups, mbarrier phases between a producer and a consumer warp, bulk and
tensor (TMA) copies, and the memory-model reports for reading a copy's destination
before waiting for it."""

from __future__ import annotations

import numpy as np
import pytest

from ptxopt.sim import launch
from ptxopt.sim.errors import SimError
from ptxopt.sim.tma import TensorMap, swizzle

CP_ASYNC = r"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 o, .param .u32 bad)
{
  .reg .b32 %r<20>; .reg .b64 %rd<10>; .reg .pred %p<4>;
  .shared .align 16 .b8 buf[2048];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [o];
  ld.param.u32 %r9, [bad];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 4;
  mov.u32 %r3, buf;
  add.u32 %r4, %r3, %r2;
  cvt.u64.u32 %rd3, %r2;
  add.u64 %rd4, %rd1, %rd3;
  // lanes >= 60 copy 8 bytes and zero-fill
  setp.ge.u32 %p1, %r1, 60;
  selp.u32 %r5, 8, 16, %p1;
  cp.async.cg.shared.global [%r4], [%rd4], 16, %r5;
  cp.async.commit_group;
  setp.ne.u32 %p2, %r9, 0;
  @%p2 ld.shared.u32 %r6, [%r4];
  cp.async.wait_group 0;
  bar.sync 0;
  xor.b32 %r7, %r2, 16;
  add.u32 %r8, %r3, %r7;
  ld.shared.v4.u32 {%r10,%r11,%r12,%r13}, [%r8];
  add.u64 %rd5, %rd2, %rd3;
  st.global.v4.u32 [%rd5], {%r10,%r11,%r12,%r13};
  ret;
}
"""

RING = r"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 o, .param .u32 nst)
{
  .reg .b32 %r<30>; .reg .b64 %rd<10>; .reg .pred %p<6>;
  .shared .align 128 .b8 ring[512];
  .shared .align 8 .b64 full[2];
  .shared .align 8 .b64 empty[2];
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [o];
  ld.param.u32 %r20, [nst];
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  setp.eq.u32 %p1, %r1, 0;
  mov.u32 %r4, full;
  mov.u32 %r5, empty;
  @%p1 mbarrier.init.shared.b64 [%r4], 1;
  @%p1 mbarrier.init.shared.b64 [%r4+8], 1;
  @%p1 mbarrier.init.shared.b64 [%r5], 32;
  @%p1 mbarrier.init.shared.b64 [%r5+8], 32;
  bar.sync 0;
  mov.u32 %r6, 0;            // iteration
  setp.eq.u32 %p2, %r2, 1;
  @%p2 bra PRODUCER;
CONS:
  and.b32 %r7, %r6, 1;       // stage
  shr.u32 %r8, %r6, 1;
  and.b32 %r9, %r8, 1;       // phase parity
  shl.b32 %r10, %r7, 3;
  add.u32 %r11, %r4, %r10;
WAITF:
  mbarrier.try_wait.parity.shared.b64 %p3, [%r11], %r9;
  @!%p3 bra WAITF;
  shl.b32 %r12, %r7, 8;
  mov.u32 %r13, ring;
  add.u32 %r13, %r13, %r12;
  shl.b32 %r14, %r3, 3;
  add.u32 %r13, %r13, %r14;
  ld.shared.u64 %rd3, [%r13];
  shl.b32 %r15, %r6, 8;
  add.u32 %r15, %r15, %r14;
  cvt.u64.u32 %rd4, %r15;
  add.u64 %rd4, %rd2, %rd4;
  st.global.u64 [%rd4], %rd3;
  add.u32 %r16, %r5, %r10;
  mbarrier.arrive.shared.b64 %rd5, [%r16];
  add.u32 %r6, %r6, 1;
  setp.lt.u32 %p4, %r6, %r20;
  @%p4 bra CONS;
  bra DONE;
PRODUCER:
  and.b32 %r7, %r6, 1;
  shr.u32 %r8, %r6, 1;
  and.b32 %r9, %r8, 1;
  xor.b32 %r9, %r9, 1;       // empty barriers start "released"
  shl.b32 %r10, %r7, 3;
  add.u32 %r16, %r5, %r10;
  setp.lt.u32 %p5, %r6, 2;
  @%p5 bra SKIPW;
WAITE:
  mbarrier.try_wait.parity.shared.b64 %p3, [%r16], %r9;
  @!%p3 bra WAITE;
SKIPW:
  setp.eq.u32 %p1, %r3, 0;
  add.u32 %r11, %r4, %r10;
  @%p1 mbarrier.arrive.expect_tx.shared.b64 _, [%r11], 256;
  shl.b32 %r12, %r7, 8;
  mov.u32 %r13, ring;
  add.u32 %r13, %r13, %r12;
  shl.b32 %r15, %r6, 8;
  cvt.u64.u32 %rd4, %r15;
  add.u64 %rd4, %rd1, %rd4;
  @%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
    [%r13], [%rd4], 256, [%r11];
  add.u32 %r6, %r6, 1;
  setp.lt.u32 %p4, %r6, %r20;
  @%p4 bra PRODUCER;
DONE:
  ret;
}
"""


def test_cp_async_src_size_zero_fill_and_wait() -> None:
    a = np.arange(64 * 4, dtype=np.uint32) + 1
    o = np.zeros_like(a)
    launch(CP_ASYNC, "k", 1, 64, [a, o, 0])
    exp = a.copy().reshape(64, 4)
    exp[60:, 2:] = 0  # lanes 60.. copy 8 of 16 bytes; the rest is zero-filled
    assert (o == exp[np.arange(64) ^ 1].ravel()).all()


def test_reading_a_cp_async_destination_before_the_wait_is_reported() -> None:
    a = np.arange(64 * 4, dtype=np.uint32)
    with pytest.raises(SimError, match="asynchronous copy into it is still in flight"):
        launch(CP_ASYNC, "k", 1, 64, [a, np.zeros_like(a), 1])


def test_ignore_src_and_wait_group_counts_groups() -> None:
    src = CP_ASYNC.replace(
        "cp.async.cg.shared.global [%r4], [%rd4], 16, %r5;",
        "cp.async.ca.shared.global [%r4], [%rd4], 16, %p1;\n  cp.async.commit_group;\n"
        "  cp.async.ca.shared.global [%r4+1024], [%rd4], 4;",
    ).replace("cp.async.wait_group 0;", "cp.async.wait_group 1;")
    assert src != CP_ASYNC
    a = np.arange(64 * 4, dtype=np.uint32) + 1
    o = np.zeros_like(a)
    # the second group (4 bytes at +1024) is still pending after wait_group 1, but
    # nothing reads it; the first group is complete
    launch(src, "k", 1, 64, [a, o, 0])
    exp = a.copy().reshape(64, 4)
    exp[60:, :] = 0  # ignore-src: lanes 60.. fill all 16 bytes with zeros
    assert (o == exp[np.arange(64) ^ 1].ravel()).all()
    with pytest.raises(SimError, match="in flight"):
        launch(
            src.replace(
                "ld.shared.v4.u32 {%r10,%r11,%r12,%r13}, [%r8];", "ld.shared.u32 %r10, [%r8+1024];"
            ),
            "k",
            1,
            64,
            [a, o, 0],
        )


def test_mbarrier_ring_between_producer_and_consumer_warps() -> None:
    n = 6
    a = np.arange(n * 32, dtype=np.uint64) * 7 + 3
    o = np.zeros_like(a)
    launch(RING, "k", 1, 64, [a, o, n])
    assert (o == a).all()


def test_reading_a_bulk_copy_destination_before_its_phase_completes_is_reported() -> None:
    line = "[%r13], [%rd4], 256, [%r11];"
    src = RING.replace(line, line + "\n  @%p1 ld.shared.u32 %r22, [%r13];")
    assert src != RING
    a = np.arange(6 * 32, dtype=np.uint64)
    with pytest.raises(SimError, match="in flight"):
        launch(src, "k", 1, 64, [a, np.zeros_like(a), 6])


def test_a_wait_that_can_never_complete_is_a_deadlock() -> None:
    # the producer issues one stage less than the consumer waits for
    src = RING.replace(
        "setp.lt.u32 %p4, %r6, %r20;\n  @%p4 bra PRODUCER;",
        "add.u32 %r21, %r6, 1;\n  setp.lt.u32 %p4, %r21, %r20;\n  @%p4 bra PRODUCER;",
    )
    assert src != RING
    a = np.arange(6 * 32, dtype=np.uint64)
    with pytest.raises(SimError, match="deadlock"):
        launch(src, "k", 1, 64, [a, np.zeros_like(a), 6])


TMA = r"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 tmap[128], .param .u64 o, .param .u32 x, .param .u32 y)
{
  .reg .b32 %r<20>; .reg .b64 %rd<10>; .reg .pred %p<4>;
  .shared .align 1024 .b8 tile[2048];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd2, [o];
  ld.param.u32 %r1, [x];
  ld.param.u32 %r2, [y];
  mov.u32 %r3, %tid.x;
  setp.eq.u32 %p1, %r3, 0;
  mov.u32 %r4, bar;
  mov.u32 %r5, tile;
  mov.u64 %rd4, tmap;
  cvta.param.u64 %rd1, %rd4;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
  bar.sync 0;
  @%p1 mbarrier.arrive.expect_tx.shared.b64 _, [%r4], 2048;
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
    [%r5], [%rd1, {%r1, %r2}], [%r4];
  mov.u32 %r6, 0;
W:
  mbarrier.try_wait.parity.shared.b64 %p2, [%r4], %r6;
  @!%p2 bra W;
  shl.b32 %r7, %r3, 4;
  add.u32 %r8, %r5, %r7;
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r8];
  cvt.u64.u32 %rd3, %r7;
  add.u64 %rd3, %rd2, %rd3;
  st.global.v4.u32 [%rd3], {%r10, %r11, %r12, %r13};
  ret;
}
"""


@pytest.mark.parametrize("sw", [0, 1, 2, 3])
def test_tma_tile_load_with_out_of_bounds_fill_and_swizzle(sw: int) -> None:
    rows, cols = 20, 100  # uint32 elements; a 16 x 32 box at (x=80, y=10) sticks out
    g = (np.arange(rows * cols, dtype=np.uint32) + 1).reshape(rows, cols)
    tm = TensorMap(g, 2, (cols, rows), (cols * 4,), (32, 16), swizzle=sw)  # UINT32 = 2
    o = np.zeros(2048 // 4, dtype=np.uint32)
    launch(TMA, "k", 1, 128, [tm, o, 80, 10])
    box = np.zeros((16, 32), dtype=np.uint32)
    part = g[10:26, 80:112]
    box[: part.shape[0], : part.shape[1]] = part
    flat = box.ravel().view(np.uint8)
    want = np.zeros(2048, dtype=np.uint8)
    offs = np.arange(0, 2048, 4)
    dst = swizzle(offs, sw)
    for k in range(4):
        want[dst + k] = flat[offs + k]
    assert (o.view(np.uint8) == want).all()


def test_cluster_special_registers_describe_a_cluster_of_one() -> None:
    src = r"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 o)
{
  .reg .b32 %r<10>; .reg .b64 %rd<4>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [o];
  mov.u32 %r1, %cluster_ctarank;
  mov.u32 %r2, %cluster_nctarank;
  mov.u32 %r3, %clusterid.x;
  mov.u32 %r4, %nclusterid.x;
  mov.u32 %r5, %cluster_nctaid.x;
  mov.u32 %r6, %ctaid.x;
  mul.wide.u32 %rd2, %r6, 16;
  add.u64 %rd2, %rd1, %rd2;
  st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};
  ret;
}
"""
    o = np.zeros(4 * 3, dtype=np.uint32)
    launch(src, "k", 3, 32, [o])
    assert o.reshape(3, 4).tolist() == [[0, 1, c, 3] for c in range(3)]


def test_test_wait_does_not_block_and_sees_the_phase_complete() -> None:
    # one thread: test_wait before the arrival is false, after it true (token form), and
    # the parity form agrees; pending_count is a plain read
    src = r"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 o)
{
  .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<4>;
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [o];
  mov.u32 %r1, bar;
  mbarrier.init.shared.b64 [%r1], 2;
  mbarrier.arrive.shared.b64 %rd2, [%r1];
  mbarrier.test_wait.shared.b64 %p1, [%r1], %rd2;
  selp.u32 %r2, 1, 0, %p1;
  mbarrier.arrive.shared.b64 %rd3, [%r1];
  mbarrier.test_wait.shared.b64 %p2, [%r1], %rd2;
  selp.u32 %r3, 1, 0, %p2;
  mbarrier.test_wait.parity.shared.b64 %p3, [%r1], 0;
  selp.u32 %r4, 1, 0, %p3;
  st.global.v4.u32 [%rd1], {%r2, %r3, %r4, %r4};
  ret;
}
"""
    o = np.zeros(4, dtype=np.uint32)
    launch(src, "k", 1, 1, [o])
    assert o.tolist() == [0, 1, 1, 1]


def test_param_blob_pointer_fields_get_array_addresses() -> None:
    from ptxopt.sim import ParamBlob

    src = r"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .align 8 .b8 p[24])
{
  .reg .b32 %r<4>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p+8];
  ld.param.u64 %rd2, [p+16];
  ld.param.u32 %r1, [p];
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd3, %r2, 4;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.u32 %r3, [%rd4];
  add.u32 %r3, %r3, %r1;
  add.u64 %rd5, %rd2, %rd3;
  st.global.u32 [%rd5], %r3;
  ret;
}
"""
    x = np.arange(32, dtype=np.uint32)
    y = np.zeros(32, dtype=np.uint32)
    blob = (7).to_bytes(8, "little") + bytes(16)
    launch(src, "k", 1, 32, [ParamBlob(blob, {8: x, 16: y})])
    assert (y == x + 7).all()


def test_setmaxnreg_is_checked() -> None:
    def k(body: str) -> str:
        return (
            ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
            ".reg .b32 %r<4>; .reg .pred %p<2>;\n" + body + "\nret;\n}\n"
        )

    launch(k("setmaxnreg.inc.sync.aligned.u32 240;"), "k", 1, 128, [])
    with pytest.raises(SimError, match="multiple of 8"):
        launch(k("setmaxnreg.dec.sync.aligned.u32 20;"), "k", 1, 32, [])
    diverged = (
        "mov.u32 %r1, %laneid;\nsetp.lt.u32 %p1, %r1, 4;\n@%p1 setmaxnreg.dec.sync.aligned.u32 40;"
    )
    with pytest.raises(SimError, match="whole warp"):
        launch(k(diverged), "k", 1, 32, [])
