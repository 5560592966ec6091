"""Round trips of the constructs the front end used to lose: each regression file
under tests/ptx/regressions is parsed, validated, lifted and printed; ptxas must
accept the output, and the interpreter must compute the same memory before and
after.  Debug information: the line tables of the cubins of an nvcc -lineinfo file
(inlined_at chains) and of its round trip are compared with nvdisasm."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from ptxopt.driver import optimize
from ptxopt.oracle import assemble, find_nvdisasm, find_ptxas, line_table
from ptxopt.ptx.ast import Imm, Instr, RegImm, Vec
from ptxopt.ptx.parser import parse
from ptxopt.sim import launch
from ptxopt.sim.errors import SimError
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


def test_registers_named_cc_are_not_the_carry_flag(tmp_path: Path) -> None:
    """``%cc`` and ``%ccx`` are ordinary registers: the carry of ``add.cc`` reaches
    ``addc`` across a write of ``%cc``, in the interpreter and through the default
    pipeline, whose output declares ``%cc`` (ptxas accepts it)."""
    text = read(TESTS / "ptx" / "regressions" / "registers_named_cc.ptx")
    out = optimize(text, "t", None).text
    assert re.search(r"^\s*\.reg \.b32 [^;]*%cc[,;]", out, re.M)
    ptxas_check(out, "sm_80", tmp_path)
    for src in (text, out):
        buf = np.array([20, 30, 7, 7], dtype=np.uint32)
        launch(src, "k", grid=1, block=1, args=[buf])
        # -1 + 20 = 19 with a carry out; 30 + 0 + carry; %cc = 0; 30 + 0
        assert buf.tolist() == [19, 31, 0, 30]


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


FUNCTION_VALUE = """.version 8.0
.target sm_80
.address_size 64
.visible .func (.reg .b32 r) f(.reg .b32 a)
{
  mov.b32 r, a;
  ret;
}
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 7;
  add.u32 %r2, %r1, f;
  setp.eq.s32 %p1, %r1, f;
  not.pred %p2, f;
  @%p2 bar.all.sync 0;
  st.global.u32 [%rd1], %r2;
  ret;
}
"""


def test_function_name_as_a_value_round_trips_and_the_interpreter_refuses_it(
    tmp_path: Path,
) -> None:
    # ptxas takes it (and reads the name as 0); ptxopt keeps it, and only the
    # interpreter, which has no meaning to give it, says no at its line
    out = optimize(FUNCTION_VALUE, "fv.ptx", []).text
    for kept in ("add.u32 \t%r2, %r1, f;", "setp.eq.s32 \t%p1, %r1, f;", "not.pred \t%p2, f;"):
        assert kept in out
    ptxas_check(out, "sm_80", tmp_path)
    with pytest.raises(SimError) as exc:
        launch(FUNCTION_VALUE, "k", grid=1, block=32, args=[np.zeros(4, np.uint32)])
    assert str(exc.value) == "<input>:16:3: error: the function 'f' as a value of 'add.u32'"


def test_bar_all_sync_is_bar_sync() -> None:
    text = FUNCTION_VALUE.replace("add.u32 %r2, %r1, f;", "add.u32 %r2, %r1, 1;")
    text = text.replace("setp.eq.s32 %p1, %r1, f;\n  not.pred %p2, f;", "setp.ne.s32 %p2, %r1, 0;")
    out = optimize(text, "bar.ptx", []).text
    assert "bar.sync \t0;" in out and ".all" not in out
    mem = [np.zeros(4, np.uint32), np.zeros(4, np.uint32)]
    launch(text, "k", grid=1, block=64, args=[mem[0]])
    launch(out, "k", grid=1, block=64, args=[mem[1]])
    assert mem[0][0] == 8 and mem[0].tobytes() == mem[1].tobytes()


def test_initializer_expressions_give_one_value_each() -> None:
    text = read(TESTS / "ptx" / "regressions" / "initializer_expressions.ptx")
    out = np.zeros(4, np.uint32)
    launch(text, "k", grid=1, block=1, args=[out])
    assert out.tolist() == [3, 0, 16, 32]
    printed = optimize(text, "i.ptx", []).text
    assert "table[6] = {3, 0, 16, -1, -3, 32};" in printed


DECLARED = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<4>;
	.reg .b32 %r07;
	.reg .b64 %rd<3>;
	.reg .b64 %rd04;
	.reg .b32 %q0, %q00, %q1;
	.reg .f32 %f0;
	.reg .pred %p<2>;
	.reg .b32 x, y9;

	ld.param.u64 %rd1, [out];
	mov.u32 %r0, %tid.x;
	add.s32 %r1, %r0, 1;
	add.s32 %r07, %r1, 2;
	add.s32 %q0, %r07, 3;
	add.s32 %q00, %q0, 4;
	add.s32 %q1, %q00, %q0;
	add.s32 x, %q1, 1;
	add.s32 y9, x, 1;
	cvt.rn.f32.s32 %f0, y9;
	setp.gt.f32 %p1, %f0, 0f00000000;
	mul.wide.s32 %rd04, %r1, 4;
	add.s64 %rd2, %rd1, %rd04;
	@%p1 st.global.f32 [%rd2], %f0;
	ret;
}
"""


def test_declarations_of_indexed_padded_and_plain_names() -> None:
    """The lowering declares what the body uses: ranges from index 0 (``%r0`` is in
    ``%r<2>``), a zero-padded name on its own outside its stem's range (``%r07``,
    ``%rd04``) and inside it taken as the range's (``%q00`` in ``%q<2>``, as ptxas
    counts it), a sparse index as a name of its own (``y9``), names without an index
    as they are; ptxas takes the result."""
    out = optimize(DECLARED, "decl.ptx", []).text
    decls = [ln.strip() for ln in out.splitlines() if ln.strip().startswith(".reg")]
    assert decls == [
        ".reg .pred %p<2>;",
        ".reg .b32 %q<2>, %r<2>, y9, %r07, x;",
        ".reg .f32 %f<1>;",
        ".reg .b64 %rd<3>, %rd04;",
    ]
    assert optimize(out, "again.ptx", []).text == out
    if find_ptxas() is not None:
        done = assemble(out, "sm_80", disassemble=False)
        assert done.ok, done.error
