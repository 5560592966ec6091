"""Matrix instructions: ``ldmatrix``/``stmatrix`` (m8n8, x1/x2/x4, ``.trans``),
``mma.sync`` (m16n8k16/m16n8k8 f16 and bf16, m16n8k8/m16n8k4 tf32, m16n8k32/m16n8k16
s8/u8, m8n8k4 f64) and ``wgmma.mma_async`` (shared-memory descriptors with the four
layouts of the swizzle modes, register A operands, ``wgmma.fence``/``commit_group``/
``wait_group``).

Fragments: ``groupID = lane >> 2`` and ``tig = lane & 3`` as the PTX ISA names them.
Each layout below lists, per fragment register ``j`` and element ``e`` packed in it,
the (row, column) of the matrix element that lane holds:

* A (M x K, row) of m16n8k16 f16/bf16: reg j holds row ``g + 8*(j&1)``, columns
  ``2*tig + 8*(j>>1) + e``; m16n8k8 f16 is its first two registers.
* B (K x N, col) of m16n8k16: reg j holds rows ``2*tig + 8*j + e``, column ``g``.
* C/D f32/s32 of every m16n8: reg j holds row ``g + 8*(j>>1)``, column ``2*tig + (j&1)``.
* tf32 m16n8k8: A reg j = (row ``g + 8*(j&1)``, col ``tig + 4*(j>>1)``); B reg j =
  (row ``tig + 4*j``, col ``g``).  m16n8k4: the first two A registers, one B register.
* s8/u8 m16n8k32: A reg j = row ``g + 8*(j&1)``, cols ``4*tig + 16*(j>>1) + e``; B reg j
  = rows ``4*tig + 16*j + e``, col ``g``.  m16n8k16: the first two A registers, one B.
* f64 m8n8k4: A = (``g``, ``tig``), B = (``tig``, ``g``), C reg j = (``g``, ``2*tig + j``).

Arithmetic: products of the inputs are exact in float64, and the K products plus the
accumulator are summed in float64 and rounded once (nearest even) to the accumulator
type; the hardware adds in an unspecified order with its own internal precision, so
results agree with any correct fp32 GEMM to within a few ulp (the tests state the
tolerance).  Integer MMAs are exact (s32 wraps, ``.satfinite`` clamps).  tf32 inputs
use the upper 19 bits of their registers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ptxopt.ptx.ast import Addr, Imm, Instr, Reg, Vec
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op, W
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.values import TYPES, Reader, Writer, addr_reader

LANE = np.arange(W)
G8 = LANE >> 2
TIG = LANE & 3


def _fp8_table(exp_bits: int, man_bits: int, bias: int, ieee: bool) -> np.ndarray:
    v = np.arange(256)
    s = np.where(v >> 7, -1.0, 1.0)
    e = (v >> man_bits) & ((1 << exp_bits) - 1)
    f = v & ((1 << man_bits) - 1)
    mag = np.where(
        e == 0,
        f / (1 << man_bits) * 2.0 ** (1 - bias),
        (1 + f / (1 << man_bits)) * 2.0 ** (e.astype(np.float64) - bias),
    )
    out = s * mag
    emax = (1 << exp_bits) - 1
    if ieee:
        out = np.where((e == emax) & (f == 0), s * np.inf, out)
        out = np.where((e == emax) & (f != 0), np.nan, out)
    else:  # e4m3: only S.1111.111 is NaN, no infinities
        out = np.where((e == emax) & (f == (1 << man_bits) - 1), np.nan, out)
    return out.astype(np.float64)


E4M3 = _fp8_table(4, 3, 7, False)
E5M2 = _fp8_table(5, 2, 15, True)

# element type -> (bits per element, decoder of an unsigned array of that width)
ELEM: dict[str, tuple[int, Any]] = {
    "f16": (16, lambda u: u.astype(np.uint16).view(np.float16).astype(np.float64)),
    "bf16": (
        16,
        lambda u: (u.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64),
    ),
    "tf32": (
        32,
        lambda u: (u.astype(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64),
    ),
    "f32": (32, lambda u: u.astype(np.uint32).view(np.float32).astype(np.float64)),
    "f64": (64, lambda u: u.astype(np.uint64).view(np.float64)),
    "s8": (8, lambda u: u.astype(np.uint8).view(np.int8).astype(np.int64)),
    "u8": (8, lambda u: u.astype(np.uint8).astype(np.int64)),
    "e4m3": (8, lambda u: E4M3[u.astype(np.uint8)]),
    "e5m2": (8, lambda u: E5M2[u.astype(np.uint8)]),
    "s32": (32, lambda u: u.astype(np.uint32).view(np.int32).astype(np.int64)),
}
ELEM["f16acc"] = ELEM["f16"]


def _unpack(bits: np.ndarray, ebits: int) -> np.ndarray:
    """(..., nreg) register words -> (..., nreg, per) unsigned elements."""
    if ebits >= 32:
        return bits[..., None]
    per = 32 // ebits
    sh = (np.arange(per, dtype=np.uint64) * ebits)[None]
    b = bits.astype(np.uint64)[..., None]
    return (b >> sh) & np.uint64((1 << ebits) - 1)


def _encode_acc(x: np.ndarray, ty: str, sat: bool) -> np.ndarray:
    """Accumulator values -> register bits (uint32 or uint64 per element)."""
    if ty == "f32":
        return x.astype(np.float32).view(np.uint32)
    if ty == "f64":
        return x.astype(np.float64).view(np.uint64)
    if ty == "f16":
        return x.astype(np.float16).view(np.uint16).astype(np.uint32)
    # s32
    if sat:
        x = np.clip(x, -(2**31), 2**31 - 1)
    return (x & 0xFFFFFFFF).astype(np.uint32)


# ----------------------------------------------------------------------------- layouts


def _layout_a(shape: str, et: str) -> tuple[np.ndarray, np.ndarray]:
    """(32, nreg, per) row and column of each A element a lane holds."""
    m, n, k = _mnk(shape)
    ebits = ELEM[et][0]
    per = max(1, 32 // ebits)
    if shape == "m8n8k4" and et == "f64":
        return G8[:, None, None], TIG[:, None, None]
    nreg = (m * k) // (W * per)
    j = np.arange(nreg)[None, :, None]
    e = np.arange(per)[None, None, :]
    g, t = G8[:, None, None], TIG[:, None, None]
    row = g + 8 * (j & 1)
    col = per * t + (4 * per) * (j >> 1) + e
    return np.broadcast_to(row, (W, nreg, per)), np.broadcast_to(col, (W, nreg, per))


def _layout_b(shape: str, et: str) -> tuple[np.ndarray, np.ndarray]:
    m, n, k = _mnk(shape)
    ebits = ELEM[et][0]
    per = max(1, 32 // ebits)
    if shape == "m8n8k4" and et == "f64":
        return TIG[:, None, None], G8[:, None, None]
    nreg = (n * k) // (W * per)
    j = np.arange(nreg)[None, :, None]
    e = np.arange(per)[None, None, :]
    g, t = G8[:, None, None], TIG[:, None, None]
    row = per * t + (4 * per) * j + e
    col = g
    return np.broadcast_to(row, (W, nreg, per)), np.broadcast_to(col, (W, nreg, per))


def _layout_c(shape: str, ct: str) -> tuple[np.ndarray, np.ndarray]:
    """(32, nreg, per) for the accumulator (f16 accumulators pack two per register)."""
    if shape == "m8n8k4":
        j = np.arange(2)[None, :, None]
        return (
            np.broadcast_to(G8[:, None, None], (W, 2, 1)),
            np.broadcast_to(2 * TIG[:, None, None] + j, (W, 2, 1)),
        )
    g, t = G8[:, None, None], TIG[:, None, None]
    if ct == "f16":
        j = np.arange(2)[None, :, None]
        e = np.arange(2)[None, None, :]
        return (
            np.broadcast_to(g + 8 * j, (W, 2, 2)),
            np.broadcast_to(2 * t + e, (W, 2, 2)),
        )
    j = np.arange(4)[None, :, None]
    return (
        np.broadcast_to(g + 8 * (j >> 1), (W, 4, 1)),
        np.broadcast_to(2 * t + (j & 1), (W, 4, 1)),
    )


def _mnk(shape: str) -> tuple[int, int, int]:
    import re

    mm = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", shape)
    if mm is None:
        raise ValueError(shape)
    return int(mm.group(1)), int(mm.group(2)), int(mm.group(3))


MMA_SHAPES = {
    ("m16n8k16", "f16"),
    ("m16n8k16", "bf16"),
    ("m16n8k8", "f16"),
    ("m16n8k8", "bf16"),
    ("m16n8k8", "tf32"),
    ("m16n8k4", "tf32"),
    ("m16n8k32", "s8"),
    ("m16n8k32", "u8"),
    ("m16n8k16", "s8"),
    ("m16n8k16", "u8"),
    ("m8n8k4", "f64"),
    ("m16n8k32", "e4m3"),
    ("m16n8k32", "e5m2"),
}


def _regs(d: Decoder, op: Any, ty: str, ins: Instr) -> list[Reader]:
    elems = list(op.elems) if isinstance(op, Vec) else [op]
    return [d.rd(e, TYPES["." + ty], ins) for e in elems]


def _wregs(d: Decoder, op: Any, ty: str, ins: Instr) -> list[Writer | None]:
    elems = list(op.elems) if isinstance(op, Vec) else [op]
    return [d.wr(e, TYPES["." + ty], ins) for e in elems]


def _gather(readers: list[Reader], m: Any, t: np.ndarray) -> np.ndarray:
    """(len(t), nreg) register values."""
    cols = [np.broadcast_to(np.asarray(r(m, t)), t.shape) for r in readers]
    return np.stack(cols, axis=1)


def _full_warps(ins: Instr, lanes: np.ndarray) -> None:
    if not lanes.all():
        w = int(np.argmax(~lanes.all(1)))
        raise SimError(
            ins.span,
            f"'{ins.name}': .sync.aligned needs all 32 lanes of the warp (warp row {w} runs "
            f"{int(lanes[w].sum())})",
        )


@handles("mma")
def op_mma(d: Decoder, ins: Instr, pc: int) -> Op:
    mods = ins.mods
    if ".sp" in mods or ".sp::ordered_metadata" in mods:
        raise SimError(ins.span, f"'{ins.name}' (sparse) is unsupported by the interpreter")
    shape = next((x[1:] for x in mods if x.startswith(".m") and "n" in x), "")
    types = [x[1:] for x in mods if x[1:] in ELEM or x[1:] == "f16"]
    if len(types) == 4:
        dt, at, bt, _ = types
    elif len(types) == 2:  # mma.m8n8k4.f64 / .s32.s8.s8.s32 spelled out in full otherwise
        dt, at = types
        bt = at
    else:
        raise SimError(ins.span, f"'{ins.name}': cannot read the operand types")
    same = at == bt or {at, bt} <= {"s8", "u8"} or {at, bt} <= {"e4m3", "e5m2"}
    if (shape, at) not in MMA_SHAPES or not same:
        raise SimError(ins.span, f"'{ins.name}': shape/type not interpreted")
    if ".row" not in mods or ".col" not in mods:
        raise SimError(ins.span, f"'{ins.name}': only .row.col layouts exist for this shape")
    sat = ".satfinite" in mods
    M, N, K = _mnk(shape)
    ar, ac = _layout_a(shape, at)
    br, bc = _layout_b(shape, bt)
    cr, cc = _layout_c(shape, dt)
    wide = "b64" if dt == "f64" else "b32"
    ops_ = ins.operands
    dw = _wregs(d, ops_[0], wide, ins)
    ra = _regs(d, ops_[1], "b64" if at == "f64" else "b32", ins)
    rb = _regs(d, ops_[2], "b64" if bt == "f64" else "b32", ins)
    rc = _regs(d, ops_[3], wide, ins)
    for what, regs, lay in (("A", ra, ar), ("B", rb, br), ("C", rc, cr), ("D", dw, cr)):
        if len(regs) != lay.shape[1]:
            raise SimError(
                ins.span, f"'{ins.name}': {what} takes {lay.shape[1]} registers, got {len(regs)}"
            )
    a_dec, b_dec = ELEM[at][1], ELEM[bt][1]
    c_bits = ELEM[dt][0]
    c_dec = ELEM[dt][1]
    integer = dt == "s32"

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        _full_warps(ins, lanes)
        g = len(G)
        wi = np.arange(g)[:, None, None, None]
        A = np.zeros((g, M, K), dtype=np.int64 if integer else np.float64)
        B = np.zeros((g, K, N), dtype=A.dtype)
        C = np.zeros((g, M, N), dtype=A.dtype)
        av = a_dec(_unpack(_gather(ra, m, t).reshape(g, W, -1), ELEM[at][0]))
        A[wi, ar[None], ac[None]] = av
        bv = b_dec(_unpack(_gather(rb, m, t).reshape(g, W, -1), ELEM[bt][0]))
        B[wi, br[None], bc[None]] = bv
        cv = c_dec(_unpack(_gather(rc, m, t).reshape(g, W, -1), c_bits))
        C[wi, cr[None], cc[None]] = cv
        D = np.matmul(A, B) + C
        out = D[wi, cr[None], cc[None]]  # (g, 32, nreg, per)
        bits = _encode_acc(out, dt, sat)
        if dt == "f16":
            bits = bits[..., 0] | (bits[..., 1] << np.uint32(16))
        else:
            bits = bits[..., 0]
        bits = bits.reshape(g * W, -1)
        for j, w in enumerate(dw):
            if w is not None:
                w(m, t, t, bits[:, j], pc)

    return Op("warp", ins, run)


# ----------------------------------------------------------------------------- ldmatrix


def _ldst_common(d: Decoder, ins: Instr, aop: Any) -> tuple[str, Reader, int, bool]:
    mods = ins.mods
    if ".m8n8" not in mods or ".b16" not in mods:
        raise SimError(ins.span, f"'{ins.name}': only .m8n8 .b16 matrices are interpreted")
    num = next((int(x[2:]) for x in mods if x in (".x1", ".x2", ".x4")), 0)
    if not num:
        raise SimError(ins.span, f"'{ins.name}': missing .x1/.x2/.x4")
    if not isinstance(aop, Addr):
        raise SimError(ins.span, f"'{ins.name}': expected an address")
    sp = ".shared" if any(x.startswith(".shared") for x in mods) else ""
    eff, rd = addr_reader(d.ops, aop, sp, ins.span)
    return eff or "generic", rd, num, ".trans" in mods


def _row_addrs(m: Any, rd: Reader, t: np.ndarray, g: int, num: int) -> np.ndarray:
    a = np.broadcast_to(np.asarray(rd(m, t)).astype(np.int64), t.shape).reshape(g, W)
    return a[:, : 8 * num].reshape(g, num, 8)  # matrix i, row r


def _elem_addrs(rows: np.ndarray, trans: bool) -> np.ndarray:
    """(g, num, 32 lanes, 2 halves) byte addresses of the b16 elements of each lane."""
    lane = LANE[None, None, :, None]
    e = np.arange(2)[None, None, None, :]
    if not trans:
        r = np.broadcast_to(lane >> 2, (1, 1, W, 2))
        c = (lane & 3) * 2 + e
    else:
        r = (lane & 3) * 2 + e
        c = np.broadcast_to(lane >> 2, (1, 1, W, 2))
    g, num = rows.shape[:2]
    base = np.take_along_axis(
        rows[:, :, None, :].repeat(W, 2),
        np.broadcast_to(r, (g, num, W, 2)).astype(np.int64),
        axis=3,
    )
    return base + 2 * c


@handles("ldmatrix")
def op_ldmatrix(d: Decoder, ins: Instr, pc: int) -> Op:
    eff, rd, num, trans = _ldst_common(d, ins, ins.operands[1])
    ws = _wregs(d, ins.operands[0], "b32", ins)
    if len(ws) != num:
        raise SimError(ins.span, f"'{ins.name}': .x{num} writes {num} registers")
    span = ins.span

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        _full_warps(ins, lanes)
        g = len(G)
        ea = _elem_addrs(_row_addrs(m, rd, t, g, num), trans)  # (g, num, 32, 2)
        tt = np.broadcast_to(t.reshape(g, 1, W, 1), ea.shape).ravel()
        v = m.mem.load(eff, ea.ravel(), tt, 2, span).reshape(ea.shape).astype(np.uint32)
        words = v[..., 0] | (v[..., 1] << np.uint32(16))  # (g, num, 32)
        for i, w in enumerate(ws):
            if w is not None:
                w(m, t, t, words[:, i, :].ravel(), pc)

    return Op("warp", ins, run)


@handles("stmatrix")
def op_stmatrix(d: Decoder, ins: Instr, pc: int) -> Op:
    eff, rd, num, trans = _ldst_common(d, ins, ins.operands[0])
    rs = _regs(d, ins.operands[1], "b32", ins)
    if len(rs) != num:
        raise SimError(ins.span, f"'{ins.name}': .x{num} reads {num} registers")
    span = ins.span

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        _full_warps(ins, lanes)
        g = len(G)
        ea = _elem_addrs(_row_addrs(m, rd, t, g, num), trans)
        words = _gather(rs, m, t).astype(np.uint32).reshape(g, W, num).transpose(0, 2, 1)
        v = np.stack([words & np.uint32(0xFFFF), words >> np.uint32(16)], axis=-1)
        tt = np.broadcast_to(t.reshape(g, 1, W, 1), ea.shape).ravel()
        m.mem.store(eff, ea.ravel(), tt, 2, v.ravel().astype(np.uint16), span)

    return Op("warp", ins, run)


# ----------------------------------------------------------------------------- wgmma

SWIZZLE_BYTES = {0: 0, 1: 128, 2: 64, 3: 32}


def desc_addresses(desc: int, rows: int, k: int, ebytes: int, mn_major: bool) -> np.ndarray:
    """Shared byte addresses (rows x k) of a wgmma operand described by ``desc``:
    ``rows`` is M (for A) or N (for B), ``k`` the K extent of the instruction."""
    start = (desc & 0x3FFF) << 4
    lbo = ((desc >> 16) & 0x3FFF) << 4
    sbo = ((desc >> 32) & 0x3FFF) << 4
    sw = SWIZZLE_BYTES[(desc >> 62) & 3]
    r = np.arange(rows, dtype=np.int64)[:, None]
    kk = np.arange(k, dtype=np.int64)[None, :]
    if not mn_major:
        kb = kk * ebytes
        if sw == 0:
            off = (r % 8) * 16 + (r // 8) * sbo + (kb // 16) * lbo + kb % 16
        else:
            off = (r % 8) * sw + (r // 8) * sbo + kb
    else:
        rb = r * ebytes
        if sw == 0:
            off = rb % 16 + (rb // 16) * sbo + (kk % 8) * 16 + (kk // 8) * lbo
        else:
            off = rb % sw + (rb // sw) * lbo + (kk % 8) * sw + (kk // 8) * sbo
    addr = start + off
    if sw:
        mask = sw // 16 - 1
        addr = addr ^ (((addr >> 7) & mask) << 4)
    return np.asarray(addr)


@handles("wgmma")
def op_wgmma(d: Decoder, ins: Instr, pc: int) -> Op:
    mods = ins.mods
    kind = mods[0] if mods else ""
    if kind in (".fence", ".commit_group", ".wait_group"):
        # the product is computed and written when the instruction is issued
        return Op("alu", ins, lambda m, s, t: None)
    if kind != ".mma_async" or ".sp" in mods:
        raise SimError(ins.span, f"'{ins.name}' is unsupported by the interpreter")
    shape = next((x[1:] for x in mods if x.startswith(".m64")), "")
    M, N, K = _mnk(shape)
    types = [x[1:] for x in mods if x[1:] in ELEM]
    dt, at, bt = types[0], types[1], types[2]
    sat = ".satfinite" in mods
    ops_ = ins.operands
    dw = _wregs(d, ops_[0], "b32", ins)
    a_reg = isinstance(ops_[1], Vec)
    ra = _regs(d, ops_[1], "b32", ins) if a_reg else None
    rda = None if a_reg else d.rd(ops_[1], TYPES[".u64"], ins)
    rdb = d.rd(ops_[2], TYPES[".u64"], ins)
    rest = ops_[3:]
    scale_d = d.rd(rest[0], TYPES[".pred"], ins) if rest else None
    imms = [int(o.value) for o in rest[1:] if isinstance(o, Imm)]
    if any(not isinstance(o, Imm) for o in rest[1:]):
        raise SimError(ins.span, f"'{ins.name}': scale and transpose operands are immediates")
    fp = dt != "s32"
    two_byte = at in ("f16", "bf16")
    neg_a = neg_b = 1
    tr_a = tr_b = 0
    if fp:
        if imms:
            neg_a = imms[0]
        if len(imms) > 1:
            neg_b = imms[1]
    if two_byte:
        if a_reg:
            tr_b = imms[2] if len(imms) > 2 else 0
        else:
            tr_a = imms[2] if len(imms) > 2 else 0
            tr_b = imms[3] if len(imms) > 3 else 0
    nacc = (M * N) // 128 // (2 if dt == "f16" else 1)
    if len(dw) != nacc:
        raise SimError(ins.span, f"'{ins.name}': D takes {nacc} registers, got {len(dw)}")
    eb = ELEM[at][0] // 8
    a_dec, b_dec = ELEM[at][1], ELEM[bt][1]
    integer = not fp
    # accumulator layout of one warp (rows 16*w + ...): reg 4i + j / f16: 2i + j, 2 halves
    i_ = np.arange(N // 8)
    if dt == "f16":
        jj = np.arange(2)
        crow = (G8[:, None, None, None] + 8 * jj[None, None, :, None]) + 0 * i_[None, :, None, None]
        ccol = (
            8 * i_[None, :, None, None]
            + 2 * TIG[:, None, None, None]
            + np.arange(2)[None, None, None, :]
        )
        crow = np.broadcast_to(crow, (W, N // 8, 2, 2)).reshape(W, -1)
        ccol = np.broadcast_to(ccol, (W, N // 8, 2, 2)).reshape(W, -1)
    else:
        jj = np.arange(4)
        crow = G8[:, None, None] + 8 * (jj[None, None, :] >> 1) + 0 * i_[None, :, None]
        ccol = 8 * i_[None, :, None] + 2 * TIG[:, None, None] + (jj[None, None, :] & 1)
        crow = np.broadcast_to(crow, (W, N // 8, 4)).reshape(W, -1)
        ccol = np.broadcast_to(ccol, (W, N // 8, 4)).reshape(W, -1)
    # register-A layout of one warp: like mma m16n8k16 (A), per k16 (or k32 for 8-bit)
    if a_reg:
        a_r, a_c = _layout_a(f"m16n8k{K}", at)
    acc_r = _regs(d, ops_[0], "b32", ins)
    span = ins.span

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        _full_warps(ins, lanes)
        wpc = m.wpc
        wid = G % wpc
        grp = (G // wpc) * ((wpc + 3) // 4) + wid // 4
        ug, first = np.unique(grp, return_index=True)
        counts = np.bincount(np.searchsorted(ug, grp), minlength=len(ug))
        if (counts != 4).any():
            raise SimError(span, f"'{ins.name}': all four warps of a warpgroup must execute it")
        ng = len(ug)
        tt = t.reshape(len(G), W)
        acc_bits = _gather(acc_r, m, t).reshape(len(G), W, -1)
        sd = (
            np.broadcast_to(np.asarray(scale_d(m, t)), t.shape).reshape(len(G), W)[:, 0]
            if scale_d is not None
            else np.ones(len(G), dtype=bool)
        )
        dtype = np.int64 if integer else np.float64
        for gi in range(ng):
            ws = np.flatnonzero(grp == ug[gi])
            ws = ws[np.argsort(wid[ws])]
            lead = tt[ws[0], 0]
            # B (N x K from the descriptor) -> K x N
            db = int(np.asarray(rdb(m, tt[ws[0]])).reshape(-1)[0])
            addr_b = desc_addresses(db, N, K, eb, bool(tr_b))
            bv = m.mem.load(".shared", addr_b.ravel(), np.full(addr_b.size, lead), eb, span)
            Bm = b_dec(bv).reshape(N, K).T.astype(dtype) * neg_b
            if a_reg:
                assert ra is not None
                Am = np.zeros((M, K), dtype=dtype)
                for wq in range(4):
                    bits = _gather(ra, m, tt[ws[wq]])
                    Am[16 * wq + a_r, a_c] = a_dec(_unpack(bits, 8 * eb))  # (32, nreg, per)
            else:
                assert rda is not None
                da = int(np.asarray(rda(m, tt[ws[0]])).reshape(-1)[0])
                addr_a = desc_addresses(da, M, K, eb, bool(tr_a))
                av = m.mem.load(".shared", addr_a.ravel(), np.full(addr_a.size, lead), eb, span)
                Am = a_dec(av).reshape(M, K).astype(dtype)
            Am = Am * neg_a
            Dm = Am @ Bm
            for wq in range(4):
                w = ws[wq]
                rows = 16 * wq + crow
                if sd[w]:
                    cb = acc_bits[w]
                    if dt == "f16":
                        cb = _unpack(cb, 16).reshape(W, -1)
                        cval = ELEM["f16"][1](cb)
                    else:
                        cval = ELEM["s32" if integer else "f32"][1](cb)
                    out = Dm[rows, ccol] + cval
                else:
                    out = Dm[rows, ccol]
                bits = _encode_acc(np.asarray(out), dt, sat)
                if dt == "f16":
                    bits = bits.reshape(W, -1, 2)
                    bits = bits[..., 0] | (bits[..., 1] << np.uint32(16))
                tw = tt[w]
                for j, wr in enumerate(dw):
                    if wr is not None:
                        wr(m, tw, tw, bits[:, j], pc)

    return Op("warp", ins, run)


def _vec(op: Any) -> list[Any]:
    return list(op.elems) if isinstance(op, Vec) else [op]


__all__ = ["desc_addresses", "Reg"]
