"""The ptxas/nvdisasm oracle module: log parsing, SASS parsing, targets, assembling."""

from __future__ import annotations

import pytest

from ptxopt.oracle import (
    assemble,
    find_nvdisasm,
    find_ptxas,
    parse_ptxas_log,
    parse_sass,
    targets_for,
)

LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k1' for 'sm_90'
ptxas info    : Function properties for k1
    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
ptxas info    : Function properties for helper
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 30 registers
"""

SASS = """
        .text.k1:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2UR UR4, SR_CTAID.X ;
        //## File ".nv_debug_ptx_txt", line 12
        /*0020*/               @!P0 BRA `(.L_x_1) ;
        /*0030*/                   IADD3 R2, R1, UR4, RZ ;
.L_x_1:
        /*0040*/                   EXIT ;
.L_x_2:
        /*0050*/                   BRA `(.L_x_2);
        /*0060*/                   NOP;
"""


def test_parse_ptxas_log() -> None:
    st = parse_ptxas_log(LOG)
    assert (st["k1"].registers, st["k1"].stack_frame) == (12, 16)
    assert (st["k1"].spill_stores, st["k1"].spill_loads) == (4, 8)
    assert st["helper"].registers == 30


def test_parse_sass_lines_guards_and_counts() -> None:
    f = parse_sass(SASS)["k1"]
    assert [i.op for i in f.insts] == ["LDC", "S2UR", "BRA", "IADD3", "EXIT", "BRA", "NOP"]
    assert f.insts[2].guard == "!P0" and f.insts[2].line == 12 and f.insts[0].line == 0
    assert f.labels[".L_x_1"] == 0x40
    assert f.registers("R") == {1, 2} and f.registers("UR") == {4} and f.registers("P") == {0}
    # NOP excluded; the label-form self loop is kept (only the hex self-loop form is padding)
    assert f.instructions == 6


def test_targets_for() -> None:
    assert targets_for("sm_75") == ["sm_75", "sm_80", "sm_90"]
    assert targets_for("sm_80") == ["sm_80", "sm_90"]
    assert targets_for("sm_90a") == ["sm_90a"]
    assert targets_for("sm_86") == ["sm_86", "sm_90"]


PTX = """
.version 9.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    add.s32 %r2, %r1, 7;
    st.global.u32 [%rd1], %r2;
    ret;
}
"""


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas")
def test_assemble_real_ptx() -> None:
    res = assemble(PTX, "sm_80")
    assert res.ok and res.functions["k"].registers > 0
    if find_nvdisasm() is not None:
        assert res.functions["k"].sass_instructions and res.functions["k"].sass_instructions > 3
        assert "STG" in {i.op.split(".")[0] for i in res.sass["k"].insts}
    bad = assemble(PTX.replace("add.s32", "add.bogus"), "sm_80")
    assert not bad.ok and "error" in bad.error
