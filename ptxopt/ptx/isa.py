"""The instructions of the PTX ISA 9.0 (the version ptxas 13.0 accepts), one row per
instruction page, with a sample of each that ptxas assembles.

This list drives the ISA coverage table (``ptxopt isa``, ``docs/isa-coverage.md``,
``scripts/isa_coverage.py``): every sample is parsed and validated against the opcode
table (:mod:`ptxopt.ptx.opcodes`), lifted, lowered and printed, and decoded by the
interpreter; the first PTX version and target of each are measured with ptxas.  A
row's ``plan`` says what the interpreter should do with it: ``run`` it, leave it
``planned`` (the asynchronous-copy and tensor-core family, refused with an error
naming the instruction and its line until it is implemented) or ``refused``
(texture and surface instructions, which need graphics state the interpreter does
not model).

Samples use registers of the kernel the coverage check wraps them in: ``%p`` (pred),
``%c`` (b8), ``%h`` (b16), ``%r`` (b32), ``%f`` (f32), ``%rd`` (b64), ``%fd`` (f64),
``%q`` (b128), each numbered 0-31; the module variables ``gbuf`` (.global),
``sbuf`` (.shared), ``cbuf`` (.const), ``tex0``/``smp0``/``surf0``, the device
function ``callee`` and the kernel's ``.param`` ``tmap`` (a tensor map) exist when a
sample names them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["IsaInstr", "ISA", "kernel_for", "PLANS"]

PLANS = ("run", "planned", "refused")


@dataclass(frozen=True, slots=True)
class IsaInstr:
    name: str  # the instruction page: "add", "add.cc", "cvt.pack", "mbarrier.init"
    family: str  # the ISA section it belongs to
    plan: str  # "run", "planned" or "refused"
    samples: tuple[str, ...]  # PTX statements; the first one sets version/target


def _rows() -> list[IsaInstr]:
    out: list[IsaInstr] = []

    def add(family: str, plan: str, name: str, *samples: str) -> None:
        out.append(IsaInstr(name, family, plan, samples))

    # -- integer arithmetic (9.7.1) --------------------------------------------------
    f = "integer"
    add(
        f,
        "run",
        "add",
        "add.s32 %r1, %r2, %r3;",
        "add.sat.s32 %r1, %r2, 7;",
        "add.u16x2 %r1, %r2, %r3;",
        "add.rn.f32 %f1, %f2, %f3;",
        "add.rn.bf16 %h1, %h2, %h3;",
        "add.rn.f16x2 %r1, %r2, %r3;",
    )
    add(f, "run", "sub", "sub.u64 %rd1, %rd2, %rd3;", "sub.rz.f64 %fd1, %fd2, %fd3;")
    add(
        f,
        "run",
        "mul",
        "mul.lo.s32 %r1, %r2, %r3;",
        "mul.wide.u32 %rd1, %r2, %r3;",
        "mul.hi.u64 %rd1, %rd2, %rd3;",
        "mul.rm.ftz.f32 %f1, %f2, %f3;",
    )
    add(
        f,
        "run",
        "mad",
        "mad.lo.s32 %r1, %r2, %r3, %r4;",
        "mad.hi.sat.s32 %r1, %r2, %r3, %r4;",
        "mad.rn.f64 %fd1, %fd2, %fd3, %fd4;",
    )
    add(f, "run", "mul24", "mul24.hi.u32 %r1, %r2, %r3;")
    add(f, "run", "mad24", "mad24.lo.s32 %r1, %r2, %r3, %r4;")
    add(f, "run", "sad", "sad.u32 %r1, %r2, %r3, %r4;")
    add(
        f,
        "run",
        "div",
        "div.s32 %r1, %r2, %r3;",
        "div.rn.f32 %f1, %f2, %f3;",
        "div.approx.f32 %f1, %f2, %f3;",
        "div.full.f32 %f1, %f2, %f3;",
    )
    add(f, "run", "rem", "rem.u64 %rd1, %rd2, %rd3;")
    add(f, "run", "abs", "abs.s32 %r1, %r2;", "abs.ftz.f32 %f1, %f2;", "abs.bf16x2 %r1, %r2;")
    add(f, "run", "neg", "neg.s64 %rd1, %rd2;", "neg.f64 %fd1, %fd2;", "neg.f16 %h1, %h2;")
    add(
        f,
        "run",
        "min",
        "min.s32 %r1, %r2, %r3;",
        "min.relu.s16x2 %r1, %r2, %r3;",
        "min.NaN.f32 %f1, %f2, %f3;",
        "min.xorsign.abs.bf16 %h1, %h2, %h3;",
    )
    add(f, "run", "max", "max.u64 %rd1, %rd2, %rd3;", "max.ftz.f16x2 %r1, %r2, %r3;")
    add(f, "run", "popc", "popc.b64 %r1, %rd2;")
    add(f, "run", "clz", "clz.b32 %r1, %r2;")
    add(f, "run", "bfind", "bfind.shiftamt.s32 %r1, %r2;")
    add(f, "run", "fns", "fns.b32 %r1, %r2, %r3, %r4;")
    add(f, "run", "brev", "brev.b64 %rd1, %rd2;")
    add(f, "run", "bfe", "bfe.s32 %r1, %r2, %r3, %r4;")
    add(f, "run", "bfi", "bfi.b64 %rd1, %rd2, %rd3, %r4, %r5;")
    add(f, "run", "szext", "szext.clamp.s32 %r1, %r2, %r3;")
    add(f, "run", "bmsk", "bmsk.wrap.b32 %r1, %r2, %r3;")
    add(f, "run", "dp4a", "dp4a.s32.u32 %r1, %r2, %r3, %r4;")
    add(f, "run", "dp2a", "dp2a.hi.u32.s32 %r1, %r2, %r3, %r4;")
    # -- extended precision (9.7.2) --------------------------------------------------
    f = "extended-precision"
    add(f, "run", "add.cc", "add.cc.u32 %r1, %r2, %r3;")
    add(f, "run", "addc", "addc.cc.u32 %r1, %r2, %r3;")
    add(f, "run", "sub.cc", "sub.cc.u64 %rd1, %rd2, %rd3;")
    add(f, "run", "subc", "subc.u32 %r1, %r2, %r3;")
    add(f, "run", "mad.cc", "mad.lo.cc.u32 %r1, %r2, %r3, %r4;")
    add(f, "run", "madc", "madc.hi.cc.u32 %r1, %r2, %r3, %r4;")
    # -- floating point (9.7.3, 9.7.4, 9.7.5) ---------------------------------------
    f = "floating-point"
    add(f, "run", "testp", "testp.subnormal.f32 %p1, %f2;")
    add(f, "run", "copysign", "copysign.f64 %fd1, %fd2, %fd3;")
    add(
        f,
        "run",
        "fma",
        "fma.rn.f32 %f1, %f2, %f3, %f4;",
        "fma.rn.relu.bf16x2 %r1, %r2, %r3, %r4;",
        "fma.rp.f64 %fd1, %fd2, %fd3, %fd4;",
    )
    add(f, "run", "rcp", "rcp.rn.f32 %f1, %f2;", "rcp.approx.ftz.f32 %f1, %f2;")
    add(f, "run", "rcp.approx.ftz.f64", "rcp.approx.ftz.f64 %fd1, %fd2;")
    add(f, "run", "sqrt", "sqrt.rn.f64 %fd1, %fd2;", "sqrt.approx.f32 %f1, %f2;")
    add(f, "run", "rsqrt", "rsqrt.approx.f32 %f1, %f2;")
    add(f, "run", "rsqrt.approx.ftz.f64", "rsqrt.approx.ftz.f64 %fd1, %fd2;")
    add(f, "run", "sin", "sin.approx.f32 %f1, %f2;")
    add(f, "run", "cos", "cos.approx.ftz.f32 %f1, %f2;")
    add(f, "run", "lg2", "lg2.approx.f32 %f1, %f2;")
    add(f, "run", "ex2", "ex2.approx.f32 %f1, %f2;", "ex2.approx.f16x2 %r1, %r2;")
    add(f, "run", "tanh", "tanh.approx.f32 %f1, %f2;")
    # -- comparison and selection (9.7.6, 9.7.7) -------------------------------------
    f = "comparison"
    add(f, "run", "set", "set.lt.u32.s32 %r1, %r2, %r3;", "set.gtu.f16x2.f16x2 %r1, %r2, %r3;")
    add(
        f,
        "run",
        "setp",
        "setp.ge.and.f32 %p1|%p2, %f3, %f4, %p3;",
        "setp.lt.bf16x2 %p1|%p2, %r3, %r4;",
    )
    add(f, "run", "selp", "selp.b64 %rd1, %rd2, %rd3, %p1;")
    add(f, "run", "slct", "slct.s32.f32 %r1, %r2, %r3, %f4;")
    # -- logic and shift (9.7.8) ------------------------------------------------------
    f = "logic-shift"
    add(f, "run", "and", "and.b32 %r1, %r2, %r3;", "and.pred %p1, %p2, %p3;")
    add(f, "run", "or", "or.b64 %rd1, %rd2, %rd3;")
    add(f, "run", "xor", "xor.b16 %h1, %h2, %h3;")
    add(f, "run", "not", "not.b32 %r1, %r2;")
    add(f, "run", "cnot", "cnot.b32 %r1, %r2;")
    add(
        f,
        "run",
        "lop3",
        "lop3.b32 %r1, %r2, %r3, %r4, 0x96;",
        "lop3.or.b32 %r1|%p1, %r2, %r3, %r4, 0x80, %p2;",
    )
    add(f, "run", "shf", "shf.l.wrap.b32 %r1, %r2, %r3, %r4;")
    add(f, "run", "shl", "shl.b64 %rd1, %rd2, %r3;")
    add(f, "run", "shr", "shr.s32 %r1, %r2, %r3;")
    # -- data movement and conversion (9.7.9) -----------------------------------------
    f = "data-movement"
    add(
        f,
        "run",
        "mov",
        "mov.u32 %r1, %r2;",
        "mov.u64 %rd1, gbuf;",
        "mov.b64 {%r1, %r2}, %rd3;",
        "mov.b128 %q1, {%rd1, %rd2};",
    )
    add(f, "run", "shfl.sync", "shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 0x1f, 0xffffffff;")
    add(f, "run", "prmt", "prmt.b32.ecl %r1, %r2, %r3, %r4;")
    add(
        f,
        "run",
        "ld",
        "ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];",
        "ld.shared.u32 %r1, [sbuf+4];",
        "ld.global.b128 %q1, [%rd1];",
    )
    add(f, "run", "ld.global.nc", "ld.global.nc.f32 %f1, [%rd1];")
    add(f, "run", "ldu", "ldu.global.u32 %r1, [%rd1];")
    add(f, "run", "st", "st.global.u32 [%rd1], %r2;", "st.shared.v2.f64 [sbuf], {%fd1, %fd2};")
    add(
        f,
        "planned",
        "st.async",
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%r1], %r2, [%r3];",
    )
    add(f, "run", "st.bulk", "st.bulk.weak.shared::cta [%r1], 64, 0;")
    add(
        f,
        "planned",
        "multimem.ld_reduce",
        "multimem.ld_reduce.relaxed.gpu.global.add.u32 %r1, [%rd1];",
        "multimem.st.relaxed.gpu.global.u32 [%rd1], %r2;",
        "multimem.red.relaxed.gpu.global.add.u32 [%rd1], %r2;",
    )
    add(f, "run", "prefetch", "prefetch.global.L2 [%rd1];")
    add(f, "run", "prefetchu", "prefetchu.L1 [%rd1];")
    add(f, "run", "applypriority", "applypriority.global.L2::evict_normal [%rd1], 128;")
    add(f, "run", "discard", "discard.global.L2 [%rd1], 128;")
    add(f, "run", "createpolicy", "createpolicy.fractional.L2::evict_last.b64 %rd1, 1.0;")
    add(f, "run", "isspacep", "isspacep.shared %p1, %rd2;")
    add(f, "run", "cvta", "cvta.to.global.u64 %rd1, %rd2;", "cvta.shared.u64 %rd1, sbuf;")
    add(
        f,
        "run",
        "cvt",
        "cvt.rzi.s32.f32 %r1, %f2;",
        "cvt.rn.f16x2.f32 %r1, %f2, %f3;",
        "cvt.rn.satfinite.e4m3x2.f32 %h1, %f2, %f3;",
        "cvt.rn.f16x2.e5m2x2 %r1, %h2;",
        "cvt.rna.tf32.f32 %r1, %f2;",
        "cvt.s64.s16 %rd1, %h2;",
    )
    add(f, "run", "cvt.pack", "cvt.pack.sat.u8.s32.b32 %r1, %r2, %r3, %r4;")
    add(f, "run", "mapa", "mapa.shared::cluster.u32 %r1, %r2, %r3;")
    add(f, "run", "getctarank", "getctarank.shared::cluster.u32 %r1, %r2;")
    # -- asynchronous data movement (9.7.9.25) ------------------------------------------
    f = "async-copy"
    add(f, "run", "cp.async", "cp.async.ca.shared.global [%r1], [%rd1], 16;")
    add(f, "run", "cp.async.commit_group", "cp.async.commit_group;")
    add(f, "run", "cp.async.wait_group", "cp.async.wait_group 0;", "cp.async.wait_all;")
    add(f, "run", "cp.async.mbarrier.arrive", "cp.async.mbarrier.arrive.b64 [%r1];")
    add(
        f,
        "run",
        "cp.async.bulk",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 64, "
        "[%r2];",
    )
    add(
        f,
        "planned",
        "cp.reduce.async.bulk",
        "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r1], 64;",
    )
    add(f, "run", "cp.async.bulk.prefetch", "cp.async.bulk.prefetch.L2.global [%rd1], 64;")
    add(
        f,
        "run",
        "cp.async.bulk.tensor",
        "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], "
        "[%rd1, {%r2}], [%r3];",
    )
    add(
        f,
        "planned",
        "cp.reduce.async.bulk.tensor",
        "cp.reduce.async.bulk.tensor.1d.global.shared::cta.add.tile.bulk_group [%rd1, {%r2}], "
        "[%r1];",
    )
    add(
        f,
        "run",
        "cp.async.bulk.prefetch.tensor",
        "cp.async.bulk.prefetch.tensor.1d.L2.global [%rd1, {%r2}];",
    )
    add(f, "run", "cp.async.bulk.commit_group", "cp.async.bulk.commit_group;")
    add(f, "run", "cp.async.bulk.wait_group", "cp.async.bulk.wait_group.read 0;")
    add(
        f,
        "run",
        "tensormap.replace",
        "tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd2;",
    )
    add(
        f,
        "run",
        "tensormap.cp_fenceproxy",
        "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
        "[%rd1], [%r1], 128;",
    )
    # -- texture and surface (9.7.10, 9.7.11) -------------------------------------------
    f = "texture-surface"
    add(f, "refused", "tex", "tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tex0, {%r1}];")
    add(f, "refused", "tld4", "tld4.r.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex0, {%f5, %f6}];")
    add(f, "refused", "txq", "txq.width.b32 %r1, [tex0];")
    add(f, "refused", "istypep", "istypep.texref %p1, %rd1;")
    add(f, "refused", "suld", "suld.b.1d.b32.trap {%r1}, [surf0, {%r2}];")
    add(f, "refused", "sust", "sust.b.1d.b32.trap [surf0, {%r2}], {%r1};")
    add(f, "refused", "sured", "sured.b.add.1d.trap.u32 [surf0, {%r2}], %r1;")
    add(f, "refused", "suq", "suq.width.b32 %r1, [surf0];")
    # -- control flow (9.7.12) ----------------------------------------------------------
    f = "control-flow"
    add(f, "run", "bra", "@%p1 bra L1;\nL1:")
    add(f, "run", "brx.idx", "ts: .branchtargets L1, L2;\nbrx.idx %r1, ts;\nL1:\nL2:")
    add(
        f,
        "run",
        "call",
        "{\n.param .b32 pa;\n.param .b32 pr;\nst.param.b32 [pa], %r1;\n"
        "call (pr), callee, (pa);\nld.param.b32 %r2, [pr];\n}",
    )
    add(f, "run", "ret", "ret;")
    add(f, "run", "exit", "exit;")
    # -- parallel synchronization and communication (9.7.13) -----------------------------
    f = "synchronization"
    add(f, "run", "bar", "bar.sync 0;", "bar.red.popc.u32 %r1, 1, %p1;", "barrier.sync.aligned 0;")
    add(f, "run", "bar.warp.sync", "bar.warp.sync 0xffffffff;")
    add(f, "run", "barrier.cluster", "barrier.cluster.arrive.release;\nbarrier.cluster.wait;")
    add(f, "run", "membar", "membar.gl;", "fence.acq_rel.gpu;")
    add(
        f,
        "run",
        "atom",
        "atom.global.add.u32 %r1, [%rd1], %r2;",
        "atom.shared.cas.b64 %rd1, [%r2], %rd3, %rd4;",
    )
    add(f, "run", "red", "red.global.add.f32 [%rd1], %f2;")
    add(
        f,
        "planned",
        "red.async",
        "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r1], "
        "%r2, [%r3];",
    )
    add(f, "run", "vote.sync", "vote.sync.ballot.b32 %r1, %p1, 0xffffffff;")
    add(f, "run", "match.sync", "match.all.sync.b32 %r1|%p1, %r2, 0xffffffff;")
    add(f, "run", "activemask", "activemask.b32 %r1;")
    add(f, "run", "redux.sync", "redux.sync.min.s32 %r1, %r2, 0xffffffff;")
    add(f, "run", "griddepcontrol", "griddepcontrol.wait;")
    add(f, "run", "elect.sync", "elect.sync %r1|%p1, 0xffffffff;")
    add(f, "run", "mbarrier.init", "mbarrier.init.shared::cta.b64 [%r1], 32;")
    add(f, "run", "mbarrier.inval", "mbarrier.inval.shared::cta.b64 [%r1];")
    add(
        f,
        "run",
        "mbarrier.expect_tx",
        "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r1], 64;",
    )
    add(
        f,
        "run",
        "mbarrier.complete_tx",
        "mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r1], 64;",
    )
    add(f, "run", "mbarrier.arrive", "mbarrier.arrive.shared::cta.b64 %rd1, [%r1];")
    add(f, "run", "mbarrier.arrive_drop", "mbarrier.arrive_drop.shared::cta.b64 %rd1, [%r1];")
    add(
        f,
        "run",
        "mbarrier.test_wait",
        "mbarrier.test_wait.shared::cta.b64 %p1, [%r1], %rd2;",
        "mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;",
    )
    add(f, "run", "mbarrier.pending_count", "mbarrier.pending_count.b64 %r1, %rd2;")
    add(
        f,
        "planned",
        "clusterlaunchcontrol.try_cancel",
        "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 "
        "[%r1], [%r2];",
    )
    add(
        f,
        "planned",
        "clusterlaunchcontrol.query_cancel",
        "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 %p1, %q1;",
    )
    # -- warp-level matrix (9.7.14) ------------------------------------------------------
    f = "warp-matrix"
    add(
        f,
        "planned",
        "wmma.load",
        "wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, "
        "%r8}, [%rd1];",
    )
    add(
        f,
        "planned",
        "wmma.store",
        "wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd1], {%f1, %f2, %f3, %f4, %f5, "
        "%f6, %f7, %f8};",
    )
    add(
        f,
        "planned",
        "wmma.mma",
        "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, "
        "%f8}, {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, {%r9, %r10, %r11, %r12, %r13, %r14, "
        "%r15, %r16}, {%f9, %f10, %f11, %f12, %f13, %f14, %f15, %f0};",
    )
    add(
        f,
        "run",
        "mma",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, "
        "%r4}, {%r5, %r6}, {%f5, %f6, %f7, %f8};",
    )
    add(
        f,
        "planned",
        "mma.sp",
        "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, "
        "%r3, %r4}, {%r5, %r6, %r7, %r8}, {%f5, %f6, %f7, %f8}, %r9, 0x0;",
    )
    add(
        f,
        "run",
        "ldmatrix",
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];",
    )
    add(f, "run", "stmatrix", "stmatrix.sync.aligned.m8n8.x2.shared.b16 [%r5], {%r1, %r2};")
    add(f, "planned", "movmatrix", "movmatrix.sync.aligned.m8n8.trans.b16 %r1, %r2;")
    # -- warpgroup matrix (9.7.15) -------------------------------------------------------
    f = "warpgroup-matrix"
    add(
        f,
        "run",
        "wgmma.mma_async",
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, "
        "%p1, 1, 1, 0, 0;",
    )
    add(
        f,
        "planned",
        "wgmma.mma_async.sp",
        "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, "
        "%r1, 0, %p1, 1, 1, 0, 0;",
    )
    add(f, "run", "wgmma.fence", "wgmma.fence.sync.aligned;")
    add(f, "run", "wgmma.commit_group", "wgmma.commit_group.sync.aligned;")
    add(f, "run", "wgmma.wait_group", "wgmma.wait_group.sync.aligned 0;")
    # -- TensorCore 5th generation (9.7.16) ------------------------------------------------
    f = "tcgen05"
    add(
        f,
        "planned",
        "tcgen05.alloc",
        "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;",
        "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 32;",
        "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;",
    )
    add(f, "planned", "tcgen05.ld", "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r1}, [%r2];")
    add(f, "planned", "tcgen05.st", "tcgen05.st.sync.aligned.32x32b.x1.b32 [%r2], {%r1};")
    add(f, "planned", "tcgen05.wait", "tcgen05.wait::ld.sync.aligned;")
    add(f, "planned", "tcgen05.cp", "tcgen05.cp.cta_group::1.128x256b [%r1], %rd1;")
    add(f, "planned", "tcgen05.shift", "tcgen05.shift.cta_group::1.down [%r1];")
    add(
        f,
        "planned",
        "tcgen05.mma",
        "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r2, %p1;",
    )
    add(
        f,
        "planned",
        "tcgen05.mma.sp",
        "tcgen05.mma.sp.cta_group::1.kind::f16 [%r1], %rd1, %rd2, [%r3], %r2, %p1;",
    )
    add(
        f,
        "planned",
        "tcgen05.mma.ws",
        "tcgen05.mma.ws.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r2, %p1;",
    )
    add(
        f,
        "planned",
        "tcgen05.mma.ws.sp",
        "tcgen05.mma.ws.sp.cta_group::1.kind::f16 [%r1], %rd1, %rd2, [%r3], %r2, %p1;",
    )
    add(
        f,
        "planned",
        "tcgen05.commit",
        "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r1];",
    )
    add(f, "planned", "tcgen05.fence", "tcgen05.fence::before_thread_sync;")
    # -- stack manipulation (9.7.17) -------------------------------------------------------
    f = "stack"
    add(f, "run", "stacksave", "stacksave.u64 %rd1;")
    add(f, "run", "stackrestore", "stackrestore.u64 %rd1;")
    add(f, "run", "alloca", "alloca.u64 %rd1, %rd2, 16;")
    # -- video (9.7.18) ------------------------------------------------------------------
    f = "video"
    for op in ("vadd", "vsub", "vabsdiff", "vmin", "vmax"):
        add(
            f,
            "run",
            op,
            f"{op}.s32.u32.s32.sat %r1, %r2.b0, %r3.h1;",
            f"{op}.u32.u32.u32.add %r1, %r2, %r3, %r4;",
            f"{op}.s32.s32.s32 %r1.h0, %r2, %r3, %r4;",
        )
    add(f, "run", "vshl", "vshl.u32.u32.u32.clamp %r1, %r2, %r3;")
    add(f, "run", "vshr", "vshr.s32.s32.u32.wrap.sat.max %r1, %r2.h1, %r3, %r4;")
    add(f, "run", "vmad", "vmad.s32.s32.s32.sat %r1, -%r2, %r3.b1, %r4;")
    add(f, "run", "vset", "vset.s32.u32.lt.add %r1, %r2, %r3.b2, %r4;")
    for op in ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"):
        add(f, "run", f"{op}2", f"{op}2.s32.s32.s32.sat %r1.h0, %r2.h01, %r3, %r4;")
    add(f, "run", "vset2", "vset2.u32.u32.ne.add %r1, %r2, %r3, %r4;")
    for op in ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"):
        add(f, "run", f"{op}4", f"{op}4.u32.u32.u32 %r1.b20, %r2.b7654, %r3, %r4;")
    add(f, "run", "vset4", "vset4.s32.s32.gt %r1, %r2, %r3.b0123, %r4;")
    # -- miscellaneous (9.7.19) ----------------------------------------------------------
    f = "miscellaneous"
    add(f, "run", "brkpt", "brkpt;")
    add(f, "run", "nanosleep", "nanosleep.u32 100;")
    add(f, "run", "pmevent", "pmevent 1;")
    add(f, "run", "trap", "trap;")
    add(f, "run", "setmaxnreg", "setmaxnreg.inc.sync.aligned.u32 64;")
    return out


ISA: tuple[IsaInstr, ...] = tuple(_rows())

_REG = re.compile(r"%(rd|fd|r|f|h|p|q|c)(\d+)\b")
_REG_TYPES = {
    "p": ".pred",
    "c": ".b8",
    "h": ".b16",
    "r": ".b32",
    "f": ".f32",
    "rd": ".b64",
    "fd": ".f64",
    "q": ".b128",
}
_MODULE_VARS = {
    "gbuf": ".global .align 16 .b8 gbuf[1024];",
    "sbuf": ".shared .align 16 .b8 sbuf[1024];",
    "cbuf": ".const .align 4 .b32 cbuf[4];",
    "tex0": ".global .texref tex0;",
    "smp0": ".global .samplerref smp0;",
    "surf0": ".global .surfref surf0;",
    "callee": (
        ".func (.param .b32 fr) callee(.param .b32 fa)\n{\n\t.reg .b32 %t;\n"
        "\tld.param.b32 %t, [fa];\n\tst.param.b32 [fr], %t;\n\tret;\n}"
    ),
}


def kernel_for(sample: str, version: str = "9.0", target: str = "sm_100a") -> str:
    """A module with one kernel that declares what ``sample`` uses and contains it."""
    used = sorted({(m.group(1)) for m in _REG.finditer(sample)})
    decls = [f".reg {_REG_TYPES[k]} %{k}<32>;" for k in used]
    mods = [text for name, text in _MODULE_VARS.items() if re.search(rf"\b{name}\b", sample)]
    params = ".param .u64 p"
    if re.search(r"\btmap\b", sample):
        params += ", .param .align 64 .b8 tmap[128]"
    body = "\n\t".join(decls + sample.splitlines())
    head = f".version {version}\n.target {target}\n.address_size 64\n"
    return (
        head
        + "".join(m + "\n" for m in mods)
        + f".visible .entry k({params})\n{{\n\t{body}\n\tret;\n}}\n"
    )
