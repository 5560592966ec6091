"""The uniform register model (spec 02, phases 74 and 86): Ori view, capability table,
ConvertToUniformReg's decisions, the report passes and ``analyze --regfiles``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ptxopt.analysis.divergence import analyze_module
from ptxopt.ir.lift import lift_module
from ptxopt.ori.capability import (
    CAPABILITIES,
    EVIDENCE,
    accepts_up_source,
    family,
    uniform_form,
)
from ptxopt.ori.conv_alloc import E7020, E7021, plan_conv_alloc
from ptxopt.ori.ur_alloc import FNV_BASIS, FnvSet, fnv1a, plan_function
from ptxopt.ori.view import sass_class
from ptxopt.ptx.parser import parse

ROOT = Path(__file__).resolve().parents[1]
PROBE = (ROOT / "tests/ori/capability_probe.ptx").read_text()

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def plans(text: str, sm: int, name: str = "k", **kw: object) -> dict[str, str]:
    mod = lift_module(parse(text, "t.ptx"))
    md = analyze_module(mod)
    f = mod.func(name)
    p = plan_function(f, md.funcs[name], sm, **kw)  # type: ignore[arg-type]
    return {k: w.file for k, w in p.webs.items()}


def test_capability_table_rows_have_evidence() -> None:
    for cap in CAPABILITIES.values():
        assert cap.evidence and all(e in EVIDENCE for e in cap.evidence), cap.cls


@pytest.mark.parametrize(
    ("cls", "sm", "form"),
    [
        ("IADD3", 75, "UIADD3"),
        ("IADD3", 90, "UIADD3"),
        ("SHF", 80, "USHF"),
        ("FADD", 90, None),
        ("FADD", 100, "UFADD"),
        ("FFMA", 89, None),
        ("IMNMX", 90, "UISETP+USEL"),
        ("IADD3", 70, None),
    ],
)
def test_uniform_form_per_sm_family(cls: str, sm: int, form: str | None) -> None:
    assert uniform_form(cls, sm) == form


def test_only_a_warpgroup_mma_reads_a_uniform_predicate() -> None:
    assert accepts_up_source("MMA", "wgmma")
    for cls, op in (("MMA", "mma"), ("SEL", "selp"), ("PLOP3", "and"), ("ISETP", "setp")):
        assert not accepts_up_source(cls, op)


def test_families() -> None:
    assert [family(s) for s in (70, 75, 86, 89, 90, 100, 120)] == [None, 75, 75, 75, 90, 100, 100]


def test_sass_classes_of_probe() -> None:
    mod = lift_module(parse(PROBE, "p.ptx"))
    got = {i.ast.name: sass_class(i) for i in mod.funcs[0].instructions()}
    assert got["ld.param.u64"] == "LDC"
    assert got["shl.b32"] == "SHF"
    assert got["selp.b32"] == "SEL"
    assert got["setp.lt.s32"] == "ISETP"
    assert got["mul.wide.s32"] == "IMAD"
    assert got["cvt.s32.s8"] == "SGXT"
    assert got["cvt.rn.f32.s32"] == "I2F"
    assert got["add.f32"] == "FADD"
    assert got["st.global.u32"] == "STG"
    assert got["max.u32"] == "IMNMX"


def test_probe_matches_ptxas_families() -> None:
    """The probe kernel's decisions agree with what ptxas 13.0.88 wrote (recorded):
    the integer chain from %ctaid is uniform on every family, the float step and
    everything after it per-thread (no uniform I2F), the %tid add per-thread."""
    for sm in (75, 80, 90):
        f = plans(PROBE, sm)
        for r in ("%r2", "%r4", "%r5", "%r7", "%r9", "%r10", "%r11", "%r14", "%r15", "%r16"):
            assert f[r] == "UR", (sm, r)
        assert f["%p1"] == "UP"
        for r in ("%f1", "%f2", "%r17", "%r18", "%r30", "%r31"):
            assert f[r] == "R", (sm, r)
    f70 = plans(PROBE.replace("sm_75", "sm_70"), 70)
    assert set(f70.values()) <= {"R", "P"}


def test_fnv1a_and_visited_set() -> None:
    assert fnv1a(0) != FNV_BASIS
    # reference value of FNV-1a over four zero bytes
    h = FNV_BASIS
    for _ in range(4):
        h = (h * 0x01000193) & 0xFFFFFFFF
    assert fnv1a(0) == h
    s = FnvSet()
    for k in range(100):
        assert s.add(k * 7)
    assert not s.add(14)
    assert len(s) == 100 and 693 in s and 5 not in s


CHAIN = (
    HEAD
    + """.visible .entry k(.param .u64 p)
{
.reg .b32 %r<8>; .reg .b64 %rd<4>;
.shared .u32 flag;
ld.shared.u32 %r1, [flag];
add.s32 %r2, %r1, 1;
add.s32 %r3, %r2, 2;
add.s32 %r4, %r3, 3;
add.s32 %r5, %r4, 4;
mov.u32 %r6, %tid.x;
add.s32 %r7, %r6, %r5;
st.shared.u32 [%r6], %r7;
ret;
}
"""
)


# the same chain read backwards: %r4 is stored (STG reads no UR), so its sources lose
# their uniform readers one per attempt -- %r2 (second uniform operand of a per-thread
# add), then %p1 (a per-thread SEL reads no UP)
BACKWARD = (
    HEAD
    + """.visible .entry k(.param .u64 p)
{
.reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<4>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %ctaid.x;
add.s32 %r3, %r1, 3;
setp.eq.s32 %p1, %r3, 5;
selp.b32 %r2, 7, 9, %p1;
add.s32 %r4, %r2, %r1;
st.global.u32 [%rd1], %r4;
ret;
}
"""
)


def test_bridge_demotion_chain_and_attempts() -> None:
    """%r1 is a shared load (uniform, but LDS has no uniform form): %r2 would need an
    R2UR bridge and is demoted, and since a demotion is seen by the webs costed after
    it in the same attempt, one attempt takes the whole chain down in program order.
    A demotion that travels against program order (a reader demoted, then its
    sources) moves one step per attempt: the knob bounds the attempts, and what is
    left over is reported as a bridge."""
    for attempts in (1, 10):
        f = plans(CHAIN, 90, max_attempts=attempts)
        assert [f[r] for r in ("%r1", "%r2", "%r3", "%r4", "%r5")] == ["R"] * 5, attempts
    for sm in (80, 90):
        steps = [plans(BACKWARD, sm, max_attempts=a) for a in (1, 2, 3, 5)]
        assert [(f["%r4"], f["%r2"], f["%p1"]) for f in steps] == [
            ("R", "UR", "UP"),
            ("R", "R", "UP"),
            ("R", "R", "P"),
            ("R", "R", "P"),
        ], sm
        assert all(f["%r1"] == f["%r3"] == "UR" for f in steps)
    mod = lift_module(parse(BACKWARD, "t.ptx"))
    md = analyze_module(mod)
    one = plan_function(mod.func("k"), md.funcs["k"], 90, max_attempts=1)
    assert one.attempts == 1 and any(b.reg == "%r2" for b in one.bridges)


# a uniform loop whose value comes back to the loop top through a copy
# (cutlass/ampere_fmha.sm80.ptx line 226: %r36, read through the copy %r1296 at lines
# 125-198, is ``UIADD3 UR4, -UR17, UR22, URZ`` at sm_80)
THROUGH_COPY = (
    HEAD
    + """.visible .entry k(.param .u64 p, .param .u32 n)
{
.reg .b32 %r<12>; .reg .b64 %rd<4>; .reg .pred %p<4>;
ld.param.u64 %rd1, [p];
ld.param.u32 %r9, [n];
mov.u32 %r1, %r9;
mov.u32 %r4, 0;
LOOP:
add.s32 %r2, %r1, 1;
add.s32 %r3, %r2, 5;
mov.u32 %r1, %r3;
add.s32 %r4, %r4, 1;
setp.lt.s32 %p1, %r4, %r9;
@%p1 bra LOOP;
mov.u32 %r5, %tid.x;
add.s32 %r6, %r5, %r1;
st.global.u32 [%rd1], %r6;
ret;
}
"""
)


def test_back_references_count_for_the_web_itself() -> None:
    """A uniform reader placed before the definition costs a back reference only when
    it reads the web itself: %r3 reaches the loop top through its copy %r1, whose
    reader there reads the copy, and stays UR.  A read of %r3 itself at the loop top
    is one when %r3 is first written below it (demoted), not when an earlier write
    of %r3 comes first (the definition point is the first write)."""
    for sm in (80, 90):
        f = plans(THROUGH_COPY, sm)
        assert f["%r3"] == f["%r1"] == f["%r2"] == "UR", (sm, f)
    itself = THROUGH_COPY.replace("mov.u32 %r1, %r9;", "mov.u32 %r3, %r9;").replace(
        "add.s32 %r2, %r1, 1;", "add.s32 %r2, %r3, 1;"
    )
    for sm in (80, 90):
        assert plans(itself, sm)["%r3"] == "UR"
    direct = THROUGH_COPY.replace("add.s32 %r2, %r1, 1;", "add.s32 %r2, %r3, 1;")
    for sm in (80, 90):
        assert plans(direct, sm)["%r3"] == "R", sm


# a uniform value that two uniform instructions read and one per-thread mad whose
# one UR/constant slot the immediate holds (line 14)
ONE_COPY = (
    HEAD
    + """.visible .entry k(.param .u64 p)
{
.reg .b32 %r<16>; .reg .b64 %rd<4>; .reg .pred %p<4>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %ctaid.x;
add.s32 %r2, %r1, 7;
add.s32 %r3, %r2, 1;
shl.b32 %r4, %r2, 3;
add.s32 %r10, %r3, %r4;
mov.u32 %r5, %tid.x;
mad.lo.s32 %r6, %r5, 76, %r2;
setp.lt.s32 %p1, %r10, 100;
@%p1 bra DONE;
st.global.u32 [%rd1], %r6;
DONE:
ret;
}
"""
)


def test_one_copy_for_two_uniform_readers_keeps_ur() -> None:
    """The single-copy rule's mechanics: %r2 needs one copy into R (the per-thread mad)
    and two uniform instructions read it, so it stays UR and the plan reports the
    copy; with one uniform reader, or with a second per-thread reader that needs its
    own copy, it goes to R.  (ptxas itself computes this small kernel entirely in R;
    the rule's evidence is cutlass/ampere_fmha.sm80.ptx, see docs/uniform-registers.md.)"""
    for sm in (80, 90):
        mod = lift_module(parse(ONE_COPY, "t.ptx"))
        md = analyze_module(mod)
        p = plan_function(mod.func("k"), md.funcs["k"], sm)
        assert p.webs["%r2"].file == "UR", (sm, p.webs["%r2"].why)
        assert [(b.kind, b.reg, b.line) for b in p.bridges] == [("UR2R", "%r2", 14)]
    one = ONE_COPY.replace("shl.b32 %r4, %r2, 3;", "shl.b32 %r4, %r1, 3;")
    two = ONE_COPY.replace(
        "st.global.u32 [%rd1], %r6;",
        "mad.lo.s32 %r9, %r5, 12, %r2;\nadd.s32 %r7, %r6, %r9;\nst.global.u32 [%rd1], %r7;",
    )
    for text in (one, two):
        for sm in (80, 90):
            assert plans(text, sm)["%r2"] == "R", sm


def _many(n: int) -> str:
    body = "".join(f"mov.u32 %r{i}, %ctaid.x;\nadd.s32 %r{i}, %r{i}, {i};\n" for i in range(n))
    uses = "".join(f"add.s32 %s, %s, %r{i};\n" for i in range(n))
    return HEAD + (
        ".visible .entry k(.param .u64 p)\n{\n"
        f".reg .b32 %r<{n}>; .reg .b32 %s; .reg .b64 %rd1;\n"
        "ld.param.u64 %rd1, [p];\nmov.u32 %s, %tid.x;\n"
        + body
        + uses
        + "st.global.u32 [%rd1], %s;\nret;\n}\n"
    )


def test_ur_budget() -> None:
    f = plans(_many(80), 90)
    assert sum(v == "UR" for v in f.values()) <= 63
    small = plans(_many(80), 90, ur_budget=10)
    assert sum(v == "UR" for v in small.values()) <= 10


CUT = (
    HEAD
    + """.visible .entry NAME(.param .u64 p)
{
.reg .b32 %r<4>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %ctaid.x;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
mov.u32 %r2, %tid.x;
st.global.u32 [%rd3], %r2;
ret;
}
"""
)


def test_cutlass_override() -> None:
    plain = plans(CUT.replace("NAME", "k"), 90)
    cut = plans(CUT.replace("NAME", "cutlass_k"), 90, name="cutlass_k")
    assert plain["%rd3"] == "R"
    assert cut["%rd3"] == "UR"
    off = plans(CUT.replace("NAME", "cutlass_k"), 90, name="cutlass_k", cutlass_override=False)
    assert off["%rd3"] == "R"


def test_conv_alloc_markers_and_diagnostics() -> None:
    text = (
        HEAD
        + """.func f()
{
ret;
}
.visible .entry k()
{
.reg .b32 %r<4>; .reg .pred %p1;
mov.u32 %r1, %ctaid.x;
shl.b32 %r2, %r1, 2;
mov.u32 %r3, %tid.x;
setp.lt.u32 %p1, %r3, %r2;
.pragma "allowConvAlloc";
@%p1 call f;
.pragma "allowConvAlloc";
call.uni f;
call.uni f;
ret;
}
"""
    )
    mod = lift_module(parse(text, "t.ptx"))
    md = analyze_module(mod)
    f = mod.func("k")
    p = plan_function(f, md.funcs["k"], 90)
    conv = plan_conv_alloc(f, p)
    assert [m.reg for m in conv.markers] == ["%r1"]  # %r2 has a per-thread reader
    # the guarded call of line 16 has no convergent boundary; the calls of lines 18
    # and 19 share the block of line 16's
    assert conv.diagnostics == [f"{E7020} (line 16)", f"{E7021} (line 18)", f"{E7021} (line 19)"]


def test_conv_alloc_marker_at_a_guarded_write_that_keeps_the_old_value() -> None:
    # %r1's first reader is the guarded write of line 10 (its tied old value); its
    # other reader, the add of line 11, is uniform, so the marker goes to line 10
    text = (
        HEAD
        + """.visible .entry k(.param .u32 n)
{
.reg .b32 %r<8>; .reg .pred %p<3>;
ld.param.u32 %r5, [n];
mov.u32 %r1, %ctaid.x;
setp.eq.u32 %p1, %r5, 0;
@%p1 mov.u32 %r1, 7;
add.u32 %r2, %r1, 3;
setp.lt.u32 %p2, %r2, 9;
@%p2 bra DONE;
mov.u32 %r3, %tid.x;
add.u32 %r4, %r3, 1;
xor.b32 %r6, %r5, 1;
DONE:
ret;
}
"""
    )
    mod = lift_module(parse(text, "t.ptx"))
    f = mod.func("k")
    p = plan_function(f, analyze_module(mod).funcs["k"], 90)
    assert {k for k, w in p.webs.items() if w.file in ("UR", "UP")} == {
        "%r5", "%r1", "%p1", "%r2", "%p2", "%r6"
    }  # fmt: skip
    # %r5 before its first reader (line 9, not the xor of line 16); %r6, read by
    # nothing, at its write
    marks = [(m.reg, m.line) for m in plan_conv_alloc(f, p).markers]
    assert marks == [("%r5", 9), ("%p1", 10), ("%r1", 10), ("%r2", 12), ("%r6", 16)]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptxopt.cli", *args],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip


def test_cli_regfiles_json(tmp_path: Path) -> None:
    src = tmp_path / "k.ptx"
    src.write_text(PROBE)
    r = _cli("analyze", str(src), "--regfiles", "--json", "--arch", "sm_90")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    rows = rep["functions"][0]["regfiles"]
    lines = PROBE.splitlines()
    row = next(x for x in rows if x["reg"] == "%r2")
    assert row["file"] == "UR" and "%ctaid.x" in lines[row["line"] - 1]
    assert next(x for x in rows if x["reg"] == "%r31")["file"] == "R"
    assert rep["functions"][0]["ur_count"] > 0
    r70 = _cli("analyze", str(src), "--regfiles", "--json", "--arch", "sm_75")
    assert json.loads(r70.stdout)["arch"] == "sm_75"


def test_cli_emit_ori(tmp_path: Path) -> None:
    src = tmp_path / "k.ptx"
    src.write_text(PROBE)
    r = _cli("analyze", str(src), "--emit", "ori")
    assert r.returncode == 0, r.stderr
    assert "S2UR    %r2:UR" in r.stdout and "UISETP" in r.stdout and "STG" in r.stdout


def test_report_passes_leave_ptx_unchanged() -> None:
    from ptxopt.driver import optimize
    from ptxopt.transforms.convert_to_uniform_reg import PLANS
    from ptxopt.transforms.insert_pseudo_use_def_conv_ur import MARKERS

    out = optimize(
        PROBE, "p.ptx", ["convert-to-uniform-reg", "insert-pseudo-use-def-conv-ur"],
        arch="sm_90", knobs={"ConvertToUniformRegMaxAttempts": 2},
    )  # fmt: skip
    base = optimize(PROBE, "p.ptx", [])
    assert out.text == base.text
    assert PLANS["k"].webs["%r2"].file == "UR" and PLANS["k"].attempts <= 2
    assert "k" in MARKERS
    assert out.report.stats["convert-to-uniform-reg"]["webs converted to UR/UP"] > 0


def test_debug_target_runs_no_phase_74() -> None:
    text = PROBE.replace(".target sm_75", ".target sm_75, debug")
    mod = lift_module(parse(text, "p.ptx"))
    md = analyze_module(mod)
    from ptxopt.ori.report import module_plans

    (p,) = module_plans(mod, md, "sm_90")
    assert p.converted == 0 and set(w.file for w in p.webs.values()) <= {"R", "P"}


def test_cutlass_override_knob_in_pipeline() -> None:
    from ptxopt.driver import optimize
    from ptxopt.transforms.convert_to_uniform_reg import PLANS

    text = CUT.replace("NAME", "cutlass_k")
    for on, want in ((True, "UR"), (False, "R")):
        optimize(
            text, "c.ptx", ["convert-to-uniform-reg"], arch="sm_90",
            knobs={"ConvertToUniformRegCutlassOverride": on},
        )  # fmt: skip
        assert PLANS["cutlass_k"].webs["%rd3"].file == want


def _kernel(body: str, regs: str = ".reg .b32 %r<12>; .reg .b64 %rd<8>; .reg .pred %p<4>;") -> str:
    return HEAD + (
        ".visible .entry k(.param .u64 p, .param .u32 n)\n{\n" + regs + "\n" + body + "ret;\n}\n"
    )


def _plan(text: str, sm: int):  # type: ignore[no-untyped-def]
    mod = lift_module(parse(text, "t.ptx"))
    md = analyze_module(mod)
    return plan_function(mod.func("k"), md.funcs["k"], sm)


CONSTS = _kernel(
    """ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd2, %rd3;
mov.u32 %r2, 1;
shl.b32 %r3, %r2, %r1;
st.global.u32 [%rd4], %r3;
"""
)


def test_constant_operands_stay_out_of_ur() -> None:
    """A parameter, its cvta.to.global identity and a mov of an immediate read only by
    per-thread instructions are c[bank][offset] / immediate operands, never a UR; the
    count is then just the global memory descriptor."""
    p = _plan(CONSTS, 90)
    assert {p.webs[r].file for r in ("%rd1", "%rd2", "%r2")} == {"R"}
    assert "constant operand" in p.webs["%rd2"].why
    assert p.ur_count == 1  # desc[URx]


CONSTS_U = _kernel(
    """ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, %ctaid.x;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd2, %rd3;
ld.global.u32 %r2, [%rd4];
mov.u32 %r3, %tid.x;
add.s32 %r4, %r2, %r3;
st.global.u32 [%rd4], %r4;
""",
)


def test_constant_read_by_uniform_chain_is_ur() -> None:
    """With a uniform reader (the address add of a cutlass-free kernel is excluded, so
    use the sm_80 count path): the param -> cvta chain settles backwards."""
    p = _plan(CONSTS_U, 90)
    # %rd4 is a 64-bit global address: excluded, so its sources feed a per-thread add
    assert p.webs["%rd4"].file == "R"
    assert p.webs["%rd2"].file == "R" and p.webs["%rd1"].file == "R"


SLOT = _kernel(
    """mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
mov.u32 %r3, %tid.x;
mad.lo.s32 %r4, %r1, %r2, %r3;
ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd2, %rd1;
mul.wide.u32 %rd3, %r4, 4;
add.s64 %rd4, %rd2, %rd3;
st.global.u32 [%rd4], %r4;
"""
)


def test_constant_takes_the_ur_slot_on_sm80_not_sm90() -> None:
    """``mad.lo %r4, %ctaid, %ntid, %tid``: on sm_80 %ntid is the c[0x0][0x0] operand
    of IMAD, so %ctaid comes by S2R into R; on sm_90 ptxas loads %ntid with a per-thread
    LDC and gives the slot to S2UR's %ctaid."""
    assert _plan(SLOT, 80).webs["%r1"].file == "R"
    assert _plan(SLOT, 90).webs["%r1"].file == "UR"


IMM_SLOT = _kernel(
    """mov.u32 %r1, %ctaid.x;
add.s32 %r2, %r1, 7;
mov.u32 %r3, %tid.x;
mad.lo.s32 %r4, %r2, 4, %r3;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r4;
"""
)


def test_immediate_takes_the_slot() -> None:
    """``mad.lo %r4, %r2, 4, %r3`` is ``IMAD R, R2, 0x4, R3``: the immediate takes the one
    UR source slot, so uniform %r2 is needed in R (a bridge, so demoted); as an add it
    reads %r2 from UR."""
    p = _plan(IMM_SLOT, 90)
    assert p.webs["%r2"].file == "R"
    assert "bridges" in p.webs["%r2"].why
    no_imm = IMM_SLOT.replace("mad.lo.s32 %r4, %r2, 4, %r3", "add.s32 %r4, %r2, %r3")
    assert _plan(no_imm, 90).webs["%r2"].file == "UR"


BRANCH = _kernel(
    """ld.param.u32 %r1, [n];
setp.eq.s32 %p1, %r1, 0;
@%p1 bra DONE;
mov.u32 %r2, %ctaid.x;
add.s32 %r3, %r2, %r1;
setp.gt.s32 %p2, %r3, 5;
@%p2 bra DONE;
ld.param.u64 %rd1, [p];
mov.u32 %r4, %tid.x;
st.global.u32 [%rd1], %r4;
DONE:
"""
)


def test_compare_of_constants_feeding_a_branch_is_per_thread() -> None:
    """``setp.eq %p1, <param>, 0; @%p1 bra``: one ISETP reading the parameter beats
    UISETP + the PLOP3 moving UP into P; a compare of a computed uniform value stays UP."""
    for sm in (80, 90):
        p = _plan(BRANCH, sm)
        assert p.webs["%p1"].file == "P"
        assert "branches" in p.webs["%p1"].why
        assert p.webs["%p2"].file == "UP"


WGMMA_DESC = (
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
    ".visible .entry k(.param .u64 p)\n{\n"
    ".reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .f32 %f<5>;\n"
    "mov.u32 %r1, %ctaid.x;\n"
    "cvt.u64.u32 %rd1, %r1;\n"
    "or.b64 %rd2, %rd1, 4611686293338849280;\n"
    "wgmma.fence.sync.aligned;\n"
    "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd2, %rd2, "
    "1, 1, 1, 0, 0;\n"
    "ret;\n}\n"
)


def test_wgmma_descriptor_read_from_ur() -> None:
    """A wgmma reads its 64-bit matrix descriptors from UR: the descriptor arithmetic
    needs no bridge."""
    p = _plan(WGMMA_DESC, 90)
    assert p.webs["%rd2"].file == "UR"
    assert not [b for b in p.bridges if b.reg == "%rd2"]


CALL_ARG = (
    HEAD + ".func (.param .b32 r) f(.param .b64 a)\n{\n.reg .b64 %rd<2>; .reg .b32 %r<2>;\n"
    "ld.param.u64 %rd1, [a];\nld.u32 %r1, [%rd1];\nst.param.b32 [r], %r1;\nret;\n}\n"
    ".visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<4>; .reg .b32 %r<4>;\n"
    "ld.param.u64 %rd1, [p];\nmov.u32 %r1, %ctaid.x;\nmul.wide.u32 %rd2, %r1, 4;\n"
    "add.s64 %rd3, %rd1, %rd2;\n"
    "{\n.param .b64 a0;\n.param .b32 r0;\nst.param.b64 [a0], %rd3;\n"
    "call.uni (r0), f, (a0);\nld.param.b32 %r2, [r0];\n}\n"
    "ret;\n}\n"
)


def test_call_argument_is_a_copy_that_reads_ur() -> None:
    """``st.param`` of an outgoing argument is the copy into the ABI register (a MOV that
    may read UR): a uniform pointer computed for it stays in UR (ptxas: UIADD3, then
    ``MOV R4, UR4`` for the call)."""
    mod = lift_module(parse(CALL_ARG, "t.ptx"))
    st = [i for b in mod.func("k").blocks for i in b.insts if i.ast.opcode == "st"]
    assert sass_class(st[0]) == "MOV"
    p = _plan(CALL_ARG, 90)
    assert p.webs["%rd3"].file == "UR"


LEAF_CMP = _kernel(
    """ld.param.u32 %r1, [n];
mov.u32 %r2, %ctaid.y;
setp.ge.s32 %p1, %r2, %r1;
@%p1 bra DONE;
ld.param.u64 %rd1, [p];
mov.u32 %r4, %tid.x;
st.global.u32 [%rd1], %r4;
DONE:
"""
)


def test_special_register_leaf_compare_per_sm() -> None:
    """``setp.ge %p1, %ctaid.y, <param>`` read only by a branch: sm_90 compares
    per-thread (``ISETP.LE.AND P0, PT, R4, UR4``), sm_80 keeps UISETP into UP."""
    assert _plan(LEAF_CMP, 90).webs["%p1"].file == "P"
    assert _plan(LEAF_CMP, 80).webs["%p1"].file == "UP"


FOLD = _kernel(
    """mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
mul.lo.s32 %r3, %r1, %r2;
mov.u32 %r4, %tid.x;
add.s32 %r5, %r3, %r4;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r5;
"""
)


def test_uniform_multiply_folds_into_per_thread_add() -> None:
    """``mul.lo %r3, %ctaid, %ntid; add %r5, %r3, %tid`` is one per-thread IMAD: the
    product is not a UR; on sm_90 %ctaid takes the UR slot (S2UR) and %ntid is a
    per-thread LDC, on sm_80 %ntid is the c[0x0][0x0] operand and %ctaid comes by S2R."""
    p90 = _plan(FOLD, 90)
    assert p90.webs["%r3"].file == "R" and "folded" in p90.webs["%r3"].why
    assert p90.webs["%r1"].file == "UR" and p90.webs["%r2"].file == "R"
    p80 = _plan(FOLD, 80)
    assert p80.webs["%r1"].file == "R"


TOLERATE = _kernel(
    """mov.u32 %r1, %ctaid.x;
add.s32 %r2, %r1, 3;
add.s32 %r3, %r1, 5;
add.s32 %r8, %r1, 9;
xor.b32 %r4, %r2, %r3;
xor.b32 %r4, %r4, %r8;
ld.param.u64 %rd1, [p];
mov.u32 %r5, %tid.x;
mad.lo.s32 %r6, %r1, 4, %r5;
mad.lo.s32 %r9, %r1, 12, %r5;
add.s32 %r7, %r6, %r4;
add.s32 %r7, %r7, %r9;
st.global.u32 [%rd1], %r7;
"""
)


def test_tolerate_bridges_variant() -> None:
    """%ctaid has three uniform readers and two readers that need it in R (each IMAD's
    slot holds its immediate): strict demotes it (two copies), the tolerant variant
    keeps UR plus the UR2Rs."""
    assert _plan(TOLERATE, 90).webs["%r1"].file == "R"
    mod = lift_module(parse(TOLERATE, "t.ptx"))
    md = analyze_module(mod)
    p = plan_function(mod.func("k"), md.funcs["k"], 90, tolerate_bridges=True)
    assert p.webs["%r1"].file == "UR"
    assert any(b.kind == "UR2R" and b.reg == "%r1" for b in p.bridges)


REMAT = _kernel(
    """ld.param.u32 %r1, [n];
mov.u32 %r2, %ctaid.x;
add.s32 %r3, %r2, %r1;
add.s32 %r4, %r3, %r1;
mov.u32 %r5, %tid.x;
add.s32 %r6, %r5, %r4;
ld.param.u64 %rd1, [p];
st.global.u32 [%rd1], %r6;
"""
)


def test_constants_are_rematerialised_not_live() -> None:
    """A parameter read by uniform instructions is ULDC'd at each reader: it holds no
    live range, so it neither counts against the budget nor widens the UR count."""
    mod = lift_module(parse(REMAT, "t.ptx"))
    md = analyze_module(mod)
    p = plan_function(mod.func("k"), md.funcs["k"], 90, ur_budget=2)
    assert p.budget_demoted == 0
    assert {p.webs[r].file for r in ("%r1", "%r2", "%r3", "%r4")} == {"UR"}
    # peak at ``add %r3, %r2, %r1``: %r2, %r3 and the reloaded %r1; the descriptor is
    # loaded at the store, after them (tests/ori/test_ur_count.py)
    assert p.ur_count == 3


# -- the model's sweeps and its order independence ---------------------------------------

#: Five copies of a parameter, each written in a block placed before its source's.
REVERSED_CHAIN = _kernel(
    """bra.uni L0;
L5: mov.u32 %r6, %r5;
bra.uni L9;
L4: mov.u32 %r5, %r4;
bra.uni L5;
L3: mov.u32 %r4, %r3;
bra.uni L4;
L2: mov.u32 %r3, %r2;
bra.uni L3;
L1: mov.u32 %r2, %r1;
bra.uni L2;
L0: ld.param.u32 %r1, [n];
bra.uni L1;
L9: mov.u32 %r7, %tid.x;
add.s32 %r8, %r7, %r6;
st.global.u32 [%rd1], %r8;
"""
)


def test_constant_operands_are_a_fixpoint_in_any_block_order() -> None:
    """An identity of a constant operand is one too, however long the chain and in
    whatever order its copies are laid out (the closure once stopped after 4 sweeps
    over the webs in layout order, which left %r6 computed)."""
    from ptxopt.ori.ur_alloc import _constant_webs
    from ptxopt.ori.view import Classes, build_webs

    mod = lift_module(parse(REVERSED_CHAIN, "t.ptx"))
    f = mod.func("k")
    webs = build_webs(f)
    cls = Classes(len(list(f.instructions())))  # (build_webs numbered them)
    assert {f"%r{i}" for i in range(1, 7)} <= _constant_webs(webs, webs, cls)
    p = plan_function(f, analyze_module(mod).funcs["k"], 90)
    assert p.webs["%r6"].why == "constant operand of per-thread readers"


def test_scan_then_reads_equals_one_pass_webs() -> None:
    """The two sweeps the model uses give every web the same values, writes and reads
    as a single pass over the instructions would (probe kernel, all registers)."""
    from ptxopt.ir.core import Value, address_slots
    from ptxopt.ori.view import build_webs, record_reads, scan

    mod = lift_module(parse(PROBE, "p.ptx"))
    for f in mod.funcs:
        webs = build_webs(f)
        want: dict[str, list[tuple[int, int, bool]]] = {}
        for ins in f.instructions():
            addr = address_slots(ins)
            if ins.pred is not None and ins.pred.kind != "special":
                want.setdefault(ins.pred.var, []).append((id(ins), -1, False))
            for k, u in enumerate(ins.uses):
                if isinstance(u, Value) and u.kind != "special":
                    want.setdefault(u.var, []).append((id(ins), k, k in addr))
        got = {k: [(id(u.inst), u.slot, u.address) for u in w.uses] for k, w in webs.items()}
        assert {k: v for k, v in got.items() if v} == want
        half = scan(f)
        record_reads(f, half.webs, [k for k in half.webs if k.startswith("%p")])
        for k, w in half.webs.items():
            assert w.defs == webs[k].defs and w.type == webs[k].type
            assert len(w.uses) == (len(webs[k].uses) if k.startswith("%p") else 0)


TIED = _kernel(
    """mov.u32 %r1, %ctaid.x;
cvt.u64.u32 %rd1, %r1;
mov.b64 {%r3, %r4}, %rd1;
mov.u32 %r5, %tid.x;
add.s32 %r6, %r3, %r5;
add.s32 %r7, %r4, %r5;
add.s32 %r8, %r6, %r7;
ld.param.u64 %rd2, [p];
st.global.u32 [%rd2], %r8;
"""
)

_SEEDED = """
import json, sys
from ptxopt.analysis.divergence import analyze_module
from ptxopt.ir.lift import lift_module
from ptxopt.ori.ur_alloc import plan_function
from ptxopt.ptx.parser import parse
mod = lift_module(parse(sys.stdin.read(), "t.ptx"))
p = plan_function(mod.func("k"), analyze_module(mod).funcs["k"], 90, ur_budget=3)
print(json.dumps({k: [w.file, w.why] for k, w in p.webs.items()}, sort_keys=True))
"""


def test_budget_ties_do_not_depend_on_the_hash_seed() -> None:
    """%r3 and %r4 are written by one instruction; with room for one of them the
    extraction keeps the first by name, whatever order a set of names iterates in."""
    outs = set()
    for seed in range(6):
        r = subprocess.run(
            [sys.executable, "-c", _SEEDED], input=TIED, capture_output=True, text=True,
            cwd=ROOT, env={"PYTHONHASHSEED": str(seed), "PATH": ""}, check=True,
        )  # fmt: skip
        outs.add(r.stdout)
    assert len(outs) == 1
    got = json.loads(outs.pop())
    assert got["%r3"][0] == "UR" and got["%r4"] == ["R", "over the uniform register budget"]


# -- rules read off the SASS of the corpus (docs/uniform-registers.md) ------------------

LOOP_CARRIED = _kernel(
    """ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd2, %rd1;
ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
mov.u32 %r3, %ctaid.x;
L1:
add.s32 %r4, %r3, %r2;
mul.wide.u32 %rd3, %r4, 4;
add.s64 %rd4, %rd2, %rd3;
st.global.u32 [%rd4], %r3;
add.s32 %r3, %r3, 1;
setp.lt.s32 %p1, %r3, %r1;
@%p1 bra L1;
"""
)


def test_loop_carried_web_pays_one_copy_to_r() -> None:
    """%r3 is written twice (a loop counter); its uniform readers (the increment and
    the compare) outnumber the per-thread one (the stored value): it stays UR and the
    store gets a UR2R copy (ptxas: ``IMAD.U32 R42, RZ, RZ, UR5``)."""
    p = _plan(LOOP_CARRIED, 90)
    assert p.webs["%r3"].file == "UR"
    assert any(b.kind == "UR2R" and b.reg == "%r3" for b in p.bridges)
    assert _plan(LOOP_CARRIED, 80).webs["%r3"].file == "UR"


def test_single_write_web_still_demoted_by_its_bridge() -> None:
    one_write = LOOP_CARRIED.replace("add.s32 %r3, %r3, 1;", "add.s32 %r5, %r3, 1;").replace(
        "setp.lt.s32 %p1, %r3, %r1;", "setp.lt.s32 %p1, %r5, %r1;"
    )
    assert _plan(one_write, 90).webs["%r3"].file == "R"


WIDE_MULTIPLY = _kernel(
    """ld.param.u64 %rd1, [p];
mov.u32 %r2, %ctaid.x;
cvt.u64.u32 %rd2, %r2;
add.s64 %rd3, %rd2, %rd1;
mul.lo.s64 %rd4, %rd3, %rd3;
mul.lo.s64 %rd5, %rd3, %rd2;
mul.hi.u64 %rd6, %rd3, %rd1;
add.s64 %rd7, %rd4, %rd5;
add.s64 %rd7, %rd7, %rd6;
st.global.u64 [%rd1], %rd7;
"""
)


def test_64_by_64_bit_multiply_of_uniform_values_is_uniform() -> None:
    """ptxas 13.0.88 computes this kernel's multiplies of two full 64-bit values in UR
    at sm_75, sm_80 and sm_90 alike (``UIMAD.WIDE.U32 UR4, UR12, UR10, URZ;
    UIMAD.WIDE.U32 UR8, UR13, UR14, URZ; ... UIMAD.WIDE.U32.X UR6, UR13, UR15, UR10,
    UP0``): the per-thread expansion belongs to kernels whose lanes rejoin
    unsynchronised after a spin loop (tests/ori/test_ur_spin.py)."""
    for sm in (75, 80, 90):
        p = _plan(WIDE_MULTIPLY, sm)
        assert p.webs["%rd4"].file == "UR" and p.webs["%rd6"].file == "UR"
        for r in ("%rd4", "%rd5", "%rd6"):
            assert "multiply" not in p.webs[r].why


ADDRESS_BASE = _kernel(
    """ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, %ctaid.x;
mul.wide.s32 %rd3, %r1, 16;
add.s64 %rd4, %rd2, %rd3;
add.s64 %rd5, %rd4, 512;
mov.u32 %r2, %tid.x;
st.global.u32 [%rd5], %r2;
"""
)


def test_address_base_plus_immediate_is_excluded() -> None:
    """The immediate of ``add.s64 %rd5, %rd4, 512`` folds into the store's offset
    (``[R16.64+0x200]``), so %rd4 is the per-thread address pair itself."""
    for sm in (80, 90):
        p = _plan(ADDRESS_BASE, sm)
        assert p.webs["%rd4"].file == "R"
        assert (
            p.webs["%rd4"].why == "64-bit global/generic address base (excluded operand category)"
        )
        assert p.webs["%rd5"].why == "64-bit global/generic address (excluded operand category)"


TMA_STORE = _kernel(
    """ld.param.u64 %rd1, [p];
mov.u32 %r1, %ctaid.x;
shl.b32 %r2, %r1, 6;
add.s32 %r3, %r2, 32;
mov.u32 %r4, 0;
mov.u32 %r5, %ctaid.y;
cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%rd1, {%r4, %r3, %r5}], [%r2];
"""
)


def test_tma_copy_reads_its_operands_from_ur() -> None:
    """``cp.async.bulk.tensor`` is UTMASTG/UTMALDG, whose coordinates and addresses
    are URs (``UIADD3 UR30, UR18, 0x20, URZ`` ... ``UTMASTG.3D [UR28], [UR32]``)."""
    p = _plan(TMA_STORE, 90)
    assert p.webs["%r3"].file == "UR" and p.webs["%r2"].file == "UR"
    assert not [b for b in p.bridges if b.reg in ("%r2", "%r3")]


BROADCAST = _kernel(
    """mov.u32 %r1, %tid.x;
shr.u32 %r2, %r1, 5;
shfl.sync.idx.b32 %r3, %r2, 0, 31, -1;
shl.b32 %r4, %r3, 11;
st.shared.u32 [%r4], %r1;
"""
)


def test_shuffle_broadcast_is_an_r2ur_of_its_source() -> None:
    """A shuffle from lane 0 is uniform; ptxas drops it and moves the source into UR
    (``R2UR UR22, R9``), so the chain reading it stays uniform."""
    for sm in (80, 90):
        p = _plan(BROADCAST, sm)
        assert p.webs["%r3"].file == "UR" and p.webs["%r4"].file == "UR"
        assert not [b for b in p.bridges if b.reg == "%r2"]


FOLDED_SHIFT = _kernel(
    """mov.u32 %r1, %ctaid.x;
ld.param.u32 %r2, [n];
shr.s32 %r3, %r1, %r2;
shl.b32 %r4, %r3, 7;
mov.u32 %r5, %tid.x;
add.s32 %r6, %r4, %r5;
ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd2, %rd1;
mul.wide.s32 %rd3, %r6, 4;
add.s64 %rd4, %rd2, %rd3;
st.global.u32 [%rd4], %r6;
"""
)


def test_shift_by_immediate_folds_into_the_add_and_takes_its_slot() -> None:
    """``shl %r4, %r3, 7; add %r6, %r4, %tid`` is one ``IMAD R, R_u, 0x80, R_tid``: the
    shift is no register and the immediate holds the IMAD's one UR slot, so %r3 (and
    %ctaid behind it) is computed in R (``S2R R0, SR_CTAID.X``)."""
    for sm in (80, 90):
        p = _plan(FOLDED_SHIFT, sm)
        assert p.webs["%r4"].why.startswith("multiply folded")
        assert p.webs["%r3"].file == "R" and p.webs["%r1"].file == "R"


# %r3 = %ctaid.x * n is uniform, and its one reader, the data of a store, takes no UR:
# in UR it would need a UR2R copy at the store, so it stays per-thread
STORED = _kernel(
    """ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, %ctaid.x;
ld.param.u32 %r2, [n];
mul.lo.s32 %r3, %r1, %r2;
mov.u32 %r4, %tid.x;
mul.wide.u32 %rd3, %r4, 4;
add.s64 %rd4, %rd2, %rd3;
st.global.u32 [%rd4], %r3;
"""
)


def test_report_names_the_bridges_a_demoted_web_would_need() -> None:
    """What keeping a uniform value in UR would take: the report lists, for a web its
    cost sent to R, the bridges that cost counted -- here the UR2R copy at the store
    -- and for every other uniform web kept per-thread its reason; converted webs and
    varying ones are not listed."""
    from ptxopt.ori.report import format_regfiles, regfiles_report

    lines = STORED.splitlines()
    store = next(i for i, t in enumerate(lines, 1) if t.startswith("st.global"))
    mul = next(i for i, t in enumerate(lines, 1) if t.startswith("mul.lo"))
    mod = lift_module(parse(STORED, "t.ptx"))
    md = analyze_module(mod)
    for arch in ("sm_80", "sm_90"):
        (f,) = regfiles_report(mod, md, arch)["functions"]
        assert f["would_need"]["%r3"] == [{"kind": "UR2R", "reg": "%r3", "line": store}], arch
        kept = {r["reg"]: r for r in f["uniform_kept_in_r"]}
        assert kept["%r3"] == {
            "line": mul,
            "reg": "%r3",
            "file": "R",
            "why": "needs bridges (cost 2)",
        }
        ur = {r["reg"] for r in f["regfiles"] if r["file"] in ("UR", "UP")}
        assert not ur & set(f["would_need"]) and not ur & set(kept), arch
        assert "%r4" not in kept and "%rd4" not in kept  # varying: not judged
        for k, bs in f["would_need"].items():
            assert kept[k]["why"].startswith("needs bridges") or kept[k]["why"].startswith(
                "a variable"
            )
            assert len(bs) == len({(b["kind"], b["reg"], b["line"]) for b in bs})
        text = format_regfiles(regfiles_report(mod, md, arch))
        assert (
            f"line {mul:>6}  %r3        R   kept: needs bridges (cost 2): UR2R %r3 at line {store}"
            in text
        ), text


def test_report_of_a_debug_target_says_once_why_nothing_is_uniform() -> None:
    from ptxopt.ori.report import format_regfiles, regfiles_report

    text = STORED.replace(".target sm_90", ".target sm_90, debug")
    mod = lift_module(parse(text, "t.ptx"))
    md = analyze_module(mod)
    rep = regfiles_report(mod, md, "sm_90")
    (f,) = rep["functions"]
    assert f["default_why"].startswith("debug target") and not f["uniform_kept_in_r"]
    assert not f["would_need"]
    out = format_regfiles(rep)
    assert out.count("every value per-thread: debug target") == 1 and "kept:" not in out


def test_would_need_lists_each_bridge_once_by_line() -> None:
    """A copy found through two readers is counted twice by the cost walk; what the
    report shows is each bridge once, in line order, and nothing for a web the cost
    did not demote."""
    from ptxopt.ori.ur_alloc import Bridge, FuncPlan

    found = [Bridge("UR2R", "%r3", 40), Bridge("R2UR", "%r1", 12), Bridge("UR2R", "%r3", 40)]
    p = FuncPlan("k", 90, needs={"%r3": found})
    assert p.would_need("%r3") == [Bridge("R2UR", "%r1", 12), Bridge("UR2R", "%r3", 40)]
    assert p.would_need("%r4") == []


def test_registers_named_like_the_carry_flag_get_their_rows() -> None:
    """``%cc`` / ``%ccx0`` are registers (ptxas accepts the names), not the carry
    flag: each write has its row, with the file of its web."""
    from ptxopt.ori.report import regfiles_report

    text = _kernel(
        "ld.param.u64 %rd1, [p];\nld.param.u32 %ccx0, [n];\nmov.u32 %ccx1, %ctaid.x;\n"
        "add.s32 %cc, %ccx0, %ccx1;\n"
        "add.cc.u32 %ccx2, %cc, 1;\naddc.u32 %r1, %ccx1, 0;\nmul.wide.u32 %rd2, %cc, 4;\n"
        "add.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r1;\n",
        ".reg .b32 %cc; .reg .b32 %ccx<3>; .reg .b32 %r<2>; .reg .b64 %rd<4>;",
    )
    lines = text.splitlines()
    mod = lift_module(parse(text, "t.ptx"))
    (f,) = regfiles_report(mod, analyze_module(mod), "sm_90")["functions"]
    rows = {r["reg"]: r for r in f["regfiles"]}
    for reg in ("%ccx0", "%ccx1", "%cc", "%ccx2", "%r1"):
        assert reg in rows, reg
        written = lines[rows[reg]["line"] - 1].split(None, 1)[1]
        assert written.startswith(reg + ","), (reg, written)
    assert rows["%ccx1"]["file"] == "UR"  # %ctaid.x, read by uniform adds
