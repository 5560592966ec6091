"""The opcode table: operand roles, arity, flags and divergence seeds per family."""

from __future__ import annotations

import pytest

from ptxopt.ptx import opcodes
from ptxopt.ptx.ast import (
    Addr,
    Imm,
    Instr,
    Not,
    Operand,
    Pair,
    ParenList,
    PtxError,
    Reg,
    Sink,
    Span,
    Sym,
    Vec,
)
from ptxopt.ptx.opcodes import def_regs, is_special_register, lookup, use_regs
from ptxopt.ptx.types import bit_width, instr_type, is_float, is_int, is_signed, reg_class

SPAN = Span("k.ptx", 7, 3)


def R(*names: str) -> list[Reg]:
    return [Reg(n) for n in names]


def V(*names: str) -> Vec:
    return Vec(tuple(Sink() if n == "_" else Reg(n) for n in names))


def mk(full: str, *ops: Operand, pred: str | None = None) -> Instr:
    head, *rest = full.split(".")
    return Instr(
        head,
        tuple("." + m for m in rest),
        list(ops),
        pred=Reg(pred) if pred else None,
        span=SPAN,
    )


def names(regs: list[Reg]) -> list[str]:
    return [r.name for r in regs]


def roles(i: Instr) -> tuple[list[str], list[str]]:
    return names(def_regs(i)), names(use_regs(i))


# -- operand roles -------------------------------------------------------------------


def test_alu_roles_and_guard_predicate_is_a_use() -> None:
    i = mk("add.s32", Reg("%r1"), Reg("%r2"), Imm(4, "4"), pred="%p1")
    assert roles(i) == (["%r1"], ["%p1", "%r2"])
    info = lookup(i)
    assert info.name == "add" and info.defs == (0,) and info.uses == (1, 2)
    assert info.type == ".s32" and info.pure and info.commutative
    assert info.mem is None and info.space is None


def test_store_address_at_index_zero_is_a_use() -> None:
    i = mk("st.global.v2.f32", Addr(Reg("%rd1"), 8), V("%f1", "_"))
    info = lookup(i)
    assert info.defs == () and info.uses == (0, 1) and info.addrs == (0,)
    assert roles(i) == ([], ["%rd1", "%f1"])
    assert info.mem == "write" and info.space == ".global" and info.side_effects
    assert not info.pure


def test_load_vector_and_cache_policy() -> None:
    i = mk(
        "ld.global.L2::cache_hint.v4.f32",
        V("%f1", "%f2", "_", "%f4"),
        Addr(Reg("%rd1")),
        Reg("%rd9"),
    )
    assert roles(i) == (["%f1", "%f2", "%f4"], ["%rd1", "%rd9"])
    info = lookup(i)
    assert info.mem == "read" and info.divergence == "address" and info.addrs == (1,)
    assert not info.side_effects and not info.pure
    assert lookup(mk("ld.global.nc.f32", Reg("%f1"), Addr(Reg("%rd1")))).invariant_mem
    assert lookup(mk("ld.volatile.global.f32", Reg("%f1"), Addr(Reg("%rd1")))).side_effects
    acq = lookup(mk("ld.acquire.gpu.global.u32", Reg("%r1"), Addr(Reg("%rd1"))))
    assert acq.side_effects and acq.barrier
    generic = lookup(mk("ld.u32", Reg("%r1"), Addr(Reg("%rd1"))))
    assert generic.space == ""


def test_setp_pair_and_boolean_combiner() -> None:
    i = mk("setp.lt.s32", Pair(Reg("%p1"), Reg("%p2")), Reg("%r1"), Reg("%r2"))
    assert roles(i) == (["%p1", "%p2"], ["%r1", "%r2"])
    j = mk("setp.ge.and.f32", Reg("%p1"), Reg("%f1"), Reg("%f2"), Not(Reg("%p3")))
    assert roles(j) == (["%p1"], ["%f1", "%f2", "%p3"])
    with pytest.raises(PtxError, match=r"'setp.ge.and.f32' expects 4 operands, got 3"):
        lookup(mk("setp.ge.and.f32", Reg("%p1"), Reg("%f1"), Reg("%f2")))
    assert not lookup(i).commutative
    assert lookup(mk("setp.eq.s32", Reg("%p1"), Reg("%r1"), Reg("%r2"))).commutative
    assert lookup(
        mk("set.ne.or.u32.s32", Reg("%r0"), Reg("%r1"), Reg("%r2"), Reg("%p1"))
    ).commutative


def test_shfl_sync_with_predicate_destination() -> None:
    i = mk(
        "shfl.sync.idx.b32",
        Pair(Reg("%r13"), Reg("%p1")),
        Reg("%r10"),
        Reg("%r11"),
        Imm(31, "31"),
        Imm(-1, "-1"),
    )
    assert roles(i) == (["%r13", "%p1"], ["%r10", "%r11"])
    info = lookup(i)
    assert info.divergence == "varying" and info.convergent and not info.pure
    # the legacy form has no membermask
    assert lookup(mk("shfl.down.b32", Reg("%r1"), Reg("%r2"), Reg("%r3"), Reg("%r4"))).arity == (4,)


def test_atom_cas_exch_and_vector_forms() -> None:
    cas = mk("atom.global.cas.b32", Reg("%r3"), Addr(Reg("%rd1")), Reg("%r1"), Reg("%r2"))
    assert roles(cas) == (["%r3"], ["%rd1", "%r1", "%r2"])
    info = lookup(cas)
    assert info.mem == "rw" and info.side_effects and info.divergence == "varying"
    exch = mk("atom.exch.b64", Reg("%rd3"), Addr(Reg("%rd1")), Reg("%rd2"))
    assert roles(exch) == (["%rd3"], ["%rd1", "%rd2"])
    with pytest.raises(PtxError, match="expects 3 or 4 operands, got 5"):
        lookup(
            mk("atom.add.u32", Reg("%r1"), Addr(Reg("%rd1")), Reg("%r2"), Reg("%r3"), Reg("%r4"))
        )
    v = mk("atom.global.v2.f16x2.add.noftz", V("%r1", "%r2"), Addr(Reg("%rd1")), V("%r3", "%r4"))
    assert roles(v) == (["%r1", "%r2"], ["%rd1", "%r3", "%r4"])
    red = mk("red.global.add.f32", Addr(Reg("%rd1"), 4), Reg("%f1"))
    assert roles(red) == ([], ["%rd1", "%f1"])
    assert lookup(red).mem == "rw" and lookup(red).side_effects


def test_wgmma_accumulator_is_read_and_written() -> None:
    acc = V("%f1", "%f2", "%f3", "%f4")
    i = mk(
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16",
        acc,
        Reg("%rd1"),
        Reg("%rd2"),
        Reg("%p1"),
        Imm(1, "1"),
        Imm(1, "1"),
        Imm(0, "0"),
        Imm(0, "0"),
    )
    info = lookup(i)
    assert info.name == "wgmma.mma_async"
    assert info.rmw == (0,) and 0 in info.defs and 0 in info.uses
    d, u = roles(i)
    assert d == ["%f1", "%f2", "%f3", "%f4"]
    assert u == ["%f1", "%f2", "%f3", "%f4", "%rd1", "%rd2", "%p1"]
    assert info.side_effects and info.barrier and info.divergence == "varying"
    for sub in ("fence", "commit_group"):
        f = lookup(mk(f"wgmma.{sub}.sync.aligned"))
        assert f.barrier and f.side_effects and f.defs == f.uses == ()
    assert lookup(mk("wgmma.wait_group.sync.aligned", Imm(0, "0"))).barrier


def test_mma_sync_writes_d_reads_c() -> None:
    i = mk(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        V("%f1", "%f2", "%f3", "%f4"),
        V("%r1", "%r2", "%r3", "%r4"),
        V("%r5", "%r6"),
        V("%f5", "%f6", "%f7", "%f8"),
    )
    info = lookup(i)
    assert info.defs == (0,) and info.uses == (1, 2, 3) and info.rmw == ()
    assert names(def_regs(i)) == ["%f1", "%f2", "%f3", "%f4"]
    assert "%f5" in names(use_regs(i)) and "%f1" not in names(use_regs(i))
    assert info.divergence == "varying"


def test_ldmatrix_stmatrix_movmatrix() -> None:
    ld = mk(
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16", V("%r1", "%r2", "%r3", "%r4"), Addr(Reg("%r9"))
    )
    assert roles(ld) == (["%r1", "%r2", "%r3", "%r4"], ["%r9"])
    assert lookup(ld).mem == "read" and lookup(ld).space == ".shared"
    st = mk("stmatrix.sync.aligned.m8n8.x2.shared.b16", Addr(Reg("%r9")), V("%r1", "%r2"))
    assert roles(st) == ([], ["%r9", "%r1", "%r2"]) and lookup(st).side_effects
    mv = mk("movmatrix.sync.aligned.m8n8.trans.b16", Reg("%r1"), Reg("%r2"))
    assert roles(mv) == (["%r1"], ["%r2"])


def test_cp_async_family() -> None:
    cp = mk(
        "cp.async.cg.shared.global", Addr(Reg("%r1")), Addr(Reg("%rd1")), Imm(16, "16"), Reg("%r2")
    )
    info = lookup(cp)
    assert info.name == "cp.async" and info.mem == "rw" and info.side_effects
    assert roles(cp) == ([], ["%r1", "%rd1", "%r2"]) and info.space == ".shared"
    assert lookup(mk("cp.async.commit_group")).barrier
    assert lookup(mk("cp.async.wait_group", Imm(0, "0"))).name == "cp.async.wait_group"
    assert lookup(mk("cp.async.wait_all")).barrier
    arrive = mk("cp.async.mbarrier.arrive.noinc.shared.b64", Addr(Reg("%r1")))
    assert lookup(arrive).name == "cp.async.mbarrier.arrive"
    tensor = mk(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        Addr(Reg("%r1")),
        Addr(Reg("%rd1"), 0, (V("%r2", "%r3"),)),
        Addr(Reg("%r4")),
    )
    assert lookup(tensor).name == "cp.async.bulk.tensor"
    assert roles(tensor) == ([], ["%r1", "%rd1", "%r2", "%r3", "%r4"])
    assert lookup(tensor).space == ".shared::cluster"
    bulk = mk(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
        Addr(Reg("%r1")),
        Addr(Reg("%rd1")),
        Reg("%r2"),
        Addr(Reg("%r3")),
    )
    assert lookup(bulk).name == "cp.async.bulk"
    red = mk(
        "cp.reduce.async.bulk.tensor.1d.global.shared::cta.add.tile.bulk_group",
        Addr(Reg("%rd1"), 0, (V("%r1"),)),
        Addr(Reg("%r2")),
    )
    assert lookup(red).name == "cp.reduce.async.bulk.tensor"
    assert lookup(mk("cp.async.bulk.commit_group")).barrier
    assert lookup(mk("cp.async.bulk.wait_group.read", Imm(0, "0"))).barrier


def test_mbarrier_family() -> None:
    tw = mk("mbarrier.try_wait.parity.shared::cta.b64", Reg("%p1"), Addr(Reg("%r1")), Reg("%r2"))
    info = lookup(tw)
    assert info.name == "mbarrier.try_wait" and info.defs == (0,)
    assert roles(tw) == (["%p1"], ["%r1", "%r2"])
    assert info.side_effects and info.barrier and info.divergence == "varying"
    arrive = mk(
        "mbarrier.arrive.expect_tx.shared::cta.b64", Sink(), Addr(Reg("%r1")), Imm(4096, "4096")
    )
    assert lookup(arrive).name == "mbarrier.arrive"
    assert roles(arrive) == ([], ["%r1"])
    init = mk("mbarrier.init.shared::cta.b64", Addr(Reg("%r1")), Imm(1, "1"))
    assert lookup(init).mem == "write" and lookup(init).side_effects
    assert lookup(mk("mbarrier.arrive_drop.shared.b64", Reg("%rd1"), Addr(Reg("%r1")))).name == (
        "mbarrier.arrive_drop"
    )
    for sub, ops in [
        ("expect_tx.relaxed.cta.shared::cta.b64", [Addr(Reg("%r1")), Imm(1, "1")]),
        ("test_wait.shared.b64", [Reg("%p1"), Addr(Reg("%r1")), Reg("%rd1")]),
        ("pending_count.b64", [Reg("%r1"), Reg("%rd1")]),
        ("inval.shared.b64", [Addr(Reg("%r1"))]),
    ]:
        assert lookup(mk("mbarrier." + sub, *ops)).name == "mbarrier." + sub.split(".")[0]


def test_elect_pair_destination() -> None:
    i = mk("elect.sync", Pair(Reg("%r1"), Reg("%p1")), Imm(-1, "-1"))
    assert roles(i) == (["%r1", "%p1"], [])
    assert lookup(i).divergence == "elect"
    j = mk("elect.sync", Pair(Sink(), Reg("%p1")), Imm(-1, "-1"))
    assert roles(j) == (["%p1"], [])


def test_call_forms() -> None:
    c = mk(
        "call.uni",
        ParenList((Sym("retval0"),)),
        Sym("f"),
        ParenList((Sym("param0"), Sym("param1"))),
    )
    info = lookup(c)
    assert info.defs == (0,) and info.uses == (1, 2) and info.side_effects and info.barrier
    assert info.divergence == "call"
    assert lookup(mk("call", Sym("f"), ParenList((Sym("p0"),)))).defs == ()
    assert lookup(mk("call", Sym("f"))).uses == (0,)
    ind = mk("call", ParenList((Reg("%r9"),)), Reg("%rd5"), ParenList((Reg("%r1"),)), Sym("proto"))
    assert roles(ind) == (["%r9"], ["%rd5", "%r1"])
    with pytest.raises(PtxError, match="'call' expects 1 to 3 operands, got 4"):
        lookup(mk("call", Sym("f"), Sym("a"), Sym("b"), Sym("c")))


def test_control_flow_terminators() -> None:
    bra = mk("bra.uni", Sym("L1"), pred="%p1")
    assert lookup(bra).terminator and roles(bra) == ([], ["%p1"])
    brx = mk("brx.idx", Reg("%r1"), Sym("tbl"))
    assert lookup(brx).terminator and roles(brx) == ([], ["%r1"])
    for op in ("ret", "exit", "trap"):
        info = lookup(mk(op))
        assert info.terminator and info.side_effects
    assert not lookup(mk("brkpt")).terminator
    assert lookup(mk("nanosleep.u32", Reg("%r1"))).side_effects


def test_barriers_and_fences() -> None:
    for full, ops in [
        ("bar.sync", [Imm(0, "0")]),
        ("bar.cta.sync", [Imm(0, "0"), Imm(128, "128")]),
        ("barrier.sync.aligned", [Imm(0, "0")]),
        ("bar.arrive", [Imm(1, "1"), Imm(64, "64")]),
        ("bar.warp.sync", [Imm(-1, "-1")]),
        ("barrier.cluster.arrive.release.aligned", []),
        ("barrier.cluster.wait", []),
        ("membar.gl", []),
        ("fence.acq_rel.gpu", []),
        ("fence.proxy.async.shared::cta", []),
        ("fence.proxy.tensormap::generic.acquire.gpu", [Addr(Reg("%rd1")), Imm(128, "128")]),
        ("griddepcontrol.wait", []),
        ("griddepcontrol.launch_dependents", []),
        ("setmaxnreg.inc.sync.aligned.u32", [Imm(232, "232")]),
    ]:
        info = lookup(mk(full, *ops))
        assert info.barrier and info.side_effects and not info.pure, full
    red = mk("bar.red.popc.u32", Reg("%r1"), Imm(0, "0"), Not(Reg("%p1")))
    assert lookup(red).name == "bar.red" and roles(red) == (["%r1"], ["%p1"])
    assert lookup(red).divergence == "uniform"


def test_tensor_memory_and_misc_data_movement() -> None:
    mov = mk("mov.b64", Reg("%rd1"), V("%r1", "%r2"))
    assert roles(mov) == (["%rd1"], ["%r1", "%r2"])
    unpack = mk("mov.b64", V("%r1", "%r2"), Reg("%rd1"))
    assert roles(unpack) == (["%r1", "%r2"], ["%rd1"])
    tid = mk("mov.u32", Reg("%r1"), Reg("%tid.x"))
    assert roles(tid) == (["%r1"], ["%tid.x"])
    prmt = mk("prmt.b32.f4e", Reg("%r1"), Reg("%r2"), Reg("%r3"), Reg("%r4"))
    assert roles(prmt) == (["%r1"], ["%r2", "%r3", "%r4"])
    assert lookup(mk("prefetch.global.L2", Addr(Reg("%rd1")))).side_effects
    assert roles(mk("isspacep.shared", Reg("%p1"), Reg("%rd1"))) == (["%p1"], ["%rd1"])
    assert lookup(mk("cvta.to.global.u64", Reg("%rd2"), Reg("%rd1"))).space == ".global"
    assert roles(mk("mapa.shared::cluster.u32", Reg("%r1"), Reg("%r2"), Reg("%r3"))) == (
        ["%r1"],
        ["%r2", "%r3"],
    )
    assert roles(mk("getctarank.shared::cluster.u32", Reg("%r1"), Reg("%r2"))) == (["%r1"], ["%r2"])
    assert not lookup(mk("stacksave.u64", Reg("%rd1"))).pure
    assert lookup(mk("stackrestore.u64", Reg("%rd1"))).side_effects
    assert lookup(mk("alloca.u64", Reg("%rd1"), Reg("%rd2"))).side_effects
    tex = mk(
        "tex.2d.v4.f32.f32", V("%f1", "%f2", "%f3", "%f4"), Addr(Sym("t"), 0, (V("%f5", "%f6"),))
    )
    assert roles(tex) == (["%f1", "%f2", "%f3", "%f4"], ["%f5", "%f6"])
    sust = mk("sust.b.2d.v2.b32.trap", Addr(Sym("s"), 0, (V("%r1", "%r2"),)), V("%r3", "%r4"))
    assert roles(sust) == ([], ["%r1", "%r2", "%r3", "%r4"]) and lookup(sust).side_effects
    assert roles(mk("suld.b.1d.b32.trap", Reg("%r1"), Addr(Sym("s"), 0, (Reg("%r2"),)))) == (
        ["%r1"],
        ["%r2"],
    )
    assert roles(mk("txq.width.b32", Reg("%r1"), Addr(Sym("t")))) == (["%r1"], [])
    assert (
        lookup(mk("tld4.r.2d.v4.f32.f32", V("%f1", "%f2", "%f3", "%f4"), Addr(Sym("t")))).mem
        == "read"
    )
    ld = mk("tcgen05.ld.sync.aligned.32x32b.x2.b32", V("%r1", "%r2"), Addr(Reg("%r3")))
    assert roles(ld) == (["%r1", "%r2"], ["%r3"])
    assert lookup(mk("tcgen05.wait::ld.sync.aligned")).barrier


def test_half_and_conversion_forms() -> None:
    i = mk("fma.rn.f16x2", Reg("%r1"), Reg("%r2"), Reg("%r3"), Reg("%r4"))
    assert lookup(i).type == ".f16x2" and lookup(i).commutative
    cvt = mk("cvt.rn.f32.s32", Reg("%f1"), Reg("%r1"))
    assert lookup(cvt).types == (".f32", ".s32") and lookup(cvt).type == ".s32"
    assert lookup(mk("cvt.rn.bf16x2.f32", Reg("%r1"), Reg("%f1"), Reg("%f2"))).uses == (1, 2)
    pack = mk("cvt.pack.sat.u8.s32.b32", Reg("%r1"), Reg("%r2"), Reg("%r3"), Reg("%r4"))
    assert roles(pack) == (["%r1"], ["%r2", "%r3", "%r4"])
    for op in ("rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2", "tanh", "abs", "neg"):
        assert lookup(mk(f"{op}.approx.ftz.f32", Reg("%f1"), Reg("%f2"))).pure
    assert lookup(mk("testp.finite.f32", Reg("%p1"), Reg("%f1"))).defs == (0,)
    assert lookup(mk("copysign.f32", Reg("%f1"), Reg("%f2"), Reg("%f3"))).arity == (3,)


def test_integer_family_arity() -> None:
    three = ("sub", "mul", "mul24", "div", "rem", "and", "or", "xor", "shl", "shr", "min", "max")
    for op in three:
        assert 3 in lookup(mk(f"{op}.s32", Reg("%r1"), Reg("%r2"), Reg("%r3"))).arity
    four = ("mad", "mad24", "sad", "bfe", "fns", "dp4a", "dp2a", "shf", "prmt", "selp", "slct")
    for op in four:
        assert lookup(mk(f"{op}.s32", Reg("%r1"), Reg("%r2"), Reg("%r3"), Reg("%r4"))).arity == (4,)
    for op in ("popc", "clz", "bfind", "brev", "not", "cnot"):
        assert lookup(mk(f"{op}.b32", Reg("%r1"), Reg("%r2"))).arity == (2,)
    bfi = mk("bfi.b32", *R("%r1", "%r2", "%r3", "%r4", "%r5"))
    assert roles(bfi) == (["%r1"], ["%r2", "%r3", "%r4", "%r5"])
    lop3 = mk("lop3.b32", *R("%r1", "%r2", "%r3", "%r4"), Imm(0x96, "0x96"))
    assert roles(lop3) == (["%r1"], ["%r2", "%r3", "%r4"])
    lop3p = mk(
        "lop3.or.b32",
        Pair(Reg("%r1"), Reg("%p1")),
        *R("%r2", "%r3", "%r4"),
        Imm(1, "1"),
        Reg("%p2"),
    )
    assert roles(lop3p) == (["%r1", "%p1"], ["%r2", "%r3", "%r4", "%p2"])
    assert lookup(mk("mul.wide.s32", *R("%rd1", "%r1", "%r2"))).commutative
    assert lookup(mk("mad.hi.sat.s32", *R("%r1", "%r2", "%r3", "%r4"))).pure


# -- carry chain -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("full", "n", "cin", "cout"),
    [
        ("add.s32", 3, False, False),
        ("add.cc.u32", 3, False, True),
        ("addc.u32", 3, True, False),
        ("addc.cc.u32", 3, True, True),
        ("sub.cc.u32", 3, False, True),
        ("subc.cc.u32", 3, True, True),
        ("subc.u32", 3, True, False),
        ("mad.lo.cc.u32", 4, False, True),
        ("madc.hi.u32", 4, True, False),
        ("madc.lo.cc.u32", 4, True, True),
    ],
)
def test_carry_flags(full: str, n: int, cin: bool, cout: bool) -> None:
    info = lookup(mk(full, *R(*[f"%r{k}" for k in range(n)])))
    assert (info.carry_in, info.carry_out) == (cin, cout)
    assert info.pure == (not cin and not cout)


# -- commutativity ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("full", "n", "comm"),
    [
        ("add.f32", 3, True),
        ("mul.lo.s32", 3, True),
        ("and.b32", 3, True),
        ("min.f32", 3, True),
        ("max.s32", 3, True),
        ("fma.rn.f32", 4, True),
        ("mad.lo.s32", 4, True),
        ("sub.s32", 3, False),
        ("div.rn.f32", 3, False),
        ("shl.b32", 3, False),
        ("setp.lt.s32", 3, False),
        ("setp.ne.s32", 3, True),
        ("copysign.f32", 3, False),
    ],
)
def test_commutativity(full: str, n: int, comm: bool) -> None:
    assert lookup(mk(full, *R(*[f"%r{k}" for k in range(n)]))).commutative == comm


# -- divergence seeds (spec 01, seed table) -------------------------------------------


def test_divergence_classes() -> None:
    ballot = mk("vote.sync.ballot.b32", Reg("%r1"), Reg("%p1"), Imm(-1, "-1"))
    assert lookup(ballot).divergence == "uniform"  # the VOTE.BALLOT quirk
    for mode in ("any", "all", "uni"):
        v = mk(f"vote.sync.{mode}.pred", Reg("%p2"), Not(Reg("%p1")), Imm(-1, "-1"))
        assert lookup(v).divergence == "uniform"
    assert lookup(mk("vote.ballot.b32", Reg("%r1"), Reg("%p1"))).divergence == "uniform"
    assert lookup(mk("redux.sync.add.u32", *R("%r1", "%r2", "%r3"))).divergence == "uniform"
    assert lookup(mk("activemask.b32", Reg("%r1"))).divergence == "uniform"
    assert lookup(mk("match.any.sync.b32", *R("%r1", "%r2", "%r3"))).divergence == "varying"
    assert lookup(mk("match.all.sync.b32", *R("%r1", "%r2", "%r3"))).divergence == "uniform"
    assert lookup(mk("ld.global.u32", Reg("%r1"), Addr(Reg("%rd1")))).divergence == "address"
    assert lookup(mk("ld.param.u64", Reg("%rd1"), Addr(Sym("p")))).divergence == "address"
    assert lookup(mk("ld.local.u32", Reg("%r1"), Addr(Reg("%rd1")))).divergence == "varying"
    assert lookup(mk("cvta.local.u64", Reg("%rd1"), Reg("%rd2"))).divergence == "varying"
    assert (
        lookup(mk("atom.add.u32", Reg("%r1"), Addr(Reg("%rd1")), Reg("%r2"))).divergence
        == "varying"
    )
    assert lookup(mk("add.s32", *R("%r1", "%r2", "%r3"))).divergence == "default"


def test_special_registers() -> None:
    for name in (
        "%tid.x",
        "%ntid.z",
        "%laneid",
        "%warpid",
        "%ctaid.y",
        "%nctaid.x",
        "%smid",
        "%clock64",
        "%globaltimer_lo",
        "%lanemask_lt",
        "%pm3",
        "%pm7_64",
        "%envreg31",
        "%dynamic_smem_size",
        "%reserved_smem_offset_begin",
        "%cluster_ctarank",
        "%cluster_ctaid.x",
        "%is_explicit_cluster",
        "%current_graph_exec",
    ):
        assert is_special_register(name), name
    for name in ("%r1", "%tid.w", "%laneid.x", "%envreg32", "%pm8", "%clock32", "%rd"):
        assert not is_special_register(name), name
    sd = opcodes.special_register_divergence
    assert sd("%tid.x") == "varying" and sd("%laneid") == "varying"
    assert sd("%ctaid.x") == "uniform" and sd("%warpid") == "uniform" and sd("%smid") == "uniform"
    clock = mk("mov.u64", Reg("%rd1"), Reg("%clock64"))
    assert lookup(clock).pure and not opcodes.is_pure(clock)
    assert opcodes.is_pure(mk("mov.u32", Reg("%r1"), Reg("%tid.x")))


# -- errors ----------------------------------------------------------------------------


def test_unsupported_instruction_names_the_location() -> None:
    with pytest.raises(PtxError) as e:
        lookup(mk("frobnicate.b32", Reg("%r1")))
    assert str(e.value) == "k.ptx:7:3: error: unsupported instruction 'frobnicate.b32'"
    with pytest.raises(PtxError, match="unsupported instruction 'cp.b32'"):
        lookup(mk("cp.b32", Reg("%r1")))


def test_wrong_arity_names_the_location() -> None:
    with pytest.raises(PtxError) as e:
        lookup(mk("add.s32", Reg("%r1"), Reg("%r2")))
    assert str(e.value) == "k.ptx:7:3: error: 'add.s32' expects 3 operands, got 2"
    # errors are cached too, and still report each instruction's own span
    other = Instr("add", (".s32",), [Reg("%r1"), Reg("%r2")], span=Span("b.ptx", 2, 5))
    with pytest.raises(
        PtxError, match=r"^b\.ptx:2:5: error: 'add\.s32' expects 3 operands, got 2$"
    ):
        lookup(other)
    with pytest.raises(PtxError, match="'ld.global.f32' expects 2 or 3 operands, got 1"):
        lookup(mk("ld.global.f32", Reg("%f1")))
    with pytest.raises(PtxError, match="'bar.warp.sync' expects 1 operand, got 0"):
        lookup(mk("bar.warp.sync"))


def test_parsed_instructions_report_source_positions() -> None:
    parser = pytest.importorskip("ptxopt.ptx.parser")
    src = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k()
{
    .reg .b32 %r<4>;
    add.s32 %r1, %r2;
}
"""
    mod = parser.parse(src, "bad.ptx")
    body = mod.functions[0].body
    assert body is not None
    instr = next(s for s in body if isinstance(s, Instr))
    with pytest.raises(PtxError) as e:
        lookup(instr)
    assert str(e.value) == "bad.ptx:7:5: error: 'add.s32' expects 3 operands, got 2"


def test_cache_returns_the_same_object() -> None:
    a = lookup(mk("add.s32", *R("%r1", "%r2", "%r3")))
    b = lookup(mk("add.s32", *R("%r4", "%r5", "%r6")))
    assert a is b
    assert "wgmma.mma_async" in opcodes.supported_opcodes()


# -- types -----------------------------------------------------------------------------


def test_types() -> None:
    assert bit_width(".f16x2") == 32 and bit_width(".pred") == 1 and bit_width(".b128") == 128
    assert reg_class(".pred") == "pred"
    assert reg_class(".u8") == "b16" and reg_class(".bf16") == "b16"
    assert reg_class(".f32") == reg_class(".bf16x2") == reg_class(".s32") == "b32"
    assert reg_class(".f64") == reg_class(".u64") == "b64"
    assert reg_class(".b128") == "b128"
    assert is_float(".bf16x2") and not is_float(".b32")
    assert is_signed(".s16") and not is_signed(".u16") and is_int(".u64") and not is_int(".b64")
    assert instr_type(mk("cvt.rn.f32.s32", Reg("%f1"), Reg("%r1"))) == ".s32"
    assert instr_type(mk("bar.sync", Imm(0, "0"))) is None
    with pytest.raises(ValueError):
        bit_width(".q7")
