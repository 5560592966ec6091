"""PTX tokenizer: one compiled regular expression, scanned once over the text.

Tokens are ``(kind, text, offset)`` tuples.  Identifiers swallow dotted suffixes
so an opcode with its modifiers (``ld.global.L2::128B.v4.f32``) and a special
register with its component (``%tid.x``) are single tokens; a directive or a
leading modifier (``.reg``, ``.b32``) is a ``DIR`` token.  Comments and whitespace
are dropped.  Line and column numbers are computed on demand from offsets, which
keeps the hot loop free of bookkeeping.

The lexical grammar is the PTX ISA's (section "Syntax"), narrowed to what ptxas
13.0 accepts where the two differ (each point checked against ptxas):

* whitespace is space, tab, newline, carriage return and form feed; any other
  control character outside a comment is an error, and a NUL anywhere is one
  (ptxas stops reading there and reports an unexpected end of file);
* only ASCII is allowed, in comments too;
* identifiers are ``[A-Za-z][A-Za-z0-9_$]*`` or ``[_$%][A-Za-z0-9_$]+``; a lone
  ``_`` is the sink operand;
* integers are decimal, octal (``017``), hex (``0x1F``) or binary (``0b101``) with an
  optional ``U``; floats are decimal (``1.5``, ``.5``, ``1.``, ``1e5``) or exact bit
  patterns (``0f3f800000``, ``0d3ff0000000000000``).  A number running into a
  letter, digit or dot (``08``, ``1.5U``, ``0f3f80``) is malformed; a ``$`` ends it
  (``.b8 0$L__info_string1:`` is a number and a label, as in ptxas);
* a ``# <line> "file"`` line marker (C preprocessor output) is skipped;
* after ``.version``, a directive may follow the number without a space
  (``.version 8.0.target sm_80``).
"""

from __future__ import annotations

import bisect
import re

from ptxopt.ptx.ast import PtxError, Span

# Token kinds.
NUM = 1
ID = 2
DIR = 3
STR = 4
PUNCT = 5
EOF = 6
# ``= {1, 2, 3}``: an initializer of digits, commas and spaces, as one token (the data
# tables of cuRAND and friends hold 10^5 numbers; the parser splits the text once
# instead of taking a token per number and comma).  Comments, other bases, signs and
# nested braces leave a list to the ordinary tokens; so does a list that is not a
# plain one after all (``{1,,2}``, ``{01}``): the parser asks for its tokens
# (:func:`tokenize_span`).
INIT_LIST = 7

# ``add.s32 %r1, %r2, 4;``: a whole instruction of the usual shape, as one token: an
# optional guard, the opcode, then operands that are names, numbers, ``[...]``
# addresses or ``{...}`` vectors on one line, without comments, strings, parentheses
# or '|'.  Most of a kernel is such lines; the parser reads the token's text directly
# and asks for its ordinary tokens (:func:`tokenize_span`) for anything it does not
# read itself.  The lexer makes this token only where a statement starts
# (:func:`_statement_may_start`); elsewhere it splits the text as usual.
INSTR = 8

# ``.b8 1`` ``.b8 0,17`` ``.b64 $L__tmp3`` ...: a run of section data lines (bytes
# written as plain decimals, 0-255, so every value fits; one small decimal; one label)
# as one token.  The debug sections of a ``-G`` or ``-lineinfo`` build are thousands
# of such lines, which were a third of the whole file's tokens.  The lexer makes this
# token only inside ``.section NAME { ... }`` (:func:`_in_section`); elsewhere it
# splits the text as usual.
DATA = 9

# Each match is the whitespace and comments before a token, then the token (or the
# end of the text): one match per token keeps the Python loop short.  Groups are
# numbered (a number is cheaper to get than a name): see _KINDS.  An identifier
# cannot start like a number, nor a number like punctuation, so the order of the
# alternatives only matters for '%' and '=' (an identifier or a list first), and
# for the whole instruction, tried before its opcode alone.
_TOKEN_PATTERN = r"""
    [ \t\r\n\f]*(?:(?://[^\n]*|/\*.*?\*/
      |(?<![^\n])\#[ \t]*[0-9]+[ \t]+"[^"\n]*"[^\n]*)[ \t\r\n\f]*)*+
    (?:
      (%s)
    | ((?:[A-Za-z][\w$]*|[_$%%][\w$]+)(?:\.[\w$:]+)*+|_)
    | (=[ \t\r\n]*\{[0-9 \t\r\n,]*\})
    | ([{}()\[\];,:+\-!|@<>=*/~&^%%?\\])
    | ((?:0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}
        |0[xX][0-9a-fA-F]+U?|0[bB][01]+U?
        |(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+
        |0[0-7]*U?|[1-9][0-9]*U?)(?![\w.]))
    | (%s)
    | (\.[A-Za-z_][\w$:]*)
    | ("(?:[^"\\\n]|\\.)*")
    | (\Z)
    | ([0-9][\w.]*|\.[0-9][\w.]*)
    | (/\*|.)
    )
    """
_OPERAND = r"""(?:\[[^\]\n;/"|()@!\[{]*\]|\{[^}\n;/"|()@!{]*\}|[\w$%\-][\w$%.:+\-]*)"""
_INSTR_PATTERN = (
    r"(?:@!?[\w$%]+[ \t]+)?[a-z][\w$]*(?:\.[\w$:]+)*+[ \t]+"
    + _OPERAND
    + r"(?:[ \t]*,[ \t]*"
    + _OPERAND
    + r")*+[ \t]*;"
)
_BYTE = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?![\w.$])"


def _then_none_of(chars: str) -> str:
    """Not followed (across white space, line breaks and comments) by one of
    ``chars``: a list or an expression that goes on is left to the ordinary tokens."""
    return r"(?![ \t\r\n\f]*+(?:(?://[^\n]*+|/\*.*?\*/)[ \t\r\n\f]*+)*+[" + chars + "])"


# a whole line's list: a value the byte pattern does not take ends the run before
# its line (``.b8 2, 0$L__s:`` is a number and a label)
_BYTES = r"\.b8[ \t]+" + _BYTE + r"(?:[ \t]*,[ \t]*" + _BYTE + r")*" + _then_none_of(",")
# a line of one wider value: a decimal that fits every width it is given for
# (.b16: up to 4 digits, .b32/.b64: up to 9), or for .b32/.b64 a name without a
# dot (the debug information's ``.b64 $L__func_begin0``: a label's address)
_WIDER = (
    r"(?:\.b16[ \t]+(?:[1-9][0-9]{0,3}|0)(?![\w.$])"
    + _then_none_of(",")
    + r"|\.b(?:32|64)[ \t]+(?:[1-9][0-9]{0,8}|0)(?![\w.$])"
    + _then_none_of(",")
    + r"|\.b(?:32|64)[ \t]+(?:[A-Za-z][\w$]*+|[_$][\w$]++)(?![.])"
    + _then_none_of(",+\\-:")
    + ")"
)
_DATA_LINE = r"(?:" + _BYTES + "|" + _WIDER + ")"
_DATA_PATTERN = _DATA_LINE + r"(?:[ \t\r\n\f]+" + _DATA_LINE + r")*"
_FLAGS = re.VERBOSE | re.DOTALL | re.ASCII
# a run of such instructions, one to a line (white space with a line break between
# them, no comment): one match for the run, split into tokens by :func:`_instructions`
_INSTR_RUN = _INSTR_PATTERN + r"(?:[ \t\r\f]*\n[ \t\r\n\f]*" + _INSTR_PATTERN + r")*+"
_FAST_RE = re.compile(_TOKEN_PATTERN % (_INSTR_RUN, _DATA_PATTERN), _FLAGS)
_LINE_SPACE = " \t\r\f"
_TOKEN_RES: list[re.Pattern[str]] = []


def _token_re() -> re.Pattern[str]:
    """The pattern without instruction tokens, compiled on first use (a millisecond
    of start-up that most files never need)."""
    if not _TOKEN_RES:
        _TOKEN_RES.append(re.compile(_TOKEN_PATTERN % ("(?!)", "(?!)"), _FLAGS))
    return _TOKEN_RES[0]


_VERSION_THEN_DIRECTIVE = re.compile(r"([0-9]+\.[0-9]+)(\.[A-Za-z_][\w$]*)\Z")
# token kind per group number (the most frequent kinds first: the alternatives are
# tried in order); 9: end of text, 10: malformed number, 11: anything else
_KINDS = (0, INSTR, ID, INIT_LIST, PUNCT, NUM, DATA, DIR, STR)

Token = tuple[int, str, int]


class SourceMap:
    """Maps byte offsets of a source text to 1-based line/column spans."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        # the offset after each "\n" (a loop over the lines' lengths: compiled, a call
        # of str.find per line would go through the interpreter's method lookup)
        starts = self._starts = [0]
        pos = 0
        lines = text.split("\n")
        lines.pop()
        for line in lines:
            pos += len(line) + 1
            starts.append(pos)
        self._line = 1  # the line of the last span: the parser asks in text order

    def span(self, offset: int) -> Span:
        starts = self._starts
        line = self._line
        # in text order the line is the last one or a few after it; else a binary search
        if starts[line - 1] <= offset and (line + 4 >= len(starts) or offset < starts[line + 4]):
            n = len(starts)
            while line < n and starts[line] <= offset:
                line += 1
        else:
            line = bisect.bisect_right(starts, offset)
        self._line = line
        return Span(self.filename, line, offset - starts[line - 1] + 1)

    def line_end(self, offset: int) -> int:
        """Offset of the end of the line containing ``offset``."""
        end = self.text.find("\n", offset)
        return len(self.text) if end < 0 else end


def tokenize(text: str, smap: SourceMap, instructions: bool = True) -> list[Token]:
    """Split ``text`` into tokens, ending with an ``EOF`` token; with
    ``instructions``, the usual instruction lines are ``INSTR`` tokens."""
    nul = text.find("\0")
    if nul >= 0:
        raise PtxError(smap.span(nul), "NUL character (ptxas reads it as the end of the file)")
    if not text.isascii():
        pos = next(i for i, c in enumerate(text) if ord(c) > 127)
        raise PtxError(smap.span(pos), f"non-ASCII character {text[pos]!r}")
    out: list[Token] = []
    _scan(_FAST_RE if instructions else _token_re(), text, 0, len(text), smap, out)
    out.append((EOF, "", len(text)))
    return out


def tokenize_span(text: str, start: int, end: int, smap: SourceMap) -> list[Token]:
    """The ordinary tokens of ``text[start:end]`` (no ``EOF``, no ``INSTR``)."""
    out: list[Token] = []
    _scan(_token_re(), text, start, end, smap, out)
    return out


# before a '{' that opens a body or a block (not an initializer nor a section)
_BEFORE_BLOCK = frozenset({")", ";", "}", ":"})
_BOUNDARY = frozenset({";", "}", ":"})


def _statement_may_start(out: list[Token]) -> bool:
    """Whether the tokens so far end where a statement may start: after ``;`` (an
    instruction token's too), a label's ``:``, a block's ``{`` or ``}``, or a
    ``.loc`` line.  Elsewhere (a
    declaration, an initializer, a section) an instruction token is never made."""
    if not out:
        return False
    kind, text, _ = out[-1]
    if kind == INSTR:
        return True
    if kind == PUNCT:
        if text in _BOUNDARY:
            return True
        if text == "{" and len(out) > 1:
            before = out[-2]
            return (
                before[0] == NUM
                or before[0] == ID
                or (before[0] == PUNCT and before[1] in _BEFORE_BLOCK)
            )
        return False
    return (kind == NUM or kind == ID) and _after_loc_line(out)


def _after_loc_line(out: list[Token]) -> bool:
    """Whether the tokens end with a whole ``.loc`` line: ``.loc f l c`` then any
    ``, function_name label`` and ``, inlined_at f l c`` clauses (a statement after
    a cut-short line would be read into the line)."""
    n = len(out)
    k = n - 1
    while k >= 4:
        kind, text, _ = out[k]
        if kind == NUM and k >= 7:  # ", inlined_at f l c"
            a, b, c = out[k - 4], out[k - 3], out[k - 2]
            if (
                a[1] == ","
                and a[0] == PUNCT
                and b[1] == "inlined_at"
                and c[0] == NUM
                and out[k - 1][0] == NUM
            ):
                k -= 5
                continue
        if kind == ID and out[k - 1][1] == "function_name" and out[k - 2][1] == ",":
            k -= 3
            continue
        break
    return (
        k >= 3
        and out[k][0] == NUM
        and out[k - 1][0] == NUM
        and out[k - 2][0] == NUM
        and out[k - 3][0] == DIR
        and out[k - 3][1] == ".loc"
    )


def _in_section(out: list[Token]) -> bool:
    """Whether the tokens so far end inside the body of ``.section NAME { ... }`` (the
    walk back stops at the run of data before, or at the nearest brace)."""
    k = len(out) - 1
    while k >= 0:
        kind, text, _ = out[k]
        if kind == DATA:
            return True
        if kind == PUNCT and (text == "{" or text == "}"):
            return (
                text == "{"
                and k >= 2
                and out[k - 1][0] == DIR
                and out[k - 2][0] == DIR
                and out[k - 2][1] == ".section"
            )
        k -= 1
    return False


def _instructions(text: str, start: int, end: int, smap: SourceMap, out: list[Token]) -> None:
    """The ``INSTR`` tokens of a run of instruction lines ``text[start:end]`` (one
    instruction a line).  The first is one only where a statement may start (else its
    ordinary tokens); the others follow an instruction's ``;``."""
    pos = start
    first = True
    for line in text[start:end].split("\n"):
        body = line.lstrip(_LINE_SPACE)
        if body:
            at = pos + len(line) - len(body)
            body = body.rstrip(_LINE_SPACE)
            if first and not _statement_may_start(out):
                _scan(_token_re(), text, at, at + len(body), smap, out)
            else:
                out.append((INSTR, body, at))
            first = False
        pos += len(line) + 1


def _scan(
    regex: re.Pattern[str], text: str, start: int, end: int, smap: SourceMap, out: list[Token]
) -> None:
    append = out.append
    kinds = _KINDS
    for m in regex.finditer(text, start, end):
        g = m.lastindex
        if g is not None and g < 9:
            a, b = m.span(g)  # one call for both ends (group and start: two)
            if g == 1:
                _instructions(text, a, b, smap, out)
            elif g == 6 and not _in_section(out):
                _scan(_token_re(), text, a, b, smap, out)
            else:
                append((kinds[g], text[a:b], a))
            continue
        if g == 9:
            break
        assert g is not None
        bad = m.group(g)
        if g == 10 and out and out[-1][1] == ".version" and out[-1][0] == DIR:
            # measured: ptxas reads ".version 8.0.target" as the version and a directive
            v = _VERSION_THEN_DIRECTIVE.match(bad)
            if v is not None:
                at = m.start(g)
                append((NUM, v.group(1), at))
                append((DIR, v.group(2), at + v.start(2)))
                continue
        where = smap.span(m.start(g))
        if g == 10:
            raise PtxError(where, f"malformed number '{bad}'")
        if bad == "/*":
            raise PtxError(where, "unterminated comment")
        raise PtxError(where, f"unexpected character {bad!r}")
