"""The AST classes made once per line of input or per register: :class:`Span`
(where a statement is), :class:`Instr` (an instruction) and :class:`Reg` (a
register operand).  :mod:`ptxopt.ptx.ast` exports them with the rest of the tree.

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
``__slots__`` or, compiled, in ``__mypyc_attrs__``.  A ``Reg`` is a value like a
``Span`` (its hash is its name's, as the record it replaces had).
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
