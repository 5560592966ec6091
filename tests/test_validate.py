"""Validation: every rejection category, the input that triggers it, and inputs close
to it that must pass.  Each case is also put to ptxas (when installed): ptxopt and
ptxas must agree on every one of them, so the table cannot drift from the oracle."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from ptxopt.ptx.ast import PtxError
from ptxopt.ptx.parser import parse
from ptxopt.ptx.validate import register_compatible, validate
from tests.helpers import PTXAS

HEAD = ".version 9.0\n.target sm_90\n.address_size 64\n"
DECLS = (
    ".reg .b32 %r<10>;\n.reg .b64 %rd<10>;\n.reg .pred %p<5>;\n.reg .f32 %f<10>;\n"
    ".reg .b16 %rs<10>;\n.reg .f64 %fd<5>;\n"
)
MODULE_VARS = ".global .align 4 .b32 g;\n.shared .align 4 .b32 sh;\n"
FUNC = MODULE_VARS + ".func f()\n{\nret;\n}\n"


def kernel(body: str, head: str = HEAD, before: str = MODULE_VARS) -> str:
    return f"{head}{before}.visible .entry k(.param .u64 a)\n{{\n{DECLS}{body}\nret;\n}}\n"


def section_label(word: str) -> str:
    """A module whose DWARF data names ``word`` where a label goes."""
    return (
        HEAD + ".visible .entry k()\n{\nret;\n}\n.section .debug_abbrev\n{\n.b8 1\n}\n"
        f".section .debug_info\n{{\n.b32 10\n.b8 2\n.b32 {word}\n}}\n"
    )


# (category, PTX, part of ptxopt's message); each is rejected by ptxas too
REJECTED: list[tuple[str, str, str]] = [
    # lexing and numbers
    ("octal-digit", kernel("mov.u32 %r1, 08;"), "malformed number '08'"),
    ("hex-float-short", kernel("mov.f32 %f1, 0f3f80;"), "malformed number"),
    ("unsigned-suffix-lower", kernel("mov.u32 %r1, 1u;"), "malformed number"),
    ("int-overflow", kernel("mov.u64 %rd1, 99999999999999999999;"), "overflow"),
    ("hex-overflow", kernel("mov.u64 %rd1, 0xfffffffffffffffff;"), "overflow"),
    ("float-overflow", kernel("mov.f32 %f1, 1e400;"), "overflow"),
    ("float-underflow", kernel("mov.f64 %fd1, 1e-320;"), "underflow"),
    ("non-ascii", kernel("mov.u32 %r1, 1; // \u00e9"), "non-ASCII"),
    ("control-char", kernel("mov.u32 %r1,\x0b1;"), "unexpected character"),
    ("backslash-in-instruction", kernel("mov.u32 \\ %r1, 1;"), "expected an operand"),
    ("division-by-zero", kernel("mov.u32 %r1, 1/0;"), "division by zero"),
    ("negated-bit-pattern", kernel("mov.f32 %f1, -0f3f800000;"), "cannot be part"),
    ("stray-semicolon", kernel("mov.u32 %r1, 1;;"), "expected a statement"),
    # header
    ("no-version", ".target sm_90\n.address_size 64\n", "missing .version"),
    ("empty-file", "", "missing .version"),
    ("no-target", ".version 9.0\n.address_size 64\n", "missing .target"),
    ("unsupported-version", ".version 9.1\n.target sm_90\n", "unsupported .version"),
    ("unknown-target", ".version 9.0\n.target sm_95\n", "unsupported .target"),
    ("target-option", ".version 9.0\n.target sm_90, foo\n", "unsupported .target option"),
    ("version-too-old", kernel("", head=".version 7.0\n.target sm_90\n"), "does not support"),
    ("nul", kernel("mov.u32 %r1, 1;") + "\0", "NUL character"),
    ("address-size-32", ".version 9.0\n.target sm_90\n.address_size 32\n", "32-bit"),
    # declarations
    ("duplicate-register", kernel(".reg .b32 %r1;"), "duplicate definition of register"),
    ("duplicate-label", kernel("L: mov.u32 %r1, 1;\nL: ret;"), "duplicate definition of label"),
    (
        "duplicate-function",
        HEAD + ".visible .entry k()\n{\nret;\n}\n.visible .entry k()\n{\nret;\n}\n",
        "duplicate definition of function",
    ),
    ("undeclared-register", kernel("mov.u32 %r1, %q1;"), "undeclared register"),
    ("unknown-label", kernel("@%p1 bra NOWHERE;"), "unknown label"),
    ("unknown-symbol", kernel("mov.u64 %rd1, nothing;"), "unknown symbol"),
    ("register-type", kernel(".reg .bf16 %h;"), "not a register type"),
    ("variable-without-type", HEAD + ".global .align 4 x;\n", "needs a type"),
    ("two-state-spaces", HEAD + ".global .const .u32 x;\n", "second state space"),
    ("bad-alignment", HEAD + ".global .align 3 .u32 x;\n", "power of two"),
    ("initializer-syntax", HEAD + ".global .u32 x[2] = {1 2};\n", "expected"),
    ("initializer-type", HEAD + ".global .u32 x[2] = {1, 1.5};\n", "does not fit"),
    # instructions: modifiers and types
    ("unknown-instruction", kernel("frob.u32 %r1, %r2;"), "unsupported instruction"),
    ("unknown-modifier", kernel("add.xyz.u32 %r1, %r2, %r3;"), "unknown modifier"),
    ("doubled-type", kernel("ld.global.f32.f32 %f1, [%rd1];"), "unexpected types"),
    ("wrong-type", kernel("add.pred %p1, %p2, %p3;"), "unexpected types"),
    ("doubled-state-space", kernel("ld.global.global.u32 %r1, [%rd1];"), "given twice"),
    ("illegal-modifier", kernel("add.rn.u32 %r1, %r2, %r3;"), "illegal modifiers"),
    ("missing-modifier", kernel("setp.u32 %p1, %r1, %r2;"), "illegal modifiers"),
    ("cvt-rounding-required", kernel("cvt.u32.f32 %r1, %f2;"), "rounding modifier required"),
    ("cvt-rounding-illegal", kernel("cvt.rn.f32.f32 %f1, %f2;"), "illegal rounding"),
    ("arity", kernel("add.u32 %r1, %r2;"), "expects 3 operands, got 2"),
    # operands
    ("register-size", kernel("add.u32 %r1, %rd1, %r2;"), "does not match the type"),
    ("float-register-int-type", kernel("add.u32 %r1, %f1, %r2;"), "does not match"),
    ("narrow-load-target", kernel("ld.global.u32 %rs1, [%rd1];"), "does not match"),
    ("int-immediate-float", kernel("add.f32 %f1, %f2, 1;"), "does not fit the type"),
    ("float-immediate-int", kernel("mov.u32 %r1, 1.5;"), "does not fit the type"),
    ("predicate-guard", kernel("@%r1 bra L;\nL:"), "not a predicate register"),
    ("special-register", kernel("add.u32 %r1, %tid.x, 1;"), "special register"),
    ("vector-special-register", kernel("mov.u32 %r1, %tid;"), "needs a component"),
    ("address-register-type", kernel("ld.global.u32 %r1, [%f1];"), "used as an address"),
    ("address-32-bit", kernel("ld.global.u32 %r1, [%r2];"), "32-bit address"),
    ("address-state-space", kernel("ld.shared.u32 %r1, [g];"), "is not in the .shared space"),
    ("kernel-param-generic", kernel("ld.u64 %rd1, [a];"), "not in the generic space"),
    ("label-operand", kernel("bra %r1;"), "needs a label"),
    ("newer-target", kernel("redux.sync.add.u32 %r1, %r2, -1;", head=HEAD.replace("90", "75")),
     "requires sm_80"),
    ("destination-immediate", kernel("add.u32 5, %r2, %r3;"), "register destination"),
    ("call-arguments", HEAD + ".func f(.param .b32 x)\n{\nret;\n}\n"
     ".visible .entry k()\n{\ncall f, ();\nret;\n}\n", "wrong number of arguments"),
    ("inlined-at-origin", HEAD + '.file 1 "a.cu"\n.visible .entry k()\n{\n'
     ".loc 1 2 3, function_name k, inlined_at 1 9 9\nret;\n}\n", "inlined_at"),
    ("nesting", kernel("{" * 1700 + "}" * 1700), "nest deeper"),
    ("ignored-modifier-before-mode", kernel("mul.rank.lo.s32 %r1, %r2, 3;"), "unexpected types"),
    # found by fuzz/mutate.py (ptxas 13.0 refuses each)
    ("absolute-global-address", kernel("ld.global.u32 %r1, [8];"), "absolute address"),
    ("absolute-generic-address", kernel("st.u32 [+36], %r1;"), "absolute address"),
    ("barrier-number", kernel("bar.sync 16;"), "barrier number 16 out of range"),
    ("barrier-number-wraps", kernel("barrier.sync -1;"), "out of range"),
    ("bar-red-number", kernel("bar.red.popc.u32 %r1, 16, %p1;"), "barrier number 16"),
    ("duplicate-comparison", kernel("setp.lt.lt.s32 %p1, %r1, %r2;"), "given twice"),
    ("duplicate-atomic-op", kernel("atom.global.or.or.b32 %r1, [%rd1], %r2;"), "given twice"),
    ("duplicate-rounding", kernel("cvt.rn.rn.f32.s32 %f1, %r1;"), "given twice"),
    ("duplicate-ftz", kernel("add.ftz.ftz.f32 %f1, %f2, %f3;"), "given twice"),
    ("duplicate-scope", kernel("fence.acq_rel.gpu.gpu;"), "given twice"),
    ("nc-needs-global", kernel("ld.nc.u32 %r1, [%rd1];"), "needs the .global"),
    ("float-bits-shift", kernel("shl.b32 %r1, %r2, 0f3f800000;"), "does not fit"),
    ("decimal-float-lane", kernel("shfl.sync.bfly.b32 %r1, %r2, 1E5, 31, -1;"), "does not fit"),
    ("vector-widths", kernel("st.global.v2.u32 [%rd1], {%r1, %rd2};"), "different widths"),
    ("vector-widths-mov", kernel("mov.b64 {%r1, %rs1}, %rd2;"), "different widths"),
    ("vector-symbol", kernel("st.global.v2.u32 [%rd1], {%r1, a};"), "vector element"),
    ("ldmatrix-without-count", kernel(
        "ldmatrix.sync.aligned.m8n8.shared.b16 {%r1, %r2, %r3, %r4}, [%rd1];"), ".x1, .x2 or .x4"),
    ("prototype-param-directive", kernel(
        "p: .callprototype (.param.target .b32 _) _ (.param .b32 _);"), "in a parameter"),
    ("prototype-name", kernel("p: .callprototype (.param .b32 _) x (.param .b32 _);"),
     "expected '_'"),
    ("prototype-list", kernel("p: .callprototype (.param .b32 _) _ .param(.b32 _);"),
     "expected ';'"),
    ("wgmma-scale", HEAD.replace("sm_90", "sm_90a") + ".visible .entry k(.param .u64 a)\n{\n"
     + DECLS + "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4},"
     " %rd1, %rd2, 1, 0, 1, 0, 0;\nret;\n}\n", "operand 4"),
    ("wgmma-transpose", HEAD.replace("sm_90", "sm_90a") + ".visible .entry k(.param .u64 a)\n{\n"
     + DECLS + "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4},"
     " %rd1, %rd2, 1, 1, 1, 0, WARP_SZ;\nret;\n}\n", "operand 7"),
    ("file-number-float", HEAD + '.file 0f7fc00000 "a.cu"\n', "expected a file number"),
    ("section-byte-max", HEAD + ".section .debug_str\n{\n.b8 18446744073709551615\n}\n",
     "out of range"),
    ("pred-beside-type-mov", kernel("mov.pred.u32 %r1, %r2;"), "unexpected types"),
    ("pred-beside-type-mul-lo", kernel("mul.lo.pred.s32 %r1, %r2, 3;"), "unexpected types"),
    ("target-not-next", ".version 9.0\n.global .u32 g;\n.target sm_90\n.address_size 64\n",
     "missing .target"),
    ("file-before-target", '.version 9.0\n.file 1 "a.cu"\n.target sm_90\n', "missing .target"),
    ("address-size-late", ".version 9.0\n.target sm_90\n.global .u32 g;\n.address_size 64\n",
     "must follow .target"),
    ("inlined-at-float", HEAD + '.file 1 "a.cu"\n.visible .entry k()\n{\n'
     ".loc 1 2 3, function_name k, inlined_at 1 1. 9\nret;\n}\n", "expected an integer"),
    ("address-pair", kernel("ld.global.u32 %r1, [%rd1, 8];"), "single address"),
    ("cp-async-cg-size", kernel("cp.async.cg.shared.global [%r1], [%rd1], 8;"), "16 bytes"),
    ("cp-async-ca-size", kernel("cp.async.ca.shared.global [%r1], [%rd1], 2;"), "4 or 8 or 16"),
    ("ldmatrix-aligned", kernel(
        "ldmatrix.sync.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r1];"), "needs .aligned"),
    ("ldmatrix-type", kernel(
        "ldmatrix.sync.aligned.m8n8.x4.shared.u16 {%r1, %r2, %r3, %r4}, [%r1];"),
     "unexpected types"),
    ("negative-array", HEAD + ".global .u32 t[-1];\n", "negative array size"),
    ("symbol-in-bytes", HEAD + ".global .u32 g;\n.global .b8 t[8] = {g, 0};\n", "does not fit"),
    ("call-register-type", HEAD + ".func (.reg .u32 r) f(.reg .u32 a)\n{\nret;\n}\n"
     ".visible .entry k()\n{\n.reg .f32 %f<2>;\n.reg .b32 %r<2>;\n"
     "call (%r1), f, (%f1);\nret;\n}\n", "passed for parameter 'a'"),
    ("call-modifier", HEAD + ".func f()\n{\nret;\n}\n.visible .entry k()\n{\n"
     "call.m64n8k16.uni f, ();\nret;\n}\n", "call takes only .uni"),
    ("bits16-hex-float", kernel("mov.b16 %rs1, 0f3f800000;"), "does not fit"),
    ("b32-double-bits", kernel("mov.b32 %r1, 0d3ff0000000000000;"), "does not fit"),
    ("b64-float-bits", kernel("mov.b64 %rd1, 0f3f800000;"), "does not fit"),
    ("register-count-2-32", kernel(".reg .b32 %q<4294967296>;"), "invalid register count"),
    ("loc-line-2-32", HEAD + '.file 1 "a.cu"\n.visible .entry k()\n{\n.loc 1 4294967296 2\n'
     "ret;\n}\n", "malformed .loc"),
    ("integer-in-float-initializer", HEAD + ".const .f32 c[2] = {1.0, 2};\n", "integer '2'"),
    ("integers-in-float-table", HEAD + ".global .f32 t[2] = {1, 2};\n", "integer '1'"),
    ("pack-with-u64", kernel("mov.u64 %rd1, {%r1, %r2};"), "packs only with a .b type"),
    ("reqntid-without-number", HEAD + ".visible .entry k()\n.reqntid\n{\nret;\n}\n",
     "needs a number"),
    ("generic-const", HEAD + ".const .u32 c;\n.visible .entry k()\n{\n.reg .b32 %r<2>;\n"
     "ld.u32 %r1, [c];\nret;\n}\n", "is not in the generic space"),
    ("generic-func-param", HEAD + ".func f(.param .b32 a)\n{\n.reg .b32 %r<2>;\n"
     "ld.u32 %r1, [a];\nret;\n}\n", "is not in the generic space"),
    ("int-load-float-register", kernel("ld.global.u16 %f1, [%rd1];"), "does not match"),
    ("call-with-type", HEAD + ".func f()\n{\nret;\n}\n.visible .entry k()\n{\n"
     "call.u32 f, ();\nret;\n}\n", "takes no type"),
    # a function's name as a value: refused outside the instruction-typed slots
    ("function-shift-amount", kernel("shl.b32 %r1, %r2, f;", before=FUNC), "cannot take"),
    ("function-selp-predicate", kernel("selp.u32 %r1, 1, 2, f;", before=FUNC), "needs a predicate"),
    ("function-shfl-sm80", kernel("shfl.sync.idx.b32 %r1, f, 0, 31, -1;", before=FUNC)
     .replace("sm_90", "sm_80"), "cannot take"),  # sm_90 takes it
    ("function-cvt", kernel("cvt.u64.u32 %rd1, f;", before=FUNC), "cannot take the symbol"),
    ("function-argument", HEAD + FUNC + ".func g(.reg .b32 x)\n{\nret;\n}\n"
     ".visible .entry k()\n{\ncall g, (f);\nret;\n}\n", "passed as an argument"),
    ("function-address", kernel("prefetch.global.L2 [f];", before=FUNC), "is not a variable"),
    ("function-isspacep", kernel("isspacep.global %p1, f;", before=FUNC), "is not a variable"),
    ("variable-as-value", kernel("add.u64 %rd1, %rd2, g;"), "cannot take the symbol"),
    # video selectors and negated registers belong to the video instructions
    ("selector-outside-video", kernel("add.u32 %r1, %r2.b0, 1;"), "selector .b0 is only allowed"),
    ("negation-outside-video", kernel("add.u32 %r1, -%r2, 1;"), "negated register is only"),
    # state spaces at module scope and initializers
    ("module-param", HEAD + ".param .u32 pp;\n.visible .entry k()\n{\nret;\n}\n",
     "a .param variable at module scope"),
    ("module-local", HEAD + ".local .u32 l;\n.visible .entry k()\n{\nret;\n}\n",
     "a .local variable at module scope"),
    ("shared-initializer", HEAD + ".shared .u32 s = 1;\n.visible .entry k()\n{\nret;\n}\n",
     "no initial value"),
    ("param-list-initializer", kernel(".param .u64 x, y = 5;"), "no initial value"),
    ("local-list-duplicate", kernel(".local .u32 q, q;"), "duplicate definition"),
    # a ptxas keyword where a section label goes
    ("section-keyword-modifier", section_label(".lo"), "expected a section value"),
    ("section-keyword-space", section_label(".global"), "expected a section value"),
    ("section-keyword-type", section_label(".b1024"), "expected a section value"),
    # a 0d literal is a double in an expression, a 0f literal is in none; no mixing
    ("negated-0f", kernel("mov.f32 %f1, -0f3f800000;"), "cannot be part of an expression"),
    ("0d-plus-int", kernel("mov.f64 %fd1, -0d3ff0000000000000+1;"), "mixes an integer"),
    ("float-plus-int", kernel("mov.f64 %fd1, 1.5+1;"), "mixes an integer"),
    ("number-then-name", kernel("mov.u32 %r1, 5$x;"), "expected ',' or ';'"),
    # declarations ptxas refuses
    ("ptr-align", HEAD + ".visible .entry k(.param .u64 .ptr .global .align 12 p)\n{\nret;\n}\n",
     "alignment 12 is not a power of two"),
    ("unsized-array", HEAD + ".shared .align 16 .b8 smem[];\n.visible .entry k()\n{\nret;\n}\n",
     "incomplete type"),
    ("empty-array", kernel(".local .align 8 .b8 depot[0];"), "incomplete type"),
    ("initializer-unknown-symbol", HEAD + ".global .u32 t[2] = {1, WRP_SZ};\n"
     ".visible .entry k()\n{\nret;\n}\n", "unknown symbol 'WRP_SZ'"),
    ("section-label-twice", section_label(".debug_abbrev").replace(".b8 2\n", "$L__a:\n$L__a:\n"),
     "duplicate definition of label"),
    ("function-name-unresolved", section_label(".debug_abbrev").replace(
        "ret;", ".loc 1 2 3\n.loc 1 4 5, function_name $L__nowhere, inlined_at 1 2 3\nret;"
     ).replace(".visible", '.file 1 "a.cu"\n.visible'), "function_name '$L__nowhere'"),
    ("absolute-cp-async", kernel("cp.async.cg.shared.global [0], [%rd1], 16;"),
     "an absolute address needs .local"),
    # .target lines: in a row right after .version, nowhere else
    ("target-after-header", HEAD + ".target sm_90\n.visible .entry k()\n{\nret;\n}\n",
     ".target after the module header"),
    ("target-after-file", HEAD.replace("sm_90\n", 'sm_90\n.file 1 "a.cu"\n.target sm_90\n')
     + ".visible .entry k()\n{\nret;\n}\n", ".target after the module header"),
    ("last-target-wins", ".version 9.0\n.target sm_90a\n.target sm_80\n.address_size 64\n"
     ".visible .entry k()\n{\nsetmaxnreg.inc.sync.aligned.u32 64;\nret;\n}\n", "requires"),
    # header words run together: only a directive after the version or a target
    ("version-dot-word", HEAD.replace("9.0\n", "9.0.t\n") + ".visible .entry k()\n{\nret;\n}\n",
     "unexpected '.t'"),
    ("target-dot-word", HEAD.replace("sm_90\n", "sm_90.x\n") + ".visible .entry k()\n{\nret;\n}\n",
     "unexpected '.x'"),
    ("version-three-parts", HEAD.replace("9.0\n", "9.0.5\n") + ".visible .entry k()\n{\nret;\n}\n",
     "malformed number"),
    # bar.sync takes one .all or .any, nothing else does
    ("bar-all-twice", kernel("bar.all.any.sync 0;"), "more than one"),
    ("bar-all-arrive", kernel("bar.all.arrive 0, 32;"), "only on 'bar.sync'"),
    ("bar-cta-all", kernel("bar.cta.all.sync 0;"), "only on 'bar.sync'"),
    # labels and symbols as values
    ("mov-label", kernel("L1: mov.u64 %rd1, L1;"), "is a label"),
    ("st-label", kernel("L1: st.global.u64 [%rd1], L1;"), "is a label"),
    ("cvta-label", kernel("L1: cvta.global.u64 %rd1, L1;"), "is a label"),
    ("cvta-other-space", kernel("cvta.global.u64 %rd1, sh;"), "not in the .global space"),
    ("cvta-function", kernel("cvta.global.u64 %rd1, k;"), "not in the .global space"),
    ("cvta-unknown", kernel("cvta.global.u64 %rd1, nope;"), "unknown symbol"),
    ("cvta-to-symbol", kernel("cvta.to.global.u64 %rd1, g;"), "converts a register"),
    ("cvta-32-bit", kernel("cvta.global.u32 %r1, %r2;"), "32-bit"),
    ("generic-in-instruction", kernel("mov.u64 %rd1, generic(g);"), "only allowed in an init"),
    # initializer shapes (ptxopt.ptx.initializer)
    ("init-more-than-size", HEAD + ".global .u32 x[2] = {1, 2, 3};\n", "3 elements"),
    ("init-table-too-long", HEAD + ".const .b8 t[2] = {0, 1, 2, 3};\n", "4 elements"),
    ("init-inner-more", HEAD + ".global .u32 x[2][2] = {{1, 2, 5}, {3, 4}};\n", "3 elements"),
    ("init-flat-for-2d", HEAD + ".global .u32 x[2][2] = {1, 2, 3, 4};\n", "4 elements"),
    ("init-vector-short", HEAD + ".global .v2 .u32 x[2] = {{1}, {3, 4}};\n", "2-vector"),
    ("init-vector-long", HEAD + ".global .v4 .u32 x = {1, 2, 3, 4, 5};\n", "4-vector"),
    ("init-braces-scalar", HEAD + ".global .u32 x = {1};\n", "braces in the initializer"),
    ("init-scalar-for-array", HEAD + ".global .u32 x[2] = 5;\n", "a scalar initializer"),
    ("init-empty-unsized", HEAD + ".global .u32 x[] = {};\n", "unspecified size"),
    ("init-symbols-too-many", HEAD + ".global .u32 y;\n.global .u64 x[1] = {y, y};\n",
     "2 elements"),
]  # fmt: skip

# Close to the above and accepted by ptxas: must pass.
ACCEPTED: list[tuple[str, str]] = [
    (
        "cvta-of-variables",
        HEAD + ".global .u32 g;\n.shared .u32 s;\n.const .u32 c;\n"
        ".visible .entry k(.param .u32 p)\n{\n.reg .b64 %rd<4>;\n.local .u32 l;\n"
        "cvta.shared.u64 %rd1, s; cvta.const.u64 %rd1, c; cvta.local.u64 %rd1, l;\n"
        "cvta.param.u64 %rd1, p; cvta.global.u64 %rd1, g+4; cvta.global.u64 %rd1, 16;\n"
        "cvta.shared::cta.u64 %rd1, s; mov.u64 %rd2, k;\nret;\n}\n",
    ),
    (
        "init-empty-and-short-rows",
        HEAD + ".global .u32 x[2][3] = {{}, {1, 2}};\n"
        ".const .f32 c[4] = {};\n.global .u32 u[][2] = {{1, 2}, {}};\n",
    ),
    (
        "init-vectors-and-unsized",
        HEAD + ".global .v2 .u32 v[2] = {{1, 2}, {3, 4}};\n"
        ".global .u32 w[] = {5, 6, 7};\n.global .u32 z[0] = {1, 2};\n",
    ),
    ("octal", kernel("mov.u32 %r1, 017;")),
    ("binary-hex-unsigned", kernel("mov.u32 %r1, 0b101; mov.u32 %r2, 0xffU;")),
    ("decimal-floats", kernel("mov.f32 %f1, .5; mov.f32 %f2, 1.; mov.f32 %f3, 1e5;")),
    ("wrapping-literals", kernel("mov.u64 %rd1, 18446744073709551616;")),
    ("hex-wraps", kernel("mov.u64 %rd1, 0x1ffffffffffffffff;")),
    ("double-negation", kernel("mov.u32 %r1, --1;")),
    ("expressions", kernel("mov.u32 %r1, (1+2)*3; mov.u32 %r2, 1?2:3; mov.u32 %r3, 7 % 3;")),
    ("warp-size", kernel("mov.u32 %r1, WARP_SZ; ld.u32 %r2, [%rd1+WARP_SZ];")),
    ("plus-plus-offset", kernel("ld.u32 %r1, [%rd1++0];")),
    ("register-plus-immediate", kernel("add.u32 %r1, %r2+1, 3; st.u64 [%rd1], %rd2+1;")),
    ("percent-label", kernel("%L1: add.u32 %r1, %r1, 1;\n@%p1 bra %L1;")),
    ("form-feed", kernel("mov.u32 %r1,\x0c1;")),
    ("line-marker", kernel('# 1 "x.cu"\nmov.u32 %r1, 1;')),
    ("huge-range", kernel(".reg .b32 %q<2147483648>;\nmov.u32 %q2147483647, 1;")),
    ("modifier-order", kernel("ld.u32.global %r1, [%rd1]; add.f32.rn %f1, %f2, %f3;")),
    ("repeated-uni", kernel("bra.uni.uni L;\nL:")),
    ("pred-beside-type", kernel("add.pred.s64 %rd1, %rd2, %rd3;")),
    (
        "pred-beside-type-more",
        kernel(
            "min.pred.s32 %r1, %r2, 1; setp.lt.pred.s32 %p1, %r1, 1; mul.rn.pred.f32 %f1, %f2, %f3;"
            " cvt.pred.u32.u16 %r1, %rs1; atom.global.add.pred.u32 %r1, [%rd1], 1;"
        ),
    ),
    ("relaxed-load", kernel("ld.global.u8 %r1, [%rd1]; ld.global.u32 %rd2, [%rd1];")),
    ("bit-pattern-bits", kernel("mov.b32 %r1, 0f3f800000; mov.f32 %f1, 0d3ff0000000000000;")),
    ("predicate-immediate", kernel("mov.pred %p1, 1;")),
    ("address-16-bit", kernel("ld.global.u32 %r1, [%rs1];")),
    ("shared-32-bit-address", kernel("ld.shared.u32 %r1, [%r2];")),
    ("symbol-address", kernel("mov.u64 %rd1, g; mov.u32 %r1, sh; ld.u32 %r2, [g];")),
    ("empty-register-declaration", kernel(".reg .b32 ;")),
    ("target-in-body", kernel(".target sm_80\nmov.u32 %r1, 1;")),
    (
        "vector-registers",
        kernel(".reg .v2 .u32 v;\nld.global.v2.u32 v, [%rd1];\nmov.u32 %r1, v.y;"),
    ),
    ("nesting-at-limit", kernel("{" * 1600 + "}" * 1600)),
    ("comment-in-initializer", HEAD + ".global .u32 t[3] = {1, // one\n 2, /* two */ 3};\n"),
    ("cr-in-comment", kernel("mov.u32 %r1, 1; // a\rb")),
    # found by fuzz/mutate.py: ptxas accepts these
    ("negative-section-byte", HEAD + ".section .debug_str\n{\n.b8 -1\n}\n"),
    ("align-warp-size", HEAD + ".extern .shared .align WARP_SZ .b8 dyn[];\n"),
    ("repeated-sub-opcode", kernel("bar.sync.sync 0;")),
    ("leading-zero-register", kernel("mov.u32 %r07, 1;")),
    ("double-literal-b64", kernel("selp.b64 %rd1, %rd2, 1E5, %p1;")),
    ("bit-pattern-clamp", kernel("shfl.sync.up.b32 %r1, %r2, 8, 0f3f800000, -1;")),
    ("special-register-in-vector", kernel("st.v4.u32 [%rd1], {%r1, %r2, %r3, %ctaid.y};")),
    ("packed-cvt-wide-register", kernel("cvt.rn.f16x2.f32 %rd5, %f1, %f2;")),
    (
        "loc-warp-size",
        HEAD + '.file 1 "a.cu"\n.visible .entry k()\n{\n.loc 1 16 WARP_SZ\nret;\n}\n',
    ),
    ("target-with-trailing-letters", kernel("", head=HEAD.replace("sm_90", "sm_90xyz"))),
    ("special-register-scalar-vector", kernel("st.global.b32 [%rd3+0], { %tid.x };")),
    ("spaced-modifiers", kernel("st.global .v2.u32 [%rd2], {%r4, %r3};")),
    ("section-byte-wraps", HEAD + ".section .debug_str\n{\n.b8 4294967296\n}\n"),
    ("packed-cvt-wide-source", kernel("cvt.rn.f16x2.f32 %r1, %rd3, %f1;")),
    ("wide-register-plus-immediate", kernel("mov.u32 %r3, %rd3+WARP_SZ;")),
    (
        "declaration-without-semicolon",
        HEAD + ".func f()\n.func g()\n{\nret;\n}\n.func f()\n{\nret;\n}\n",
    ),
    ("backslash-before-statement", kernel("\\\tmov.u32 %r1, 1; \\ mov.u32 %r2, 2;")),
    (
        "accepted-twice",
        kernel(
            "add.cc.cc.u32 %r1, %r2, 1; mul.sat.sat.f32 %f1, %f2, %f3;"
            " shfl.sync.sync.bfly.b32 %r1, %r2, 1, 31, -1; min.NaN.NaN.f32 %f1, %f2, %f3;"
            " bra.uni.uni L;\nL: rsqrt.approx.approx.f32 %f1, %f2;"
        ),
    ),
    ("local-absolute-address", kernel(".local .b32 l[4];\nld.local.u32 %r1, [8];")),
    ("barrier-15", kernel("bar.sync 15; bar.arrive 15, 32; bar.warp.sync -1;")),
    ("global-nc", kernel("ld.global.nc.u32 %r1, [%rd1];")),
    # false rejects the 10^5-mutant run found in this stop's rules
    ("barrier-low-32-bits", kernel("bar.sync 1099511627776; bar.sync 9223372036854775808;")),
    (
        "loc-minus-one",
        HEAD + '.file 1 "a.cu"\n.visible .entry k()\n{\n'
        ".loc 18446744073709551615 0x1ffffffffffffffff 3\nret;\n}\n",
    ),
    ("empty-register-range", kernel(".reg .b32 %q<00>;")),
    (
        "bit-load-float-register",
        kernel("ld.global.b16 %f1, [%rd1]; st.global.b8 [%rd1], %fd1; ld.global.b32 %fd1, [%rd1];"),
    ),
    (
        "declarations-of-nothing",
        kernel(".b32;\n.v2 .b32;", before=".common .global .align 8 .u64 ;\n"),
    ),
    (
        "call-ignored-modifier",
        HEAD + ".func f()\n{\nret;\n}\n.visible .entry k()\n{\n"
        "call.global_address.uni f, ();\nret;\n}\n",
    ),
    (
        "float-bit-patterns",
        kernel(
            "mov.f64 %fd1, 0f3f800000; add.f32 %f1, %f1, 0d3ff0000000000000;"
            " mov.b64 %rd1, 0d3ff0000000000000; selp.b32 %r1, 0f3f800000, 0, %p1;"
        ),
    ),
    (
        "loc-column-2-32-minus-1",
        HEAD + '.file 1 "a.cu"\n.visible .entry k()\n{\n.loc 1 2 4294967295\nret;\n}\n',
    ),
    (
        "float-initializers",
        HEAD + ".const .f32 c[2] = {1.0, -2.5};\n.const .f64 d = 0d3ff0000000000000;\n",
    ),
    (
        "cp-async-sizes",
        kernel(
            "cp.async.cg.shared.global [%r1], [%rd1], 16;"
            " cp.async.ca.shared.global [%r1], [%rd1], 8;"
        ),
    ),
    ("symbol-in-words", HEAD + ".global .u32 g;\n.global .u32 t[2] = {g, 0};\n"),
    (
        "wgmma-immediates",
        HEAD.replace("sm_90", "sm_90a") + ".visible .entry k(.param .u64 a)\n"
        "{\n" + DECLS + "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4},"
        " %rd1, %rd2, 0, -1, 0x1ffffffffffffffff, 1, 1;\nret;\n}\n",
    ),
    (
        "prototypes",
        kernel(
            "p: .callprototype (.reg .b32 _) _ (.param .b32 y);\n"
            "q: .callprototype _ (.param .align 16 .b8 _[16]) .noreturn;\n"
            "r: .callprototype _ ();"
        ),
    ),
    (
        "vector-mixed-types",
        kernel(
            "st.global.v2.u32 [%rd1], {%r1, %f1}; st.global.v2.u32 [%rd1], {%r1, %p1};"
            " st.global.v2.u32 [%rd1], {%r1, %ctaid.x}; ld.global.v2.u32 {%r1, %f2}, [%rd1];"
        ),
    ),
    (
        "function-as-value",
        kernel(
            "add.u32 %r1, %r2, f; setp.eq.s32 %p1, %r1, f; not.pred %p2, f;"
            " and.pred %p3, f, %p1; add.f32 %f1, f, %f2; mad.lo.s32 %r3, %r1, %r1, f;"
            " selp.u32 %r4, f, 2, %p1; st.global.u32 [%rd1], f; dp4a.u32.u32 %r5, f, %r1, %r1;"
            " atom.global.add.u32 %r6, [%rd1], f; mov.u64 %rd2, f; not.b32 %r7, f;"
            " shfl.sync.idx.b32 %r8, f, 0, 31, -1;",
            before=FUNC,
        ),
    ),
    (
        "header-run-together",
        ".version 9.0.target sm_90.address_size 64\n.visible .entry k()\n{\nret;\n}\n",
    ),
    (
        "video-selectors",
        kernel("vadd.u32.u32.u32 %r1, %r2.b0, %r3.h1; vmad.u32.u32.u32 %r1, -%r2, %r3, %r4;"),
    ),
    (
        "variable-lists",
        HEAD + ".global .u32 ga, gb = 2;\n.const .align 8 .u64 ca, cb[2] = {1, 2};\n"
        ".visible .entry k()\n{\n.local .align 4 .b8 la[4], lb[8];\n.shared .u32 sa, sb;\n"
        ".param .u64 pa, ret;\n}\n",
    ),
    (
        "declaration-ends-at-variable",
        HEAD + ".func (.reg .b32 rv) f(.reg .b32 a)\n.global .u32 g;\n"
        ".func (.reg .b32 rv) f(.reg .b32 a)\n{\nmov.b32 rv, a;\nret;\n}\n"
        ".visible .entry k()\n{\nret;\n}\n",
    ),
    (
        "negated-0d",
        kernel(
            "mov.f64 %fd1, -0d3ff0000000000000; and.b64 %rd1, %rd2, -0d3ff0000000000000;"
            " mov.f64 %fd2, --0d3ff0000000000000; mov.f64 %fd3, (0d3ff0000000000000)*2.0;"
        ),
    ),
    (
        "section-label-after-number",
        HEAD + ".visible .entry k()\n{\nret;\n}\n.section .debug_abbrev\n{\n.b8 1\n}\n"
        ".section .debug_info\n{\n.b32 10\n.b8 2, 0$L__s:\n.b8 3\n}\n",
    ),
    (
        "sized-by-initializer-or-extern",
        HEAD + ".extern .shared .align 16 .b8 smem[];\n.global .u32 t[] = {1, 2};\n"
        ".global .u64 p = generic(t);\n.global .u32 z[0] = {1};\n"
        ".visible .entry k()\n{\nret;\n}\n",
    ),
    (
        "section-comments-with-colons",
        section_label(".debug_abbrev\n.b8 3 // Abbrev [3] 0x56:0x46\n.b8 3 // Abbrev 0x56:0x46"),
    ),
    (
        "target-lines-add-up",
        ".version 9.0\n.target sm_80\n.target sm_80, texmode_independent\n.address_size 64\n"
        ".visible .entry k()\n{\nret;\n}\n",
    ),
    (
        "section-dotted-labels",
        section_label(".debug_abbrev\n.b32 .version\n.b32 .wide\n.b32 .foo\n.b32 .h12"),
    ),
    ("bar-all-any", kernel("bar.all.sync 0; bar.sync.any 1, 64; bar.any.sync %r1;")),
    (
        "ignored-modifiers",
        kernel(
            "ld.rank.param.u64 %rd1, [a]; ld.global.finite.u32 %r1, [%rd1];"
            " mov.interleave_layout.b32 %r2, %r1; add.acc::f32.s32 %r3, %r2, 1;"
            " mul.lo.b8x16.s32 %r4, %r3, 3; st.element_stride.global.u32 [%rd1], %r4;"
        ),
    ),
]


@pytest.mark.parametrize("name, text, message", REJECTED, ids=[c[0] for c in REJECTED])
def test_rejected_with_a_location(name: str, text: str, message: str) -> None:
    with pytest.raises(PtxError) as exc:
        validate(parse(text, "v.ptx"))
    err = exc.value
    assert message in err.message, str(err)
    assert err.span is not None and str(err).startswith("v.ptx:")


@pytest.mark.parametrize("name, text", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_accepted(name: str, text: str) -> None:
    validate(parse(text, "v.ptx"))


# ptxas accepts a 2^31-register range too, but it allocates for every name it
# declares: measured at 16.8 GB of resident memory and about a minute, which a
# CI runner beside other tests cannot give it. The oracle is asked about the
# same form at 2^24 (0.1 s, 157 MB); ptxopt itself is checked at 2^31 above.
ORACLE_STAND_IN = {
    "huge-range": kernel(".reg .b32 %q<16777216>;\nmov.u32 %q16777215, 1;"),
}


def _ptxas_accepts(text: str, tmp: Path) -> bool:
    assert PTXAS is not None
    src = tmp / "case.ptx"
    src.write_bytes(text.encode("latin-1"))
    m = re.search(r"\.target (sm_\d+a?)", text)
    arch = m.group(1) if m else "sm_90"
    r = subprocess.run(
        [PTXAS, f"-arch={arch}", str(src), "-o", str(tmp / "o.cubin")], capture_output=True
    )
    return r.returncode == 0


@pytest.mark.ptxas
@pytest.mark.slow
def test_ptxas_agrees_on_every_case(tmp_path: Path) -> None:
    if PTXAS is None:
        pytest.skip("ptxas is not on PATH (install the CUDA 13.0 toolkit to run oracle tests)")
    wrong = [name for name, text, _m in REJECTED if _ptxas_accepts(text, tmp_path)]
    wrong += [
        name
        for name, text in ACCEPTED
        if not _ptxas_accepts(ORACLE_STAND_IN.get(name, text), tmp_path)
    ]
    assert not wrong, f"ptxas disagrees with the expectation on {wrong}"


@pytest.mark.parametrize(
    "itype, rtype, relaxed, ok",
    [
        (".b32", ".f32", False, True),
        (".u32", ".b32", False, True),
        (".u32", ".f32", False, False),
        (".f32", ".u32", False, False),
        (".f32", ".b32", False, True),
        (".u32", ".b64", False, False),
        (".u32", ".b64", True, True),
        (".u16", ".f16x2", True, True),  # ptxas treats .f16x2 registers as .b32
        (".f32", ".f64", True, False),
        (".f32", ".b64", True, True),
        (".pred", ".b32", False, False),
    ],
)
def test_register_compatibility(itype: str, rtype: str, relaxed: bool, ok: bool) -> None:
    assert register_compatible(itype, rtype, relaxed) is ok


# An instruction of a shape already found valid in the module is not checked again
# (Validator.shape): each case puts a valid instruction first and an invalid one of
# the same opcode and modifiers after it; they must differ in shape, so the second is
# still refused where it is.
SAME_OPCODE_AFTER_A_VALID_ONE = [
    ("wider-register", "add.s32 %r1, %r2, %r3;\nadd.s32 %r1, %rd2, %r3;", "does not match"),
    ("barrier-number", "bar.sync 0;\nbar.sync 16;", "barrier number 16 out of range"),
    ("guard-type", "@%p1 add.s32 %r1, %r2, %r3;\n@%r1 add.s32 %r1, %r2, %r3;", "not a predicate"),
    ("special-dest", "mov.u32 %r1, %tid.x;\nmov.u32 %tid.x, %r1;", "cannot write to special"),
    ("undeclared", "add.s32 %r1, %r2, %r3;\nadd.s32 %r1, %r2, %q3;", "undeclared register"),
    (
        "float-immediate",
        "shl.b32 %r1, %r2, 3;\nshl.b32 %r1, %r2, 0f3f800000;",
        "does not fit the type",
    ),
]


@pytest.mark.parametrize(
    "name, body, message",
    SAME_OPCODE_AFTER_A_VALID_ONE,
    ids=[c[0] for c in SAME_OPCODE_AFTER_A_VALID_ONE],
)
def test_a_valid_shape_does_not_hide_an_invalid_one(name: str, body: str, message: str) -> None:
    text = kernel(body)
    with pytest.raises(PtxError) as exc:
        validate(parse(text, "v.ptx"))
    assert message in exc.value.message, str(exc.value)
    bad_line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln == body.split("\n")[1])
    assert exc.value.span is not None and exc.value.span.line == bad_line


def _empty_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process-wide shape caches emptied (restored after the test)."""
    from ptxopt.ptx import validate as v

    monkeypatch.setattr(v, "_SHAPES", {})
    monkeypatch.setattr(v, "_MATCH_CACHE", {})


def _checked(text: str, name: str, error: str | None = None) -> list[str]:
    """The opcodes the validator checks in full in one module (``error``: the
    message it must stop with)."""
    from ptxopt.ptx.parser import deep_recursion
    from ptxopt.ptx.validate import Validator

    val = Validator(parse(text, name))
    with deep_recursion():
        if error is None:
            val.run()
        else:
            with pytest.raises(PtxError, match=error):
                val.run()
    return val.checked


def test_instructions_of_a_valid_shape_are_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    _empty_caches(monkeypatch)
    body = "add.s32 %r1, %r2, %r3;\nadd.s32 %r4, %r5, %r6;\nadd.s32 %r7, %r8, 1;\n" * 3
    body += "ld.global.u32 %r1, [g];\nld.global.u32 %r2, [g+4];\nld.global.u32 %r2, [%rd1];\n"
    body += "ld.global.u32 %r3, [%rd2+8];\nst.shared.v2.u32 [sh], {%r1, %r2};\n"
    body += "st.shared.v2.u32 [sh], {%r3, %r4};\n@%p1 bra L1;\n@!%p2 bra L2;\nL1:\nL2:\n"
    # two shapes of add (registers; an immediate), the loads by variable and by
    # register (the offset is no part of a shape), one store, one branch, ret
    assert _checked(kernel(body), "v.ptx") == ["add", "add", "ld", "ld", "st", "bra", "ret"]
    # the shapes found valid serve the next module with the same target
    assert _checked(kernel(body), "w.ptx") == []


def test_a_shape_valid_in_one_module_is_judged_anew_where_it_differs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _empty_caches(monkeypatch)
    text = kernel("redux.sync.add.u32 %r1, %r2, -1;\nld.global.u32 %r1, [g];")
    assert _checked(text, "a.ptx") == ["redux", "ld", "ret"]
    # the same instruction under a target without it is checked again, and fails
    sm75 = HEAD.replace("sm_90", "sm_75")
    text = kernel("redux.sync.add.u32 %r1, %r2, -1;", head=sm75)
    assert _checked(text, "b.ptx", "requires sm_80") == ["redux"]
    # the same load of a variable in another state space
    other = ".shared .align 4 .b32 g;\n"
    text = kernel("ld.global.u32 %r1, [g];", before=other)
    assert _checked(text, "c.ptx", "not in the .global space") == ["ld"]
    # a branch to a label of the function, then to names that are none
    assert _checked(kernel("bra L1;\nL1:"), "d.ptx") == ["bra"]
    assert _checked(kernel("bra L9;\nL1:"), "e.ptx", "unknown label 'L9'") == ["bra"]
    assert _checked(kernel("bra g;\nL1:"), "f.ptx", "unknown label 'g'") == ["bra"]
