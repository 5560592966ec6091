"""Operand access for decoded instructions: PTX types, register readers and writers.

Registers hold bit patterns in unsigned numpy arrays of their declared width
(``bool`` for ``.pred``).  A reader returns the operand as the instruction's
computation type (``.view`` for same-width reinterpretation, truncation for a wider
register, sign/zero extension for a narrower one); a writer converts the result
back to bits, extends or truncates it to the destination register and stores the
selected lanes (a lane not selected keeps its old value).
"""

from __future__ import annotations

import re
import struct
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ptxopt.ptx.ast import Addr, Expr, Imm, Not, Operand, Reg, RegImm, Sink, Span, Sym
from ptxopt.sim.errors import SimError
from ptxopt.sim.memory import FUNC_BASE


class Ty(NamedTuple):
    name: str
    size: int  # bytes (pred: 1)
    kind: str  # u s b f h bf h2 bf2 p
    dt: Any  # computation dtype
    ut: Any  # storage dtype (unsigned of the same width; bool for pred)


_U = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_S = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}

TYPES: dict[str, Ty] = {".pred": Ty(".pred", 1, "p", np.bool_, np.bool_)}
for _n in (8, 16, 32, 64):
    _b = _n // 8
    TYPES[f".u{_n}"] = Ty(f".u{_n}", _b, "u", _U[_b], _U[_b])
    TYPES[f".s{_n}"] = Ty(f".s{_n}", _b, "s", _S[_b], _U[_b])
    TYPES[f".b{_n}"] = Ty(f".b{_n}", _b, "b", _U[_b], _U[_b])
TYPES[".f32"] = Ty(".f32", 4, "f", np.float32, np.uint32)
TYPES[".f64"] = Ty(".f64", 8, "f", np.float64, np.uint64)
TYPES[".f16"] = Ty(".f16", 2, "h", np.float16, np.uint16)
TYPES[".bf16"] = Ty(".bf16", 2, "bf", np.uint16, np.uint16)
TYPES[".f16x2"] = Ty(".f16x2", 4, "h2", np.uint32, np.uint32)
TYPES[".bf16x2"] = Ty(".bf16x2", 4, "bf2", np.uint32, np.uint32)
TYPES[".u16x2"] = Ty(".u16x2", 4, "u2", np.uint32, np.uint32)
TYPES[".s16x2"] = Ty(".s16x2", 4, "s2", np.uint32, np.uint32)
TYPES[".tf32"] = Ty(".tf32", 4, "b", np.uint32, np.uint32)
# a .b128 register is two uint64 words per lane (low word first): numpy expands the
# sub-array dtype, so the register array has shape (threads, 2)
B128 = np.dtype((np.uint64, (2,)))
TYPES[".b128"] = Ty(".b128", 16, "q", B128, B128)

REG_DTYPES: dict[str, Any] = {}
for _k, _t in TYPES.items():
    REG_DTYPES[_k] = _t.ut

Reader = Callable[[Any, Any], Any]
Writer = Callable[[Any, Any, np.ndarray, Any, int], None]


def types_of(mods: tuple[str, ...]) -> list[Ty]:
    return [TYPES[m] for m in mods if m in TYPES]


def signed_of(size: int) -> Any:
    return _S[size]


def unsigned_of(size: int) -> Any:
    return _U[size]


def imm_scalar(imm: Imm, ty: Ty, span: Span | None) -> Any:
    v = imm.value
    if ty.kind == "p":
        return np.bool_(bool(v))
    if ty.kind == "f":
        if imm.kind == "f32" and ty.size == 4:
            return np.array(int(imm.text[2:], 16), dtype=np.uint32).view(np.float32)[()]
        if imm.kind == "f64" and imm.text[:2].lower() == "0d" and ty.size == 8:
            return np.array(int(imm.text[2:], 16), dtype=np.uint64).view(np.float64)[()]
        return ty.dt(float(v))
    if ty.kind == "h" and imm.kind != "int":
        return np.float16(float(v))
    if ty.kind == "bf" and imm.kind != "int":
        from ptxopt.sim.floats import f32_to_bf16_bits

        return f32_to_bf16_bits(np.array([float(v)], dtype=np.float32))[0]
    if imm.kind != "int":
        text = imm.text.lower()
        if imm.kind == "f32":
            iv = int(imm.text[2:], 16)
        elif text.startswith("0d"):  # the bit pattern (measured: and.b64 with 0d3ff0...;
            iv = int(text[2:], 16)  # expressions such as -0d... are folded to one)
        else:
            iv = int(v)
    else:
        iv = int(v)
    mask = (1 << (8 * ty.size)) - 1
    return np.array(iv & mask, dtype=ty.ut).view(ty.dt)[()]


_EXPR_RE = re.compile(r"^\s*(?:generic\(\s*([\w$.]+)\s*\)|([\w$.]+))\s*(?:([+-])\s*(\w+))?\s*$")


class Operands:
    """Builds readers and writers for the operands of one function's instructions."""

    def __init__(self, dec: Any) -> None:
        # the Decoder (symbol resolution, register types), which owns this object: a
        # weak reference, so that the pair is no reference cycle and a dropped compiled
        # module (the decoder holds its whole AST) is freed at once rather than by a
        # collection of the cyclic garbage collector
        self.dec = weakref.proxy(dec)

    # -- readers -------------------------------------------------------------
    def read(self, op: Operand, ty: Ty, span: Span | None) -> Reader:
        if isinstance(op, Reg):
            return self.read_reg(op.name, ty, span)
        if isinstance(op, Imm):
            val = imm_scalar(op, ty, span)
            return lambda m, s: val
        if isinstance(op, Not):
            inner = self.read_reg(op.operand.name, ty, span)
            return lambda m, s: ~inner(m, s)
        if isinstance(op, RegImm):
            # register + constant: the sum wraps at the operand's width (as ptxas folds it)
            if ty.kind == "p" or ty.size == 16:
                raise SimError(span, f"unsupported operand {op}")
            base = self.read_reg(op.reg.name, ty, span)
            k = np.array(op.offset & ((1 << (8 * ty.size)) - 1), dtype=ty.ut)
            ut, dt = ty.ut, ty.dt
            return lambda m, s: (base(m, s).view(ut) + k).view(dt)
        if isinstance(op, Sym | Expr):
            addr = self.address_of(op, span)
            if ty.size == 8:
                return lambda m, s: addr(m, s).astype(np.uint64).view(ty.dt)
            return lambda m, s: addr(m, s).astype(ty.ut).view(ty.dt)
        raise SimError(span, f"unsupported operand {op}")

    def read_reg(self, name: str, ty: Ty, span: Span | None) -> Reader:
        if name.startswith("%clock") or name.startswith("%globaltimer"):
            dt = np.uint64 if ("64" in name or "globaltimer" in name) else np.uint32

            def clock(m: Any, s: Any) -> Any:
                return (
                    np.full(len(m.all_tids[s]), m.stats.steps * 4, dtype=dt)
                    .astype(ty.ut)
                    .view(ty.dt)
                )

            return clock
        rdt = self.dec.reg_dtype(name, span)
        rsize = np.dtype(rdt).itemsize
        if rsize == 16 or ty.size == 16:
            if rsize != ty.size:
                raise SimError(span, f"128-bit register {name.split('::')[-1]} used as {ty.name}")
            return lambda m, s: m.R[name][s]
        if rdt is np.bool_ or ty.kind == "p":
            if rdt is not np.bool_:
                return lambda m, s: m.R[name][s] != 0
            return lambda m, s: m.R[name][s]
        if rsize == ty.size:
            if ty.dt is rdt:
                return lambda m, s: m.R[name][s]
            dt = ty.dt
            return lambda m, s: m.R[name][s].view(dt)
        if rsize > ty.size:
            ut, dt = ty.ut, ty.dt
            return lambda m, s: m.R[name][s].astype(ut).view(dt)
        if ty.kind == "s":
            sdt = _S[rsize]
            dt = ty.dt
            return lambda m, s: m.R[name][s].view(sdt).astype(dt)
        ut, dt = ty.ut, ty.dt
        return lambda m, s: m.R[name][s].astype(ut).view(dt)

    # -- writers -------------------------------------------------------------
    def write(self, op: Operand, ty: Ty, span: Span | None) -> Writer | None:
        if isinstance(op, Sink):
            return None
        if not isinstance(op, Reg):
            raise SimError(span, f"destination must be a register, not {op}")
        name = op.name
        if name.startswith("%") and self.dec.is_special(name):
            raise SimError(span, f"cannot write special register {name}")
        rdt = self.dec.reg_dtype(name, span)
        rsize = np.dtype(rdt).itemsize
        if rsize == 16 or ty.size == 16:
            if rsize != ty.size:
                raise SimError(span, f"128-bit register {name.split('::')[-1]} used as {ty.name}")

            def w128(m: Any, s: Any, t: np.ndarray, v: Any, pc: int) -> None:
                m.store_reg(name, s, t, np.asarray(v).astype(np.uint64, copy=False), pc)

            return w128
        if rdt is np.bool_:

            def wpred(m: Any, s: Any, t: np.ndarray, v: Any, pc: int) -> None:
                m.store_reg(name, s, t, np.asarray(v).astype(np.bool_, copy=False), pc)

            return wpred
        if ty.kind == "p":

            def wp2(m: Any, s: Any, t: np.ndarray, v: Any, pc: int) -> None:
                m.store_reg(name, s, t, np.asarray(v).astype(rdt), pc)

            return wp2
        tdt, tut = ty.dt, ty.ut
        signed = ty.kind == "s"

        def wr(m: Any, s: Any, t: np.ndarray, v: Any, pc: int) -> None:
            a = np.asarray(v)
            if a.dtype != tdt:
                a = a.astype(tdt)
            bits = a.view(tut) if tdt is not tut else a
            if rsize != ty.size:
                if rsize > ty.size and signed:
                    bits = bits.view(_S[ty.size]).astype(_S[rsize]).view(rdt)
                else:
                    bits = bits.astype(rdt)
            m.store_reg(name, s, t, bits, pc)

        return wr

    # -- symbols -------------------------------------------------------------
    def address_of(self, op: Operand, span: Span | None) -> Reader:
        """Reader for the address of a symbol (in its own state space), as int64."""
        if isinstance(op, Sym):
            name, off = op.name, 0
            generic = False
        else:
            assert isinstance(op, Expr)
            mm = _EXPR_RE.match(op.text)
            if mm is None:
                raise SimError(span, f"unsupported address expression {op.text!r}")
            generic = mm.group(1) is not None
            name = mm.group(1) or mm.group(2)
            off = int(mm.group(4), 0) if mm.group(4) else 0
            if mm.group(3) == "-":
                off = -off
        space, base = self.dec.symbol(name, span)
        if generic:
            from ptxopt.sim.memory import LOCAL_WINDOW, SHARED_WINDOW

            if space == ".shared":
                off += SHARED_WINDOW
            elif space in (".local", ".param"):
                off += LOCAL_WINDOW
        if space == "func":
            c = np.int64(FUNC_BASE + 16 * int(base))
            return lambda m, s: np.broadcast_to(c, np.shape(m.all_tids[s]))
        if space in (".local", ".param"):
            b = int(base) + off
            return lambda m, s: m.fp[s] + b
        c2 = np.int64(int(base) + off)
        return lambda m, s: c2


def f32_bits(x: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


def addr_reader(ops: Operands, addr: Addr, space: str, span: Span | None) -> tuple[str, Reader]:
    """Return the effective state space and a reader of the byte address (int64)."""
    off = np.int64(addr.offset)
    base = addr.base
    if base is None:
        return space, lambda m, s: off
    if isinstance(base, Reg):
        r = ops.read_reg(base.name, TYPES[".u64"], span)
        rdt = ops.dec.reg_dtype(base.name, span)
        if np.dtype(rdt).itemsize < 8:
            r = ops.read_reg(base.name, TYPES[".u32"], span)
            return space, lambda m, s: r(m, s).astype(np.int64) + off
        return space, lambda m, s: r(m, s).view(np.int64) + off
    if isinstance(base, Sym | Expr):
        name = base.name if isinstance(base, Sym) else base.text
        sym_space, _ = ops.dec.symbol(
            name if isinstance(base, Sym) else (_EXPR_RE.match(name) or [None, name])[2] or name,
            span,
        )
        rd = ops.address_of(base, span)
        eff = space
        if sym_space in (".global", ".const", ".shared", ".local"):
            if space not in ("", sym_space) and not (space == ".global" and sym_space == ".const"):
                raise SimError(span, f"symbol {name} is in {sym_space}, accessed as {space}")
            eff = sym_space
        elif sym_space == ".param":  # frame-resident parameters of device functions
            eff = ".local"
        elif sym_space == ".kparam":
            eff = ".param"
        elif sym_space == ".slocal":
            eff = ".local"
        return eff, lambda m, s: rd(m, s) + off
    raise SimError(span, f"unsupported address {addr}")
