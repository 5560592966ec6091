"""Warp-level collectives: ``activemask``, ``shfl.sync``, ``vote``, ``match.sync``,
``redux.sync`` and ``elect.sync``.  They run once per warp over the executing lanes
(``warp`` ops, see :class:`~ptxopt.sim.machine.Op`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr, Pair, Reg
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op, W, pack_mask
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.values import (
    TYPES,
    Reader,
)


@handles("activemask")
def op_activemask(d: Decoder, ins: Instr, pc: int) -> Op:
    w = d.wr(ins.operands[0], TYPES[".b32"], ins)

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        masks = pack_mask(lanes)
        if w is not None:
            w(m, t, t, np.repeat(masks, lanes.sum(1)), pc)

    return Op("warp", ins, run)


@handles("shfl")
def op_shfl(d: Decoder, ins: Instr, pc: int) -> Op:
    if ".sync" not in ins.mods:
        raise SimError(ins.span, f"'{ins.name}': shfl without .sync is unsupported (sm_70+)")
    mode = next(m[1:] for m in ins.mods if m in (".up", ".down", ".bfly", ".idx"))
    b32 = TYPES[".b32"]
    u32 = TYPES[".u32"]
    dst = ins.operands[0]
    if isinstance(dst, Pair):
        wd, wp = d.wr(dst.first, b32, ins), d.wr(dst.second, TYPES[".pred"], ins)
    else:
        wd, wp = d.wr(dst, b32, ins), None
    src_op = ins.operands[1]
    rb = d.rd(ins.operands[2], u32, ins)
    rc = d.rd(ins.operands[3], u32, ins)
    mr = d.rd(ins.operands[4], u32, ins)
    src_is_reg = isinstance(src_op, Reg)
    ra = d.rd(src_op, b32, ins)

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        member = member_mask(m, G, lanes, t, mr)
        m.check_members(op, G, lanes, member)
        g = len(G)
        all_t = m.warp_threads(G)
        # source values for every lane of the warps (inactive lanes: current value)
        if src_is_reg:
            vals = np.asarray(ra(m, all_t)).reshape(g, W)
        else:
            vals = np.broadcast_to(np.asarray(ra(m, t)), (g, W))
        bb = _per_lane(rb(m, t), lanes, g)
        cc = _per_lane(rc(m, t), lanes, g)
        lane = np.broadcast_to(np.arange(W, dtype=np.int64), (g, W))
        bval = bb & 31
        cval = cc & 31
        seg = (cc >> 8) & 31
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bval
            pval = j >= max_lane
        elif mode == "down":
            j = lane + bval
            pval = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            pval = j <= max_lane
        else:
            j = min_lane | (bval & ~seg)
            pval = j <= max_lane
        j = np.where(pval, j, lane)
        res = np.take_along_axis(vals, j, axis=1)
        sel = lanes.ravel()
        if wd is not None:
            wd(m, t, t, res.ravel()[sel], pc)
        if wp is not None:
            wp(m, t, t, pval.ravel()[sel], pc)

    op = Op("warp", ins, run)
    return op


@handles("vote")
def op_vote(d: Decoder, ins: Instr, pc: int) -> Op:
    mode = next(m[1:] for m in ins.mods if m in (".all", ".any", ".uni", ".ballot"))
    sync = ".sync" in ins.mods
    pt = TYPES[".pred"]
    out_t = TYPES[".b32"] if mode == "ballot" else pt
    w = d.wr(ins.operands[0], out_t, ins)
    rp = d.rd(ins.operands[1], pt, ins)
    mr = d.rd(ins.operands[2], TYPES[".u32"], ins) if sync else None

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        if mr is not None:
            member = member_mask(m, G, lanes, t, mr)
            m.check_members(op, G, lanes, member)
        p = np.zeros(lanes.shape, dtype=bool)
        p[lanes] = np.broadcast_to(np.asarray(rp(m, t)), t.shape)
        cnt = lanes.sum(1)
        if mode == "ballot":
            r = np.repeat(pack_mask(p & lanes), cnt)
        elif mode == "all":
            r = np.repeat(~(lanes & ~p).any(1), cnt)
        elif mode == "any":
            r = np.repeat((lanes & p).any(1), cnt)
        else:
            r = np.repeat(~((lanes & p).any(1) & (lanes & ~p).any(1)), cnt)
        if w is not None:
            w(m, t, t, r, pc)

    op = Op("warp", ins, run)
    return op


@handles("match")
def op_match(d: Decoder, ins: Instr, pc: int) -> Op:
    mode = next(m[1:] for m in ins.mods if m in (".any", ".all"))
    ty = d.ty(ins)
    dst = ins.operands[0]
    b32 = TYPES[".b32"]
    if isinstance(dst, Pair):
        wd, wp = d.wr(dst.first, b32, ins), d.wr(dst.second, TYPES[".pred"], ins)
    else:
        wd, wp = d.wr(dst, b32, ins), None
    ra = d.rd(ins.operands[1], ty, ins)
    mr = d.rd(ins.operands[2], TYPES[".u32"], ins)

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        member = member_mask(m, G, lanes, t, mr)
        m.check_members(op, G, lanes, member)
        g = len(G)
        v = np.zeros(lanes.shape, dtype=ty.dt)
        v[lanes] = np.broadcast_to(np.asarray(ra(m, t)), t.shape)
        eq = (v[:, :, None] == v[:, None, :]) & lanes[:, None, :] & lanes[:, :, None]
        masks = pack_mask(eq.reshape(g * W, W)).reshape(g, W)
        if mode == "any":
            res = masks[lanes]
            pv = None
        else:
            full = pack_mask(lanes)
            same = (masks == full[:, None]) | ~lanes
            allsame = same.all(1)
            res = np.broadcast_to(
                np.where(allsame, full, 0).astype(np.uint32)[:, None], lanes.shape
            )[lanes]
            pv = np.broadcast_to(allsame[:, None], lanes.shape)[lanes]
        if wd is not None:
            wd(m, t, t, res, pc)
        if wp is not None and pv is not None:
            wp(m, t, t, pv, pc)

    op = Op("warp", ins, run)
    return op


@handles("redux")
def op_redux(d: Decoder, ins: Instr, pc: int) -> Op:
    mode = next(m[1:] for m in ins.mods if m in (".add", ".min", ".max", ".and", ".or", ".xor"))
    ty = d.ty(ins)
    w = d.wr(ins.operands[0], ty, ins)
    ra = d.rd(ins.operands[1], ty, ins)
    mr = d.rd(ins.operands[2], TYPES[".u32"], ins)

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        member = member_mask(m, G, lanes, t, mr)
        m.check_members(op, G, lanes, member)
        g = len(G)
        v = np.zeros((g, W), dtype=ty.dt)
        v[lanes] = np.broadcast_to(np.asarray(ra(m, t)), t.shape)
        if mode == "add":
            r = np.where(lanes, v, 0).astype(ty.dt).sum(1, dtype=ty.dt)
        elif mode in ("min", "max"):
            if ty.kind == "f":
                fill = np.inf if mode == "min" else -np.inf
                npf = np.fmin if mode == "min" else np.fmax
                r = npf.reduce(np.where(lanes, v, fill), axis=1)
            else:
                info = np.iinfo(ty.dt)
                fill = info.max if mode == "min" else info.min
                fn_ = np.min if mode == "min" else np.max
                r = fn_(np.where(lanes, v, ty.dt(fill)), axis=1)
        else:
            uf = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[mode]
            fill2 = ty.dt(~ty.dt(0)) if mode == "and" else ty.dt(0)
            r = uf.reduce(np.where(lanes, v, fill2).astype(ty.dt), axis=1)
        if w is not None:
            w(m, t, t, np.repeat(np.asarray(r).astype(ty.dt), lanes.sum(1)), pc)

    op = Op("warp", ins, run)
    return op


@handles("elect")
def op_elect(d: Decoder, ins: Instr, pc: int) -> Op:
    dst = ins.operands[0]
    if isinstance(dst, Pair):
        wd, wp = d.wr(dst.first, TYPES[".b32"], ins), d.wr(dst.second, TYPES[".pred"], ins)
    else:
        wd, wp = d.wr(dst, TYPES[".b32"], ins), None
    mr = d.rd(ins.operands[1], TYPES[".u32"], ins)

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        member = member_mask(m, G, lanes, t, mr)
        m.check_members(op, G, lanes, member)
        leader = np.argmax(lanes, axis=1)
        cnt = lanes.sum(1)
        if wd is not None:
            wd(m, t, t, np.repeat(leader.astype(np.uint32), cnt), pc)
        if wp is not None:
            lane = np.broadcast_to(np.arange(W), lanes.shape)
            wp(m, t, t, (lane == leader[:, None])[lanes], pc)

    op = Op("warp", ins, run)
    return op


def _per_lane(v: Any, lanes: np.ndarray, g: int) -> np.ndarray:
    out = np.zeros((g, W), dtype=np.int64)
    out[lanes] = np.broadcast_to(np.asarray(v).astype(np.int64), (int(lanes.sum()),))
    return out


def member_mask(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, mr: Reader) -> np.ndarray:
    mv = np.broadcast_to(np.asarray(mr(m, t)).astype(np.uint32), t.shape)
    g = len(G)
    per = np.zeros((g, W), dtype=np.uint32)
    per[lanes] = mv
    # the membermask of a warp: taken from its first executing lane
    first = np.argmax(lanes, axis=1)
    wm = per[np.arange(g), first]
    bits = ((wm[:, None] >> np.arange(W, dtype=np.uint32)) & np.uint32(1)).astype(bool)
    return bits
