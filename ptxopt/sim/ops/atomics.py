"""Atomics: ``atom`` and ``red`` (scalar and sm_90 vector forms).  Lanes of one
instruction apply their updates one after another in increasing lane order, so the
old values every lane sees are one legal serialization."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr, Vec
from ptxopt.sim import floats as fl
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.memory import UNSIGNED
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.ops.memory import check_vec_align, mem_common
from ptxopt.sim.values import (
    TYPES,
    Reader,
    Ty,
    Writer,
)


@handles("atom")
def op_atom(d: Decoder, ins: Instr, pc: int) -> Op:
    return _atomic(d, ins, pc, has_dst=True)


@handles("red")
def op_red(d: Decoder, ins: Instr, pc: int) -> Op:
    return _atomic(d, ins, pc, has_dst=False)


def _atomic(d: Decoder, ins: Instr, pc: int, has_dst: bool) -> Op:
    ops_ = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")
    aop = next((m[1:] for m in ins.mods if m[1:] in ops_), None)
    if aop is None:
        raise SimError(ins.span, f"'{ins.name}': unknown atomic operation")
    k = 1 if has_dst else 0
    eff, ar, ty, nvec = mem_common(d, ins, ins.operands[k])
    if ty.kind in ("h2", "bf2", "bf") and aop != "add":
        raise SimError(ins.span, f"'{ins.name}' unsupported")
    if ty.size == 16:
        raise SimError(ins.span, f"'{ins.name}': 128-bit atomics are unsupported")
    vty = ty if ty.kind in ("u", "s", "f", "b", "h") else TYPES[f".b{ty.size * 8}"]
    if nvec > 1:
        return _vector_atomic(d, ins, pc, aop, has_dst, eff, ar, ty, vty, nvec)
    w = d.wr(ins.operands[0], vty, ins) if has_dst else None
    rb = d.rd(ins.operands[k + 1], vty, ins)
    rc = d.rd(ins.operands[k + 2], vty, ins) if aop == "cas" else None
    fn = _atomic_fn(aop, ty)
    span = ins.span
    size = ty.size
    ufunc = _ATOMIC_UFUNC.get(aop) if ty.kind in ("u", "s", "b", "f") else None
    if aop == "add" and ty.kind == "f" and ty.size == 4:
        ufunc = None  # ftz semantics; sequential below
    eff2 = eff if eff != "generic" else ""

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a = np.ascontiguousarray(np.broadcast_to(ar(m, s), t.shape))
        b = np.broadcast_to(np.asarray(rb(m, s)), t.shape)
        c = np.broadcast_to(np.asarray(rc(m, s)), t.shape) if rc is not None else None
        m.stats.atomics += len(t)
        parts = m.mem.translate(eff2 or "generic", a, t, size, span, write=True)
        old = np.zeros(t.shape, dtype=vty.dt)
        for buf, idx, pos in parts:
            view = buf.view(UNSIGNED[size]).view(vty.dt)
            k_ = idx >> {1: 0, 2: 1, 4: 2, 8: 3}[size]
            bb = b if pos is None else b[pos]
            cc = c if (c is None or pos is None) else c[pos]
            o = _atomic_apply(view, k_, bb, cc, fn, ufunc)
            if pos is None:
                old = o
            else:
                old[pos] = o
        if w is not None:
            w(m, s, t, old, pc)

    return Op("alu", ins, run)


def _vector_atomic(
    d: Decoder,
    ins: Instr,
    pc: int,
    aop: str,
    has_dst: bool,
    eff: str,
    ar: Reader,
    ty: Ty,
    vty: Ty,
    nvec: int,
) -> Op:
    """``atom/red.vN.type.op`` (sm_90): each element is a separate atomic on
    consecutive addresses, applied element by element (lane order within one)."""
    if aop not in ("add", "min", "max"):
        raise SimError(ins.span, f"'{ins.name}': vector atomics support add/min/max only")
    k = 1 if has_dst else 0
    srcs = ins.operands[k + 1]
    if not isinstance(srcs, Vec) or len(srcs.elems) != nvec:
        raise SimError(ins.span, f"'{ins.name}': expected a {nvec}-element source vector")
    dsts: list[Writer | None] = [None] * nvec
    if has_dst:
        dst = ins.operands[0]
        if not isinstance(dst, Vec) or len(dst.elems) != nvec:
            raise SimError(ins.span, f"'{ins.name}': expected a {nvec}-element destination")
        dsts = [d.wr(e, vty, ins) for e in dst.elems]
    rbs = [d.rd(e, vty, ins) for e in srcs.elems]
    fn = _atomic_fn(aop, ty)
    span = ins.span
    size = ty.size
    total = size * nvec
    eff2 = eff if eff != "generic" else "generic"

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a = np.ascontiguousarray(np.broadcast_to(ar(m, s), t.shape))
        check_vec_align(m, a, total, t, span)
        m.stats.atomics += len(t) * nvec
        for i in range(nvec):
            b = np.broadcast_to(np.asarray(rbs[i](m, s)), t.shape)
            parts = m.mem.translate(eff2, a + i * size, t, size, span, write=True)
            old = np.zeros(t.shape, dtype=vty.dt)
            for buf, idx, pos in parts:
                view = buf.view(UNSIGNED[size]).view(vty.dt)
                k_ = idx >> {1: 0, 2: 1, 4: 2, 8: 3}[size]
                o = _atomic_apply(view, k_, b if pos is None else b[pos], None, fn, None)
                if pos is None:
                    old = o
                else:
                    old[pos] = o
            w = dsts[i]
            if w is not None:
                w(m, s, t, old, pc)

    return Op("alu", ins, run)


def _atomic_fn(op: str, ty: Ty) -> Callable[[Any, Any, Any], Any]:
    if op == "add":
        if ty.kind == "f" and ty.size == 4:
            # subnormals flush, NaN results are canonical (as on an H100)
            return lambda o, b, c: fl.canonical_nan32(fl.ftz32(fl.ftz32(o) + fl.ftz32(b)))
        if ty.kind == "h":
            return lambda o, b, c: (o.astype(np.float64) + b.astype(np.float64)).astype(np.float16)
        return lambda o, b, c: o + b
    if op == "min":
        return lambda o, b, c: np.fmin(o, b) if ty.kind == "f" else np.minimum(o, b)
    if op == "max":
        return lambda o, b, c: np.fmax(o, b) if ty.kind == "f" else np.maximum(o, b)
    if op == "and":
        return lambda o, b, c: o & b
    if op == "or":
        return lambda o, b, c: o | b
    if op == "xor":
        return lambda o, b, c: o ^ b
    if op == "exch":
        return lambda o, b, c: b
    if op == "cas":
        return lambda o, b, c: np.where(o == b, c, o)
    if op == "inc":
        return lambda o, b, c: np.where(o >= b, ty.dt(0), o + ty.dt(1)).astype(ty.dt)
    if op == "dec":
        return lambda o, b, c: np.where((o == 0) | (o > b), b, o - ty.dt(1)).astype(ty.dt)
    raise ValueError(op)


_ATOMIC_UFUNC = {
    "add": np.add,
    "min": np.minimum,
    "max": np.maximum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def _atomic_apply(
    view: np.ndarray,
    k: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None,
    fn: Callable[[Any, Any, Any], Any],
    ufunc: Any,
) -> np.ndarray:
    """Apply an atomic to ``view[k]`` lane by lane in increasing lane order; return the
    old values seen by each lane."""
    n = len(k)
    if n == 0:
        return np.zeros(0, dtype=view.dtype)
    order = np.argsort(k, kind="stable")
    ks = k[order]
    starts = np.r_[0, np.nonzero(np.diff(ks))[0] + 1]
    counts = np.diff(np.r_[starts, n])
    bs = b[order]
    cs = c[order] if c is not None else None
    olds = np.zeros(n, dtype=view.dtype)
    if counts.max() == 1:
        o = view[ks]
        view[ks] = fn(o, bs, cs)
        olds[:] = o
        out = np.empty_like(olds)
        out[order] = olds
        return out
    big = counts > 32
    if big.any() and ufunc is not None:
        for st, cn in zip(starts[big], counts[big], strict=True):
            addr = ks[st]
            seq = np.concatenate([view[addr : addr + 1], bs[st : st + cn].astype(view.dtype)])
            acc = ufunc.accumulate(seq, dtype=view.dtype)
            olds[st : st + cn] = acc[:-1]
            view[addr] = acc[-1]
        starts = starts[~big]
        counts = counts[~big]
    if len(starts):
        maxc = int(counts.max())
        for r in range(maxc):
            live = counts > r
            p = starts[live] + r
            kk = ks[p]
            o = view[kk]
            view[kk] = fn(o, bs[p], cs[p] if cs is not None else None)
            olds[p] = o
    out = np.empty_like(olds)
    out[order] = olds
    return out
