"""The AST classes made once per line of input or per operand: :class:`Span`
(where a statement is), :class:`Instr` (an instruction) and the common operands,
:class:`Reg` (a register), :class:`Imm` (an immediate), :class:`Sym` (a symbol),
:class:`Addr` (an address) and :class:`Vec` (a vector).  :mod:`ptxopt.ptx.ast`
exports them with the rest of the tree.

They live apart from the other AST classes so that the compiled build
(:mod:`ptxopt.accel`) can make them native classes: the parser then creates them,
and the validator, the lifter and the lowering read their fields, without calling
into the interpreter (a ``Span`` made by interpreted ``__init__`` code took 0.45 us,
a native one 0.05 us).  Written so that both builds behave alike: a ``Span`` is a value --
equal by fields, hashable, read-only (its ``__init__`` sets its fields through
``object.__setattr__``, which mypyc turns into direct stores) -- and an ``Instr`` is
mutable and compared by identity, as the other statements.  Both pickle and copy
through ``__reduce__`` (a native class has no ``__dict__`` or slots for the default
protocol), and :func:`ptxopt.record.replace` finds an ``Instr``'s fields in
``__slots__`` or, compiled, in ``__mypyc_attrs__``.  The operands are values like a
``Span``, equal and hashed by the fields the records they replace compared (an
``Addr`` without ``plus_zero``), so a ``Reg``'s hash is its name's.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from ptxopt.ptx.ast import Operand


class _Value:
    """The base of the read-only classes here: every field is set once, by ``__init__``
    (through ``object.__setattr__``)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")


class Span(_Value):
    """A position in a source file (1-based line and column)."""

    __slots__ = ("file", "line", "col")
    file: str
    line: int
    col: int

    def __init__(self, file: str, line: int, col: int) -> None:
        object.__setattr__(self, "file", file)
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "col", col)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Span) or type(other) is not type(self):
            return NotImplemented
        return self.line == other.line and self.col == other.col and self.file == other.file

    def __hash__(self) -> int:
        return hash((self.file, self.line, self.col))

    def __repr__(self) -> str:
        return f"Span(file={self.file!r}, line={self.line!r}, col={self.col!r})"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def __reduce__(self) -> tuple[object, ...]:
        return (Span, (self.file, self.line, self.col))


class Reg(_Value):
    """A register operand: ``%r1``, ``%p2``, a special register such as ``%tid.x``,
    or a user-named register (``val``)."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "name", name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Reg) or type(other) is not type(self):
            return NotImplemented
        return self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Reg(name={self.name!r})"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[object, ...]:
        return (Reg, (self.name,))


class Imm(_Value):
    """An immediate.  ``value`` is an int for integer literals and the decoded float
    for float literals; ``text`` is the source spelling, printed back verbatim.
    ``kind`` is ``"int"``, ``"f32"`` (``0fXXXXXXXX``) or ``"f64"`` (``0d...`` or a
    decimal literal with a point or exponent)."""

    __slots__ = ("value", "text", "kind")
    value: int | float
    text: str
    kind: str

    def __init__(self, value: int | float, text: str, kind: str = "int") -> None:
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "kind", kind)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Imm) or type(other) is not type(self):
            return NotImplemented
        # as a tuple: a NaN value equals itself (the same object), as in a record
        return (self.value, self.text, self.kind) == (other.value, other.text, other.kind)

    def __hash__(self) -> int:
        return hash((self.value, self.text, self.kind))

    def __repr__(self) -> str:
        return f"Imm(value={self.value!r}, text={self.text!r}, kind={self.kind!r})"

    def __str__(self) -> str:
        return self.text

    def __reduce__(self) -> tuple[object, ...]:
        return (Imm, (self.value, self.text, self.kind))


class Sym(_Value):
    """A symbol: a label, variable, function or branch-target table name."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "name", name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sym) or type(other) is not type(self):
            return NotImplemented
        return self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Sym(name={self.name!r})"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[object, ...]:
        return (Sym, (self.name,))


class Vec(_Value):
    """A vector operand ``{a, b, c, d}``; elements may be :class:`ptxopt.ptx.ast.Sink`."""

    __slots__ = ("elems",)
    elems: tuple[Operand, ...]

    def __init__(self, elems: tuple[Operand, ...]) -> None:
        object.__setattr__(self, "elems", elems)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vec) or type(other) is not type(self):
            return NotImplemented
        return self.elems == other.elems

    def __hash__(self) -> int:
        return hash(self.elems)

    def __repr__(self) -> str:
        return f"Vec(elems={self.elems!r})"

    def __str__(self) -> str:
        return "{" + ", ".join([str(e) for e in self.elems]) + "}"

    def __reduce__(self) -> tuple[object, ...]:
        return (Vec, (self.elems,))


class Addr(_Value):
    """A memory address ``[base+offset]``.  ``base`` is a register, a symbol, a
    vector (texture coordinates) or ``None`` for an absolute address, in which case
    ``offset`` holds it.  ``extra`` holds further comma-separated operands inside the
    brackets (``[tex, {x, y}]``).  Equality and hash leave ``plus_zero`` out."""

    __slots__ = ("base", "offset", "extra", "plus_zero")
    base: Operand | None
    offset: int
    extra: tuple[Operand, ...]
    plus_zero: bool

    def __init__(
        self,
        base: Operand | None,
        offset: int = 0,
        extra: tuple[Operand, ...] = (),
        plus_zero: bool = False,
    ) -> None:
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "extra", extra)
        # "+0" was written: kept, since ptxas without optimization (-G) assembles
        # [%r+0] and [%r] differently (not compared)
        object.__setattr__(self, "plus_zero", plus_zero)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Addr) or type(other) is not type(self):
            return NotImplemented
        return (self.base, self.offset, self.extra) == (other.base, other.offset, other.extra)

    def __hash__(self) -> int:
        return hash((self.base, self.offset, self.extra))

    def __repr__(self) -> str:
        return (
            f"Addr(base={self.base!r}, offset={self.offset!r}, extra={self.extra!r}, "
            f"plus_zero={self.plus_zero!r})"
        )

    def __str__(self) -> str:
        if self.base is None:
            inner = str(self.offset)
        elif self.offset or self.plus_zero:
            inner = f"{self.base}+{self.offset}"
        else:
            inner = str(self.base)
        if self.extra:
            inner += ", " + ", ".join([str(e) for e in self.extra])
        return f"[{inner}]"

    def __reduce__(self) -> tuple[object, ...]:
        return (Addr, (self.base, self.offset, self.extra, self.plus_zero))


class Instr:
    """One PTX instruction, optionally guarded by ``@pred`` / ``@!pred``."""

    __slots__ = ("opcode", "mods", "operands", "pred", "pred_neg", "span")
    opcode: str
    mods: tuple[str, ...]
    operands: list[Operand]
    pred: Reg | None
    pred_neg: bool
    span: Span | None

    def __init__(
        self,
        opcode: str,
        mods: tuple[str, ...],
        operands: list[Operand],
        pred: Reg | None = None,
        pred_neg: bool = False,
        span: Span | None = None,
    ) -> None:
        self.opcode = opcode
        self.mods = mods
        self.operands = operands
        self.pred = pred
        self.pred_neg = pred_neg
        self.span = span

    @property
    def name(self) -> str:
        """The full opcode spelling, e.g. ``ld.global.v4.f32``."""
        return self.opcode + "".join(self.mods)

    def __repr__(self) -> str:
        return (
            f"Instr(opcode={self.opcode!r}, mods={self.mods!r}, operands={self.operands!r}, "
            f"pred={self.pred!r}, pred_neg={self.pred_neg!r}, span={self.span!r})"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (
            Instr,
            (self.opcode, self.mods, self.operands, self.pred, self.pred_neg, self.span),
        )
