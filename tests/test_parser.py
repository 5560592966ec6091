"""Parser units: every syntactic form the IR depends on, and source spans."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptxopt.ptx.ast import (
    Addr,
    BranchTargets,
    DebugLoc,
    Directive,
    Expr,
    Imm,
    Instr,
    Label,
    Not,
    Pair,
    ParenList,
    PtxError,
    RawStmt,
    Reg,
    RegDecl,
    Scope,
    Sink,
    Sym,
    VarDecl,
    Vec,
)
from ptxopt.ptx.parser import Parser, parse, parse_number, range_lookup

HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"


def body_of(src: str) -> list:
    mod = parse(HEAD + ".visible .entry k()\n{\n" + src + "\n}\n", "t.ptx")
    body = mod.functions[0].body
    assert body is not None
    return body


def instrs(src: str) -> list[Instr]:
    return [s for s in body_of(src) if isinstance(s, Instr)]


def test_module_directives() -> None:
    mod = parse(".version 9.0\n.target sm_90a, debug\n.address_size 64\n", "m.ptx")
    assert mod.version == "9.0"
    assert mod.target == ["sm_90a", "debug"]
    assert mod.arch == "sm_90a"
    assert mod.address_size == 64


@pytest.mark.parametrize(
    "text, value, kind",
    [
        ("0f3F800000", 1.0, "f32"),
        ("0d4000000000000000", 2.0, "f64"),
        ("0x1F", 31, "int"),
        ("017", 15, "int"),
        ("0b101", 5, "int"),
        ("42U", 42, "int"),
        ("1.5", 1.5, "f64"),
    ],
)
def test_immediates(text: str, value: float, kind: str) -> None:
    imm = parse_number(text)
    assert imm.value == value and imm.kind == kind and imm.text == text


def test_negative_immediate_keeps_spelling() -> None:
    (ins,) = instrs(".reg .b32 %r<2>;\nmov.u32 %r1, -7;")
    assert ins.operands[1] == Imm(-7, "-7", "int")


def test_opcode_split_into_head_and_modifiers() -> None:
    (ins,) = instrs(
        ".reg .f32 %f<5>;\n.reg .b64 %rd<2>;\n"
        "ld.global.L2::128B.v4.f32 {%f1, %f2, _, %f4}, [%rd1+16];"
    )
    assert ins.opcode == "ld"
    assert ins.mods == (".global", ".L2::128B", ".v4", ".f32")
    assert ins.operands[0] == Vec((Reg("%f1"), Reg("%f2"), Sink(), Reg("%f4")))
    assert ins.operands[1] == Addr(Reg("%rd1"), 16)
    assert ins.span is not None and ins.span.line == 8


def test_predicates_pairs_and_negation() -> None:
    a, b = instrs(
        ".reg .pred %p<4>;\n.reg .b32 %r<3>;\n"
        "setp.lt.and.s32 %p1|%p2, %r1, %r2, !%p3;\n@!%p1 bra $L1;\n$L1:\nret;"
    )[:2]
    assert a.operands[0] == Pair(Reg("%p1"), Reg("%p2"))
    assert a.operands[3] == Not(Reg("%p3"))
    assert b.pred == Reg("%p1") and b.pred_neg
    assert b.operands == [Sym("$L1")]


def test_addresses() -> None:
    ins = instrs(
        ".reg .b32 %r<3>;\n.reg .b64 %rd<2>;\n"
        "ld.global.u32 %r1, [tbl+4];\nld.global.u32 %r2, [%rd1+-8];\nld.global.u32 %r2, [256];"
    )
    assert ins[0].operands[1] == Addr(Sym("tbl"), 4)
    assert ins[1].operands[1] == Addr(Reg("%rd1"), -8)
    assert ins[2].operands[1] == Addr(None, 256)


def test_calls_direct_indirect_and_prototype() -> None:
    body = body_of(
        ".reg .b64 %rd<2>;\n"
        "proto: .callprototype (.param .b32 _) _ (.param .b32 _);\n"
        "{\n.param .b32 param0;\n.param .b32 retval0;\n"
        "call.uni (retval0), f, (param0);\ncall (retval0), %rd1, (param0), proto;\n}"
    )
    assert isinstance(body[1], RawStmt) and ".callprototype" in body[1].text
    scope = body[2]
    assert isinstance(scope, Scope)
    direct, indirect = [s for s in scope.body if isinstance(s, Instr)]
    assert direct.operands == [ParenList((Sym("retval0"),)), Sym("f"), ParenList((Sym("param0"),))]
    assert indirect.operands[1] == Reg("%rd1") and indirect.operands[3] == Sym("proto")


def test_branch_targets_and_labels() -> None:
    body = body_of(
        ".reg .b32 %r<2>;\nts: .branchtargets L0, L1;\nbrx.idx %r1, ts;\nL0:\nret;\nL1:\nret;"
    )
    assert body[1] == body[1] and isinstance(body[1], BranchTargets)
    assert body[1].labels == ["L0", "L1"]
    assert isinstance(body[3], Label) and body[3].name == "L0"


def test_register_declarations_and_scoped_shadowing() -> None:
    body = body_of(
        ".reg .b32 %r<10>, %x;\n.reg .v2 .f32 %v;\n{\n.reg .b32 %r<2>;\nmov.u32 %r1, 3;\n}"
    )
    d0, d1, scope = body
    assert isinstance(d0, RegDecl) and d0.names == [("%r", 10), ("%x", None)]
    # a vector register is split into one scalar register per component
    assert isinstance(d1, RegDecl) and d1.names == [("%v$x", None), ("%v$y", None)]
    assert isinstance(scope, Scope) and isinstance(scope.body[0], RegDecl)


def test_variables_with_initializers() -> None:
    mod = parse(
        HEAD
        + ".global .align 4 .u32 t[2] = {1, 2};\n"
        + ".global .align 8 .u64 p = generic(t);\n"
        + ".extern .shared .align 16 .b8 dyn[];\n",
        "v.ptx",
    )
    t, p, dyn = mod.globals
    assert t.dims == [2] and t.init == "{1, 2}" and t.align == 4
    assert p.init == "generic(t)"
    assert dyn.linkage == (".extern",) and dyn.dims == [None]


def _init_or_error(text: str) -> str:
    try:
        init = parse(text, "t.ptx").globals[-1].init
    except PtxError as e:
        return "error:" + str(e).split("error:")[1]
    assert init is not None
    return init


def test_plain_integer_lists_read_as_one_token_agree_with_the_token_by_token_path() -> None:
    """``= {1, 2, 3}`` is one lexer token (the large data tables); a comment before the
    closing brace forces the ordinary tokens.  Both paths must give the same spacing,
    the same range errors and the same handling of lists that only look plain (empty
    items, two numbers in one item, octal)."""
    import random

    rng = random.Random(7)
    items = ["0", "1", "17", "255", "00", "017", "09", "1 2", "", "18446744073709551616"]
    items += ["99999999999999999999999", "4294967295", "9999999999999999999"]
    items += ["18446744073709551615", "1000000000000000000"]  # 20 and 19 digits
    seen = set()
    for _ in range(3000):
        n = rng.randint(0, 5)
        spaces = ["", " "] if rng.random() < 0.5 else ["", " ", "  ", "\n", "\t ", " \n "]
        ws = [rng.choice(spaces) for _ in range(2 * n + 3)]
        chosen = [rng.choice(items) for _ in range(n)]
        body = (
            "{"
            + ws[0]
            + "".join(
                (ws[2 * k + 1] + "," + ws[2 * k + 2] if k else "") + chosen[k] for k in range(n)
            )
        )
        decl = f".global .u64 t[{max(n, 1)}] ={ws[-1]}{body}"
        fast = _init_or_error(HEAD + decl + "};\n")
        slow = _init_or_error(HEAD + decl + "/* c */};\n")
        assert fast == slow, decl
        seen.add(fast.split(":")[0] if fast.startswith("error") else "ok")
    assert seen == {"ok", "error"}
    # lists already in the printed form (", " between items, as the tables are
    # written) take a shortcut: it must still find an item that is too long or octal
    outcomes = set()
    for n in range(1, 5):
        for odd in ("99999999999999999999", "18446744073709551616", "01", "00", "017"):
            for k in range(n):
                chosen = ["9999999999999999999", "0", "255", "18446744073709551615"][:n]
                chosen[k] = odd
                decl = f".global .u64 t[{n}] = {{{', '.join(chosen)}"
                slow = _init_or_error(HEAD + decl + "/* c */};\n")
                assert _init_or_error(HEAD + decl + "};\n") == slow, decl
                outcomes.add(slow.split(":")[0] if slow.startswith("error") else "ok")
    assert outcomes == {"ok", "error"}
    # the one-token path's errors point at the literal
    with pytest.raises(PtxError, match=r"t.ptx:4:25: error: integer constant overflow"):
        parse(HEAD + ".global .u64 t[2] = {1, 99999999999999999999999};\n", "t.ptx")
    big = ", ".join(str(i % 256) for i in range(100_000))
    mod = parse(HEAD + f".global .b8 tab[100000] = {{ {big} }};\n", "t.ptx")
    assert mod.globals[0].init == "{" + big + "}"


def _sections_or_error(text: str, instructions: bool) -> str:
    try:
        mod = Parser(text, "t.ptx", instructions).parse_module()
    except PtxError as e:
        return f"error {e}"
    return "\n".join(d.text for d in mod.items if isinstance(d, Directive) and d.name == ".section")


def test_section_byte_runs_read_as_one_token_agree_with_the_token_by_token_path() -> None:
    """Runs of data lines in a section (``.b8`` lines of plain bytes, lines of one
    small decimal or one label) are one lexer token (the debug sections of a -G
    build).  Whatever the lines hold -- values out of range, octal, hex, signs,
    labels after a number, lists cut by a comment or continued after one, other
    widths, label arithmetic -- the module or the error must be what the
    token-by-token reading gives."""
    import random

    rng = random.Random(11)
    values = ["0", "1", "17", "99", "100", "255", "256", "300", "00", "07", "0x1f", "-1"]
    values += ["1$L__b:", "$L__a", "2 3", "1.5", "0f3f800000", "255U", "1 ,"]
    others = ["$L__x:", ".b32 .debug_abbrev", ".b64 $L__tmp1+8", ".b16 65535", ".b16 65536"]
    others += ["/* c */", "// c", ".b32 4294967296", ".b8", "@@DWARF .b8 1", ".b8 1 .b8 2"]
    # lines of one wider value (one token with the bytes when the value surely fits)
    others += [".b64 $L__tmp1", ".b32 $L__a", ".b64 x_param_0", ".b32 123456789", ".b64 0"]
    others += [".b16 9999", ".b16 99999", ".b32 1234567890", ".b32 007", ".b8 $L__a"]
    others += [".b64 $L__a - 4", ".b64 a.b", ".b64 %r1", ".b64 _", ".b32 $L__a /* c */ + 8"]
    others += [".b64 $L__a // c\n+ 2", ".b32 7 /* c */ , 8", ".b16 5\n, 6", ".b64 a:", ".b64 1.0"]
    seen = set()
    for _ in range(3000):
        lines = []
        for _ in range(rng.randint(1, 6)):
            if rng.random() < 0.75:
                sep = rng.choice([",", ", ", " ,", " , ", ",\t", " /* c */ ,", "\n,", " // c\n,"])
                picked = [rng.choice(values) for _ in range(rng.randint(1, 4))]
                lines.append(rng.choice([".b8 ", ".b8\t", ".b8  "]) + sep.join(picked))
            else:
                lines.append(rng.choice(others))
        body = rng.choice(["\n", "\n\t", " "]).join(lines)
        text = HEAD + ".visible .entry k()\n{\nret;\n}\n.section .debug_info\n{\n" + body + "\n}\n"
        fast = _sections_or_error(text, True)
        assert fast == _sections_or_error(text, False), body
        seen.add("error" if fast.startswith("error") else "ok")
    assert seen == {"ok", "error"}
    # outside a section the same lines are read token by token: the errors agree
    for where in (
        "{body}\n.visible .entry k()\n{{\nret;\n}}\n",
        ".visible .entry k()\n{{\n{body}\nret;\n}}\n",
        ".section {body}\n{{\n.b8 1\n}}\n",
        ".global .b8 t[2] = {{1, 2}};\n{{\n{body}\n}}\n",
    ):
        text = HEAD + where.format(body=".b8 1\n.b8 2, 3")
        fast = _sections_or_error(text, True)
        assert fast.startswith("error") and fast == _sections_or_error(text, False), where


def test_debug_directives() -> None:
    mod = parse(
        HEAD + '.file 1 "k.cu"\n.visible .entry k()\n{\n.loc 1 5 3\nret;\n}\n'
        ".section .debug_info\n{\n.b32 5\n.b8 1, 2\n}\n",
        "d.ptx",
    )
    assert any(isinstance(i, Directive) and i.name == ".file" for i in mod.items)
    sec = [i for i in mod.items if isinstance(i, Directive) and i.name == ".section"]
    assert sec and sec[0].text.startswith(".section .debug_info")
    body = mod.functions[0].body
    assert body is not None and isinstance(body[0], DebugLoc)
    assert (body[0].file, body[0].line, body[0].col) == (1, 5, 3)


def test_expression_operand() -> None:
    (ins,) = instrs(".reg .b64 %rd<2>;\nmov.u64 %rd1, tbl+8;")
    assert ins.operands[1] == Expr("tbl+8")


def test_module_level_variable_is_not_a_register() -> None:
    (ins,) = instrs(".reg .b64 %rd<2>;\nmov.u64 %rd1, buf;")
    assert ins.operands[1] == Sym("buf")


def test_a_name_read_as_a_symbol_is_a_register_once_declared_so() -> None:
    """ptxas takes a .reg declared after the same name was read as a variable: the
    reads after the declaration are the register (the parser remembers operands by
    their text; a declaration must make it forget the symbol)."""
    first, first_addr, _, second, second_addr = instrs(
        ".reg .b64 %rd<4>;\nmov.u64 %rd1, foo;\nld.global.u64 %rd3, [foo];\n"
        ".reg .b64 foo;\nmov.u64 foo, 5;\nmov.u64 %rd2, foo;\nld.global.u64 %rd3, [foo];"
    )
    assert first.operands[1] == Sym("foo") and first_addr.operands[1] == Addr(Sym("foo"))
    assert second.operands[1] == Reg("foo") and second_addr.operands[1] == Addr(Reg("foo"))


def test_function_signature_forms() -> None:
    mod = parse(
        HEAD
        + ".func (.param .b32 r) f(.param .align 8 .b8 s[16], .reg .b32 x) .noreturn;\n"
        + ".visible .entry k(.param .u64 .ptr .global .align 4 a)\n.maxntid 64, 1, 1\n{\nret;\n}\n",
        "s.ptx",
    )
    f, k = mod.functions
    assert f.body is None and f.rets[0].name == "r" and f.attrs == (".noreturn",)
    assert f.params[0].align == 8 and f.params[0].dims == [16]
    assert k.params[0].attrs == (".ptr", ".global", ".align 4")
    assert k.directives == [".maxntid 64, 1, 1"]


def test_vardecl_inside_body() -> None:
    body = body_of(".local .align 8 .b8 depot[32];\n.shared .align 4 .b8 s[64];")
    assert all(isinstance(b, VarDecl) for b in body)


@pytest.mark.parametrize(
    "src, message, line, col",
    [
        (".reg .b32 %r<2>;\nmov.u32 %r1, %r7;", "undeclared register '%r7'", 7, 14),
        (".reg .b32 %r<2>;\nadd.s32 %r1, %r1, ;", "expected an operand", 7, 19),
        (".reg .b32 %r<2>;\nmov.u32 %r1 %r1;", "expected ',' or ';'", 7, 13),
    ],
)
def test_errors_have_spans(src: str, message: str, line: int, col: int) -> None:
    with pytest.raises(PtxError) as exc:
        body_of(src)
    assert message in str(exc.value)
    assert exc.value.span is not None
    assert (exc.value.span.line, exc.value.span.col) == (line, col)
    assert str(exc.value).startswith(f"t.ptx:{line}:{col}: error: ")


def test_truncated_body_is_an_error() -> None:
    with pytest.raises(PtxError, match="end of file"):
        parse(HEAD + ".visible .entry k()\n{\nret;\n", "trunc.ptx")


@pytest.mark.parametrize(
    "src, message",
    [
        (".reg .b32 %r<2>;\nld.global.u32 %r1, [0.];", "expected an integer address, found '0.'"),
        (".reg .b32 %r<2>;\nld.global.u32 %r1, [tbl+1.5];", "expected an integer offset"),
        (
            ".reg .b32 %r<2>;\n.reg .b64 %rd<2>;\nld.global.u32 %r1, [%rd1+2.5];",
            "expected an integer",
        ),
    ],
)
def test_non_integer_offsets_are_errors(src: str, message: str) -> None:
    with pytest.raises(PtxError, match=message):
        body_of(src)


def test_mutated_inputs_never_crash(tmp_path: Path) -> None:
    """Random truncations, deletions and insertions of punctuation give either a
    clean result or a file:line:col error — never an internal error."""
    import contextlib
    import io
    import random

    from ptxopt.cli import main

    src = (Path(__file__).parent / "ptx" / "features.ptx").read_text()
    rng = random.Random(7)
    pieces = ["{", "}", ";", ",", "[", "]", "%r1", "@", "!", ".reg", "bra", ":", "(", ")", "|", "_"]
    path = tmp_path / "m.ptx"
    for _ in range(150):
        chars = list(src)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(chars))
            r = rng.random()
            if r < 0.35:
                del chars[i : i + rng.randint(1, 12)]
            elif r < 0.8:
                chars[i:i] = rng.choice(pieces)
            else:
                chars = chars[:i]
        path.write_text("".join(chars))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = main(["opt", str(path), "-o", str(tmp_path / "o.ptx")])
        assert rc in (0, 1), err.getvalue()
        assert "internal error" not in err.getvalue()
        if rc == 1:
            assert ": error: " in err.getvalue()


def test_scope_local_register_is_undeclared_after_the_scope() -> None:
    with pytest.raises(PtxError, match="undeclared register '%tmp'"):
        body_of(".reg .b32 %r<2>;\n{\n.reg .b32 %tmp;\nmov.u32 %tmp, 1;\n}\nmov.u32 %r1, %tmp;")


@pytest.mark.parametrize(
    "name, expected",
    [
        ("%r0", ".b32"),
        ("%r59999", ".b32"),
        ("%r60000", None),  # past the count
        ("%r037", ".b32"),  # leading zeros: a register of its own, inside the range
        ("%r", None),  # no index
        ("%rd4999", ".b64"),
        ("%f12", ".u16"),  # the stem %f1 with index 2 ...
        ("%f13", None),  # ... and index 3 is past its count, and %f has no range
        ("%r12", ".b32"),  # the longest stem wins over %r1<3>
        ("%q1", None),
        ("abc", None),
        ("%s123", ".b16"),  # %s12<10> and %s1<100> both cover it: the longer stem wins
    ],
)
def test_range_lookup_splits_stem_and_index(name: str, expected: str | None) -> None:
    ranges = {
        "%r": (60000, ".b32"),
        "%rd": (5000, ".b64"),
        "%r1": (3, ".pred"),
        "%f1": (3, ".u16"),
        "%s1": (100, ".b8"),
        "%s12": (10, ".b16"),
    }
    assert range_lookup(ranges, name) == expected


def _range_lookup_reference(ranges: dict[str, tuple[int, str]], name: str) -> str | None:
    """range_lookup as it was first written, with nothing remembered: the stem
    without any trailing digit first, then every longer stem, longest first."""
    stem = name.rstrip("0123456789")
    k = len(stem)
    for j in [k, *range(len(name) - 1, k, -1)] if k < len(name) else []:
        entry = ranges.get(name[:j])
        if entry is not None and int(name[j:]) < entry[0]:
            return entry[1]
    return None


def test_range_lookup_answers_each_set_of_ranges_anew() -> None:
    """The split of a name into stem and index is remembered across calls (and
    functions, and modules); the answer still comes from the ranges of each call."""
    names = [
        f"{stem}{i}" for stem in ("%r", "%rd", "%p", "%f1", "%s", "x") for i in range(0, 130, 7)
    ]
    names += ["%r", "%r037", "%rd00", "%f"]
    sets = [
        {"%r": (100, ".b32"), "%rd": (8, ".b64")},
        {"%r": (7, ".s32"), "%p": (50, ".pred"), "%f1": (3, ".f32")},
        {"%r1": (30, ".b16"), "%s1": (9, ".b8"), "%s": (1000, ".u32"), "x": (64, ".b32")},
        {},
    ]
    for _ in range(2):  # the second round finds every split remembered
        for ranges in sets:
            for name in names:
                assert range_lookup(ranges, name) == _range_lookup_reference(ranges, name), name


def test_source_map_spans_in_any_order() -> None:
    """SourceMap.span walks on from the last line it gave (the parser asks in text
    order) and searches otherwise: every order gives each offset's line and column."""
    import random

    from ptxopt.ptx.lexer import SourceMap

    rng = random.Random(7)
    lines = ["".join("x" for _ in range(rng.choice([0, 0, 1, 3, 40]))) for _ in range(300)]
    text = "\n".join(lines) + "\n"

    def where(offset: int) -> tuple[int, int]:
        before = text[:offset]
        return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1

    offsets = list(range(len(text) + 1))
    orders = [offsets, offsets[::-1], offsets[::3] + offsets[1::3], rng.sample(offsets, 400)]
    for order in orders:
        smap = SourceMap(text, "t.ptx")
        for offset in order:
            span = smap.span(offset)
            assert (span.line, span.col) == where(offset), offset
            assert span.file == "t.ptx"
