"""Tensor maps and the tensor (TMA) bulk copies of the interpreter.

A CUDA tensor map (``CUtensorMap``, 128 opaque bytes built on the host by
``cuTensorMapEncodeTiled``) is passed to a kernel as a ``.param .align 64 .b8 [128]``
parameter or lives in global memory.  Its real encoding is undocumented, so the
interpreter defines its own 128-byte layout (:data:`LAYOUT`); :class:`TensorMap` builds
one from the same arguments ``cuTensorMapEncodeTiled`` takes, and
``tensormap.replace`` edits the same fields, so kernels that build maps on the device
(Triton's device-side descriptors) and kernels given host-built maps both run.

Tile mode only: a box of ``box_dim`` elements at signed element coordinates is copied
between global memory (elements outside ``global_dim`` read as zero and are not
written) and a dense box in shared memory (innermost dimension contiguous), with the
shared addresses swizzled as the map's swizzle mode says (16-byte chunk ``c`` of each
row of ``span`` bytes is XORed with the row index modulo ``span/16``: 32B, 64B, 128B).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Addr, Instr, Reg, Vec
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op

# field -> (byte offset, struct format, count)
LAYOUT = {
    "global_address": (0, "<Q", 1),
    "rank": (8, "<I", 1),
    "elemtype": (12, "<I", 1),
    "swizzle_mode": (16, "<I", 1),
    "interleave_layout": (20, "<I", 1),
    "fill_mode": (24, "<I", 1),
    "magic": (28, "<I", 1),
    "global_dim": (32, "<I", 5),
    "global_stride": (56, "<Q", 4),  # bytes, of dimensions 1..4 (dimension 0 is dense)
    "box_dim": (88, "<I", 5),
    "element_stride": (108, "<I", 5),
}
MAGIC = 0x544D4150  # "TMAP"
# CUtensorMapDataType -> element size in bytes
ELEM_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4}
SWIZZLE_SPAN = {0: 0, 1: 32, 2: 64, 3: 128}


@dataclass
class TensorMap:
    """Host-side description of a tiled tensor map over ``array`` (an argument array of
    the same launch, or any array: it is then placed in global memory too).
    ``dims``/``box`` are innermost first, ``strides`` are byte strides of dimensions 1..
    (as ``cuTensorMapEncodeTiled`` takes them); ``elemtype`` is the CUtensorMapDataType
    value; ``swizzle`` is 0 (none), 1 (32B), 2 (64B) or 3 (128B)."""

    array: np.ndarray
    elemtype: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    swizzle: int = 0
    element_strides: tuple[int, ...] | None = None

    def encode(self, address: int) -> bytes:
        rank = len(self.dims)
        fields = {
            "global_address": [address],
            "rank": [rank],
            "elemtype": [self.elemtype],
            "swizzle_mode": [self.swizzle],
            "interleave_layout": [0],
            "fill_mode": [0],
            "magic": [MAGIC],
            "global_dim": list(self.dims) + [1] * (5 - rank),
            "global_stride": list(self.strides) + [0] * (4 - len(self.strides)),
            "box_dim": list(self.box) + [1] * (5 - rank),
            "element_stride": list(self.element_strides or (1,) * rank) + [1] * (5 - rank),
        }
        out = bytearray(128)
        for name, (off, fmt, n) in LAYOUT.items():
            size = struct.calcsize(fmt)
            for i in range(n):
                struct.pack_into(fmt, out, off + i * size, fields[name][i])
        return bytes(out)


def decode(raw: np.ndarray) -> dict[str, list[int]]:
    b = bytes(raw)
    out = {}
    for name, (off, fmt, n) in LAYOUT.items():
        size = struct.calcsize(fmt)
        out[name] = [struct.unpack_from(fmt, b, off + i * size)[0] for i in range(n)]
    return out


def swizzle(off: np.ndarray, mode: int) -> np.ndarray:
    span = SWIZZLE_SPAN[mode]
    if not span:
        return off
    mask = span // 16 - 1
    row = (off >> 7) & mask  # rows of 128 bytes (the pattern repeats every 1024 bytes)
    return off ^ (row << 4)


def _read_map(m: Any, addr: int, t: np.ndarray, ins: Instr) -> dict[str, list[int]]:
    a = np.arange(addr, addr + 128, 8, dtype=np.int64)
    tt = np.repeat(t[:1], len(a))
    raw = m.mem.load("generic" if addr >> 44 else ".global", a, tt, 8, ins.span)
    f = decode(raw.view(np.uint8))
    if f["magic"][0] != MAGIC:
        raise SimError(ins.span, f"'{ins.name}': the operand is not a tensor map")
    return f


def op_bulk_tensor(d: Any, ins: Instr, pc: int) -> Op:
    from ptxopt.sim.ops.asynccopy import _addr, _lanes64, _shared_index, complete_tx
    from ptxopt.sim.values import TYPES

    mods = ins.mods
    if ".tile" not in mods and any(x in mods for x in (".im2col", ".im2col::w", ".tile::gather4")):
        raise SimError(ins.span, f"'{ins.name}': only tile mode is interpreted")
    if ".multicast::cluster" in mods:
        # a cluster of one CTA: the ctaMask operand names CTA 0 only
        pass
    load = mods.index(".global") > next(i for i, x in enumerate(mods) if x.startswith(".shared"))
    ops_ = ins.operands
    tens = ops_[1] if load else ops_[0]
    if not isinstance(tens, Addr) or not tens.extra or not isinstance(tens.extra[0], Vec):
        raise SimError(ins.span, f"'{ins.name}': expected [tensorMap, {{coordinates}}]")
    if isinstance(tens.base, Reg):
        map_r = d.rd(tens.base, TYPES[".u64"], ins)
    else:
        map_r = d.ops.address_of(tens.base, ins.span)
    coords = [d.rd(c, TYPES[".s32"], ins) for c in tens.extra[0].elems]
    _, sm_r = _addr(d, ins, 0 if load else 1, ".shared")
    mb_r = None
    if load and ".mbarrier::complete_tx::bytes" in mods:
        mb_r = _addr(d, ins, 2, ".shared")[1]
    param_map = not isinstance(tens.base, Reg) and d.symbol(str(tens.base), ins.span)[0] == (
        ".kparam"
    )
    span = ins.span

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        maddr = _lanes64(np.asarray(map_r(m, s)).astype(np.uint64).view(np.int64), t)
        if param_map:
            from ptxopt.sim.memory import PARAM_WINDOW

            maddr = maddr + PARAM_WINDOW
        smem = _lanes64(sm_r(m, s), t)
        cs = [_lanes64(c(m, s), t) for c in coords]
        keys = _lanes64(mb_r(m, s), t) if mb_r is not None else None
        for i in range(len(t)):
            ti = t[i : i + 1]
            f = _read_map(m, int(maddr[i]), ti, ins)
            rank = f["rank"][0]
            if len(cs) != rank:
                raise SimError(span, f"'{ins.name}': {len(cs)} coordinates for a rank-{rank} map")
            if any(e != 1 for e in f["element_stride"][:rank]):
                raise SimError(span, f"'{ins.name}': element strides other than 1")
            es = ELEM_BYTES.get(f["elemtype"][0], 0)
            if not es:
                raise SimError(span, f"'{ins.name}': unsupported tensor element type")
            box = f["box_dim"][:rank]
            dims = f["global_dim"][:rank]
            strides = [es] + f["global_stride"][: rank - 1]
            grids = np.meshgrid(*[np.arange(b, dtype=np.int64) for b in box[::-1]], indexing="ij")
            idx = [g.ravel() for g in grids[::-1]]  # innermost first
            pos = [idx[k] + int(cs[k][i]) for k in range(rank)]
            inb = np.ones(idx[0].shape, dtype=bool)
            gaddr = np.full(idx[0].shape, f["global_address"][0], dtype=np.int64)
            lin = np.zeros(idx[0].shape, dtype=np.int64)
            mul = 1
            for k in range(rank):
                inb &= (pos[k] >= 0) & (pos[k] < dims[k])
                gaddr += pos[k] * strides[k]
                lin += idx[k] * mul
                mul *= box[k]
            soff = swizzle(lin * es, f["swizzle_mode"][0]) + int(smem[i])
            n = len(lin)
            tt = np.repeat(ti, n)
            if load:
                v = np.zeros(n, dtype=np.uint64)
                if inb.any():
                    v[inb] = m.mem.load(".global", gaddr[inb], tt[inb], es, span)
                m.mem.store(".shared", soff, tt, es, v, span)
                if keys is not None:
                    sidx = _shared_index(m, ".shared", soff, tt, es, ins)
                    m.mem.mark_pending(sidx, es, True)
                    k = int(_shared_index(m, ".shared", keys[i : i + 1], ti, 8, ins)[0])
                    complete_tx(m, k, n * es, ins, (sidx, es))
            else:
                v = m.mem.load(".shared", soff[inb], tt[inb], es, span)
                m.mem.store(".global", gaddr[inb], tt[inb], es, v, span)

    return Op("alu", ins, run)


def op_tensormap(d: Any, ins: Instr, pc: int) -> Op:
    """``tensormap.replace.tile.<field>[.space].b1024.<type> [map], {ord,} value`` and
    ``tensormap.cp_fenceproxy`` (a 128-byte copy from shared to global)."""
    from ptxopt.sim.ops.asynccopy import _addr, _lanes64
    from ptxopt.sim.values import TYPES

    mods = ins.mods
    span = ins.span
    if ".cp_fenceproxy" in mods:
        _, dr = _addr(d, ins, 0, ".global")
        _, sr = _addr(d, ins, 1, ".shared")

        def cp(m: Any, s: Any, t: np.ndarray) -> None:
            dst = _lanes64(dr(m, s), t)
            src = _lanes64(sr(m, s), t)
            for k in range(0, 128, 8):
                v = m.mem.load(".shared", src + k, t, 8, span)
                m.mem.store(".global", dst + k, t, 8, v, span)

        return Op("alu", ins, cp)
    if ".replace" not in mods:
        raise SimError(span, f"'{ins.name}' is unsupported by the interpreter")
    fld = next((x[1:] for x in mods if x[1:] in LAYOUT), None)
    if fld is None:
        raise SimError(span, f"'{ins.name}': unknown tensor-map field")
    sp = ".shared" if any(x.startswith(".shared") for x in mods) else ".global"
    _, ar = _addr(d, ins, 0, sp)
    off, fmt, n = LAYOUT[fld]
    size = struct.calcsize(fmt)
    ord_r = d.rd(ins.operands[1], TYPES[".u32"], ins) if len(ins.operands) == 3 else None
    val_r = d.rd(ins.operands[-1], TYPES[".u64" if size == 8 else ".u32"], ins)

    def rep(m: Any, s: Any, t: np.ndarray) -> None:
        a = _lanes64(ar(m, s), t)
        o = _lanes64(ord_r(m, s), t) if ord_r is not None else np.zeros(len(t), np.int64)
        v = np.broadcast_to(np.asarray(val_r(m, s)), t.shape)
        if (o >= n).any():
            raise SimError(span, f"'{ins.name}': ordinal out of range")
        if fld == "rank":  # the field holds rank - 1
            v = np.asarray(v).astype(np.uint32) + np.uint32(1)
        # global_stride ordinal i is the stride of dimension i + 1 (dimension 0 is dense)
        a = a + off + o * size
        m.mem.store(sp, a, t, size, v, span)
        # a map built on the device carries the interpreter's layout tag
        m.mem.store(sp, _lanes64(ar(m, s), t) + 28, t, 4, np.uint32(MAGIC), span)

    return Op("alu", ins, rep)
