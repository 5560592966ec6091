"""The shared IR editing vocabulary: new instructions, use replacement, removal."""

from __future__ import annotations

from pathlib import Path

from helpers import ptxas_check

from ptxopt.ir.core import Value
from ptxopt.ir.defuse import DefUse
from ptxopt.ir.edit import fresh_var, insert_at_end, insert_before, make_inst, remove, replace_uses
from ptxopt.ir.lift import lift_module
from ptxopt.ir.lower import print_ir_module
from ptxopt.ir.verify import verify_function
from ptxopt.ptx.ast import Imm
from ptxopt.ptx.parser import parse
from ptxopt.sim import launch

PTX = """
.version 9.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %r1;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd2, %rd1, %rd2;
    st.global.u32 [%rd2], %r2;
    ret;
}
"""


def test_build_replace_remove_roundtrip(tmp_path: Path) -> None:
    mod = lift_module(parse(PTX))
    fn = mod.funcs[0]
    b = fn.blocks[0]
    mov = next(
        i
        for i in b.insts
        if i.opcode == "mov" and isinstance(i.uses[0], Value) and i.uses[0].kind == "inst"
    )
    st = next(i for i in b.insts if i.opcode == "st")
    # r2 = r1 + 100 computed by a new instruction, replacing the copy
    var = fresh_var(fn, ".b32")
    add = make_inst(fn, "add", [".s32"], [var], [mov.uses[0], Imm(100, "100")])
    insert_before(b, b.insts.index(mov), add)
    du = DefUse(fn)
    assert replace_uses(fn, mov.defs[0], add.defs[0], du.uses_of(mov.defs[0])) == 1
    remove(mov)
    assert st.uses[-1] is add.defs[0]
    # a guarded copy needs the old value
    p = fresh_var(fn, ".pred")
    setp = make_inst(fn, "setp", [".lt", ".u32"], [p], [mov.uses[0], Imm(3, "3")])
    insert_at_end(b, setp)
    assert b.insts[-1].opcode == "ret" and b.insts[-2] is setp
    verify_function(fn)
    out = print_ir_module(mod)
    assert "add.s32" in out and "mov.u32 %r2" not in out
    ptxas_check(out, "sm_80", tmp_path)
    import numpy as np

    buf = np.zeros(8, dtype=np.uint32)
    launch(out, "k", grid=1, block=8, args=[buf])
    assert buf.tolist() == [100 + t for t in range(8)]
