"""The random kernel generator (fuzz/kernels.py) and the passes it drives.

Generated kernels are deterministic per seed, accepted by ptxas, runnable in the
interpreter at every launch shape, and every registered pass leaves their results
unchanged bit for bit.  A pass with a planted bug is caught, and so are the
interpreter bugs the generator found first (kept as regression tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import ptxas_check

from fuzz.kernelgen import ALL_FEATURES, SHAPES, generate_kernel, layout_of, make_args
from fuzz.kernels import check_pipeline, check_uniformity, generate
from ptxopt.driver import optimize
from ptxopt.pipeline import available_passes
from ptxopt.sim import differential, launch
from ptxopt.transforms.base import REGISTRY, FunctionPass, register

PASSES = sorted(available_passes())


def test_kernels_are_deterministic_per_seed() -> None:
    assert generate(7) == generate(7)
    assert generate(7) != generate(8)
    assert generate(7, {"int32", "if"}) == generate(7, {"int32", "if"})


def test_unknown_feature_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown feature 'nope'"):
        generate(1, {"nope"})


def test_layout_is_read_back_from_the_text() -> None:
    k = generate_kernel(3)
    assert layout_of(k.text) == k.layout
    with pytest.raises(ValueError):
        layout_of(".version 8.0\n")


# instructions each feature flag must produce somewhere in 40 kernels
EVIDENCE = {
    "int8": "cvt.s32.s8",
    "int16": ".s16",
    "int32": "mul.hi",
    "int64": ".s64",
    "carry": "addc",
    "float32": ".f32",
    "float64": ".f64",
    "convert": "cvt.r",
    "predicates": "setp",
    "if": "bra",
    "switch": "brx.idx",
    "loop": "setp.lt.u",
    "irreducible": "setp.ge.u32",
    "exit": "exit;",
    "memory": "ld.global",
    "shared": "ld.shared",
    "shared-atomic": "atom.shared",
    "atomic": "atom.global",
    "shuffle": "shfl.sync",
    "vote": "vote.sync",
    "redux": "redux.sync",
    "bar-red": "bar.red",
    "call": "call",
    "guards": "@%p",
    "divergent-loop": "setp.lt.u",
    "uniform-atomic": "atom.global",
    "local-frame": "cvta.local",
    "param-load": "ld.param.f",
    "wide-iv-loop": "cvt.u64.u32",
}


@pytest.mark.parametrize("feat", sorted(ALL_FEATURES))
def test_each_feature_emits_its_code(feat: str) -> None:
    assert feat in EVIDENCE, f"add evidence for the new feature {feat}"
    texts = [generate(s, {"predicates", "int32", feat}) for s in range(40)]
    assert any(EVIDENCE[feat] in t.split(".entry", 1)[1] for t in texts)


@pytest.mark.parametrize("seed", range(12))
def test_generated_kernels_assemble(seed: int, tmp_path: Path) -> None:
    ptxas_check(generate(seed), "sm_80", tmp_path)


@pytest.mark.parametrize("seed", range(0, 40, 5))
def test_generated_kernels_run_at_every_shape(seed: int) -> None:
    k = generate_kernel(seed)
    for grid, block in SHAPES:
        res = launch(k.text, "fk", grid, block, make_args(k.layout, seed, grid, block))
        assert res.warp_instructions > 0


@pytest.mark.parametrize("name", PASSES)
def test_passes_on_random_kernels(name: str) -> None:
    for seed in range(40):
        res = check_pipeline(generate(seed), [name], seed=seed)
        assert res.ok, f"{name} seed {seed}: {res.kind}: {res.message}"
        assert res.runs == 3


@pytest.mark.slow
@pytest.mark.parametrize("name", PASSES)
def test_passes_on_many_random_kernels(name: str) -> None:
    for seed in range(1000, 1050):
        res = check_pipeline(generate(seed), [name], seed=seed)
        assert res.ok, f"{name} seed {seed}: {res.kind}: {res.message}"


def test_divergence_analysis_is_sound_on_random_kernels() -> None:
    for seed in range(30):
        res = check_uniformity(generate(seed), seed=seed)
        assert res.ok, f"seed {seed}: {res.kind}: {res.message}"


# -- the checker catches a broken pass ------------------------------------------------


class _SwapSub(FunctionPass):
    """A planted bug: ``sub a, b`` becomes ``sub b, a``."""

    name = "test-swap-sub"

    def run(self, func, am):  # type: ignore[no-untyped-def]
        changed = False
        for b in func.blocks:
            for inst in b.insts:
                if inst.opcode == "sub" and len(inst.uses) == 2 and inst.ast.pred is None:
                    inst.uses = [inst.uses[1], inst.uses[0]]
                    changed = True
        return changed


def test_a_planted_bug_is_caught() -> None:
    register(_SwapSub)
    try:
        kinds = {check_pipeline(generate(s), ["test-swap-sub"], seed=s).kind for s in range(10)}
    finally:
        del REGISTRY["test-swap-sub"]
    assert "mismatch" in kinds


def test_a_pipeline_crash_is_reported() -> None:
    res = check_pipeline(generate(1), ["no-such-pass"])
    assert res.kind == "crash" and "no-such-pass" in res.message


# -- interpreter bugs the generator found first -------------------------------------------

KERNEL = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<3>;
\t.reg .f64 %fd<3>;
\t.reg .pred %p<2>;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, %tid.x;
{body}
\tret;
}}
"""


@pytest.mark.parametrize(
    "mode,expected",
    [("rn", np.inf), ("rz", np.finfo(np.float64).max), ("rm", np.finfo(np.float64).max),
     ("rp", np.inf)],
)  # fmt: skip
def test_f64_multiply_overflow_rounds_by_mode(mode: str, expected: float) -> None:
    """``mul.rz.f64`` of two huge values crashed the interpreter (OverflowError);
    directed rounding toward zero must give the largest finite value, not infinity."""
    body = f"""\tmov.f64 %fd1, 0d7FEFFFFFFFFFFFFF;
\tmul.{mode}.f64 %fd2, %fd1, %fd1;
\tneg.f64 %fd1, %fd1;
\tmul.{mode}.f64 %fd1, %fd1, 0d7FEFFFFFFFFFFFFF;
\tst.global.f64 [%rd1], %fd2;
\tst.global.f64 [%rd1+8], %fd1;"""
    out = np.zeros(2, dtype=np.float64)
    launch(KERNEL.format(body=body), "k", 1, 1, [out])
    neg_expected = -np.inf if mode in ("rn", "rm") else -np.finfo(np.float64).max
    assert out[0] == expected and out[1] == neg_expected


def test_match_all_with_a_predicate_result() -> None:
    """``match.all.sync.b32 d|p`` crashed the interpreter (IndexError)."""
    body = """\tshr.u32 %r2, %r1, 4;
\tmatch.all.sync.b32 %r3|%p1, %r2, 0xffffffff;
\tselp.u32 %r2, 1, 0, %p1;
\tmul.wide.u32 %rd2, %r1, 8;
\tadd.s64 %rd2, %rd1, %rd2;
\tst.global.v2.u32 [%rd2], {%r3, %r2};"""
    out = np.zeros(64, dtype=np.uint32)
    launch(KERNEL.format(body=body), "k", 1, 32, [out])
    assert (out[0::2] == 0).all() and (out[1::2] == 0).all()  # lanes differ: no match
    out = np.zeros(32, dtype=np.uint32)
    launch(KERNEL.format(body=body), "k", 1, 16, [out])
    assert (out[0::2] == 0xFFFF).all() and (out[1::2] == 1).all()  # all 16 lanes agree


def test_no_uni_on_a_varying_guard_whose_targets_coincide() -> None:
    """Found by the generator (an ``if`` with an empty body): ``@%p bra L; L:`` with a
    varying ``%p`` is no divergent branch in the CFG, but ``.uni`` promises one guard
    value per warp, and the interpreter refuses the broken promise."""
    body = """\tsetp.lt.u32 %p1, %r1, 5;
\t@%p1 bra $L1;
$L1:
\tst.global.u32 [%rd1], %r1;"""
    text = KERNEL.format(body=body)
    out = optimize(text, "<t>", ["mark-uniform-branches"], release=True).text
    assert "bra.uni" not in out
    res = differential(text, out, "k", 1, 32, lambda s: [np.zeros(1, np.uint32)], trials=1)
    assert res.ok and not res.both_failed


CASES = sorted((Path(__file__).parent / "fuzz_cases").glob("*.ptx"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_past_findings_stay_fixed(path: Path) -> None:
    text = path.read_text()
    seed = int(text.split("seed=", 1)[1].split()[0])
    for name in PASSES:
        res = check_pipeline(text, [name], seed=seed, trials=2)
        assert res.ok, f"{name}: {res.kind}: {res.message}"
    res = check_uniformity(text, seed=seed)
    assert res.ok, res.message


# (a, b) -> (max.f64, min.f64, max.f32 of the low words), as an H100 computed them
NAN_MINMAX = [
    (
        (0x7FF8000000000001, 0xFFFFFFFF4BE1BC89),
        (0xFFFFFFFF4BE1BC89, 0xFFFFFFFF4BE1BC89, 0x4BE1BC89),
    ),
    (
        (0xFFFFFFFF4BE1BC89, 0x7FF8000000000001),
        (0x7FF8000000000001, 0x7FF8000000000001, 0x4BE1BC89),
    ),
    ((0x7FF0000000000001, 0x3FF0000000000000), (0x3FF0000000000000, 0x3FF0000000000000, 0x1)),
    ((0xFFF8000000000000, 0x7FF8000000000000), (0x7FF8000000000000, 0x7FF8000000000000, 0x0)),
    (
        (0x7FC000017FC00001, 0xFFC00002FFC00002),
        (0x7FC000017FC00001, 0xFFC00002FFC00002, 0x7FFFFFFF),
    ),
    (
        (0x7F8000017F800001, 0x7FC123457FC12345),
        (0x7FC123457FC12345, 0x7F8000017F800001, 0x7FFFFFFF),
    ),
]


@pytest.mark.parametrize("lanes", [6, 37])
def test_min_max_of_nans_is_the_same_in_every_lane(lanes: int) -> None:
    """Found by the generator: ``max.f64`` of two NaNs gave one NaN in some lanes and
    the other NaN in others (numpy's choice depends on the element's position), so
    a uniform value differed between lanes.  Expected bits measured on an H100."""
    rows = [NAN_MINMAX[i % len(NAN_MINMAX)] for i in range(lanes)]
    inp = np.array([ab for ab, _ in rows], dtype=np.uint64)
    out = inp.copy()
    launch(_NAN_KERNEL, "k", 1, lanes, [out])
    got = out.reshape(-1, 2)
    for i, (_, (mx, mn, _)) in enumerate(rows):
        assert (int(got[i, 0]), int(got[i, 1])) == (mx, mn), i
    f32 = np.zeros(lanes, dtype=np.uint32)
    launch(_NAN_KERNEL_F32, "k", 1, lanes, [inp.copy(), f32])
    assert [int(x) for x in f32] == [r[1][2] for r in rows]


_NAN_KERNEL = KERNEL.format(
    body="""\tmul.wide.u32 %rd2, %r1, 16;
\tadd.s64 %rd2, %rd1, %rd2;
\tld.global.v2.f64 {%fd1, %fd2}, [%rd2];
\tmax.f64 %fd0, %fd1, %fd2;
\tmin.f64 %fd1, %fd1, %fd2;
\tst.global.v2.f64 [%rd2], {%fd0, %fd1};"""
)
_NAN_KERNEL_F32 = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 inp, .param .u64 out)
{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<6>;
\t.reg .f32 %f<4>;
\tld.param.u64 %rd1, [inp];
\tld.param.u64 %rd2, [out];
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd3, %r1, 16;
\tadd.s64 %rd3, %rd1, %rd3;
\tld.global.f32 %f1, [%rd3];
\tld.global.f32 %f2, [%rd3+8];
\tmax.f32 %f3, %f1, %f2;
\tmul.wide.u32 %rd4, %r1, 4;
\tadd.s64 %rd4, %rd2, %rd4;
\tst.global.f32 [%rd4], %f3;
\tret;
}
"""


# NaN operands of f64 arithmetic, as an H100 propagated them.  A: quiet NaN, B and C:
# signalling NaNs (quietened in the result), 1: the number 1.0.  Columns: add, sub, mul,
# div.rn, fma.rn, sqrt.rn (of the first operand), fma.rz.
_A, _B, _C, _ONE = 0x7FF8000000000AAA, 0xFFF0000000000BBB, 0x7FF4000000000CCC, 0x3FF0000000000000
_QB, _QC = 0xFFF8000000000BBB, 0x7FFC000000000CCC
NAN_F64 = {
    (_A, _B, _C): (_QB, _QB, _QB, _A, _QB, _A, _QB),
    (_A, _B, _ONE): (_QB, _QB, _QB, _A, _QB, _A, _QB),
    (_A, _ONE, _C): (_A, _A, _A, _A, _QC, _A, _QC),
    (_A, _ONE, _ONE): (_A,) * 7,
    (_ONE, _B, _C): (_QB, _QB, _QB, _QB, _QB, _ONE, _QB),
    (_ONE, _ONE, _C): (0x4000000000000000, 0, _ONE, _ONE, _QC, _ONE, _QC),
}
_NAN_F64_KERNEL = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 inp, .param .u64 out)
{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<8>;
\t.reg .f64 %fd<12>;
\tld.param.u64 %rd1, [inp];
\tld.param.u64 %rd2, [out];
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd3, %r1, 24;
\tadd.s64 %rd4, %rd1, %rd3;
\tld.global.f64 %fd1, [%rd4];
\tld.global.f64 %fd2, [%rd4+8];
\tld.global.f64 %fd3, [%rd4+16];
\tmul.wide.u32 %rd5, %r1, 56;
\tadd.s64 %rd6, %rd2, %rd5;
\tadd.rn.f64 %fd4, %fd1, %fd2;
\tsub.rn.f64 %fd5, %fd1, %fd2;
\tmul.rn.f64 %fd6, %fd1, %fd2;
\tdiv.rn.f64 %fd7, %fd1, %fd2;
\tfma.rn.f64 %fd8, %fd1, %fd2, %fd3;
\tsqrt.rn.f64 %fd9, %fd1;
\tfma.rz.f64 %fd10, %fd1, %fd2, %fd3;
\tst.global.f64 [%rd6], %fd4;
\tst.global.f64 [%rd6+8], %fd5;
\tst.global.f64 [%rd6+16], %fd6;
\tst.global.f64 [%rd6+24], %fd7;
\tst.global.f64 [%rd6+32], %fd8;
\tst.global.f64 [%rd6+40], %fd9;
\tst.global.f64 [%rd6+48], %fd10;
\tret;
}
"""


@pytest.mark.parametrize("lanes", [6, 37])
def test_f64_nan_operands_propagate_like_the_hardware(lanes: int) -> None:
    """Found by the generator: ``fma.rp.f64`` with NaN operands returned one NaN payload
    before the round trip and another after it (numpy's choice depends on the array
    position), a false mismatch.  Expected bits measured on an H100."""
    rows = [list(NAN_F64.items())[i % len(NAN_F64)] for i in range(lanes)]
    inp = np.array([k for k, _ in rows], dtype=np.uint64)
    out = np.zeros((lanes, 7), dtype=np.uint64)
    launch(_NAN_F64_KERNEL, "k", 1, lanes, [inp, out])
    for i, (_, want) in enumerate(rows):
        assert tuple(int(x) for x in out[i]) == want, i


def test_f32_nan_results_are_canonical() -> None:
    body = """\tmov.b32 %r2, 0x7fc00001;
\tmov.b32 %r3, 0xffc00002;
\tadd.f32 %r2, %r2, %r3;
\tst.global.u32 [%rd1], %r2;"""
    out = np.zeros(1, np.uint32)
    launch(KERNEL.format(body=body), "k", 1, 1, [out])
    assert int(out[0]) == 0x7FFFFFFF  # measured on an H100
