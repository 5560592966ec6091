"""Memory: ``ld``/``ldu``/``st`` (scalars, vectors, ``.b128``), ``cvta`` between generic
and state-space addresses, and ``createpolicy`` (a policy the interpreter ignores)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ptxopt.ptx.ast import Addr, Imm, Instr, Operand, Span, Sym, Vec
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.memory import LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.values import (
    TYPES,
    Reader,
    Ty,
    addr_reader,
)


@handles("cvta")
def op_cvta(d: Decoder, ins: Instr, pc: int) -> Op:
    mods = ins.mods
    to = ".to" in mods
    space = next(
        (m for m in mods if m in (".global", ".shared", ".local", ".const", ".param")), None
    )
    ty = d.ty(ins)
    base = {".shared": SHARED_WINDOW, ".local": LOCAL_WINDOW, ".param": PARAM_WINDOW}.get(
        space or "", 0
    )
    u64 = TYPES[".u64"]
    src = ins.operands[1]
    if isinstance(src, Sym):
        rd = d.ops.address_of(src, ins.span)
    else:
        rd0 = d.rd(src, u64 if ty.size == 8 else TYPES[".u32"], ins)

        def rd(m: Any, s: Any) -> Any:
            return np.asarray(rd0(m, s)).astype(np.int64)

    b = np.int64(base)
    w = d.wr(ins.operands[0], ty, ins)

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a = np.asarray(rd(m, s)).astype(np.int64)
        r = a - b if to else a + b
        if w is not None:
            w(m, s, t, r.astype(np.uint64).astype(ty.ut).view(ty.dt), pc)

    return Op("alu", ins, run)


def _space(d: Decoder, ins: Instr) -> str:
    for m in ins.mods:
        if m in (".global", ".shared", ".local", ".const", ".param"):
            return m
        if m.startswith(".shared::"):
            return ".shared"
    return ""


def mem_common(d: Decoder, ins: Instr, aop: Operand) -> tuple[str, Reader, Ty, int]:
    if not isinstance(aop, Addr):
        raise SimError(ins.span, f"'{ins.name}': expected an address operand")
    space = _space(d, ins)
    eff, ar = addr_reader(d.ops, aop, space, ins.span)
    if eff == ".slocal":
        eff = ".local"
    ty = d.ty(ins)
    nvec = 1
    for m in ins.mods:
        if m in (".v2", ".v4", ".v8"):
            nvec = int(m[2:])
    if ty.size > 8 and nvec > 1:
        raise SimError(ins.span, f"'{ins.name}': vectors of 128-bit elements are invalid")
    return eff or "generic", ar, ty, nvec


@handles("ld", "ldu")
def op_ld(d: Decoder, ins: Instr, pc: int) -> Op:
    eff, ar, ty, nvec = mem_common(d, ins, ins.operands[1])
    if ty.size == 16:
        return _ld128(d, ins, pc, eff, ar)
    dst = ins.operands[0]
    elems = list(dst.elems) if isinstance(dst, Vec) else [dst]
    if len(elems) != nvec:
        raise SimError(ins.span, f"'{ins.name}': vector width mismatch")
    bty = TYPES[f".b{ty.size * 8}"] if ty.kind not in ("u", "s") else ty
    ws = [d.wr(e, bty if ty.kind != "s" else ty, ins) for e in elems]
    size = ty.size
    span = ins.span
    vt = ty.dt if ty.kind == "s" else bty.dt
    total = size * nvec
    kparam = (
        eff == ".param"
        and isinstance(ins.operands[1], Addr)
        and isinstance(ins.operands[1].base, Sym)
    )

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a = ar(m, s)
        if kparam:
            # kernel parameters: one value for all lanes
            a0 = a[:1] if np.ndim(a) else np.array([a], dtype=np.int64)
            for i, w in enumerate(ws):
                if w is None:
                    continue
                v = m.mem.load(".param", a0 + i * size, t[:1], size, span)
                w(m, s, t, v.view(vt)[0], pc)
            return
        a = np.ascontiguousarray(np.broadcast_to(a, t.shape))
        if nvec > 1:
            check_vec_align(m, a, total, t, span)
        for i, w in enumerate(ws):
            v = m.mem.load(eff, a + i * size if i else a, t, size, span)
            if w is not None:
                w(m, s, t, v.view(vt), pc)

    return Op("alu", ins, run)


def _ld128(d: Decoder, ins: Instr, pc: int, eff: str, ar: Reader) -> Op:
    """``ld.b128``: two 8-byte words (low word at the lower address), 16-aligned."""
    w = d.wr(ins.operands[0], TYPES[".b128"], ins)
    span = ins.span
    if eff == ".param" and isinstance(ins.operands[1], Addr):
        if isinstance(ins.operands[1].base, Sym):
            raise SimError(span, f"'{ins.name}': 128-bit kernel parameters are unsupported")

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a = np.ascontiguousarray(np.broadcast_to(ar(m, s), t.shape))
        check_vec_align(m, a, 16, t, span)
        lo = m.mem.load(eff, a, t, 8, span)
        hi = m.mem.load(eff, a + 8, t, 8, span)
        if w is not None:
            w(m, s, t, np.stack([lo, hi], axis=-1), pc)

    return Op("alu", ins, run)


def _st128(d: Decoder, ins: Instr, pc: int, eff: str, ar: Reader) -> Op:
    rv = d.rd(ins.operands[1], TYPES[".b128"], ins)
    span = ins.span

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a = np.ascontiguousarray(np.broadcast_to(ar(m, s), t.shape))
        check_vec_align(m, a, 16, t, span)
        v = np.broadcast_to(np.asarray(rv(m, s)), t.shape + (2,))
        m.mem.store(eff, a, t, 8, v[:, 0], span)
        m.mem.store(eff, a + 8, t, 8, v[:, 1], span)

    return Op("alu", ins, run)


@handles("st")
def op_st(d: Decoder, ins: Instr, pc: int) -> Op:
    if ".bulk" in ins.mods:
        return _st_bulk(d, ins, pc)
    eff, ar, ty, nvec = mem_common(d, ins, ins.operands[0])
    if ty.size == 16:
        return _st128(d, ins, pc, eff, ar)
    src = ins.operands[1]
    elems = list(src.elems) if isinstance(src, Vec) else [src]
    bty = TYPES[f".b{ty.size * 8}"]
    rs = [d.rd(e, bty, ins) for e in elems]
    size = ty.size
    span = ins.span
    total = size * nvec

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a = np.ascontiguousarray(np.broadcast_to(ar(m, s), t.shape))
        if nvec > 1:
            check_vec_align(m, a, total, t, span)
        for i, r in enumerate(rs):
            m.mem.store(eff, a + i * size if i else a, t, size, r(m, s), span)

    return Op("alu", ins, run)


@handles("createpolicy")
def op_createpolicy(d: Decoder, ins: Instr, pc: int) -> Op:
    w = d.wr(ins.operands[0], TYPES[".b64"], ins)
    return Op("alu", ins, lambda m, s, t: w(m, s, t, np.uint64(0), pc) if w else None)


def check_vec_align(m: Any, a: np.ndarray, total: int, t: np.ndarray, span: Span | None) -> None:
    bad = (a & (total - 1)) != 0
    if bad.any():
        i = int(np.argmax(bad))
        raise SimError(
            span,
            f"misaligned {total}-byte vector access at address "
            f"{int(a[i]) & (2**64 - 1):#x} by {m.describe(int(t[i]))}",
        )


def _st_bulk(d: Decoder, ins: Instr, pc: int) -> Op:
    """``st.bulk{.weak}{.shared::cta} [a], size, 0``: zero ``size`` bytes from ``a``
    (both multiples of 8; the ISA requires the initial value 0)."""
    aop = ins.operands[0]
    if not isinstance(aop, Addr):
        raise SimError(ins.span, f"'{ins.name}': expected an address operand")
    init = ins.operands[2]
    if not isinstance(init, Imm) or init.value != 0:
        raise SimError(ins.span, f"'{ins.name}': the initial value must be the immediate 0")
    eff, ar = addr_reader(d.ops, aop, _space(d, ins), ins.span)
    size_r = d.rd(ins.operands[1], TYPES[".u64"], ins)
    span = ins.span

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a = np.ascontiguousarray(np.broadcast_to(ar(m, s), t.shape)).astype(np.int64)
        n = np.broadcast_to(np.asarray(size_r(m, s)).astype(np.int64), t.shape)
        check_vec_align(m, a, 8, t, span)
        for k in range(0, int(n.max(initial=0)), 8):
            lanes = k < n
            if lanes.any():
                zero = np.zeros(int(lanes.sum()), dtype=np.uint64)
                m.mem.store(eff or "generic", a[lanes] + k, t[lanes], 8, zero, span)

    return Op("alu", ins, run)
