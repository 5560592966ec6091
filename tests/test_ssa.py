"""SSA construction and destruction: phi placement, partial definitions, carry
chains, scopes; out-of-SSA under the swap and lost-copy problems, checked by
ptxas and by execution."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import propagate_copies, ptxas_check
from hypothesis import given, settings
from hypothesis import strategies as st

from ptxopt.ir.core import Func
from ptxopt.ir.lift import lift_module
from ptxopt.ir.lower import print_ir_module
from ptxopt.ir.parallel_copy import sequentialize
from ptxopt.ir.verify import VerifyError, verify_function
from ptxopt.ptx.ast import Imm
from ptxopt.ptx.parser import parse

HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n\n"


def kernel(body: str, regs: str = "") -> str:
    return (
        HEAD
        + ".visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)\n{\n"
        + "\t.reg .pred %p<8>;\n\t.reg .b32 %r<32>;\n\t.reg .b64 %rd<8>;\n"
        + regs
        + "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
        + "\tld.param.u32 %r20, [k_param_1];\n\tmov.u32 %r21, %tid.x;\n"
        + "\tmul.wide.u32 %rd3, %r21, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n"
        + body
        + "\n}\n"
    )


def lift(text: str) -> Func:
    mod = lift_module(parse(text, "t.ptx"))
    (fn,) = mod.funcs
    verify_function(fn)
    return fn


LOOP = kernel(
    """\tmov.u32 %r1, 0;
\tmov.u32 %r2, 7;
\tmov.u32 %r9, 5;
$L_loop:
\tadd.s32 %r1, %r1, %r2;
\tadd.s32 %r3, %r3, 1;
\tsetp.lt.u32 %p1, %r3, %r20;
\t@%p1 bra $L_loop;
\tst.global.u32 [%rd4], %r1;
\tret;"""
)


def phis_at(fn: Func, label: str) -> set[str]:
    for b in fn.blocks:
        if label in b.labels:
            return {p.result.var for p in b.phis}
    raise KeyError(label)


def test_loop_phis_are_pruned() -> None:
    fn = lift(LOOP)
    # %r1 and %r3 are loop-carried; %r2 is invariant; %r9 is dead
    assert phis_at(fn, "$L_loop") == {"%r1", "%r3"}


def test_undefined_register_reads_undef() -> None:
    fn = lift(LOOP)
    (phi,) = [p for b in fn.blocks for p in b.phis if p.result.var == "%r3"]
    kinds = sorted(v.kind for v in phi.incoming)
    assert kinds == ["inst", "undef"]


def test_predicated_definition_is_partial() -> None:
    fn = lift(
        kernel(
            "\tmov.u32 %r1, 1;\n\tsetp.eq.u32 %p1, %r21, 0;\n\t@%p1 mov.u32 %r1, 2;\n"
            "\tst.global.u32 [%rd4], %r1;\n\tret;"
        )
    )
    movs = [i for i in fn.instructions() if i.name == "mov.u32" and i.ast.pred is not None]
    (m,) = movs
    assert m.olds is not None and m.olds[0] is not None
    first = next(
        i
        for i in fn.instructions()
        if i.name == "mov.u32" and i.ast.pred is None and i.defs[0].var == "%r1"
    )
    assert m.olds[0] is first.defs[0]
    st = next(i for i in fn.instructions() if i.opcode == "st")
    assert st.uses[-1] is m.defs[0]


def test_carry_chain_is_an_ssa_value() -> None:
    fn = lift(
        kernel(
            "\tadd.cc.u32 %r1, %r21, 5;\n\taddc.u32 %r2, %r20, 0;\n"
            "\tst.global.u32 [%rd4], %r2;\n\tret;"
        )
    )
    add, addc = [
        i
        for i in fn.instructions()
        if i.opcode in ("add", "addc") and i.defs[0].var in ("%r1", "%r2")
    ]
    assert add.carry_out is not None and addc.carry_in is add.carry_out


def test_scoped_registers_are_renamed() -> None:
    fn = lift(
        kernel(
            "\t{\n\t.reg .b32 %r<2>;\n\tmov.u32 %r1, 4;\n\tst.global.u32 [%rd4], %r1;\n\t}\n"
            "\tst.global.u32 [%rd4], %r1;\n\tret;"
        )
    )
    stores = [i for i in fn.instructions() if i.opcode == "st"]
    inner, outer = stores
    assert inner.uses[-1].var == "%r1_1"  # type: ignore[union-attr]
    assert outer.uses[-1].kind == "undef"  # type: ignore[union-attr]


def test_entry_block_with_predecessors_gets_a_fresh_entry() -> None:
    text = (
        HEAD + ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\t.reg .pred %p1;\n$L0:\n"
        "\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, 10;\n\t@%p1 bra $L0;\n\tret;\n}\n"
    )
    fn = lift(text)
    assert not fn.blocks[0].preds and fn.blocks[0].labels == []


def test_verifier_rejects_use_before_definition() -> None:
    fn = lift(LOOP)
    st = next(i for i in fn.instructions() if i.opcode == "st")
    later = st.defs  # st defines nothing; make the first add use the store's block value
    assert later == []
    add = next(i for i in fn.instructions() if i.opcode == "add" and i.defs[0].var == "%r1")
    mul = next(i for i in fn.instructions() if i.opcode == "mul")
    mul.uses[0] = add.defs[0]  # the add is in the loop, after the mul's block
    with pytest.raises(VerifyError, match="does not dominate"):
        verify_function(fn)


# ---------------------------------------------------------------------------
# parallel copies


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.one_of(st.integers(0, 5), st.integers(100, 102))),
        max_size=8,
        unique_by=lambda c: c[0],
    )
)
def test_sequentialized_copies_have_parallel_semantics(pairs: list[tuple[int, int]]) -> None:
    regs = {f"r{i}": i * 10 for i in range(6)}
    copies = [(f"r{d}", (Imm(s, str(s)) if s >= 100 else f"r{s}"), ".b32") for d, s in pairs]
    expected = dict(regs)
    for d, s, _ in copies:
        expected[d] = s.value if isinstance(s, Imm) else regs[s]
    temps: list[str] = []

    def temp(_t: str) -> str:
        temps.append(f"t{len(temps)}")
        return temps[-1]

    state = dict(regs)
    for d, s, _ in sequentialize(copies, temp):
        state[d] = s.value if isinstance(s, Imm) else state[s]
    assert {k: state[k] for k in regs} == expected


# ---------------------------------------------------------------------------
# out of SSA after copy propagation (swap and lost-copy problems)


SWAP = kernel(
    """\tmov.u32 %r1, 1;
\tmov.u32 %r2, 2;
\tmov.u32 %r3, 0;
$L_loop:
\tmov.u32 %r4, %r1;
\tmov.u32 %r1, %r2;
\tmov.u32 %r2, %r4;
\tadd.s32 %r3, %r3, 1;
\tsetp.lt.u32 %p1, %r3, %r21;
\t@%p1 bra $L_loop;
\tshl.b32 %r5, %r1, 8;
\tor.b32 %r6, %r5, %r2;
\tst.global.u32 [%rd4], %r6;
\tret;"""
)

LOST_COPY = kernel(
    """\tmov.u32 %r1, 0;
$L_loop:
\tmov.u32 %r2, %r1;
\tadd.s32 %r1, %r1, 3;
\tsetp.lt.u32 %p1, %r1, %r21;
\t@%p1 bra $L_loop;
\tshl.b32 %r5, %r2, 8;
\tor.b32 %r6, %r5, %r1;
\tst.global.u32 [%rd4], %r6;
\tret;"""
)

BRANCH_PRED = kernel(
    """\tsetp.ne.u32 %p1, %r21, 0;
\tmov.u32 %r1, 0;
$L_loop:
\tmov.pred %p2, %p1;
\tsetp.gt.u32 %p1, %r1, 3;
\tadd.s32 %r1, %r1, 1;
\t@%p2 bra $L_loop;
\tst.global.u32 [%rd4], %r1;
\tret;"""
)


BRX_SWAP = kernel(
    """\tmov.u32 %r1, 1;
\tmov.u32 %r2, 2;
\tmov.u32 %r3, 0;
$L_head:
\tmov.u32 %r4, %r1;
\tmov.u32 %r1, %r2;
\tmov.u32 %r2, %r4;
\tadd.s32 %r3, %r3, 1;
\tsetp.lt.u32 %p1, %r3, %r21;
\tselp.u32 %r9, 0, 1, %p1;
\tbrx.idx %r9, tbl;
$L_exit:
\tshl.b32 %r5, %r1, 8;
\tor.b32 %r6, %r5, %r2;
\tst.global.u32 [%rd4], %r6;
\tret;""",
    regs="\ttbl: .branchtargets $L_head, $L_exit;\n",
)


def run_kernel(text: str, n: int = 40) -> np.ndarray:
    from ptxopt.sim import launch

    out = np.zeros(n, dtype=np.uint32)
    launch(text, "k", 1, n, [out, np.uint32(n)])
    return out


@pytest.mark.parametrize(
    "name, text",
    [
        ("swap", SWAP),
        ("lost_copy", LOST_COPY),
        ("branch_predicate", BRANCH_PRED),
        ("brx_swap", BRX_SWAP),
    ],
)
def test_out_of_ssa_after_copy_propagation(name: str, text: str, tmp_path: Path) -> None:
    mod = lift_module(parse(text, f"{name}.ptx"))
    fn = mod.funcs[0]
    assert propagate_copies(fn) >= 1
    verify_function(fn)
    out = print_ir_module(mod)
    ptxas_check(out, "sm_80", tmp_path)
    assert run_kernel(out).tolist() == run_kernel(text).tolist()


def test_analyses_are_cached_and_invalidated() -> None:
    from ptxopt.analysis.dominators import DomTree
    from ptxopt.analysis.manager import AnalysisManager
    from ptxopt.ir.defuse import DefUse
    from ptxopt.ir.ssa_liveness import SsaLiveness

    fn = lift(LOOP)
    am = AnalysisManager()
    dom = am.get(DomTree, fn)
    du = am.get(DefUse, fn)
    live = am.get(SsaLiveness, fn)
    assert am.get(DomTree, fn) is dom and am.get(DefUse, fn) is du
    # %r2 (loop-invariant) is live around the loop; %r9 is dead
    r2 = next(v for v in fn.values() if v.var == "%r2")
    r9 = next(v for v in fn.values() if v.var == "%r9")
    assert du.is_dead(r9) and not du.is_dead(r2)
    header = next(b for b in fn.blocks if "$L_loop" in b.labels)
    assert r2.id in live.live_in[header.index] and r9.id not in live.live_in[header.index]
    am.invalidate(fn, frozenset({DomTree}))
    assert am.get(DomTree, fn) is dom
    assert am.get(DefUse, fn) is not du


def test_verify_each_catches_a_false_preservation_claim() -> None:
    from ptxopt.analysis.dominators import DomTree
    from ptxopt.analysis.manager import AnalysisManager
    from ptxopt.pipeline import run_pipeline
    from ptxopt.transforms.base import REGISTRY, FunctionPass

    class DropBackEdge(FunctionPass):
        """Turns the loop's conditional back edge into a fall-through, but claims the
        dominator tree is unchanged."""

        name = "test-drop-back-edge"
        preserves = frozenset({DomTree})

        def run(self, func: Func, am: AnalysisManager) -> bool:
            am.get(DomTree, func)
            for b in func.blocks:
                if b.terminator is not None and b.terminator.opcode == "bra" and b.succs:
                    target = b.succs[0]
                    if target.index <= b.index:
                        j = target.preds.index(b)
                        b.insts.pop()
                        b.succs.remove(target)
                        del target.preds[j]
                        for phi in target.phis:
                            del phi.incoming[j]
                        return True
            return False

    REGISTRY[DropBackEdge.name] = DropBackEdge
    try:
        mod = lift_module(parse(LOOP, "loop.ptx"))
        with pytest.raises(VerifyError, match="claims to preserve DomTree"):
            run_pipeline(mod, [DropBackEdge.name], verify_each=True)
    finally:
        del REGISTRY[DropBackEdge.name]
