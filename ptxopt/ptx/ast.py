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

from ptxopt.ptx.nodes import Addr as Addr
from ptxopt.ptx.nodes import Imm as Imm
from ptxopt.ptx.nodes import Instr as Instr
from ptxopt.ptx.nodes import Reg as Reg
from ptxopt.ptx.nodes import Span as Span
from ptxopt.ptx.nodes import Sym as Sym
from ptxopt.ptx.nodes import Vec as Vec
from ptxopt.record import Node, Record, set_field


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


class Sel(Record):
    """A source or destination of a video instruction: a register with an optional
    byte/half-word selector (``%r1.b0``, ``%r2.h1``, ``%r3.b3210``, ``%r4.h10``) and,
    for ``vmad``'s sources, an optional negation (``-%r5.h0``)."""

    __slots__ = ("reg", "sel", "neg")
    reg: Reg
    sel: str
    neg: bool

    def __init__(self, reg: Reg, sel: str = "", neg: bool = False) -> None:
        set_field(self, "reg", reg)
        # the selector without its dot, e.g. "b0", "h10"
        set_field(self, "sel", sel)
        set_field(self, "neg", neg)

    def __str__(self) -> str:
        text = f"-{self.reg}" if self.neg else str(self.reg)
        return f"{text}.{self.sel}" if self.sel else text


class RegImm(Record):
    """A register plus a constant, ``%r2+7``, read as a source operand: the sum
    modulo the register's width (ptxas folds it into the instruction)."""

    __slots__ = ("reg", "offset")
    reg: Reg
    offset: int

    def __init__(self, reg: Reg, offset: int) -> None:
        set_field(self, "reg", reg)
        set_field(self, "offset", offset)

    def __str__(self) -> str:
        return f"{self.reg}+{self.offset}"


class Sink(Record):
    """The ``_`` placeholder: a destination whose value is discarded."""

    __slots__ = ()

    def __init__(self) -> None:
        pass

    def __str__(self) -> str:
        return "_"


class Not(Record):
    """A negated predicate source: ``!%p``."""

    __slots__ = ("operand",)
    operand: Reg

    def __init__(self, operand: Reg) -> None:
        set_field(self, "operand", operand)

    def __str__(self) -> str:
        return f"!{self.operand}"


class Pair(Record):
    """Two predicate destinations ``%p|%q`` (``setp``, ``mma`` with predicates)."""

    __slots__ = ("first", "second")
    first: Operand
    second: Operand

    def __init__(self, first: Operand, second: Operand) -> None:
        set_field(self, "first", first)
        set_field(self, "second", second)

    def __str__(self) -> str:
        return f"{self.first}|{self.second}"


class ParenList(Record):
    """A parenthesized operand list, as in ``call (ret0), f, (p0, p1)``."""

    __slots__ = ("items",)
    items: tuple[Operand, ...]

    def __init__(self, items: tuple[Operand, ...]) -> None:
        set_field(self, "items", items)

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.items) + ")"


class Expr(Record):
    """A constant expression kept as text (``sym+4``, ``(a-b)``, ``generic(sym)``)."""

    __slots__ = ("text",)
    text: str

    def __init__(self, text: str) -> None:
        set_field(self, "text", text)

    def __str__(self) -> str:
        return self.text


Operand = Reg | Imm | Sym | Sink | Not | Vec | Pair | Addr | ParenList | Expr | Sel | RegImm


# ---------------------------------------------------------------------------
# Statements inside a function body


class Label(Node):
    __slots__ = ("name", "span")
    name: str
    span: Span | None

    def __init__(self, name: str, span: Span | None = None) -> None:
        self.name = name
        self.span = span


class RegDecl(Node):
    """``.reg .b32 %r<10>, %x;`` — each entry is ``(name, count)``; a count of
    ``None`` declares the single register ``name``, an integer ``n`` declares
    ``name0`` … ``name{n-1}``.  ``vector`` is ``""`` or ``".v2"``/``".v4"``."""

    __slots__ = ("type", "names", "vector", "align", "span")
    type: str
    names: list[tuple[str, int | None]]
    vector: str
    align: int | None
    span: Span | None

    def __init__(
        self,
        type: str,
        names: list[tuple[str, int | None]],
        vector: str = "",
        align: int | None = None,
        span: Span | None = None,
    ) -> None:
        self.type = type
        self.names = names
        self.vector = vector
        self.align = align
        self.span = span


class VarDecl(Node):
    """A variable: ``[linkage] .space [.align n] [.v4] .type name[dims] [= init];``.

    ``attrs`` holds other attribute tokens in order (``.ptr``, ``.managed`` …).
    ``dims`` is a list of array sizes (``None`` for ``[]``).  ``init`` is the
    initializer text after ``=`` (kept verbatim), or ``None``."""

    __slots__ = (
        "space",
        "type",
        "name",
        "linkage",
        "align",
        "vector",
        "dims",
        "init",
        "attrs",
        "span",
    )
    space: str
    type: str
    name: str
    linkage: tuple[str, ...]
    align: int | None
    vector: str
    dims: list[int | None]
    init: str | None
    attrs: tuple[str, ...]
    span: Span | None

    def __init__(
        self,
        space: str,
        type: str,
        name: str,
        linkage: tuple[str, ...] = (),
        align: int | None = None,
        vector: str = "",
        dims: list[int | None] | None = None,
        init: str | None = None,
        attrs: tuple[str, ...] = (),
        span: Span | None = None,
    ) -> None:
        self.space = space
        self.type = type
        self.name = name
        self.linkage = linkage
        self.align = align
        self.vector = vector
        self.dims = [] if dims is None else dims
        self.init = init
        self.attrs = attrs
        self.span = span


class DebugLoc(Node):
    """``.loc file line col [, extra]`` — the source location of what follows."""

    __slots__ = ("file", "line", "col", "extra", "span", "before")

    def __init__(
        self,
        file: int,
        line: int,
        col: int,
        extra: str = "",
        span: Span | None = None,
        before: tuple[DebugLoc, ...] = (),
    ) -> None:
        self.file = file
        self.line = line
        self.col = col
        self.extra = extra
        self.span = span
        # locations stated right before this one with no instruction in between (kept
        # for ``inlined_at`` chains, which name them)
        self.before = before


class BranchTargets(Node):
    """``name: .branchtargets L1, L2, …;`` (a ``brx.idx`` label table)."""

    __slots__ = ("name", "labels", "span")
    name: str
    labels: list[str]
    span: Span | None

    def __init__(self, name: str, labels: list[str], span: Span | None = None) -> None:
        self.name = name
        self.labels = labels
        self.span = span


class RawStmt(Node):
    """A statement kept verbatim (``.pragma``, ``.callprototype``, ``.calltargets``)."""

    __slots__ = ("text", "span")
    text: str
    span: Span | None

    def __init__(self, text: str, span: Span | None = None) -> None:
        self.text = text
        self.span = span


class Scope(Node):
    """A nested ``{ … }`` block; declarations inside are local to it."""

    __slots__ = ("body", "span")
    body: list[Stmt]
    span: Span | None

    def __init__(self, body: list[Stmt], span: Span | None = None) -> None:
        self.body = body
        self.span = span


Stmt = Instr | Label | RegDecl | VarDecl | DebugLoc | BranchTargets | RawStmt | Scope


# ---------------------------------------------------------------------------
# Module level


class Param(Node):
    """A kernel or function parameter: ``.param [.align n] .type [.ptr .space
    .align n] name[dims]`` (``space`` is ``.param`` or ``.reg``)."""

    __slots__ = ("space", "type", "name", "align", "dims", "attrs", "span")
    space: str
    type: str
    name: str
    align: int | None
    dims: list[int | None]
    attrs: tuple[str, ...]
    span: Span | None

    def __init__(
        self,
        space: str,
        type: str,
        name: str,
        align: int | None = None,
        dims: list[int | None] | None = None,
        attrs: tuple[str, ...] = (),
        span: Span | None = None,
    ) -> None:
        self.space = space
        self.type = type
        self.name = name
        self.align = align
        self.dims = [] if dims is None else dims
        self.attrs = attrs
        self.span = span


class Function(Node):
    """``.entry`` or ``.func``; ``body`` is ``None`` for a prototype declaration.

    ``directives`` are performance/attribute directives between the signature and
    the body (``.maxntid 128, 1, 1``), kept as text."""

    __slots__ = ("kind", "name", "params", "rets", "linkage", "attrs", "directives", "body", "span")
    kind: str
    name: str
    params: list[Param]
    rets: list[Param]
    linkage: tuple[str, ...]
    attrs: tuple[str, ...]
    directives: list[str]
    body: list[Stmt] | None
    span: Span | None

    def __init__(
        self,
        kind: str,
        name: str,
        params: list[Param],
        rets: list[Param] | None = None,
        linkage: tuple[str, ...] = (),
        attrs: tuple[str, ...] = (),
        directives: list[str] | None = None,
        body: list[Stmt] | None = None,
        span: Span | None = None,
    ) -> None:
        # ".entry" or ".func"
        self.kind = kind
        self.name = name
        self.params = params
        self.rets = [] if rets is None else rets
        self.linkage = linkage
        # e.g. ".noreturn", ".attribute(.unified(…))"
        self.attrs = attrs
        self.directives = [] if directives is None else directives
        self.body = body
        self.span = span

    @property
    def is_entry(self) -> bool:
        return self.kind == ".entry"


class Directive(Node):
    """A module-level directive kept as text: ``.version``, ``.target``,
    ``.address_size``, ``.file``, ``.section`` blocks, and anything else that needs
    no interpretation.  ``name`` is the directive (``.target``) and ``text`` the
    complete source text of the item."""

    __slots__ = ("name", "text", "span")
    name: str
    text: str
    span: Span | None

    def __init__(self, name: str, text: str, span: Span | None = None) -> None:
        self.name = name
        self.text = text
        self.span = span


ModuleItem = Directive | VarDecl | Function


class Module(Node):
    __slots__ = ("items", "filename")
    items: list[ModuleItem]
    filename: str

    def __init__(self, items: list[ModuleItem], filename: str = "<input>") -> None:
        self.items = items
        self.filename = filename

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
