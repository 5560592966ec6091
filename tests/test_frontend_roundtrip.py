"""Round trips of the constructs the front end used to lose: each regression file
under tests/ptx/regressions is parsed, validated, lifted and printed; ptxas must
accept the output, and the interpreter must compute the same memory before and
after.  Debug information: the line tables of the cubins of an nvcc -lineinfo file
(inlined_at chains) and of its round trip are compared with nvdisasm."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ptxopt.driver import optimize
from ptxopt.oracle import assemble, find_nvdisasm, find_ptxas, line_table
from ptxopt.ptx.ast import Imm, Instr, RegImm, Vec
from ptxopt.ptx.parser import parse
from ptxopt.sim import launch
from tests.helpers import ptxas_check

TESTS = Path(__file__).parent
REGRESSIONS = sorted((TESTS / "ptx" / "regressions").glob("*.ptx"))
DEBUG = sorted((TESTS / "ptx" / "debug").glob("*.lineinfo.*.ptx"))
# Triton output carries .loc lines too (no inlined_at in these kernels)
LINE_TABLES = DEBUG + [
    TESTS / "corpus" / "triton" / "vector_add.sm90.ptx",
    TESTS / "corpus" / "triton" / "row_softmax.sm90.ptx",
]


def read(path: Path) -> str:
    return path.read_bytes().decode("latin-1")


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_round_trips(path: Path, tmp_path: Path) -> None:
    text = read(path)
    out = optimize(text, str(path), []).text
    assert optimize(out, "again", []).text == out  # printing is a fixed point
    ptxas_check(out, parse(out).arch or "sm_80", tmp_path)
    before = np.arange(4, dtype=np.uint32) + 10
    after = before.copy()
    launch(text, "k", grid=1, block=1, args=[before])
    launch(out, "k", grid=1, block=1, args=[after])
    assert before.tobytes() == after.tobytes()


def test_register_plus_immediate_wraps_at_the_operand_width() -> None:
    text = read(TESTS / "ptx" / "regressions" / "register_plus_immediate.ptx")
    buf = np.array([20, 0, 7, 0], dtype=np.uint32)  # word 0: %r1, words 2-3: a u64
    launch(text, "k", grid=1, block=1, args=[buf])
    # 20 + 0xfffffff1 wraps to 5 (ptxas emits IADD3 with 0xfffffff1); 7 + 1; 20 + 32
    assert buf.tolist() == [5, 52, 8, 0]


def test_vector_registers_and_reg_parameters_run() -> None:
    text = read(TESTS / "ptx" / "regressions" / "reg_params_vector_registers.ptx")
    buf = np.array([10, 20, 0, 0], dtype=np.uint32)
    launch(text, "k", grid=1, block=1, args=[buf])
    # f returns (5 + v.x, v.y + WARP_SZ); then v.x + 100
    assert buf.tolist()[:3] == [15, 52, 110]


def test_initializer_comments_are_not_printed() -> None:
    text = read(TESTS / "ptx" / "regressions" / "initializer_comments.ptx")
    out = optimize(text, "t", []).text
    decl = next(line for line in out.splitlines() if "table[4]" in line)
    assert decl.endswith("= {1, 2, 3, 32};")


def test_operand_forms_in_the_ast() -> None:
    mod = parse(
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n"
        ".reg .b32 %r<3>;\n.reg .v4 .b32 v;\n"
        "add.u32 %r1, %r2+7, WARP_SZ;\nmov.b32 %r1, v.w;\nmov.b32 %r2, (1<<4)|1;\n"
        "st.global.v4.b32 [0], v;\nret;\n}\n"
    )
    body = mod.functions[0].body
    assert body is not None
    add, mov, expr, st = [s for s in body if isinstance(s, Instr)][:4]
    assert add.operands[1] == RegImm(add.operands[1].reg, 7)  # type: ignore[union-attr]
    assert add.operands[2] == Imm(32, "WARP_SZ")
    assert str(mov.operands[1]) == "v$w"
    assert expr.operands[1] == Imm(17, "17")
    assert isinstance(st.operands[1], Vec) and len(st.operands[1].elems) == 4


@pytest.mark.parametrize("path", LINE_TABLES, ids=[p.stem for p in LINE_TABLES])
def test_lineinfo_round_trip_keeps_the_line_table(path: Path) -> None:
    """nvcc -lineinfo output (inlined_at chains through function_name labels): the
    round trip assembles, and every SASS instruction maps to the same source
    location and inlining chain as before."""
    if find_ptxas() is None or find_nvdisasm() is None:
        pytest.skip("ptxas and nvdisasm are needed (CUDA 13.0 toolkit, nvidia-cuda-nvdisasm)")
    text = read(path)
    out = optimize(text, str(path), []).text
    arch = parse(text).arch or "sm_90"
    a = assemble(text, arch, lineinfo=True, source_lines=True)
    b = assemble(out, arch, lineinfo=True, source_lines=True)
    assert a.ok and b.ok, b.error
    ta, tb = line_table(a.sass_text), line_table(b.sass_text)
    assert ta and ta == tb
    if path in DEBUG:
        assert any("inlined at" in where for rows in ta.values() for _op, where in rows)


def test_inlined_at_origin_is_emitted_when_its_instruction_is_gone() -> None:
    """A pass deleting the only instruction of a location named by an inlined_at
    must not leave a dangling reference: the lowering emits the location bare."""
    text = read(DEBUG[0])
    res = optimize(text, "t", [])
    for func in res.module.funcs:
        for b in func.blocks:
            for inst in b.insts:
                if inst.loc is not None:
                    inst.loc = type(inst.loc)(
                        inst.loc.file, inst.loc.line, inst.loc.col, inst.loc.extra
                    )  # forget the .loc lines that preceded it
    from ptxopt.ir.lower import print_ir_module
    from ptxopt.ptx.validate import validate

    validate(parse(print_ir_module(res.module), "relowered"))
