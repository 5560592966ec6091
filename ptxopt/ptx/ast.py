"""PTX abstract syntax tree.

The AST is a faithful, purely syntactic picture of a PTX module: every directive,
declaration, label and instruction with the source span it came from.  Semantics
(what an instruction defines and uses, its side effects) live in
:mod:`ptxopt.ptx.opcodes`; the SSA IR is built from this tree by :mod:`ptxopt.ir.lift`
and lowered back into it by :mod:`ptxopt.ir.lower`, and :mod:`ptxopt.ptx.printer`
prints it.

Instructions keep their opcode split into a head and a tuple of modifiers in source
order: ``ld.global.L2::128B.v4.f32`` is ``opcode="ld"`` with
``mods=(".global", ".L2::128B", ".v4", ".f32")``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Span:
    """A position in a source file (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class PtxError(Exception):
    """A diagnostic about the input, rendered as ``file:line:col: error: message``."""

    def __init__(self, span: Span | None, message: str) -> None:
        super().__init__(message)
        self.span = span
        self.message = message

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span is not None else "ptxopt: "
        return f"{where}error: {self.message}"


# ---------------------------------------------------------------------------
# Operands


@dataclass(frozen=True, slots=True)
class Reg:
    """A register operand: ``%r1``, ``%p2``, a special register such as ``%tid.x``,
    or a user-named register (``val``)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Sel:
    """A source or destination of a video instruction: a register with an optional
    byte/half-word selector (``%r1.b0``, ``%r2.h1``, ``%r3.b3210``, ``%r4.h10``) and,
    for ``vmad``'s sources, an optional negation (``-%r5.h0``)."""

    reg: Reg
    sel: str = ""  # the selector without its dot, e.g. "b0", "h10"
    neg: bool = False

    def __str__(self) -> str:
        text = f"-{self.reg}" if self.neg else str(self.reg)
        return f"{text}.{self.sel}" if self.sel else text


@dataclass(frozen=True, slots=True)
class Imm:
    """An immediate.  ``value`` is an int for integer literals and the decoded float
    for float literals; ``text`` is the source spelling, printed back verbatim.
    ``kind`` is ``"int"``, ``"f32"`` (``0fXXXXXXXX``) or ``"f64"`` (``0d…`` or a
    decimal literal with a point or exponent)."""

    value: int | float
    text: str
    kind: str = "int"

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class RegImm:
    """A register plus a constant, ``%r2+7``, read as a source operand: the sum
    modulo the register's width (ptxas folds it into the instruction)."""

    reg: Reg
    offset: int

    def __str__(self) -> str:
        return f"{self.reg}+{self.offset}"


@dataclass(frozen=True, slots=True)
class Sym:
    """A symbol: a label, variable, function or branch-target table name."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Sink:
    """The ``_`` placeholder: a destination whose value is discarded."""

    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True, slots=True)
class Not:
    """A negated predicate source: ``!%p``."""

    operand: Reg

    def __str__(self) -> str:
        return f"!{self.operand}"


@dataclass(frozen=True, slots=True)
class Vec:
    """A vector operand ``{a, b, c, d}``; elements may be :class:`Sink`."""

    elems: tuple[Operand, ...]

    def __str__(self) -> str:
        return "{" + ", ".join(str(e) for e in self.elems) + "}"


@dataclass(frozen=True, slots=True)
class Pair:
    """Two predicate destinations ``%p|%q`` (``setp``, ``mma`` with predicates)."""

    first: Operand
    second: Operand

    def __str__(self) -> str:
        return f"{self.first}|{self.second}"


@dataclass(frozen=True, slots=True)
class Addr:
    """A memory address ``[base+offset]``.  ``base`` is a register, a symbol, a
    vector (texture coordinates) or ``None`` for an absolute address, in which case
    ``offset`` holds it.  ``extra`` holds further comma-separated operands inside the
    brackets (``[tex, {x, y}]``)."""

    base: Operand | None
    offset: int = 0
    extra: tuple[Operand, ...] = ()
    # "+0" was written: kept, since ptxas without optimization (-G) assembles
    # [%r+0] and [%r] differently
    plus_zero: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        if self.base is None:
            inner = str(self.offset)
        elif self.offset or self.plus_zero:
            inner = f"{self.base}+{self.offset}"
        else:
            inner = str(self.base)
        if self.extra:
            inner += ", " + ", ".join(str(e) for e in self.extra)
        return f"[{inner}]"


@dataclass(frozen=True, slots=True)
class ParenList:
    """A parenthesized operand list, as in ``call (ret0), f, (p0, p1)``."""

    items: tuple[Operand, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.items) + ")"


@dataclass(frozen=True, slots=True)
class Expr:
    """A constant expression kept as text (``sym+4``, ``(a-b)``, ``generic(sym)``)."""

    text: str

    def __str__(self) -> str:
        return self.text


Operand = Reg | Imm | Sym | Sink | Not | Vec | Pair | Addr | ParenList | Expr | Sel | RegImm


# ---------------------------------------------------------------------------
# Statements inside a function body


@dataclass(slots=True, eq=False)
class Instr:
    """One PTX instruction, optionally guarded by ``@pred`` / ``@!pred``."""

    opcode: str
    mods: tuple[str, ...]
    operands: list[Operand]
    pred: Reg | None = None
    pred_neg: bool = False
    span: Span | None = None

    @property
    def name(self) -> str:
        """The full opcode spelling, e.g. ``ld.global.v4.f32``."""
        return self.opcode + "".join(self.mods)


@dataclass(slots=True, eq=False)
class Label:
    name: str
    span: Span | None = None


@dataclass(slots=True, eq=False)
class RegDecl:
    """``.reg .b32 %r<10>, %x;`` — each entry is ``(name, count)``; a count of
    ``None`` declares the single register ``name``, an integer ``n`` declares
    ``name0`` … ``name{n-1}``.  ``vector`` is ``""`` or ``".v2"``/``".v4"``."""

    type: str
    names: list[tuple[str, int | None]]
    vector: str = ""
    align: int | None = None
    span: Span | None = None


@dataclass(slots=True, eq=False)
class VarDecl:
    """A variable: ``[linkage] .space [.align n] [.v4] .type name[dims] [= init];``.

    ``attrs`` holds other attribute tokens in order (``.ptr``, ``.managed`` …).
    ``dims`` is a list of array sizes (``None`` for ``[]``).  ``init`` is the
    initializer text after ``=`` (kept verbatim), or ``None``."""

    space: str
    type: str
    name: str
    linkage: tuple[str, ...] = ()
    align: int | None = None
    vector: str = ""
    dims: list[int | None] = field(default_factory=list)
    init: str | None = None
    attrs: tuple[str, ...] = ()
    span: Span | None = None


@dataclass(slots=True, eq=False)
class DebugLoc:
    """``.loc file line col [, extra]`` — the source location of what follows."""

    file: int
    line: int
    col: int
    extra: str = ""
    span: Span | None = None
    # locations stated right before this one with no instruction in between (kept
    # for ``inlined_at`` chains, which name them)
    before: tuple[DebugLoc, ...] = ()


@dataclass(slots=True, eq=False)
class BranchTargets:
    """``name: .branchtargets L1, L2, …;`` (a ``brx.idx`` label table)."""

    name: str
    labels: list[str]
    span: Span | None = None


@dataclass(slots=True, eq=False)
class RawStmt:
    """A statement kept verbatim (``.pragma``, ``.callprototype``, ``.calltargets``)."""

    text: str
    span: Span | None = None


@dataclass(slots=True, eq=False)
class Scope:
    """A nested ``{ … }`` block; declarations inside are local to it."""

    body: list[Stmt]
    span: Span | None = None


Stmt = Instr | Label | RegDecl | VarDecl | DebugLoc | BranchTargets | RawStmt | Scope


# ---------------------------------------------------------------------------
# Module level


@dataclass(slots=True, eq=False)
class Param:
    """A kernel or function parameter: ``.param [.align n] .type [.ptr .space
    .align n] name[dims]`` (``space`` is ``.param`` or ``.reg``)."""

    space: str
    type: str
    name: str
    align: int | None = None
    dims: list[int | None] = field(default_factory=list)
    attrs: tuple[str, ...] = ()
    span: Span | None = None


@dataclass(slots=True, eq=False)
class Function:
    """``.entry`` or ``.func``; ``body`` is ``None`` for a prototype declaration.

    ``directives`` are performance/attribute directives between the signature and
    the body (``.maxntid 128, 1, 1``), kept as text."""

    kind: str  # ".entry" or ".func"
    name: str
    params: list[Param]
    rets: list[Param] = field(default_factory=list)
    linkage: tuple[str, ...] = ()
    attrs: tuple[str, ...] = ()  # e.g. ".noreturn", ".attribute(.unified(…))"
    directives: list[str] = field(default_factory=list)
    body: list[Stmt] | None = None
    span: Span | None = None

    @property
    def is_entry(self) -> bool:
        return self.kind == ".entry"


@dataclass(slots=True, eq=False)
class Directive:
    """A module-level directive kept as text: ``.version``, ``.target``,
    ``.address_size``, ``.file``, ``.section`` blocks, and anything else that needs
    no interpretation.  ``name`` is the directive (``.target``) and ``text`` the
    complete source text of the item."""

    name: str
    text: str
    span: Span | None = None


ModuleItem = Directive | VarDecl | Function


@dataclass(slots=True, eq=False)
class Module:
    items: list[ModuleItem]
    filename: str = "<input>"

    @property
    def functions(self) -> list[Function]:
        return [it for it in self.items if isinstance(it, Function)]

    def function(self, name: str) -> Function:
        for it in self.items:
            if isinstance(it, Function) and it.name == name and it.body is not None:
                return it
        for it in self.items:
            if isinstance(it, Function) and it.name == name:
                return it
        raise KeyError(name)

    @property
    def globals(self) -> list[VarDecl]:
        return [it for it in self.items if isinstance(it, VarDecl)]

    def _directive(self, name: str) -> Directive | None:
        for it in self.items:
            if isinstance(it, Directive) and it.name == name:
                return it
        return None

    @property
    def version(self) -> str | None:
        d = self._directive(".version")
        return d.text.split()[1] if d is not None else None

    @property
    def target(self) -> list[str]:
        """The ``.target`` entries, e.g. ``["sm_90a"]`` or ``["sm_75", "debug"]``; of
        several ``.target`` lines in a row, all their entries in order."""
        out: list[str] = []
        for it in self.items:
            if isinstance(it, Directive) and it.name == ".target":
                rest = it.text.split(None, 1)[1] if len(it.text.split(None, 1)) > 1 else ""
                out += [t.strip() for t in rest.split(",") if t.strip()]
        return out

    @property
    def arch(self) -> str | None:
        """The architecture: the last one the ``.target`` entries name (measured:
        ptxas compiles ``.target sm_90, sm_80`` and ``.target sm_90`` followed by
        ``.target sm_80`` for sm_80)."""
        for t in reversed(self.target):
            if t.startswith("sm_") or t.startswith("compute_"):
                return t
        return None

    @property
    def address_size(self) -> int:
        d = self._directive(".address_size")
        return int(d.text.split()[1]) if d is not None else 64
