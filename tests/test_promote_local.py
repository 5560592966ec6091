"""promote-local (spec 02, ConvertMemoryToRegisterOrUniform): non-escaping ``.local``
variables become registers, through generic pointers made by ``cvta.local`` as
nvcc -O0 writes them, with narrow/vector/guarded accesses and small dynamically
indexed arrays (selp chains under PromoteLocalDynamicBudget).  Every case runs before
and after in the interpreter, and ptxas reports the frame gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import PTXAS, ptxas_check

from ptxopt.driver import optimize
from ptxopt.oracle import assemble
from ptxopt.sim import differential

PASS = "promote-local"

HEAD = """.version 8.0
.target sm_80
.address_size 64
"""

# nvcc -O0 shape: a depot, %SP = cvta.local, slots reached by add %SP, const
CONST = (
    HEAD
    + """
.visible .entry k(.param .u64 k_out, .param .u64 k_in)
{
  .local .align 8 .b8 __local_depot0[40];
  .reg .b64 %SP;
  .reg .b64 %SPL;
  .reg .pred %p<3>;
  .reg .b16 %rs<4>;
  .reg .b32 %r<20>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<20>;
  mov.u64 %SPL, __local_depot0;
  cvta.local.u64 %SP, %SPL;
  ld.param.u64 %rd1, [k_out];
  ld.param.u64 %rd2, [k_in];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r2, [%rd4];
  add.u64 %rd5, %SP, 0;
  st.u32 [%rd5], %r2;
  add.u64 %rd6, %SP, 4;
  cvt.rn.f32.u32 %f1, %r2;
  st.f32 [%rd6], %f1;
  add.u64 %rd7, %SP, 8;
  st.v2.u32 [%rd7], {%r1, %r2};
  st.local.u8 [%SPL+16], %r2;
  st.local.s16 [%SPL+18], %r2;
  cvt.u64.u32 %rd8, %r2;
  st.local.u64 [%SPL+24], %rd8;
  setp.lt.u32 %p1, %r1, 5;
  @%p1 st.u32 [%rd5], %r1;
  mov.u32 %r3, 7;
  @%p1 bra SKIP;
  add.u64 %rd9, %SP, 32;
  st.u32 [%rd9], %r3;
  mov.u32 %r4, 9;
  st.local.u32 [%SPL+36], %r4;
SKIP:
  ld.u32 %r5, [%rd5];
  ld.f32 %f2, [%rd6];
  ld.v2.u32 {%r6, %r7}, [%rd7];
  ld.local.u8 %r8, [%SPL+16];
  ld.local.s8 %r9, [%SPL+16];
  ld.local.s16 %r10, [%SPL+18];
  ld.local.u64 %rd10, [%SPL+24];
  @%p1 ld.local.u32 %r3, [%SPL+32];
  ld.local.u32 %r11, [%SPL+36];
  cvt.rzi.u32.f32 %r12, %f2;
  add.s32 %r13, %r5, %r12;
  add.s32 %r13, %r13, %r6;
  xor.b32 %r13, %r13, %r7;
  add.s32 %r13, %r13, %r8;
  xor.b32 %r13, %r13, %r9;
  add.s32 %r13, %r13, %r10;
  cvt.u32.u64 %r14, %rd10;
  add.s32 %r13, %r13, %r14;
  add.s32 %r13, %r13, %r3;
  add.s32 %r13, %r13, %r11;
  add.s64 %rd11, %rd1, %rd3;
  st.global.u32 [%rd11], %r13;
  ret;
}
"""
)

# a dynamically indexed array: insertion sort of 4 values per thread
DYN = (
    HEAD
    + """
.visible .entry k(.param .u64 k_out, .param .u64 k_in)
{
  .local .align 4 .b8 arr[16];
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<20>;
  ld.param.u64 %rd1, [k_out];
  ld.param.u64 %rd2, [k_in];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u64 %rd3, arr;
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, 0;
FILL:
  add.s32 %r4, %r2, %r3;
  mul.wide.u32 %rd4, %r4, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.global.u32 %r5, [%rd5];
  mul.wide.u32 %rd6, %r3, 4;
  add.s64 %rd7, %rd3, %rd6;
  st.local.u32 [%rd7], %r5;
  add.s32 %r3, %r3, 1;
  setp.lt.u32 %p1, %r3, 4;
  @%p1 bra FILL;
  ld.local.u32 %r6, [arr];
  mov.u32 %r7, 1;
OUTER:
  mul.wide.u32 %rd8, %r7, 4;
  add.s64 %rd9, %rd3, %rd8;
  ld.local.u32 %r8, [%rd9];
  max.u32 %r6, %r6, %r8;
  add.s32 %r7, %r7, 1;
  setp.lt.u32 %p2, %r7, 4;
  @%p2 bra OUTER;
  ld.local.u32 %r9, [arr+8];
  add.s32 %r6, %r6, %r9;
  mul.wide.u32 %rd10, %r1, 4;
  add.s64 %rd11, %rd1, %rd10;
  st.global.u32 [%rd11], %r6;
  ret;
}
"""
)

ESCAPE = (
    HEAD
    + """
.visible .entry k(.param .u64 k_out, .param .u64 k_in)
{
  .local .align 8 .b8 __local_depot0[8];
  .reg .b64 %SP;
  .reg .b64 %SPL;
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  mov.u64 %SPL, __local_depot0;
  cvta.local.u64 %SP, %SPL;
  ld.param.u64 %rd1, [k_out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  st.u32 [%SP], %r1;
  mul.wide.u32 %rd2, %r1, 8;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u64 [%rd3], %SP;
  ld.u32 %r2, [%SP];
  ret;
}
"""
)


def _args(n_in: int) -> Any:
    def make(seed: int, grid: Any, block: Any) -> list[Any]:
        g = grid if isinstance(grid, int) else grid[0]
        b = block if isinstance(block, int) else block[0]
        rng = np.random.default_rng(seed)
        inp = rng.integers(0, 2**32, size=g * b * n_in, dtype=np.uint64).astype(np.uint32)
        return [np.zeros(g * b * 2, dtype=np.uint32), inp]

    return make


def _frame(text: str, tmp_path: Path) -> int:
    if PTXAS is None:
        pytest.skip("ptxas is not on PATH")
    res = assemble(text, "sm_80")
    assert res.ok, res.log
    return res.functions["k"].stack_frame


def test_constant_offsets_through_generic_pointers(tmp_path: Path) -> None:
    res = optimize(CONST, "c.ptx", [PASS], verify_each=True)
    text = res.text
    assert "__local_depot0" not in text and "ld.local" not in text and "st.u32" not in text
    assert res.report.stats[PASS]["variables promoted"] == 1
    diff = differential(CONST, text, "k", [(1, 32), (2, 7)], None, _args(1), trials=2)
    assert diff.ok, diff.message
    assert _frame(CONST, tmp_path) == 40 and _frame(text, tmp_path) == 0


def test_dynamic_indexing_by_selects(tmp_path: Path) -> None:
    res = optimize(DYN, "d.ptx", [PASS], verify_each=True)
    assert ".local" not in res.text and "selp" in res.text
    diff = differential(DYN, res.text, "k", [(1, 32), (3, 5)], None, _args(4), trials=2)
    assert diff.ok, diff.message
    # ptxas -O3 unrolls these loops and drops the array itself; at -O0 it keeps it
    assert _frame(res.text, tmp_path) == 0


def test_dynamic_budget_knob() -> None:
    res = optimize(DYN, "d.ptx", [PASS], knobs={"PromoteLocalDynamicBudget": 3})
    assert res.report.changed.get(PASS, 0) == 0
    assert res.report.stats[PASS]["kept: dynamic index over budget"] == 1
    assert res.text == optimize(DYN, "d.ptx", []).text


def test_escaping_frame_is_kept(tmp_path: Path) -> None:
    res = optimize(ESCAPE, "e.ptx", [PASS])
    assert res.report.changed.get(PASS, 0) == 0
    assert res.report.stats[PASS]["kept: pointer stored to memory"] == 1
    ptxas_check(res.text, "sm_80", tmp_path)


def test_explain_names_each_variable_and_why() -> None:
    kept = optimize(ESCAPE, "e.ptx", [PASS]).report.notes[PASS]
    assert kept == ["k: .local __local_depot0 (8 bytes): kept: pointer stored to memory"]
    over = optimize(DYN, "d.ptx", [PASS], knobs={"PromoteLocalDynamicBudget": 3})
    assert over.report.notes[PASS][0].endswith("kept: dynamic index over budget")
    done = optimize(CONST, "c.ptx", [PASS]).report.notes[PASS]
    assert len(done) == 1 and "(40 bytes): promoted to" in done[0]
