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


# Expected values written from the PTX ISA's descriptions, not from the interpreter:
# add/sub/mul.lo keep the low n bits; setp on .s types compares two's-complement
# values, lo/ls/hi/hs compare unsigned; cvt between integer types sign- or
# zero-extends by the source type, then keeps the destination's low bits.
ISA_CASES = [
    ("add", (".u16",), 0xFFFF, 1, 0x0000),
    ("add", (".s32",), 0x7FFFFFFF, 1, 0x80000000),
    ("sub", (".u32",), 0, 1, 0xFFFFFFFF),
    ("sub", (".s64",), 0x8000000000000000, 1, 0x7FFFFFFFFFFFFFFF),
    ("mul", (".lo", ".s32"), 0xFFFFFFFF, 0xFFFFFFFF, 1),  # -1 * -1
    ("mul", (".lo", ".u16"), 0x100, 0x100, 0),
    ("xor", (".b32",), 0xF0F0F0F0, 0xFFFF0000, 0x0F0FF0F0),
    ("setp", (".lt", ".s32"), 0xFFFFFFFF, 0, 1),  # -1 < 0
    ("setp", (".lo", ".u32"), 0xFFFFFFFF, 0, 0),  # 2^32-1 < 0 unsigned: no
    ("setp", (".ge", ".s16"), 0x8000, 0x7FFF, 0),  # -32768 >= 32767: no
    ("setp", (".hs", ".u64"), 1 << 63, (1 << 63) - 1, 1),
    ("setp", (".ne", ".b16"), 0x1234, 0x1234, 0),
]


@pytest.mark.parametrize("opcode, mods, a, b, want", ISA_CASES)
def test_isa_values(opcode: str, mods: tuple[str, ...], a: int, b: int, want: int) -> None:
    width = int(mods[-1][2:])
    dtype = ".pred" if opcode == "setp" else reg_type(width)
    types = {"%d": dtype, "%a": reg_type(width), "%b": reg_type(width)}
    ins = Instr(opcode, mods, [Reg("%d"), Reg("%a"), Reg("%b")])
    assert evaluate_int(ins, types, {"%a": a, "%b": b}) == want


@pytest.mark.parametrize(
    "dst, src, a, want",
    [
        (".s32", ".s16", 0x8000, 0xFFFF8000),  # sign extension
        (".u32", ".s16", 0x8000, 0xFFFF8000),  # by the source's signedness
        (".s32", ".u16", 0x8000, 0x00008000),  # zero extension
        (".u16", ".u32", 0x12345, 0x2345),  # truncation
        (".s16", ".s64", 0xFFFFFFFF80000000, 0x0000),
        (".u64", ".s32", 0x80000000, 0xFFFFFFFF80000000),
    ],
)
def test_isa_integer_cvt(dst: str, src: str, a: int, want: int) -> None:
    ins = Instr("cvt", (dst, src), [Reg("%d"), Reg("%a")])
    types = {"%d": reg_type(int(dst[2:])), "%a": reg_type(int(src[2:]))}
    assert evaluate_int(ins, types, {"%a": a}) == want
