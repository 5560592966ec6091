"""Initializer trees and layouts (ptxopt.ptx.initializer); the rules themselves are
checked against ptxas in tests/test_validate.py (shapes) and against the bytes of
ptxas's .nv.global.init in tests/test_sim_launch.py (layouts)."""

from __future__ import annotations

import pytest

from ptxopt.ptx.initializer import first_dim, layout, parse_init, plain_ints, shape_error


def test_trees() -> None:
    assert parse_init("5") == "5"
    assert parse_init("generic(x)+4") == "generic(x)+4"
    assert parse_init("{}") == []
    assert parse_init("{1, 2}") == ["1", "2"]
    assert parse_init("{{1}, {}, {x+4, 0f3F800000}}") == [["1"], [], ["x+4", "0f3F800000"]]
    assert parse_init("{ {1 , 2} }") == [["1", "2"]]


@pytest.mark.parametrize("text", ["{1, 2, 3}", "{}", "{1,2}", "{ 7 }", "{0}"])
def test_the_table_path_agrees_with_the_tree(text: str) -> None:
    general = text.replace(" ", "\t")  # a tab keeps it off the table path
    assert plain_ints(text) and not plain_ints(general) or text == general
    assert parse_init(text) == parse_init(general)
    assert first_dim(text) == first_dim(general) == len(parse_init(text))


def test_shapes() -> None:
    assert shape_error(parse_init("{{1}, {2, 3}}"), [2, 2], 0) is None
    assert "3 elements" in str(shape_error(parse_init("{1, 2, 3}"), [2], 0))
    assert "2-vector" in str(shape_error(parse_init("{{1}}"), [1], 2))
    assert "braces" in str(shape_error(parse_init("{1}"), [], 0))
    assert "scalar" in str(shape_error(parse_init("7"), [3], 0))
    assert "unspecified size" in str(shape_error(parse_init("{}"), [None], 0))
    assert shape_error(parse_init("{{}}"), [None, 2], 0) is None


def test_layouts() -> None:
    def byte(t: str) -> bytes | None:
        return int(t).to_bytes(1, "little") if t.isdigit() else None

    assert layout("{{1}, {4, 5}}", [2, 3], 0, 1, byte) == bytes([1, 0, 0, 4, 5, 0])
    assert layout("{{1, 2}, {3, 4}}", [3], 2, 1, byte) == bytes([1, 2, 3, 4, 0, 0])
    assert layout("{9, 8}", [None], 0, 1, byte) == bytes([9, 8])
    assert layout("{}", [4], 0, 1, byte) == bytes(4)
    assert layout("3", [], 0, 1, byte) == bytes([3])
    assert layout("{1, x}", [2], 0, 1, byte) is None  # an item the caller cannot encode
    assert layout("{1, 2, 3}", [2], 0, 1, byte) is None  # a shape ptxas refuses


def test_the_answer_kept_for_a_large_table_is_that_tables() -> None:
    """plain_ints keeps its last answer for a large text: asking about another text of
    the same length, or an equal copy, must not get a stale answer."""
    plain = "{" + ", ".join(["1"] * 3000) + "}"
    other = plain[:-2] + "x}"  # the same length, not a list of integers
    copy = "".join(["{", plain[1:]])
    for _ in range(2):
        assert plain_ints(plain) and not plain_ints(other) and plain_ints(copy)
        assert not plain_ints(other) and plain_ints(plain)
