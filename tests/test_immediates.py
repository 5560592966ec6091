"""ptxopt.ir.immediates (numpy-free) against the interpreter's reading of the same
immediates: every type with a bit pattern, literals of every spelling, edge values."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from ptxopt.ir import immediates
from ptxopt.ir.immediates import imm_bits, imm_for
from ptxopt.ptx.ast import Imm
from ptxopt.ptx.parser import parse_number
from ptxopt.sim.values import TYPES, imm_scalar

PLAIN = sorted(t for t, ty in TYPES.items() if ty.kind in ("u", "s", "b", "f", "p"))


def reference_bits(imm: Imm, optype: str) -> int | None:
    """The interpreter's reader: the bits an operand of ``optype`` holds."""
    t = TYPES[optype]
    with np.errstate(all="ignore"):
        try:
            v = imm_scalar(imm, t, None)
        except (ValueError, OverflowError, TypeError):
            return None
        if t.kind == "p":
            return int(bool(v))
        return int(np.array(v, dtype=t.dt).view(t.ut))


def literals(rng: random.Random) -> list[Imm]:
    texts = ["0", "1", "-1", "7", "255", "-128", "65535", "2147483647", "-2147483648"]
    texts += ["4294967295", "9223372036854775807", "18446744073709551615", "0x7FFF"]
    texts += ["0f3F800000", "0fBF800000", "0f7F800000", "0f7FC00001", "0f00000001"]
    texts += ["0d3FF0000000000000", "0d7FF0000000000001", "0dFFF8000000000000"]
    texts += ["0D3FF8000000000000", "0F3FC00000"]  # upper-case prefixes
    texts += ["1.5", "-2.75", "1e300", "-1e-300", "3.4028235e38", "1e39", "0.1", "0.0"]
    texts += [str(rng.getrandbits(64)) for _ in range(20)]
    texts += [f"0f{rng.getrandbits(32):08X}" for _ in range(20)]
    texts += [f"0d{rng.getrandbits(64):016X}" for _ in range(20)]
    texts += [repr(rng.uniform(-1e6, 1e6)) for _ in range(20)]
    out = []
    for t in texts:
        neg = t.startswith("-")
        out.append(parse_number(t[1:] if neg else t, neg))
    return out


def test_the_table_covers_exactly_the_plain_types() -> None:
    assert sorted(immediates._KINDS) == PLAIN
    for t, (kind, size) in immediates._KINDS.items():
        assert (TYPES[t].kind, TYPES[t].size) == (kind, size)


@pytest.mark.parametrize("optype", PLAIN)
def test_imm_bits_reads_what_the_interpreter_reads(optype: str) -> None:
    for imm in literals(random.Random(optype)):
        assert imm_bits(imm, optype) == reference_bits(imm, optype), (imm, optype)
    assert imm_bits(Imm(1, "1"), ".f16") is None and imm_bits(Imm(1, "1"), ".b128") is None


@pytest.mark.parametrize("optype", PLAIN)
def test_imm_for_gives_back_the_bits(optype: str) -> None:
    rng = random.Random(optype)
    width = TYPES[optype].size * 8
    values = [0, 1, (1 << width) - 1, 1 << (width - 1), (1 << (width - 1)) - 1]
    values += [rng.getrandbits(width) for _ in range(200)]
    for bits in values:
        imm = imm_for(bits, optype)
        negative = TYPES[optype].kind == "s" and bits >> (width - 1)
        if optype == ".pred" or width <= 8 and not negative:
            assert imm is None  # no 8-bit instruction types (a negative .s8 is spelled)
            continue
        assert imm is not None
        assert imm_bits(imm, optype) == reference_bits(imm, optype) == bits
        if TYPES[optype].kind == "f":
            expect = float(np.array(bits, dtype=TYPES[optype].ut).view(TYPES[optype].dt))
            assert math.isnan(imm.value) if math.isnan(expect) else imm.value == expect
        elif TYPES[optype].kind == "s":
            assert imm.value == bits - ((bits >> (width - 1)) << width)
        else:
            assert imm.value == bits
            # what the printer writes: decimal below 2^31, hex from there on
            assert imm.text == (str(bits) if bits < 1 << 31 else f"0x{bits:X}")
        neg = imm.text.startswith("-")
        assert parse_number(imm.text[1:] if neg else imm.text, neg).value == imm.value or (
            math.isnan(imm.value)
        )
