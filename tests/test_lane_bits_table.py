"""The transfer table of :func:`ptxopt.analysis.lane_bits.result_mask`, one instruction
per rule: given the lane masks of the operands (which bits may differ between the lanes
of a warp), the mask of the result, worked out by hand from the bit arithmetic."""

from __future__ import annotations

import pytest

from ptxopt.analysis.lane_bits import result_mask
from ptxopt.ir.core import Value
from ptxopt.ir.lift import lift_module
from ptxopt.ptx.parser import parse

FULL32 = 0xFFFFFFFF
# operand masks: None = fully varying, 0 = uniform
MASKS: dict[str, int | None] = {
    "%a": 0x1F,  # the lane bits of %tid.x
    "%b": 0x100,
    "%s": 0x80000001,  # the sign bit may differ
    "%u": 0,
    "%w": 0,
    "%f": None,
    "%h": 0x8000,  # 16 bits, sign may differ
    "%g": 0x1,
    "%p": 0,
    "%q": 1,
    "%rs": 0x1,
}

# (instruction defining %d, expected mask of %d)
CASES: list[tuple[str, int | None]] = [
    ("mov.u32 %d, %a", 0x1F),
    ("mov.u32 %d, %f", None),
    ("and.b32 %d, %a, 12", 0x0C),
    ("and.b32 %d, %a, -32", 0),
    ("and.b32 %d, %a, %b", 0x11F),
    ("or.b32 %d, %a, %b", 0x11F),
    ("xor.b32 %d, %s, %u", 0x80000001),
    ("or.b16 %e, %h, %g", 0x8001),
    ("shl.b32 %d, %a, 3", 0xF8),
    ("shl.b32 %d, %s, 1", 0x2),
    ("shl.b32 %d, %a, 40", 0),
    ("shl.b32 %d, %a, %u", None),
    ("shl.b32 %d, %u, %w", 0),
    ("shr.u32 %d, %a, 2", 0x7),
    ("shr.u32 %d, %s, 4", 0x08000000),
    ("shr.u32 %d, %a, 32", 0),
    ("shr.s32 %d, %s, 4", 0xF8000000),
    ("shr.s32 %d, %s, 32", FULL32),
    ("shr.s32 %d, %a, 32", 0),
    ("shr.s32 %d, %a, 2", 0x7),
    ("shr.u32 %d, %u, %w", 0),
    ("shr.u32 %d, %a, %w", None),
    ("add.u32 %d, %b, %u", 0xFFFFFF00),
    ("sub.s32 %d, %u, %b", 0xFFFFFF00),
    ("add.u32 %d, %u, %w", 0),
    ("add.sat.s32 %d, %b, %u", None),
    ("add.cc.u32 %d, %b, %u", None),
    ("mul.lo.u32 %d, %a, 8", 0xF8),
    ("mul.lo.u32 %d, %s, 2", 0x2),
    ("mul.lo.u32 %d, %b, 6", 0xFFFFFF00),
    ("mul.lo.u32 %d, %b, 0", 0xFFFFFF00),
    ("mul.lo.u32 %d, %b, %u", 0xFFFFFF00),
    ("mul.hi.u32 %d, %b, 8", None),
    ("mul.wide.u32 %rd, %a, 4", 0x7C),
    ("mul.wide.u32 %rd, %s, 2", 0x100000002),
    ("mul.wide.s32 %rd, %s, 4", None),
    ("mul.wide.s32 %rd, %a, 4", 0x7C),
    ("mul.wide.u32 %rd, %a, 3", None),
    ("mul.wide.u32 %rd, %a, %u", None),
    ("div.u32 %d, %a, 32", 0),
    ("div.u32 %d, %a, 96", 0),
    ("div.u32 %d, %b, 16", 0x10),
    ("div.u32 %d, %b, 512", 0),
    ("div.u32 %d, %b, 48", None),
    ("div.u32 %d, %a, 0", None),
    ("div.u32 %d, %a, %u", None),
    ("div.u32 %d, %u, %w", 0),
    ("div.s32 %d, %a, 32", None),
    ("cvt.u64.u32 %rd, %s", 0x80000001),
    ("cvt.s64.s32 %rd, %s", 0xFFFFFFFF80000001),
    ("cvt.s64.s32 %rd, %b", 0x100),
    ("cvt.u16.u32 %e, %b", 0x100),
    ("cvt.u16.u32 %e, %s", 0x1),
    ("cvt.s32.s16 %d, %h", 0xFFFF8000),
    ("cvt.u32.u16 %d, %h", 0x8000),
    ("cvt.sat.u16.u32 %e, %b", None),
    ("bfe.u32 %d, %a, 2, 2", 0x3),
    ("bfe.u32 %d, %a, 5, 3", 0),
    ("bfe.u32 %d, %a, 3, 0", 0),
    ("bfe.u32 %d, %s, 40, 3", 0),
    ("bfe.s32 %d, %s, 40, 3", FULL32),
    ("bfe.s32 %d, %a, 40, 3", 0),
    ("bfe.s32 %d, %a, 3, 2", FULL32),
    ("bfe.s32 %d, %a, 1, 8", 0xF),
    ("bfe.u32 %d, %s, 30, 8", 0x2),
    ("bfe.s32 %d, %s, 30, 8", 0xFFFFFFFE),
    ("bfe.u32 %d, %a, %u, 3", None),
    ("selp.b32 %d, %a, %b, %p", 0x11F),
    ("selp.b32 %d, %a, %b, %q", None),
    ("popc.b32 %d, %a", None),
    ("addc.u32 %d, %a, %u", None),
]

KERNEL = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u32 n, .param .u16 m)
{
\t.reg .b32 %a, %b, %s, %u, %w, %f, %d;
\t.reg .b16 %h, %g, %e;
\t.reg .b64 %rd;
\t.reg .pred %p, %q;
\tld.param.u32 %a, [n];
\tld.param.u32 %b, [n];
\tld.param.u32 %s, [n];
\tld.param.u32 %u, [n];
\tld.param.u32 %w, [n];
\tld.param.u32 %f, [n];
\tld.param.u16 %h, [m];
\tld.param.u16 %g, [m];
\tsetp.eq.u32 %p, %a, %u;
\tsetp.eq.u32 %q, %a, %u;
\tadd.cc.u32 %u, %u, %w;
BODY
\tret;
}
"""


def _mask_of(v: Value) -> int | None:
    return MASKS[v.var]


@pytest.mark.parametrize(("line", "want"), CASES, ids=[c[0] for c in CASES])
def test_result_mask(line: str, want: int | None) -> None:
    fn = lift_module(parse(KERNEL.replace("BODY", f"\t{line};"))).funcs[0]
    inst = [i for i in fn.instructions() if i.ast.opcode == line.split(".")[0]][-1]
    assert result_mask(inst, _mask_of) == want
