"""The AST's value nodes (spans and operands): equality, hashing, immutability,
copying -- written by hand for start-up time, so checked here against what the
rest of ptxopt relies on."""

from __future__ import annotations

import copy
import pickle

import pytest

from ptxopt.ptx.ast import (
    Addr,
    Expr,
    Function,
    Imm,
    Not,
    Pair,
    ParenList,
    Reg,
    RegImm,
    Sel,
    Sink,
    Span,
    Sym,
    VarDecl,
    Vec,
)
from ptxopt.ptx.opinfo import OpInfo

VALUES = [
    Span("a.ptx", 3, 4),
    Reg("%r1"),
    Sel(Reg("%r1"), "b0", True),
    Imm(3, "3"),
    Imm(1.0, "0f3F800000", "f32"),
    RegImm(Reg("%r2"), 7),
    Sym("g"),
    Sink(),
    Not(Reg("%p1")),
    Vec((Reg("%r1"), Sink())),
    Pair(Reg("%p1"), Reg("%p2")),
    Addr(Reg("%rd1"), 8, (Vec((Reg("%r1"),)),)),
    ParenList((Reg("%r1"), Imm(0, "0"))),
    Expr("g+4"),
    OpInfo("add", (0,), (1, 2), (), ".s32", None, None, *[False] * 5, True, True, "default"),
]


@pytest.mark.parametrize("v", VALUES, ids=lambda v: type(v).__name__)
def test_values_compare_by_class_and_fields(v: object) -> None:
    twin = copy.deepcopy(v)
    assert twin == v and hash(twin) == hash(v) and twin is not v
    assert pickle.loads(pickle.dumps(v)) == v
    assert copy.copy(v) == v
    assert repr(v).startswith(type(v).__name__ + "(")
    assert eval(repr(v)) == v  # the repr names every field
    with pytest.raises(AttributeError, match="immutable"):
        v.x = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="immutable"):
        del v.__slots__  # type: ignore[attr-defined]
    cls = type(v)
    names = cls.__slots__ if hasattr(cls, "__slots__") else cls.__mypyc_attrs__  # type: ignore[attr-defined]
    for name in names:
        with pytest.raises(AttributeError, match="immutable"):
            setattr(v, name, getattr(v, name))  # not even to the same value


def test_field_differences_and_classes_are_unequal() -> None:
    assert Reg("%r1") != Reg("%r2")
    assert Reg("g") != Sym("g")  # same field, other class
    assert Imm(1, "1") != Imm(1, "0x1")  # spelling is part of an immediate
    assert Imm(1, "1") == Imm(1, "1", "int")
    assert Sel(Reg("%r1"), "b0") != Sel(Reg("%r1"), "b0", True)
    assert Addr(Reg("%rd1"), 4) != Addr(Reg("%rd1"), 8)
    assert Addr(Reg("%rd1"), 0, (Reg("%r1"),)) != Addr(Reg("%rd1"))
    assert len({Reg("%r1"), Reg("%r1"), Sym("%r1")}) == 2
    assert Sink() == Sink() and hash(Sink()) == hash(Sink())


def test_a_written_plus_zero_is_kept_but_not_compared() -> None:
    plain, written = Addr(Reg("%rd1")), Addr(Reg("%rd1"), 0, (), True)
    assert plain == written and hash(plain) == hash(written)
    assert (str(plain), str(written)) == ("[%rd1]", "[%rd1+0]")


def test_statement_nodes_are_mutable_and_compared_by_identity() -> None:
    a = VarDecl(".global", ".u32", "g")
    b = VarDecl(".global", ".u32", "g")
    assert a != b and a == a
    a.init = "1"
    assert a.dims == [] and b.dims is not a.dims  # each gets its own list
    f = Function(".entry", "k", [])
    assert f.body is None and f.rets == [] and f.directives == []
    assert "name='k'" in repr(f)


def test_replace_copies_a_record_with_changes() -> None:
    from ptxopt.ptx.ast import DebugLoc, Instr
    from ptxopt.record import replace

    ins = Instr("add", (".s32",), [Reg("%r1"), Reg("%r2"), Imm(1, "1")], Reg("%p1"))
    new = replace(ins, pred=None, pred_neg=True)
    assert (new.opcode, new.mods, new.operands, new.pred, new.pred_neg) == (
        "add", (".s32",), ins.operands, None, True,
    )  # fmt: skip
    assert ins.pred == Reg("%p1") and new is not ins
    loc = DebugLoc(1, 2, 3, "x")
    assert replace(loc, before=(loc,)).before == (loc,) and loc.before == ()
    assert replace(Addr(Reg("%rd1"), 4), offset=8) == Addr(Reg("%rd1"), 8)


def test_an_instruction_copies_pickles_and_prints_its_fields() -> None:
    """``Instr`` (a native class in the compiled build, ``ptxopt.ptx.nodes``) behaves
    as the other statements: mutable, compared by identity, copied and pickled with
    every field, printed with every field."""
    from ptxopt.ptx.ast import Instr

    ins = Instr("ld", (".global", ".u32"), [Reg("%r1"), Addr(Reg("%rd1"), 4)], Reg("%p1"), True)
    ins = Instr(ins.opcode, ins.mods, ins.operands, ins.pred, ins.pred_neg, Span("k.ptx", 3, 5))
    fields = ("opcode", "mods", "operands", "pred", "pred_neg", "span")
    for twin in (copy.copy(ins), copy.deepcopy(ins), pickle.loads(pickle.dumps(ins))):
        assert twin is not ins and twin != ins  # identity
        assert [getattr(twin, f) for f in fields] == [getattr(ins, f) for f in fields]
    assert copy.deepcopy(ins).operands is not ins.operands
    assert eval(repr(ins)).span == ins.span and repr(ins).startswith("Instr(opcode='ld', ")
    assert ins.name == "ld.global.u32"
    ins.pred = None
    ins.operands.append(Imm(0, "0"))
    assert ins.pred is None and len(ins.operands) == 3
