"""replace-uniforms-with-imm: fold loads of known constant-bank values into immediates.

ptxas phase 11, ReplaceUniformsWithImm (spec 02): a read of the constant bank whose
contents are known at compile time becomes an immediate, which frees the register and
the load.  At the PTX level the constant bank holds two kinds of values:

* **kernel parameters** the user specializes (``ptxopt opt --param NAME=VALUE``,
  :func:`ptxopt.specialize`, or the ``SpecializeParams`` knob ``NAME=VALUE;...``):
  every ``ld.param`` of that parameter in the kernel reads the given value.  The
  parameter stays declared, so the kernel's signature (ABI) is unchanged and the
  kernel is correct whenever it is launched with that value;
* **``.const`` variables with an initializer** (``__constant__`` tables): device code
  cannot write the constant space, so an ``ld.const`` at a constant offset of such a
  variable reads the initializer (``FoldConstInitializers``; ``.extern`` variables,
  whose contents live elsewhere, are left alone).

A folded load becomes ``mov dst, imm``; the immediate then replaces the register in
every plain source operand that accepts one (arithmetic, compares, ``selp``, ``mov``)
and the ``mov`` disappears when nothing else reads it, so the value reaches its users
without waiting for ``general-optimize`` (which propagates it further when it runs).
"""

from __future__ import annotations

import struct

from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Func, Inst, IRModule
from ptxopt.ir.defuse import DefUse
from ptxopt.ir.edit import remove
from ptxopt.knobs import Knob
from ptxopt.ptx.ast import Addr, Instr, Param, PtxError, Reg, Sym, VarDecl
from ptxopt.ptx.opcodes import lookup
from ptxopt.ptx.types import bit_width, is_float, reg_class
from ptxopt.transforms.base import FunctionPass, register
from ptxopt.transforms.uniform_common import fold_immediate, imm_for, initializer_bytes, load_bits

__all__ = ["ReplaceUniformsWithImm", "parse_params", "param_bytes", "run"]


def parse_params(text: str) -> dict[str, str]:
    """``"n=4;scale=0.5"`` -> ``{"n": "4", "scale": "0.5"}`` (``;`` or ``,`` separated).
    A name may be qualified by its kernel, ``KERNEL:NAME``, where kernels share
    parameter names."""
    out: dict[str, str] = {}
    for item in text.replace(",", ";").split(";"):
        item = item.strip()
        if not item:
            continue
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise ValueError(f"a specialized parameter is NAME=VALUE, got '{item}'")
        out[name.strip()] = value.strip()
    return out


def param_bytes(p: Param, value: str) -> bytes:
    """The bytes a launch passes for parameter ``p`` when its value is ``value``
    (an integer, or a float for a floating-point parameter; ``0f``/``0d`` bit patterns
    and hex are accepted)."""
    count = 1
    for d in p.dims:
        count *= d or 0
    size = max(bit_width(p.type) // 8, 1) * count
    v = value.strip()
    low = v.lower()
    try:
        if low.startswith("0f") and len(v) == 10:
            bits = int(v[2:], 16)
        elif low.startswith("0d") and len(v) == 18:
            bits = int(v[2:], 16)
        elif is_float(p.type) and not p.dims:
            fmt = {2: "<e", 4: "<f", 8: "<d"}[size]
            bits = int.from_bytes(struct.pack(fmt, float(v)), "little")
        else:
            bits = int(v, 0)
    except (ValueError, KeyError, OverflowError):
        raise ValueError(f"parameter {p.name}: '{value}' is not a value of type {p.type}") from None
    if size == 0:
        raise ValueError(f"parameter {p.name}: cannot specialize an unsized array")
    return (bits & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def check_param_names(mod: IRModule, names: dict[str, str]) -> None:
    """:class:`PtxError` for a name that is no parameter of any kernel."""
    known = {p.name for f in mod.ast.functions if f.is_entry for p in f.params}
    known |= {f"{f.name}:{p.name}" for f in mod.ast.functions if f.is_entry for p in f.params}
    for n in names:
        if n not in known:
            raise PtxError(None, f"--param {n}: no kernel has a parameter of that name")


def const_tables(mod: IRModule | None) -> dict[str, bytes]:
    """Module-scope ``.const`` variables with a foldable initializer, by name."""
    out: dict[str, bytes] = {}
    if mod is None:
        return out
    for v in mod.ast.items:
        if not isinstance(v, VarDecl) or v.space != ".const" or v.init is None:
            continue
        if ".extern" in v.linkage or v.vector:
            continue
        data = initializer_bytes(v.init, v.type, v.dims)
        if data is not None:
            out[v.name] = data
    return out


_MOV_TYPES = frozenset(
    {".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s16", ".s32", ".s64", ".f32", ".f64"}
)


def _mov(inst: Inst, bits: int) -> None:
    """Turn the load ``inst`` into ``mov dst, imm`` in place (same def value)."""
    dst = inst.defs[0]
    vtype = dst.type
    mtype = vtype if vtype in _MOV_TYPES else f".{reg_class(vtype)}"
    ast = Instr("mov", (mtype,), [Reg(dst.var), imm_for(bits, vtype)], span=inst.ast.span)
    inst.ast = ast
    inst.info = lookup(ast)
    inst.uses = []
    inst.slot_names = [dst.var]


def _scalar_load(inst: Inst) -> tuple[str, int, str] | None:
    """(symbol, offset, load type) of an unguarded scalar ``ld.param``/``ld.const``
    at a constant address, else None."""
    info = inst.info
    if info is None or info.name != "ld" or info.space not in (".param", ".const"):
        return None
    if inst.pred is not None or len(inst.defs) != 1 or info.type is None:
        return None
    if any(m in (".v2", ".v4", ".v8") for m in inst.ast.mods):
        return None
    addr = inst.ast.operands[1] if len(inst.ast.operands) > 1 else None
    if not isinstance(addr, Addr) or not isinstance(addr.base, Sym) or addr.extra:
        return None
    return addr.base.name, addr.offset, info.type


def run(
    func: Func,
    am: AnalysisManager,
    params: dict[str, bytes],
    consts: dict[str, bytes],
    stats: dict[str, int] | None = None,
) -> bool:
    """Fold every load of ``params`` (this kernel's specialized parameters, as
    bytes) and ``consts`` (constant tables) in ``func``; True if anything changed."""
    folded: list[tuple[Inst, int]] = []
    for inst in list(func.instructions()):
        site = _scalar_load(inst)
        if site is None:
            continue
        sym, off, ltype = site
        space = inst.info.space if inst.info is not None else None
        table = params if space == ".param" else consts
        data = table.get(sym)
        if data is None:
            continue
        bits = load_bits(data, off, ltype, inst.defs[0].type)
        if bits is None:
            continue
        _mov(inst, bits)
        folded.append((inst, bits))
        if stats is not None:
            key = "parameter loads folded" if space == ".param" else "constant loads folded"
            stats[key] = stats.get(key, 0) + 1
    if not folded:
        return False
    du = DefUse(func)
    for inst, bits in folded:
        v = inst.defs[0]
        users = [u for u in du.uses_of(v) if isinstance(u, Inst)]
        n = fold_immediate(func, v, bits, users)
        if stats is not None and n:
            stats["immediate operands"] = stats.get("immediate operands", 0) + n
    du = DefUse(func)
    for inst, _ in folded:
        if du.is_dead(inst.defs[0]):
            remove(inst)
    return True


@register
class ReplaceUniformsWithImm(FunctionPass):
    name = "replace-uniforms-with-imm"
    phase = 11
    description = (
        "fold specialized kernel parameters (--param) and initialized .const data into immediates"
    )
    knobs = (
        Knob(
            "SpecializeParams",
            "str",
            "",
            "kernel parameters to specialize, NAME=VALUE;... (what --param sets)",
            spec="02-uniform-registers.txt",
        ),
        Knob(
            "FoldConstInitializers",
            "bool",
            True,
            "fold ld.const of initialized, never-written .const variables",
            spec="02-uniform-registers.txt",
        ),
    )

    _checked = False

    def run(self, func: Func, am: AnalysisManager) -> bool:
        try:
            wanted = parse_params(str(self.knob("SpecializeParams")))
        except ValueError as e:
            raise PtxError(None, str(e)) from None
        if wanted and self.module is not None and not self._checked:
            check_param_names(self.module, wanted)
            self._checked = True
        params: dict[str, bytes] = {}
        if wanted and func.ast.is_entry:
            for p in func.ast.params:
                value = wanted.get(f"{func.name}:{p.name}", wanted.get(p.name))
                if value is not None:
                    try:
                        params[p.name] = param_bytes(p, value)
                    except ValueError as e:
                        raise PtxError(p.span, str(e)) from None
        consts = const_tables(self.module) if self.knob("FoldConstInitializers") else {}
        if not params and not consts:
            return False
        counts: dict[str, int] = {}
        changed = run(func, am, params, consts, counts)
        self.stats.update(counts)
        return changed
