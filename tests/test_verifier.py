"""The IR verifier, rule by rule: each test breaks one invariant of a freshly lifted
(and valid) function and expects the rule's message."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ptxopt.ir.core import Func, Inst, Value
from ptxopt.ir.lift import lift_module
from ptxopt.ir.verify import VerifyError, verify_function
from ptxopt.ptx.parser import parse

TEXT = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 n)
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<16>;
\t.reg .b64 %rd<4>;
\t.reg .f32 %f<4>;
\tld.param.u32 %r1, [n];
\tmov.u32 %r2, %tid.x;
\tadd.u32 %r3, %r2, 1;
\tmul.lo.u32 %r4, %r3, %r1;
\tsetp.lt.u32 %p1, %r2, 8;
\t@%p1 bra ELSE;
\tmov.u32 %r5, 1;
\tbra.uni JOIN;
ELSE:
\tmov.u32 %r5, 2;
JOIN:
\tmov.u32 %r6, 0;
LOOP:
\tadd.u32 %r6, %r6, %r5;
\tsetp.lt.u32 %p2, %r6, %r4;
\t@%p2 bra LOOP;
\tld.param.u64 %rd1, [out];
\tst.global.u32 [%rd1], %r6;
\tret;
}
"""


def _fn() -> Func:
    fn = lift_module(parse(TEXT, "v.ptx")).funcs[0]
    verify_function(fn)  # the unbroken function is valid
    return fn


def _inst(fn: Func, opcode: str, var: str | None = None) -> Inst:
    return next(
        i
        for i in fn.instructions()
        if i.opcode == opcode and (var is None or any(d.var == var for d in i.defs))
    )


def _block(fn: Func, label: str) -> int:
    return next(b.index for b in fn.blocks if label in b.labels)


def _break_index(fn: Func) -> None:
    fn.blocks[1].index = 7


def _break_pred_list(fn: Func) -> None:
    b = fn.blocks[_block(fn, "ELSE")]
    b.preds.clear()


def _break_succ_list(fn: Func) -> None:
    b = fn.blocks[_block(fn, "ELSE")]
    b.preds.append(fn.blocks[_block(fn, "LOOP")])


def _stale_block(fn: Func) -> None:
    _inst(fn, "mul").block = fn.blocks[-1]


def _mid_terminator(fn: Func) -> None:
    b = fn.blocks[0]
    b.insts.insert(1, b.insts[-1])


def _phi_arity(fn: Func) -> None:
    phi = fn.blocks[_block(fn, "JOIN")].phis[0]
    phi.incoming.append(phi.incoming[0])


def _defined_twice(fn: Func) -> None:
    add, mul = _inst(fn, "add", "%r3"), _inst(fn, "mul")
    mul.defs = [add.defs[0]]


def _undefined(fn: Func) -> None:
    stranger = Value(10_000, "%r9", ".b32", "inst")
    _inst(fn, "mul").uses[0] = stranger


def _use_before_def_in_block(fn: Func) -> None:
    add, mul = _inst(fn, "add", "%r3"), _inst(fn, "mul")
    add.uses[0] = mul.defs[0]  # the mul comes after the add in the same block


def _uses_own_result(fn: Func) -> None:
    mul = _inst(fn, "mul")
    mul.uses[0] = mul.defs[0]


def _not_dominating(fn: Func) -> None:
    then_def = next(i.defs[0] for i in fn.blocks[_block(fn, "ELSE")].insts if i.opcode == "mov")
    _inst(fn, "mul").uses[0] = then_def


def _phi_not_dominating(fn: Func) -> None:
    phi = fn.blocks[_block(fn, "JOIN")].phis[0]
    else_def = next(i.defs[0] for i in fn.blocks[_block(fn, "ELSE")].insts if i.opcode == "mov")
    # the phi's first operand comes from the then-arm, where ELSE's value is not defined
    k = next(
        j
        for j, p in enumerate(fn.blocks[_block(fn, "JOIN")].preds)
        if p.index != _block(fn, "ELSE")
    )
    phi.incoming[k] = else_def


def _non_predicate_guard(fn: Func) -> None:
    bra = next(i for i in fn.instructions() if i.opcode == "bra" and i.pred is not None)
    bra.pred = _inst(fn, "mul").defs[0]


def _wrong_def_class(fn: Func) -> None:
    _inst(fn, "mul").defs[0].type = ".f64"


def _phi_mixes_classes(fn: Func) -> None:
    phi = fn.blocks[_block(fn, "JOIN")].phis[0]
    phi.incoming[0] = _inst(fn, "setp").defs[0]  # a predicate into a .b32 phi


RULES: list[tuple[Callable[[Func], None], str]] = [
    (_break_index, "has index"),
    (_break_pred_list, "missing from predecessors"),
    (_break_succ_list, "missing from successors"),
    (_stale_block, "stale block link"),
    (_mid_terminator, "in the middle of block"),
    (_phi_arity, "predecessors"),
    (_defined_twice, "defined twice"),
    (_undefined, "not defined in the function"),
    (_use_before_def_in_block, "before its definition"),
    (_uses_own_result, "before its definition"),
    (_not_dominating, "does not dominate"),
    (_phi_not_dominating, "does not dominate"),
    (_non_predicate_guard, "non-predicate"),
    (_wrong_def_class, "wrong register class"),
    (_phi_mixes_classes, "mixes register classes"),
]


@pytest.mark.parametrize("breaker,message", RULES, ids=[r[0].__name__.lstrip("_") for r in RULES])
def test_each_rule_rejects_its_violation(breaker: Callable[[Func], None], message: str) -> None:
    fn = _fn()
    breaker(fn)
    with pytest.raises(VerifyError, match=message):
        verify_function(fn)
