"""PTX tokenizer: one compiled regular expression, scanned once over the text.

Tokens are ``(kind, text, offset)`` tuples.  Identifiers swallow dotted suffixes
so an opcode with its modifiers (``ld.global.L2::128B.v4.f32``) and a special
register with its component (``%tid.x``) are single tokens; a directive or a
leading modifier (``.reg``, ``.b32``) is a ``DIR`` token.  Comments and whitespace
are dropped.  Line and column numbers are computed on demand from offsets, which
keeps the hot loop free of bookkeeping.
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

_TOKEN_RE = re.compile(
    r"""
    [ \t\r\n]+
  | //[^\n]*
  | /\*.*?\*/
  | (?P<num>0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}
        |0[xX][0-9a-fA-F]+U?|0[bB][01]+U?
        |[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+U?)
  | (?P<id>[A-Za-z_$%][\w$]*(?:\.[\w$:]+)*)
  | (?P<dir>\.[A-Za-z_][\w$:]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>[{}()\[\];,:+\-!|@<>=*/~&^])
  | (?P<bad>/\*|.)
    """,
    re.VERBOSE | re.DOTALL,
)

_KIND = {"num": NUM, "id": ID, "dir": DIR, "str": STR, "punct": PUNCT}

Token = tuple[int, str, int]


class SourceMap:
    """Maps byte offsets of a source text to 1-based line/column spans."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        self._starts = [0]
        find = text.find
        pos = find("\n")
        starts = self._starts
        while pos >= 0:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)

    def span(self, offset: int) -> Span:
        line = bisect.bisect_right(self._starts, offset)
        return Span(self.filename, line, offset - self._starts[line - 1] + 1)

    def line_end(self, offset: int) -> int:
        """Offset of the end of the line containing ``offset``."""
        end = self.text.find("\n", offset)
        return len(self.text) if end < 0 else end


def tokenize(text: str, smap: SourceMap) -> list[Token]:
    """Split ``text`` into tokens, ending with an ``EOF`` token."""
    out: list[Token] = []
    append = out.append
    kinds = _KIND
    for m in _TOKEN_RE.finditer(text):
        group = m.lastgroup
        if group is None:
            continue
        if group == "bad":
            bad = m.group()
            if bad == "/*":
                raise PtxError(smap.span(m.start()), "unterminated comment")
            raise PtxError(smap.span(m.start()), f"unexpected character {bad!r}")
        append((kinds[group], m.group(), m.start()))
    append((EOF, "", len(text)))
    return out
