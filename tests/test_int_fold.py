"""The numpy-free integer folder (:mod:`ptxopt.ir.int_fold`) against the interpreter
(:func:`ptxopt.ir.fold.evaluate`): every form it answers, on edge and random values,
with register and immediate sources; the forms it leaves to the interpreter."""

from __future__ import annotations

import random

import pytest

from ptxopt.ir.fold import evaluate
from ptxopt.ir.int_fold import DEFER, evaluate_int
from ptxopt.ptx.ast import Imm, Instr, Reg

WIDTHS = (16, 32, 64)


def edge_values(width: int) -> list[int]:
    m = (1 << width) - 1
    top = 1 << (width - 1)
    return [0, 1, 2, m, m - 1, top, top - 1, top + 1, 0x5A5A5A5A5A5A5A5A & m]


def values(width: int, rng: random.Random, n: int = 12) -> list[int]:
    return edge_values(width) + [rng.getrandbits(width) for _ in range(n)]


def reg_type(width: int) -> str:
    return f".b{width}"


def check(ins: Instr, types: dict[str, str], inputs: dict[str, int]) -> None:
    quick = evaluate_int(ins, types, inputs)
    assert quick is not DEFER, ins
    res = evaluate(ins, types, inputs)
    assert res is not None, ins
    want = int(res["%d"][0])
    assert quick == want, (ins, inputs, quick, want)


def binary_cases(opcode: str, mods: tuple[str, ...], width: int, dtype: str, seed: int) -> None:
    rng = random.Random(seed)
    vals = values(width, rng)
    types = {"%d": dtype, "%a": reg_type(width), "%b": reg_type(width)}
    for a in vals:
        for b in rng.sample(vals, 6):
            regs = Instr(opcode, mods, [Reg("%d"), Reg("%a"), Reg("%b")])
            check(regs, types, {"%a": a, "%b": b})
            # an immediate second source, written as the signed value it stands for
            t = mods[-1]
            sv = b - (1 << width) if t[1] == "s" and b >> (width - 1) else b
            imm = Instr(opcode, mods, [Reg("%d"), Reg("%a"), Imm(sv, str(sv), "int")])
            check(imm, {"%d": dtype, "%a": reg_type(width)}, {"%a": a})


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("opcode", ["add", "sub", "mul"])
@pytest.mark.parametrize("sign", ["u", "s"])
def test_arithmetic(opcode: str, sign: str, width: int) -> None:
    mods = (".lo", f".{sign}{width}") if opcode == "mul" else (f".{sign}{width}",)
    binary_cases(opcode, mods, width, reg_type(width), seed=width)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("opcode", ["and", "or", "xor"])
def test_logic(opcode: str, width: int) -> None:
    binary_cases(opcode, (f".b{width}",), width, reg_type(width), seed=width + 1)


CMPS = {
    "s": (".eq", ".ne", ".lt", ".le", ".gt", ".ge"),
    "u": (".eq", ".ne", ".lo", ".ls", ".hi", ".hs"),
    "b": (".eq", ".ne"),
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", ["s", "u", "b"])
def test_setp(kind: str, width: int) -> None:
    for cmp in CMPS[kind]:
        binary_cases("setp", (cmp, f".{kind}{width}"), width, ".pred", seed=width + 2)


@pytest.mark.parametrize("src", [f".{k}{w}" for k in "us" for w in WIDTHS])
@pytest.mark.parametrize("dst", [f".{k}{w}" for k in "us" for w in WIDTHS])
def test_integer_cvt(dst: str, src: str) -> None:
    rng = random.Random(7)
    dw, sw = int(dst[2:]), int(src[2:])
    for a in values(sw, rng):
        ins = Instr("cvt", (dst, src), [Reg("%d"), Reg("%a")])
        check(ins, {"%d": reg_type(dw), "%a": reg_type(sw)}, {"%a": a})


@pytest.mark.parametrize(
    "opcode, mods, types",
    [
        ("add", (".sat", ".s32"), None),  # saturation
        ("add", (".cc", ".u32"), None),  # carry
        ("mul", (".hi", ".u32"), None),
        ("mul", (".wide", ".u32"), None),
        ("and", (".u32",), None),  # logic ops take .b types (the interpreter decides)
        ("add", (".b32",), None),
        ("setp", (".lt", ".u32"), None),  # (left to the interpreter)
        ("setp", (".lo", ".s32"), None),
        ("setp", (".lt", ".b32"), None),
        ("setp", (".eq", ".f32"), None),
        ("cvt", (".rni", ".s32"), None),
        ("cvt", (".u8", ".u32"), None),
        ("cvt", (".sat", ".u16"), None),
        ("add", (".u32",), {"%d": ".b64", "%a": ".b32", "%b": ".b32"}),  # wider register
        ("add", (".u32",), {"%d": ".b32", "%a": ".b16", "%b": ".b32"}),
        ("min", (".u32",), None),
    ],
)
def test_other_forms_go_to_the_interpreter(
    opcode: str, mods: tuple[str, ...], types: dict[str, str] | None
) -> None:
    ops: list[object] = [Reg("%d"), Reg("%a"), Reg("%b")]
    if opcode == "cvt":
        ops = ops[:2] if len(mods) == 2 else ops
    types = types or {"%d": ".b32", "%a": ".b32", "%b": ".b32"}
    ins = Instr(opcode, mods, ops)  # type: ignore[arg-type]
    assert evaluate_int(ins, types, {"%a": 3, "%b": 5}) is DEFER


def test_guarded_and_two_destination_setp_go_to_the_interpreter() -> None:
    from ptxopt.ptx.ast import Pair

    types = {"%d": ".pred", "%e": ".pred", "%a": ".b32", "%b": ".b32", "%p": ".pred"}
    guarded = Instr("setp", (".eq", ".s32"), [Reg("%d"), Reg("%a"), Reg("%b")], Reg("%p"))
    assert evaluate_int(guarded, types, {}) is DEFER
    pair = Instr("setp", (".eq", ".s32"), [Pair(Reg("%d"), Reg("%e")), Reg("%a"), Reg("%b")])
    assert evaluate_int(pair, types, {}) is DEFER
    combined = Instr("setp", (".eq", ".and", ".s32"), [Reg("%d"), Reg("%a"), Reg("%b"), Reg("%p")])
    assert evaluate_int(combined, types, {}) is DEFER
