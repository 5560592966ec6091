"""Block scopes as PTX defines them: labels and registers of nested ``{ }`` blocks,
resolved by the lifter (:mod:`ptxopt.ir.scopes`) and, independently, by the
interpreter's program builder; the printed PTX keeps every name's identity and
ptxas accepts it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ptxopt.analysis.loops import LoopForest
from ptxopt.cli import main as cli_main
from ptxopt.driver import optimize
from ptxopt.ir.lift import lift_module
from ptxopt.ptx.ast import PtxError
from ptxopt.ptx.parser import parse
from ptxopt.report.analyze_cli import analyze_text
from ptxopt.sim import SimError, launch
from tests.helpers import PTXAS, ptxas_check

HDR = ".version 8.0\n.target sm_80\n.address_size 64\n"


def kern(body: str) -> str:
    return (
        HDR + ".visible .entry k(.param .u64 pout, .param .u32 n)\n{\n"
        "\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<8>;\n"
        "\tld.param.u64 %rd1, [pout];\n\tld.param.u32 %r2, [n];\n"
        "\tmov.u32 %r1, %tid.x;\n"
        f"{body}\n"
        "\tmul.wide.u32 %rd2, %r1, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n"
        "\tst.global.u32 [%rd3], %r9;\n\tret;\n}\n"
    )


# Two sibling blocks, each with its own predicate, counter and LAB_WAIT spin loop
# (the shape of CUTLASS/CuTe's mbarrier waits): the first loop's trip count is the
# uniform parameter n, the second's depends on the thread index.
SIBLINGS = kern("""
\tmov.u32 %r9, 0;
\t{
\t.reg .pred P1;
\t.reg .b32 %c;
\tmov.u32 %c, 0;
LAB_WAIT:
\tadd.u32 %c, %c, 1;
\tadd.u32 %r9, %r9, 1;
\tsetp.lt.u32 P1, %c, %r2;
\t@P1 bra LAB_WAIT;
\t}
\t{
\t.reg .pred P1;
\t.reg .b32 %c;
\tmov.u32 %c, %r1;
LAB_WAIT:
\tadd.u32 %c, %c, 1;
\tmul.lo.u32 %r9, %r9, 3;
\tsetp.lt.u32 P1, %c, 40;
\t@P1 bra LAB_WAIT;
\t}""")


def siblings_expected(threads: int, n: int) -> np.ndarray:
    tid = np.arange(threads, dtype=np.uint64)
    trips = np.maximum(1, 40 - tid.astype(np.int64)).astype(np.uint64)
    out = [(max(1, n) * pow(3, int(t), 1 << 32)) % (1 << 32) for t in trips]
    return np.array(out, dtype=np.uint32)


# An inner %r9 shadows the outer one (whose value survives the block); a use before
# the inner declaration still means the outer register; an inner label L shadows
# the outer L, and the inner branch goes to the inner one.
SHADOW = kern("""
\tmov.u32 %r9, %r1;
\tbra.uni L;
\tmov.u32 %r9, 100;
L:
\tadd.u32 %r9, %r9, 1;
\t{
\tadd.u32 %r9, %r9, 2;
\t.reg .b32 %r9;
\tmov.u32 %r9, 1000;
\tbra.uni L;
\tmov.u32 %r9, 2000;
L:
\tadd.u32 %r9, %r9, 7;
\tadd.u32 %r5, %r9, 0;
\t}
\tadd.u32 %r9, %r9, %r5;""")


# A loop entirely inside a block, and a block (with forward branches to its own
# labels, one on the uniform n, one on the thread index) inside a loop; the outer
# loop's trip count depends on the thread.
LOOPS = kern("""
\tmov.u32 %r9, 0;
\t{
\t.reg .b32 %i;
\t.reg .pred %q;
\tmov.u32 %i, 0;
INNER_LOOP:
\tadd.u32 %r9, %r9, %i;
\tadd.u32 %i, %i, 1;
\tsetp.lt.u32 %q, %i, %r2;
\t@%q bra INNER_LOOP;
\t}
\tmov.u32 %r3, 0;
OUTER_LOOP:
\t{
\t.reg .b32 %t;
\t.reg .pred %q;
\tand.b32 %t, %r2, 1;
\tsetp.eq.u32 %q, %t, 0;
\t@%q bra SKIP;
\tadd.u32 %r9, %r9, %r3;
SKIP:
\tand.b32 %t, %r1, 1;
\tsetp.eq.u32 %q, %t, 0;
\t@%q bra SKIP2;
\tadd.u32 %r9, %r9, 1;
SKIP2:
\t}
\tadd.u32 %r3, %r3, 1;
\tsetp.le.u32 %p1, %r3, %r1;
\t@%p1 bra OUTER_LOOP;""")


def loops_expected(threads: int, n: int) -> np.ndarray:
    out = []
    for t in range(threads):
        v = sum(range(max(n, 1)))
        for i in range(t + 1):
            v += (i if n & 1 else 0) + (t & 1)
        out.append(v)
    return np.array(out, dtype=np.uint32)


def run(text: str, threads: int = 48, n: int = 5) -> np.ndarray:
    out = np.zeros(threads, dtype=np.uint32)
    launch(text, "k", 1, threads, [out, np.int32(n)])  # type: ignore[list-item]
    return out


def round_trip(text: str) -> str:
    return optimize(text, "t.ptx", verify_each=True).text


def branch_verdicts(text: str) -> dict[int, bool]:
    """Conditional branch line -> uniform, from ``ptxopt analyze``."""
    _, md, rep = analyze_text(text, "t.ptx")
    assert rep["stats"]["irreducible"] == []
    return {b["line"]: b["uniform"] for b in rep["functions"][0]["branches"]}


def line_of(text: str, needle: str, nth: int = 0) -> int:
    lines = [i + 1 for i, ln in enumerate(text.splitlines()) if needle in ln]
    return lines[nth]


# ---------------------------------------------------------------------------
# resolution in the IR


def test_sibling_blocks_get_distinct_labels_and_registers() -> None:
    fn = lift_module(parse(SIBLINGS, "t.ptx")).funcs[0]
    labels = [lab for b in fn.blocks for lab in b.labels]
    assert labels == ["LAB_WAIT", "LAB_WAIT_1"]
    # each spin loop branches back to its own head: two single-block natural loops
    forest = LoopForest.build(fn.cfg_succs())
    assert forest.is_reducible
    heads = sorted(fn.blocks[lp.header].labels[0] for lp in forest.loops)
    assert heads == ["LAB_WAIT", "LAB_WAIT_1"]
    for lp in forest.loops:
        assert lp.latches == [lp.header]
    assert {"P1", "P1_1", "%c", "%c_1"} <= set(fn.reg_types)
    assert fn.origins["P1_1"].spelling == "P1" and fn.origins["%c_1"].spelling == "%c"
    assert fn.origins["LAB_WAIT_1"].kind == "label"
    assert fn.origins["P1"].block != fn.origins["P1_1"].block


def test_outer_register_keeps_its_values_across_a_shadowing_block() -> None:
    fn = lift_module(parse(SHADOW, "t.ptx")).funcs[0]
    adds = [i for i in fn.instructions() if i.opcode == "add" and i.ast.mods == (".u32",)]
    # before the inner declaration %r9 is the outer register, after it the inner one
    assert [a.defs[0].var for a in adds] == ["%r9", "%r9", "%r9_1", "%r5", "%r9"]
    assert fn.origins["L_1"].spelling == "L"
    bra = [i for i in fn.instructions() if i.opcode == "bra"]
    assert [b.ast.operands[-1].name for b in bra] == ["L", "L_1"]  # type: ignore[union-attr]


def test_function_level_declaration_after_a_block_is_a_different_register() -> None:
    text = kern(
        "\t{\n\t.reg .b32 %q;\n\tmov.u32 %q, 1;\n\tmov.u32 %r9, %q;\n\t}\n"
        "\t.reg .b32 %q;\n\tmov.u32 %q, 3;\n\tadd.u32 %r9, %r9, %q;"
    )
    fn = lift_module(parse(text, "t.ptx")).funcs[0]
    movs = [i.defs[0].var for i in fn.instructions() if i.opcode == "mov" and i.defs]
    assert "%q_1" in movs and "%q" in movs  # the function-level name keeps its spelling
    assert run(text, 4).tolist() == [4] * 4
    assert run(round_trip(text), 4).tolist() == [4] * 4


def test_local_variables_of_sibling_blocks_are_distinct() -> None:
    body = "\tmov.u32 %r9, 0;\n"
    for k in (5, 9):
        body += (
            "\t{\n\t.local .align 4 .b8 buf[8];\n\t.reg .b64 %a;\n\tmov.u64 %a, buf;\n"
            f"\tst.local.u32 [buf+4], {k};\n\tld.local.u32 %r4, [%a+4];\n"
            "\tadd.u32 %r9, %r9, %r4;\n\t}\n"
        )
    text = kern(body)
    printed = round_trip(text)
    assert "buf_1" in printed
    assert run(text, 8).tolist() == [14] * 8
    assert run(printed, 8).tolist() == [14] * 8


# ---------------------------------------------------------------------------
# execution: the interpreter resolves names like ptxas, before and after a round trip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SIBLINGS, lambda t: siblings_expected(t, 5)),
        (SHADOW, lambda t: np.arange(t, dtype=np.uint32) + 3 + 1007),
        (LOOPS, lambda t: loops_expected(t, 5)),
    ],
    ids=["siblings", "shadow", "loops"],
)
def test_interpreter_runs_scoped_kernels_before_and_after_round_trip(
    text: str, expected: object, tmp_path: Path
) -> None:
    want = expected(48)  # type: ignore[operator]
    assert run(text).tolist() == want.tolist()
    printed = round_trip(text)
    assert run(printed).tolist() == want.tolist()
    assert round_trip(printed) == printed  # unique names are a fixed point
    ptxas_check(text, "sm_80", tmp_path, "in.ptx")
    ptxas_check(printed, "sm_80", tmp_path)


def test_shadowed_label_value_matches_ptxas_constant_folding(tmp_path: Path) -> None:
    """ptxas folds a kernel with no inputs to a constant store; the interpreter
    must agree on which ``L`` the inner branch reaches and which %r1 it adds to."""
    text = (
        HDR + ".visible .entry k(.param .u64 p)\n{\n\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<2>;\n"
        "\tld.param.u64 %rd1, [p];\n\tmov.u32 %r1, 40;\n\tbra.uni L;\n\tmov.u32 %r1, 100;\n"
        "L:\n\tadd.u32 %r1, %r1, 1;\n\t{\n\tadd.u32 %r1, %r1, 2;\n\t.reg .b32 %r1;\n"
        "\tmov.u32 %r1, 5;\n\tbra.uni L;\nL:\n\tadd.u32 %r2, %r1, 1;\n\t}\n"
        "\tadd.u32 %r1, %r1, %r2;\n\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n"
    )
    out = np.zeros(1, dtype=np.uint32)
    launch(text, "k", 1, 1, [out])
    assert out[0] == 43 + 6
    out[0] = 0
    launch(round_trip(text), "k", 1, 1, [out])
    assert out[0] == 49
    if PTXAS is None:
        pytest.skip("ptxas is not on PATH")
    from ptxopt.oracle import assemble

    res = assemble(text, "sm_80")
    assert res.ok, res.log
    if not res.sass:
        pytest.skip("nvdisasm is not available")
    # the folded constant 49 (0x31) is what ptxas stores
    texts = [ins.text for f in res.sass.values() for ins in f.insts]
    assert any("0x31" in t for t in texts), texts


# ---------------------------------------------------------------------------
# divergence inside blocks


def test_divergence_verdicts_inside_blocks() -> None:
    verdicts = branch_verdicts(SIBLINGS)
    first = line_of(SIBLINGS, "@P1 bra LAB_WAIT", 0)
    second = line_of(SIBLINGS, "@P1 bra LAB_WAIT", 1)
    assert verdicts == {first: True, second: False}
    loops = branch_verdicts(LOOPS)
    assert loops[line_of(LOOPS, "@%q bra INNER_LOOP")] is True
    assert loops[line_of(LOOPS, "@%q bra SKIP;")] is True
    assert loops[line_of(LOOPS, "@%q bra SKIP2")] is False
    assert loops[line_of(LOOPS, "@%p1 bra OUTER_LOOP")] is False


def test_divergence_verdicts_survive_the_round_trip() -> None:
    for text in (SIBLINGS, LOOPS):
        before = sorted(branch_verdicts(text).values())
        after = sorted(branch_verdicts(round_trip(text)).values())
        assert before == after


# ---------------------------------------------------------------------------
# what ptxas rejects is rejected, with a location


BAD = {
    "into_block": (
        "\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra INNER;\n"
        "\t{\n\tadd.u32 %r9, %r1, 1;\nINNER:\n\tadd.u32 %r9, %r1, 2;\n\t}",
        "branch target 'INNER' is not a label visible here",
    ),
    "sibling": (
        "\t{\n\tbra.uni S2;\n\t}\n\t{\nS2:\n\tmov.u32 %r9, 1;\n\t}",
        "branch target 'S2' is not a label visible here",
    ),
    "duplicate": (
        "L:\n\tmov.u32 %r9, 1;\nL:\n\tmov.u32 %r9, 2;",
        "duplicate definition of label 'L' in one block",
    ),
    "table_into_block": (
        "T: .branchtargets A, E;\n\tbrx.idx %r1, T;\n\t{\nA:\n\tmov.u32 %r9, 1;\n\t}\nE:",
        ".branchtargets entry 'A' is not a label visible here",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_invisible_or_duplicate_labels_are_rejected(case: str, tmp_path: Path) -> None:
    body, message = BAD[case]
    text = kern(body)
    with pytest.raises(PtxError) as err:
        lift_module(parse(text, "bad.ptx"))
    assert message in str(err.value)
    assert str(err.value).startswith("bad.ptx:")
    with pytest.raises(SimError):
        launch(text, "k", 1, 32, [np.zeros(32, dtype=np.uint32), np.int32(1)])  # type: ignore[list-item]
    src = tmp_path / "bad.ptx"
    src.write_text(text)
    assert cli_main(["opt", str(src), "-o", str(tmp_path / "out.ptx")]) == 1
    assert not (tmp_path / "out.ptx").exists()
    if PTXAS is None:
        pytest.skip("ptxas is not on PATH")
    from ptxopt.oracle import assemble

    assert not assemble(text, "sm_80").ok  # ptxas rejects it too


def test_nested_block_hint_names_the_hidden_label() -> None:
    body, _ = BAD["into_block"]
    with pytest.raises(PtxError, match=r"declared inside a nested block at line \d+"):
        lift_module(parse(kern(body), "bad.ptx"))
