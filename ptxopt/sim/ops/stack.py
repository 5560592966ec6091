"""Stack manipulation, address-space queries and the cluster of one CTA: ``alloca``,
``stacksave``, ``stackrestore`` (PTX ISA 9.0, section 9.7.17), ``isspacep``, ``mapa``,
``getctarank`` (section 9.7.9).

``alloca`` takes memory from the top of the thread's local memory, growing down from
a per-thread stack pointer (a local address) that ``stacksave`` reads and
``stackrestore`` writes; running into the frames below is a stack overflow
(reported, as the ISA leaves it undefined).  Memory is not reclaimed when the
allocating function returns - it stays valid, which is all the ISA requires.

The interpreter launches every CTA as a cluster of its own: ``getctarank`` is 0 and
``mapa`` maps an address to itself for rank 0 (another rank is an error).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ptxopt.ptx.ast import Imm, Instr
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.memory import (
    GLOBAL_BASE,
    LOCAL_WINDOW,
    PARAM_WINDOW,
    SHARED_WINDOW,
    WINDOW_SIZE,
)
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.values import TYPES


@handles("stacksave")
def op_stacksave(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    w = d.wr(ins.operands[0], ty, ins)

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        if w is not None:
            w(m, s, t, m.stack_top[t].astype(ty.dt), pc)

    return Op("alu", ins, run)


@handles("stackrestore")
def op_stackrestore(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    r = d.rd(ins.operands[0], ty, ins)

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        m.stack_top[t] = np.broadcast_to(np.asarray(r(m, s)).astype(np.int64), t.shape)

    return Op("alu", ins, run)


@handles("alloca")
def op_alloca(d: Decoder, ins: Instr, pc: int) -> Op:
    """``alloca.type ptr, size{, immAlign}``: ``size`` bytes aligned to ``immAlign``
    (default 8) below the stack pointer; ``ptr`` is their local address."""
    ty = d.ty(ins)
    ops = ins.operands
    align = 8
    if len(ops) > 2:
        if not isinstance(ops[2], Imm):
            raise SimError(ins.span, f"'{ins.name}': the alignment must be an immediate")
        align = int(ops[2].value)
    w = d.wr(ops[0], ty, ins)
    size_r = d.rd(ops[1], ty, ins)

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        size = np.broadcast_to(np.asarray(size_r(m, s)).astype(np.int64), t.shape)
        new = (m.stack_top[t] - size) & ~np.int64(align - 1)
        low = new < m.mem.alloca_floor
        if low.any():
            i = int(np.argmax(low))
            raise SimError(
                ins.span,
                f"'{ins.name}': stack overflow allocating {int(size[i])} bytes in "
                f"{m.describe(int(t[i]))}",
            )
        m.stack_top[t] = new
        if w is not None:
            w(m, s, t, new.astype(ty.dt), pc)

    return Op("alu", ins, run)


_SPACES = {
    ".global": (GLOBAL_BASE, SHARED_WINDOW),
    ".shared": (SHARED_WINDOW, SHARED_WINDOW + WINDOW_SIZE),
    ".shared::cta": (SHARED_WINDOW, SHARED_WINDOW + WINDOW_SIZE),
    ".shared::cluster": (SHARED_WINDOW, SHARED_WINDOW + WINDOW_SIZE),
    ".local": (LOCAL_WINDOW, LOCAL_WINDOW + WINDOW_SIZE),
    ".param": (PARAM_WINDOW, PARAM_WINDOW + WINDOW_SIZE),
    ".param::entry": (PARAM_WINDOW, PARAM_WINDOW + WINDOW_SIZE),
}


@handles("isspacep")
def op_isspacep(d: Decoder, ins: Instr, pc: int) -> Op:
    """``isspacep.space p, a``: whether generic address ``a`` lies in ``space``'s
    window (``.const`` variables live in read-only global allocations)."""
    space = next((m for m in ins.mods if m in _SPACES or m == ".const"), None)
    if space is None:
        raise SimError(ins.span, f"'{ins.name}': expected a state space")
    r = d.rd(ins.operands[1], TYPES[".u64"], ins)
    w = d.wr(ins.operands[0], TYPES[".pred"], ins)

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        a = np.broadcast_to(np.asarray(r(m, s)).astype(np.uint64), t.shape).astype(np.int64)
        if space in (".global", ".const"):
            in_global = (a >= GLOBAL_BASE) & (a < SHARED_WINDOW)
            ro = np.zeros(a.shape, dtype=bool)
            for al in m.mem.allocs:
                if al.readonly:
                    ro |= (a >= al.start) & (a < al.start + al.size)
            res = in_global & (ro if space == ".const" else ~ro)
        else:
            lo, hi = _SPACES[space]
            res = (a >= lo) & (a < hi)
        if w is not None:
            w(m, s, t, res, pc)

    return Op("alu", ins, run)


@handles("getctarank")
def op_getctarank(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    d.rd(ins.operands[1], ty, ins)  # the operand must be readable
    return d.alu1(ins, pc, ty, [ty], lambda a: np.zeros(np.shape(a), dtype=ty.dt))


@handles("mapa")
def op_mapa(d: Decoder, ins: Instr, pc: int) -> Op:
    ty = d.ty(ins)
    u32 = TYPES[".u32"]
    w = d.wr(ins.operands[0], ty, ins)
    ra = d.ops.address_of(ins.operands[1], ins.span) if _is_symbol(ins) else None
    r = None if ra is not None else d.rd(ins.operands[1], ty, ins)
    rank = d.rd(ins.operands[2], u32, ins)

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        b = np.broadcast_to(np.asarray(rank(m, s)), t.shape)
        if np.any(b != 0):
            i = int(np.argmax(b != 0))
            raise SimError(
                ins.span,
                f"'{ins.name}': CTA rank {int(b[i])} is outside the cluster of one CTA the "
                f"interpreter launches ({m.describe(int(t[i]))})",
            )
        a = ra(m, s) if ra is not None else r(m, s)  # type: ignore[misc]
        if w is not None:
            w(m, s, t, np.asarray(a).astype(np.uint64).astype(ty.ut).view(ty.dt), pc)

    return Op("alu", ins, run)


def _is_symbol(ins: Instr) -> bool:
    from ptxopt.ptx.ast import Expr, Sym

    return isinstance(ins.operands[1], Sym | Expr)
