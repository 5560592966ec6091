"""Instruction tokens (``INSTR``, :mod:`ptxopt.ptx.lexer`) are a shortcut: the parser
reads the usual instruction line from its text instead of token by token.  The
shortcut must give the very tree the token-by-token reading gives, on every file we
have, on the edge cases of its own rules, and on mutated files (where the only
allowed difference is which of two errors comes first: a malformed number inside an
instruction line is found when that line is read, not before the whole file is)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fuzz.mutate import Mutator, build_vocab
from ptxopt.ptx.ast import PtxError
from ptxopt.ptx.lexer import INSTR, SourceMap, tokenize
from ptxopt.ptx.parser import Parser, deep_recursion

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(
    p
    for p in [*(ROOT / "tests").rglob("*.ptx"), *(ROOT / "ptxopt" / "examples").glob("*.ptx")]
    if ".expected" not in p.name
)


def read(text: str, instructions: bool) -> str:
    """The tree's full text (every field, spans included), or the error."""
    try:
        with deep_recursion():
            return repr(Parser(text, "t.ptx", instructions).parse_module().items)
    except PtxError as e:
        return f"error: {e}"


def instr_tokens(text: str) -> list[str]:
    return [t for k, t, _ in tokenize(text, SourceMap(text, "t.ptx")) if k == INSTR]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_same_tree_on_every_file(path: Path) -> None:
    text = path.read_text(encoding="latin-1")
    assert read(text, True) == read(text, False)


def test_the_corpus_is_mostly_instruction_tokens() -> None:
    """The shortcut is taken: most instructions of a compiled kernel are tokens."""
    text = (ROOT / "tests/corpus/cub/scan.sm80.ptx").read_text()
    n = len(instr_tokens(text))
    statements = text.count(";")
    assert n > 0.8 * statements - 200, (n, statements)


HEAD = """.version 8.0
.target sm_80
.address_size 64
.global .align 4 .b32 g[4];
.visible .entry k(.param .u64 k_p, .param .u32 k_n)
{
.reg .pred %p<4>;
.reg .b32 %r<20>;
.reg .b64 %rd<8>;
.reg .f32 %f<8>;
.reg .v2 .b32 vv;
.reg .b16 %h<3>;
"""

# Statements whose reading involves each rule of the shortcut; every one of them is
# an instruction token (checked), read the same both ways (checked).
CASES = [
    "mov.u32 %r1, %tid.x;",
    "add.s32 %r2, %r1, 4;",
    "add.s32 %r2,%r1,-4;",
    "add.s32 %r2, %r1, 0x10;",
    "add.s32 %r2, %r1, 010;",
    "add.s32 %r2, %r1, -0x10;",
    "add.f32 %f1, %f2, 0f3F800000;",
    "add.f32 %f1, %f2, -1.5;",
    "mov.u32 %r3, WARP_SZ;",
    "@%p1 bra $L__BB0_1;",
    "@!%p1 bra $L__BB0_1;",
    "ld.param.u64 %rd1, [k_p];",
    "ld.param.u32 %r4, [k_p+8];",
    "ld.global.u32 %r4, [%rd1];",
    "ld.global.u32 %r4, [%rd1+-16];",
    "ld.global.u32 %r4, [ %rd1 + 16 ];",
    "ld.global.u32 %r4, [%rd1+0];",
    "ld.global.u32 %r4, [g+4];",
    "ld.global.u32 %r4, [g-4];",
    "ld.global.u32 %r4, [%rd1+010];",
    "ld.global.v2.u32 {%r5, %r6}, [%rd1];",
    "ld.global.v2.u32 { %r5 , _ }, [%rd1];",
    "mov.b32 {%r5, %r6}, %rd2;",
    "mov.b64 %rd2, {%r5, %tid.x};",
    "mov.v2.b32 vv, {%r5, %r6};",
    "mov.b32 %r7, vv.x;",
    "mov.u32 %r7, %r1.b0;",
    "vadd.s32.s32.s32 %r7, -%r1, %r2;",
    "setp.lt.s32 %p2, %r1, %r2;",
    "selp.b32 %r8, %r1, 7, %p2;",
    "atom.global.add.u32 %r9, [%rd1], 1;",
    "st.global.u32 [%rd1+4], %r9;",
    "st.global.u32 [ %rd1 + 4 ] , %r9;",
    "atom.global.cas.b32 %r9, [%rd1+8], %r1, %r2;",
    "atom.global.cas.b32 %r9,[g],%r1,%r2;",
    "shl.b32 %r10, %r1, 2;",
    "bar.sync 0;",
    "ret.uni %r1;",
]


@pytest.mark.parametrize("stmt", CASES)
def test_each_rule_reads_the_same(stmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEAD + stmt + "\n$L__BB0_1:\nret;\n}\n"
    assert instr_tokens(text) == [stmt]
    slow = read(text, False)
    whole: list[str] = []
    by_tokens = Parser.instr_by_tokens

    def spy(self: Parser, text: str, start: int) -> object:
        whole.append(text)
        return by_tokens(self, text, start)

    monkeypatch.setattr(Parser, "instr_by_tokens", spy)
    assert read(text, True) == slow
    assert whole == []  # read as a token: at most an operand by the ordinary rules


# Not instruction tokens: the lexer leaves them to the ordinary tokens (a place where
# no statement starts, a line the shortcut does not read).
NOT_TOKENS = [
    ".loc 1 2\nadd.s32 %r2, %r1, 4;",  # a .loc line cut short would read into it
    ".loc 1 2 3 add.s32 %r2, %r1, 4;",  # no line break: still a whole .loc line? no
    "add.s32 %r2, %r1, 4 // a comment\n;",
    "add.s32 %r2, /* c */ %r1, 4;",
    "add.s32 %r2,\n %r1, 4;",
    "st.global .u32 [%rd1], %r1;",
    "st.global.u32 [[%rd1]], %r1;",
    "mov.b32 %r2 %r1;",
    "call foo, (%r1);",
    "ret;",
]


@pytest.mark.parametrize("stmt", NOT_TOKENS)
def test_lines_left_to_the_ordinary_tokens(stmt: str) -> None:
    text = HEAD + stmt + "\nret;\n}\n"
    toks = instr_tokens(text)
    if stmt.startswith(".loc 1 2 3 "):
        # on the .loc line itself: the instruction follows three numbers, so it is
        # one (ptxas reads the .loc line to its end; ptxopt reads its grammar)
        assert toks == [stmt[len(".loc 1 2 3 ") :]]
    else:
        assert toks == []
    assert read(text, True) == read(text, False)


def test_a_loc_line_before_an_instruction() -> None:
    text = HEAD + ".loc 1 2 3\nadd.s32 %r2, %r1, 4;\n"
    text += ".loc 1 2 3, function_name $L__info_string0, inlined_at 1 4 5\nadd.s32 %r3, %r1, 4;\n"
    text += "ret;\n}\n"
    assert instr_tokens(text) == ["add.s32 %r2, %r1, 4;", "add.s32 %r3, %r1, 4;"]


WRONG = [
    "add.s32 %r2, %r99, 4;",  # undeclared register
    "@%q1 bra $L__BB0_1;",  # undeclared guard
    "add.s32 %r2, %r1, 08;",  # malformed number
    "add.s32 %r2, %r1, 99999999999999999999999;",  # too large
    "ld.global.u32 %r4, [%rd1-4];",  # '-' after a register
    "ld.global.u32 %r4, [];",
    "ld.global.u32 %r4, [%rd1, 4];",  # a comma inside the brackets
    "ld.global.u32 %r4, [%rd1], [%rd1,%rd2];",
    "ld.global.v2.u32 {}, [%rd1];",
    "ld.global.v2.u32 {%r5,, %r6}, [%rd1];",
    "add.s32 %r2, %r1+4, 4;",
    "mov.u32 %r2, %nosuch;",
    "bra %nolabel;",
    "mov.u32 %r7, vv.q;",
]


@pytest.mark.parametrize("stmt", WRONG)
def test_errors_are_the_same(stmt: str) -> None:
    text = HEAD + stmt + "\n$L__BB0_1:\nret;\n}\n"
    fast = read(text, True)
    assert fast == read(text, False)
    # a label starting with %: a symbol in a branch; an empty vector, a register
    # plus an offset outside brackets, a list in brackets: the validator's to refuse
    if stmt not in (
        "bra %nolabel;",
        "ld.global.v2.u32 {}, [%rd1];",
        "add.s32 %r2, %r1+4, 4;",
        "ld.global.u32 %r4, [%rd1, 4];",
        "ld.global.u32 %r4, [%rd1], [%rd1,%rd2];",
    ):
        assert fast.startswith("error: t.ptx:"), fast


def test_outside_bodies_the_tokens_are_ordinary() -> None:
    """An instruction-shaped line in a section or at module level is read as the
    ordinary tokens (and refused the same way)."""
    section = HEAD + "ret;\n}\n.section .debug_str {\n$L__x:\nfoo bar;\n}\n"
    module = HEAD + "ret;\n}\nfoo bar;\n"
    for text in (section, module):
        fast = read(text, True)
        assert fast == read(text, False) and fast.startswith("error:")


LEXER_ERRORS = ("malformed number", "unexpected character", "unterminated comment")


def test_mutated_files_read_the_same() -> None:
    """Mutants of corpus files (the front-end fuzzer's mutations): the same tree or the
    same error; where the errors differ, both readings refuse the file and the
    token-by-token one stopped at a lexical error further down."""
    seeds = [
        (ROOT / "tests/corpus" / rel).read_text()
        for rel in ("cub/scan.sm80.ptx", "cuda/control.O3.sm90.ptx", "triton/softmax.sm80.ptx")
        if (ROOT / "tests/corpus" / rel).exists()
    ]
    assert len(seeds) >= 2
    vocab = build_vocab(seeds)
    differ = 0
    for i in range(200):
        rng = random.Random(f"instr-tokens:{i}")
        text, _ = Mutator(rng, vocab).apply(seeds[i % len(seeds)])
        fast, slow = read(text, True), read(text, False)
        if fast != slow:
            differ += 1
            assert fast.startswith("error:") and slow.startswith("error:"), (fast, slow)
            assert any(w in slow for w in LEXER_ERRORS), (fast, slow)
    assert differ < 10


def test_only_numbers_are_remembered_across_files() -> None:
    """Numbers mean the same in every file; registers only in their scope: after a
    file that declares %r1 and reads ``-%r1``, a file without %r1 is refused."""
    uses = "vadd.s32.s32.s32 %r7, -%r1, 3;\nret;\n}\n"
    assert not read(HEAD + uses, True).startswith("error")
    without = HEAD.replace(".reg .b32 %r<20>;", ".reg .b32 %r7;")
    fast = read(without + uses, True)
    assert fast == read(without + uses, False)
    assert "undeclared register '%r1'" in fast
