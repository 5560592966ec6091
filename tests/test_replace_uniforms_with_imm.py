"""replace-uniforms-with-imm (spec 02, phase 11): specialized parameters and initialized
``.const`` data become immediates; the kernel signature is kept and the specialized
kernel computes what the original computes when launched with those values."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import ptxas_check

import ptxopt
from ptxopt.cli import main
from ptxopt.driver import optimize
from ptxopt.ptx.ast import PtxError
from ptxopt.sim import launch

KERNEL = """.version 8.0
.target sm_80
.address_size 64
.const .align 4 .b8 tab[12] = {1, 0, 0, 0, 0, 0, 128, 63, 254, 255, 255, 255};
.visible .entry k(.param .u64 k_out, .param .u32 k_n, .param .f32 k_s, .param .s16 k_h)
{
  .reg .b32 %r<12>;
  .reg .b16 %rs<3>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<5>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [k_out];
  ld.param.u32 %r1, [k_n];
  ld.param.f32 %f1, [k_s];
  ld.param.s16 %rs1, [k_h];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  ld.const.u32 %r3, [tab];
  ld.const.f32 %f2, [tab+4];
  ld.const.s8 %rs2, [tab+8];
  cvt.s32.s16 %r6, %rs1;
  cvt.s32.s16 %r7, %rs2;
  add.s32 %r4, %r2, %r3;
  mul.lo.s32 %r5, %r4, %r1;
  add.s32 %r5, %r5, %r6;
  add.s32 %r5, %r5, %r7;
  cvt.rn.f32.s32 %f3, %r5;
  mul.f32 %f3, %f3, %f1;
  add.f32 %f3, %f3, %f2;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.f32 [%rd4], %f3;
DONE:
  ret;
}
"""

PASS = "replace-uniforms-with-imm"


def _run(text: str, n: int, s: float, h: int) -> np.ndarray:
    out = np.zeros(64, dtype=np.float32)
    launch(text, "k", 1, 64, [out, n, s, h])
    return out


def test_specialized_kernel_matches_original_launched_with_the_values(tmp_path: Path) -> None:
    res = optimize(KERNEL, "k.ptx", [PASS], knobs={"SpecializeParams": "k_n=37;k_s=-0.75;k_h=-3"})
    text = res.text
    # every scalar parameter load folded except the pointer's; the signature is kept
    assert "ld.param.u32" not in text and "ld.param.f32" not in text and "ld.param.s16" not in text
    assert "ld.param.u64" in text
    assert re.search(r"\.param \.u32 k_n", text) and re.search(r"\.param \.s16 k_h", text)
    assert "ld.const" not in text
    assert "0fBF400000" in text  # -0.75 as an f32 immediate
    assert re.search(r"setp\.ge\.u32\s+%p1, %r2, 37;", text)
    stats = res.report.stats[PASS]
    assert stats["parameter loads folded"] == 3 and stats["constant loads folded"] == 3
    np.testing.assert_array_equal(
        _run(text, 37, -0.75, -3).view(np.uint32), _run(KERNEL, 37, -0.75, -3).view(np.uint32)
    )
    ptxas_check(text, "sm_80", tmp_path)


def test_without_params_only_const_tables_fold() -> None:
    text = optimize(KERNEL, "k.ptx", [PASS]).text
    assert "ld.const" not in text and text.count("ld.param") == 4
    for n in (0, 5, 64):
        a, b = _run(text, n, 1.5, 7), _run(KERNEL, n, 1.5, 7)
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def test_fold_const_initializers_knob_off() -> None:
    res = optimize(KERNEL, "k.ptx", [PASS], knobs={"FoldConstInitializers": False})
    assert res.report.changed.get(PASS, 0) == 0
    assert res.text.count("ld.const") == 3


def test_extern_and_uninitialized_const_are_not_folded() -> None:
    src = KERNEL.replace(
        ".const .align 4 .b8 tab[12] = {", ".extern .const .align 4 .b8 tab[12];\n//{"
    )
    text = optimize(src, "k.ptx", [PASS]).text
    assert text.count("ld.const") == 3


def test_a_loaded_value_used_where_no_immediate_fits_keeps_a_mov() -> None:
    # cvt takes no immediate source: the load becomes a mov that cvt reads
    text = optimize(KERNEL, "k.ptx", [PASS], knobs={"SpecializeParams": "k_h=5"}).text
    assert re.search(r"mov\.b16\s+%rs1, 5;", text)


def test_specialize_api_by_name_and_position() -> None:
    a = ptxopt.specialize(KERNEL, "k", {"k_n": 9, 2: 2.5})
    b = optimize(KERNEL, "k.ptx", [PASS], knobs={"SpecializeParams": "k_n=9;k_s=2.5"}).text
    assert a == b
    with pytest.raises(ValueError, match="no parameter"):
        ptxopt.specialize(KERNEL, "k", {"n": 1})
    with pytest.raises(ValueError, match="no parameter #9"):
        ptxopt.specialize(KERNEL, "k", {9: 1})


def test_kernel_qualified_name_only_touches_that_kernel() -> None:
    two = KERNEL + KERNEL[KERNEL.index(".visible") :].replace(".entry k(", ".entry k2(")
    text = optimize(two, "k.ptx", [PASS], knobs={"SpecializeParams": "k2:k_n=3"}).text
    body1, body2 = text.split(".entry k2(")
    assert "ld.param.u32" in body1 and "ld.param.u32" not in body2


def test_cli_param_repeatable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "k.ptx"
    src.write_text(KERNEL)
    out = tmp_path / "o.ptx"
    assert (
        main(
            [
                "opt",
                "-p",
                "none",
                "--param",
                "k_n=4",
                "--param",
                "k_s=0.5",
                str(src),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    text = out.read_text()
    assert "ld.param.u32" not in text and "ld.param.f32" not in text
    assert main(["opt", "--param", "nope=1", str(src)]) == 1
    assert "no kernel has a parameter" in capsys.readouterr().err
    assert main(["opt", "--param", "k_n", str(src)]) == 2
    with pytest.raises(PtxError):
        optimize(KERNEL, "k.ptx", [PASS], knobs={"SpecializeParams": "k_s=abc"})


def test_an_instruction_keeps_one_register_source() -> None:
    """Regression (fuzz seed 1005): folding every source of ``fma.rp.f64`` left an
    all-immediate instruction; one register source stays (general-optimize folds)."""
    src = """.version 8.0
.target sm_80
.address_size 64
.visible .entry f(.param .u64 f_o, .param .f64 f_x)
{
  .reg .f64 %fd<4>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [f_o];
  ld.param.f64 %fd1, [f_x];
  fma.rp.f64 %fd2, %fd1, %fd1, %fd1;
  cvta.to.global.u64 %rd1, %rd1;
  st.global.f64 [%rd1], %fd2;
  ret;
}
"""
    text = ptxopt.specialize(src, "f", {"f_x": 1.5})
    assert re.search(r"fma\.rp\.f64\s+%fd2, 0d3FF8000000000000, 0d3FF8000000000000, %fd1;", text)
    a, b = np.zeros(1), np.zeros(1)
    launch(src, "f", 1, 1, [a, 1.5])
    launch(text, "f", 1, 1, [b, 1.5])
    assert a.view(np.uint64)[0] == b.view(np.uint64)[0]


def test_nested_const_tables_fold_with_their_row_padding() -> None:
    """{{1}, {3, 4}} in a [2][2] table is 1 0 3 4 (each row padded, as ptxas lays it
    out); reading the numbers one after the other would fold [t+4] to 3."""
    src = """.version 8.0
.target sm_80
.address_size 64
.const .align 4 .u32 t[2][2] = {{1}, {3, 4}};
.const .align 4 .u32 u[] = {5, 6};
.visible .entry k(.param .u64 k_out)
{
  .reg .b32 %r<5>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [k_out];
  cvta.to.global.u64 %rd2, %rd1;
  ld.const.u32 %r1, [t+4];
  ld.const.u32 %r2, [t+8];
  ld.const.u32 %r3, [u+4];
  st.global.u32 [%rd2], %r1;
  st.global.u32 [%rd2+4], %r2;
  st.global.u32 [%rd2+8], %r3;
  ret;
}
"""
    res = optimize(src, "k.ptx", [PASS])
    assert "ld.const" not in res.text
    assert res.report.stats[PASS]["constant loads folded"] == 3
    before, after = np.zeros(3, np.uint32), np.zeros(3, np.uint32)
    launch(src, "k", 1, 1, [before])
    launch(res.text, "k", 1, 1, [after])
    assert before.tolist() == after.tolist() == [0, 3, 6]
