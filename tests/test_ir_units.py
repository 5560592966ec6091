"""Smaller pieces of the IR: the SSA dump, register slots of operands, scope renaming,
editing guarded instructions and every implicit operand ``replace_uses`` must follow."""

from __future__ import annotations

import re

import pytest

from ptxopt.ir.core import Func
from ptxopt.ir.dump import dump_module
from ptxopt.ir.edit import fresh_var, make_inst, replace_uses
from ptxopt.ir.lift import lift_module
from ptxopt.ir.lower import print_ir_module
from ptxopt.ir.operands import reg_names, regs_of
from ptxopt.ptx.ast import Addr, Imm, Not, Pair, ParenList, Reg, Vec
from ptxopt.ptx.parser import parse

KERNEL = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, %tid.x;
\tsetp.lt.u32 %p1, %r1, 4;
\tmov.u32 %r2, 7;
\t@%p1 mov.u32 %r2, %r1;
\tadd.cc.u32 %r3, %r1, %r2;
\taddc.u32 %r4, %r1, 0;
\t@%p1 bra L;
\tmov.u32 %r3, 1;
L:
\tst.global.v2.u32 [%rd1], {%r3, %r4};
\tret;
}
"""


def _fn() -> Func:
    return lift_module(parse(KERNEL, "u.ptx")).funcs[0]


def test_dump_shows_blocks_phis_and_implicit_operands() -> None:
    text = dump_module(lift_module(parse(KERNEL, "u.ptx")))
    assert text.startswith("function k (3 blocks)\nbb0:    preds: -    succs: bb2 bb1\n")
    assert re.search(r"@%p1\.\d+ mov\.u32 %r2\.\d+, %r1\.\d+;    // line 13; keeps %r2\.\d+", text)
    assert re.search(
        r"add\.cc\.u32 %r3\.\d+, %r1\.\d+, %r2\.\d+;    // line 14; cc-out %cc#\.\d+", text
    )
    assert re.search(r"addc\.u32 %r4\.\d+, %r1\.\d+, 0;    // line 15; cc-in %cc#\.\d+\n", text)
    assert re.search(r"bb2 \[L\]:    preds: bb0 bb1    succs: -\n", text)
    assert re.search(r"%r3\.\d+ = phi \[%r3\.\d+, bb0\], \[%r3\.\d+, bb1\]", text)
    assert "mov.u32 %r1." in text and "%tid.x;" in text  # special registers by name
    assert text.endswith("ret;    // line 20\n")


def test_register_slots_of_every_operand_shape() -> None:
    ops = [
        Reg("%a"),
        Addr(Reg("%b"), 8, ()),
        Addr(None, 4, ()),
        Vec((Reg("%c"), Imm(1, "1"), Reg("%d"))),
        Pair(Reg("%e"), Reg("%f")),
        Not(Reg("%g")),
        ParenList((Reg("%h"), Reg("%i"))),
        Imm(5, "5"),
    ]
    got = [r.name for op in ops for r in regs_of(op)]
    assert got == ["%a", "%b", "%c", "%d", "%e", "%f", "%g", "%h", "%i"]
    names: list[str] = []
    for op in ops:
        reg_names(op, names)
    assert names == got


def test_scope_renaming_skips_names_already_taken() -> None:
    text = KERNEL.replace("\t.reg .b64 %rd<4>;", "\t.reg .b64 %rd<4>;\n\t.reg .b32 %r3_1;").replace(
        "\tret;",
        "\t{\n\t.reg .b32 %r3;\n\tmov.u32 %r3, 5;\n\tmov.b64 %rd2, {%r3, %r4};\n"
        "\tst.global.u64 [%rd1+8], %rd2;\n\t}\n\tmov.u32 %r3_1, 2;\n\tret;",
    )
    out = print_ir_module(lift_module(parse(text, "s.ptx")))
    assert "%r3_2" in out and "{%r3_2, %r4}" in out.replace("\t", " ").replace(", ", ", ")
    assert "mov.u32 \t%r3_1, 2;" in out


def test_a_guarded_instruction_needs_its_old_values() -> None:
    fn = _fn()
    p = next(d for i in fn.instructions() for d in i.defs if d.var == "%p1")
    r1 = next(d for i in fn.instructions() for d in i.defs if d.var == "%r1")
    var = fresh_var(fn, ".b32")
    with pytest.raises(
        ValueError, match="^a guarded instruction needs one old value per destination$"
    ):
        make_inst(fn, "add", [".u32"], [var], [r1, Imm(1, "1")], pred=p)
    one = Imm(1, "1")
    inst = make_inst(fn, "add", [".u32"], [var], [r1, one], pred=p, pred_neg=True, olds=[r1])
    assert inst.ast.pred == Reg("%p1") and inst.ast.pred_neg and inst.olds == [r1]
    assert inst.pred is p and inst.defs[0].var == var


def test_replace_uses_follows_guards_olds_carries_and_phis() -> None:
    fn = _fn()
    insts = list(fn.instructions())
    guarded = next(i for i in insts if i.ast.pred is not None and i.opcode == "mov")
    old = guarded.olds[0] if guarded.olds else None
    assert old is not None
    new = next(d for i in insts for d in i.defs if d.var == "%r1")
    assert replace_uses(fn, old, new) >= 1 and guarded.olds == [new]
    addc = next(i for i in insts if i.opcode == "addc")
    cc = addc.carry_in
    assert cc is not None
    fresh = next(i for i in insts if i.opcode == "add").carry_out
    assert fresh is cc
    phi = fn.blocks[2].phis[0]
    first = phi.incoming[0]
    assert replace_uses(fn, first, new) >= 1 and phi.incoming[0] is new
    assert replace_uses(fn, new, Imm(3, "3")) >= 1  # ordinary slots only
    assert guarded.olds == [new] and phi.incoming[0] is new


SPECIALS_AND_UNDEF = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
\t.reg .b32 %r<10>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, %tid.x;
\tmov.u64 %rd2, %globaltimer;
\tmov.u32 %r4, %lanemask_lt;
\tadd.u32 %r5, %r1, 1;
\tbra B;
B:
\tadd.u32 %r3, %r9, %r5;
\tadd.u32 %r6, %r3, %r1;
\tst.global.u32 [%rd1], %r6;
\tret;
}
"""


def test_special_registers_get_their_types() -> None:
    fn = lift_module(parse(SPECIALS_AND_UNDEF)).funcs[0]
    types = {name: v.type for name, v in fn.specials.items()}
    assert types == {"%tid.x": ".u32", "%globaltimer": ".u64", "%lanemask_lt": ".b32"}


def test_ssa_liveness_past_an_undefined_operand_and_within_a_block() -> None:
    from ptxopt.ir.ssa_liveness import SsaLiveness

    fn = lift_module(parse(SPECIALS_AND_UNDEF)).funcs[0]
    live = SsaLiveness(fn)
    val = {v.var: v for v in fn.values() if v.kind == "inst"}
    r1, r3, r5 = val["%r1"], val["%r3"], val["%r5"]
    b = r3.block
    assert b is not None and b.index == 1
    # %r5 is read after the undefined %r9 in B: live out of the entry block
    assert r5.id in live.live_out[0] and r5.id in live.live_in[1]
    assert r1.id in live.live_out[0]
    # %r3 is defined at B's position 0 and read at position 1, and nowhere else
    assert live.live_after(r3, 1, 0) and not live.live_after(r3, 1, 1)
    assert not live.live_after(r5, 1, 0)


def test_new_def_belongs_to_its_instruction_and_block() -> None:
    from ptxopt.ir.edit import new_def

    fn = lift_module(parse(KERNEL)).funcs[0]
    inst = next(i for i in fn.instructions() if i.defs)
    v = new_def(fn, inst.defs[0].var, inst)
    assert v.inst is inst and v.block is inst.block and v.kind == "inst"
    other = fn.blocks[-1]
    assert new_def(fn, inst.defs[0].var, inst, other).block is other


def test_rebuild_renames_texture_coordinates_and_negated_predicates() -> None:
    from ptxopt.ir.operands import rebuild
    from ptxopt.ptx.ast import Sel, Sym

    tex = Addr(Sym("t"), 0, (Vec((Reg("%r1"), Reg("%r2"))),))
    assert rebuild(tex, iter(["%r5", "%r6"])) == Addr(Sym("t"), 0, (Vec((Reg("%r5"), Reg("%r6"))),))
    assert rebuild(Not(Reg("%p1")), iter(["%p2"])) == Not(Reg("%p2"))
    assert rebuild(Sel(Reg("%r1"), "b1"), iter(["%r3"])) == Sel(Reg("%r3"), "b1")
    one = Imm(1, "1")
    for op, what in (
        (Not(Reg("%p1")), "a negated predicate"),
        (Sel(Reg("%r1"), "b1"), "a selected video operand"),
    ):
        with pytest.raises(ValueError, match=f"^cannot fold an immediate into {what}$"):
            rebuild(op, iter([one]))


def test_a_type_with_only_unnumbered_registers_is_declared() -> None:
    text = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u32 n)
{
\t.reg .b32 %r<3>;
\t.reg .pred %p, %q;
\tld.param.u32 %r1, [n];
\tsetp.eq.u32 %p, %r1, 0;
\tsetp.eq.u32 %q, %r1, 1;
\t@%p bra D;
\t@%q bra D;
D:
\tret;
}
"""
    out = print_ir_module(lift_module(parse(text)))
    decl = next(ln.strip() for ln in out.splitlines() if ".reg .pred" in ln)
    assert decl in (".reg .pred %p, %q;", ".reg .pred %q, %p;")


def test_a_branch_into_a_nested_block_says_where_the_label_is() -> None:
    from ptxopt.ptx.ast import PtxError

    text = KERNEL.replace("\tret;", "\tbra IN;\n\t{\nIN:\n\tret;\n\t}\n\tret;", 1)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln == "IN:")
    with pytest.raises(PtxError, match=f"declared inside a nested block at line {line};"):
        lift_module(parse(text, "s.ptx"))


def test_scope_renaming_reaches_pairs_and_selectors() -> None:
    """Only the second register of a ``%p|%q`` pair and a selected video operand are
    shadowed in the nested block: each keeps its other parts."""
    text = KERNEL.replace(
        "\tret;",
        "\t{\n\t.reg .pred %p2;\n\t.reg .b32 %r4;\n\tmov.u32 %r4, 3;\n"
        "\tsetp.lt.u32 %p1|%p2, %r4, 9;\n"
        "\tvadd.u32.u32.u32 %r5, %r4.b1, %r2, %r2;\n\t}\n\tret;",
        1,
    )
    out = print_ir_module(lift_module(parse(text, "s.ptx"))).replace("\t", "")
    assert "|%p2_1, %r4_1, 9;" in out and "%r4_1.b1, " in out
