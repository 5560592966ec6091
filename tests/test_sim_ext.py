"""SIMT interpreter: multiply-add carry chains, packed half comparisons, directed
rounding of div/sqrt/rcp, 128-bit registers and accesses, vector atomics, checked
against exact references (Python integers and :class:`fractions.Fraction`)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from ptxopt.sim import launch
from ptxopt.sim.floats import round_fraction, sqrt_fraction

HDR = ".version 8.3\n.target sm_90\n.address_size 64\n"

# thread index %r0 and byte offsets %rd4 (x4) / %rd8 (x8) for per-thread buffers
PROLOGUE = """
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mad.lo.s32 %r0, %r1, %r2, %r0;
    mul.wide.u32 %rd4, %r0, 4;
    mul.wide.u32 %rd8, %r0, 8;
"""


def kernel(params: list[str], body: str, regs: str = "") -> str:
    plist = ", ".join(f".param .u64 {p}" for p in params)
    decl = (
        ".reg .pred %p<8>;\n.reg .b16 %h<8>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<32>;\n"
        ".reg .f32 %f<8>;\n.reg .f64 %fd<8>;\n" + regs
    )
    return HDR + f".visible .entry k({plist})\n{{\n{decl}{PROLOGUE}{body}\n}}\n"


def addr(reg: str, param: str, scale: str) -> str:
    """``reg = param + per-thread offset`` (scale: %rd4 or %rd8)."""
    return f"    ld.param.u64 {reg}, [{param}];\n    add.s64 {reg}, {reg}, {scale};\n"


def run(ptx: str, n: int, args: list[np.ndarray], block: int = 64) -> None:
    launch(ptx, "k", (n + block - 1) // block, block, args)


# -- multiply-add carry chains -------------------------------------------------------


def test_mad_cc_chain_multiplies_64x64_to_128_bits() -> None:
    # [r13..r10] = [r5,r4] * [r7,r6] with 32-bit limbs (the PTX ISA's own example)
    body = (
        addr("%rd10", "pa", "%rd8")
        + addr("%rd11", "pb", "%rd8")
        + addr("%rd12", "plo", "%rd8")
        + addr("%rd13", "phi", "%rd8")
        + """
    ld.global.v2.u32 {%r4, %r5}, [%rd10];
    ld.global.v2.u32 {%r6, %r7}, [%rd11];
    mul.lo.u32     %r10, %r4, %r6;
    mul.hi.u32     %r11, %r4, %r6;
    mad.lo.cc.u32  %r11, %r5, %r6, %r11;
    madc.hi.u32    %r12, %r5, %r6, 0;
    mad.lo.cc.u32  %r11, %r4, %r7, %r11;
    madc.hi.cc.u32 %r12, %r4, %r7, %r12;
    addc.u32       %r13, 0, 0;
    mad.lo.cc.u32  %r12, %r5, %r7, %r12;
    madc.hi.u32    %r13, %r5, %r7, %r13;
    st.global.v2.u32 [%rd12], {%r10, %r11};
    st.global.v2.u32 [%rd13], {%r12, %r13};
"""
    )
    n = 256
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2**64, n, dtype=np.uint64)
    b = rng.integers(0, 2**64, n, dtype=np.uint64)
    a[:4] = [2**64 - 1, 2**64 - 1, 0, 1]
    b[:4] = [2**64 - 1, 1, 5, 2**64 - 1]
    lo = np.zeros(n, np.uint64)
    hi = np.zeros(n, np.uint64)
    run(kernel(["pa", "pb", "plo", "phi"], body), n, [a, b, lo, hi])
    for i in range(n):
        p = int(a[i]) * int(b[i])
        assert int(lo[i]) == p & (2**64 - 1) and int(hi[i]) == p >> 64, i


@pytest.mark.parametrize("ty", ["u32", "s32", "u64", "s64"])
def test_mad_hi_lo_cc_carry_out_and_madc_carry_in(ty: str) -> None:
    bits = int(ty[1:])
    dt = {"u32": np.uint32, "s32": np.int32, "u64": np.uint64, "s64": np.int64}[ty]
    scale = "%rd4" if bits == 32 else "%rd8"
    r = "%r" if bits == 32 else "%rd"
    body = (
        addr("%rd20", "pa", scale)
        + addr("%rd21", "pb", scale)
        + addr("%rd22", "pc", scale)
        + addr("%rd23", "pd", scale)
        + addr("%rd24", "pe", scale)
        + f"""
    ld.global.{ty} {r}10, [%rd20];
    ld.global.{ty} {r}11, [%rd21];
    ld.global.{ty} {r}12, [%rd22];
    mad.hi.cc.{ty} {r}13, {r}10, {r}11, {r}12;
    madc.lo.cc.{ty} {r}14, {r}10, {r}11, {r}12;
    addc.{ty} {r}15, 0, 0;
    st.global.{ty} [%rd23], {r}13;
    add.{ty} {r}14, {r}14, {r}15;
    st.global.{ty} [%rd24], {r}14;
"""
    )
    n = 256
    rng = np.random.default_rng(bits)
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    c = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    a[:3], b[:3], c[:3] = info.max, info.max, info.max
    d = np.zeros(n, dt)
    e = np.zeros(n, dt)
    run(kernel(["pa", "pb", "pc", "pd", "pe"], body), n, [a, b, c, d, e])
    mask = 2**bits - 1
    for i in range(n):
        p = int(a[i]) * int(b[i])  # signed product for .s types, as the ISA says
        uc = int(c[i]) & mask
        h = (p >> bits) & mask
        s1 = h + uc
        d_exp, cf1 = s1 & mask, s1 >> bits
        s2 = (p & mask) + uc + cf1
        lo, cf2 = s2 & mask, s2 >> bits
        assert int(d[i]) & mask == d_exp, i
        assert int(e[i]) & mask == (lo + cf2) & mask, i


# -- packed half comparisons -----------------------------------------------------------


def _f16_pairs(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.choice(
        np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, 6e-8, 65504.0]), 2 * n
    ).astype(np.float16)
    return v.view(np.uint32)


@pytest.mark.parametrize("cmp", ["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "nan"])
def test_setp_and_set_f16x2_compare_each_half(cmp: str) -> None:
    body = (
        addr("%rd20", "pa", "%rd4")
        + addr("%rd21", "pb", "%rd4")
        + addr("%rd22", "pout", "%rd4")
        + addr("%rd23", "pset", "%rd4")
        + addr("%rd24", "pseth", "%rd4")
        + f"""
    ld.global.b32 %r10, [%rd20];
    ld.global.b32 %r11, [%rd21];
    setp.{cmp}.f16x2 %p1|%p2, %r10, %r11;
    selp.u32 %r12, 1, 0, %p1;
    selp.u32 %r13, 2, 0, %p2;
    or.b32 %r12, %r12, %r13;
    setp.{cmp}.and.f16x2 %p3|%p4, %r10, %r11, %p1;
    selp.u32 %r13, 4, 0, %p4;
    or.b32 %r12, %r12, %r13;
    st.global.u32 [%rd22], %r12;
    set.{cmp}.u32.f16x2 %r14, %r10, %r11;
    st.global.u32 [%rd23], %r14;
    set.{cmp}.f16x2.f16x2 %r15, %r10, %r11;
    st.global.u32 [%rd24], %r15;
"""
    )
    n = 256
    a, b = _f16_pairs(n, 1), _f16_pairs(n, 2)
    out, s1, s2 = (np.zeros(n, np.uint32) for _ in range(3))
    run(kernel(["pa", "pb", "pout", "pset", "pseth"], body), n, [a, b, out, s1, s2])
    ah, bh = a.view(np.float16).astype(np.float64), b.view(np.float16).astype(np.float64)
    un = cmp.endswith("u") or cmp == "nan"
    base = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal}
    base |= {"gt": np.greater, "ge": np.greater_equal}
    nan = np.isnan(ah) | np.isnan(bh)
    if cmp == "nan":
        t = nan
    else:
        t = base[cmp.rstrip("u")](ah, bh)
        t = (t | nan) if un else (t & ~nan)
    lo, hi = t[0::2], t[1::2]
    assert np.array_equal(out, lo * 1 + hi * 2 + (hi & lo) * 4)
    assert np.array_equal(s1, lo * 0xFFFF + hi * 0xFFFF0000)
    assert np.array_equal(s2, lo * 0x3C00 + hi * 0x3C000000)


# -- directed rounding of div, rcp and sqrt ----------------------------------------------


def _interesting(fmt: str, n: int, seed: int) -> np.ndarray:
    dt = np.float32 if fmt == "f32" else np.float64
    ut = np.uint32 if fmt == "f32" else np.uint64
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, np.iinfo(ut).max, n, dtype=ut, endpoint=True)
    x = bits.view(dt).copy()
    fi = np.finfo(dt)
    special = [1.0, 3.0, 10.0, fi.max, fi.tiny, fi.smallest_subnormal, 0.0, np.inf, 2.0, 0.1]
    x[: len(special)] = special
    x[len(special) : n // 3] = rng.uniform(0.5, 4, n // 3 - len(special))
    x[np.isnan(x)] = 1.5
    return x


@pytest.mark.parametrize("fmt", ["f32", "f64"])
@pytest.mark.parametrize("rnd", ["rn", "rz", "rm", "rp"])
def test_div_rcp_sqrt_are_correctly_rounded_in_every_mode(fmt: str, rnd: str) -> None:
    scale = "%rd4" if fmt == "f32" else "%rd8"
    f = "%f" if fmt == "f32" else "%fd"
    body = (
        addr("%rd20", "pa", scale)
        + addr("%rd21", "pb", scale)
        + addr("%rd22", "pq", scale)
        + addr("%rd23", "pr", scale)
        + addr("%rd24", "ps", scale)
        + f"""
    ld.global.{fmt} {f}1, [%rd20];
    ld.global.{fmt} {f}2, [%rd21];
    div.{rnd}.{fmt} {f}3, {f}1, {f}2;
    st.global.{fmt} [%rd22], {f}3;
    rcp.{rnd}.{fmt} {f}4, {f}2;
    st.global.{fmt} [%rd23], {f}4;
    abs.{fmt} {f}5, {f}1;
    sqrt.{rnd}.{fmt} {f}6, {f}5;
    st.global.{fmt} [%rd24], {f}6;
"""
    )
    n = 384
    a = _interesting(fmt, n, 11)
    b = _interesting(fmt, n, 12)[::-1].copy()
    q, r, s = (np.zeros_like(a) for _ in range(3))
    run(kernel(["pa", "pb", "pq", "pr", "ps"], body), n, [a, b, q, r, s])

    def ref_div(x: float, y: float) -> float:
        if not (math.isfinite(x) and math.isfinite(y)) or y == 0 or x == 0:
            with np.errstate(all="ignore"):
                return float(np.asarray(x, a.dtype) / np.asarray(y, a.dtype))
        v = round_fraction(Fraction(x) / Fraction(y), fmt, rnd)
        return math.copysign(abs(v), x * y) if v == 0 else v

    def ref_sqrt(x: float) -> float:
        if not math.isfinite(x) or x == 0:
            return math.sqrt(x)
        return round_fraction(sqrt_fraction(x), fmt, rnd)

    for i in range(n):
        x, y = float(a[i]), float(b[i])
        for got, exp in ((q[i], ref_div(x, y)), (r[i], ref_div(1.0, y)), (s[i], ref_sqrt(abs(x)))):
            assert np.asarray(exp, a.dtype).tobytes() == np.asarray(got).tobytes(), (
                i,
                x,
                y,
                got,
                exp,
            )


def test_round_fraction_reference_agrees_with_numpy_rn() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(-1e6, 1e6, 200)
    y = rng.uniform(-1e3, 1e3, 200)
    for a, b in zip(x, y, strict=True):
        assert round_fraction(Fraction(a) / Fraction(b), "f64", "rn") == a / b
        assert round_fraction(Fraction(a) / Fraction(b), "f32", "rn") == float(
            np.float32(a) / np.float32(b)
        ) or round_fraction(
            Fraction(float(np.float32(a))) / Fraction(float(np.float32(b))), "f32", "rn"
        ) == float(np.float32(a) / np.float32(b))
    assert round_fraction(Fraction(2) ** 2000, "f64", "rz") == np.finfo(np.float64).max
    assert round_fraction(Fraction(2) ** 2000, "f64", "rn") == math.inf
    assert round_fraction(Fraction(1, 2**1080), "f64", "rp") == 5e-324
    assert round_fraction(Fraction(1, 2**1080), "f64", "rz") == 0.0


# -- 128-bit registers and accesses ----------------------------------------------------


def test_b128_registers_loads_stores_and_moves() -> None:
    body = (
        addr("%rd20", "pa", "%rd8")
        + addr("%rd21", "pout", "%rd8")
        + """
    mul.wide.u32 %rd22, %r0, 16;
    ld.param.u64 %rd23, [pa];
    add.s64 %rd23, %rd23, %rd22;
    ld.global.b128 %q1, [%rd23];
    mov.b128 {%rd10, %rd11}, %q1;
    xor.b64 %rd12, %rd10, %rd11;
    mov.b128 %q2, {%rd11, %rd12};
    mov.b128 %q3, %q2;
    ld.param.u64 %rd24, [pout];
    add.s64 %rd24, %rd24, %rd22;
    st.global.b128 [%rd24], %q3;
"""
    )
    n = 128
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2**64, 2 * n, dtype=np.uint64)
    out = np.zeros(2 * n, np.uint64)
    run(kernel(["pa", "pout"], body, ".reg .b128 %q<4>;\n"), n, [a, out])
    assert np.array_equal(out[0::2], a[1::2])
    assert np.array_equal(out[1::2], a[0::2] ^ a[1::2])


def test_b128_misaligned_access_is_an_error() -> None:
    from ptxopt.sim import SimError

    body = """
    ld.param.u64 %rd23, [pa];
    ld.global.b128 %q1, [%rd23+8];
"""
    with pytest.raises(SimError, match="misaligned 16-byte"):
        run(kernel(["pa"], body, ".reg .b128 %q<4>;\n"), 32, [np.zeros(64, np.uint64)])


def test_vector_atomic_add_is_per_element_in_lane_order() -> None:
    body = """
    ld.param.u64 %rd20, [pa];
    cvt.rn.f32.u32 %f1, %r0;
    mov.f32 %f2, 0f3F800000;
    atom.global.v2.f32.add {%f3, %f4}, [%rd20], {%f1, %f2};
    add.s64 %rd21, %rd20, 8;
    red.global.v2.f32.add [%rd21], {%f2, %f1};
    ld.param.u64 %rd22, [pout];
    add.s64 %rd22, %rd22, %rd4;
    st.global.f32 [%rd22], %f4;
"""
    a = np.zeros(4, np.float32)
    out = np.zeros(64, np.float32)
    run(kernel(["pa", "pout"], body), 64, [a, out])
    assert list(a) == [sum(range(64)), 64.0, 64.0, sum(range(64))]
    # lanes (and warps) apply in order: lane i saw i earlier increments of 1.0
    assert np.array_equal(out, np.arange(64, dtype=np.float32))


# -- SSA-value uniformity claims ----------------------------------------------------------

SSA_KERNEL = (
    HDR
    + """
.visible .entry k(.param .u64 pout)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, 0;
    mov.u32 %r4, 0;
    setp.lt.u32 %p1, %r1, 7;
    @%p1 bra SKIP;
    add.u32 %r3, %r2, 1;
    mov.u32 %r4, %r1;
SKIP:
    add.u32 %r5, %r3, %r4;
    {
    .reg .b32 %r1;
    add.u32 %r1, %r2, 5;
    mul.lo.u32 %r6, %r1, %r5;
    }
    add.u32 %r1, %r1, %r2;
    ld.param.u64 %rd1, [pout];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r6;
    ret;
}
"""
)


def _ssa_values() -> dict[str, object]:
    from ptxopt.ir.lift import lift_module
    from ptxopt.ptx.parser import parse

    fn = lift_module(parse(SSA_KERNEL)).func("k")
    out: dict[str, object] = {}
    for b in fn.blocks:
        for phi in b.phis:
            out["phi " + phi.result.var] = phi.result
        for ins in b.insts:
            for v in ins.defs:
                out[f"{ins.ast.span.line} {v.var}"] = v
    return out


def test_ssa_claims_check_the_defining_write_and_phi_joins() -> None:
    vals = _ssa_values()
    line = {v: k for k, v in enumerate(SSA_KERNEL.splitlines(), 1)}
    first_r1 = vals[f"{line['    mov.u32 %r1, %tid.x;']} %r1"]
    shadow = next(v for k, v in vals.items() if k.endswith("%r1_1"))  # inner-scope %r1
    later_r1 = vals[f"{line['    add.u32 %r1, %r1, %r2;']} %r1"]
    out = np.zeros(64, np.uint32)
    # uniform values: no violation, although the register %r1 is varying elsewhere
    res = launch(SSA_KERNEL, "k", 2, 32, [out], uniform_claims={"k": [shadow]})
    assert not res.violations
    # varying definitions of %r1 are reported where written and where read, never at
    # the inner scope's %r1
    res = launch(SSA_KERNEL, "k", 2, 32, [out], uniform_claims={"k": [first_r1, later_r1]})
    lines = sorted({v.location.split(":")[1] for v in res.violations})
    exp = {
        line[text]
        for text in (
            "    mov.u32 %r1, %tid.x;",  # written (first_r1)
            "    setp.lt.u32 %p1, %r1, 7;",  # read
            "    mov.u32 %r4, %r1;",  # read
            "    add.u32 %r1, %r1, %r2;",  # read (first_r1) and written (later_r1)
            "    mul.wide.u32 %rd2, %r1, 4;",  # read (later_r1)
        )
    }
    assert lines == sorted(str(x) for x in exp)
    assert all(v.register == "%r1" and v.value.startswith("%r1.") for v in res.violations)
    # phi of %r3 (uniform on both paths: 0 / ctaid+1) is varying at the join because
    # lanes 0..6 took the other path; phi of %r4 likewise
    phi3, phi4 = vals["phi %r3"], vals["phi %r4"]
    res = launch(SSA_KERNEL, "k", 2, 32, [out], uniform_claims={"k": [phi3, phi4]})
    regs = {v.register for v in res.violations}
    assert regs == {"%r3", "%r4"}
    join = line["    add.u32 %r5, %r3, %r4;"]
    assert {v.location.split(":")[1] for v in res.violations} == {str(join)}
    # a value defined uniformly on every path is accepted at the join
    res = launch(SSA_KERNEL, "k", 2, 32, [out], uniform_claims={"k": ["%r2"]})
    assert not res.violations


def test_ssa_phi_claim_holds_when_warp_does_not_diverge() -> None:
    vals = _ssa_values()
    out = np.zeros(64, np.uint32)
    # with blocks of 7 threads (< 7 all take the branch) the phi is uniform
    res = launch(SSA_KERNEL, "k", 1, 7, [out], uniform_claims={"k": [vals["phi %r3"]]})
    assert not res.violations
