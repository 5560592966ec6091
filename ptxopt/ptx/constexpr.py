"""Constant expressions (PTX ISA, "Constant Expressions"): precedence climbing over
the token list, evaluated as the ISA says.

Integers are 64-bit, signed unless a ``U`` literal or a ``(.u64)`` cast makes them
unsigned; an operation with an unsigned operand is unsigned; results wrap modulo
2**64; comparisons and logical operators give a signed 0 or 1; ``>>`` is arithmetic
on signed values.  A floating-point literal makes the expression a double, which
allows only unary ``-``/``+``, the four arithmetic operators and comparisons.
``WARP_SZ`` is 32.  Division or remainder by zero is an error, as in ptxas, and so is
a bit-pattern literal (``0f...``, ``0d...``) anywhere but alone.

The operators and their precedence (highest first): unary ``+ - ! ~`` and casts;
``* / %``; ``+ -``; ``<< >>``; ``< > <= >=``; ``== !=``; ``&``; ``^``; ``|``; ``&&``;
``||``; ``?:``.
"""

from __future__ import annotations

from ptxopt.ptx.lexer import ID, NUM, PUNCT, Token
from ptxopt.record import Record, set_field

_U64 = (1 << 64) - 1

# binary operator -> precedence (higher binds tighter)
_BINARY: dict[str, int] = {
    "*": 10,
    "/": 10,
    "%": 10,
    "+": 9,
    "-": 9,
    "<<": 8,
    ">>": 8,
    "<": 7,
    ">": 7,
    "<=": 7,
    ">=": 7,
    "==": 6,
    "!=": 6,
    "&": 5,
    "^": 4,
    "|": 3,
    "&&": 2,
    "||": 1,
}
_TWO_CHAR = frozenset({"<<", ">>", "<=", ">=", "==", "!=", "&&", "||"})
_FLOAT_OPS = frozenset({"*", "/", "+", "-", "<", ">", "<=", ">=", "==", "!="})


class ExprError(Exception):
    """A malformed or invalid constant expression at token index ``at``."""

    def __init__(self, at: int, message: str) -> None:
        super().__init__(message)
        self.at = at
        self.message = message


class Const(Record):
    """A value: an int in [0, 2**64) with its signedness, or a float."""

    __slots__ = ("value", "unsigned")
    value: int | float
    unsigned: bool

    def __init__(
        self,
        value: int | float,
        unsigned: bool = False,
    ) -> None:
        set_field(self, "value", value)
        set_field(self, "unsigned", unsigned)

    @property
    def is_float(self) -> bool:
        return isinstance(self.value, float)

    def signed(self) -> int:
        v = int(self.value)
        return v - (1 << 64) if v >> 63 else v

    def python(self) -> int | float:
        """The value as the IR holds immediates: floats as is, unsigned ints as
        non-negative, signed ints with their sign."""
        if self.is_float:
            return self.value
        return int(self.value) if self.unsigned else self.signed()


def _int(v: int, unsigned: bool) -> Const:
    return Const(v & _U64, unsigned)


class ExprParser:
    """Parses and evaluates one expression starting at ``toks[i]``.

    ``literal`` decodes a number token (raising ``ValueError`` on overflow)."""

    def __init__(self, toks: list[Token], i: int, literal) -> None:  # type: ignore[no-untyped-def]
        self.toks = toks
        self.i = i
        self.literal = literal

    # -- tokens --------------------------------------------------------------------

    def _op(self) -> str | None:
        """The operator at the current position (two-character ones joined)."""
        kind, text, off = self.toks[self.i]
        if kind != PUNCT:
            return None
        nxt = self.toks[self.i + 1]
        if nxt[0] == PUNCT and nxt[2] == off + 1 and text + nxt[1] in _TWO_CHAR:
            return text + nxt[1]
        return text

    def _take(self, op: str) -> None:
        self.i += len(op)

    # -- grammar -------------------------------------------------------------------

    def parse(self) -> Const:
        return self.ternary()

    def ternary(self) -> Const:
        cond = self.binary(1)
        if self._op() != "?":
            return cond
        at = self.i
        self._take("?")
        yes = self.ternary()
        if self._op() != ":":
            raise ExprError(self.i, "expected ':' in a conditional expression")
        self._take(":")
        no = self.ternary()
        if cond.is_float:
            raise ExprError(at, "a conditional expression needs an integer condition")
        return yes if cond.value else no

    def binary(self, min_prec: int) -> Const:
        left = self.unary()
        while True:
            op = self._op()
            prec = _BINARY.get(op or "")
            if op is None or prec is None or prec < min_prec:
                return left
            at = self.i
            self._take(op)
            right = self.binary(prec + 1)
            left = self.apply(op, left, right, at)

    def unary(self) -> Const:
        kind, text, _off = self.toks[self.i]
        if kind == PUNCT and text in "+-!~":
            at = self.i
            self.i += 1
            v = self.unary()
            if v.is_float:
                if text in "!~":
                    raise ExprError(at, f"operator '{text}' needs an integer operand")
                return Const(-float(v.value) if text == "-" else v.value)
            x = int(v.value)
            if text == "-":
                return _int(-x, v.unsigned)
            if text == "~":
                return _int(~x, v.unsigned)
            if text == "!":
                return Const(int(x == 0))
            return v
        if kind == PUNCT and text == "(":
            cast = self.toks[self.i + 1]
            if cast[1] in (".s64", ".u64") and self.toks[self.i + 2][1] == ")":
                self.i += 3
                v = self.unary()
                if v.is_float:
                    raise ExprError(self.i, f"cannot cast a floating-point value to {cast[1]}")
                return Const(v.value, cast[1] == ".u64")
            self.i += 1
            v = self.ternary()
            if self.toks[self.i][1] != ")" or self.toks[self.i][0] != PUNCT:
                raise ExprError(self.i, "expected ')' in a constant expression")
            self.i += 1
            return v
        if kind == NUM:
            # measured: a 0d literal is a double in an expression (-0d3ff0..., (0d...),
            # 0d...*2.0); a 0f literal is not (-0f3f800000 is a syntax error)
            if text[:2] in ("0f", "0F"):
                raise ExprError(self.i, f"'{text}' cannot be part of an expression")
            self.i += 1
            try:
                imm = self.literal(text)
            except ValueError as e:
                raise ExprError(self.i - 1, str(e)) from None
            if isinstance(imm.value, float):
                return Const(imm.value)
            return _int(int(imm.value), text.endswith("U"))
        if kind == ID and text == "WARP_SZ":
            self.i += 1
            return Const(32)
        raise ExprError(self.i, "expected a constant")

    def apply(self, op: str, a: Const, b: Const, at: int) -> Const:
        if a.is_float != b.is_float:
            # measured: 1.5+1, 1+1.5 and 1.5 > 1 are "Constant expression type mismatch"
            raise ExprError(at, f"operator '{op}' mixes an integer and a floating-point value")
        if a.is_float:
            if op not in _FLOAT_OPS:
                raise ExprError(at, f"operator '{op}' needs integer operands")
            x, y = float(a.value), float(b.value)
            if op == "/" and y == 0.0:
                raise ExprError(at, "division by zero in a constant expression")
            cmp = {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y, "==": x == y, "!=": x != y}
            if op in cmp:
                return Const(int(cmp[op]))
            return Const({"*": x * y, "/": x / y if y else 0.0, "+": x + y, "-": x - y}[op])
        unsigned = a.unsigned or b.unsigned
        x, y = (int(a.value), int(b.value)) if unsigned else (a.signed(), b.signed())
        if op in ("/", "%") and y == 0:
            raise ExprError(at, "division by zero in a constant expression")
        if op == "*":
            return _int(x * y, unsigned)
        if op == "/":
            q = abs(x) // abs(y)
            return _int(q if (x < 0) == (y < 0) else -q, unsigned)
        if op == "%":
            r = abs(x) % abs(y)
            return _int(-r if x < 0 else r, unsigned)
        if op == "+":
            return _int(x + y, unsigned)
        if op == "-":
            return _int(x - y, unsigned)
        if op == "<<":
            return _int(x << (y & 63) if 0 <= y < 64 else 0, unsigned)
        if op == ">>":
            if not 0 <= y < 64:
                return _int(-1 if x < 0 else 0, unsigned)
            return _int(x >> y, unsigned)
        if op in ("&&", "||"):
            return Const(int(bool(x) and bool(y)) if op == "&&" else int(bool(x) or bool(y)))
        if op == "&":
            return _int(x & y, unsigned)
        if op == "^":
            return _int(x ^ y, unsigned)
        if op == "|":
            return _int(x | y, unsigned)
        cmp = {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y, "==": x == y, "!=": x != y}
        return Const(int(cmp[op]))
