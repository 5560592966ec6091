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

import functools
import gc
import math
import re
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager

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
    RegImm,
    Scope,
    Sel,
    Sink,
    Span,
    Stmt,
    Sym,
    VarDecl,
    Vec,
)
from ptxopt.ptx.constexpr import ExprError, ExprParser
from ptxopt.ptx.forms import IGNORED_MODIFIERS as _IGNORED
from ptxopt.ptx.lexer import (
    DATA,
    DIR,
    EOF,
    ID,
    INIT_LIST,
    INSTR,
    NUM,
    PUNCT,
    STR,
    SourceMap,
    Token,
    tokenize,
    tokenize_span,
)
from ptxopt.ptx.opcodes import is_special_register
from ptxopt.ptx.types import bit_width, is_type

# opcode spelling -> (head, modifiers); shared by all parses (a bounded vocabulary)
_OPCODES: dict[str, tuple[str, tuple[str, ...]]] = {}
# byte/half-word selectors of video instruction operands: .b0 .. .b7654, .h0 .. .h32
_VIDEO_SELECTOR = re.compile(r"\.(b[0-7]{1,4}|h[0-3]{1,2})$")
VIDEO_OPCODES = frozenset(
    {"vadd", "vsub", "vabsdiff", "vmin", "vmax", "vshl", "vshr", "vmad", "vset"}
    | {
        f"{op}{n}"
        for op in ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax", "vset")
        for n in (2, 4)
    }
)


def _loc_number_ok(v: int) -> bool:
    """A .loc number read as 64 bits fits 32 bits signed or unsigned (measured:
    18446744073709551615, i.e. -1, and 4294967295 pass; 4294967296 is refused)."""
    v &= 0xFFFFFFFFFFFFFFFF
    if v >> 63:
        v -= 1 << 64
    return -(1 << 31) <= v < 1 << 32


# function directives that take numbers (.reqntid 128, 1, 1)
_SIZED_DIRECTIVES = frozenset(
    {".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".maxclusterrank",
     ".reqnctapercluster"}
)  # fmt: skip
_HEADER_DIRECTIVES = frozenset({".version", ".target", ".address_size", ".file"})
_SECTION_DATA = frozenset({".b8", ".b16", ".b32", ".b64"})
_LOC_ATTRS = frozenset({"function_name", "inlined_at"})
_BITS_FLOAT = frozenset({"0f", "0F", "0d", "0D"})
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


_U64 = (1 << 64) - 1
_SIGN = 1 << 63
_DIGIT_BASE = {"0x": 16, "0X": 16, "0b": 2, "0B": 2}
DBL_MIN = 2.2250738585072014e-308


# Most digits a literal of each base can have without the running value ever
# reaching 2**63 before its last digit (so no overflow check is needed).
_SAFE_DIGITS = {10: 19, 16: 16, 8: 22, 2: 64}


def _accumulate(digits: str, base: int) -> int:
    """Value of ``digits`` modulo 2**64, as ptxas computes it: before each digit
    after the first, the running value must be below 2**63 ("Constant overflow")."""
    if 0 < len(digits) <= _SAFE_DIGITS[base] and digits.isascii() and digits.isalnum():
        return int(digits, base) & _U64  # fast path: short, plain digits
    value = 0
    for k, ch in enumerate(digits):
        if k and value & _SIGN:
            raise ValueError("integer constant overflow")
        value = (value * base + int(ch, base)) & _U64
    return value


def parse_int(text: str) -> int:
    """Decode a PTX integer literal (decimal, hex, octal, binary, optional ``U``);
    ``ValueError`` for a malformed or overflowing one."""
    t = text[:-1] if text.endswith("U") else text
    base = _DIGIT_BASE.get(t[:2])
    if base is not None:
        return _accumulate(t[2:], base)
    if len(t) > 1 and t[0] == "0":
        return _accumulate(t[1:], 8)
    return _accumulate(t, 10)


def parse_float(text: str) -> float:
    """A decimal floating-point literal; ``ValueError`` where ptxas reports an overflow
    (the double is infinite, subnormal, or a non-zero value that rounds to 0)."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("floating-point constant overflow")
    if value == 0.0:
        mantissa = text.split("e")[0].split("E")[0]
        if any(c in "123456789" for c in mantissa):
            raise ValueError("floating-point constant underflow")
    elif abs(value) < DBL_MIN:
        raise ValueError("floating-point constant underflow")
    return value


@functools.lru_cache(maxsize=4096)
def parse_number(text: str, negative: bool = False) -> Imm:
    """Build an :class:`Imm` from a number token (and an optional leading minus);
    ``ValueError`` for an out-of-range literal.  Cached: large data initializers
    repeat a few literals many times, and an :class:`Imm` is immutable."""
    c1 = text[1:2]
    sign = "-" if negative else ""
    if text[0] == "0" and c1 in ("f", "F"):
        value: int | float = struct.unpack(">f", bytes.fromhex(text[2:]))[0]
        return Imm(-value if negative else value, sign + text, "f32")
    if text[0] == "0" and c1 in ("d", "D"):
        value = struct.unpack(">d", bytes.fromhex(text[2:]))[0]
        return Imm(-value if negative else value, sign + text, "f64")
    if "." in text or (("e" in text or "E" in text) and c1 not in ("x", "X")):
        value = parse_float(text)
        return Imm(-value if negative else value, sign + text, "f64")
    ivalue = parse_int(text)
    return Imm(-ivalue if negative else ivalue, sign + text, "int")


_COMPONENTS = {".x": 0, ".y": 1, ".z": 2, ".w": 3, ".r": 0, ".g": 1, ".b": 2, ".a": 3}
_COMPONENT_NAMES = ("x", "y", "z", "w")
# ptxas's parser stack allows this many nested { } blocks (deeper: "memory exhausted")
MAX_BLOCK_DEPTH = 1663


def vector_component(name: str, index: int) -> str:
    """The scalar register standing for component ``index`` of vector register
    ``name`` (``v`` -> ``v$x``): ``$`` is legal in PTX identifiers."""
    return f"{name}${_COMPONENT_NAMES[index]}"


class _RegScope:
    """Registers declared in one ``{ }`` scope.  A range ``%r<N>`` is kept as its stem
    and count, never expanded: lookups split a name into stem and index."""

    __slots__ = ("names", "ranges", "vectors", "parent")

    def __init__(self, parent: _RegScope | None) -> None:
        self.names: dict[str, str] = {}  # name -> type
        self.ranges: dict[str, tuple[int, str]] = {}  # stem -> (count, type)
        self.vectors: dict[str, tuple[int, str]] = {}  # vector register -> (n, type)
        self.parent = parent

    def own_type(self, name: str) -> str | None:
        t = self.names.get(name)
        if t is not None or not self.ranges:
            return t
        t = range_lookup(self.ranges, name)
        if t is not None:
            self.names[name] = t  # the next lookup is one dictionary probe
        return t

    def reg_type(self, name: str) -> str | None:
        scope: _RegScope | None = self
        while scope is not None:
            t = scope.own_type(name)
            if t is not None:
                return t
            scope = scope.parent
        return None

    def declared(self, name: str) -> bool:
        return self.reg_type(name) is not None

    def vector(self, name: str) -> tuple[int, str] | None:
        scope: _RegScope | None = self
        while scope is not None:
            v = scope.vectors.get(name)
            if v is not None:
                return v
            scope = scope.parent
        return None


# a register name -> its longest stem and the index after it (range_lookup's first
# split), kept across functions and modules: the same names recur in every kernel
_SPLITS: dict[str, tuple[str, int]] = {}
_SPLITS_MAX = 1 << 16  # then it starts again (a long-lived server reads many inputs)


def _split(name: str) -> tuple[str, int]:
    """``name`` as (longest stem, decimal index); the index is -1 without digits."""
    stem = name.rstrip("0123456789")
    k = len(stem)
    got = (stem, int(name[k:]) if k < len(name) else -1)
    if len(_SPLITS) >= _SPLITS_MAX:
        _SPLITS.clear()
    _SPLITS[name] = got
    return got


def split_name(name: str) -> tuple[str, int]:
    """``name`` as (longest stem, decimal index), the index -1 without digits
    (``%rd04``: ``("%rd", 4)``), remembered."""
    split = _SPLITS.get(name)
    return split if split is not None else _split(name)


def range_lookup(ranges: dict[str, tuple[int, str]], name: str) -> str | None:
    """The type of ``name`` if a range ``stem<count>`` declares it: ``name`` is a stem
    followed by a decimal index below the count (ptxas takes ``%r037`` too, as a
    register of its own).  The longest stem is tried first, then every shorter
    split point, since a stem may end in digits (``%r1<5>`` declares
    ``%r10``..``%r14``)."""
    split = _SPLITS.get(name)
    stem, index = split if split is not None else _split(name)
    if index < 0:
        return None
    entry = ranges.get(stem)
    if entry is not None and index < entry[0]:
        return entry[1]
    k = len(stem)
    for j in range(len(name) - 1, k, -1):
        entry = ranges.get(name[:j])
        if entry is not None and int(name[j:]) < entry[0]:
            return entry[1]
    return None


def enter_range(
    types: dict[str, str], ranges: dict[str, tuple[int, str]], order: list[str], name: str
) -> str | None:
    """Enter ``name`` into ``types`` (and at the end of ``order``) when a range of
    ``ranges`` declares it; its type, or ``None`` (nothing entered)."""
    t = range_lookup(ranges, name) if ranges else None
    if t is not None:
        types[name] = t
        order.append(name)
    return t


# instructions whose address operand may name an array element (g[4])
_ELEMENT_ADDRESS_OPS = frozenset({"ld", "ldu", "st", "atom", "red", "prefetch", "prefetchu"})
# what may follow a function declaration that lacks its ';' (measured: a variable,
# a .file or .section line, another function, or the end of the file)
_DECLARATION_ENDS = _LINKAGE | _SPACES | {".func", ".entry", ".file", ".section"}
# Words ptxas's lexer does not take as keywords although the ISA names them: in a
# section they are labels like ``.debug_abbrev`` (measured on every modifier and
# directive ptxopt knows; the video selectors ``.b0``..``.h33`` too).
_SECTION_NON_KEYWORDS = frozenset(
    """
    .version .a .alloc .arrive .arrive_drop .ashift .async .b .b4x16_p64 .b6x16_p32 .b8x16
    .base .block_scale .bulk .c .commit .commit_group .complete_tx .cp .cp_fenceproxy
    .cp_mask .cvt .d .dealloc .e2m1 .e2m3 .e3m2 .elect .evict_first .evict_last
    .evict_normal .evict_unchanged .expect_tx .fence .fractional .full .g .generic
    .get_first_ctaid .grad .im2col .im2col_no_offs .init .inval .is_canceled .l
    .launch_dependents .ld .ld_reduce .ldmatrix .load .m8n84 .mma .mma_async .oob .p .pack
    .parity .pending_count .prefetch .proxy .query_cancel .r .range .read .red .reduce
    .relinquish_alloc_permit .replace .shift .st .stmatrix .store .tensor .test_wait .tf32
    .tile .to .try_cancel .try_wait .ue4m3 .ue8m0 .v16 .v8 .wait .wait_all .wait_group
    .warp .warpx4 .wide .ws .xorsign
    """.split()
)
_SELECTOR_WORD = re.compile(r"\.[bh][0-7]+")
_DIRECTIVE_WORDS = (
    _FUNC_DIRECTIVES
    | _LINKAGE
    | _SPACES
    | _VAR_ATTRS
    | _HEADER_DIRECTIVES
    | frozenset(
        {
            ".entry",
            ".func",
            ".section",
            ".loc",
            ".reg",
            ".align",
            ".callprototype",
            ".calltargets",
            ".branchtargets",
            ".texref",
            ".samplerref",
            ".surfref",
        }
    )
)


def section_keyword(word: str) -> bool:
    """Whether ptxas refuses the dotted ``word`` as a label in section data."""
    if word in _SECTION_NON_KEYWORDS:
        return False
    if _SELECTOR_WORD.fullmatch(word) and word not in (".b16", ".b32", ".b64", ".b1024"):
        return False
    from ptxopt.ptx.validate import known_modifiers

    return word in known_modifiers() or word in _DIRECTIVE_WORDS


class Parser:
    """``instructions=False``: every statement token by token (the instruction
    tokens are a shortcut to the same result; tests compare the two)."""

    def __init__(self, text: str, filename: str = "<input>", instructions: bool = True) -> None:
        self.text = text
        self.filename = filename
        self.smap = SourceMap(self.text, filename)
        self.toks: list[Token] = tokenize(self.text, self.smap, instructions)
        self.i = 0
        self.regs = _RegScope(None)
        # registers already checked as declared in the current scope chain
        self.reg_cache: dict[str, Reg] = {}
        # operand text -> operand, for the operands of INSTR tokens that name only
        # registers in scope, symbols and numbers (emptied with reg_cache, and by a
        # .reg declaration, which may turn a symbol's name into a register's)
        self.operand_cache: dict[str, Operand] = {}
        self.depth = 0
        self.is_call = False
        self.is_branch = False
        self.sreg_in_vector = False  # a special register inside {...}: see sreg_writes
        self.sel_seen = False  # a video selector or negation in the current instruction
        self.more_vars: list[VarDecl] = []  # the rest of a list declaration (a, b, c)
        self.is_memory = False  # the current instruction takes an element address g[4]
        self.elem_size: dict[str, int] = {}  # variable -> bytes of one element
        # (first token, end token, value) of each constant expression in an initializer
        self.init_values: list[tuple[int, int, str]] = []

    # -- token helpers -----------------------------------------------------

    def span(self, offset: int | None = None) -> Span:
        if offset is None:
            offset = self.toks[self.i][2]
        return self.smap.span(offset)

    def error(self, message: str, offset: int | None = None) -> PtxError:
        return PtxError(self.span(offset), message)

    def peek(self) -> Token:
        return self.toks[self.i]

    def next(self) -> Token:
        tok = self.toks[self.i]
        if tok[0] != EOF:
            self.i += 1
        return tok

    def describe(self, tok: Token) -> str:
        if tok[0] == INIT_LIST:
            return "'='"  # a list initializer where none belongs: its '=' is the error
        if tok[0] == INSTR or tok[0] == DATA:
            return self.describe(self.plain_tokens(tok)[0])
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

    def literal(self, tok: Token, negative: bool = False) -> Imm:
        """A number token as an immediate; an out-of-range literal is an error."""
        try:
            return parse_number(tok[1], negative)
        except ValueError as e:
            raise self.error(str(e), tok[2]) from None

    def const(self, ends: str = ",;)]}>:") -> Imm:
        """A constant expression at the current token (a single literal keeps its
        spelling; anything else is printed as its value).  ``ends``: the punctuation
        that ends a lone literal (in an initializer ``2 > 3`` is a comparison)."""
        start = self.i
        tok = self.toks[start]
        nxt = self.toks[start + 1]
        if tok[0] == NUM and (nxt[0] != PUNCT or nxt[1] in ends):
            self.i += 1
            return self.literal(tok)
        if tok[0] == NUM and tok[1][:2] in ("0f", "0F"):
            raise self.error(f"'{tok[1]}' cannot be part of an expression", tok[2])
        ep = ExprParser(self.toks, start, parse_number)
        try:
            value = ep.parse()
        except ExprError as e:
            raise self.error(e.message, self.toks[e.at][2]) from None
        self.i = ep.i
        if self.i == start + 1 and tok[0] == ID:  # WARP_SZ
            return Imm(32, "WARP_SZ", "int")
        v = value.python()
        if isinstance(v, float):
            return Imm(v, "0d" + struct.pack(">d", v).hex().upper(), "f64")
        return Imm(v, str(v), "int")

    def const_single(self, tok: Token) -> Imm:
        """A lone literal or ``WARP_SZ`` token as an immediate."""
        self.i += 1
        if tok[0] == ID:
            if tok[1] != "WARP_SZ":
                raise self.error(f"expected a constant, found '{tok[1]}'", tok[2])
            return Imm(32, "WARP_SZ", "int")
        return self.literal(tok)

    def const_int(self, what: str) -> int:
        tok = self.toks[self.i]
        imm = self.const()
        if imm.kind != "int":
            raise self.error(f"expected an integer {what}, found '{imm.text}'", tok[2])
        return int(imm.value)

    def align(self) -> int:
        """The operand of ``.align``: a plain integer literal that fits 32 bits."""
        tok = self.peek()
        if tok[0] not in (NUM, ID):
            raise self.error(f"expected an alignment, found {self.describe(tok)}", tok[2])
        imm = self.const_single(tok)
        if imm.kind != "int" or not 0 <= int(imm.value) < (1 << 32):
            raise self.error(f"invalid alignment '{tok[1]}'", tok[2])
        return int(imm.value)

    def expect_int(self) -> int:
        return self.const_int("constant")

    def line_tokens(self, start: int) -> list[Token]:
        """Consume every token that starts on the line of ``start``."""
        end = self.smap.line_end(start)
        toks = self.toks
        i0 = self.i
        while toks[self.i][0] != EOF and toks[self.i][2] < end:
            self.i += 1
        return toks[i0 : self.i]

    def pragma(self) -> None:
        """``.pragma "string" [, "string"]* ;``"""
        self.next()
        while True:
            self.expect_kind(STR, "a pragma string")
            if not self.accept(","):
                break
        self.expect(";")

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

    def raw(self, i0: int, i1: int) -> str:
        """Source text of tokens ``i0`` .. ``i1 - 1``: comments dropped, whitespace
        normalized."""
        start = self.toks[i0][2]
        last = self.toks[i1 - 1]
        return clean_text(self.text[start : last[2] + len(last[1])])

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

    def plain_tokens(self, tok: Token) -> list[Token]:
        """The ordinary tokens of an ``INSTR`` or ``DATA`` token."""
        return tokenize_span(self.text, tok[2], tok[2] + len(tok[1]), self.smap)

    def expand_here(self) -> None:
        """Put the ordinary tokens of the ``INSTR`` or ``DATA`` token here in its place
        (where something other than a statement is read)."""
        self.toks[self.i : self.i + 1] = self.plain_tokens(self.toks[self.i])

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
            if text in _HEADER_DIRECTIVES:
                items.append(self.parse_header_directive())
            elif text == ".section":
                items.append(self.parse_section())
            else:
                items.append(self.parse_declaration())
                if self.more_vars:
                    items.extend(self.more_vars)
                    self.more_vars.clear()
        return Module(items, self.filename)

    def parse_header_directive(self) -> Directive:
        """``.version``, ``.target``, ``.address_size`` and ``.file``, read by their
        grammar (comments anywhere between the tokens)."""
        kind, name, off = self.next()
        if name == ".version":
            tok = self.expect_kind(NUM, "a version number")
            if not re.fullmatch(r"[0-9]+\.[0-9]+", tok[1]):
                raise self.error(f"malformed version '{tok[1]}'", tok[2])
            return Directive(name, f".version {tok[1]}", self.span(off))
        if name == ".address_size":
            tok = self.expect_kind(NUM, "an address size")
            return Directive(name, f".address_size {tok[1]}", self.span(off))
        if name == ".target":
            targets = [self.target_name()]
            while self.accept(","):
                targets.append(self.target_name())
            return Directive(name, ".target " + ", ".join(targets), self.span(off))
        tok = self.peek()
        if tok[0] not in (NUM, ID):
            raise self.error(f"expected a file number, found {self.describe(tok)}", tok[2])
        num = self.const_single(tok)
        if num.kind != "int":
            raise self.error(f"expected a file number, found {self.describe(tok)}", tok[2])
        number = int(num.value)
        path = self.expect_kind(STR, "a file name")[1]
        extra = ""
        while self.accept(","):
            extra += f", {self.const_int('number')}"
        return Directive(name, f".file {number} {path}{extra}", self.span(off))

    def target_name(self) -> str:
        """One name of a ``.target`` list.  The lexer joins dotted words into one
        identifier; ptxas ends a target name at a dot and reads the rest as the next
        directive (measured: ``.target sm_80.address_size 64``), so the rest goes
        back into the token stream."""
        tok = self.expect_kind(ID, "a target name")
        name, dot, rest = tok[1].partition(".")
        if dot:
            at = tok[2] + len(name)
            parts = rest.split(".")
            back: list[Token] = []
            for part in parts:
                back.append((DIR, "." + part, at))
                at += len(part) + 1
            self.toks[self.i : self.i] = back
        return name

    def parse_section(self) -> Directive:
        """``.section name { ... }``: labels and ``.b8``/``.b16``/``.b32``/``.b64`` data
        lines (numbers that fit the type, labels, ``label+n``, ``a-b``), kept verbatim."""
        start = self.next()[2]
        self.expect_kind(DIR, "a section name")
        self.expect("{")
        while True:
            if self.toks[self.i][0] == INSTR:
                self.expand_here()
            kind, text, off = self.next()
            if kind == EOF:
                raise self.error("expected '}' to close .section, found end of file", off)
            if kind == PUNCT and text == "}":
                break
            if kind == DATA:  # data lines whose values the lexer's pattern checked
                continue
            if kind == PUNCT and text == "@" and self.peek()[1] == "@":
                self.plain_line(off)
                self.line_tokens(off)  # an @@DWARF line
                continue
            if kind == ID and self.peek()[1] == ":":
                self.i += 1
                continue
            if kind != DIR or text not in _SECTION_DATA:
                raise self.error(f"illegal section data {text!r}", off)
            width = int(text[2:])
            while True:
                self.section_value(width)
                if not self.accept(","):
                    break
        end = self.toks[self.i - 1][2] + 1
        return Directive(".section", self.text[start:end], self.span(start))

    def plain_line(self, start: int) -> None:
        """Put the ordinary tokens of any ``DATA`` token on the line of ``start`` in its
        place (a run of data lines is one token only where a data line starts)."""
        end = self.smap.line_end(start)
        k = self.i
        while self.toks[k][0] != EOF and self.toks[k][2] < end:
            if self.toks[k][0] == DATA:
                self.toks[k : k + 1] = self.plain_tokens(self.toks[k])
            k += 1

    def section_value(self, width: int) -> None:
        if self.toks[self.i][0] == DATA:  # a data line where a value belongs
            self.expand_here()
        kind, text, off = self.next()
        negative = kind == PUNCT and text == "-" and self.peek()[0] == NUM
        if negative:
            kind, text, off = self.next()
        if kind == NUM:
            imm = self.literal((kind, text, off), negative)
            v = imm.value
            # ptxas checks the low 32 bits: as a signed number after a minus sign
            # (-1 passes), else unsigned (18446744073709551615 is refused,
            # 4294967296 wraps to 0 and passes)
            v32 = int(v) & 0xFFFFFFFF if imm.kind == "int" else 0
            if negative:
                v32 -= (1 << 32) if v32 >> 31 else 0
            if imm.kind != "int" or width < 32 and not -(1 << (width - 1)) <= v32 < (1 << width):
                raise self.error(f"value out of range for .b{width}: {text}", off)
            return
        if width < 32 or (kind != ID or "." in text) and (kind != DIR or section_keyword(text)):
            raise self.error(f"expected a section value, found {self.describe((kind, text, off))}")
        while self.peek()[1] in ("+", "-") and self.peek()[0] == PUNCT:
            self.i += 1
            if self.toks[self.i][0] == DATA:
                self.expand_here()
            nxt = self.next()
            if nxt[0] not in (NUM, ID, DIR):
                raise self.error("expected a section value", nxt[2])

    def parse_declaration(self) -> ModuleItem:
        start = self.peek()[2]
        i_begin = self.i
        linkage: list[str] = []
        while self.peek()[1] in _LINKAGE and self.peek()[0] == DIR:
            if linkage:
                raise self.error(f"a second linkage {self.peek()[1]!r}")
            linkage.append(self.next()[1])
        tok = self.peek()
        if tok[1] in (".entry", ".func"):
            return self.parse_function(tuple(linkage), start)
        if tok[1] in _SPACES:
            var = self.parse_var(tuple(linkage), start)
            if var is None:  # a declaration of nothing: kept as written
                return Directive(".decl", self.raw(i_begin, self.i), self.span(start))
            return var
        if tok[1] == ".alias" or tok[1] == ".pragma":
            i0 = self.i
            self.next()
            self.skip_to_semicolon()
            return Directive(tok[1], self.raw(i0, self.i), self.span(start))
        raise self.error(f"unexpected {self.describe(tok)} at module level")

    def parse_var(self, linkage: tuple[str, ...], start: int) -> VarDecl | None:
        """A variable declaration; None for one that declares nothing (``.global .u64
        ;``, which ptxas accepts: measured)."""
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
                align = self.align()
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
                raise self.error(f"a second state space {text!r} for a variable", off)
            elif vtype:
                raise self.error(f"unexpected {text!r} after the type of a variable", off)
            else:
                vtype = text
        if vtype and self.peek()[1] == ";" and self.peek()[0] == PUNCT:
            self.i += 1
            return None
        decls: list[VarDecl] = []
        while True:  # one name, or a list of them sharing the space and type
            name_tok = self.expect_kind(ID, "a variable name")
            dims = self.parse_dims()
            init: str | None = None
            if self.toks[self.i][0] == INIT_LIST:
                init = self.init_list()
            if init is None and self.accept("="):
                i0 = self.i
                self.init_values = []
                self.initializer()
                # canonical spacing; WARP_SZ by its value (every reader knows 32)
                init = _INIT_SPACE.sub(r"\1", self.init_text(i0, self.i))
                init = _WARP_SZ.sub("32", init)
            span = self.span(start if not decls else name_tok[2])
            if is_type(vtype) and vtype != ".pred":
                # measured: w[1] of a .v2 .u32 array is at w+4, the scalar type's size
                self.elem_size[name_tok[1]] = max(bit_width(vtype) // 8, 1)
            decls.append(
                VarDecl(
                    space,
                    vtype,
                    name_tok[1],
                    linkage,
                    align,
                    vector,
                    dims,
                    init,
                    tuple(attrs),
                    span,
                )  # fmt: skip
            )
            if not self.accept(","):
                break
        self.expect(";")
        self.more_vars.extend(decls[1:])  # the caller takes them after the first
        return decls[0]

    def init_list(self) -> str | None:
        """The initializer of the ``INIT_LIST`` token here (``= {1, 2, 3}``), spaced
        as :meth:`init_text` spaces the same list taken token by token; ``None`` after
        putting the ordinary tokens in its place if it is no list of decimal
        integers."""
        tok = self.toks[self.i]
        text = tok[1]
        brace = text.index("{")
        inner = text[brace + 1 : -1].strip(" ")
        if _CANONICAL_LIST.fullmatch(inner) is not None:
            # the usual table, already as it is printed: one space after each comma,
            # no leading zero, at most 19 digits an item (so every item fits 64 bits);
            # one match instead of the scans below (a cuRAND table is 10^5 items)
            self.i += 1
            return "{" + inner + "}"
        if not plain_list(text[brace + 1 : -1]):
            end = tok[2] + len(text)
            rest = tokenize_span(self.text, tok[2] + 1, end, self.smap)
            self.toks[self.i : self.i + 1] = [(PUNCT, "=", tok[2]), *rest]
            return None
        self.i += 1
        inner = text[brace + 1 : -1]
        for m in _LONG_DECIMAL.finditer(inner):  # shorter ones fit 64 bits
            self.literal((NUM, m.group(), tok[2] + brace + 1 + m.start()))
        if "  " in inner or "\n" in inner or "\t" in inner or "\r" in inner:
            inner = " ".join(inner.split())
        else:  # single spaces already (the usual table): nothing to collapse
            inner = inner.strip(" ")
        return "{" + inner.replace(" ,", ",") + "}"

    def init_text(self, i0: int, i1: int) -> str:
        """The initializer's text (tokens ``i0`` .. ``i1 - 1``) with each constant
        expression item replaced by its value."""
        pieces: list[str] = []
        pos = i0
        for start, end, value in self.init_values:
            if start > pos:
                pieces.append(self.raw(pos, start))
            pieces.append(value)
            pos = end
        if pos < i1:
            pieces.append(self.raw(pos, i1))
        return " ".join(pieces).replace(" ,", ",")

    def initializer(self) -> None:
        """``{ item, ... }`` (nested) or one item; an item is a constant expression,
        a symbol, ``sym+n`` or ``generic(sym)[+n]``."""
        if self.accept("{"):
            if self.accept("}"):
                return  # measured: {} is all zeros (ptxopt.ptx.initializer)
            toks = self.toks
            while True:
                tok = toks[self.i]
                if tok[0] == NUM and toks[self.i + 1][1] in (",", "}"):
                    # a plain literal item (most of a large data table)
                    if toks[self.i + 1][0] == PUNCT:
                        self.i += 1
                        self.literal(tok)
                    else:
                        self.initializer()
                else:
                    self.initializer()
                if self.accept("}"):
                    return
                self.expect(",")
        kind, text, off = self.peek()
        if kind == ID and text != "WARP_SZ":
            self.i += 1
            if text == "generic" and self.accept("("):
                self.expect_kind(ID, "a symbol")
                self.expect(")")
            if self.peek()[1] in ("+", "-") and self.peek()[0] == PUNCT:
                self.i += 1
                self.const_int("offset")
            return
        i0 = self.i
        imm = self.const(ends=",;)]}:")  # measured: {1, 2> 3} is {1, 0}
        signed = self.i == i0 + 2 and self.toks[i0][1] in "+-" and self.toks[i0][0] == PUNCT
        if self.i > i0 + 1 and not signed:
            # an expression: the initializer keeps its value, so every reader of the
            # text (the interpreter, the uniform passes) sees one number per item
            v = imm.value
            if isinstance(v, float):
                if not math.isfinite(v):
                    raise self.error("floating-point overflow in an initializer", self.toks[i0][2])
                text = repr(v)
            else:
                text = str(v)
            self.init_values.append((i0, self.i, text))

    def parse_dims(self) -> list[int | None]:
        dims: list[int | None] = []
        while self.accept("["):
            if self.accept("]"):
                dims.append(None)
                continue
            off = self.peek()[2]
            n = self.const_int("array size")
            if n < 0:
                raise self.error(f"negative array size {n}", off)
            dims.append(n)
            self.expect("]")
        return dims

    def parse_param(self) -> list[Param]:
        """One parameter; a vector ``.reg`` parameter becomes one per component."""
        start = self.peek()[2]
        space_tok = self.next()
        if space_tok[1] not in (".param", ".reg"):
            raise self.error(
                f"expected '.param' or '.reg', found {self.describe(space_tok)}", space_tok[2]
            )
        align: int | None = None
        ptype = ""
        vector = ""
        attrs: list[str] = []
        while self.peek()[0] == DIR:
            text = self.next()[1]
            if text == ".align" and not ptype:
                align = self.align()
            elif text == ".align":
                attrs.append(f".align {self.align()}")
            elif text in (".v2", ".v4", ".v8") and space_tok[1] == ".reg" and not ptype:
                vector = text
            elif text == ".ptr" and ptype:
                attrs.append(text)
            elif (text in _SPACES or text.startswith(".shared")) and attrs[-1:] == [".ptr"]:
                attrs.append(text)
            elif not ptype and is_type(text):
                ptype = text
            else:
                raise self.error(f"unexpected {text!r} in a parameter declaration", start)
        name_tok = self.expect_kind(ID, "a parameter name")
        dims = self.parse_dims()
        span = self.span(start)
        if vector:
            n = int(vector[2:])
            if n > 4:
                raise self.error(f"{vector} is not a register vector size", start)
            return [
                Param(".reg", ptype, vector_component(name_tok[1], k), align, [], (), span)
                for k in range(n)
            ]
        return [Param(space_tok[1], ptype, name_tok[1], align, dims, tuple(attrs), span)]

    def parse_param_list(self) -> list[Param]:
        params: list[Param] = []
        self.expect("(")
        if self.accept(")"):
            return params
        while True:
            params.extend(self.parse_param())
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
                    self.i = i0
                    self.pragma()
                    directives.append(self.raw(i0, self.i))
                    continue
                while self.peek()[0] in (NUM, PUNCT) and self.peek()[1] not in ("{", ";"):
                    self.i += 1
                if text in _SIZED_DIRECTIVES and self.i == i0 + 1:
                    raise self.error(f"'{text}' needs a number", off)
                directives.append(self.raw(i0, self.i))
            elif text in _DECLARATION_ENDS:
                break  # the next module item: this declaration ended without ';'
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
        nxt = self.peek()
        if nxt[0] == EOF or nxt[0] == DIR and nxt[1] in _DECLARATION_ENDS:
            return fn  # ptxas ends a declaration without ';' at the next module item
        self.reg_cache = {}
        self.operand_cache = {}
        for p in params + rets:
            if p.space == ".reg":
                self.regs.names[p.name] = p.type
                base, dollar, comp = p.name.rpartition("$")
                if dollar and comp in _COMPONENT_NAMES:
                    n, t = self.regs.vectors.get(base, (0, p.type))
                    self.regs.vectors[base] = (n + 1, t)
        open_tok = self.expect("{")
        self.sreg_in_vector = False
        fn.body = self.parse_body(open_tok[2])
        if self.sreg_in_vector:
            from ptxopt.ptx.sreg_writes import rename_written_special_registers

            rename_written_special_registers(fn)
        return fn

    # -- function bodies -----------------------------------------------------

    def parse_body(self, open_offset: int) -> list[Stmt]:
        """Statements up to the matching ``}`` (already past the ``{``)."""
        body: list[Stmt] = []
        append = body.append
        toks = self.toks
        while True:
            kind, text, off = toks[self.i]
            if kind == INSTR:
                self.i += 1
                append(self.parse_instr_token(text, off))
            elif kind == ID:
                nxt = toks[self.i + 1]
                if nxt[1] == ":" and nxt[0] == PUNCT:
                    append(self.parse_labelled())
                else:
                    append(self.parse_instr(None, False, off))
            elif kind == PUNCT:
                if text == "}":
                    self.i += 1
                    return body
                if text == "\\":  # ptxas ignores a backslash where a statement may start
                    self.i += 1
                    continue
                if text == "@":
                    self.i += 1
                    neg = self.accept("!")
                    ptok = self.expect_kind(ID, "a predicate register")
                    self.check_reg(ptok)
                    append(self.parse_instr(Reg(ptok[1]), neg, off))
                elif text == "{":
                    self.i += 1
                    self.depth += 1
                    if self.depth > MAX_BLOCK_DEPTH:
                        raise self.error(f"blocks nest deeper than {MAX_BLOCK_DEPTH} levels", off)
                    self.regs = _RegScope(self.regs)
                    inner = self.parse_body(off)
                    assert self.regs.parent is not None
                    self.regs = self.regs.parent
                    self.reg_cache = {}  # the inner scope's registers are gone
                    self.operand_cache = {}
                    self.depth -= 1
                    append(Scope(inner, self.span(off)))
                else:
                    raise self.error(f"expected a statement, found {text!r}")
            elif kind == DIR:
                st = self.parse_body_directive()
                if st is not None:
                    append(st)
                    if self.more_vars:
                        body.extend(self.more_vars)
                        self.more_vars.clear()
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
        if nxt[0] == DIR and nxt[1] == ".callprototype":
            # kept verbatim, but read as a signature: ptxas refuses a malformed one
            i0 = self.i - 2
            self.i += 1
            rets = self.parse_param_list() if self.peek()[1] == "(" else []
            tok = self.next()
            if tok[1] != "_":
                raise self.error(
                    f"expected '_' in .callprototype, found {self.describe(tok)}", tok[2]
                )
            if self.peek()[1] == "(":
                self.parse_param_list()
            if not rets and self.peek()[1] == ".noreturn":
                self.i += 1
            self.expect(";")
            return RawStmt(self.raw(i0, self.i), self.span(name_tok[2]))
        if nxt[0] == DIR and nxt[1] == ".calltargets":
            i0 = self.i - 2
            self.skip_to_semicolon()
            return RawStmt(self.raw(i0, self.i), self.span(name_tok[2]))
        return Label(name_tok[1], self.span(name_tok[2]))

    def parse_loc(self) -> DebugLoc:
        """``.loc file line col [, function_name label [, inlined_at file line col]]``."""
        off = self.next()[2]
        nums = []
        for what in ("a file number", "a line number", "a column number"):
            tok = self.peek()
            if tok[0] not in (NUM, ID):
                raise self.error(f"expected {what}, found {self.describe(tok)}", tok[2])
            nums.append(self.const_single(tok))
        if any(n.kind != "int" or not _loc_number_ok(int(n.value)) for n in nums):
            raise self.error("malformed .loc directive", off)
        extra: list[str] = []
        while self.peek()[1] == "," and self.toks[self.i + 1][1] in _LOC_ATTRS:
            self.i += 1
            attr = self.next()[1]
            if attr == "function_name":
                extra.append(f"function_name {self.expect_kind(ID, 'a label')[1]}")
            else:
                where = []
                for _ in range(3):
                    tok = self.expect_kind(NUM, "a number")
                    if self.literal(tok).kind != "int":
                        raise self.error(f"expected an integer, found {tok[1]!r}", tok[2])
                    where.append(tok[1])
                extra.append("inlined_at " + " ".join(where))
        f, ln, col = (int(n.value) for n in nums)
        return DebugLoc(f, ln, col, ", ".join(extra), self.span(off))

    def parse_body_directive(self) -> Stmt | None:
        kind, text, off = self.peek()
        if text == ".reg":
            return self.parse_reg_decl()
        if text == ".loc":
            return self.parse_loc()
        if text == ".target":
            # ptxas reads and ignores a .target line inside a function body
            self.parse_header_directive()
            return None
        if text == ".pragma":
            i0 = self.i
            self.pragma()
            return RawStmt(self.raw(i0, self.i), self.span(off))
        linkage: list[str] = []
        while self.peek()[1] in _LINKAGE:
            linkage.append(self.next()[1])
        if self.peek()[1] in _SPACES:
            return self.parse_var(tuple(linkage), off)
        if not linkage:
            # a type (with a vector size) declaring nothing: `.b32;` (measured: accepted)
            j = self.i + (1 if self.peek()[1] in (".v2", ".v4", ".v8") else 0)
            if is_type(self.toks[j][1]) and self.toks[j + 1][1] == ";":
                self.i = j + 2
                return None
        raise self.error(f"unexpected directive {self.peek()[1]!r} in a function body")

    def parse_reg_decl(self) -> RegDecl:
        off = self.next()[2]
        rtype = ""
        vector = ""
        align: int | None = None
        while self.peek()[0] == DIR:
            t = self.next()
            if t[1] in (".v2", ".v4", ".v8"):
                vector = t[1]
            elif t[1] == ".align":
                align = self.align()
            elif rtype:
                raise self.error(f"unexpected {t[1]!r} in a .reg declaration", t[2])
            else:
                rtype = t[1]
        if not rtype:
            raise self.error("expected a register type in .reg declaration", off)
        names: list[tuple[str, int | None]] = []
        scope = self.regs
        ncomp = int(vector[2:]) if vector else 0
        # a name read so far as a symbol (a variable, a label) may now be a register
        self.operand_cache = {}
        if self.accept(";"):  # ptxas accepts a declaration of no register
            return RegDecl(rtype, names, "", align, self.span(off))
        if ncomp > 4:
            raise self.error(f"{vector} is not a register vector size", off)
        while True:
            tok = self.expect_kind(ID, "a register name")
            name = tok[1]
            if "." in name:
                raise self.error(f"'{name}' is not a register name", tok[2])
            if self.accept("<"):
                count_tok = self.peek()
                if count_tok[0] in (NUM, ID) and self.toks[self.i + 1][1] == ">":
                    imm = self.const_single(count_tok)
                    count = int(imm.value) if imm.kind == "int" else -1
                else:
                    count = self.const_int("register count")
                if count < 0 or count >= 1 << 32 or vector:  # %r<0> passes (measured)
                    raise self.error(f"invalid register count {count}", count_tok[2])
                self.expect(">")
                names.append((name, count))
                scope.ranges[name] = (count, rtype)
            elif vector:
                scope.vectors[name] = (ncomp, rtype)
                for k in range(ncomp):
                    comp = vector_component(name, k)
                    names.append((comp, None))
                    scope.names[comp] = rtype
            else:
                names.append((name, None))
                scope.names[name] = rtype
            if self.accept(";"):
                break
            self.expect(",")
        return RegDecl(rtype, names, "", align, self.span(off))

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
            if len(_OPCODES) < 100_000:
                _OPCODES[full] = split
        opcode, mods = split
        toks = self.toks
        if toks[self.i][0] == DIR:  # ptxas takes modifiers after whitespace (st.global .v2)
            extra = []
            while toks[self.i][0] == DIR:
                extra.append(toks[self.i][1])
                self.i += 1
            mods = (*mods, *extra)
        self.is_call = opcode == "call"
        self.is_branch = opcode in ("bra", "call")
        self.is_memory = opcode in _ELEMENT_ADDRESS_OPS
        self.sel_seen = False
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
        return self.finish_instr(opcode, mods, operands, pred, neg, start, full)

    def finish_instr(
        self,
        opcode: str,
        mods: tuple[str, ...],
        operands: list[Operand],
        pred: Reg | None,
        neg: bool,
        start: int,
        full: str,
    ) -> Instr:
        """The checks that need the whole instruction, then the instruction."""
        if self.sel_seen and opcode not in VIDEO_OPCODES:
            for op in operands:
                if isinstance(op, Sel):
                    what = "negated register" if op.neg else f"selector .{op.sel}"
                    raise self.error(
                        f"a {what} is only allowed on video instructions ('{full}')", start
                    )
        if opcode == "bar" and (".all" in mods or ".any" in mods):
            # measured: ptxas takes one .all or .any beside a plain bar.sync and
            # compiles it as bar.sync (the same BAR.SYNC); nowhere else
            rest = tuple(m for m in mods if m not in (".all", ".any"))
            if rest != (".sync",):
                raise self.error(f"'.all'/'.any' are allowed only on 'bar.sync' ('{full}')", start)
            if len(mods) != 2:
                raise self.error(f"more than one of '.all'/'.any' ('{full}')", start)
            mods = rest
        if not _IGNORED.isdisjoint(mods):
            from ptxopt.ptx.validate import drop_ignored_modifiers

            kept = drop_ignored_modifiers(opcode, mods)
            if isinstance(kept, str):
                raise self.error(kept, start)
            mods = kept
        return Instr(opcode, mods, operands, pred, neg, self.smap.span(start))

    def parse_instr_token(self, text: str, start: int) -> Instr:
        """An ``INSTR`` token (see :mod:`ptxopt.ptx.lexer`).  Operands that are
        registers in scope, names, numbers, plain addresses (``[r]``, ``[r+n]``) or
        vectors of registers are read from the text, each other operand by the
        ordinary rules over its own tokens; a call, or an operand whose tokens do
        not end where its text does, sends the whole instruction to the ordinary
        rules.  The result is the instruction :meth:`parse_instr` reads from the
        same text."""
        pred: Reg | None = None
        neg = False
        if text[0] == "@":
            guard, full, ops = text.split(None, 2)
            neg = guard[1] == "!"
            pname = guard[2:] if neg else guard[1:]
            if not (self.regs.declared(pname) or is_special_register(pname)):
                return self.instr_by_tokens(text, start)  # undeclared, or no name
            pred = Reg(pname)
        else:
            full, ops = text.split(None, 1)
        split = _OPCODES.get(full)
        if split is None:
            dot = full.find(".")
            if dot < 0:
                split = (full, ())
            else:
                split = (full[:dot], tuple("." + x for x in full[dot + 1 :].split(".")))
            if len(_OPCODES) < 100_000:
                _OPCODES[full] = split
        opcode, mods = split
        if opcode == "call":
            return self.instr_by_tokens(text, start)
        self.is_call = False
        self.is_branch = opcode == "bra"
        self.is_memory = opcode in _ELEMENT_ADDRESS_OPS
        self.sel_seen = False
        cache = self.operand_cache
        operands: list[Operand] = []
        body = ops[: ops.rindex(";")]
        if "{" in body:
            pieces = _PIECE.findall(body)
        elif "[" not in body:
            # names and numbers only: no white space inside an operand
            pieces = body.replace(" ", "").replace("\t", "").split(",")
        else:
            # addresses too: split at the commas, unless one is inside brackets
            pieces = [p.strip(" \t") for p in body.split(",")]
            for p in pieces:
                if ("[" in p or "]" in p) and (p[0] != "[" or p[-1] != "]"):
                    pieces = _PIECE.findall(body)
                    break
        for piece in pieces:
            op = cache.get(piece)
            if op is None:
                c = piece[0]
                if c == "[":
                    op = self.fast_address(piece)
                elif c == "{":
                    op = self.fast_vector(piece)
                elif c == "-" or "0" <= c <= "9":
                    op = _NUMBERS.get(piece)
                else:
                    op = self.fast_name(piece)
                if op is None:
                    op = self.operand_by_tokens(text, start, piece)
                    if op is None:
                        return self.instr_by_tokens(text, start)
                    if type(op) is Imm and len(_NUMBERS) < 100_000:
                        _NUMBERS[piece] = op  # a number means the same anywhere
            operands.append(op)
        return self.finish_instr(opcode, mods, operands, pred, neg, start, full)

    def fast_name(self, text: str) -> Operand | None:
        """A name operand read from its text: a register in scope (remembered for the
        scope), ``_``, or a symbol; ``None`` where the ordinary rules must decide
        (vectors, selectors, ``WARP_SZ``, undeclared ``%`` names)."""
        reg = self.reg_cache.get(text)
        if reg is None:
            if self.regs.declared(text) or is_special_register(text):
                reg = self.reg_cache[text] = Reg(text)
            elif text == "_":
                return Sink()
            elif (
                not text
                or text[0] == "%"
                or "." in text
                or text == "WARP_SZ"
                or _ID_TOKEN.fullmatch(text) is None
                or self.regs.vector(text) is not None
            ):
                return None
            else:
                # a symbol until a .reg declaration of its name (which empties the cache)
                sym = self.operand_cache[text] = Sym(text)
                return sym
        self.operand_cache[text] = reg
        return reg

    def fast_address(self, text: str) -> Addr | None:
        """``[name]``, ``[name+n]`` or ``[name+-n]`` (``n`` decimal) from its text."""
        inner = text[1:-1]
        plus = inner.find("+")
        if plus < 0:
            if "-" in inner or "," in inner:
                return None
            base = self.fast_name(inner.strip(" \t"))
            offset = 0
        else:
            number = inner[plus + 1 :].strip(" \t")
            if _DECIMAL.fullmatch(number) is None:
                return None
            base = self.fast_name(inner[:plus].strip(" \t"))
            offset = int(number)
        if base is None or type(base) is Sink:
            return None
        addr = self.operand_cache[text] = Addr(base, offset, (), plus >= 0)
        return addr

    def fast_vector(self, text: str) -> Vec | None:
        """``{r1, r2, ...}`` of registers in scope (no special register) or ``_``."""
        elems: list[Operand] = []
        for item in text[1:-1].split(","):
            op = self.fast_name(item.strip(" \t"))
            if op is None or type(op) is Sym or type(op) is Reg and is_special_register(op.name):
                return None
            elems.append(op)
        vec = Vec(tuple(elems))
        self.operand_cache[text] = vec
        return vec

    def operand_by_tokens(self, text: str, start: int, piece: str) -> Operand | None:
        """The operand ``piece`` of the ``INSTR`` token ``text`` (at ``start``) by the
        ordinary rules, or ``None`` if its tokens do not make exactly one operand."""
        at = start + _piece_offset(text, piece)
        toks = tokenize_span(self.text, at, at + len(piece), self.smap)
        end = at + len(piece)
        toks.append((PUNCT, ";", end))
        toks.append((EOF, "", end))
        saved, saved_i = self.toks, self.i
        self.toks, self.i = toks, 0
        try:
            op = self.parse_operand()
            whole = self.i == len(toks) - 2
        finally:
            self.toks, self.i = saved, saved_i
        return op if whole else None

    def instr_by_tokens(self, text: str, start: int) -> Instr:
        """The ``INSTR`` token ``text`` (at ``start``) read by the ordinary rules."""
        toks = tokenize_span(self.text, start, start + len(text), self.smap)
        toks.append((EOF, "", start + len(text)))
        saved, saved_i = self.toks, self.i
        self.toks, self.i = toks, 0
        try:
            if toks[0][1] == "@" and toks[0][0] == PUNCT:
                self.i = 1
                neg = self.accept("!")
                ptok = self.expect_kind(ID, "a predicate register")
                self.check_reg(ptok)
                return self.parse_instr(Reg(ptok[1]), neg, start)
            return self.parse_instr(None, False, start)
        finally:
            self.toks, self.i = saved, saved_i

    def register(self, tok: Token) -> Operand:
        """A register operand: a plain or special register, a vector register (all
        its components) or one component of it (``v.x``)."""
        text = tok[1]
        reg = self.reg_cache.get(text)
        if reg is not None:
            return reg
        if self.regs.declared(text) or is_special_register(text):
            reg = self.reg_cache[text] = Reg(text)
            return reg
        base, dot, comp = text.rpartition(".")
        vec = self.regs.vector(base if dot else text)
        if vec is not None:
            if not dot:
                return Vec(tuple(Reg(vector_component(text, k)) for k in range(vec[0])))
            k = _COMPONENTS.get("." + comp)
            if k is not None and k < vec[0]:
                return Reg(vector_component(base, k))
            raise self.error(f"'{text}': no component .{comp} in a {vec[0]}-vector", tok[2])
        if self.is_branch:
            return Sym(text)  # a label or function whose name starts with %
        raise self.error(f"undeclared register '{text}'", tok[2])

    def parse_operand(self, in_address: bool = False) -> Operand:
        kind, text, off = self.toks[self.i]
        if kind == ID:
            seen = self.reg_cache.get(text)
            if seen is not None:  # a register seen before in this scope: the usual case
                nxt = self.toks[self.i + 1]
                if nxt[0] != PUNCT or (nxt[1] != "|" and nxt[1] != "+"):
                    self.i += 1
                    return seen
            if text == "_":
                self.i += 1
                return Sink()
            if text == "WARP_SZ":
                return self.const()
            if text[0] == "%" or self.regs.declared(text) or self.regs.vector(text.split(".")[0]):
                self.i += 1
                sel = self.selected(text)
                if sel is not None:
                    return sel
                reg = self.register((kind, text, off))
                nxt = self.toks[self.i]
                if nxt[0] == PUNCT and type(reg) is Reg:
                    if nxt[1] == "|":
                        self.i += 1
                        second = self.parse_operand()
                        return Pair(reg, second)
                    if nxt[1] == "+" and not in_address and "." not in text:
                        self.i += 1
                        return RegImm(reg, self.const_int("offset"))
                return reg
            self.i += 1
            nxt = self.toks[self.i]
            if nxt[0] == PUNCT and nxt[1] in "+-" and not in_address:
                self.i += 1
                value = self.const_int("offset") * (1 if nxt[1] == "+" else -1)
                return Expr(f"{text}+{value}" if value >= 0 else f"{text}{value}")
            if nxt[0] == PUNCT and nxt[1] == "[" and self.is_memory and text in self.elem_size:
                # measured: ld.global.u32 %r1, g[4] reads g's element 4 ([g+16] for a
                # .u32 array); the index is a constant
                self.i += 1
                index = self.const_int("index")
                self.expect("]")
                return Addr(Sym(text), index * self.elem_size[text])
            if nxt[0] == PUNCT and nxt[1] == "(" and not self.is_call:
                # measured: generic(sym) (and any name(...)) is a syntax error in an
                # instruction; only initializers take it
                raise self.error(
                    f"'{text}(...)' is only allowed in an initializer", self.toks[self.i - 1][2]
                )
            return Sym(text)
        if kind == NUM:
            return self.const()
        if kind == PUNCT:
            nxt = self.toks[self.i + 1]
            if text == "-" and nxt[0] == ID and nxt[1] != "WARP_SZ":
                # vmad's negated sources: -%r1, -%r2.h0
                self.i += 1
                inner = self.parse_operand()
                if isinstance(inner, Reg):
                    self.sel_seen = True
                    return Sel(inner, "", True)
                if isinstance(inner, Sel) and not inner.neg:
                    self.sel_seen = True
                    return Sel(inner.reg, inner.sel, True)
                raise self.error("expected a register after '-'", nxt[2])
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
                if any(type(e) is Reg and is_special_register(e.name) for e in elems):
                    self.sreg_in_vector = True
                return Vec(tuple(elems))
            if text == "(" and self.is_call:
                self.i += 1
                items: list[Operand] = []
                if not self.accept(")"):
                    while True:
                        item = self.parse_operand()
                        if type(item) is Vec:
                            items.extend(item.elems)  # a vector register argument
                        else:
                            items.append(item)
                        if self.accept(")"):
                            break
                        self.expect(",")
                return ParenList(tuple(items))
            if text == "!":
                nxt = self.toks[self.i + 1]
                if nxt[0] == ID and nxt[1] != "WARP_SZ":
                    self.i += 1
                    rtok = self.expect_kind(ID, "a predicate register after '!'")
                    self.check_reg(rtok)
                    return Not(Reg(rtok[1]))
            if text in "-+!~(":
                return self.const()
        raise self.error(f"expected an operand, found {self.describe(self.toks[self.i])}", off)

    def selected(self, text: str) -> Sel | None:
        """``%r1.b0``: a declared register with a video selector (None otherwise)."""
        if self.regs.declared(text) or is_special_register(text):
            return None
        m = _VIDEO_SELECTOR.search(text)
        if m is None or not self.regs.declared(text[: m.start()]):
            return None
        self.sel_seen = True
        return Sel(Reg(text[: m.start()]), m.group(1))

    def parse_address(self) -> Addr:
        self.i += 1  # '['
        kind, text, off = self.toks[self.i]
        base: Operand | None
        offset = 0
        plus = False
        if kind == ID and text != "WARP_SZ":
            base = self.parse_operand(in_address=True)
        elif kind == PUNCT and text in "[{":
            base = self.parse_operand(in_address=True)
        else:
            base = None
            offset = self.const_int("address")
        if base is not None:
            tok = self.toks[self.i]
            if tok[0] == PUNCT and tok[1] == "+":
                self.i += 1
                offset = self.const_int("offset")
                plus = True
            elif tok[0] == PUNCT and tok[1] == "-" and isinstance(base, Sym):
                self.i += 1
                offset = -self.const_int("offset")
        extra: list[Operand] = []
        while self.accept(","):
            extra.append(self.parse_operand())
        self.expect("]")
        return Addr(base, offset, tuple(extra), plus)


# an INSTR token: guard ('!', register), opcode, operands (see ptxopt.ptx.lexer)
_INSTR_PARTS = re.compile(r"(?:@(!?)([^ \t]+)[ \t]+)?([^ \t]+)[ \t]+(.*?)[ \t]*;\Z", re.S)
# one operand of an INSTR token's operand text that has brackets or braces
_PIECE = re.compile(r"\[[^\]]*\]|\{[^}]*\}|[^,\[{ \t]+")
_ID_TOKEN = re.compile(r"(?:[A-Za-z][\w$]*|[_$%][\w$]+)(?:\.[\w$:]+)*", re.ASCII)
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]{0,17})", re.ASCII)
# operand text -> immediate, for the numbers of INSTR tokens (shared by all parses:
# a number's meaning does not depend on where it stands)
_NUMBERS: dict[str, Imm] = {}


def _piece_offset(text: str, piece: str) -> int:
    """Where the operand ``piece`` is in the INSTR token ``text``: the first place
    after the opcode where it stands as a whole operand."""
    m = _INSTR_PARTS.match(text)
    assert m is not None
    pos = m.start(4)
    while True:
        at = text.index(piece, pos)
        before = text[at - 1]
        after = text[at + len(piece)]
        if before in " \t," and after in " \t,;":
            return at
        pos = at + 1


_INIT_SPACE = re.compile(r"\s*([{}])\s*")
_LONG_DECIMAL = re.compile(r"[0-9]{20,}")
# a list of decimal integers in the printed form: items of 1-19 digits without a
# leading zero, each comma followed by one space (possessive: never backtracks)
_CANONICAL_LIST = re.compile(r"(?:[1-9][0-9]{0,18}+|0)(?:, (?:[1-9][0-9]{0,18}+|0))*+")
# an empty item, two numbers in one, or a leading zero (octal)
_NOT_PLAIN_LIST = re.compile(r"[{,][ \t\r\n]*[,}]|[0-9][ \t\r\n]+[0-9]|(?<![0-9])0[0-9]")
_OCTAL_ITEM = re.compile(r",0[0-9]")


def plain_list(inner: str) -> bool:
    """``inner`` (digits, commas and whitespace) is a list of decimal integers: no
    empty item, no two numbers in one item, no leading zero.  The usual table (one
    space after each comma) is checked with string scans, anything else by a regular
    expression."""
    if "\n" in inner or "\t" in inner or "\r" in inner or "  " in inner:
        return _NOT_PLAIN_LIST.search("{" + inner + "}") is None
    c = inner.replace(" ", "")
    if not c or c[0] == "," or c[-1] == "," or ",," in c:
        return False
    if " " in inner.replace(", ", ",").replace(" ,", ",").strip(" "):
        return False  # a space between two digits
    if c[0] == "0" and len(c) > 1 and c[1] != ",":
        return False
    return _OCTAL_ITEM.search(c) is None


_WARP_SZ = re.compile(r"\bWARP_SZ\b")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def clean_text(text: str) -> str:
    """``text`` without comments, its whitespace runs collapsed to one space."""
    if "/" in text:
        text = _COMMENT.sub(" ", text)
    return " ".join(text.split())


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Room for the deepest nesting ptxas accepts (1663 blocks, ~10000 parentheses):
    Python-to-Python calls use no C stack since 3.11, so only the limit is raised."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 200_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: the AST, the IR and the interpreter's
    decoded program allocate many linked objects at once that mostly live on, and the
    full collections this triggers walk every object of the process again and again
    (on a 43k-line kernel, 6-10 s of an interpreter launch of 11-15 s).  Memory is
    reclaimed when the collector resumes."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse(text: str, filename: str = "<input>") -> Module:
    """Parse PTX ``text``; raise :class:`PtxError` with a source span on bad input."""
    with deep_recursion():
        return Parser(text, filename).parse_module()


def parse_file(path: str) -> Module:
    with open(path, encoding="utf-8") as f:
        return parse(f.read(), path)
