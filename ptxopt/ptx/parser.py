"""Recursive-descent parser from PTX text to the AST of :mod:`ptxopt.ptx.ast`.

Grammar follows the PTX ISA 9.0 module structure: module-level directives
(``.version``, ``.target``, ``.address_size``, ``.file``, ``.section``), variables,
and ``.entry``/``.func`` definitions whose bodies hold declarations, labels,
instructions and nested ``{ }`` scopes.  Line-oriented directives (``.version``,
``.target``, ``.file``, ``.loc``) are read to the end of their line.  Registers are
checked against the declarations in scope, so a use of an undeclared register is
reported where it occurs.
"""

from __future__ import annotations

import re
import struct

from ptxopt.ptx.ast import (
    Addr,
    BranchTargets,
    DebugLoc,
    Directive,
    Expr,
    Function,
    Imm,
    Instr,
    Label,
    Module,
    ModuleItem,
    Not,
    Operand,
    Pair,
    Param,
    ParenList,
    PtxError,
    RawStmt,
    Reg,
    RegDecl,
    Scope,
    Sink,
    Stmt,
    Sym,
    VarDecl,
    Vec,
)
from ptxopt.ptx.lexer import DIR, EOF, ID, NUM, PUNCT, STR, SourceMap, Token, tokenize
from ptxopt.ptx.opcodes import is_special_register

# opcode spelling -> (head, modifiers); shared by all parses (a bounded vocabulary)
_OPCODES: dict[str, tuple[str, tuple[str, ...]]] = {}
_LINE_DIRECTIVES = frozenset({".version", ".target", ".address_size", ".file"})
_LINKAGE = frozenset({".visible", ".extern", ".weak", ".common"})
_SPACES = frozenset({".global", ".const", ".shared", ".local", ".param", ".tex"})
_VAR_ATTRS = frozenset({".managed", ".ptr", ".attribute"})
_FUNC_DIRECTIVES = frozenset(
    {
        ".maxntid",
        ".reqntid",
        ".minnctapersm",
        ".maxnctapersm",
        ".maxnreg",
        ".pragma",
        ".maxclusterrank",
        ".reqnctapercluster",
        ".explicitcluster",
        ".blocksareclusters",
        ".abi_preserve",
        ".abi_preserve_control",
    }
)


def parse_int(text: str) -> int:
    """Decode a PTX integer literal (decimal, hex, octal, binary, optional ``U``)."""
    t = text[:-1] if text.endswith(("U", "u")) else text
    if t[:2] in ("0x", "0X"):
        return int(t[2:], 16)
    if t[:2] in ("0b", "0B"):
        return int(t[2:], 2)
    if len(t) > 1 and t[0] == "0" and t.isdigit():
        return int(t, 8)
    return int(t)


def parse_number(text: str, negative: bool = False) -> Imm:
    """Build an :class:`Imm` from a number token (and an optional leading minus)."""
    c1 = text[1:2]
    sign = "-" if negative else ""
    if text[0] == "0" and c1 in ("f", "F"):
        value: int | float = struct.unpack(">f", bytes.fromhex(text[2:]))[0]
        return Imm(-value if negative else value, sign + text, "f32")
    if text[0] == "0" and c1 in ("d", "D"):
        value = struct.unpack(">d", bytes.fromhex(text[2:]))[0]
        return Imm(-value if negative else value, sign + text, "f64")
    if "." in text or (("e" in text or "E" in text) and c1 not in ("x", "X")):
        value = float(text)
        return Imm(-value if negative else value, sign + text, "f64")
    ivalue = parse_int(text)
    return Imm(-ivalue if negative else ivalue, sign + text, "int")


class _RegScope:
    """Registers declared in one ``{ }`` scope (ranges ``%r<N>`` expanded)."""

    __slots__ = ("names", "parent")

    def __init__(self, parent: _RegScope | None) -> None:
        self.names: set[str] = set()
        self.parent = parent

    def declared(self, name: str) -> bool:
        scope: _RegScope | None = self
        while scope is not None:
            if name in scope.names:
                return True
            scope = scope.parent
        return False


class Parser:
    def __init__(self, text: str, filename: str = "<input>") -> None:
        self.text = text
        self.filename = filename
        self.smap = SourceMap(text, filename)
        self.toks: list[Token] = tokenize(text, self.smap)
        self.i = 0
        self.regs = _RegScope(None)
        # registers already checked as declared in the current scope chain
        self.reg_cache: dict[str, Reg] = {}
        # Module-level symbols (variables, functions) are never registers.

    # -- token helpers -----------------------------------------------------

    def span(self, offset: int | None = None):  # type: ignore[no-untyped-def]
        if offset is None:
            offset = self.toks[self.i][2]
        return self.smap.span(offset)

    def error(self, message: str, offset: int | None = None) -> PtxError:
        return PtxError(self.span(offset), message)

    def peek(self) -> Token:
        return self.toks[self.i]

    def next(self) -> Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def describe(self, tok: Token) -> str:
        return "end of file" if tok[0] == EOF else repr(tok[1])

    def expect(self, text: str) -> Token:
        tok = self.toks[self.i]
        if tok[1] != text or tok[0] == STR:
            raise self.error(f"expected '{text}', found {self.describe(tok)}", tok[2])
        self.i += 1
        return tok

    def accept(self, text: str) -> bool:
        tok = self.toks[self.i]
        if tok[1] == text and tok[0] != STR:
            self.i += 1
            return True
        return False

    def expect_kind(self, kind: int, what: str) -> Token:
        tok = self.toks[self.i]
        if tok[0] != kind:
            raise self.error(f"expected {what}, found {self.describe(tok)}", tok[2])
        self.i += 1
        return tok

    def int_of(self, tok: Token) -> int:
        """The value of an integer token; a clear error for any other number."""
        imm = parse_number(tok[1])
        if imm.kind != "int":
            raise self.error(f"expected an integer, found {tok[1]!r}", tok[2])
        return int(imm.value)

    def expect_int(self) -> int:
        neg = self.accept("-")
        tok = self.expect_kind(NUM, "an integer")
        imm = parse_number(tok[1], neg)
        if imm.kind != "int":
            raise self.error("expected an integer", tok[2])
        return int(imm.value)

    def skip_to_line_end(self, start: int) -> str:
        """Consume every token that starts on the line of ``start``; return its text."""
        end = self.smap.line_end(start)
        text = self.text[start:end]
        cut = text.find("//")
        if cut >= 0:
            text = text[:cut]
        toks = self.toks
        while toks[self.i][0] != EOF and toks[self.i][2] < end:
            self.i += 1
        return text.strip()

    def skip_to_semicolon(self) -> int:
        """Consume tokens up to and including the next ``;`` (balanced braces);
        return the offset of the ``;``."""
        depth = 0
        while True:
            tok = self.next()
            if tok[0] == EOF:
                raise self.error("expected ';', found end of file", tok[2])
            if tok[0] == PUNCT:
                c = tok[1]
                if c in "{(":
                    depth += 1
                elif c in "})":
                    depth -= 1
                elif c == ";" and depth <= 0:
                    return tok[2]

    # -- module ------------------------------------------------------------

    def parse_module(self) -> Module:
        items: list[ModuleItem] = []
        while True:
            tok = self.peek()
            kind, text, off = tok
            if kind == EOF:
                break
            if kind != DIR:
                raise self.error(f"expected a directive, found {self.describe(tok)}")
            if text in _LINE_DIRECTIVES:
                self.i += 1
                items.append(Directive(text, self.skip_to_line_end(off), self.span(off)))
            elif text == ".section":
                items.append(self.parse_section())
            else:
                items.append(self.parse_declaration())
        return Module(items, self.filename)

    def parse_section(self) -> Directive:
        start = self.next()[2]
        self.next()  # section name
        self.expect("{")
        depth = 1
        while depth:
            tok = self.next()
            if tok[0] == EOF:
                raise self.error("expected '}' to close .section, found end of file", tok[2])
            if tok[0] == PUNCT:
                if tok[1] == "{":
                    depth += 1
                elif tok[1] == "}":
                    depth -= 1
        end = self.toks[self.i - 1][2] + 1
        return Directive(".section", self.text[start:end], self.span(start))

    def parse_declaration(self) -> ModuleItem:
        start = self.peek()[2]
        linkage: list[str] = []
        while self.peek()[1] in _LINKAGE and self.peek()[0] == DIR:
            linkage.append(self.next()[1])
        tok = self.peek()
        if tok[1] in (".entry", ".func"):
            return self.parse_function(tuple(linkage), start)
        if tok[1] in _SPACES:
            return self.parse_var(tuple(linkage), start)
        if tok[1] == ".alias" or tok[1] == ".pragma":
            self.next()
            end = self.skip_to_semicolon()
            return Directive(tok[1], self.text[start : end + 1], self.span(start))
        raise self.error(f"unexpected {self.describe(tok)} at module level")

    def parse_var(self, linkage: tuple[str, ...], start: int) -> VarDecl:
        space = self.next()[1]
        align: int | None = None
        vector = ""
        vtype = ""
        attrs: list[str] = []
        while True:
            kind, text, off = self.peek()
            if kind != DIR:
                break
            self.i += 1
            if text == ".align":
                align = self.expect_int()
            elif text in (".v2", ".v4", ".v8"):
                vector = text
            elif text in _VAR_ATTRS:
                if text == ".attribute":
                    a0 = self.i
                    self.expect("(")
                    self.skip_balanced(")")
                    attrs.append(".attribute" + self.raw(a0, self.i))
                else:
                    attrs.append(text)
            elif text in _SPACES:
                attrs.append(text)
            else:
                vtype = text
        name_tok = self.expect_kind(ID, "a variable name")
        dims = self.parse_dims()
        init: str | None = None
        if self.accept("="):
            init_start = self.peek()[2]
            end = self.skip_to_semicolon()
            init = " ".join(self.text[init_start:end].split())
        else:
            self.expect(";")
        return VarDecl(
            space,
            vtype,
            name_tok[1],
            linkage,
            align,
            vector,
            dims,
            init,
            tuple(attrs),
            self.span(start),
        )

    def raw(self, i0: int, i1: int) -> str:
        """Source text of tokens ``i0`` .. ``i1 - 1`` with whitespace normalized."""
        start = self.toks[i0][2]
        last = self.toks[i1 - 1]
        return " ".join(self.text[start : last[2] + len(last[1])].split())

    def skip_balanced(self, close: str) -> None:
        depth = 1
        opener = {")": "(", "]": "[", "}": "{"}[close]
        while depth:
            tok = self.next()
            if tok[0] == EOF:
                raise self.error(f"expected '{close}', found end of file", tok[2])
            if tok[0] == PUNCT:
                if tok[1] == opener:
                    depth += 1
                elif tok[1] == close:
                    depth -= 1

    def parse_dims(self) -> list[int | None]:
        dims: list[int | None] = []
        while self.accept("["):
            if self.accept("]"):
                dims.append(None)
                continue
            dims.append(self.expect_int())
            self.expect("]")
        return dims

    def parse_param(self) -> Param:
        start = self.peek()[2]
        space_tok = self.next()
        if space_tok[1] not in (".param", ".reg"):
            raise self.error(
                f"expected '.param' or '.reg', found {self.describe(space_tok)}", space_tok[2]
            )
        align: int | None = None
        ptype = ""
        attrs: list[str] = []
        while self.peek()[0] == DIR:
            text = self.next()[1]
            if text == ".align" and not ptype:
                align = self.expect_int()
            elif text == ".align":
                attrs.append(f".align {self.expect_int()}")
            elif text == ".ptr" or text in _SPACES or text.startswith(".shared"):
                attrs.append(text)
            elif not ptype:
                ptype = text
            else:
                attrs.append(text)
        name_tok = self.expect_kind(ID, "a parameter name")
        dims = self.parse_dims()
        return Param(space_tok[1], ptype, name_tok[1], align, dims, tuple(attrs), self.span(start))

    def parse_param_list(self) -> list[Param]:
        params: list[Param] = []
        self.expect("(")
        if self.accept(")"):
            return params
        while True:
            params.append(self.parse_param())
            if self.accept(")"):
                return params
            self.expect(",")

    def parse_function(self, linkage: tuple[str, ...], start: int) -> Function:
        kind = self.next()[1]
        rets: list[Param] = []
        if kind == ".func" and self.peek()[1] == "(":
            rets = self.parse_param_list()
        name_tok = self.expect_kind(ID, "a function name")
        params: list[Param] = []
        if self.peek()[1] == "(":
            params = self.parse_param_list()
        attrs: list[str] = []
        directives: list[str] = []
        while True:
            kind_, text, off = self.peek()
            if kind_ != DIR:
                break
            if text == ".noreturn":
                self.i += 1
                attrs.append(text)
            elif text == ".attribute":
                i0 = self.i
                self.i += 1
                self.expect("(")
                self.skip_balanced(")")
                attrs.append(self.raw(i0, self.i))
            elif text in _FUNC_DIRECTIVES:
                i0 = self.i
                self.i += 1
                if text == ".pragma":
                    self.skip_to_semicolon()
                    directives.append(self.raw(i0, self.i))
                    continue
                while self.peek()[0] in (NUM, PUNCT) and self.peek()[1] not in ("{", ";"):
                    self.i += 1
                directives.append(self.raw(i0, self.i))
            else:
                raise self.error(f"unexpected {text!r} in the signature of '{name_tok[1]}'")
        fn = Function(
            kind,
            name_tok[1],
            params,
            rets,
            linkage,
            tuple(attrs),
            directives,
            None,
            self.span(start),
        )
        if self.accept(";"):
            return fn
        self.regs = _RegScope(None)
        self.reg_cache = {}
        for p in params + rets:
            if p.space == ".reg":
                self.regs.names.add(p.name)
        open_tok = self.expect("{")
        fn.body = self.parse_body(open_tok[2])
        return fn

    # -- function bodies -----------------------------------------------------

    def parse_body(self, open_offset: int) -> list[Stmt]:
        """Statements up to the matching ``}`` (already past the ``{``)."""
        body: list[Stmt] = []
        append = body.append
        toks = self.toks
        while True:
            kind, text, off = toks[self.i]
            if kind == ID:
                nxt = toks[self.i + 1]
                if nxt[1] == ":" and nxt[0] == PUNCT:
                    append(self.parse_labelled())
                else:
                    append(self.parse_instr(None, False, off))
            elif kind == PUNCT:
                if text == "}":
                    self.i += 1
                    return body
                if text == "@":
                    self.i += 1
                    neg = self.accept("!")
                    ptok = self.expect_kind(ID, "a predicate register")
                    self.check_reg(ptok)
                    append(self.parse_instr(Reg(ptok[1]), neg, off))
                elif text == "{":
                    self.i += 1
                    self.regs = _RegScope(self.regs)
                    inner = self.parse_body(off)
                    assert self.regs.parent is not None
                    self.regs = self.regs.parent
                    self.reg_cache = {}  # the inner scope's registers are gone
                    append(Scope(inner, self.span(off)))
                elif text == ";":
                    self.i += 1
                else:
                    raise self.error(f"expected a statement, found {text!r}")
            elif kind == DIR:
                append(self.parse_body_directive())
            elif kind == EOF:
                raise self.error("expected '}', found end of file (unterminated body)", off)
            else:
                raise self.error(f"expected a statement, found {self.describe(toks[self.i])}")

    def parse_labelled(self) -> Stmt:
        name_tok = self.next()
        self.next()  # ':'
        nxt = self.peek()
        if nxt[0] == DIR and nxt[1] == ".branchtargets":
            self.i += 1
            labels: list[str] = []
            while True:
                labels.append(self.expect_kind(ID, "a label")[1])
                if self.accept(";"):
                    break
                self.expect(",")
            return BranchTargets(name_tok[1], labels, self.span(name_tok[2]))
        if nxt[0] == DIR and nxt[1] in (".callprototype", ".calltargets"):
            i0 = self.i - 2
            self.skip_to_semicolon()
            return RawStmt(self.raw(i0, self.i), self.span(name_tok[2]))
        return Label(name_tok[1], self.span(name_tok[2]))

    def parse_body_directive(self) -> Stmt:
        kind, text, off = self.peek()
        if text == ".reg":
            return self.parse_reg_decl()
        if text == ".loc":
            self.i += 1
            raw = self.skip_to_line_end(off)
            parts = raw.split(None, 4)
            try:
                file_no, line, col = int(parts[1]), int(parts[2]), int(parts[3].rstrip(","))
            except (IndexError, ValueError):
                raise self.error("malformed .loc directive", off) from None
            extra = raw.split(",", 1)[1].strip() if "," in raw else ""
            return DebugLoc(file_no, line, col, extra, self.span(off))
        if text == ".pragma":
            i0 = self.i
            self.skip_to_semicolon()
            return RawStmt(self.raw(i0, self.i), self.span(off))
        linkage: list[str] = []
        while self.peek()[1] in _LINKAGE:
            linkage.append(self.next()[1])
        if self.peek()[1] in _SPACES:
            return self.parse_var(tuple(linkage), off)
        raise self.error(f"unexpected directive {self.peek()[1]!r} in a function body")

    def parse_reg_decl(self) -> RegDecl:
        off = self.next()[2]
        rtype = ""
        vector = ""
        align: int | None = None
        while self.peek()[0] == DIR:
            t = self.next()[1]
            if t in (".v2", ".v4", ".v8"):
                vector = t
            elif t == ".align":
                align = self.expect_int()
            else:
                rtype = t
        if not rtype:
            raise self.error("expected a register type in .reg declaration", off)
        names: list[tuple[str, int | None]] = []
        scope = self.regs
        while True:
            name = self.expect_kind(ID, "a register name")[1]
            if self.accept("<"):
                count = self.expect_int()
                self.expect(">")
                names.append((name, count))
                scope.names.update([f"{name}{k}" for k in range(count)])
            else:
                names.append((name, None))
                scope.names.add(name)
            if self.accept(";"):
                break
            self.expect(",")
        return RegDecl(rtype, names, vector, align, self.span(off))

    def check_reg(self, tok: Token) -> None:
        name = tok[1]
        if not self.regs.declared(name) and not is_special_register(name):
            raise self.error(f"undeclared register '{name}'", tok[2])

    def parse_instr(self, pred: Reg | None, neg: bool, start: int) -> Instr:
        op_tok = self.next()
        if op_tok[0] != ID:
            raise self.error(f"expected an instruction, found {self.describe(op_tok)}", op_tok[2])
        full = op_tok[1]
        split = _OPCODES.get(full)
        if split is None:
            dot = full.find(".")
            if dot < 0:
                split = (full, ())
            else:
                split = (full[:dot], tuple("." + m for m in full[dot + 1 :].split(".")))
            _OPCODES[full] = split
        opcode, mods = split
        operands: list[Operand] = []
        toks = self.toks
        if toks[self.i][1] != ";":
            while True:
                operands.append(self.parse_operand())
                tok = toks[self.i]
                if tok[1] == ";" and tok[0] == PUNCT:
                    break
                if tok[1] != "," or tok[0] != PUNCT:
                    raise self.error(
                        f"expected ',' or ';' after operand, found {self.describe(tok)}", tok[2]
                    )
                self.i += 1
        self.i += 1
        return Instr(opcode, mods, operands, pred, neg, self.smap.span(start))

    def parse_operand(self) -> Operand:
        kind, text, off = self.toks[self.i]
        if kind == ID:
            self.i += 1
            if text == "_":
                return Sink()
            if text[0] == "%" or self.regs.declared(text):
                reg = self.reg_cache.get(text)
                if reg is None:
                    self.check_reg((kind, text, off))
                    reg = self.reg_cache[text] = Reg(text)
                nxt = self.toks[self.i]
                if nxt[1] == "|" and nxt[0] == PUNCT:
                    self.i += 1
                    second = self.parse_operand()
                    return Pair(reg, second)
                return reg
            nxt = self.toks[self.i]
            if nxt[0] == PUNCT and nxt[1] in "+-" and self.toks[self.i + 1][0] == NUM:
                self.i += 2
                return Expr(f"{text}{nxt[1]}{self.toks[self.i - 1][1]}")
            if nxt[0] == PUNCT and nxt[1] == "(":
                # generic(sym) and similar address operators
                i0 = self.i - 1
                self.i += 1
                self.skip_balanced(")")
                return Expr(self.raw(i0, self.i))
            return Sym(text)
        if kind == NUM:
            self.i += 1
            return parse_number(text)
        if kind == PUNCT:
            if text == "-":
                self.i += 1
                num = self.expect_kind(NUM, "a number after '-'")
                return parse_number(num[1], True)
            if text == "[":
                return self.parse_address()
            if text == "{":
                self.i += 1
                elems: list[Operand] = []
                if not self.accept("}"):
                    while True:
                        elems.append(self.parse_operand())
                        if self.accept("}"):
                            break
                        self.expect(",")
                return Vec(tuple(elems))
            if text == "(":
                self.i += 1
                items: list[Operand] = []
                if not self.accept(")"):
                    while True:
                        items.append(self.parse_operand())
                        if self.accept(")"):
                            break
                        self.expect(",")
                return ParenList(tuple(items))
            if text == "!":
                self.i += 1
                rtok = self.expect_kind(ID, "a predicate register after '!'")
                self.check_reg(rtok)
                return Not(Reg(rtok[1]))
        raise self.error(f"expected an operand, found {self.describe(self.toks[self.i])}", off)

    def parse_address(self) -> Addr:
        self.i += 1  # '['
        kind, text, off = self.toks[self.i]
        base: Operand | None
        offset = 0
        if kind == NUM:
            self.i += 1
            base = None
            offset = self.int_of((kind, text, off))
        else:
            base = self.parse_operand()
            if isinstance(base, Expr) and "(" not in base.text:
                # sym+4 parsed as an expression: split it back into base + offset
                name, sign, num = re.split(r"([+-])", base.text, maxsplit=1)
                base = Sym(name)
                try:
                    offset = parse_int(num) * (-1 if sign == "-" else 1)
                except ValueError:
                    raise self.error(f"expected an integer offset, found {num!r}", off) from None
        while True:
            tok = self.toks[self.i]
            if tok[1] == "+" and tok[0] == PUNCT:
                self.i += 1
                neg = self.accept("-")
                num = self.expect_kind(NUM, "an offset")
                offset += -self.int_of(num) if neg else self.int_of(num)
            elif tok[1] == "-" and tok[0] == PUNCT:
                self.i += 1
                num = self.expect_kind(NUM, "an offset")
                offset -= self.int_of(num)
            else:
                break
        extra: list[Operand] = []
        while self.accept(","):
            extra.append(self.parse_operand())
        self.expect("]")
        return Addr(base, offset, tuple(extra))


def parse(text: str, filename: str = "<input>") -> Module:
    """Parse PTX ``text``; raise :class:`PtxError` with a source span on bad input."""
    return Parser(text, filename).parse_module()


def parse_file(path: str) -> Module:
    with open(path, encoding="utf-8") as f:
        return parse(f.read(), path)
