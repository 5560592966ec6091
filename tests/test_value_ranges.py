"""Value ranges and known bits: special registers, widths, arithmetic, loop IVs."""

from __future__ import annotations

from ptxopt.analysis.manager import AnalysisManager
from ptxopt.analysis.value_ranges import Range, ValueRanges
from ptxopt.ir.core import Func
from ptxopt.ir.lift import lift_module
from ptxopt.ptx.parser import parse

HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"


def _ranges(body: str, params: str = "", directives: str = "") -> tuple[Func, ValueRanges]:
    text = f"{HEAD}.visible .entry k({params}) {directives}\n{{\n{body}\n}}\n"
    mod = lift_module(parse(text))
    f = mod.funcs[0]
    return f, AnalysisManager().get(ValueRanges, f)


def _last(f: Func, vr: ValueRanges, var: str) -> Range:
    vals = [v for v in f.values() if v.var == var]
    return vr.of(vals[-1], int(f.reg_types[var][2:]))


def test_special_registers_and_reqntid() -> None:
    body = """.reg .b32 %r<9>;
    mov.u32 %r1, %tid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %laneid;
    mov.u32 %r4, %ctaid.x; mov.u32 %r5, %tid.y;"""
    f, vr = _ranges(body)
    assert (_last(f, vr, "%r1").ulo, _last(f, vr, "%r1").uhi) == (0, 1023)
    assert (_last(f, vr, "%r2").ulo, _last(f, vr, "%r2").uhi) == (1, 1024)
    assert _last(f, vr, "%r3").uhi == 31
    assert _last(f, vr, "%r4").uhi < 1 << 31
    f, vr = _ranges(body, directives=".reqntid 128, 2")
    assert _last(f, vr, "%r1").uhi == 127
    assert _last(f, vr, "%r2").uhi == 128
    assert _last(f, vr, "%r5").uhi == 1


def test_widths_extensions_and_arith() -> None:
    body = """.reg .b32 %r<9>; .reg .b64 %rd<9>; .reg .b16 %h<3>;
    ld.param.u8 %r1, [p0];
    ld.param.s16 %r2, [p1];
    cvt.u64.u32 %rd1, %r1;
    cvt.s64.s32 %rd2, %r2;
    mul.wide.u32 %rd3, %r1, 1000;
    and.b32 %r3, %r4, 255;
    shr.u32 %r5, %r4, 24;
    rem.u32 %r6, %r4, 10;
    min.s32 %r7, %r2, 5;
    selp.b32 %r8, 3, 9, %p;
    shl.b64 %rd4, %rd1, 3;"""
    f, vr = _ranges(
        body.replace("%p;", "%p1;")
        .replace(".reg .b16 %h<3>;", ".reg .pred %p1;")
        .replace("and.b32 %r3, %r4, 255;", "ld.param.u32 %r4, [p2]; and.b32 %r3, %r4, 255;"),
        ".param .u8 p0, .param .s16 p1, .param .u32 p2",
    )
    r = _last(f, vr, "%r1")
    assert (r.ulo, r.uhi) == (0, 255)
    r = _last(f, vr, "%r2")
    assert (r.slo, r.shi) == (-32768, 32767)
    assert _last(f, vr, "%rd1").uhi == 255
    r = _last(f, vr, "%rd2")
    assert (r.slo, r.shi) == (-32768, 32767)
    assert _last(f, vr, "%rd3").uhi == 255_000
    assert _last(f, vr, "%r3").uhi == 255
    assert _last(f, vr, "%r5").uhi == 255
    assert _last(f, vr, "%r6").uhi == 9
    assert _last(f, vr, "%r7").shi == 5
    r = _last(f, vr, "%r8")
    assert (r.ulo, r.uhi) == (3, 9)
    r = _last(f, vr, "%rd4")
    assert r.uhi == 255 * 8 and r.zeros & 7 == 7


def test_wrap_around_gives_full_range() -> None:
    body = """.reg .b32 %r<5>;
    ld.param.u32 %r1, [p0];
    add.s32 %r2, %r1, 1;
    mul.lo.s32 %r3, %r1, 3;
    mov.u32 %r4, %tid.x;
    sub.s32 %r4, %r4, 1;"""
    f, vr = _ranges(body, ".param .u32 p0")
    assert _last(f, vr, "%r2") == Range.full(32)
    assert _last(f, vr, "%r3") == Range.full(32)
    # tid - 1 may be -1: no unsigned bound, a signed one
    r = _last(f, vr, "%r4")
    assert r.uhi == (1 << 32) - 1 and (r.slo, r.shi) == (-1, 1022)


LOOP = """.reg .b64 %rd<6>; .reg .pred %p<3>;
    mov.u64 %rd1, 0;
    ld.param.u32 %r1, [p0];
    cvt.u64.u32 %rd2, %r1;
    setp.eq.s64 %p1, %rd2, 0;
    @%p1 bra DONE;
LOOP:
    add.s64 %rd1, %rd1, STEP;
    setp.CMP.u64 %p2, %rd1, %rd2;
    @%p2 bra LOOP;
DONE:
    ret;"""


def _iv(step: str, cmp: str) -> tuple[Range, Range]:
    body = ".reg .b32 %r<3>;\n" + LOOP.replace("STEP", step).replace("CMP", cmp)
    f, vr = _ranges(body, ".param .u32 p0")
    phis = [p for b in f.blocks for p in b.phis]
    assert len(phis) == 1
    phi = phis[0].result
    nxt = phis[0].incoming[1]
    return vr.of(phi, 64), vr.of(nxt, 64)


def test_loop_trip_count_bounds() -> None:
    phi, nxt = _iv("1", "lt")
    assert (phi.ulo, phi.uhi) == (0, (1 << 32) - 2)
    assert (nxt.ulo, nxt.uhi) == (1, (1 << 32) - 1)
    phi, nxt = _iv("3", "lt")
    assert nxt.uhi == (1 << 32) - 2 + 3
    phi, nxt = _iv("1", "le")
    assert phi.uhi == (1 << 32) - 1


def test_loop_not_bounded_by_an_exit_that_does_not_continue() -> None:
    # continuing while next >= n does not bound an increasing counter
    phi, _ = _iv("1", "ge")
    assert phi == Range.full(64)
