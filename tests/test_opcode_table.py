"""The opcode table is well formed, row by row: operand patterns use only the role
letters, optional operands are trailing, every field holds one of its values, every
row's forms can be looked up."""

from __future__ import annotations

import pytest

from ptxopt.ptx import opcodes
from ptxopt.ptx.opcodes import _parse_pattern, _specs  # the table itself is under test

SPECS = _specs()
ROLES = set("duxa")
DIVERGENCE = {"default", "varying", "uniform", "address", "elect", "call"}


@pytest.mark.parametrize("spec", SPECS, ids=[s.key for s in SPECS])
def test_every_row_is_well_formed(spec: object) -> None:
    s = spec
    assert isinstance(s.pattern, str)  # type: ignore[attr-defined]
    toks = s.pattern.split()  # type: ignore[attr-defined]
    assert all(t.rstrip("?") in ROLES for t in toks), s.pattern  # type: ignore[attr-defined]
    for _, pat in s.by_mod:  # type: ignore[attr-defined]
        assert all(t.rstrip("?") in ROLES for t in pat.split()), pat
    forms = _parse_pattern(s.pattern)  # type: ignore[attr-defined]
    assert forms and all(len(v) == n for n, v in forms.items())
    assert s.mem in (None, "read", "write", "rw")  # type: ignore[attr-defined]
    assert s.ur in ("", "int", "num", "any")  # type: ignore[attr-defined]
    assert s.divergence in DIVERGENCE  # type: ignore[attr-defined]
    assert all(d in DIVERGENCE for _, d in s.div_by_mod)  # type: ignore[attr-defined]
    for flag in ("side_effects", "barrier", "terminator", "commutative", "carry_in", "cc",
                 "convergent", "invariant_mem", "stateful"):  # fmt: skip
        assert type(getattr(s, flag)) is bool, flag
    if s.barrier:  # type: ignore[attr-defined]
        assert s.side_effects  # type: ignore[attr-defined]


def test_keys_are_unique_and_supported() -> None:
    keys = [s.key for s in SPECS]
    assert len(keys) == len(set(keys))
    assert opcodes.supported_opcodes() == sorted([*keys, "call"])
