"""Instruction semantics: each PTX instruction is decoded once into an :class:`Op`.

An ``alu`` op is a closure ``fn(machine, sel, tids)`` that reads its sources for the
selected lanes, computes with numpy and writes its destinations; warp-level ops get
the executing lanes as a ``(warps, 32)`` mask.  Control flow, calls and barriers are
decoded into data that :mod:`ptxopt.sim.machine` interprets.  An instruction the
interpreter cannot execute decodes into an op that raises when it is *executed*,
naming the opcode, so unrelated kernels of the same module still run.

Float semantics: ``.rn`` add/sub/mul/div/sqrt use numpy's IEEE binary32/binary64
operations (correctly rounded).  ``fma``/``mad`` and every directed rounding mode are
exact (see :mod:`ptxopt.sim.floats`).  Approximate instructions (``rcp.approx``,
``sqrt.approx``, ``rsqrt.approx``, ``div.approx``/``div.full``, ``ex2``/``lg2``/
``sin``/``cos``/``tanh.approx``) return the correctly rounded value of the exact
function, which hardware approximates to within a few ulp; results of such ops may
differ from a GPU in the last bits.  NaN results keep numpy's quiet NaN payloads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Addr, Imm, Instr, Not, Operand, Pair, ParenList, Reg, Sink, Span, Sym
from ptxopt.sim import floats as fl
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op, W, pack_mask
from ptxopt.sim.memory import LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, UNSIGNED
from ptxopt.sim.program import FuncInfo, Program, VarInfo
from ptxopt.sim.values import (
    TYPES,
    Operands,
    Reader,
    Ty,
    Writer,
    addr_reader,
    signed_of,
    types_of,
    unsigned_of,
)

TENSOR_CORE = (
    "mma",
    "wgmma",
    "ldmatrix",
    "stmatrix",
    "cp",
    "mbarrier",
    "tcgen05",
    "wmma",
    "movmatrix",
    "tensormap",
    "cp.async",
    "cp.reduce",
    "multimem",
    "setmaxnreg",
    "clusterlaunchcontrol",
)
NOPS = frozenset(
    {
        "membar",
        "fence",
        "nanosleep",
        "prefetch",
        "prefetchu",
        "pmevent",
        "griddepcontrol",
        "discard",
        "applypriority",
        "trap_nop",
    }
)
# cheap per-lane ALU opcodes: executed on whole register arrays with a write mask when
# most warps of a batch run them (no memory, no per-lane Python fallbacks)
LANEWISE = frozenset(
    {
        "mov", "add", "sub", "addc", "subc", "mul", "mad", "madc", "mul24", "mad24",
        "sad", "min", "max", "abs", "neg", "and", "or", "xor", "not", "cnot", "shl",
        "shr", "shf", "lop3", "popc", "clz", "bfe", "bfi", "prmt", "setp", "set",
        "selp", "slct", "cvt", "cvta", "copysign", "testp", "dp4a", "dp2a",
    }
)  # fmt: skip
ROUNDING = {".rn": "rn", ".rz": "rz", ".rm": "rm", ".rp": "rp"}
IROUND = {".rni": "rn", ".rzi": "rz", ".rmi": "rm", ".rpi": "rp"}


_S32_MIN, _S32_MAX = np.int64(-(2**31)), np.int64(2**31 - 1)


def _saturating_s32(op: Any) -> Any:
    """``add.sat.s32`` / ``sub.sat.s32``: compute in 64 bits, clamp to the s32 range."""
    return lambda a, b: np.clip(op(a.astype(np.int64), b), _S32_MIN, _S32_MAX).astype(np.int32)


@dataclass(slots=True)
class CallSite:
    direct: FuncInfo | None
    target_reader: Reader | None
    args: list[VarInfo]
    rets: list[VarInfo]
    ret_offsets: list[int]
    saved: list[str] = field(default_factory=list)
    builtin: Callable[..., None] | None = None


@dataclass(slots=True)
class BarInfo:
    id_reader: Reader
    count_reader: Reader | None
    arrive: bool
    red: Reader | None = None
    red_mode: str = ""
    red_write: Writer | None = None


class Decoder:
    """Decodes the instructions of a :class:`Program` for a launch."""

    SPECIAL = frozenset(
        {
            "%tid.x",
            "%tid.y",
            "%tid.z",
            "%ntid.x",
            "%ntid.y",
            "%ntid.z",
            "%ctaid.x",
            "%ctaid.y",
            "%ctaid.z",
            "%nctaid.x",
            "%nctaid.y",
            "%nctaid.z",
            "%laneid",
            "%warpid",
            "%nwarpid",
            "%smid",
            "%nsmid",
            "%gridid",
            "%lanemask_eq",
            "%lanemask_lt",
            "%lanemask_le",
            "%lanemask_ge",
            "%lanemask_gt",
            "%dynamic_smem_size",
            "%total_smem_size",
        }
    )
    SPECIAL_DT = {"%gridid": np.uint64}

    def __init__(self, prog: Program, symbols: dict[str, tuple[str, int]]) -> None:
        self.prog = prog
        self.symbols = symbols  # module-level: name -> (space, address/offset)
        self.reg_types: dict[str, Any] = {}
        for info in prog.funcs.values():
            for r, t in info.regs.items():
                if t not in TYPES:
                    raise SimError(info.fn.span, f"unsupported register type {t} for {r}")
                self.reg_types[r] = TYPES[t].ut
            self.reg_types[f"{info.name}::%cc"] = np.bool_
        for s in self.SPECIAL:
            self.reg_types[s] = self.SPECIAL_DT.get(s, np.uint32)
        self.func: FuncInfo | None = None
        self.ops = Operands(self)
        self.func_index = {name: i for i, name in enumerate(prog.funcs)}

    def is_special(self, name: str) -> bool:
        return name in self.SPECIAL or name.startswith("%clock") or name.startswith("%global")

    def reg_dtype(self, name: str, span: Span | None) -> Any:
        dt = self.reg_types.get(name)
        if dt is None:
            if name.startswith("%clock") or name.startswith("%globaltimer"):
                return np.uint64
            raise SimError(span, f"unknown register {name.split('::')[-1]}")
        return dt

    def symbol(self, name: str, span: Span | None) -> tuple[str, int]:
        f = self.func
        if f is not None:
            v = f.vars.get(name)
            if v is not None:
                if v.space in (".local", ".param", ".kparam"):
                    return v.space, v.offset
                return self.symbols[name]
        if name in self.symbols:
            return self.symbols[name]
        if name in self.func_index:
            return "func", self.func_index[name]
        raise SimError(span, f"unknown symbol {name}")

    def decode_all(self) -> list[Op]:
        code: list[Op] = []
        for pc, ins in enumerate(self.prog.instrs):
            self.func = self.prog.owner[pc]
            try:
                code.append(self.decode(ins, pc))
            except SimError as e:
                code.append(_raiser(ins, e.message))
        return code

    # -----------------------------------------------------------------------------
    def decode(self, ins: Instr, pc: int) -> Op:
        opc = ins.opcode
        if opc in NOPS or (opc == "bar" and ".warp" in ins.mods and False):
            return Op("alu", ins, lambda m, s, t: None)
        h = getattr(self, "op_" + opc, None)
        if h is None:
            family = opc.split(".")[0]
            if family in TENSOR_CORE or opc in TENSOR_CORE:
                raise SimError(
                    ins.span,
                    f"'{ins.name}' is unsupported by the interpreter "
                    "(tensor-core / async-copy family)",
                )
            raise SimError(ins.span, f"'{ins.name}' is unsupported by the interpreter")
        op: Op = h(ins, pc)
        if (
            op.kind == "alu"
            and opc in LANEWISE
            and not any(
                isinstance(o, Reg) and o.name.startswith(("%clock", "%globaltimer"))
                for o in ins.operands
            )
        ):
            op.lanewise = True
        return op

    # -- helpers ---------------------------------------------------------------------
    def rd(self, op: Operand, ty: Ty, ins: Instr) -> Reader:
        return self.ops.read(op, ty, ins.span)

    def wr(self, op: Operand, ty: Ty, ins: Instr) -> Writer | None:
        return self.ops.write(op, ty, ins.span)

    def ty(self, ins: Instr, i: int = -1) -> Ty:
        ts = types_of(ins.mods)
        if not ts:
            raise SimError(ins.span, f"'{ins.name}': missing type")
        return ts[i]

    def alu1(
        self, ins: Instr, pc: int, ty_out: Ty, ty_in: list[Ty], f: Callable[..., Any], dst: int = 0
    ) -> Op:
        """Generic op: ``d = f(*sources)``."""
        w = self.wr(ins.operands[dst], ty_out, ins)
        srcs = [self.rd(o, t, ins) for o, t in zip(ins.operands[dst + 1 :], ty_in, strict=False)]
        if len(srcs) != len(ty_in):
            raise SimError(ins.span, f"'{ins.name}': expected {len(ty_in)} source operands")
        if w is None:
            return Op("alu", ins, lambda m, s, t: None)
        if len(srcs) == 1:
            a0 = srcs[0]
            return Op("alu", ins, lambda m, s, t: w(m, s, t, f(a0(m, s)), pc))
        if len(srcs) == 2:
            a0, a1 = srcs
            return Op("alu", ins, lambda m, s, t: w(m, s, t, f(a0(m, s), a1(m, s)), pc))
        if len(srcs) == 3:
            a0, a1, a2 = srcs
            return Op("alu", ins, lambda m, s, t: w(m, s, t, f(a0(m, s), a1(m, s), a2(m, s)), pc))
        return Op("alu", ins, lambda m, s, t: w(m, s, t, f(*[a(m, s) for a in srcs]), pc))

    def rounding(self, ins: Instr, default: str = "rn") -> str:
        for m in ins.mods:
            if m in ROUNDING:
                return ROUNDING[m]
        return default

    # -- moves ---------------------------------------------------------------------------
    def op_mov(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        dst, src = ins.operands[0], ins.operands[1]
        if isinstance(src, Sym) and ty.kind != "p":
            return self.alu1(ins, pc, ty, [ty], lambda a: a)
        if isinstance(dst, Vec_t) or isinstance(src, Vec_t):
            return self._mov_vec(ins, pc, ty)
        return self.alu1(ins, pc, ty, [ty], lambda a: np.array(a, copy=True))

    def _mov_vec(self, ins: Instr, pc: int, ty: Ty) -> Op:
        from ptxopt.ptx.ast import Vec

        dst, src = ins.operands[0], ins.operands[1]
        if ty.size == 16:
            return self._mov_b128(ins, pc)
        if isinstance(dst, Vec):  # unpack
            n = len(dst.elems)
            esz = ty.size // n
            ety = TYPES[f".b{esz * 8}"]
            rs = self.rd(src, TYPES[f".b{ty.size * 8}"], ins)
            ws = [self.wr(e, ety, ins) for e in dst.elems]
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
        rs2 = [self.rd(e, ety, ins) for e in src.elems]
        w0 = self.wr(dst, TYPES[f".b{ty.size * 8}"], ins)
        out_ut = unsigned_of(ty.size)

        def pack(m: Any, s: Any, t: np.ndarray) -> None:
            acc: Any = np.uint64(0)
            for i, r in enumerate(rs2):
                acc = acc | (np.asarray(r(m, s)).astype(np.uint64) << np.uint64(8 * esz * i))
            if w0 is not None:
                w0(m, s, t, np.asarray(acc).astype(out_ut), pc)

        return Op("alu", ins, pack)

    def _mov_b128(self, ins: Instr, pc: int) -> Op:
        """``mov.b128 d, {lo, hi}`` packs two 64-bit halves; ``mov.b128 {lo, hi}, a``
        unpacks them (the first element is the low half)."""
        from ptxopt.ptx.ast import Vec

        dst, src = ins.operands[0], ins.operands[1]
        q = TYPES[".b128"]
        b64 = TYPES[".b64"]
        if isinstance(dst, Vec):
            if len(dst.elems) != 2:
                raise SimError(ins.span, f"'{ins.name}': expected two 64-bit halves")
            rq = self.rd(src, q, ins)
            ws = [self.wr(e, b64, ins) for e in dst.elems]

            def unpack(m: Any, s: Any, t: np.ndarray) -> None:
                v = np.asarray(rq(m, s))
                for k, w in enumerate(ws):
                    if w is not None:
                        w(m, s, t, v[..., k], pc)

            return Op("alu", ins, unpack)
        if not isinstance(src, Vec) or len(src.elems) != 2:
            raise SimError(ins.span, f"'{ins.name}': expected {{lo, hi}} 64-bit halves")
        rs = [self.rd(e, b64, ins) for e in src.elems]
        wq = self.wr(dst, q, ins)

        def pack(m: Any, s: Any, t: np.ndarray) -> None:
            lo, hi = np.broadcast_arrays(
                np.asarray(rs[0](m, s), dtype=np.uint64), np.asarray(rs[1](m, s), dtype=np.uint64)
            )
            if wq is not None:
                wq(m, s, t, np.stack([lo, hi], axis=-1), pc)

        return Op("alu", ins, pack)

    # -- integer / float arithmetic --------------------------------------------------
    def _binary(self, ins: Instr, pc: int, name: str) -> Op:
        ty = self.ty(ins)
        mods = set(ins.mods)
        if ty.kind in ("f", "h", "bf", "h2", "bf2"):
            return self._float_binary(ins, pc, name, ty, mods)
        if ty.kind in ("u2", "s2"):
            return self._packed16(ins, pc, name, ty)
        sat = ".sat" in mods
        if name == "add":
            if ".cc" in mods or ins.opcode == "addc":
                return self._carry(ins, pc, ty, sub=False)
            if sat:
                return self.alu1(ins, pc, ty, [ty, ty], _saturating_s32(np.add))
            return self.alu1(ins, pc, ty, [ty, ty], lambda a, b: a + b)
        if name == "sub":
            if ".cc" in mods or ins.opcode == "subc":
                return self._carry(ins, pc, ty, sub=True)
            if sat:
                return self.alu1(ins, pc, ty, [ty, ty], _saturating_s32(np.subtract))
            return self.alu1(ins, pc, ty, [ty, ty], lambda a, b: a - b)
        if name == "min":
            return self.alu1(ins, pc, ty, [ty, ty], np.minimum)
        if name == "max":
            return self.alu1(ins, pc, ty, [ty, ty], np.maximum)
        raise SimError(ins.span, f"'{ins.name}' unsupported")

    def op_add(self, ins: Instr, pc: int) -> Op:
        return self._binary(ins, pc, "add")

    def op_sub(self, ins: Instr, pc: int) -> Op:
        return self._binary(ins, pc, "sub")

    op_addc = op_add
    op_subc = op_sub

    def op_min(self, ins: Instr, pc: int) -> Op:
        return self._binary(ins, pc, "min")

    def op_max(self, ins: Instr, pc: int) -> Op:
        return self._binary(ins, pc, "max")

    def _carry(
        self,
        ins: Instr,
        pc: int,
        ty: Ty,
        sub: bool,
        first: Reader | None = None,
        second: int = 2,
    ) -> Op:
        """Add/subtract with carry-in (``addc``/``subc``/``madc``) and carry-out
        (``.cc``): ``first`` reads the first addend (operand 1 by default, the product
        half for ``mad``), ``second`` is the operand index of the other one."""
        fname = self.prog.owner[pc].name
        cc = f"{fname}::%cc"
        cin = ins.opcode in ("addc", "subc", "madc")
        cout = ".cc" in ins.mods
        w = self.wr(ins.operands[0], ty, ins)
        a_r = (
            first if first is not None else self.rd(ins.operands[1], TYPES[f".u{ty.size * 8}"], ins)
        )
        b_r = self.rd(ins.operands[second], TYPES[f".u{ty.size * 8}"], ins)
        ut = ty.ut

        def run(m: Any, s: Any, t: np.ndarray) -> None:
            a = np.asarray(a_r(m, s))
            b = np.asarray(b_r(m, s))
            c = m.R[cc][s].astype(ut) if cin else ut(0)
            if sub:
                r1 = a - b
                b1 = a < b
                r = r1 - c
                b2 = r1 < c
                carry = b1 | b2
            else:
                r1 = a + b
                c1 = r1 < a
                r = r1 + c
                c2 = r < r1
                carry = c1 | c2
            if cout:
                m.store_reg(cc, s, t, np.broadcast_to(carry, np.shape(r)), pc)
            if w is not None:
                w(m, s, t, r.astype(ut).view(ty.dt), pc)

        return Op("alu", ins, run)

    def _packed16(self, ins: Instr, pc: int, name: str, ty: Ty) -> Op:
        et = TYPES[".s16"] if ty.kind == "s2" else TYPES[".u16"]
        table: dict[str, Callable[..., Any]] = {
            "add": lambda a, b: a + b,
            "sub": lambda a, b: a - b,
            "min": np.minimum,
            "max": np.maximum,
        }
        fn = table[name]
        relu = ".relu" in ins.mods

        def f(a: Any, b: Any) -> Any:
            a = np.asarray(a, dtype=np.uint32)
            b = np.asarray(b, dtype=np.uint32)
            out = np.zeros(np.broadcast(a, b).shape, dtype=np.uint32)
            for k in (0, 16):
                x = (a >> np.uint32(k)).astype(np.uint16).view(et.dt)
                y = (b >> np.uint32(k)).astype(np.uint16).view(et.dt)
                r = fn(x, y)
                if relu:
                    r = np.maximum(r, et.dt(0))
                out |= r.astype(et.dt).view(np.uint16).astype(np.uint32) << np.uint32(k)
            return out

        return self.alu1(ins, pc, ty, [ty, ty], f)

    # float binary ops --------------------------------------------------------------
    def _float_binary(self, ins: Instr, pc: int, name: str, ty: Ty, mods: set[str]) -> Op:
        mode = self.rounding(ins)
        ftz = ".ftz" in mods
        sat = ".sat" in mods
        if name in ("min", "max"):
            npf: Any = np.fmin if name == "min" else np.fmax
            if ".NaN" in mods:
                npf = np.minimum if name == "min" else np.maximum

            def mm(a: Any, b: Any, fmt: str) -> Any:
                return npf(a, b)

            return self._float_op(
                ins, pc, ty, 2, mm, ftz, False, keep_exact=True, relu=".relu" in mods
            )

        def f(a: Any, b: Any, fmt: str) -> Any:
            if name == "sub":
                b = -b
            if name in ("add", "sub"):
                if fmt == "f64":
                    if mode == "rn":
                        return a + b
                    return fl.add64(a, b, mode)
                if fmt == "f32" and mode == "rn":
                    return a.astype(np.float32) + b.astype(np.float32)
                return fl.add_directed(a, b, fmt, mode)
            # mul
            if fmt == "f64":
                return fl.mul64(a, b, mode)
            if fmt == "f32" and mode == "rn":
                return a.astype(np.float32) * b.astype(np.float32)
            return fl.mul_directed(a, b, fmt, mode)

        return self._float_op(ins, pc, ty, 2, f, ftz, sat)

    def _float_op(
        self,
        ins: Instr,
        pc: int,
        ty: Ty,
        nsrc: int,
        f: Callable[..., Any],
        ftz: bool,
        sat: bool,
        keep_exact: bool = False,
        relu: bool = False,
    ) -> Op:
        """Run ``f(*srcs, fmt)`` per format: f32/f64 get float arrays of the format;
        f16/bf16 get float64 arrays and return the rounded result (format values)."""
        kind = ty.kind
        if kind == "f":
            fmt = "f32" if ty.size == 4 else "f64"

            def g(*args: Any) -> Any:
                if ftz and fmt == "f32":
                    args = tuple(fl.ftz32(a) for a in args)
                r = f(*[np.asarray(a) for a in args], fmt)
                r = np.asarray(r).astype(ty.dt, copy=False)
                if ftz and fmt == "f32":
                    r = fl.ftz32(r)
                if sat:
                    r = _saturate(r)
                if relu:
                    r = np.where(np.isnan(r) | (r < 0), ty.dt(0), r)
                return r

            return self.alu1(ins, pc, ty, [ty] * nsrc, g)
        # half formats, scalar or packed
        half = "bf" if kind in ("bf", "bf2") else "h"
        packed = kind in ("h2", "bf2")

        def to64(bits: Any) -> Any:
            bits = np.asarray(bits).astype(np.uint16)
            if half == "h":
                return bits.view(np.float16).astype(np.float64)
            return fl.bf16_bits_to_f32(bits).astype(np.float64)

        def from64(x: Any) -> Any:
            x = np.asarray(x, dtype=np.float64)
            if half == "h":
                r = x.astype(np.float16).view(np.uint16)
            else:
                r = fl.f32_to_bf16_bits(fl.f64_to_f32_odd(x))
            return r

        def one(*bits: Any) -> Any:
            xs = [to64(b) for b in bits]
            if ftz and half == "h":
                xs = [np.where(np.abs(x) < 2.0**-14, np.copysign(0.0, x), x) for x in xs]
            fmt = "f16" if half == "h" else "bf16"
            r = f(*xs, fmt)
            r = np.asarray(r)
            if r.dtype == np.float64 or keep_exact:
                rb = from64(np.asarray(r, dtype=np.float64))
            elif r.dtype == np.float16:
                rb = r.view(np.uint16)
            else:
                rb = r.astype(np.uint16)
            if sat or relu or (ftz and half == "h"):
                v = to64(rb)
                if ftz and half == "h":
                    v = np.where(np.abs(v) < 2.0**-14, np.copysign(0.0, v), v)
                if sat:
                    v = _saturate(v)
                if relu:
                    v = np.where(np.isnan(v) | (v < 0), 0.0, v)
                rb = from64(v)
            return rb

        if not packed:
            return self.alu1(ins, pc, TYPES[".b16"], [TYPES[".b16"]] * nsrc, one)

        def two(*bits: Any) -> Any:
            ub = [np.asarray(b).astype(np.uint32) for b in bits]
            lo = one(*[b & np.uint32(0xFFFF) for b in ub]).astype(np.uint32)
            hi = one(*[b >> np.uint32(16) for b in ub]).astype(np.uint32)
            return lo | (hi << np.uint32(16))

        return self.alu1(ins, pc, TYPES[".b32"], [TYPES[".b32"]] * nsrc, two)

    def op_mul(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        mods = set(ins.mods)
        if ty.kind in ("f", "h", "bf", "h2", "bf2"):
            return self._float_binary(ins, pc, "mul", ty, mods)
        mode = "hi" if ".hi" in mods else "wide" if ".wide" in mods else "lo"
        return self._mul(ins, pc, ty, mode, None)

    def op_mad(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        mods = set(ins.mods)
        if ty.kind in ("f", "h", "bf", "h2", "bf2"):
            return self.op_fma(ins, pc)
        if ".cc" in mods or ins.opcode == "madc":
            return self._mad_carry(ins, pc, ty)
        mode = "hi" if ".hi" in mods else "wide" if ".wide" in mods else "lo"
        return self._mul(ins, pc, ty, mode, 3)

    op_madc = op_mad

    def _mad_carry(self, ins: Instr, pc: int, ty: Ty) -> Op:
        """``mad{c}.{hi,lo}{.cc}``: ``d = half(a * b) + c (+ CC.CF)``; the carry-out is
        that of the unsigned addition of the selected product half and ``c``."""
        if ".wide" in ins.mods:
            raise SimError(ins.span, f"'{ins.name}': .wide is not allowed with a carry")
        hi = ".hi" in ins.mods
        bits = ty.size * 8
        signed = ty.kind == "s"
        ut = ty.ut
        pa = self.rd(ins.operands[1], ty, ins)
        pb = self.rd(ins.operands[2], ty, ins)

        def product(m: Any, s: Any) -> Any:
            a = np.asarray(pa(m, s))
            b = np.asarray(pb(m, s))
            if not hi:
                return (a.astype(ut) * b.astype(ut)).astype(ut)
            if bits == 64:
                return np.asarray(_mulhi64(a, b, signed)).astype(ut)
            wide = signed_of(ty.size * 2) if signed else unsigned_of(ty.size * 2)
            p = a.astype(wide) * b.astype(wide)
            return (p >> wide(bits)).astype(ut)

        return self._carry(ins, pc, ty, sub=False, first=product, second=3)

    def _mul(self, ins: Instr, pc: int, ty: Ty, mode: str, addend: int | None) -> Op:
        bits = ty.size * 8
        signed = ty.kind == "s"
        out_ty = ty
        if mode == "wide":
            out_ty = TYPES[f".{'s' if signed else 'u'}{bits * 2}"]
        sat = ".sat" in ins.mods

        def f(a: Any, b: Any, *c: Any) -> Any:
            if mode == "lo":
                r = a * b
            elif mode == "wide":
                r = (
                    a.astype(out_ty.dt) * b.astype(out_ty.dt)
                    if np.ndim(a) or np.ndim(b)
                    else (np.asarray(a).astype(out_ty.dt) * np.asarray(b).astype(out_ty.dt))
                )
            elif bits < 64:
                wide = signed_of(ty.size * 2) if signed else unsigned_of(ty.size * 2)
                p = np.asarray(a).astype(wide) * np.asarray(b).astype(wide)
                r = (p >> wide(bits)).astype(ty.dt)
            else:
                r = _mulhi64(np.asarray(a), np.asarray(b), signed)
            if c:
                if sat and mode == "hi" and signed and bits == 32:
                    return np.clip(
                        np.asarray(r).astype(np.int64) + c[0], -(2**31), 2**31 - 1
                    ).astype(np.int32)
                r = r + np.asarray(c[0]).astype(out_ty.dt)
            return r

        ins_ty = [ty, ty] + ([out_ty] if addend else [])
        return self.alu1(ins, pc, out_ty, ins_ty, f)

    def op_mul24(self, ins: Instr, pc: int) -> Op:
        return self._mul24(ins, pc, False)

    def op_mad24(self, ins: Instr, pc: int) -> Op:
        return self._mul24(ins, pc, True)

    def _mul24(self, ins: Instr, pc: int, add: bool) -> Op:
        ty = self.ty(ins)
        hi = ".hi" in ins.mods

        def f(a: Any, b: Any, *c: Any) -> Any:
            a = np.asarray(a).astype(np.int64)
            b = np.asarray(b).astype(np.int64)
            if ty.kind == "s":
                a = ((a & 0xFFFFFF) ^ 0x800000) - 0x800000
                b = ((b & 0xFFFFFF) ^ 0x800000) - 0x800000
            else:
                a &= 0xFFFFFF
                b &= 0xFFFFFF
            p = a * b
            r = (p >> 16) if hi else p
            r = (r & 0xFFFFFFFF).astype(np.uint32)
            if c:
                r = r + np.asarray(c[0]).astype(np.uint32)
            return r.view(ty.dt)

        return self.alu1(ins, pc, ty, [ty] * (3 if add else 2), f)

    def op_sad(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)

        def f(a: Any, b: Any, c: Any) -> Any:
            d = np.where(a > b, a - b, b - a)
            return d.astype(ty.ut).view(ty.dt) + c

        return self.alu1(ins, pc, ty, [ty] * 3, f)

    def op_div(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        if ty.kind == "f":
            mode = self.rounding(ins)
            if mode != "rn" and ".approx" not in ins.mods and ".full" not in ins.mods:
                return self._float_op(
                    ins,
                    pc,
                    ty,
                    2,
                    lambda a, b, fmt: fl.div_directed(a, b, fmt, mode),
                    ".ftz" in ins.mods,
                    False,
                )
            return self._float_op(
                ins, pc, ty, 2, lambda a, b, fmt: a / b, ".ftz" in ins.mods, False
            )
        return self.alu1(ins, pc, ty, [ty, ty], lambda a, b: _idiv(a, b, ty)[0])

    def op_rem(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        return self.alu1(ins, pc, ty, [ty, ty], lambda a, b: _idiv(a, b, ty)[1])

    def op_abs(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        if ty.kind in ("f", "h", "bf", "h2", "bf2"):
            return self._sign_op(ins, pc, ty, "abs")
        return self.alu1(ins, pc, ty, [ty], lambda a: np.where(a < 0, -a, a).astype(ty.dt))

    def op_neg(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        if ty.kind in ("f", "h", "bf", "h2", "bf2"):
            return self._sign_op(ins, pc, ty, "neg")
        return self.alu1(ins, pc, ty, [ty], lambda a: (-np.asarray(a)).astype(ty.dt))

    def _sign_op(self, ins: Instr, pc: int, ty: Ty, name: str) -> Op:
        """abs/neg on floats are bit operations on the sign (NaN payloads kept)."""
        bt = TYPES[f".b{ty.size * 8}"]
        ftz = ".ftz" in ins.mods
        if ty.kind in ("h2", "bf2"):
            sign = np.uint32(0x80008000)
        else:
            sign = bt.ut(1 << (ty.size * 8 - 1))
        if ty.kind in ("h2", "bf2", "h", "bf"):
            pass

        def f(a: Any) -> Any:
            a = np.asarray(a)
            if ftz and ty.kind == "f" and ty.size == 4:
                a = fl.ftz32(a.view(np.float32)).view(np.uint32)
            return a & ~sign if name == "abs" else a ^ sign

        return self.alu1(ins, pc, bt, [bt], f)

    def op_fma(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        mode = self.rounding(ins)
        mods = set(ins.mods)

        def f(a: Any, b: Any, c: Any, fmt: str) -> Any:
            if fmt == "f64":
                return fl.fma64(a, b, c, mode)
            if fmt == "f32":
                return fl.fma32(a, b, c, mode)
            return fl.fma_small(a, b, c, fmt, mode)

        return self._float_op(
            ins,
            pc,
            ty,
            3,
            f,
            ".ftz" in mods,
            ".sat" in mods,
            keep_exact=ty.kind not in ("f",),
            relu=".relu" in mods,
        )

    def _unary_float(self, ins: Instr, pc: int, fn: Callable[[Any], Any]) -> Op:
        ty = self.ty(ins)
        mode = self.rounding(ins)
        exact_ops = ins.opcode in ("sqrt", "rcp") and ".approx" not in ins.mods
        if exact_ops and mode != "rn" and ty.kind == "f":
            if ins.opcode == "sqrt":

                def directed(a: Any, fmt: str) -> Any:
                    return fl.sqrt_directed(a, fmt, mode)
            else:

                def directed(a: Any, fmt: str) -> Any:
                    return fl.div_directed(np.ones_like(a), a, fmt, mode)

            return self._float_op(ins, pc, ty, 1, directed, ".ftz" in ins.mods, False)

        def f(a: Any, fmt: str) -> Any:
            if fmt == "f32" and exact_ops:
                return fn(np.asarray(a, dtype=np.float32))
            if fmt == "f64":
                return fn(np.asarray(a, dtype=np.float64))
            with np.errstate(all="ignore"):
                return fn(np.asarray(a, dtype=np.float64))

        if ty.kind == "f" and ty.size == 4 and not exact_ops:

            def f32(a: Any, fmt: str) -> Any:
                return fl.f64_to_f32(fn(np.asarray(a, dtype=np.float64)))

            return self._float_op(ins, pc, ty, 1, f32, ".ftz" in ins.mods, False)
        return self._float_op(ins, pc, ty, 1, f, ".ftz" in ins.mods, False)

    def op_rcp(self, ins: Instr, pc: int) -> Op:
        return self._unary_float(ins, pc, lambda a: np.divide(a.dtype.type(1), a))

    def op_sqrt(self, ins: Instr, pc: int) -> Op:
        return self._unary_float(ins, pc, np.sqrt)

    def op_rsqrt(self, ins: Instr, pc: int) -> Op:
        return self._unary_float(ins, pc, lambda a: 1.0 / np.sqrt(a))

    def op_sin(self, ins: Instr, pc: int) -> Op:
        return self._unary_float(ins, pc, np.sin)

    def op_cos(self, ins: Instr, pc: int) -> Op:
        return self._unary_float(ins, pc, np.cos)

    def op_lg2(self, ins: Instr, pc: int) -> Op:
        return self._unary_float(ins, pc, np.log2)

    def op_ex2(self, ins: Instr, pc: int) -> Op:
        return self._unary_float(ins, pc, np.exp2)

    def op_tanh(self, ins: Instr, pc: int) -> Op:
        return self._unary_float(ins, pc, np.tanh)

    def op_copysign(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        return self.alu1(ins, pc, ty, [ty, ty], lambda a, b: np.copysign(b, a))

    def op_testp(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        mods = set(ins.mods)
        tiny = np.finfo(ty.dt).tiny

        def f(a: Any) -> Any:
            if ".finite" in mods:
                return np.isfinite(a)
            if ".infinite" in mods:
                return np.isinf(a)
            if ".number" in mods:
                return ~np.isnan(a)
            if ".notanumber" in mods:
                return np.isnan(a)
            if ".normal" in mods:
                return np.isfinite(a) & (np.abs(a) >= tiny)
            if ".subnormal" in mods:
                return (np.abs(a) < tiny) & (a != 0)
            raise SimError(ins.span, f"'{ins.name}' unsupported")

        return self.alu1(ins, pc, TYPES[".pred"], [ty], f)

    # -- logic and bits ------------------------------------------------------------------
    def op_and(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        return self.alu1(ins, pc, ty, [ty, ty], lambda a, b: a & b)

    def op_or(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        return self.alu1(ins, pc, ty, [ty, ty], lambda a, b: a | b)

    def op_xor(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        return self.alu1(ins, pc, ty, [ty, ty], lambda a, b: a ^ b)

    def op_not(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        return self.alu1(ins, pc, ty, [ty], lambda a: ~np.asarray(a))

    def op_cnot(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        return self.alu1(ins, pc, ty, [ty], lambda a: (np.asarray(a) == 0).astype(ty.dt))

    def op_shl(self, ins: Instr, pc: int) -> Op:
        return self._shift(ins, pc, "l")

    def op_shr(self, ins: Instr, pc: int) -> Op:
        return self._shift(ins, pc, "r")

    def _shift(self, ins: Instr, pc: int, d: str) -> Op:
        ty = self.ty(ins)
        bits = ty.size * 8
        u32 = TYPES[".u32"]

        def f(a: Any, b: Any) -> Any:
            a = np.asarray(a)
            amt = np.minimum(np.asarray(b).astype(np.int64), bits)
            big = amt >= bits
            sa = np.where(big, 0, amt).astype(ty.dt)
            if d == "l":
                r = a << sa
                return np.where(big, ty.dt(0), r).astype(ty.dt)
            r = a >> sa
            if ty.kind == "s":
                return np.where(big, np.where(a < 0, ty.dt(-1), ty.dt(0)), r).astype(ty.dt)
            return np.where(big, ty.dt(0), r).astype(ty.dt)

        return self.alu1(ins, pc, ty, [ty, u32], f)

    def op_lop3(self, ins: Instr, pc: int) -> Op:
        ty = TYPES[".b32"]
        lut_op = ins.operands[4] if len(ins.operands) > 4 else None
        if not isinstance(lut_op, Imm):
            raise SimError(ins.span, "lop3 needs an immediate LUT")
        lut = int(lut_op.value)
        w = self.wr(ins.operands[0], ty, ins)
        rs = [self.rd(o, ty, ins) for o in ins.operands[1:4]]

        def run(m: Any, s: Any, t: np.ndarray) -> None:
            a, b, c = (np.asarray(r(m, s)) for r in rs)
            out = np.zeros(np.broadcast(a, b, c).shape, dtype=np.uint32)
            for i in range(8):
                if lut >> i & 1:
                    x = a if i & 4 else ~a
                    y = b if i & 2 else ~b
                    z = c if i & 1 else ~c
                    out |= x & y & z
            if w is not None:
                w(m, s, t, out, pc)

        return Op("alu", ins, run)

    def op_popc(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        return self.alu1(ins, pc, TYPES[".u32"], [ty], lambda a: _popcount(a, ty.size))

    def op_clz(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        bits = ty.size * 8

        def f(a: Any) -> Any:
            return (bits - _bitlen(np.asarray(a).astype(np.uint64))).astype(np.uint32)

        return self.alu1(ins, pc, TYPES[".u32"], [ty], f)

    def op_bfind(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        bits = ty.size * 8
        shiftamt = ".shiftamt" in ins.mods

        def f(a: Any) -> Any:
            a = np.asarray(a)
            if ty.kind == "s":
                a = np.where(a < 0, ~a, a)
            u = a.astype(ty.ut).astype(np.uint64)
            pos = _bitlen(u) - 1
            r = np.where(u == 0, -1, (bits - 1 - pos) if shiftamt else pos)
            return (r & 0xFFFFFFFF).astype(np.uint32)

        return self.alu1(ins, pc, TYPES[".u32"], [ty], f)

    def op_brev(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        bits = ty.size * 8

        def f(a: Any) -> Any:
            a = np.asarray(a).astype(np.uint64)
            r = np.zeros(a.shape, dtype=np.uint64)
            for i in range(bits):
                r |= ((a >> np.uint64(i)) & np.uint64(1)) << np.uint64(bits - 1 - i)
            return r.astype(ty.ut)

        return self.alu1(ins, pc, ty, [ty], f)

    def op_bfe(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        bits = ty.size * 8
        u32 = TYPES[".u32"]

        def f(a: Any, b: Any, c: Any) -> Any:
            a = np.asarray(a).astype(ty.ut).astype(np.uint64)
            pos = np.asarray(b).astype(np.int64) & 0xFF
            ln = np.asarray(c).astype(np.int64) & 0xFF
            a, pos, ln = np.broadcast_arrays(a, pos, ln)
            sh = np.minimum(pos, 63).astype(np.uint64)
            field_ = np.where(pos >= bits, np.uint64(0), a >> sh)
            lnc = np.minimum(ln, 64)
            mask = np.where(
                lnc >= 64,
                np.uint64(2**64 - 1),
                (np.uint64(1) << lnc.astype(np.uint64)) - np.uint64(1),
            )
            r = field_ & mask
            if ty.kind == "s":
                # sign bit: bit min(pos+len-1, bits-1) of a, or 0 when len == 0
                sbit_pos = np.minimum(pos + ln - 1, bits - 1).astype(np.uint64)
                sbit = np.where(ln == 0, False, ((a >> sbit_pos) & np.uint64(1)) == 1)
                ext = np.where(lnc >= bits, np.uint64(0), ~mask)
                r = np.where(sbit, r | ext, r)
                r = np.where(ln == 0, np.uint64(0), r)
            return r.astype(ty.ut).view(ty.dt)

        return self.alu1(ins, pc, ty, [ty, u32, u32], f)

    def op_bfi(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        bits = ty.size * 8
        u32 = TYPES[".u32"]

        def f(a: Any, b: Any, c: Any, d: Any) -> Any:
            a = np.asarray(a).astype(np.uint64)
            b = np.asarray(b).astype(np.uint64)
            pos = np.asarray(c).astype(np.int64) & 0xFF
            ln = np.asarray(d).astype(np.int64) & 0xFF
            a, b, pos, ln = np.broadcast_arrays(a, b, pos, ln)
            ln = np.minimum(ln, bits)
            mask = np.where(
                ln >= 64,
                np.uint64(2**64 - 1),
                (np.uint64(1) << ln.astype(np.uint64)) - np.uint64(1),
            )
            sh = np.minimum(pos, 63).astype(np.uint64)
            m2 = np.where(pos >= bits, np.uint64(0), mask << sh)
            r = (b & ~m2) | ((a << sh) & m2)
            return r.astype(ty.ut)

        return self.alu1(ins, pc, ty, [ty, ty, u32, u32], f)

    def op_prmt(self, ins: Instr, pc: int) -> Op:
        b32 = TYPES[".b32"]
        mode = next(
            (m for m in ins.mods if m in (".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16")), ""
        )

        def f(a: Any, b: Any, c: Any) -> Any:
            a, b, c = np.broadcast_arrays(
                np.asarray(a).astype(np.uint64),
                np.asarray(b).astype(np.uint64),
                np.asarray(c).astype(np.uint64),
            )
            x = a | (b << np.uint64(32))  # bytes 0..7
            out = np.zeros(a.shape, dtype=np.uint64)
            for i in range(4):
                if mode == "":
                    sel = (c >> np.uint64(4 * i)) & np.uint64(0xF)
                    idx = sel & np.uint64(7)
                    byte = (x >> (idx * np.uint64(8))) & np.uint64(0xFF)
                    msb = (sel & np.uint64(8)) != 0
                    sign = np.where((byte & np.uint64(0x80)) != 0, np.uint64(0xFF), np.uint64(0))
                    byte = np.where(msb, sign, byte)
                else:
                    s = c & np.uint64(3)
                    table = _PRMT_MODES[mode]
                    idx = np.zeros(a.shape, dtype=np.uint64)
                    for k in range(4):
                        idx = np.where(s == k, np.uint64(table[k][i]), idx)
                    byte = (x >> (idx * np.uint64(8))) & np.uint64(0xFF)
                out |= byte << np.uint64(8 * i)
            return out.astype(np.uint32)

        return self.alu1(ins, pc, b32, [b32, b32, b32], f)

    def op_shf(self, ins: Instr, pc: int) -> Op:
        b32 = TYPES[".b32"]
        left = ".l" in ins.mods
        wrap = ".wrap" in ins.mods

        def f(a: Any, b: Any, c: Any) -> Any:
            a, b, c = np.broadcast_arrays(
                np.asarray(a).astype(np.uint64),
                np.asarray(b).astype(np.uint64),
                np.asarray(c).astype(np.uint64),
            )
            n = c & np.uint64(31) if wrap else np.minimum(c, np.uint64(32))
            x = (b << np.uint64(32)) | a
            if left:
                return ((x << n) >> np.uint64(32)).astype(np.uint32)
            return (x >> n).astype(np.uint32)

        return self.alu1(ins, pc, b32, [b32, b32, TYPES[".u32"]], f)

    def op_dp4a(self, ins: Instr, pc: int) -> Op:
        return self._dp(ins, pc, 4)

    def op_dp2a(self, ins: Instr, pc: int) -> Op:
        return self._dp(ins, pc, 2)

    def _dp(self, ins: Instr, pc: int, n: int) -> Op:
        ts = types_of(ins.mods)
        ta, tb = ts[0], ts[1]
        hi = ".hi" in ins.mods
        out = TYPES[".s32"] if "s" in (ta.kind, tb.kind) else TYPES[".u32"]
        b32 = TYPES[".b32"]

        def f(a: Any, b: Any, c: Any) -> Any:
            a = np.asarray(a).astype(np.int64)
            b = np.asarray(b).astype(np.int64)
            acc = np.asarray(c).astype(np.int64)
            for i in range(n):
                if n == 4:
                    x = (a >> (8 * i)) & 0xFF
                    if ta.kind == "s":
                        x = (x ^ 0x80) - 0x80
                    y = (b >> (8 * i)) & 0xFF
                    if tb.kind == "s":
                        y = (y ^ 0x80) - 0x80
                else:
                    x = (a >> (16 * i)) & 0xFFFF
                    if ta.kind == "s":
                        x = (x ^ 0x8000) - 0x8000
                    k = i + (2 if hi else 0)
                    y = (b >> (8 * k)) & 0xFF
                    if tb.kind == "s":
                        y = (y ^ 0x80) - 0x80
                acc = acc + x * y
            return (acc & 0xFFFFFFFF).astype(np.uint32)

        return self.alu1(ins, pc, out, [b32, b32, out], f)

    # -- comparisons ----------------------------------------------------------------------
    def _compare(self, ins: Instr, cmp: str, ty: Ty) -> Callable[[Any, Any], Any]:
        if ty.kind in ("h", "bf"):
            conv = _half_to_f32(ty)

            base = self._compare(ins, cmp, TYPES[".f32"])
            return lambda a, b: base(conv(a), conv(b))
        if ty.kind == "f":
            un = cmp.endswith("u") and cmp not in ("lu",)
            c = cmp[:-1] if un and cmp not in ("num", "nan") else cmp
            fns = {
                "eq": np.equal,
                "ne": np.not_equal,
                "lt": np.less,
                "le": np.less_equal,
                "gt": np.greater,
                "ge": np.greater_equal,
            }
            if cmp == "num":
                return lambda a, b: ~(np.isnan(a) | np.isnan(b))
            if cmp == "nan":
                return lambda a, b: np.isnan(a) | np.isnan(b)
            if c not in fns:
                raise SimError(ins.span, f"unknown comparison .{cmp}")
            fn = fns[c]
            if un:
                return lambda a, b: fn(a, b) | np.isnan(a) | np.isnan(b)
            if c == "ne":
                return lambda a, b: np.not_equal(a, b) & ~(np.isnan(a) | np.isnan(b))
            return fn
        # integers: lo/ls/hi/hs are unsigned comparisons
        ufns = {"lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
        if cmp in ufns:
            f = ufns[cmp]
            ut = ty.ut
            return lambda a, b: f(np.asarray(a).astype(ut), np.asarray(b).astype(ut))
        fns = {
            "eq": np.equal,
            "ne": np.not_equal,
            "lt": np.less,
            "le": np.less_equal,
            "gt": np.greater,
            "ge": np.greater_equal,
        }
        if cmp not in fns:
            raise SimError(ins.span, f"unknown comparison .{cmp}")
        return fns[cmp]

    def op_setp(self, ins: Instr, pc: int) -> Op:
        ts = types_of(ins.mods)
        ty = ts[-1]
        cmp = ins.mods[0][1:]
        boolop = next((m[1:] for m in ins.mods[1:] if m in (".and", ".or", ".xor")), None)
        ftz = ".ftz" in ins.mods
        packed = ty.kind in ("h2", "bf2")
        d = ins.operands[0]
        pt = TYPES[".pred"]
        if isinstance(d, Pair):
            wp, wq = self.wr(d.first, pt, ins), self.wr(d.second, pt, ins)
        else:
            wp, wq = self.wr(d, pt, ins), None
        rc = self.rd(ins.operands[3], pt, ins) if boolop else None
        bop = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(boolop or "")
        if packed:
            # setp.f16x2 p|q, a, b: p from the lower halves, q from the upper halves,
            # each combined with c by the boolean operator
            if not isinstance(d, Pair):
                raise SimError(ins.span, f"'{ins.name}': packed compare needs p|q")
            halves = self._half_pair_compare(ins, cmp, ty, ftz)

            def run_packed(m: Any, s: Any, t: np.ndarray) -> None:
                lo, hi = halves(m, s)
                if bop is not None and rc is not None:
                    c = rc(m, s)
                    lo, hi = bop(lo, c), bop(hi, c)
                if wp is not None:
                    wp(m, s, t, lo, pc)
                if wq is not None:
                    wq(m, s, t, hi, pc)

            return Op("alu", ins, run_packed)
        fn = self._compare(ins, cmp, ty)
        if ftz and ty.kind == "h":
            fn0 = fn
            fn = lambda a, b: fn0(_ftz16(a), _ftz16(b))  # noqa: E731
        elif ftz and ty.kind == "f" and ty.size == 4:
            fn1 = fn
            fn = lambda a, b: fn1(fl.ftz32(a), fl.ftz32(b))  # noqa: E731
        ra = self.rd(ins.operands[1], ty, ins)
        rb = self.rd(ins.operands[2], ty, ins)

        def run(m: Any, s: Any, t: np.ndarray) -> None:
            r = fn(ra(m, s), rb(m, s))
            r = np.asarray(r)
            if bop is not None and rc is not None:
                c = rc(m, s)
                p = bop(r, c)
                q = bop(~r, c)
            else:
                p, q = r, ~r
            if wp is not None:
                wp(m, s, t, p, pc)
            if wq is not None:
                wq(m, s, t, q, pc)

        return Op("alu", ins, run)

    def _half_pair_compare(
        self, ins: Instr, cmp: str, ty: Ty, ftz: bool
    ) -> Callable[[Any, Any], tuple[Any, Any]]:
        """Reader of the (lower, upper) half comparisons of packed f16x2/bf16x2."""
        hty = TYPES[".f16"] if ty.kind == "h2" else TYPES[".bf16"]
        fn = self._compare(ins, cmp, hty)
        b32 = TYPES[".b32"]
        ra = self.rd(ins.operands[1], b32, ins)
        rb = self.rd(ins.operands[2], b32, ins)
        m16 = np.uint32(0xFFFF)
        s16 = np.uint32(16)

        def split(x: Any) -> tuple[Any, Any]:
            x = np.asarray(x).astype(np.uint32)
            lo = (x & m16).astype(np.uint16)
            hi = (x >> s16).astype(np.uint16)
            if hty.kind == "h":
                lo, hi = lo.view(np.float16), hi.view(np.float16)
                if ftz:
                    lo, hi = _ftz16(lo), _ftz16(hi)
            return lo, hi

        def run(m: Any, s: Any) -> tuple[Any, Any]:
            alo, ahi = split(ra(m, s))
            blo, bhi = split(rb(m, s))
            return np.asarray(fn(alo, blo)), np.asarray(fn(ahi, bhi))

        return run

    def op_set(self, ins: Instr, pc: int) -> Op:
        ts = types_of(ins.mods)
        dty, sty = ts[0], ts[-1]
        cmp = ins.mods[0][1:]
        boolop = next((m[1:] for m in ins.mods[1:] if m in (".and", ".or", ".xor")), None)
        bop = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(boolop or "")
        ftz = ".ftz" in ins.mods
        if sty.kind in ("h2", "bf2"):
            # set.CmpOp.dtype.f16x2 d, a, b: each half of d is 1.0 (f16x2/bf16x2
            # destinations) or 0xFFFF (u32/s32) where the halves compare true, else 0
            halves = self._half_pair_compare(ins, cmp, sty, ftz)
            rc = self.rd(ins.operands[3], TYPES[".pred"], ins) if boolop else None
            one16 = {"h2": 0x3C00, "bf2": 0x3F80}.get(dty.kind, 0xFFFF)
            w = self.wr(ins.operands[0], TYPES[".b32"], ins)

            def run_packed(m: Any, s: Any, t: np.ndarray) -> None:
                lo, hi = halves(m, s)
                if bop is not None and rc is not None:
                    c = rc(m, s)
                    lo, hi = bop(lo, c), bop(hi, c)
                r = np.where(lo, np.uint32(one16), np.uint32(0)) | np.where(
                    hi, np.uint32(one16 << 16), np.uint32(0)
                )
                if w is not None:
                    w(m, s, t, r.astype(np.uint32), pc)

            return Op("alu", ins, run_packed)
        fn = self._compare(ins, cmp, sty)
        if ftz and sty.kind == "h":
            fn0 = fn
            fn = lambda a, b: fn0(_ftz16(a), _ftz16(b))  # noqa: E731
        elif ftz and sty.kind == "f" and sty.size == 4:
            fn1 = fn
            fn = lambda a, b: fn1(fl.ftz32(a), fl.ftz32(b))  # noqa: E731
        if dty.kind == "f":
            one: Any = dty.dt(1.0)
        elif dty.kind == "h":
            one = np.float16(1.0)
        elif dty.kind == "bf":
            dty = TYPES[".b16"]
            one = np.uint16(0x3F80)
        else:
            one = np.array(-1).astype(dty.ut).view(dty.dt)[()]
        zero = dty.dt(0)
        srcs = [sty, sty] + ([TYPES[".pred"]] if boolop else [])

        def f(a: Any, b: Any, *c: Any) -> Any:
            r = np.asarray(fn(a, b))
            if bop is not None:
                r = bop(r, c[0])
            return np.where(r, one, zero).astype(dty.dt)

        return self.alu1(ins, pc, dty, srcs, f)

    def op_selp(self, ins: Instr, pc: int) -> Op:
        ty = self.ty(ins)
        return self.alu1(
            ins,
            pc,
            ty,
            [ty, ty, TYPES[".pred"]],
            lambda a, b, c: np.asarray(np.where(c, a, b)).astype(ty.dt),
        )

    def op_slct(self, ins: Instr, pc: int) -> Op:
        ts = types_of(ins.mods)
        dty, cty = ts[0], ts[-1]

        def f(a: Any, b: Any, c: Any) -> Any:
            return np.where(np.asarray(c) >= 0, a, b).astype(dty.dt)

        return self.alu1(ins, pc, dty, [dty, dty, cty], f)

    # -- conversions ------------------------------------------------------------------
    def op_cvt(self, ins: Instr, pc: int) -> Op:
        ts = types_of(ins.mods)
        if len(ts) < 2:
            raise SimError(ins.span, f"'{ins.name}': cvt needs two types")
        dty, sty = ts[0], ts[1]
        mods = set(ins.mods)
        sat = ".sat" in mods
        ftz = ".ftz" in mods
        irnd = next((IROUND[m] for m in ins.mods if m in IROUND), None)
        frnd = next((ROUNDING[m] for m in ins.mods if m in ROUNDING), None)
        relu = ".relu" in mods
        if dty.kind in ("h2", "bf2"):
            # cvt.rn{.relu}.f16x2.f32 d, a, b: a -> upper half, b -> lower half
            f32 = TYPES[".f32"]
            mode = frnd or "rn"
            half = "f16" if dty.kind == "h2" else "bf16"

            def pack(a: Any, b: Any) -> Any:
                hi = _f32_to_half_bits(np.asarray(a, dtype=np.float32), half, mode, sat, relu)
                lo = _f32_to_half_bits(np.asarray(b, dtype=np.float32), half, mode, sat, relu)
                return lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))

            return self.alu1(ins, pc, TYPES[".b32"], [f32, f32], pack)
        if sty.kind in ("h2", "bf2") or dty.kind == "p" or sty.kind == "p":
            raise SimError(ins.span, f"'{ins.name}' unsupported")
        s_float = sty.kind in ("f", "h", "bf")
        d_float = dty.kind in ("f", "h", "bf")
        src_read = sty if sty.kind != "bf" else TYPES[".b16"]
        out_ty = dty if dty.kind != "bf" else TYPES[".b16"]

        def to_f64(a: Any) -> Any:
            a = np.asarray(a)
            if sty.kind == "bf":
                return fl.bf16_bits_to_f32(a).astype(np.float64)
            x = a.astype(np.float64)
            if ftz and sty.size == 4:
                x = np.where(np.abs(x) < np.finfo(np.float32).tiny, np.copysign(0.0, x), x)
            return x

        if s_float and d_float:
            mode = frnd or "rn"

            def ff(a: Any) -> Any:
                x = to_f64(a)
                if irnd is not None:
                    x = _round_int(x, irnd)
                if sat:
                    x = _saturate(x)
                if relu:
                    x = np.where(np.isnan(x) | (x < 0), 0.0, x)
                if dty.kind == "bf":
                    return fl.f32_to_bf16_bits(fl.f64_to_f32_odd(x), mode)
                if dty.kind == "h":
                    r16 = fl.f64_to_f16(x, mode)
                    return r16
                if dty.size == 4:
                    if sty.size == 8:
                        r = fl.f64_to_f32(x, mode)
                    else:
                        r = x.astype(np.float32)
                    if ftz:
                        r = fl.ftz32(r)
                    return r
                return x

            return self.alu1(ins, pc, out_ty, [src_read], ff)
        if s_float and not d_float:
            mode = irnd or "rz"
            info = np.iinfo(dty.dt)
            lo, hi = float(info.min), float(info.max)

            def fi(a: Any) -> Any:
                x = _round_int(to_f64(a), mode)
                nan = np.isnan(x)
                x = np.where(nan, 0.0, x)
                big = x >= hi
                x = np.clip(x, lo, hi)
                r = x.astype(np.int64 if dty.kind == "s" or dty.size < 8 else np.uint64)
                if dty.size == 8:
                    r = np.where(big, dty.dt(info.max), r)
                return np.asarray(r).astype(dty.dt)

            return self.alu1(ins, pc, dty, [src_read], fi)
        if not s_float and d_float:
            mode = frnd or "rn"

            def iff(a: Any) -> Any:
                a = np.asarray(a)
                s = a.astype(np.float64)
                if sty.size == 8:
                    back = np.where(np.abs(s) >= 2.0**63, 0, s).astype(a.dtype)
                    e = (a - back).astype(np.float64)
                    e = np.where(np.abs(s) >= 2.0**63, 0.0, e)
                else:
                    e = np.zeros_like(s)
                if dty.kind == "bf":
                    return fl.f32_to_bf16_bits(fl.f64_to_f32_odd(fl.round_to_odd(s, e)), mode)
                if dty.kind == "h":
                    r = fl.exact_to_format(s, e, "f16", mode)
                elif dty.size == 4:
                    r = fl.exact_to_format(s, e, "f32", mode)
                else:
                    r = fl._adjust64(s, e, mode)
                if sat:
                    r = _saturate(r)
                return r

            return self.alu1(ins, pc, out_ty, [src_read], iff)
        # int -> int
        dinfo = np.iinfo(dty.dt)

        def ii(a: Any) -> Any:
            a = np.asarray(a)
            if sat:
                if a.dtype == np.uint64:
                    a = np.minimum(a, np.uint64(dinfo.max)) if dinfo.max < 2**64 else a
                    return a.astype(dty.dt)
                if a.dtype == np.int64 and dty.dt == np.uint64:
                    return np.maximum(a, 0).astype(np.uint64)
                return np.clip(
                    a.astype(np.int64), max(dinfo.min, -(2**63)), min(dinfo.max, 2**63 - 1)
                ).astype(dty.dt)
            # extend per source signedness, then truncate
            if a.dtype.itemsize < dty.size:
                return a.astype(dty.dt)
            return a.astype(dty.ut).view(dty.dt)

        return self.alu1(ins, pc, dty, [sty], ii)

    def op_cvta(self, ins: Instr, pc: int) -> Op:
        mods = ins.mods
        to = ".to" in mods
        space = next(
            (m for m in mods if m in (".global", ".shared", ".local", ".const", ".param")), None
        )
        ty = self.ty(ins)
        base = {".shared": SHARED_WINDOW, ".local": LOCAL_WINDOW, ".param": PARAM_WINDOW}.get(
            space or "", 0
        )
        u64 = TYPES[".u64"]
        src = ins.operands[1]
        if isinstance(src, Sym):
            rd = self.ops.address_of(src, ins.span)
        else:
            rd0 = self.rd(src, u64 if ty.size == 8 else TYPES[".u32"], ins)

            def rd(m: Any, s: Any) -> Any:
                return np.asarray(rd0(m, s)).astype(np.int64)

        b = np.int64(base)
        w = self.wr(ins.operands[0], ty, ins)

        def run(m: Any, s: Any, t: np.ndarray) -> None:
            a = np.asarray(rd(m, s)).astype(np.int64)
            r = a - b if to else a + b
            if w is not None:
                w(m, s, t, r.astype(np.uint64).astype(ty.ut).view(ty.dt), pc)

        return Op("alu", ins, run)

    # -- memory ---------------------------------------------------------------------
    def _space(self, ins: Instr) -> str:
        for m in ins.mods:
            if m in (".global", ".shared", ".local", ".const", ".param"):
                return m
            if m.startswith(".shared::"):
                return ".shared"
        return ""

    def _mem_common(self, ins: Instr, aop: Operand) -> tuple[str, Reader, Ty, int]:
        if not isinstance(aop, Addr):
            raise SimError(ins.span, f"'{ins.name}': expected an address operand")
        space = self._space(ins)
        eff, ar = addr_reader(self.ops, aop, space, ins.span)
        if eff == ".slocal":
            eff = ".local"
        ty = self.ty(ins)
        nvec = 1
        for m in ins.mods:
            if m in (".v2", ".v4", ".v8"):
                nvec = int(m[2:])
        if ty.size > 8 and nvec > 1:
            raise SimError(ins.span, f"'{ins.name}': vectors of 128-bit elements are invalid")
        return eff or "generic", ar, ty, nvec

    def op_ld(self, ins: Instr, pc: int) -> Op:
        eff, ar, ty, nvec = self._mem_common(ins, ins.operands[1])
        if ty.size == 16:
            return self._ld128(ins, pc, eff, ar)
        dst = ins.operands[0]
        elems = list(dst.elems) if isinstance(dst, Vec_t) else [dst]
        if len(elems) != nvec:
            raise SimError(ins.span, f"'{ins.name}': vector width mismatch")
        bty = TYPES[f".b{ty.size * 8}"] if ty.kind not in ("u", "s") else ty
        ws = [self.wr(e, bty if ty.kind != "s" else ty, ins) for e in elems]
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
                _check_vec_align(m, a, total, t, span)
            for i, w in enumerate(ws):
                v = m.mem.load(eff, a + i * size if i else a, t, size, span)
                if w is not None:
                    w(m, s, t, v.view(vt), pc)

        return Op("alu", ins, run)

    op_ldu = op_ld

    def _ld128(self, ins: Instr, pc: int, eff: str, ar: Reader) -> Op:
        """``ld.b128``: two 8-byte words (low word at the lower address), 16-aligned."""
        w = self.wr(ins.operands[0], TYPES[".b128"], ins)
        span = ins.span
        if eff == ".param" and isinstance(ins.operands[1], Addr):
            if isinstance(ins.operands[1].base, Sym):
                raise SimError(span, f"'{ins.name}': 128-bit kernel parameters are unsupported")

        def run(m: Any, s: Any, t: np.ndarray) -> None:
            a = np.ascontiguousarray(np.broadcast_to(ar(m, s), t.shape))
            _check_vec_align(m, a, 16, t, span)
            lo = m.mem.load(eff, a, t, 8, span)
            hi = m.mem.load(eff, a + 8, t, 8, span)
            if w is not None:
                w(m, s, t, np.stack([lo, hi], axis=-1), pc)

        return Op("alu", ins, run)

    def _st128(self, ins: Instr, pc: int, eff: str, ar: Reader) -> Op:
        rv = self.rd(ins.operands[1], TYPES[".b128"], ins)
        span = ins.span

        def run(m: Any, s: Any, t: np.ndarray) -> None:
            a = np.ascontiguousarray(np.broadcast_to(ar(m, s), t.shape))
            _check_vec_align(m, a, 16, t, span)
            v = np.broadcast_to(np.asarray(rv(m, s)), t.shape + (2,))
            m.mem.store(eff, a, t, 8, v[:, 0], span)
            m.mem.store(eff, a + 8, t, 8, v[:, 1], span)

        return Op("alu", ins, run)

    def op_st(self, ins: Instr, pc: int) -> Op:
        eff, ar, ty, nvec = self._mem_common(ins, ins.operands[0])
        if ty.size == 16:
            return self._st128(ins, pc, eff, ar)
        src = ins.operands[1]
        elems = list(src.elems) if isinstance(src, Vec_t) else [src]
        bty = TYPES[f".b{ty.size * 8}"]
        rs = [self.rd(e, bty, ins) for e in elems]
        size = ty.size
        span = ins.span
        total = size * nvec

        def run(m: Any, s: Any, t: np.ndarray) -> None:
            a = np.ascontiguousarray(np.broadcast_to(ar(m, s), t.shape))
            if nvec > 1:
                _check_vec_align(m, a, total, t, span)
            for i, r in enumerate(rs):
                m.mem.store(eff, a + i * size if i else a, t, size, r(m, s), span)

        return Op("alu", ins, run)

    def op_atom(self, ins: Instr, pc: int) -> Op:
        return self._atomic(ins, pc, has_dst=True)

    def op_red(self, ins: Instr, pc: int) -> Op:
        return self._atomic(ins, pc, has_dst=False)

    def _atomic(self, ins: Instr, pc: int, has_dst: bool) -> Op:
        ops_ = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")
        aop = next((m[1:] for m in ins.mods if m[1:] in ops_), None)
        if aop is None:
            raise SimError(ins.span, f"'{ins.name}': unknown atomic operation")
        k = 1 if has_dst else 0
        eff, ar, ty, nvec = self._mem_common(ins, ins.operands[k])
        if ty.kind in ("h2", "bf2", "bf") and aop != "add":
            raise SimError(ins.span, f"'{ins.name}' unsupported")
        if ty.size == 16:
            raise SimError(ins.span, f"'{ins.name}': 128-bit atomics are unsupported")
        vty = ty if ty.kind in ("u", "s", "f", "b", "h") else TYPES[f".b{ty.size * 8}"]
        if nvec > 1:
            return self._vector_atomic(ins, pc, aop, has_dst, eff, ar, ty, vty, nvec)
        w = self.wr(ins.operands[0], vty, ins) if has_dst else None
        rb = self.rd(ins.operands[k + 1], vty, ins)
        rc = self.rd(ins.operands[k + 2], vty, ins) if aop == "cas" else None
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
        self,
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
        if not isinstance(srcs, Vec_t) or len(srcs.elems) != nvec:
            raise SimError(ins.span, f"'{ins.name}': expected a {nvec}-element source vector")
        dsts: list[Writer | None] = [None] * nvec
        if has_dst:
            d = ins.operands[0]
            if not isinstance(d, Vec_t) or len(d.elems) != nvec:
                raise SimError(ins.span, f"'{ins.name}': expected a {nvec}-element destination")
            dsts = [self.wr(e, vty, ins) for e in d.elems]
        rbs = [self.rd(e, vty, ins) for e in srcs.elems]
        fn = _atomic_fn(aop, ty)
        span = ins.span
        size = ty.size
        total = size * nvec
        eff2 = eff if eff != "generic" else "generic"

        def run(m: Any, s: Any, t: np.ndarray) -> None:
            a = np.ascontiguousarray(np.broadcast_to(ar(m, s), t.shape))
            _check_vec_align(m, a, total, t, span)
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

    # -- control -----------------------------------------------------------------------
    def op_bra(self, ins: Instr, pc: int) -> Op:
        info = self.prog.owner[pc]
        lab = next((o.name for o in ins.operands if isinstance(o, Sym)), None)
        if lab is None or lab not in info.labels:
            raise SimError(ins.span, f"unknown branch target {lab}")
        return Op("bra", ins, data=(info.labels[lab], self.prog.reconv.get(pc, -1)))

    def op_brx(self, ins: Instr, pc: int) -> Op:
        info = self.prog.owner[pc]
        tab = ins.operands[1]
        if not isinstance(tab, Sym) or tab.name not in info.branch_tables:
            raise SimError(ins.span, "brx.idx needs a .branchtargets table")
        targets = [info.labels[lab] for lab in info.branch_tables[tab.name]]
        reader = self.rd(ins.operands[0], TYPES[".u32"], ins)
        return Op("brx", ins, data=(reader, targets, self.prog.reconv.get(pc, -1)))

    def op_ret(self, ins: Instr, pc: int) -> Op:
        return Op("ret", ins)

    def op_exit(self, ins: Instr, pc: int) -> Op:
        return Op("exit", ins)

    def op_trap(self, ins: Instr, pc: int) -> Op:
        return Op("trap", ins)

    def op_brkpt(self, ins: Instr, pc: int) -> Op:
        return Op("alu", ins, lambda m, s, t: None)

    def op_call(self, ins: Instr, pc: int) -> Op:
        caller = self.prog.owner[pc]
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
        if isinstance(target, Sym) and target.name not in self.prog.funcs:
            name = target.name
            if name == "vprintf":
                return Op(
                    "call",
                    ins,
                    data=CallSite(None, None, args, rets, [], builtin=_vprintf(rets, pc)),
                )
            raise SimError(ins.span, f"call to {name}, which has no body in this module")
        if isinstance(target, Sym):
            f = self.prog.funcs[target.name]
            offs = [r.offset for r in f.rets]
            saved = [f.name] if f.recursive else []
            return Op("call", ins, data=CallSite(f, None, args, rets, offs[: len(rets)], saved))
        reader = self.rd(target, TYPES[".u64"], ins)
        offs = []
        off = 0
        for r in rets:
            off = (off + r.align - 1) // r.align * r.align
            offs.append(off)
            off += r.size
        saved = [n for n in self.prog.address_taken if self.prog.funcs[n].recursive]
        return Op("call", ins, data=CallSite(None, reader, args, rets, offs, sorted(saved)))

    def op_bar(self, ins: Instr, pc: int) -> Op:
        mods = ins.mods
        if ".warp" in mods:
            return self._bar_warp(ins, pc)
        arrive = ".arrive" in mods
        red = ".red" in mods
        u32 = TYPES[".u32"]
        ops_ = ins.operands
        if red:
            # bar.red.op.type d, a{, b}, {!}c
            mode = next(m[1:] for m in mods if m in (".popc", ".and", ".or"))
            dty = TYPES[".u32"] if mode == "popc" else TYPES[".pred"]
            wd = self.wr(ops_[0], dty, ins)
            idr = self.rd(ops_[1], u32, ins)
            cnt = self.rd(ops_[2], u32, ins) if len(ops_) == 4 else None
            pr = self.rd(ops_[-1], TYPES[".pred"], ins)
            return Op("bar", ins, data=BarInfo(idr, cnt, False, pr, mode, wd))
        idr = self.rd(ops_[0], u32, ins) if ops_ else (lambda m, s: np.uint32(0))
        cnt = self.rd(ops_[1], u32, ins) if len(ops_) > 1 else None
        return Op("bar", ins, data=BarInfo(idr, cnt, arrive))

    op_barrier = op_bar

    def _bar_warp(self, ins: Instr, pc: int) -> Op:
        mr = self.rd(ins.operands[0], TYPES[".u32"], ins)

        def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
            member = _member(m, G, lanes, t, mr)
            m.check_members(op, G, lanes, member)

        op = Op("warp", ins, run)
        return op

    # -- warp-level ----------------------------------------------------------------------
    def op_activemask(self, ins: Instr, pc: int) -> Op:
        w = self.wr(ins.operands[0], TYPES[".b32"], ins)

        def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
            masks = pack_mask(lanes)
            if w is not None:
                w(m, t, t, np.repeat(masks, lanes.sum(1)), pc)

        return Op("warp", ins, run)

    def op_shfl(self, ins: Instr, pc: int) -> Op:
        if ".sync" not in ins.mods:
            raise SimError(ins.span, f"'{ins.name}': shfl without .sync is unsupported (sm_70+)")
        mode = next(m[1:] for m in ins.mods if m in (".up", ".down", ".bfly", ".idx"))
        b32 = TYPES[".b32"]
        u32 = TYPES[".u32"]
        d = ins.operands[0]
        if isinstance(d, Pair):
            wd, wp = self.wr(d.first, b32, ins), self.wr(d.second, TYPES[".pred"], ins)
        else:
            wd, wp = self.wr(d, b32, ins), None
        src_op = ins.operands[1]
        rb = self.rd(ins.operands[2], u32, ins)
        rc = self.rd(ins.operands[3], u32, ins)
        mr = self.rd(ins.operands[4], u32, ins)
        src_is_reg = isinstance(src_op, Reg)
        ra = self.rd(src_op, b32, ins)

        def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
            member = _member(m, G, lanes, t, mr)
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

    def op_vote(self, ins: Instr, pc: int) -> Op:
        mode = next(m[1:] for m in ins.mods if m in (".all", ".any", ".uni", ".ballot"))
        sync = ".sync" in ins.mods
        pt = TYPES[".pred"]
        out_t = TYPES[".b32"] if mode == "ballot" else pt
        w = self.wr(ins.operands[0], out_t, ins)
        rp = self.rd(ins.operands[1], pt, ins)
        mr = self.rd(ins.operands[2], TYPES[".u32"], ins) if sync else None

        def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
            if mr is not None:
                member = _member(m, G, lanes, t, mr)
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

    def op_match(self, ins: Instr, pc: int) -> Op:
        mode = next(m[1:] for m in ins.mods if m in (".any", ".all"))
        ty = self.ty(ins)
        d = ins.operands[0]
        b32 = TYPES[".b32"]
        if isinstance(d, Pair):
            wd, wp = self.wr(d.first, b32, ins), self.wr(d.second, TYPES[".pred"], ins)
        else:
            wd, wp = self.wr(d, b32, ins), None
        ra = self.rd(ins.operands[1], ty, ins)
        mr = self.rd(ins.operands[2], TYPES[".u32"], ins)

        def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
            member = _member(m, G, lanes, t, mr)
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
                res = np.where(allsame[:, None], full[:, None], 0).astype(np.uint32)[lanes]
                pv = np.broadcast_to(allsame[:, None], lanes.shape)[lanes]
            if wd is not None:
                wd(m, t, t, res, pc)
            if wp is not None and pv is not None:
                wp(m, t, t, pv, pc)

        op = Op("warp", ins, run)
        return op

    def op_redux(self, ins: Instr, pc: int) -> Op:
        mode = next(m[1:] for m in ins.mods if m in (".add", ".min", ".max", ".and", ".or", ".xor"))
        ty = self.ty(ins)
        w = self.wr(ins.operands[0], ty, ins)
        ra = self.rd(ins.operands[1], ty, ins)
        mr = self.rd(ins.operands[2], TYPES[".u32"], ins)

        def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
            member = _member(m, G, lanes, t, mr)
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

    def op_elect(self, ins: Instr, pc: int) -> Op:
        d = ins.operands[0]
        if isinstance(d, Pair):
            wd, wp = self.wr(d.first, TYPES[".b32"], ins), self.wr(d.second, TYPES[".pred"], ins)
        else:
            wd, wp = self.wr(d, TYPES[".b32"], ins), None
        mr = self.rd(ins.operands[1], TYPES[".u32"], ins)

        def run(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, pc_: int) -> None:
            member = _member(m, G, lanes, t, mr)
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

    def op_createpolicy(self, ins: Instr, pc: int) -> Op:
        w = self.wr(ins.operands[0], TYPES[".b64"], ins)
        return Op("alu", ins, lambda m, s, t: w(m, s, t, np.uint64(0), pc) if w else None)


# ---------------------------------------------------------------------------------------
# helpers

from ptxopt.ptx.ast import Vec as Vec_t  # noqa: E402

_PRMT_MODES = {
    ".f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    ".b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    ".rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    ".ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    ".ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    ".rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}


def _raiser(ins: Instr, msg: str) -> Op:
    def run(m: Any, s: Any, t: np.ndarray) -> None:
        if len(t):
            raise SimError(ins.span, msg)

    return Op("alu", ins, run)


def _saturate(x: Any) -> Any:
    x = np.asarray(x)
    return np.where(np.isnan(x), x.dtype.type(0), np.clip(x, 0, 1)).astype(x.dtype)


def _round_int(x: Any, mode: str) -> Any:
    if mode == "rn":
        return np.rint(x)
    if mode == "rz":
        return np.trunc(x)
    if mode == "rm":
        return np.floor(x)
    return np.ceil(x)


def _ftz16(x: Any) -> Any:
    """Flush binary16 subnormals to sign-preserving zero."""
    x = np.asarray(x)
    if x.dtype != np.float16:
        return x
    sub = (np.abs(x) < np.float16(2.0**-14)) & (x != 0)
    if np.any(sub):
        return np.where(sub, np.copysign(np.float16(0.0), x), x).astype(np.float16)
    return x


def _half_to_f32(ty: Ty) -> Callable[[Any], Any]:
    if ty.kind == "h":
        return lambda a: np.asarray(a).astype(np.float32)
    return lambda a: fl.bf16_bits_to_f32(np.asarray(a).astype(np.uint16))


def _f32_to_half_bits(x: Any, half: str, mode: str, sat: bool, relu: bool) -> Any:
    x64 = x.astype(np.float64)
    if sat:
        x64 = _saturate(x64)
    if relu:
        x64 = np.where(np.isnan(x64) | (x64 < 0), 0.0, x64)
    if half == "f16":
        return fl.f64_to_f16(x64, mode).view(np.uint16)
    return fl.f32_to_bf16_bits(x64.astype(np.float32), mode)


def _idiv(a: Any, b: Any, ty: Ty) -> tuple[Any, Any]:
    """Truncating division and remainder with wrap; x/0 gives all ones (quotient)
    and x (remainder), as the hardware's division sequence does."""
    a = np.asarray(a)
    b = np.asarray(b)
    a, b = np.broadcast_arrays(a, b)
    ut = ty.ut
    zero = b == 0
    bs = np.where(zero, ty.dt(1), b).astype(ty.dt)
    if ty.kind == "s":
        ua = np.where(a < 0, (-a.astype(ut)).astype(ut), a.astype(ut)) if a.size else a.astype(ut)
        ub = np.where(bs < 0, (-bs.astype(ut)).astype(ut), bs.astype(ut))
        uq = ua // ub
        ur = ua % ub
        neg_q = (a < 0) != (bs < 0)
        q = np.where(neg_q, (-uq).astype(ut), uq).astype(ut).view(ty.dt)
        r = np.where(a < 0, (-ur).astype(ut), ur).astype(ut).view(ty.dt)
    else:
        q = (a // bs).astype(ty.dt)
        r = (a % bs).astype(ty.dt)
    q = np.where(zero, np.array(-1).astype(ut).view(ty.dt)[()], q).astype(ty.dt)
    r = np.where(zero, a, r).astype(ty.dt)
    return q, r


def _mulhi64(a: Any, b: Any, signed: bool) -> Any:
    ua = a.astype(np.uint64)
    ub = b.astype(np.uint64)
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    al, ah = ua & m32, ua >> s32
    bl, bh = ub & m32, ub >> s32
    ll = al * bl
    lh = al * bh
    hl = ah * bl
    hh = ah * bh
    mid = (ll >> s32) + (lh & m32) + (hl & m32)
    hi = hh + (lh >> s32) + (hl >> s32) + (mid >> s32)
    if signed:
        hi = hi - np.where(a < 0, ub, np.uint64(0)) - np.where(b < 0, ua, np.uint64(0))
        return hi.view(np.int64)
    return hi


def _popcount(a: Any, size: int) -> Any:
    a = np.asarray(a).astype(UNSIGNED[size])
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(a).astype(np.uint32)
    v = a.astype(np.uint64)  # pragma: no cover
    c = np.zeros(v.shape, dtype=np.uint32)
    for i in range(size * 8):
        c += ((v >> np.uint64(i)) & np.uint64(1)).astype(np.uint32)
    return c


def _bitlen(u: Any) -> Any:
    """Number of significant bits of uint64 values (0 for 0)."""
    u = np.asarray(u, dtype=np.uint64)
    n = np.zeros(u.shape, dtype=np.int64)
    x = u.copy()
    for sh in (32, 16, 8, 4, 2, 1):
        big = x >= (np.uint64(1) << np.uint64(sh))
        n = n + np.where(big, sh, 0)
        x = np.where(big, x >> np.uint64(sh), x)
    return n + (x > 0)


def _check_vec_align(m: Any, a: np.ndarray, total: int, t: np.ndarray, span: Span | None) -> None:
    bad = (a & (total - 1)) != 0
    if bad.any():
        i = int(np.argmax(bad))
        raise SimError(
            span,
            f"misaligned {total}-byte vector access at address "
            f"{int(a[i]) & (2**64 - 1):#x} by {m.describe(int(t[i]))}",
        )


def _per_lane(v: Any, lanes: np.ndarray, g: int) -> np.ndarray:
    out = np.zeros((g, W), dtype=np.int64)
    out[lanes] = np.broadcast_to(np.asarray(v).astype(np.int64), (int(lanes.sum()),))
    return out


def _member(m: Any, G: np.ndarray, lanes: np.ndarray, t: np.ndarray, mr: Reader) -> np.ndarray:
    mv = np.broadcast_to(np.asarray(mr(m, t)).astype(np.uint32), t.shape)
    g = len(G)
    per = np.zeros((g, W), dtype=np.uint32)
    per[lanes] = mv
    # the membermask of a warp: taken from its first executing lane
    first = np.argmax(lanes, axis=1)
    wm = per[np.arange(g), first]
    bits = ((wm[:, None] >> np.arange(W, dtype=np.uint32)) & np.uint32(1)).astype(bool)
    return bits


def _atomic_fn(op: str, ty: Ty) -> Callable[[Any, Any, Any], Any]:
    if op == "add":
        if ty.kind == "f" and ty.size == 4:
            return lambda o, b, c: fl.ftz32(fl.ftz32(o) + fl.ftz32(b))
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


def _vprintf(rets: list[VarInfo], pc: int) -> Callable[..., None]:
    def run(m: Any, tids: np.ndarray, pc_: int) -> None:
        # printf output is not modelled; the call returns 0 (no characters counted)
        for r in rets:
            base = tids * m.mem.local_stride + m.fp[tids] + r.offset
            for b in range(r.size):
                m.mem.local[base + b] = 0

    return run


__all__ = ["Decoder", "CallSite", "BarInfo", "Not", "Sink"]
