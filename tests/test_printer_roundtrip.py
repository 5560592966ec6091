"""The printer keeps every modifier and type: instruction forms enumerated over the
modifier families of the opcode table (rounding, ``.ftz``, ``.sat``, ``.NaN``,
comparison and boolean operators, state spaces, cache operators, vector widths,
memory orderings and scopes, atomic operations, conversions between every pair of
types) round-trip through the parser and printer, and through lifting and lowering,
with the full opcode spelled exactly as written.  ptxas accepts every form, so the
enumeration is real PTX."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest
from helpers import ptxas_check

from ptxopt.driver import optimize
from ptxopt.ptx.ast import Imm, Instr, Scope, Sym
from ptxopt.ptx.parser import parse
from ptxopt.ptx.printer import _operand, format_instr

RND = (".rn", ".rz", ".rm", ".rp")
IRND = (".rni", ".rzi", ".rmi", ".rpi")
# register of each type
REG = {
    "f32": "%f1", "f64": "%fd1", "f16": "%h1", "f16x2": "%r1", "bf16": "%h1", "bf16x2": "%r1",
    "s8": "%r1", "u8": "%r1", "s16": "%h1", "u16": "%h1", "b16": "%h1", "s32": "%r1",
    "u32": "%r1", "b32": "%r1", "s64": "%rd1", "u64": "%rd1", "b64": "%rd1", "pred": "%p1",
}  # fmt: skip
SRC = {k: v.replace("1", "2") for k, v in REG.items()}


def _float_forms() -> list[str]:
    out = []
    for op, rnd, ftz, sat in itertools.product(("add", "sub", "mul"), ("", *RND), ("", ".ftz"),
                                               ("", ".sat")):  # fmt: skip
        out.append(f"{op}{rnd}{ftz}{sat}.f32 %f1, %f2, %f3;")
    for rnd, ftz, sat in itertools.product(RND, ("", ".ftz"), ("", ".sat")):
        out.append(f"fma{rnd}{ftz}{sat}.f32 %f1, %f2, %f3, %f1;")
        out.append(f"mad{rnd}{ftz}{sat}.f32 %f1, %f2, %f3, %f1;")
    for ftz in ("", ".ftz"):
        out += [f"div{r}{ftz}.f32 %f1, %f2, %f3;" for r in (".approx", ".full", *RND)]
        out += [f"sqrt{r}{ftz}.f32 %f1, %f2;" for r in (".approx", *RND)]
        out += [f"rcp{r}{ftz}.f32 %f1, %f2;" for r in (".approx", *RND)]
        out += [f"{op}.approx{ftz}.f32 %f1, %f2;" for op in ("rsqrt", "sin", "cos", "lg2", "ex2")]
        out += [f"{op}{ftz}{nan}.f32 %f1, %f2, %f3;" for op in ("min", "max")
                for nan in ("", ".NaN")]  # fmt: skip
        out += [f"{op}{ftz}.f32 %f1, %f2;" for op in ("abs", "neg")]
    out.append("tanh.approx.f32 %f1, %f2;")
    out.append("copysign.f32 %f1, %f2, %f3;")
    out += [f"testp.{t}.f32 %p1, %f2;" for t in ("finite", "infinite", "number", "notanumber",
                                                 "normal", "subnormal")]  # fmt: skip
    for op, rnd in itertools.product(("add", "sub", "mul"), ("", *RND)):
        out.append(f"{op}{rnd}.f64 %fd1, %fd2, %fd3;")
    out += [f"fma{r}.f64 %fd1, %fd2, %fd3, %fd1;" for r in RND]
    out += [f"div{r}.f64 %fd1, %fd2, %fd3;" for r in RND]
    out += [f"sqrt{r}.f64 %fd1, %fd2;" for r in RND]
    out += [f"rcp{r}.f64 %fd1, %fd2;" for r in RND]
    out += ["rcp.approx.ftz.f64 %fd1, %fd2;", "rsqrt.approx.f64 %fd1, %fd2;"]
    out += [f"{op}.f64 %fd1, %fd2, %fd3;" for op in ("min", "max")]
    out += [f"{op}.f64 %fd1, %fd2;" for op in ("abs", "neg")]
    for op, rnd, ftz, sat in itertools.product(("add", "sub", "mul"), ("", ".rn"), ("", ".ftz"),
                                               ("", ".sat")):  # fmt: skip
        out.append(f"{op}{rnd}{ftz}{sat}.f16 %h1, %h2, %h3;")
        out.append(f"{op}{rnd}{ftz}{sat}.f16x2 %r1, %r2, %r3;")
    out += [f"fma.rn{ftz}{sat}.f16x2 %r1, %r2, %r3, %r1;" for ftz in ("", ".ftz")
            for sat in ("", ".sat")]  # fmt: skip
    return out


def _int_forms() -> list[str]:
    out = []
    for t in ("s16", "u16", "s32", "u32", "s64", "u64"):
        r, s = REG[t], SRC[t]
        out += [f"{op}.{t} {r}, {s}, {s};" for op in ("add", "sub", "min", "max", "div", "rem")]
        out += [f"mul.{m}.{t} {r}, {s}, {s};" for m in ("lo", "hi")]
        out += [f"mad.{m}.{t} {r}, {s}, {s}, {r};" for m in ("lo", "hi")]
        if t in ("s32", "u32", "s64", "u64"):
            out += [f"{op}.cc.{t} {r}, {s}, {s};" for op in ("add", "sub")]
            out += [f"{op}c{cc}.{t} {r}, {s}, {s};" for op in ("add", "sub") for cc in ("", ".cc")]
        if t[0] == "s":
            out += [f"{op}.{t} {r}, {s};" for op in ("abs", "neg")]
    out += ["add.sat.s32 %r1, %r2, %r2;", "sub.sat.s32 %r1, %r2, %r2;",
            "mad.hi.sat.s32 %r1, %r2, %r2, %r1;", "mul.wide.s32 %rd1, %r2, %r2;",
            "mul.wide.u16 %r1, %h2, %h2;", "mad.wide.u32 %rd1, %r2, %r2, %rd1;",
            "mul24.hi.s32 %r1, %r2, %r2;", "mad24.lo.u32 %r1, %r2, %r2, %r1;",
            "madc.hi.cc.u32 %r1, %r2, %r2, %r1;", "sad.u32 %r1, %r2, %r2, %r1;"]  # fmt: skip
    for t in ("b16", "b32", "b64"):
        r, s = REG[t], SRC[t]
        out += [f"{op}.{t} {r}, {s}, {s};" for op in ("and", "or", "xor")]
        out += [f"{op}.{t} {r}, {s};" for op in ("not", "cnot")]
        out += [f"shl.{t} {r}, {s}, %r2;"]
    out += [f"shr.{t} {REG[t]}, {SRC[t]}, %r2;" for t in ("s16", "u32", "s64", "b32")]
    out += [f"shf.{d}.{m}.b32 %r1, %r2, %r3, %r2;" for d in ("l", "r") for m in ("wrap", "clamp")]
    out += [f"prmt.b32{m} %r1, %r2, %r3, %r2;" for m in ("", ".f4e", ".b4e", ".rc8", ".ecl",
                                                         ".ecr", ".rc16")]  # fmt: skip
    out += [f"{op}.{t} %r1, {SRC[t]};" for op in ("popc", "clz") for t in ("b32", "b64")]
    out += [f"bfind{sh}.{t} %r1, {SRC[t]};" for sh in ("", ".shiftamt")
            for t in ("u32", "s32", "u64", "s64")]  # fmt: skip
    out += ["brev.b32 %r1, %r2;", "brev.b64 %rd1, %rd2;", "bfe.s64 %rd1, %rd2, %r2, %r3;",
            "bfi.b32 %r1, %r2, %r3, %r2, %r3;", "lop3.b32 %r1, %r2, %r3, %r2, 0x96;",
            "dp4a.s32.u32 %r1, %r2, %r3, %r1;", "dp2a.hi.u32.s32 %r1, %r2, %r3, %r1;"]  # fmt: skip
    return out


def _compare_forms() -> list[str]:
    out = []
    for cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
        for t in ("s32", "u64", "s16"):
            out.append(f"setp.{cmp}.{t} %p1, {SRC[t]}, {SRC[t]};")
    for cmp in ("lo", "ls", "hi", "hs"):
        out.append(f"setp.{cmp}.u32 %p1, %r2, %r3;")
    for cmp in ("equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan", "lt"):
        for ftz in ("", ".ftz"):
            out.append(f"setp.{cmp}{ftz}.f32 %p1|%p2, %f2, %f3;")
        out.append(f"setp.{cmp}.f64 %p1, %fd2, %fd3;")
    for b in ("and", "or", "xor"):
        out.append(f"setp.lt.{b}.s32 %p1, %r2, %r3, !%p3;")
        out.append(f"set.gt.{b}.u32.f32 %r1, %f2, %f3, %p3;")
        out.append(f"{b}.pred %p1, %p2, %p3;")
    out += ["selp.f32 %f1, %f2, %f3, %p2;", "slct.ftz.f32.f32 %f1, %f2, %f3, %f2;",
            "slct.s32.s32 %r1, %r2, %r3, %r2;"]  # fmt: skip
    return out


INT_TYPES = ("s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64")


def _cvt_forms() -> list[str]:
    out = []
    for d, s in itertools.product(INT_TYPES, INT_TYPES):
        out.append(f"cvt.{d}.{s} {REG[d]}, {SRC[s]};")
    out += ["cvt.sat.s8.s32 %r1, %r2;", "cvt.sat.u16.s64 %h1, %rd2;"]
    for f in ("f32", "f64"):
        for i in ("s32", "u64", "s16"):
            out += [f"cvt{r}.{i}.{f} {REG[i]}, {SRC[f]};" for r in IRND]
            out += [f"cvt{r}.{f}.{i} {REG[f]}, {SRC[i]};" for r in RND]
        out.append(f"cvt.rzi.sat.u32.{f} %r1, {SRC[f]};")
    out += [f"cvt{r}{ftz}.f32.f32 %f1, %f2;" for r in IRND for ftz in ("", ".ftz")]
    out += [f"cvt{r}{ftz}{sat}.f32.f64 %f1, %fd2;" for r in RND for ftz in ("", ".ftz")
            for sat in ("", ".sat")]  # fmt: skip
    out += ["cvt.f64.f32 %fd1, %f2;", "cvt.ftz.f64.f32 %fd1, %f2;", "cvt.f32.f16 %f1, %h2;",
            "cvt.rn.f16.f32 %h1, %f2;", "cvt.rz.ftz.sat.f16.f32 %h1, %f2;",
            "cvt.rn.bf16.f32 %h1, %f2;", "cvt.rn.f16x2.f32 %r1, %f2, %f3;",
            "cvt.rn.relu.bf16x2.f32 %r1, %f2, %f3;", "cvt.f32.bf16 %f1, %h2;",
            "cvt.rna.tf32.f32 %r1, %f2;"]  # fmt: skip
    return out


def _memory_forms() -> list[str]:
    out = []
    for space, cop, vec in itertools.product(("", ".global", ".shared"),
                                             ("", ".ca", ".cg", ".cs", ".lu", ".cv"),
                                             ("", ".v2")):  # fmt: skip
        dst = "{%r1, %r2}" if vec else "%r1"
        addr = "[%rd1]" if space != ".shared" else "[%r3]"
        out.append(f"ld{space}{cop}{vec}.u32 {dst}, {addr};")
    for cop in ("", ".wb", ".cg", ".cs", ".wt"):
        out.append(f"st.global{cop}.v4.b32 [%rd1+16], {{%r1, %r2, %r3, %r4}};")
    out += ["ld.global.nc.L1::no_allocate.b64 %rd2, [%rd1];",
            "ld.global.L2::128B.f32 %f1, [%rd1+-4];", "ld.volatile.shared.s8 %r1, [%r3];",
            "ld.relaxed.gpu.global.u64 %rd2, [%rd1];", "ld.acquire.sys.global.b32 %r1, [%rd1];",
            "st.release.cta.shared.u16 [%r3], %h1;", "st.relaxed.sys.global.f64 [%rd1], %fd1;",
            "ldu.global.v2.f32 {%f1, %f2}, [%rd1];",
            "ld.global.nc.v4.f32 {%f1, %f2, %f3, _}, [%rd1];",
            "ld.param.u32 %r1, [n];", "cvta.to.global.u64 %rd1, %rd2;",
            "cvta.shared.u64 %rd1, %rd2;"]  # fmt: skip
    for op in ("add", "min", "max", "and", "or", "xor", "exch", "inc", "dec"):
        t = "u32" if op not in ("and", "or", "xor", "exch") else "b32"
        out.append(f"atom.global.{op}.{t} %r1, [%rd1], %r2;")
        if op != "exch":
            out.append(f"red.shared.{op}.{t} [%r3], %r2;")
    for sem, scope in itertools.product(("", ".relaxed", ".acquire", ".release", ".acq_rel"),
                                        ("", ".cta", ".gpu", ".sys")):  # fmt: skip
        if sem or scope:
            out.append(f"atom{sem}{scope}.global.add.u64 %rd2, [%rd1], %rd2;")
    out += ["atom.global.cas.b64 %rd2, [%rd1], %rd2, %rd3;", "atom.add.f32 %f1, [%rd1], %f2;",
            "atom.global.add.noftz.f16 %h1, [%rd1], %h2;", "atom.shared.max.s64 %rd2, [%r3], %rd2;",
            "red.global.add.f64 [%rd1], %fd1;"]  # fmt: skip
    return out


def _warp_forms() -> list[str]:
    out = [f"shfl.sync.{m}.b32 %r1|%p1, %r2, 1, 31, -1;" for m in ("up", "down", "bfly", "idx")]
    out += [f"vote.sync.{m}.pred %p1, !%p2, -1;" for m in ("all", "any", "uni")]
    out += ["vote.sync.ballot.b32 %r1, %p2, -1;", "activemask.b32 %r1;",
            "redux.sync.min.s32 %r1, %r2, -1;", "match.all.sync.b64 %r1|%p1, %rd2, -1;",
            "bar.sync 0;", "barrier.sync.aligned 1, 64;", "bar.arrive 2, 64;",
            "bar.red.popc.u32 %r1, 0, %p2;", "bar.warp.sync -1;", "membar.gl;",
            "fence.acq_rel.gpu;", "fence.sc.sys;"]  # fmt: skip
    return out


FAMILIES = {
    "float": _float_forms(),
    "int": _int_forms(),
    "compare": _compare_forms(),
    "cvt": _cvt_forms(),
    "memory": _memory_forms(),
    "warp": _warp_forms(),
}


def _kernel(forms: list[str]) -> str:
    body = "\n".join("\t" + f for f in forms)
    return f""".version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u32 n)
{{
\t.reg .pred %p<4>;
\t.reg .b16 %h<4>;
\t.reg .b32 %r<6>;
\t.reg .b64 %rd<4>;
\t.reg .f32 %f<4>;
\t.reg .f64 %fd<4>;
{body}
\tret;
}}
"""


def _names(ins: list[Instr]) -> list[str]:
    return [i.opcode + "".join(i.mods) for i in ins]


def _instrs(text: str) -> list[Instr]:
    return [s for s in parse(text).functions[0].body if isinstance(s, Instr)]


@pytest.mark.parametrize("family", FAMILIES)
def test_parse_print_keeps_every_form(family: str) -> None:
    forms = FAMILIES[family]
    ins = _instrs(_kernel(forms))[:-1]
    assert len(ins) == len(forms)
    for text, i in zip(forms, ins, strict=True):
        printed = format_instr(i)
        assert " ".join(printed.split()) == text, (text, printed)


@pytest.mark.parametrize("family", FAMILIES)
def test_lift_and_lower_keep_every_opcode_spelling(family: str) -> None:
    """Through SSA and back, the multiset of full opcode spellings is unchanged (moves
    that leaving SSA adds aside)."""
    text = _kernel(FAMILIES[family])
    out = optimize(text, "forms.ptx", []).text
    before = Counter(_names(_instrs(text)))
    after = Counter(_names(_instrs(out)))
    for k in list(after):
        if k.startswith("mov"):
            after[k] = min(after[k], before.get(k, 0))
    assert +after == +before


@pytest.mark.parametrize("family", FAMILIES)
def test_every_form_is_valid_ptx(family: str, tmp_path: Path) -> None:
    ptxas_check(_kernel(FAMILIES[family]), "sm_90", tmp_path)


def _operands_of(stmts: list[object]) -> list[object]:
    out: list[object] = []
    for s in stmts:
        if isinstance(s, Instr):
            out.extend(s.operands)
        elif isinstance(s, Scope):
            out.extend(_operands_of(list(s.body)))
    return out


def test_operands_print_as_their_str() -> None:
    """The printer reads an immediate's spelling and a symbol's name directly: the
    same text as ``str`` for every operand of the corpus and for immediates of each
    kind."""
    corpus = Path(__file__).parent / "corpus"
    seen: Counter[str] = Counter()
    for path in sorted(corpus.glob("*/*.ptx")):
        for fn in parse(path.read_text(encoding="latin-1"), str(path)).functions:
            for o in _operands_of(list(fn.body or [])):
                assert _operand(o) == str(o), (path, o)  # type: ignore[arg-type]
                seen[type(o).__name__] += 1
    assert {"Reg", "Imm", "Sym", "Addr", "Vec"} <= set(seen)
    for o in (Imm(-1, "-1"), Imm(1.0, "0f3F800000", "f32"), Imm(0.5, "0d3FE0000000000000", "f64")):
        assert _operand(o) == str(o) == o.text
    assert _operand(Sym("$L__BB0_1")) == "$L__BB0_1"
