"""Moves: ``mov`` of scalars, symbols (their address), vector packs and unpacks, and
``.b128`` halves."""

from __future__ import annotations

from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr, Sym, Vec
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.values import (
    TYPES,
    Ty,
    unsigned_of,
)


@handles("mov")
def op_mov(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    dst, src = ins.operands[0], ins.operands[1]
    if isinstance(src, Sym) and ty.kind != "p":
        return d.alu1(ins, pc, ty, [ty], lambda a: a)
    if isinstance(dst, Vec) or isinstance(src, Vec):
        return _mov_vec(d, ins, pc, ty)
    return d.alu1(ins, pc, ty, [ty], lambda a: np.array(a, copy=True))


def _mov_vec(d: Decoder, ins: Instr, pc: int, ty: Ty) -> Op:
    from ptxopt.ptx.ast import Vec

    dst, src = ins.operands[0], ins.operands[1]
    if ty.size == 16:
        return _mov_b128(d, ins, pc)
    if isinstance(dst, Vec):  # unpack
        n = len(dst.elems)
        esz = ty.size // n
        ety = TYPES[f".b{esz * 8}"]
        rs = d.rd(src, TYPES[f".b{ty.size * 8}"], ins)
        ws = [d.wr(e, ety, ins) for e in dst.elems]
        sh = [np.uint64(8 * esz * i) for i in range(n)]
        eut = ety.ut

        def unpack(m: Any, s: Any, t: np.ndarray) -> None:
            v = np.asarray(rs(m, s)).astype(np.uint64)
            for w, k in zip(ws, sh, strict=True):
                if w is not None:
                    w(m, s, t, (v >> k).astype(eut), pc)

        return Op("alu", ins, unpack)
    assert isinstance(src, Vec)
    n = len(src.elems)
    esz = ty.size // n
    ety = TYPES[f".b{esz * 8}"]
    rs2 = [d.rd(e, ety, ins) for e in src.elems]
    w0 = d.wr(dst, TYPES[f".b{ty.size * 8}"], ins)
    out_ut = unsigned_of(ty.size)

    def pack(m: Any, s: Any, t: np.ndarray) -> None:
        acc: Any = np.uint64(0)
        for i, r in enumerate(rs2):
            acc = acc | (np.asarray(r(m, s)).astype(np.uint64) << np.uint64(8 * esz * i))
        if w0 is not None:
            w0(m, s, t, np.asarray(acc).astype(out_ut), pc)

    return Op("alu", ins, pack)


def _mov_b128(d: Decoder, ins: Instr, pc: int) -> Op:
    """``mov.b128 d, {lo, hi}`` packs two 64-bit halves; ``mov.b128 {lo, hi}, a``
    unpacks them (the first element is the low half)."""
    from ptxopt.ptx.ast import Vec

    dst, src = ins.operands[0], ins.operands[1]
    q = TYPES[".b128"]
    b64 = TYPES[".b64"]
    if isinstance(dst, Vec):
        if len(dst.elems) != 2:
            raise SimError(ins.span, f"'{ins.name}': expected two 64-bit halves")
        rq = d.rd(src, q, ins)
        ws = [d.wr(e, b64, ins) for e in dst.elems]

        def unpack(m: Any, s: Any, t: np.ndarray) -> None:
            v = np.asarray(rq(m, s))
            for k, w in enumerate(ws):
                if w is not None:
                    w(m, s, t, v[..., k], pc)

        return Op("alu", ins, unpack)
    if not isinstance(src, Vec) or len(src.elems) != 2:
        raise SimError(ins.span, f"'{ins.name}': expected {{lo, hi}} 64-bit halves")
    rs = [d.rd(e, b64, ins) for e in src.elems]
    wq = d.wr(dst, q, ins)

    def pack(m: Any, s: Any, t: np.ndarray) -> None:
        lo, hi = np.broadcast_arrays(
            np.asarray(rs[0](m, s), dtype=np.uint64), np.asarray(rs[1](m, s), dtype=np.uint64)
        )
        if wq is not None:
            wq(m, s, t, np.stack([lo, hi], axis=-1), pc)

    return Op("alu", ins, pack)
