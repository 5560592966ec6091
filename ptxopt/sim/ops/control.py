"""Control flow: ``bra``, ``brx.idx``, ``call`` (direct, indirect, the ``vprintf``
built-in), ``ret``, ``exit``, ``trap``, ``brkpt``.  These decode into data that
:mod:`ptxopt.sim.machine` interprets."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr, Operand, ParenList, Sym
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.program import FuncInfo, VarInfo
from ptxopt.sim.values import (
    TYPES,
    Reader,
)


@dataclass(slots=True)
class CallSite:
    direct: FuncInfo | None
    target_reader: Reader | None
    args: list[VarInfo]
    rets: list[VarInfo]
    ret_offsets: list[int]
    saved: list[str] = field(default_factory=list)
    builtin: Callable[..., None] | None = None


@handles("bra")
def op_bra(d: Decoder, ins: Instr, pc: int) -> Op:
    info = d.prog.owner[pc]
    lab = next((o.name for o in ins.operands if isinstance(o, Sym)), None)
    if lab is None or lab not in info.labels:
        raise SimError(ins.span, f"unknown branch target {lab}")
    return Op("bra", ins, data=(info.labels[lab], d.prog.reconv.get(pc, -1)))


@handles("brx")
def op_brx(d: Decoder, ins: Instr, pc: int) -> Op:
    info = d.prog.owner[pc]
    tab = ins.operands[1]
    if not isinstance(tab, Sym) or tab.name not in info.branch_tables:
        raise SimError(ins.span, "brx.idx needs a .branchtargets table")
    targets = [info.labels[lab] for lab in info.branch_tables[tab.name]]
    reader = d.rd(ins.operands[0], TYPES[".u32"], ins)
    return Op("brx", ins, data=(reader, targets, d.prog.reconv.get(pc, -1)))


@handles("ret")
def op_ret(d: Decoder, ins: Instr, pc: int) -> Op:
    return Op("ret", ins)


@handles("exit")
def op_exit(d: Decoder, ins: Instr, pc: int) -> Op:
    return Op("exit", ins)


@handles("trap")
def op_trap(d: Decoder, ins: Instr, pc: int) -> Op:
    return Op("trap", ins)


@handles("brkpt")
def op_brkpt(d: Decoder, ins: Instr, pc: int) -> Op:
    return Op("alu", ins, lambda m, s, t: None)


@handles("call")
def op_call(d: Decoder, ins: Instr, pc: int) -> Op:
    caller = d.prog.owner[pc]
    lists = [o for o in ins.operands if isinstance(o, ParenList)]
    target = next(o for o in ins.operands if not isinstance(o, ParenList))
    # call (rets), f, (args) | call f, (args) | call (rets), f | call f
    idx_t = ins.operands.index(target)
    rets_l = ins.operands[0] if idx_t == 1 and isinstance(ins.operands[0], ParenList) else None
    args_l = next((o for o in ins.operands[idx_t + 1 :] if isinstance(o, ParenList)), None)
    del lists

    def slot(o: Operand) -> VarInfo:
        if not isinstance(o, Sym):
            raise SimError(ins.span, f"call arguments must be .param symbols, not {o}")
        v = caller.vars.get(o.name)
        if v is None or v.space != ".param":
            raise SimError(
                ins.span,
                f"call argument {o.name} is not a .param variable of the calling function",
            )
        return v

    args = [slot(o) for o in args_l.items] if args_l is not None else []
    rets = [slot(o) for o in rets_l.items] if rets_l is not None else []
    if isinstance(target, Sym) and target.name not in d.prog.funcs:
        name = target.name
        if name == "vprintf":
            return Op(
                "call",
                ins,
                data=CallSite(None, None, args, rets, [], builtin=_vprintf(rets, pc)),
            )
        raise SimError(ins.span, f"call to {name}, which has no body in this module")
    if isinstance(target, Sym):
        f = d.prog.funcs[target.name]
        offs = [r.offset for r in f.rets]
        saved = [f.name] if f.recursive else []
        return Op("call", ins, data=CallSite(f, None, args, rets, offs[: len(rets)], saved))
    reader = d.rd(target, TYPES[".u64"], ins)
    offs = []
    off = 0
    for r in rets:
        off = (off + r.align - 1) // r.align * r.align
        offs.append(off)
        off += r.size
    saved = [n for n in d.prog.address_taken if d.prog.funcs[n].recursive]
    return Op("call", ins, data=CallSite(None, reader, args, rets, offs, sorted(saved)))


def _vprintf(rets: list[VarInfo], pc: int) -> Callable[..., None]:
    def run(m: Any, tids: np.ndarray, pc_: int) -> None:
        # printf output is not modelled; the call returns 0 (no characters counted)
        for r in rets:
            base = tids * m.mem.local_stride + m.fp[tids] + r.offset
            for b in range(r.size):
                m.mem.local[base + b] = 0

    return run
