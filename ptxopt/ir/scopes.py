"""Scope resolution: a function body's nested ``{ }`` blocks flattened into one
namespace in which every declaration keeps its own identity.

PTX's scoping rules, as ptxas 13.0.88 applies them (each checked against ptxas by
``tests/test_scopes.py``):

* A register or variable (``.reg``, ``.local``, ``.shared``, ``.param`` ...) is
  visible from its declaration to the end of the block that declares it, nested
  blocks included; a declaration in an inner block shadows an outer one of the same
  name from that point on (an earlier use in the same block still means the outer
  one).
* A label, a ``.branchtargets`` table and a ``.callprototype``/``.calltargets``
  name are visible in the *whole* block that declares them (forward references are
  how loops branch back and ifs branch ahead) and in its nested blocks; an inner
  label shadows an outer one.  So a branch may leave a block but never enter one:
  a label declared in a nested block is unknown outside it, and so is a label of a
  sibling block.  Two labels of one name in the same block are an error.

Resolution gives every declaration an internal name unique in the function: its own
spelling when that is still free, otherwise ``spelling_k`` with the smallest free
``k``. A register range ``%r<N>`` is kept as one entry (names as spelled), never
expanded, unless a nested block redeclares names already taken. The names declared
directly in the function body (and the parameters) are reserved before any nested
block is visited and are never renamed, so labels that DWARF sections refer to keep
their names. Every reference is rewritten to the internal name of the declaration it
resolves to, which makes the flattened body a valid PTX body on its own: the printer
emits the internal names, so sibling blocks that each declare ``LAB_WAIT`` come back
as ``LAB_WAIT`` and ``LAB_WAIT_1``.
:attr:`ScopedBody.origins` keeps, for every name declared in a nested block, its
source spelling and the block it came from.

Variable declarations, branch-target tables and call prototypes move to the top of
the body (``.param`` call slots included: ptxas gives them the same frame either
way); ``.loc`` lines attach to the instruction that follows them.
"""

from __future__ import annotations

import re

from ptxopt.ptx.ast import (
    Addr,
    BranchTargets,
    DebugLoc,
    Expr,
    Function,
    Instr,
    Label,
    Not,
    Operand,
    Pair,
    ParenList,
    PtxError,
    RawStmt,
    Reg,
    RegDecl,
    RegImm,
    Scope,
    Sel,
    Span,
    Stmt,
    Sym,
    VarDecl,
    Vec,
)
from ptxopt.ptx.parser import range_lookup
from ptxopt.record import Node, Record, replace, set_field

# A flattened body item: ("inst", Instr, .loc) | ("label", internal name, None)
# | ("raw", RawStmt, None)
Item = tuple[str, object, DebugLoc | None]

_IDENT = re.compile(r"[A-Za-z_$%][\w$]*")
_PROTO_NAME = re.compile(r"^\s*([A-Za-z_$%][\w$]*)\s*:")


class ScopeInfo(Record):
    """A ``{ }`` block: ``index`` 0 is the function body itself."""

    __slots__ = ("index", "parent", "depth", "span")
    index: int
    parent: int | None
    depth: int
    span: Span | None

    def __init__(self, index: int, parent: int | None, depth: int, span: Span | None) -> None:
        set_field(self, "index", index)
        set_field(self, "parent", parent)
        set_field(self, "depth", depth)
        set_field(self, "span", span)


class NameOrigin(Record):
    """Where an internal name came from: its source spelling, the block that
    declared it and what it names (``reg``, ``var``, ``label``, ``table``)."""

    __slots__ = ("spelling", "block", "kind")
    spelling: str
    block: int
    kind: str

    def __init__(self, spelling: str, block: int, kind: str) -> None:
        set_field(self, "spelling", spelling)
        set_field(self, "block", block)
        set_field(self, "kind", kind)


class ScopedBody(Node):
    """A function body after scope resolution (see the module docstring)."""

    __slots__ = ("items", "regs", "ranges", "head", "scopes", "origins")

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.regs: list[tuple[str, str]] = []  # (internal name, type)
        # ranges %r<N> kept as (stem, count, type): their names are their spellings
        self.ranges: list[tuple[str, int, str]] = []
        self.head: list[Stmt] = []
        self.scopes: list[ScopeInfo] = []
        self.origins: dict[str, NameOrigin] = {}


class _Env:
    """The names visible in one block: labels from the start, registers and
    variables from their declaration on."""

    __slots__ = ("index", "parent", "depth", "names", "labels", "ranges")

    def __init__(self, index: int, parent: _Env | None) -> None:
        self.index = index
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.names: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self.ranges: dict[str, tuple[int, str]] = {}  # unexpanded, named as spelled

    def lookup(self, name: str) -> str | None:
        env: _Env | None = self
        while env is not None:
            got = env.names.get(name)
            if got is None:
                got = env.labels.get(name)
            if got is None and env.ranges and range_lookup(env.ranges, name) is not None:
                got = name
            if got is not None:
                return got
            env = env.parent
        return None

    def lookup_label(self, name: str) -> str | None:
        env: _Env | None = self
        while env is not None:
            got = env.labels.get(name)
            if got is not None:
                return got
            env = env.parent
        return None


def _declared_label(st: Stmt) -> str | None:
    """The scope-wide name a statement declares (label, table, prototype).  Asked of
    every statement: an instruction, by far the most common, is told apart by its
    type alone (a compiled class), before any check against the interpreted ones."""
    if type(st) is Instr:
        return None
    if isinstance(st, (Label, BranchTargets)):
        return st.name
    if isinstance(st, RawStmt) and not st.text.startswith(".pragma"):
        m = _PROTO_NAME.match(st.text)
        return m.group(1) if m else None
    return None


class _Resolver:
    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.out = ScopedBody()
        self.used: set[str] = set()
        self.used_ranges: dict[str, tuple[int, str]] = {}  # every range kept unexpanded
        self.next_suffix: dict[str, int] = {}
        self.pending_loc: DebugLoc | None = None

    def taken(self, name: str) -> bool:
        return name in self.used or (
            bool(self.used_ranges) and range_lookup(self.used_ranges, name) is not None
        )

    def lazy_range(self, stem: str, count: int, env: _Env) -> bool:
        """A range keeps its spelling, unexpanded (memory and time independent of the
        count), unless a name of it is already taken in the function: then its
        names are claimed one by one (renamed where they clash)."""
        if env.depth == 0:
            return True
        if stem in self.used_ranges:
            return False
        probe = {stem: (count, "")}
        return not any(range_lookup(probe, n) for n in self.used)

    # -- naming ---------------------------------------------------------------

    def reserve_top(self, body: list[Stmt]) -> None:
        for p in self.fn.params + self.fn.rets:
            self.used.add(p.name)
        for st in body:
            if type(st) is Instr:
                continue  # declares nothing (and is most of the body)
            if isinstance(st, RegDecl):
                for spelled, count in st.names:
                    if count is None:
                        self.used.add(spelled)
                    else:
                        self.used_ranges[spelled] = (count, st.type)
            elif isinstance(st, VarDecl):
                self.used.add(st.name)
            else:
                name = _declared_label(st)
                if name is not None:
                    self.used.add(name)

    def claim(self, spelling: str, env: _Env, kind: str) -> str:
        if env.depth == 0:
            return spelling
        name = spelling
        if self.taken(name):
            k = self.next_suffix.get(spelling, 0) + 1
            while self.taken(f"{spelling}_{k}"):
                k += 1
            self.next_suffix[spelling] = k
            name = f"{spelling}_{k}"
        self.used.add(name)
        self.out.origins[name] = NameOrigin(spelling, env.index, kind)
        return name

    # -- walking --------------------------------------------------------------

    def enter(self, body: list[Stmt], parent: _Env | None, span: Span | None) -> _Env:
        env = _Env(len(self.out.scopes), parent)
        self.out.scopes.append(
            ScopeInfo(env.index, None if parent is None else parent.index, env.depth, span)
        )
        first: dict[str, Span | None] = {}
        for st in body:
            name = _declared_label(st)
            if name is None:
                continue
            if name in env.labels:
                where = first[name]
                at = f" (first defined at line {where.line})" if where is not None else ""
                raise PtxError(st.span, f"duplicate definition of label '{name}' in one block{at}")
            first[name] = st.span
            kind = "table" if isinstance(st, BranchTargets) else "label"
            env.labels[name] = self.claim(name, env, kind)
        return env

    def walk(self, body: list[Stmt], env: _Env) -> None:
        out = self.out
        for st in body:
            t = type(st)
            if t is Instr:
                ins = self.instr(st, env)  # type: ignore[arg-type]
                out.items.append(("inst", ins, self.pending_loc))
                self.pending_loc = None
            elif t is Label:
                out.items.append(("label", env.labels[st.name], None))  # type: ignore[union-attr]
            elif t is DebugLoc:
                loc: DebugLoc = st  # type: ignore[assignment]
                prev = self.pending_loc
                if prev is not None:  # two .loc lines in a row: keep the first too
                    loc = replace(loc, before=(*prev.before, replace(prev, before=())))
                self.pending_loc = loc
            elif t is RegDecl:
                d: RegDecl = st  # type: ignore[assignment]
                for spelled, count in d.names:
                    if count is not None and self.lazy_range(spelled, count, env):
                        env.ranges[spelled] = (count, d.type)
                        self.used_ranges[spelled] = (count, d.type)
                        out.ranges.append((spelled, count, d.type))
                        continue
                    names = [spelled] if count is None else [f"{spelled}{i}" for i in range(count)]
                    for n in names:
                        internal = self.claim(n, env, "reg")
                        env.names[n] = internal
                        out.regs.append((internal, d.type))
            elif t is VarDecl:
                v: VarDecl = st  # type: ignore[assignment]
                internal = self.claim(v.name, env, "var")
                env.names[v.name] = internal
                out.head.append(_renamed_var(v, internal) if internal != v.name else v)
            elif t is Scope:
                sc: Scope = st  # type: ignore[assignment]
                self.walk(sc.body, self.enter(sc.body, env, sc.span))
            elif t is BranchTargets:
                out.head.append(self.table(st, env))  # type: ignore[arg-type]
            elif t is RawStmt:
                raw: RawStmt = st  # type: ignore[assignment]
                if raw.text.startswith(".pragma"):
                    out.items.append(("raw", raw, None))
                else:
                    out.head.append(_renamed_raw(raw, env))

    def table(self, st: BranchTargets, env: _Env) -> BranchTargets:
        labels = []
        for lab in st.labels:
            got = env.lookup_label(lab)
            if got is None:
                raise PtxError(st.span, self.unknown_label(lab, ".branchtargets entry"))
            labels.append(got)
        return BranchTargets(env.labels[st.name], labels, st.span)

    def instr(self, ins: Instr, env: _Env) -> Instr:
        op = ins.opcode
        ops = ins.operands
        if op in ("bra", "brx") and ops and isinstance(ops[-1], Sym):
            target = ops[-1].name
            if env.lookup_label(target) is None:
                what = "branch target" if op == "bra" else "brx.idx table"
                raise PtxError(ins.span, self.unknown_label(target, what))
        if env.parent is None:
            return ins  # names of the body itself resolve to their own spelling
        new_ops = [_resolve(o, env) for o in ops]
        pred = ins.pred
        if pred is not None:
            got = env.lookup(pred.name)
            if got is not None and got != pred.name:
                pred = Reg(got)
        if pred is ins.pred and all(a is b for a, b in zip(new_ops, ops, strict=True)):
            return ins
        return Instr(ins.opcode, ins.mods, new_ops, pred, ins.pred_neg, ins.span)

    def unknown_label(self, name: str, what: str) -> str:
        msg = f"{what} '{name}' is not a label visible here"
        hidden = _find_label(self.fn.body or [], name)
        if hidden is not None and hidden.span is not None:
            msg += (
                f" (it is declared inside a nested block at line {hidden.span.line};"
                " a branch cannot enter a block)"
            )
        return msg


def _find_label(body: list[Stmt], name: str) -> Stmt | None:
    for st in body:
        if isinstance(st, Scope):
            got = _find_label(st.body, name)
            if got is not None:
                return got
        elif _declared_label(st) == name:
            return st
    return None


def _resolve(op: Operand, env: _Env) -> Operand:
    t = type(op)
    if t is Reg or t is Sym:
        got = env.lookup(op.name)  # type: ignore[union-attr]
        if got is None or got == op.name:  # type: ignore[union-attr]
            return op
        return Reg(got) if t is Reg else Sym(got)
    if t is Addr:
        a: Addr = op  # type: ignore[assignment]
        base = _resolve(a.base, env) if a.base is not None else None
        extra = _resolve_all(a.extra, env)
        if base is a.base and extra is None:
            return op
        return Addr(base, a.offset, a.extra if extra is None else extra, a.plus_zero)
    if t is Vec:
        elems = _resolve_all(op.elems, env)  # type: ignore[union-attr]
        return op if elems is None else Vec(elems)
    if t is Pair:
        first, second = _resolve(op.first, env), _resolve(op.second, env)  # type: ignore[union-attr]
        if first is op.first and second is op.second:  # type: ignore[union-attr]
            return op
        return Pair(first, second)
    if t is RegImm:
        reg = _resolve(op.reg, env)  # type: ignore[union-attr]
        return op if reg is op.reg else RegImm(reg, op.offset)  # type: ignore[union-attr, arg-type]
    if t is Not:
        inner = _resolve(op.operand, env)  # type: ignore[union-attr]
        return op if inner is op.operand else Not(inner)  # type: ignore[union-attr, arg-type]
    if t is Sel:
        s: Sel = op  # type: ignore[assignment]
        reg = _resolve(s.reg, env)
        return op if reg is s.reg else Sel(reg, s.sel, s.neg)  # type: ignore[arg-type]
    if t is ParenList:
        items = _resolve_all(op.items, env)  # type: ignore[union-attr]
        return op if items is None else ParenList(items)
    if t is Expr:
        text = _IDENT.sub(lambda m: env.lookup(m.group(0)) or m.group(0), op.text)  # type: ignore[union-attr]
        return op if text == op.text else Expr(text)  # type: ignore[union-attr]
    return op


def _resolve_all(ops: tuple[Operand, ...], env: _Env) -> tuple[Operand, ...] | None:
    """``ops`` resolved, or ``None`` when nothing changed."""
    new = tuple(_resolve(o, env) for o in ops)
    return None if all(a is b for a, b in zip(new, ops, strict=True)) else new


def _renamed_var(v: VarDecl, name: str) -> VarDecl:
    return VarDecl(
        v.space, v.type, name, v.linkage, v.align, v.vector, v.dims, v.init, v.attrs, v.span
    )


def _renamed_raw(raw: RawStmt, env: _Env) -> RawStmt:
    m = _PROTO_NAME.match(raw.text)
    if m is None:
        return raw
    internal = env.labels.get(m.group(1), m.group(1))
    if internal == m.group(1):
        return raw
    return RawStmt(raw.text[: m.start(1)] + internal + raw.text[m.end(1) :], raw.span)


def resolve_scopes(fn: Function) -> ScopedBody:
    """Flatten ``fn``'s body (see the module docstring); raise :class:`PtxError` on
    a reference to a label that is not visible or a label defined twice in a block."""
    assert fn.body is not None
    res = _Resolver(fn)
    res.reserve_top(fn.body)
    res.walk(fn.body, res.enter(fn.body, None, fn.span))
    return res.out
