"""The structure of a variable's initializer, as ptxas reads it.

An initializer (the text after ``=``, as the parser keeps it) is a scalar item or a
braced list of initializers.  Its nesting follows the declaration: one list level
per array dimension, then, for a vector type, a list of exactly as many scalars as
the vector has components.  Measured on ptxas 13.0.88:

* a level may hold fewer items than its dimension (the rest is zero, an empty
  ``{}`` included), never more ("Greater number of elements in array
  initializer"); a multi-dimensional array needs the nested braces
  (``x[2][2] = {1, 2, 3, 4}`` has four items at the first level: refused);
* a vector level holds exactly its component count ("Incorrect number of elements
  in vector initializer");
* a list where a scalar belongs, or a scalar where a list belongs, is "Initial
  value type mismatch";
* an unsized first dimension (``x[]``, or ``x[0]``, which ptxas also sizes from the
  initializer) takes its size from the item count, so an empty list there is a
  type mismatch.

:func:`parse_init` builds the tree (a flat list of decimal integers -- the large
data tables -- with one ``str.split``), :func:`shape_error` checks it against a
declaration and :func:`first_dim` sizes an unsized array; the interpreter lays the
tree out in memory with :func:`layout` (the interpreter, and the pass that folds
loads from ``.const`` tables).
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = [
    "InitNode",
    "count_error",
    "first_dim",
    "layout",
    "parse_init",
    "plain_ints",
    "shape_error",
]

InitNode = str | list["InitNode"]

_PLAIN_INTS = re.compile(r"\{[0-9, ]*\}")
_PIECES = re.compile(r"[{},]|[^{},]+")


def plain_ints(init: str) -> bool:
    """An initializer that is a flat list of decimal integers (the data tables).
    The answer for the last large text is kept (validation asks three times per
    variable; a cuRAND table is half a megabyte): one tuple, swapped whole, so
    that threads asking at once never see one text's answer for another."""
    last = _LAST[0]
    if last[0] is init:
        return last[1]
    plain = init[:1] == "{" and _PLAIN_INTS.fullmatch(init) is not None
    if len(init) >= 4096:
        _LAST[0] = (init, plain)
    return plain


_LAST: list[tuple[str | None, bool]] = [(None, False)]


def parse_init(text: str) -> InitNode:
    """The tree of ``text``: a list per brace pair, a stripped string per item."""
    if plain_ints(text):
        inner = text[1:-1].strip()
        return [p.strip() for p in inner.split(",")] if inner else []
    stack: list[list[InitNode]] = [[]]
    for piece in _PIECES.findall(text):
        if piece == "{":
            stack.append([])
        elif piece == "}":
            done = stack.pop()
            stack[-1].append(done)
        elif piece != "," and piece.strip():
            stack[-1].append(piece.strip())
    top = stack[0]
    return top[0] if len(top) == 1 else top


def shape_error(node: InitNode, dims: list[int | None], vector: int) -> str | None:
    """Why ptxas refuses ``node`` as the initializer of a variable with array
    dimensions ``dims`` (``None``/0: unsized) and ``vector`` components (0: no
    vector), or ``None``."""
    return _check(node, dims, vector, 0)


def _check(node: InitNode, dims: list[int | None], vector: int, level: int) -> str | None:
    if level < len(dims):
        if not isinstance(node, list):
            return "a scalar initializer where an array's braces belong"
        why = count_error(len(node), dims[level], level == 0)
        if why is not None:
            return why
        for item in node:
            why = _check(item, dims, vector, level + 1)
            if why is not None:
                return why
        return None
    if vector:
        if not isinstance(node, list):
            return "a scalar initializer where a vector's braces belong"
        if len(node) != vector:
            return f"{len(node)} elements in the initializer of a {vector}-vector"
        if any(isinstance(item, list) for item in node):
            return "braces inside a vector's initializer"
        return None
    if isinstance(node, list):
        return "braces in the initializer of a scalar"
    return None


def count_error(n: int, dim: int | None, first: bool) -> str | None:
    """Why ``n`` items cannot initialize a dimension of ``dim`` (``None``/0:
    unsized; ``first``: the declaration's first dimension), or ``None``."""
    if not dim:
        return "an empty initializer for an array of unspecified size" if first and not n else None
    if n > dim:
        return f"{n} elements in the initializer of a dimension of {dim}"
    return None


def first_dim(text: str) -> int:
    """The size an unsized first dimension takes from the initializer ``text``."""
    if plain_ints(text):
        return text.count(",") + 1 if text[1:-1].strip() else 0
    node = parse_init(text)
    return len(node) if isinstance(node, list) else 1


def layout(
    text: str,
    dims: list[int | None],
    vector: int,
    element: int,
    item: Callable[[str], bytes | None],
) -> bytes | None:
    """The bytes the initializer ``text`` puts in memory for a variable with array
    dimensions ``dims``, ``vector`` components (0: none) and ``element`` bytes per
    scalar: ``item`` encodes one scalar item (``None``: give up, and so does this),
    every short level is padded with zeros, an unsized first dimension takes the
    initializer's length.  ``None`` also for an initializer :func:`shape_error`
    refuses."""
    node = parse_init(text)
    if shape_error(node, dims, vector) is not None:
        return None
    dims = list(dims)
    if dims and not dims[0]:
        dims[0] = first_dim(text)
    strides = [element * max(vector, 1)] * (len(dims) + 1)
    for k in range(len(dims) - 1, -1, -1):
        strides[k] = strides[k + 1] * (dims[k] or 0)
    out = bytearray()

    def emit(node: InitNode, level: int) -> bool:
        if isinstance(node, str):  # a scalar (shape_error let it through here)
            data = item(node)
            if data is None:
                return False
            out.extend(data)
            return True
        start = len(out)
        if not all(emit(it, level + 1) for it in node):
            return False
        out.extend(bytes(strides[level] - (len(out) - start)))
        return True

    return bytes(out) if emit(node, 0) else None
