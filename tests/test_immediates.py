"""ptxopt.ir.immediates (no numpy) gives what ptxopt.ir.fold (the interpreter's
semantics) gives, on every register type and on edge-case immediates and patterns."""

from __future__ import annotations

import math
import struct

import pytest

from ptxopt.ir import fold, immediates
from ptxopt.ptx.ast import Imm
from ptxopt.sim.values import TYPES


def _same_imm(a: Imm | None, b: Imm | None) -> bool:
    if a is None or b is None:
        return a is b
    if a.text != b.text or a.kind != b.kind or type(a.value) is not type(b.value):
        return False
    if isinstance(a.value, float) and math.isnan(a.value):
        return isinstance(b.value, float) and math.isnan(b.value)
    return a.value == b.value


def test_kind_table_matches_the_interpreter() -> None:
    assert immediates.KINDS == {k: (t.kind, t.size) for k, t in TYPES.items()}


def _f32(x: float) -> Imm:
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return Imm(x, f"0f{bits:08X}", "f32")


IMMS = [
    Imm(0, "0"), Imm(1, "1"), Imm(-1, "-1"), Imm(255, "255"), Imm(256, "256"),
    Imm(2**31 - 1, "2147483647"), Imm(2**31, "0x80000000"), Imm(-(2**31), "-2147483648"),
    Imm(2**32, "4294967296"), Imm(2**63, "0x8000000000000000"),
    Imm(2**64 - 1, "0xFFFFFFFFFFFFFFFF"),
    Imm(2**70, "0x400000000000000000"), Imm(-(2**70), "-0x400000000000000000"),
    _f32(1.0), _f32(-0.0), _f32(0.5), _f32(3.4e38), _f32(1e-45), _f32(float("inf")),
    Imm(float("nan"), "0f7FC00000", "f32"), Imm(float("nan"), "0f7F800001", "f32"),
    Imm(float("nan"), "0fFFFFFFFF", "f32"),
    Imm(1.0, "0d3FF0000000000000", "f64"), Imm(-2.5, "0dC004000000000000", "f64"),
    Imm(float("nan"), "0d7FF0000000000001", "f64"), Imm(float("inf"), "0d7FF0000000000000", "f64"),
    Imm(float("nan"), "0D7FF8000000000000", "f64"),
    Imm(1.5, "1.5", "f64"), Imm(-0.0, "-0.0", "f64"), Imm(1e300, "1e300", "f64"),
    Imm(0.1, "0.1", "f64"), Imm(3.0e38, "3.0e38", "f64"), Imm(1e-40, "1e-40", "f64"),
    Imm(float("inf"), "1e999", "f64"), Imm(2.9, "2.9", "f64"), Imm(-2.9, "-2.9", "f64"),
]  # fmt: skip

PATTERNS = [
    0, 1, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000,
    0xFFFFFFFF, 0x3F800000, 0x7F800000, 0xFF800000, 0x7F800001, 0x7FC00000, 0xFFFFFFFF,
    0x00000001, 0x80000001, 0x3FF0000000000000, 0x7FF0000000000000, 0x7FF0000000000001,
    0x7FF8000000000000, 0xFFF8000000000000, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF,
    0x0000000000000001, 1 << 70, (1 << 64) + 5,
]  # fmt: skip


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy on 1e300 as .f32
def test_imm_bits_as_the_interpreter() -> None:
    for t in [*TYPES, ".unknown"]:
        for imm in IMMS:
            assert immediates.imm_bits(imm, t) == fold.imm_bits(imm, t), (imm, t)


def test_imm_for_as_the_interpreter() -> None:
    for t in [*TYPES, ".unknown"]:
        for bits in PATTERNS:
            assert _same_imm(immediates.imm_for(bits, t), fold.imm_for(bits, t)), (bits, t)
