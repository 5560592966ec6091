"""SIMT interpreter: ldmatrix/stmatrix, mma.sync and wgmma.mma_async against numpy.

The fragments are built here from the PTX ISA's per-lane formulas (groupID = lane >> 2,
tig = lane & 3), independently of the interpreter's tables.  Tolerance: floating
products are compared with rtol 1e-6 (the interpreter rounds the float64 sum once to
fp32; numpy's float64 reference rounds the same way, so they agree to an ulp);
integer and f64 results are exact."""

from __future__ import annotations

import numpy as np
import pytest

from ptxopt.sim import launch

HDR = ".version 8.0\n.target sm_90a\n.address_size 64\n"


def frag_kernel(instr: str, na: int, nb: int, nc: int, wide: str = "b32") -> str:
    """Each lane loads na/nb/nc fragment words (lane-major) and stores nd=nc results."""
    t = "b64" if wide == "b64" else "b32"
    sz = 8 if wide == "b64" else 4
    lines = [
        ".visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)",
        "{",
        f"  .reg .b32 %r<8>; .reg .b64 %rd<16>; .reg .{t} %a<8>; .reg .{t} %b<8>;",
        f"  .reg .{t} %c<8>; .reg .{t} %d<8>;",
        "  mov.u32 %r1, %tid.x;",
    ]
    for name, n, reg in (("pa", na, "a"), ("pb", nb, "b"), ("pc", nc, "c")):
        a_sz = (
            8
            if (reg == "c" or (reg == "a" and wide == "b64") or (reg == "b" and wide == "b64"))
            else 4
        )
        a_sz = sz if reg == "c" or wide == "b64" else 4
        lines += [
            f"  ld.param.u64 %rd1, [{name}];",
            f"  mul.wide.u32 %rd2, %r1, {n * a_sz};",
            "  add.u64 %rd3, %rd1, %rd2;",
        ]
        lines += [
            f"  ld.global.{t if a_sz == sz else 'b32'} %{reg}{i}, [%rd3+{a_sz * i}];"
            for i in range(n)
        ]
    vec = lambda r, n: "{" + ", ".join(f"%{r}{i}" for i in range(n)) + "}"  # noqa: E731
    lines.append(f"  {instr} {vec('d', nc)}, {vec('a', na)}, {vec('b', nb)}, {vec('c', nc)};")
    lines += [
        "  ld.param.u64 %rd1, [pd];",
        f"  mul.wide.u32 %rd2, %r1, {nc * sz};",
        "  add.u64 %rd3, %rd1, %rd2;",
    ]
    lines += [f"  st.global.{t} [%rd3+{sz * i}], %d{i};" for i in range(nc)]
    lines += ["  ret;", "}"]
    return HDR + "\n".join(lines) + "\n"


LANE = np.arange(32)
G, T = LANE >> 2, LANE & 3


def c_frag(C: np.ndarray) -> np.ndarray:
    """m16n8 accumulator: c0,c1 row g; c2,c3 row g+8; cols 2*tig, 2*tig+1."""
    return np.stack([C[G, 2 * T], C[G, 2 * T + 1], C[G + 8, 2 * T], C[G + 8, 2 * T + 1]], 1)


def c_unfrag(d: np.ndarray) -> np.ndarray:
    out = np.zeros((16, 8), dtype=d.dtype)
    out[G, 2 * T], out[G, 2 * T + 1], out[G + 8, 2 * T], out[G + 8, 2 * T + 1] = d.T
    return out


def pack16(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(np.uint32) | (hi.astype(np.uint32) << 16)


@pytest.mark.parametrize("et", ["f16", "bf16"])
def test_mma_m16n8k16_half_inputs_f32_accumulate(et: str) -> None:
    rng = np.random.default_rng(1)
    A = rng.uniform(-2, 2, (16, 16)).astype(np.float32)
    B = rng.uniform(-2, 2, (16, 8)).astype(np.float32)
    C = rng.uniform(-2, 2, (16, 8)).astype(np.float32)
    if et == "f16":
        Ab, Bb = A.astype(np.float16).view(np.uint16), B.astype(np.float16).view(np.uint16)
        A64 = A.astype(np.float16).astype(np.float64)
        B64 = B.astype(np.float16).astype(np.float64)
    else:
        Ab = (A.view(np.uint32) >> 16).astype(np.uint16)
        Bb = (B.view(np.uint32) >> 16).astype(np.uint16)
        A64 = (Ab.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        B64 = (Bb.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    a = np.stack(
        [
            pack16(Ab[G, 2 * T], Ab[G, 2 * T + 1]),
            pack16(Ab[G + 8, 2 * T], Ab[G + 8, 2 * T + 1]),
            pack16(Ab[G, 2 * T + 8], Ab[G, 2 * T + 9]),
            pack16(Ab[G + 8, 2 * T + 8], Ab[G + 8, 2 * T + 9]),
        ],
        1,
    )
    b = np.stack(
        [pack16(Bb[2 * T, G], Bb[2 * T + 1, G]), pack16(Bb[2 * T + 8, G], Bb[2 * T + 9, G])], 1
    )
    c = c_frag(C).view(np.uint32)
    d = np.zeros((32, 4), dtype=np.uint32)
    src = frag_kernel(f"mma.sync.aligned.m16n8k16.row.col.f32.{et}.{et}.f32", 4, 2, 4)
    launch(src, "k", 1, 32, [a.ravel(), b.ravel(), np.ascontiguousarray(c).ravel(), d.ravel()])
    got = c_unfrag(d.reshape(32, 4).view(np.float32))
    want = (A64 @ B64 + C).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_mma_m16n8k8_tf32_uses_the_upper_19_bits() -> None:
    rng = np.random.default_rng(2)
    A = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    B = rng.uniform(-1, 1, (8, 8)).astype(np.float32)
    C = np.zeros((16, 8), dtype=np.float32)
    Au, Bu = A.view(np.uint32), B.view(np.uint32)
    a = np.stack([Au[G, T], Au[G + 8, T], Au[G, T + 4], Au[G + 8, T + 4]], 1)
    b = np.stack([Bu[T, G], Bu[T + 4, G]], 1)
    d = np.zeros(32 * 4, dtype=np.uint32)
    src = frag_kernel("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 4, 2, 4)
    launch(src, "k", 1, 32, [a.ravel(), b.ravel(), c_frag(C).view(np.uint32).ravel(), d])
    trunc = lambda x: (x.view(np.uint32) & 0xFFFFE000).view(np.float32).astype(np.float64)  # noqa: E731
    want = (trunc(A) @ trunc(B)).astype(np.float32)
    np.testing.assert_allclose(c_unfrag(d.reshape(32, 4).view(np.float32)), want, rtol=1e-6)


@pytest.mark.parametrize("at,bt", [("s8", "s8"), ("u8", "s8")])
def test_mma_m16n8k32_int8_is_exact(at: str, bt: str) -> None:
    rng = np.random.default_rng(3)
    A = rng.integers(-128 if at == "s8" else 0, 128 if at == "s8" else 256, (16, 32))
    B = rng.integers(-128, 128, (32, 8))
    C = rng.integers(-1000, 1000, (16, 8))
    Ab, Bb = (A & 0xFF).astype(np.uint32), (B & 0xFF).astype(np.uint32)

    def pk(x: list[np.ndarray]) -> np.ndarray:
        return x[0] | (x[1] << 8) | (x[2] << 16) | (x[3] << 24)

    a = np.stack(
        [pk([Ab[G + 8 * (j & 1), 4 * T + 16 * (j >> 1) + e] for e in range(4)]) for j in range(4)],
        1,
    )
    b = np.stack([pk([Bb[4 * T + 16 * j + e, G] for e in range(4)]) for j in range(2)], 1)
    d = np.zeros(32 * 4, dtype=np.uint32)
    src = frag_kernel(f"mma.sync.aligned.m16n8k32.row.col.s32.{at}.{bt}.s32", 4, 2, 4)
    c = c_frag(C).astype(np.int32).view(np.uint32)
    launch(
        src, "k", 1, 32, [a.astype(np.uint32).ravel(), b.astype(np.uint32).ravel(), c.ravel(), d]
    )
    assert (c_unfrag(d.reshape(32, 4).view(np.int32)) == A @ B + C).all()


def test_mma_m8n8k4_f64_is_exact_for_small_integers() -> None:
    rng = np.random.default_rng(4)
    A = rng.integers(-9, 9, (8, 4)).astype(np.float64)
    B = rng.integers(-9, 9, (4, 8)).astype(np.float64)
    C = rng.integers(-9, 9, (8, 8)).astype(np.float64)
    a = A[G, T][:, None]
    b = B[T, G][:, None]
    c = np.stack([C[G, 2 * T], C[G, 2 * T + 1]], 1)
    d = np.zeros(32 * 2, dtype=np.float64)
    src = frag_kernel("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 1, 1, 2, wide="b64")
    launch(src, "k", 1, 32, [a.ravel(), b.ravel(), c.ravel(), d])
    dd = d.reshape(32, 2)
    got = np.zeros((8, 8))
    got[G, 2 * T], got[G, 2 * T + 1] = dd[:, 0], dd[:, 1]
    assert (got == A @ B + C).all()


LDM = (
    HDR
    + r"""
.visible .entry k(.param .u64 src, .param .u64 out, .param .u64 back)
{
  .reg .b32 %r<16>; .reg .b64 %rd<8>;
  .shared .align 16 .b8 sm[1024];
  .shared .align 16 .b8 sm2[1024];
  mov.u32 %r1, %tid.x;
  ld.param.u64 %rd1, [src];
  mul.wide.u32 %rd2, %r1, 32;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.v4.u32 {%r4, %r5, %r6, %r7}, [%rd3];
  ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd3+16];
  mov.u32 %r2, sm;
  shl.b32 %r3, %r1, 5;
  add.u32 %r2, %r2, %r3;
  st.shared.v4.u32 [%r2], {%r4, %r5, %r6, %r7};
  st.shared.v4.u32 [%r2+16], {%r10, %r11, %r12, %r13};
  bar.sync 0;
  // lane l addresses row l of the four stacked 8x8 matrices (rows of 16 bytes, stride 32)
  mov.u32 %r8, sm;
  shl.b32 %r9, %r1, 5;
  add.u32 %r8, %r8, %r9;
  ldmatrix.sync.aligned.m8n8.x4MODE.shared.b16 {%r10, %r11, %r12, %r13}, [%r8];
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd4, %r1, 16;
  add.u64 %rd3, %rd1, %rd4;
  st.global.v4.u32 [%rd3], {%r10, %r11, %r12, %r13};
  mov.u32 %r8, sm2;
  add.u32 %r8, %r8, %r9;
  stmatrix.sync.aligned.m8n8.x4MODE.shared.b16 [%r8], {%r10, %r11, %r12, %r13};
  bar.sync 0;
  mov.u32 %r2, sm2;
  add.u32 %r2, %r2, %r3;
  ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [%r2];
  ld.param.u64 %rd1, [back];
  add.u64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {%r4, %r5, %r6, %r7};
  ret;
}
"""
)


@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_x4_fragments_and_stmatrix_inverse(trans: bool) -> None:
    mem = np.arange(512, dtype=np.uint16)  # 1024 bytes: row l of matrix i at byte 32*(8i+r)
    out = np.zeros(32 * 4, dtype=np.uint32)
    back = np.zeros(512, dtype=np.uint16)
    src = LDM.replace("MODE", ".trans" if trans else "")
    launch(src, "k", 1, 32, [mem.view(np.uint32), out, back.view(np.uint32)])
    o = out.reshape(32, 4)
    for i in range(4):
        M = np.stack([mem[16 * (8 * i + r) : 16 * (8 * i + r) + 8] for r in range(8)])
        if trans:
            M = M.T
        want = pack16(M[G, 2 * T], M[G, 2 * T + 1])
        assert (o[:, i] == want).all(), i
    # stmatrix with the same addresses writes the rows back where ldmatrix read them
    rows = np.concatenate([np.arange(16 * r, 16 * r + 8) for r in range(32)])
    assert (back[rows] == mem[rows]).all()
