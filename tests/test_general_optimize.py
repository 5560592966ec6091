"""general-optimize (GeneralOptimize / OriCopyProp, spec 03): every rule and knob on a
small kernel, each result checked by executing original and optimized PTX on edge
values in the interpreter (bit for bit) and, where ptxas is installed, by ptxas."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import ptxas_check

from ptxopt.driver import optimize
from ptxopt.ir.fold import evaluate, imm_bits, imm_for
from ptxopt.phases import resolve_named_phases
from ptxopt.pipeline import available_passes
from ptxopt.ptx.ast import Imm, Instr, Reg
from ptxopt.sim import differential

EDGE = [
    0, 1, 2, 3, 5, 7, 31, 32, 33, 63, 64, 0xFF, 0xFFFF, 0x10000,
    0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFFE, 0x7F800000, 0xFF800000,
    0x7FC00001, 0xFFC00000, 0x00000001, 0x807FFFFF, 0x3F800000, 0xBF800000, 0x4F000000,
    0xCF000000, 0x00800000, 0x12345678, 0xDEADBEEF,
]  # fmt: skip

HEAD = """.version 8.0
.target sm_80
.address_size 64
.global .align 4 .u32 gtab[8] = {1, 2, 3, 4, 5, 6, 7, 8};
.visible .entry k(.param .u64 pin, .param .u64 pout)
{
\t.reg .pred %p<8>;
\t.reg .b32 %r<40>;
\t.reg .f32 %f<10>;
\t.reg .b64 %rd<40>;
\tld.param.u64 %rd1, [pin];
\tld.param.u64 %rd2, [pout];
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd3, %r1, 4;
\tadd.s64 %rd4, %rd1, %rd3;
\tld.global.u32 %r2, [%rd4];
"""
TAIL = """\tadd.s64 %rd5, %rd2, %rd3;
\tst.global.u32 [%rd5], %r10;
\tret;
}
"""


def kernel(body: str) -> str:
    return HEAD + "".join(f"\t{line.strip()}\n" for line in body.strip().splitlines()) + TAIL


def _args(seed: int) -> list[object]:
    vals = np.array(EDGE, dtype=np.uint32)
    if seed:
        vals = np.random.default_rng(seed).permutation(vals)
    return [vals, np.zeros(32, dtype=np.uint32)]


def run(body: str, tmp_path: Path | None = None, **knobs: object) -> tuple[str, dict[str, int]]:
    """Optimize the kernel with ``body``; check it by execution (and ptxas); return the
    optimized text's instruction lines and the pass statistics."""
    text = kernel(body)
    res = optimize(text, "t.ptx", ["general-optimize"], verify_each=True, knobs=knobs)
    diff = differential(text, res.text, "k", 1, 32, _args, trials=2)
    assert diff.ok, diff.message
    if tmp_path is not None:
        ptxas_check(res.text, "sm_80", tmp_path)
    body_out = res.text.split("mul.wide.u32", 1)[1].rsplit("add.s64", 1)[0]
    body_out = body_out.replace("add.s64 \t%rd4, %rd1, %rd3;", "")
    return body_out, dict(res.report.stats.get("general-optimize", {}))


def count(text: str, opcode: str) -> int:
    return len(re.findall(rf"^\s*(@!?%\w+\s+)?{re.escape(opcode)}\b", text, re.M))


# -- constant evaluation (the interpreter's semantics) ---------------------------


@pytest.mark.parametrize(
    ("ins", "types", "inputs", "want"),
    [
        (("add", (".sat", ".s32")), (".s32", ".s32"), (0x7FFFFFFF, 5), 0x7FFFFFFF),
        (("add", (".s32",)), (".s32", ".s32"), (0x7FFFFFFF, 1), 0x80000000),
        (("shl", (".b32",)), (".b32", ".u32"), (3, 40), 0),
        (("shr", (".s32",)), (".s32", ".u32"), (0x80000000, 40), 0xFFFFFFFF),
        (("mul", (".hi", ".u32")), (".u32", ".u32"), (0xFFFFFFFF, 0xFFFFFFFF), 0xFFFFFFFE),
        (("add", (".f32",)), (".f32", ".f32"), (0x7FC00001, 0x3F800000), 0x7FFFFFFF),
        (("add", (".ftz", ".f32")), (".f32", ".f32"), (0x00000001, 0x00000000), 0),
        (("add", (".rz", ".f32")), (".f32", ".f32"), (0x3F800000, 0x33800001), 0x3F800000),
        (("add", (".rp", ".f32")), (".f32", ".f32"), (0x3F800000, 0x33800001), 0x3F800001),
        (("min", (".s32",)), (".s32", ".s32"), (0x80000000, 0x7FFFFFFF), 0x80000000),
    ],
)
def test_evaluate_edge_semantics(
    ins: tuple[str, tuple[str, ...]], types: tuple[str, str], inputs: tuple[int, int], want: int
) -> None:
    opc, mods = ins
    i = Instr(opc, mods, [Reg("%d"), Reg("%a"), Reg("%b")])
    out = evaluate(
        i,
        {"%d": types[0], "%a": types[0], "%b": types[1]},
        dict(zip(("%a", "%b"), inputs, strict=True)),
    )
    assert out is not None and int(out["%d"][0]) == want


def test_evaluate_refuses_what_it_cannot_fold() -> None:
    t = {"%d": ".f32", "%a": ".f32"}
    assert evaluate(Instr("sin", (".approx", ".f32"), [Reg("%d"), Reg("%a")]), t, {}) is None
    t2 = {"%d": ".u32", "%a": ".u32", "%b": ".u32"}
    assert evaluate(Instr("div", (".u32",), [Reg("%d"), Reg("%a"), Reg("%b")]), t2, {}) is None
    assert evaluate(Instr("ld", (".global", ".u32"), [Reg("%d"), Reg("%a")]), t2, {}) is None


def test_immediates_round_trip() -> None:
    for t, bits in [(".f32", 0x7FC00001), (".s32", 0xFFFFFFFF), (".u64", 2**63), (".f64", 1)]:
        imm = imm_for(bits, t)
        assert imm is not None and imm_bits(imm, t) == bits
    assert imm_for(1, ".f16") is None and imm_for(1, ".pred") is None
    assert imm_bits(Imm(-1, "-1"), ".u16") == 0xFFFF


def test_folding_matches_execution(tmp_path: Path) -> None:
    """Constant chains with wrap-around, saturation, NaN payloads, rounding and
    out-of-range shifts fold to immediates that execute like the original."""
    out, st = run(
        """
        mov.u32 %r3, 0x7fffffff;
        add.sat.s32 %r4, %r3, 9;
        add.s32 %r5, %r3, 9;
        shl.b32 %r6, %r5, 33;
        shr.s32 %r7, %r5, 40;
        mov.b32 %f1, 0f7FC00001;
        add.f32 %f2, %f1, %f1;
        mov.b32 %r8, %f2;
        cvt.rni.s32.f32 %r9, 0f4F800000;
        mov.f32 %f3, 0f3F800000;
        add.rp.f32 %f4, %f3, 0f33800001;
        mov.b32 %r11, %f4;
        xor.b32 %r12, %r4, %r5;
        add.s32 %r13, %r12, %r6;
        add.s32 %r14, %r13, %r7;
        add.s32 %r15, %r14, %r8;
        add.s32 %r16, %r15, %r9;
        add.s32 %r17, %r16, %r11;
        add.s32 %r10, %r17, %r2;
        """,
        tmp_path,
    )
    assert st.get("instructions folded", 0) >= 10
    assert count(out, "add") == 1 and count(out, "cvt") == 0 and count(out, "xor") == 0


# -- algebraic rules -------------------------------------------------------------

RULES = {
    "add_zero": ("add.s32 %r10, %r2, 0;", "add", 0),
    "sub_self": ("sub.s32 %r3, %r2, %r2; or.b32 %r10, %r3, %r1;", "sub", 0),
    "mul_one": ("mul.lo.s32 %r10, %r2, 1;", "mul", 0),
    "mul_zero": ("mul.lo.u32 %r3, %r2, 0; add.s32 %r10, %r3, %r1;", "mul", 0),
    "and_ones": ("and.b32 %r10, %r2, -1;", "and", 0),
    "and_zero": ("and.b32 %r3, %r2, 0; add.s32 %r10, %r3, %r1;", "and", 0),
    "or_zero": ("or.b32 %r10, %r2, 0;", "or", 0),
    "or_ones": ("or.b32 %r3, %r2, -1; add.s32 %r10, %r3, %r1;", "or", 0),
    "xor_self": ("xor.b32 %r3, %r2, %r2; add.s32 %r10, %r3, %r1;", "xor", 0),
    "max_self": ("max.s32 %r10, %r2, %r2;", "max", 0),
    "shl_zero": ("shl.b32 %r10, %r2, 0;", "shl", 0),
    "shl_past": ("shl.b32 %r3, %r2, 32; add.s32 %r10, %r3, %r1;", "shl", 0),
    "shr_past": ("shr.u32 %r3, %r2, 77; add.s32 %r10, %r3, %r1;", "shr", 0),
    "shr_s_kept": ("shr.s32 %r10, %r2, 77;", "shr", 1),
    "selp_same": ("setp.lt.s32 %p1, %r2, 5; selp.b32 %r10, %r2, %r2, %p1;", "selp", 0),
    "add_chain": ("add.s32 %r3, %r2, 5; add.s32 %r10, %r3, -7;", "add", 1),
    "sat_kept": ("add.sat.s32 %r10, %r2, 0;", "add", 1),
    "roundtrip": (
        "setp.lt.s32 %p1, %r2, 5; selp.u32 %r3, 1, 0, %p1; setp.ne.u32 %p2, %r3, 0;"
        " selp.b32 %r10, %r2, %r1, %p2;",
        "setp",
        1,
    ),
    "roundtrip_eq": (
        "setp.lt.s32 %p1, %r2, 5; selp.u32 %r3, 1, 0, %p1; setp.eq.u32 %p2, %r3, 0;"
        " selp.b32 %r10, %r2, %r1, %p2;",
        "setp",
        1,
    ),
    "trunc_ext": ("cvt.s64.s32 %rd6, %r2; cvt.u32.u64 %r10, %rd6;", "cvt", 0),
    "ext_ext": (
        "cvt.u16.u32 %rs1, %r2; cvt.u32.u16 %r3, %rs1; cvt.u64.u32 %rd6, %r3;"
        " cvt.u32.u64 %r10, %rd6;",
        "cvt",
        3,
    ),
    "cvt_same": ("cvt.u32.u32 %r10, %r2;", "cvt", 0),
    "addr_shl": (
        "cvt.s64.s32 %rd6, %r2; shl.b64 %rd7, %rd6, 2; add.s64 %rd8, %rd7, 3;"
        " cvt.u32.u64 %r10, %rd8;",
        "shl",
        0,
    ),
    "addr_mul": (
        "cvt.u64.u32 %rd6, %r2; mul.lo.s64 %rd7, %rd6, 12; cvt.u32.u64 %r3, %rd7;"
        " mul.hi.u64 %rd8, %rd7, 3; cvt.u32.u64 %r4, %rd8; xor.b32 %r10, %r3, %r4;",
        "cvt",
        2,
    ),
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_is_exact_on_edge_values(rule: str) -> None:
    body, opcode, left = RULES[rule]
    body = body.replace("%rs1", "%rs1")
    if "%rs" in body:
        body = ".reg .b16 %rs<4>;\n" + body
    wide = {"GeneralOptimizeWideMul": True} if rule.startswith("addr_") else {}
    out, _ = run(body.replace("; ", ";\n"), **wide)
    assert count(out, opcode) == left, out
    if rule.startswith("addr_"):
        assert count(out, "mul.wide") >= 1, out


# -- copy propagation and its knobs ------------------------------------------------


def test_registered_with_spec_knobs() -> None:
    cls = available_passes()["general-optimize"]
    names = {k.name for k in cls.knobs}
    for n in (
        "CopyPropBudget", "CopyPropGlobalBudget", "CopyPropForceGlobal", "CopyPropAddr",
        "CopyPropConstantBank", "CopyPropUseReachingDefs", "CopyPropPreAllocReg",
        "CopyPropNoWriteNonRR", "CopyPropNonRegMultiDef", "CopyPropNoMmaCb",
        "LateCopyPropComplPred", "GeneralOptimizeSubPasses",
    ):  # fmt: skip
        assert n in names


def test_oricopyprop_alias_runs_copy_prop_only() -> None:
    (step,) = resolve_named_phases(["OriCopyProp"], available_passes())
    assert step.knobs == {"GeneralOptimizeSubPasses": "copy-prop"}
    body = "mov.u32 %r3, %r2; add.s32 %r4, %r3, 0; mov.u32 %r10, %r4;"
    out, st = run(body, GeneralOptimizeSubPasses="copy-prop")
    assert st.get("copies propagated", 0) >= 1 and "dead instructions removed" not in st
    assert count(out, "add") == 1  # no simplification
    full, _ = run(body)
    assert count(full, "add") == 0 and count(full, "mov") < count(out, "mov")


def test_unknown_subpass_is_an_error() -> None:
    with pytest.raises(ValueError, match="GeneralOptimizeSubPasses"):
        run("mov.u32 %r10, %r2;", GeneralOptimizeSubPasses="copy-prop,bogus")


def test_copy_prop_budget() -> None:
    body = "mov.u32 %r3, %r2; add.s32 %r10, %r3, 1;"
    _, st = run(body, CopyPropBudget=0, GeneralOptimizeSubPasses="copy-prop")
    assert st.get("CopyPropBudget reached") and "copies propagated" not in st
    _, st = run(body, GeneralOptimizeSubPasses="copy-prop")
    assert st.get("copies propagated")


GLOBAL = """
mov.u32 %r3, %r2;
setp.eq.s32 %p1, %r1, 3;
@%p1 bra $L_skip;
add.s32 %r4, %r3, 1;
$L_skip:
add.s32 %r10, %r3, 2;
"""


def test_global_budget_and_force_global() -> None:
    _, st = run(GLOBAL, CopyPropGlobalBudget=0)
    assert st.get("CopyPropGlobalBudget reached")
    _, st2 = run(GLOBAL, CopyPropGlobalBudget=0, CopyPropForceGlobal=True)
    assert "CopyPropGlobalBudget reached" not in st2
    assert st2["copies propagated"] > st.get("copies propagated", 0)


def test_copy_prop_addr() -> None:
    body = "add.s64 %rd6, %rd4, 8; ld.global.u32 %r3, [%rd6+4]; add.s32 %r10, %r3, %r2;"
    on, _ = run(body)
    assert "[%rd4+12]" in on
    off, _ = run(body, CopyPropAddr=False)
    assert "[%rd4+12]" not in off and "+4]" in off


def test_copy_prop_constant_bank() -> None:
    body = "mov.u64 %rd6, gtab; ld.global.u32 %r3, [%rd6+8]; add.s32 %r10, %r3, %r2;"
    on, st = run(body)
    assert "[gtab+8]" in on and st.get("variable addresses propagated") == 1
    off, _ = run(body, CopyPropConstantBank=False)
    assert "[gtab+8]" not in off


DIAMOND = """
setp.eq.s32 %p1, %r1, 3;
@%p1 bra $L_a;
mov.u32 %r3, %r2;
bra.uni $L_j;
$L_a:
mov.u32 %r3, %r2;
$L_j:
add.s32 %r10, %r3, 1;
"""


def test_reaching_defs_see_through_phis() -> None:
    on, st = run(DIAMOND)
    assert st.get("phis resolved") and "%r2, 1" in on
    off, st2 = run(DIAMOND, CopyPropUseReachingDefs=False)
    assert "phis resolved" not in st2 and "%r2, 1" not in off


def test_prealloc_reg_special_registers() -> None:
    body = "mov.u32 %r3, %ctaid.x; cvt.u64.u32 %rd6, %r3; cvt.u32.u64 %r4, %rd6;"
    body += " add.s32 %r10, %r4, %r2;"
    on, _ = run(body, GeneralOptimizeSubPasses="copy-prop,dce")
    assert re.search(r"cvt.u64.u32\s+%rd6, %ctaid.x", on)
    off, _ = run(body, CopyPropPreAllocReg=False, GeneralOptimizeSubPasses="copy-prop,dce")
    assert "%ctaid.x" in off and not re.search(r"cvt.u64.u32\s+%rd6, %ctaid.x", off)


def test_special_register_is_not_read_twice() -> None:
    """A copy of a special register that something else still reads stays the one
    read: ptxas does not common two reads of ``%ntid.x`` (saxpy_gs, sm_90: +1 SASS)."""
    body = "mov.u32 %r3, %ctaid.x; cvt.u64.u32 %rd6, %r3; cvt.u32.u64 %r4, %rd6;"
    body += " add.s32 %r5, %r4, %r3; add.s32 %r10, %r5, %r2;"
    kept, _ = run(body, GeneralOptimizeSubPasses="copy-prop,dce")
    assert kept.count("%ctaid.x") == 1 and re.search(r"cvt.u64.u32\s+%rd6, %r3;", kept)
    # ... also when the other reader goes through a copy of the copy
    body = "mov.u32 %r3, %ctaid.x; mov.u32 %r6, %r3; cvt.u64.u32 %rd6, %r3;"
    body += " cvt.u32.u64 %r4, %rd6; add.s32 %r5, %r4, %r6; add.s32 %r10, %r5, %r2;"
    kept, _ = run(body, GeneralOptimizeSubPasses="copy-prop,dce")
    assert kept.count("%ctaid.x") == 1


def test_no_write_non_rr() -> None:
    body = "mov.u32 %r3, 7; add.s32 %r10, %r2, %r3;"
    on, _ = run(body)
    assert re.search(r"add\.s32\s+%r10, %r2, 7", on)
    off, _ = run(body, CopyPropNoWriteNonRR=True)
    assert not re.search(r"add\.s32\s+%r10, %r2, 7", off)


PRED = """
setp.lt.u32 %p1, %r2, 100;
add.s32 %r5, %r2, 3;
mov.u32 %r3, %r5;
@%p1 mov.u32 %r3, %r2;
mov.u32 %r4, 0;
@%p1 add.s32 %r4, %r3, 5;
@!%p1 add.s32 %r4, %r3, 9;
mov.u32 %r6, %r2;
@%p1 mov.u32 %r6, 7;
mov.u32 %r7, 0;
@%p1 add.s32 %r7, %r6, 1;
add.s32 %r8, %r4, %r7;
add.s32 %r10, %r8, %r3;
"""


def test_predicated_copies_under_matching_guard() -> None:
    out, _ = run(PRED)
    assert re.search(r"@%p1 add\.s32\s+%\w+, %r2, 5", out), out
    off, _ = run(PRED, CopyPropNonRegMultiDef=False)
    assert not re.search(r"@%p1 add\.s32\s+%\w+, %r2, 5", off)


def _reads_merged_value(out: str) -> bool:
    """Does ``@!%p1 add ..., R, 9`` read a register that ``@%p1`` rewrote before it (the
    merged value of the predicated copy) rather than the unguarded ``%r2 + 3``?"""
    m = re.search(r"@!%p1 add\.s32\s+%\w+, (%\w+), 9", out)
    assert m, out
    before = out[: m.start()]
    return re.search(rf"@%p1 mov\.u32\s+{re.escape(m.group(1))},", before) is not None


def test_complementary_predicate() -> None:
    """Under the opposite guard the predicated copy did not happen, so the instruction
    reads the value the copy would have replaced (register names are leaving SSA's)."""
    out, _ = run(PRED)
    assert not _reads_merged_value(out), out
    off, _ = run(PRED, LateCopyPropComplPred=False)
    assert _reads_merged_value(off), off


def test_selp_with_constant_condition_and_constant_guards() -> None:
    body = """
    setp.eq.u32 %p1, 3, 3;
    selp.b32 %r3, %r2, %r1, %p1;
    @%p1 add.s32 %r4, %r3, 1;
    @!%p1 st.global.u32 [%rd4], %r3;
    add.s32 %r10, %r4, %r3;
    """
    out, st = run(body)
    assert count(out, "selp") == 0 and count(out, "setp") == 0 and count(out, "st.global") == 0
    assert st.get("guards removed") and st.get("never-executed instructions removed")


def test_fixed_point_budget() -> None:
    body = "mov.u32 %r3, %r2; add.s32 %r4, %r3, 0; add.s32 %r5, %r4, 0; mov.u32 %r10, %r5;"
    _, st = run(body, GeneralOptimizeIterations=1)
    assert st.get("GeneralOptimizeIterations reached") == 1
    _, st = run(body)
    assert "GeneralOptimizeIterations reached" not in st


def test_dce_keeps_side_effects() -> None:
    out, st = run("add.s32 %r3, %r2, 1; atom.global.add.u32 %r4, [%rd4], 1; mov.u32 %r10, %r2;")
    assert count(out, "atom.global.add") == 1 and st.get("dead instructions removed")


def test_no_mma_cb(tmp_path: Path) -> None:
    """Copies reach tensor-core operands unless CopyPropNoMmaCb; immediates never do."""
    body = """
    mov.u32 %r3, %r2;
    mov.u32 %r4, 0;
    mov.f32 %f1, 0f00000000;
    mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f2, %f3, %f4, %f5}, {%r3, %r3},
        {%r4}, {%f1, %f1, %f1, %f1};
    mov.b32 %r10, %f2;
    """
    text = kernel(body)
    on = optimize(text, "t.ptx", ["general-optimize"]).text
    assert re.search(r"\{%r2, %r2\}, \{%r4\}", on) and "0f00000000, " not in on
    ptxas_check(on, "sm_80", tmp_path)
    off = optimize(text, "t.ptx", ["general-optimize"], knobs={"CopyPropNoMmaCb": True}).text
    assert re.search(r"\{%r3, %r3\}", off)


def test_never_executed_write_over_a_special_register_copy() -> None:
    """Regression (fuzz seed 200210): the value left by a removed guarded write is a
    copy of %laneid; instructions that cannot read special registers read the copy."""
    body = """
    mov.u32 %r3, %laneid;
    mov.u32 %r4, 1;
    setp.eq.u32 %p1, %r4, 2;
    @%p1 add.s32 %r3, %r2, 1;
    abs.s32 %r5, %r3;
    add.s32 %r10, %r5, %r2;
    """
    out, st = run(body)
    assert st.get("never-executed instructions removed") == 1 and count(out, "abs") == 1


def test_never_executed_write_feeding_a_loop_phi() -> None:
    """Regression (fuzz seed 300303): a removed guarded write whose value reached a phi
    of its own register; the phi must read the value it kept."""
    body = """
    mov.u32 %r3, %r2;
    mov.u32 %r4, 0;
    mov.u32 %r5, 1;
    setp.eq.u32 %p2, %r5, 2;
    $L__BB0_1:
    add.s32 %r10, %r3, %r4;
    add.s32 %r6, %r10, 1;
    mov.u32 %r3, %r6;
    @%p2 add.s32 %r3, %r3, 1;
    add.s32 %r4, %r4, 1;
    setp.lt.u32 %p1, %r4, 3;
    @%p1 bra $L__BB0_1;
    add.s32 %r10, %r3, %r4;
    """
    out, st = run(body)
    assert st.get("never-executed instructions removed") == 1


def test_wide_mul_rule_is_off_by_default() -> None:
    body = "cvt.s64.s32 %rd6, %r2;\nshl.b64 %rd7, %rd6, 2;\ncvt.u32.u64 %r10, %rd7;"
    out, _ = run(body)
    assert count(out, "shl") == 1 and count(out, "mul.wide") == 0


def test_bitfield_position_out_of_immediate_range_stays_a_register(tmp_path: Path) -> None:
    """Fuzz seed 20056: ptxas takes an immediate bfi/bfe position or length only in
    0..255, so a larger constant is not copied into that slot (found by the fuzzer)."""
    body = """
    mov.u32 %r3, 65536;
    bfi.b32 %r4, %r2, %r1, %r3, %r3;
    mov.u32 %r5, 7;
    bfe.u32 %r6, %r4, %r5, %r3;
    add.s32 %r10, %r4, %r6;
    """
    out, _ = run(body, tmp_path)
    assert not re.search(r"bf[ie]\.\w+\s+[^;]*65536", out), out
    assert re.search(r"bfe\.u32\s+%\w+, %\w+, 7, %\w+", out), out


BARRIER = """.version 8.0
.target sm_90
.address_size 64

.shared .align 8 .b8 smem[24];

.visible .entry k(.param .u64 k_out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [k_out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  mov.b32 %r2, smem;
  add.s32 %r3, %r2, 8;
  setp.eq.s32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared.b64 [%r3], 1;
  @%p1 st.shared.u32 [%r2], %r1;
  bar.sync 0;
  ld.shared.u32 %r4, [%r2];
  @%p1 mbarrier.arrive.shared.b64 %rd2, [%r3];
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r4;
  ret;
}
"""


def test_barrier_addresses_keep_their_register(tmp_path: Path) -> None:
    """A shared variable's address goes into loads and stores, not into mbarrier
    operands (where ptxas -O3 made the Hopper FP8 GEMM 43 SASS instructions longer)."""
    res = optimize(BARRIER, "b.ptx", ["general-optimize"], verify_each=True)
    text = res.text
    assert "ld.shared.u32 \t%r4, [smem]" in text or "[smem+0]" in text
    assert "mbarrier.init.shared.b64 \t[%r2+8]" in text
    assert "mbarrier.arrive.shared.b64 \t%rd2, [%r2+8]" in text
    assert "[smem+8]" not in text
    diff = differential(BARRIER, text, "k", 1, 32, lambda s, g, b: [np.zeros(g * b, np.uint32)])
    assert diff.ok, diff.message
    ptxas_check(text, "sm_90", tmp_path)


def test_tied_tensor_accumulators_keep_their_registers(tmp_path: Path) -> None:
    """A wgmma accumulator is read and written in one register: a copy propagated
    into it has to be copied back by the lowering.  On cutlass/hopper_fp8_gemm
    (sm_90a) that turned 64 zeroed accumulators into copies of one register and
    ptxas -O3 made 3,419 SASS instructions 3,932; left alone, 3,418."""
    src = (Path(__file__).parent / "ptx" / "tensor" / "wgmma_tied_accumulator.ptx").read_text()
    res = optimize(src, "w.ptx", ["general-optimize"], verify_each=True)
    line = next(x for x in res.text.splitlines() if "wgmma.mma_async" in x)
    assert "{%f2, %f3, %f4, %f5}" in line
    ptxas_check(res.text, "sm_90a", tmp_path)


def test_fixed_point_runs_skipped_with_the_same_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A later placement on a function nothing changed since general-optimize left it at
    a fixed point is not rerun, but counts what the rerun would (here the selp whose
    constant condition is seen in every round), and changes the same nothing."""
    from ptxopt.ir.lift import lift_module
    from ptxopt.ir.lower import print_ir_module
    from ptxopt.pipeline import parse_pipeline, run_pipeline
    from ptxopt.ptx.parser import parse

    text = kernel(
        """
        ld.global.f32 %f1, [%rd4];
        ld.global.f32 %f2, [%rd4+4];
        mov.pred %p1, 1;
        selp.b32 %r9, %f1, %f2, %p1;
        mov.b32 %r3, %r2;
        add.u32 %r10, %r9, %r3;
        """
    )
    steps = "general-optimize@13,gvn-cse@49,general-optimize@29"

    def lifted():  # type: ignore[no-untyped-def]
        return lift_module(parse(text, "k.ptx"))

    import ptxopt.transforms.general_optimize as go

    sweeps: list[int] = []
    real = go._Sweep.run

    def counting(self, *args):  # type: ignore[no-untyped-def]
        sweeps.append(1)
        return real(self, *args)

    monkeypatch.setattr(go._Sweep, "run", counting)
    one = lifted()
    report = run_pipeline(one, parse_pipeline(steps))
    assert report.changed["general-optimize@13"] == 1
    assert report.changed["gvn-cse@49"] == 0
    assert len(sweeps) == 2  # the rounds of @13; @29 is not rerun
    # the same steps, each in its own pipeline run: nothing is remembered between them
    other = lifted()
    counts = {}
    for step in steps.split(","):
        counts.update(run_pipeline(other, parse_pipeline(step)).stats)
    assert counts["general-optimize@29"]["selp with constant condition"] == 1
    assert report.stats == counts
    assert print_ir_module(one) == print_ir_module(other)
