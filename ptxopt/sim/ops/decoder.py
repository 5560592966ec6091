"""The decoder: turns each PTX instruction into an :class:`~ptxopt.sim.machine.Op` once.

Instruction semantics live in one module per family (see :mod:`ptxopt.sim.ops`); each
registers a *handler* ``fn(decoder, instr, pc) -> Op`` for the head opcodes it
implements with :func:`handles`.  :meth:`Decoder.decode` looks the head opcode up in
:data:`HANDLERS`; the :class:`Decoder` itself only offers what every handler needs:
operand readers and writers (:meth:`Decoder.rd`, :meth:`Decoder.wr`), the type of an
instruction (:meth:`Decoder.ty`), the generic ``d = f(sources)`` op (:meth:`Decoder.alu1`),
register types, symbols and the rounding modifier.

An instruction no handler accepts decodes into an op that raises when it is
*executed*, naming the instruction and its line, so other kernels of the same module
still run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr, Operand, Reg, Span
from ptxopt.ptx.opcodes import CARRY_FLAG
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op
from ptxopt.sim.program import FuncInfo, Program
from ptxopt.sim.values import TYPES, Operands, Reader, Ty, Writer, types_of

Handler = Callable[["Decoder", Instr, int], Op]

#: head opcode -> handler; filled by the family modules through :func:`handles`
HANDLERS: dict[str, Handler] = {}

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
    "clusterlaunchcontrol",
)
TEXTURE_SURFACE = frozenset({"tex", "tld4", "txq", "istypep", "suld", "sust", "sured", "suq"})
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


def handles(*opcodes: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of ``opcodes`` (head opcodes:
    ``"add"``, ``"ld"``; a handler reads the modifiers itself)."""

    def register(fn: Handler) -> Handler:
        for opc in opcodes:
            if opc in HANDLERS:
                raise ValueError(f"two interpreter handlers for '{opc}'")
            HANDLERS[opc] = fn
        return fn

    return register


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
            "%cluster_ctarank",
            "%cluster_nctarank",
            "%is_explicit_cluster",
            *(
                f"%{r}.{a}"
                for r in ("clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid")
                for a in "xyz"
            ),
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
            self.reg_types[f"{info.name}::{CARRY_FLAG}"] = np.bool_
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
                code.append(raiser(ins, e.message))
        return code

    def decode(self, ins: Instr, pc: int) -> Op:
        opc = ins.opcode
        h = HANDLERS.get(opc)
        if h is None and opc in TEXTURE_SURFACE:
            raise SimError(
                ins.span,
                f"'{ins.name}' is not interpreted (texture/surface instructions need graphics "
                "state the interpreter does not model)",
            )
        if h is None:
            family = opc.split(".")[0]
            if family in TENSOR_CORE or opc in TENSOR_CORE:
                raise SimError(
                    ins.span,
                    f"'{ins.name}' is unsupported by the interpreter "
                    "(tensor-core / async-copy family)",
                )
            raise SimError(ins.span, f"'{ins.name}' is unsupported by the interpreter")
        if ".async" in ins.mods and opc in ("st", "red"):
            raise SimError(
                ins.span,
                f"'{ins.name}' is unsupported by the interpreter (tensor-core / async-copy family)",
            )
        op: Op = h(self, ins, pc)
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

    # -- helpers for handlers ----------------------------------------------------
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


def raiser(ins: Instr, msg: str) -> Op:
    """An op that raises ``msg`` at ``ins`` when some lane executes it."""

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        if len(t):
            raise SimError(ins.span, msg)

    return Op("alu", ins, run)
