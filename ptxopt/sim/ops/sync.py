"""Barriers and ordering: ``bar``/``barrier`` (``.sync``, ``.arrive``, ``.red``),
``bar.warp.sync``, and the fences, hints and sleeps the interpreter treats as no-ops
(its memory is sequentially consistent)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr
from ptxopt.sim.machine import Op
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.ops.warp import member_mask
from ptxopt.sim.values import (
    TYPES,
    Reader,
    Writer,
)


@dataclass(slots=True)
class BarInfo:
    id_reader: Reader
    count_reader: Reader | None
    arrive: bool
    red: Reader | None = None
    red_mode: str = ""
    red_write: Writer | None = None


NOPS = (
    "membar",
    "fence",
    "nanosleep",
    "prefetch",
    "prefetchu",
    "pmevent",
    "griddepcontrol",
    "discard",
    "applypriority",
)


@handles(*NOPS)
def op_nop(d: Decoder, ins: Instr, pc: int) -> Op:
    return Op("alu", ins, lambda m, s, t: None)


@handles("setmaxnreg")
def op_setmaxnreg(d: Decoder, ins: Instr, pc: int) -> Op:
    """``setmaxnreg.{inc,dec}.sync.aligned.u32 imm``: a register-allocation request with
    no effect on values; checked: the count is an immediate in 24..256 that is a multiple
    of 8, and whole warps execute it (all lanes, ``.aligned``)."""
    from ptxopt.ptx.ast import Imm
    from ptxopt.sim.errors import SimError

    n = ins.operands[0] if ins.operands else None
    if not isinstance(n, Imm) or not (24 <= int(n.value) <= 256) or int(n.value) % 8:
        raise SimError(
            ins.span, f"'{ins.name}': the count must be an immediate 24..256, a multiple of 8"
        )

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        if not lanes.all():
            w = int(np.argmax(~lanes.all(1)))
            raise SimError(
                ins.span,
                f"'{ins.name}': executed by {int(lanes[w].sum())} lanes of warp "
                f"{int(G[w]) % m.wpc}; .sync.aligned needs the whole warp",
            )

    return Op("warp", ins, run)


@handles("bar", "barrier")
def op_bar(d: Decoder, ins: Instr, pc: int) -> Op:
    mods = ins.mods
    if ".warp" in mods:
        return _bar_warp(d, ins, pc)
    if ".cluster" in mods:
        # every CTA is a cluster of its own: barrier.cluster.wait waits for all threads
        # of the CTA (at the wait, on barrier 15 - stricter than waiting for their
        # arrivals, which a program could only notice as a reported deadlock);
        # barrier.cluster.arrive has nothing left to do
        if ".wait" in mods:
            return Op("bar", ins, data=BarInfo(lambda m, s: np.uint32(15), None, False))
        return Op("alu", ins, lambda m, s, t: None)
    arrive = ".arrive" in mods
    red = ".red" in mods
    u32 = TYPES[".u32"]
    ops_ = ins.operands
    if red:
        # bar.red.op.type d, a{, b}, {!}c
        mode = next(m[1:] for m in mods if m in (".popc", ".and", ".or"))
        dty = TYPES[".u32"] if mode == "popc" else TYPES[".pred"]
        wd = d.wr(ops_[0], dty, ins)
        idr = d.rd(ops_[1], u32, ins)
        cnt = d.rd(ops_[2], u32, ins) if len(ops_) == 4 else None
        pr = d.rd(ops_[-1], TYPES[".pred"], ins)
        return Op("bar", ins, data=BarInfo(idr, cnt, False, pr, mode, wd))
    idr = d.rd(ops_[0], u32, ins) if ops_ else (lambda m, s: np.uint32(0))
    cnt = d.rd(ops_[1], u32, ins) if len(ops_) > 1 else None
    return Op("bar", ins, data=BarInfo(idr, cnt, arrive))


def _bar_warp(d: Decoder, ins: Instr, pc: int) -> Op:
    mr = d.rd(ins.operands[0], TYPES[".u32"], ins)

    def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
        member = member_mask(m, G, lanes, t, mr)
        m.check_members(op, G, lanes, member)

    op = Op("warp", ins, run)
    return op
