"""The uniform register model's linear-time structures (ptxopt/ori/view.py,
ptxopt/ori/ur_alloc.py): webs made on demand, plans made on demand, the readers'
static facts cached across attempts.  Each test checks them against what the
instructions say, computed here independently, or against a decision they feed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptxopt.analysis.divergence import analyze_module
from ptxopt.ir.core import CARRY, Func, Inst, Value
from ptxopt.ir.lift import lift_module
from ptxopt.ori import ur_alloc
from ptxopt.ori.ur_alloc import FuncPlan, plan_function
from ptxopt.ori.view import Use, Web, Webs, record_reads, sass_class, scan
from ptxopt.ptx.parser import parse
from tests.ori.test_ur_rules import HEAD, REGS, _kernel

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
PROBE = (Path(__file__).resolve().parent / "capability_probe.ptx").read_text()
NOT_WRITTEN = "not written by an instruction (parameter or undefined)"
VARYING = "varying (divergence analysis)"


def _plan(text: str, sm: int, name: str = "k", **kw: bool) -> tuple[Func, FuncPlan]:
    mod = lift_module(parse(text, "t.ptx"))
    md = analyze_module(mod)
    f = mod.func(name)
    return f, plan_function(f, md.funcs[name], sm, **kw)  # type: ignore[arg-type]


def _line(ins: object) -> int:
    span = ins.ast.span  # type: ignore[attr-defined]
    return span.line if span is not None else 0


def _expected_webs(f: Func) -> dict[str, list[int]]:
    """Register -> lines of its writes, in the order of the first parameter, phi,
    write or undefined read (the order the report and the pass see)."""
    out: dict[str, list[int]] = {}
    for v in f.params:
        if v.kind != "special":
            out.setdefault(v.var, [])
    for b in f.blocks:
        for phi in b.phis:
            if phi.result.kind != "special":
                out.setdefault(phi.result.var, [])
        for ins in b.insts:
            for d in ins.result_values():
                if d.kind != "special" and d.var != CARRY:
                    out.setdefault(d.var, []).append(_line(ins))
            for u in (ins.pred, *ins.uses):
                if isinstance(u, Value) and u.kind == "undef":
                    out.setdefault(u.var, [])
    return {k: sorted(set(v)) for k, v in out.items()}


CALLEE = (
    HEAD
    + ".func (.reg .b32 r) f(.reg .b32 a, .reg .b32 b)\n{\n"
    + REGS
    + "\nmov.u32 %r1, %tid.x;\nadd.s32 %r2, %r1, a;\nadd.s32 %r2, %r2, b;\n"
    + "mov.b32 r, %r2;\nret;\n}\n"
    + ".visible .entry k()\n{\n.reg .b32 %t<4>;\nmov.u32 %t1, %tid.x;\n"
    + "{\n.param .b32 ra;\n.param .b32 pa;\n.param .b32 pb;\n"
    + "st.param.b32 [pa], %t1;\nst.param.b32 [pb], 5;\n"
    + "call.uni (ra), f, (pa, pb);\nld.param.b32 %t2, [ra];\n}\nret;\n}\n"
)


# a carry flag (no web), a guard predicate and an operand read before any write
# (each starts its web there), a register written twice by one instruction's results
CARRY_AND_UNDEFINED = _kernel(
    """mov.u32 %r1, %tid.x;
add.cc.u32 %r2, %r1, 7;
addc.u32 %r3, %r1, 0;
@%p3 add.s32 %r4, %r5, %r2;
mad.lo.cc.u32 %r6, %r3, %r4, %r1;
setp.lt.u32 %p1, %r6, %r7;
@%p1 st.global.u32 [%rd1], %r6;
"""
)


def test_every_web_is_planned_in_order_with_its_writes() -> None:
    """The plans made on demand cover every web, in web order, each with the lines of
    all its writes (a varying register written twice has both)."""
    for text, name in ((PROBE, None), (CALLEE, "f"), (CARRY_AND_UNDEFINED, "k")):
        mod = lift_module(parse(text, "t.ptx"))
        md = analyze_module(mod)
        for f in mod.funcs if name is None else [mod.func(name)]:
            p = plan_function(f, md.funcs[f.name], 90)
            want = _expected_webs(f)
            assert list(p.webs) == list(want) and len(p.webs) == len(want)
            assert {k: w.lines for k, w in p.webs.items()} == want
            assert all(k in p.webs for k in want) and "%nope" not in p.webs
    _, p = _plan(CALLEE, 90, "f")
    assert p.webs["%r2"].lines == [8, 9] and p.webs["%r2"].why == VARYING
    # a parameter the caller passes a varying value in: never looked at, still a
    # parameter; one the caller passes a constant in: looked at and refused
    assert p.webs["a"].file == "R" and p.webs["a"].why == NOT_WRITTEN
    assert p.webs["b"].file == "R" and p.webs["b"].why == NOT_WRITTEN


LOOP_FIRST_READ = _kernel(
    """mov.u32 %r2, %ctaid.x;
$L__loop:
add.s32 %r1, %r1, %r2;
setp.lt.u32 %p1, %r1, 100;
@%p1 bra $L__loop;
st.global.u32 [%rd1], %r1;
"""
)


def test_a_register_read_before_its_first_write_keeps_its_writes() -> None:
    """%r1 is read in the loop before any write: its web starts at the loop header's
    phi, and the write inside the loop is still one of its writes."""
    f, p = _plan(LOOP_FIRST_READ, 90)
    sc = scan(f)
    assert [d.ast.name for d in sc.webs["%r1"].defs] == ["add.s32"]
    assert p.webs["%r1"].lines == [9]
    assert p.webs["%r1"].why != NOT_WRITTEN


TRUNCATED_PARAM = _kernel(
    """ld.param.u64 %rd1, [p];
cvt.u32.u64 %r1, %rd1;
mov.u32 %r2, %tid.x;
add.s32 %r3, %r2, %r1;
cvta.to.global.u64 %rd2, %rd1;
st.global.u32 [%rd2], %r3;
"""
)


def test_a_truncating_cvt_of_a_parameter_is_a_constant_operand() -> None:
    """``cvt.u32.u64`` is a MOV of the pair's low register: the copy of a kernel
    parameter is itself a constant operand (``c[0x0][0x210]``), read in place by the
    per-thread add, never a UR of its own."""
    f, p = _plan(TRUNCATED_PARAM, 90)
    assert "%r1" in scan(f).copies
    assert p.webs["%r1"].file == "R"
    assert p.webs["%r1"].why == "constant operand of per-thread readers"


TWO_COPIES = _kernel(
    """mov.u32 %r1, %ctaid.x;
mov.u32 %r5, %tid.x;
ld.param.u32 %r6, [n];
setp.eq.s32 %p1, %r6, 0;
@%p1 bra $L__else;
mov.u32 %r2, %r1;
bra.uni $L__join;
$L__else:
mov.u32 %r2, %r1;
$L__join:
st.shared.u32 [%r5], %r2;
"""
)


def test_the_copy_walk_visits_each_web_once() -> None:
    """%r2 is written by two copies of %r1: the walk over %r1's readers reaches %r2
    twice but counts its readers once (the FNV-1a visited set).  Counted once, the
    two copies (uniform readers) outvote the one copy into R that the shared store's
    data needs, and %r1 stays UR (with or without the ``tolerate_bridges`` variant);
    counted twice, two bridges would demote %r1 in the first attempt."""
    for tolerate in (True, False):
        _, p = _plan(TWO_COPIES, 90, tolerate_bridges=tolerate)
        assert p.webs["%r1"].file == "UR" and p.webs["%r1"].cost == 1, tolerate


INDEXED_CONST = (
    HEAD
    + ".const .align 4 .b32 tbl[64];\n"
    + _kernel(
        """mov.u32 %r1, %ctaid.x;
mul.wide.u32 %rd1, %r1, 4;
mov.u64 %rd2, tbl;
add.s64 %rd3, %rd2, %rd1;
ld.const.u32 %r3, [%rd3];
add.s32 %r4, %r3, 1;
mov.u32 %r5, %tid.x;
add.s32 %r6, %r5, %r4;
ld.param.u64 %rd4, [p];
cvta.to.global.u64 %rd5, %rd4;
st.global.u32 [%rd5], %r6;
"""
    )[len(HEAD) :]
)


def test_an_indexed_constant_load_takes_its_index_in_r() -> None:
    """A ``ld.const`` (class LDC) through a register is no uniform reader of its
    address, even when what it loads is uniform: ptxas 13.0.88 at sm_90 emits
    ``LDC R0, c[0x3][R0]`` for line 12 of this kernel, the index in R."""
    _, p = _plan(INDEXED_CONST, 90)
    assert p.webs["%rd3"].file == "R" and "bridges" in p.webs["%rd3"].why
    assert p.webs["%r4"].file == "UR"


def test_the_budget_tree_agrees_with_a_plain_list() -> None:
    """Range add / range max of the budget check against a list, on random operations
    (sizes that are and are not powers of two, negative additions included)."""
    import random

    from ptxopt.ori.ur_alloc import _MaxTree

    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 70)
        tree, ref = _MaxTree(n), [0] * n
        for _ in range(150):
            lo = rng.randrange(n)
            hi = rng.randrange(lo, n)
            if rng.random() < 0.5:
                v = rng.randint(-3, 5)
                tree.add(lo, hi, v)
                for i in range(lo, hi + 1):
                    ref[i] += v
            else:
                assert tree.max(lo, hi) == max(ref[lo : hi + 1])


# Kernels where the retry loop runs three to five attempts (cub, CUTLASS, Triton, numba)
RETRY_FILES = [
    "cub/histogram.sm80.ptx",
    "cub/scan.sm90.ptx",
    "cutlass/ampere_conv2d_fprop.sm80.ptx",
    "cutlass/hopper_fp8_gemm.sm90a.ptx",
    "triton/attention_fwd_fp16.sm80.ptx",
    "triton/matmul_fp16.sm90a.ptx",
    "numba/clamp_count.sm80.ptx",
]


def _plan_summary(p: FuncPlan) -> tuple[object, ...]:
    return (
        sorted(p.uniform),
        sorted((k, w.file, w.cost, w.why) for k, w in p.webs.items()),
        [(b.kind, b.reg, b.line) for b in p.bridges],
        p.ur_count,
        p.up_count,
        p.attempts,
        p.budget_demoted,
    )


@pytest.mark.parametrize("rel", RETRY_FILES)
def test_reused_costs_equal_costs_computed_again(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The retry loop reuses a web's cost (and replays its slot claims) when nothing it
    read changed: every decision, cost, bridge and count must be what computing every
    cost again at every attempt gives -- and some costs must have been reused.  (The
    switch is a module attribute, so this runs on the compiled build too.)"""
    mod = lift_module(parse((CORPUS / rel).read_text(), rel))
    md = analyze_module(mod)
    plans = {
        (f.name, sm): plan_function(f, md.funcs[f.name], sm) for f in mod.funcs for sm in (80, 90)
    }
    monkeypatch.setattr(ur_alloc, "REUSE_COSTS", False)
    again = {
        (f.name, sm): plan_function(f, md.funcs[f.name], sm) for f in mod.funcs for sm in (80, 90)
    }
    for key, plan in plans.items():
        assert _plan_summary(plan) == _plan_summary(again[key]), f"{rel} {key}"
    reused = sum(p.costs_computed for p in plans.values())
    computed = sum(p.costs_computed for p in again.values())
    assert 0 < reused < computed  # the reuse is exercised


def _stand_in_webs(*names: str) -> Webs:
    return Webs({k: [] for k in names}, dict.fromkeys(names, ".b32"))


def test_a_kept_cost_is_reused_only_while_what_it_read_is_unchanged() -> None:
    """The reuse rule itself, on a stand-in cost that reads one slot claim and tests
    one web's membership: a cost of 1 is computed again when that web was demoted by
    the last attempt, or when the claim it read is not as it found it (an earlier web
    that claimed the slot has left UR, or claims it now); a reused cost replays its
    claim; any other cost is not kept."""
    computed: list[str] = []
    insts = scan(_probe_funcs()[0]).insts  # (numbered: claims are kept by point)
    slot = insts[0]  # the reader whose slot is read

    def cost(
        w: Web, ur: set[str], ctx: object, claims: list[str | None],
        out: list[ur_alloc.Bridge], touched: list[str], seen: dict[Inst, str | None],
    ) -> int:  # fmt: skip
        computed.append(w.name)
        touched.append("x" if w.name == "a" else "y")
        seen.setdefault(slot, claims[slot.point])
        owner = claims[slot.point]
        if owner is None:
            owner = claims[slot.point] = w.name
        return 1 if owner == w.name else 2

    costs = ur_alloc._Costs(_stand_in_webs("a", "b"), set(), None, cost)

    def attempt(*names: str) -> tuple[list[int], dict[Inst, str]]:
        claims: list[str | None] = [None] * len(insts)
        got = [costs.cost(k, claims) for k in names]
        return got, {insts[p]: o for p, o in enumerate(claims) if o is not None}

    assert attempt("a", "b") == ([1, 2], {slot: "a"}) and computed == ["a", "b"]
    # a is reused; b, of cost 2, was not kept (in the retry loop it leaves UR)
    assert attempt("a", "b") == ([1, 2], {slot: "a"}) and computed == ["a", "b", "b"]
    costs.changed = {"x"}  # a tested x, which the last attempt demoted
    assert attempt("a", "b") == ([1, 2], {slot: "a"}) and computed[3:] == ["a", "b"]
    costs.changed = set()
    assert attempt("b") == ([1], {slot: "b"}) and computed[-1] == "b"  # 'a' left: claim free
    n = len(computed)
    assert attempt("b") == ([1], {slot: "b"}) and len(computed) == n  # reused, claim replayed
    # a is reused and claims the slot first: b's kept cost found it free, so it is
    # computed again
    assert attempt("a", "b") == ([1, 2], {slot: "a"}) and computed[n:] == ["b"]
    assert costs.computed == n + 1


def _probe_funcs() -> list[Func]:
    return list(lift_module(parse(PROBE, "p.ptx")).funcs)


def test_the_sweep_numbers_the_instructions_and_classes_them() -> None:
    """``scan`` numbers every instruction with its program point (``Inst.point``) and
    the classes by point are those :func:`sass_class` gives, as are the classes of
    :meth:`Classes.of` (the probe kernel's opcode forms -- ``add.s32`` and ``add.f32``
    share an opcode name, not a class -- and a corpus file's copies)."""
    seen: set[str] = set()
    reduce = (CORPUS / "cuda/reduce.O3.sm90.ptx").read_text()
    for f in _probe_funcs() + list(lift_module(parse(reduce, "r.ptx")).funcs):
        sc = scan(f)
        assert sc.insts == list(f.instructions())
        assert [ins.point for ins in sc.insts] == list(range(len(sc.insts)))
        for ins in sc.insts:
            want = sass_class(ins)
            assert sc.cls.at_point(ins) == want == sc.cls.of(ins), ins
            seen.add(want)
    assert {"IADD3", "FADD", "S2R", "MOV", "LDC"} <= seen


def test_a_plan_does_not_read_program_points_after_it_is_made() -> None:
    """The plans are made lazily, after ``plan_function`` has returned: by then a later
    sweep may have numbered the instructions otherwise, so a plan's classes must not
    come from ``Inst.point`` (here renumbered backwards)."""
    mod = lift_module(parse((CORPUS / "cuda/reduce.O3.sm90.ptx").read_text(), "r.ptx"))
    md = analyze_module(mod)
    checked = 0
    for f in mod.funcs:
        p = plan_function(f, md.funcs[f.name], 90)
        want = {k: sass_class(w.defs[0]) if w.defs else "" for k, w in scan(f).webs.items()}
        for n, ins in enumerate(reversed(list(f.instructions()))):
            ins.point = n
        for k, w in p.webs.items():
            assert w.cls == want[k], (f.name, k)
            checked += bool(want[k])
    assert checked > 100


def test_web_types_are_the_declared_ones() -> None:
    """A web's type is that of the first value of its register the sweep meets (a
    parameter, a phi, a write or a read before any write), whether the sweep noted it
    or :meth:`Webs.type_of` reads it from the first write."""
    for f in _probe_funcs() + [lift_module(parse(LOOP_FIRST_READ, "t.ptx")).func("k")]:
        want: dict[str, str] = {}
        for v in f.params:
            want.setdefault(v.var, v.type)
        for b in f.blocks:
            for phi in b.phis:
                want.setdefault(phi.result.var, phi.result.type)
            for ins in b.insts:
                for d in ins.defs:
                    want.setdefault(d.var, d.type)
                for u in (ins.pred, *ins.uses):
                    if isinstance(u, Value) and u.kind == "undef":
                        want.setdefault(u.var, u.type)
        webs = scan(f).webs
        assert webs, f.name
        for k in webs:
            assert webs.type_of(k) == webs[k].type == want[k], (f.name, k)
            assert webs[k].width == (1 if want[k] == ".pred" else max(1, int(want[k][2:]) // 32))


def test_operand_list_is_operand_values() -> None:
    """``Inst.operand_list`` (what ``operand_values`` iterates) is the guard, the
    register sources in slot order, the tied old values and the carry read."""
    kinds = {"guard": 0, "carry": 0, "old": 0}
    texts = [(CORPUS / "cub/scan.sm90.ptx").read_text(), CARRY_AND_UNDEFINED]
    for text in texts:
        for f in lift_module(parse(text, "t.ptx")).funcs:
            for ins in f.instructions():
                assert ins.operand_list() == list(ins.operand_values()), ins
                want = [ins.pred] if ins.pred is not None else []
                want += [u for u in ins.uses if isinstance(u, Value)]
                want += [o for o in ins.olds or () if o is not None]
                want += [ins.carry_in] if ins.carry_in is not None else []
                assert ins.operand_list() == want, ins
                kinds["guard"] += ins.pred is not None
                kinds["carry"] += ins.carry_in is not None
                kinds["old"] += any(o is not None for o in ins.olds or ())
    assert all(kinds.values()), kinds


def test_the_interval_and_disjoint_helpers() -> None:
    """``_interval`` is the first and last point of a web's writes and reads (as
    ``min``/``max`` of the list would give them); ``_none_in`` is ``isdisjoint``."""
    rel = "cub/histogram.sm80.ptx"
    for f in lift_module(parse((CORPUS / rel).read_text(), rel)).funcs:
        sc = scan(f)
        record_reads(f, sc.webs, sc.webs, sc.insts)
        for w in sc.webs.values():
            ps = [d.point for d in w.defs] + [u.inst.point for u in w.uses]
            if ps:
                assert ur_alloc._interval(w) == (min(ps), max(ps)), w.name
    sets = [set(), {"a"}, {"b"}, {"a", "b", "c"}, {"c", "d"}, {"d"}]
    for a in sets:
        for b in sets:
            assert ur_alloc._none_in(sorted(a), b) == a.isdisjoint(b), (a, b)


def test_records_compare_by_value() -> None:
    """The model's records (plain classes, not dataclasses, for compiled speed) keep
    the record behaviour: equal by their fields, unhashable, and a repr naming them."""
    f = _probe_funcs()[0]
    ins = next(iter(f.instructions()))
    assert Use(ins, 0, False) == Use(ins, 0, False) != Use(ins, 1, False)
    assert Web("%r1", ".u32") == Web("%r1", ".u32", []) != Web("%r1", ".u64")
    assert Web("%rd1", ".u64").width == 2 and Web("%p1", ".pred").width == 1
    b = ur_alloc.Bridge("R2UR", "%r1", 3)
    assert b == ur_alloc.Bridge("R2UR", "%r1", 3) != ur_alloc.Bridge("R2UR", "%r1", 4)
    assert repr(b) == "Bridge(kind='R2UR', reg='%r1', line=3)"
    wp = ur_alloc.WebPlan("%r1", "UR", "IADD3", 1, "", [5])
    assert wp == ur_alloc.WebPlan("%r1", "UR", "IADD3", 1, "", [5])
    assert wp != ur_alloc.WebPlan("%r1", "R", "IADD3", 1, "", [5])
    assert repr(wp).startswith("WebPlan(reg='%r1', file='UR', cls='IADD3', cost=1")
    for rec in (b, wp, Use(ins, 0, False), Web("%r1", ".u32")):
        with pytest.raises(TypeError):
            hash(rec)


NESTED_LOOPS = _kernel(
    """mov.u32 %r1, 0;
$L__outer:
mov.u32 %r2, 0;
$L__inner:
add.s32 %r2, %r2, 1;
setp.lt.s32 %p1, %r2, 10;
@%p1 bra $L__inner;
add.s32 %r1, %r1, 1;
setp.lt.s32 %p2, %r1, 10;
@%p2 bra $L__outer;
"""
)


def test_a_constant_load_is_live_over_the_loop_around_its_reader() -> None:
    """Where a constant load for a reader is live (``_loop_span``): over the reader's
    block when that block is a loop by itself, over the outermost small loop around it
    when there is one (sm_90; it wins over the block), else at the reader alone."""
    f = lift_module(parse(NESTED_LOOPS, "t.ptx")).func("k")
    insts = scan(f).insts
    inner = [i for i in insts if i.block is not None and i.block in i.block.succs]
    assert [i.ast.name for i in inner] == ["add.s32", "setp.lt.s32", "bra"]
    block = (inner[0].point, inner[-1].point)
    self_loops = ur_alloc._self_loops(f)
    assert list(self_loops.values()) == [block]
    small = ur_alloc._small_loops(f, 200)
    outer = (insts[1].point, insts[-2].point)  # mov %r2 .. the outer back edge (then ret)
    assert ur_alloc._loop_span(inner[0], self_loops, {}) == block
    assert ur_alloc._loop_span(inner[0], self_loops, small) == outer
    first = insts[0]  # mov %r1, 0: in no loop
    assert ur_alloc._loop_span(first, self_loops, small) == (first.point, first.point)


def test_the_read_sweep_finds_reads_of_every_kind_of_value() -> None:
    """``record_reads`` matches operands by value: a read of a function's register
    parameter, of a phi (a loop-carried register), of a register read before any
    write and of an ordinary write are each recorded, exactly as a match by name over
    every operand finds them."""
    kinds: set[str] = set()
    for text in (CALLEE, LOOP_FIRST_READ, CARRY_AND_UNDEFINED):
        for f in lift_module(parse(text, "t.ptx")).funcs:
            sc = scan(f)
            record_reads(f, sc.webs, sc.webs, sc.insts)
            want: dict[str, list[tuple[int, int]]] = {}
            for ins in sc.insts:
                if ins.pred is not None and ins.pred.kind != "special":
                    want.setdefault(ins.pred.var, []).append((ins.point, -1))
                    kinds.add(ins.pred.kind)
                for k, u in enumerate(ins.uses):
                    if isinstance(u, Value) and u.kind != "special":
                        want.setdefault(u.var, []).append((ins.point, k))
                        kinds.add(u.kind)
            got = {k: [(u.inst.point, u.slot) for u in w.uses] for k, w in sc.webs.items()}
            assert {k: v for k, v in got.items() if v} == want, f.name
    assert {"param", "phi", "undef", "inst"} <= kinds


LATE_VARYING = _kernel(
    """mov.u32 %r1, %ctaid.x;
st.global.u32 [%rd1], %r1;
mov.u32 %r1, %tid.x;
st.global.u32 [%rd1+4], %r1;
mov.u32 %r2, %ctaid.y;
st.global.u32 [%rd1+8], %r2;
mov.u32 %r2, %ctaid.z;
st.global.u32 [%rd1+12], %r2;
"""
)


def test_a_web_written_uniformly_and_then_per_thread_is_varying() -> None:
    """%r1 starts with ``%ctaid.x`` and is later written ``%tid.x``: the web is
    varying (the later write decides), while %r2, written twice uniformly, is not."""
    f, p = _plan(LATE_VARYING, 90)
    assert p.webs["%r1"].why == VARYING
    assert p.webs["%r2"].why != VARYING


@pytest.mark.parametrize("rel", ["cub/histogram.sm80.ptx", "cuda/reduce.O3.sm90.ptx"])
def test_the_sweep_lists_the_webs_without_a_varying_value(rel: str) -> None:
    """``Scan.uniform`` is, in web order, every web none of whose values (parameters,
    phis, writes) the divergence vector marks varying --
    checked against the values themselves, read here without the sweep."""
    mod = lift_module(parse((CORPUS / rel).read_text(), rel))
    md = analyze_module(mod)
    late = 0
    for f in mod.funcs:
        vec = md.funcs[f.name].varying
        values: dict[str, list[Value]] = {}
        for v in f.params:
            values.setdefault(v.var, []).append(v)
        for b in f.blocks:
            for phi in b.phis:
                values.setdefault(phi.result.var, []).append(phi.result)
            for ins in b.insts:
                for d in ins.defs:
                    values.setdefault(d.var, []).append(d)
        sc = scan(f, vec)  # (a web read before any write is judged by its writes)
        want = [k for k in sc.webs if not any(vec[v.id] for v in values.get(k, []))]
        assert list(sc.uniform) == want, f.name
        # webs whose first value is uniform and a later one varying: the case the
        # sweep settles only at the end
        late += sum(
            1 for k, vs in values.items() if not vec[vs[0].id] and any(vec[v.id] for v in vs)
        )
    assert late > 0


def test_a_web_that_needs_bridges_names_its_cost() -> None:
    """The reason of a web demoted for its bridges carries the cost that demoted it
    (at least 2: 1 + a bridge), added when its plan is made."""
    rel = "cub/histogram.sm80.ptx"
    mod = lift_module(parse((CORPUS / rel).read_text(), rel))
    md = analyze_module(mod)
    seen = 0
    for f in mod.funcs:
        for sm in (80, 90):
            p = plan_function(f, md.funcs[f.name], sm)
            for w in p.webs.values():
                if w.why.startswith("needs bridges"):
                    head, _, cost = w.why.partition(" (cost ")
                    assert head == "needs bridges" and cost.endswith(")"), w.why
                    assert int(cost[:-1]) >= 2, w.why
                    seen += 1
    assert seen > 0


def test_one_instruction_writing_a_register_twice() -> None:
    """``mov.b64 {%r1, %r1}, %rd1`` (ptxas accepts it) writes two values of one web:
    the web is uniform only when neither value is marked varying, whichever it is."""
    text = _kernel("mov.b64 {%r1, %r1}, %rd1;\nst.global.u32 [%rd1], %r1;\n")
    f = lift_module(parse(text, "t.ptx")).func("k")
    mov = next(i for i in f.instructions() if i.ast.opcode == "mov")
    first, second = mov.defs
    assert first.var == second.var == "%r1"
    for marked, uniform in (((), True), ((first.id,), False), ((second.id,), False)):
        vec = bytearray(f.next_id)
        for i in marked:
            vec[i] = 1
        assert ("%r1" in scan(f, vec).uniform) is uniform, marked
