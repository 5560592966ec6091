"""SSA construction details of the lifter (``ptxopt.ir.lift``): which value each read
gets -- special registers, registers no definition reaches, tied old values of
predicated and read-modify-write definitions, the carry flag -- and its own
diagnostics for input that reaches it unvalidated."""

from __future__ import annotations

import pytest

from ptxopt.ir.core import CARRY, Inst
from ptxopt.ir.lift import lift_module
from ptxopt.ptx.ast import PtxError
from ptxopt.ptx.parser import parse

HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"


def lift(body: str, regs: str = ".reg .b32 %r<8>;\n.reg .pred %p<3>;") -> list[Inst]:
    text = f"{HEAD}.visible .entry k(.param .u64 out)\n{{\n{regs}\n{body}\nret;\n}}\n"
    (func,) = lift_module(parse(text, "t.ptx")).funcs
    return [i for b in func.blocks for i in b.insts]


def test_special_registers_read_as_one_value_each() -> None:
    a, b, c, _ret = lift("mov.u32 %r1, %tid.x;\nmov.u32 %r2, %tid.x;\nmov.u32 %r3, %ctaid.x;")
    assert a.uses[0] is b.uses[0]
    assert a.uses[0].kind == "special" and a.uses[0].var == "%tid.x"
    assert c.uses[0] is not a.uses[0] and c.uses[0].var == "%ctaid.x"


def test_reads_get_the_nearest_definition_and_undef_before_any() -> None:
    a, b, c, _ret = lift("add.u32 %r1, %r2, 1;\nmov.u32 %r2, 5;\nadd.u32 %r3, %r2, %r1;")
    assert a.uses[0].kind == "undef" and a.uses[0].var == "%r2"
    assert c.uses[0] is b.defs[0]
    assert c.uses[1] is a.defs[0]


def test_predicated_definition_ties_the_old_value() -> None:
    a, s, b, _ret = lift("mov.u32 %r1, 3;\nsetp.ne.u32 %p1, %r1, 0;\n@%p1 mov.u32 %r1, 4;")
    assert b.pred is s.defs[0]
    assert b.olds == [a.defs[0]]
    assert b.defs[0] is not a.defs[0]


def test_carry_flag_flows_from_add_cc_to_addc() -> None:
    a, b, _ret = lift("add.cc.u32 %r1, %r2, 1;\naddc.u32 %r3, %r2, 0;")
    assert a.carry_out is not None and a.carry_out.var == CARRY
    assert b.carry_in is a.carry_out
    assert b.uses[0] is a.uses[0]  # the same undefined %r2


def test_phi_at_a_join_reads_each_incoming_definition() -> None:
    text = (
        f"{HEAD}.visible .entry k(.param .u64 out)\n{{\n.reg .b32 %r<4>;\n"
        ".reg .pred %p<2>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [out];\n"
        "mov.u32 %r1, %tid.x;\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 bra L;\n"
        "mov.u32 %r1, 9;\nL:\nst.global.u32 [%rd1], %r1;\nret;\n}\n"
    )
    (func,) = lift_module(parse(text, "t.ptx")).funcs
    join = next(b for b in func.blocks if "L" in b.labels)
    (phi,) = join.phis
    assert phi.result.var == "%r1"
    kinds = sorted(v.inst.ast.operands[1].__class__.__name__ for v in phi.incoming)
    assert kinds == ["Imm", "Reg"]
    assert join.insts[0].uses[-1] is phi.result


def test_writing_a_special_register_is_an_error_at_its_line() -> None:
    # the validator says so first; the lifter too, for an unvalidated tree
    with pytest.raises(PtxError, match=r"cannot write to '%tid.x'") as e:
        lift("mov.u32 %r1, 1;\nmov.u32 %tid.x, %r1;")
    assert e.value.span is not None and e.value.span.line == 9
