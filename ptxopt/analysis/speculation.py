"""Which constant-bank loads may be speculated: ptxas's AnalyzeUniformsForSpeculation.

Spec 02, phase 27: an analysis (it changes nothing) that marks the loads a later pass
may execute on a path the program did not take - hoisted out of a loop, above a
branch - without a fault or a different value.  At the PTX level those are

* ``ld.param`` of the function's own parameters: the parameter space is read-only
  for the callee and always mapped;
* ``ld.const`` of a module ``.const`` variable at a constant offset inside it (the
  symbol itself, or a register computed from ``mov r, sym`` by adding constants -
  the uniform address arithmetic - with the access in bounds); constant memory is
  read-only for the whole launch.

A load that is guarded, volatile, of another state space, or whose address is not a
known in-bounds constant-bank address is not speculatable; :attr:`reasons` says why.
The address arithmetic of a speculatable load is itself pure and uniform, so it is
speculatable too (:attr:`address_insts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Func, Inst, IRModule
from ptxopt.ptx.ast import Addr, Imm, Reg, Sym, VarDecl
from ptxopt.ptx.types import bit_width

__all__ = ["Speculation", "analyze", "bind_const_sizes"]


def const_sizes_of(func: Func) -> dict[str, int]:
    """Sizes of the module ``.const`` variables visible to ``func`` (bound by the
    pipeline through :func:`bind_const_sizes`; function-local ones are added)."""
    out = dict(func.module_consts or {})
    for st in func.head:
        if isinstance(st, VarDecl) and st.space == ".const":
            out[st.name] = _var_size(st)
    return out


def _var_size(v: VarDecl) -> int:
    count = 1
    for d in v.dims:
        if d is None:
            return 0
        count *= d
    try:
        return max(bit_width(v.type) // 8, 1) * count
    except ValueError:
        return 0


def bind_const_sizes(mod: IRModule) -> None:
    """Tell the analysis which module-level ``.const`` variables exist."""
    sizes = {
        v.name: _var_size(v)
        for v in mod.ast.items
        if isinstance(v, VarDecl) and v.space == ".const" and ".extern" not in v.linkage
    }
    for f in mod.funcs:
        f.module_consts = sizes


@dataclass
class Speculation:
    """``safe``: speculatable loads; ``address_insts``: the pure instructions that
    compute their addresses; ``reasons``: why each other ``ld`` is not."""

    safe: set[Inst] = field(default_factory=set)
    address_insts: set[Inst] = field(default_factory=set)
    reasons: dict[Inst, str] = field(default_factory=dict)

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> Speculation:
        assert isinstance(fn, Func)
        return analyze(fn)

    def is_speculatable(self, inst: Inst) -> bool:
        return inst in self.safe or inst in self.address_insts

    def same_as(self, other: object) -> bool:
        return (
            isinstance(other, Speculation)
            and {id(i) for i in self.safe} == {id(i) for i in other.safe}
            and {id(i) for i in self.address_insts} == {id(i) for i in other.address_insts}
        )


def analyze(func: Func) -> Speculation:
    res = Speculation()
    consts = const_sizes_of(func)
    params = {p.name for p in func.ast.params}
    # register -> (const symbol, offset, instructions computing it)
    addr: dict[int, tuple[str, int, tuple[Inst, ...]]] = {}
    generic: set[int] = set()  # addresses made generic by cvta.const
    for b in func.blocks:
        for inst in b.insts:
            info = inst.info
            if info is None:
                continue
            ops = inst.ast.operands
            if inst.pred is None and len(inst.defs) == 1 and len(ops) >= 2:
                d = inst.defs[0]
                if info.name == "mov" and isinstance(ops[1], Sym) and ops[1].name in consts:
                    addr[d.id] = (ops[1].name, 0, (inst,))
                    continue
                if (
                    info.name == "cvta"
                    and ".const" in inst.ast.mods
                    and ".to" not in inst.ast.mods
                    and len(inst.uses) == 1
                    and not isinstance(inst.uses[0], Imm)
                    and inst.uses[0].id in addr
                ):
                    sym, off, chain = addr[inst.uses[0].id]
                    addr[d.id] = (sym, off, (*chain, inst))
                    generic.add(d.id)
                    continue
                if info.name == "add" and len(ops) == 3 and inst.uses:
                    base = inst.uses[0]
                    k = ops[2]
                    if (
                        isinstance(ops[1], Reg)
                        and isinstance(k, Imm)
                        and k.kind == "int"
                        and len(inst.uses) == 1
                        and not isinstance(base, Imm)
                        and base.id in addr
                    ):
                        sym, off, chain = addr[base.id]
                        addr[d.id] = (sym, off + int(k.value), (*chain, inst))
                        if base.id in generic:
                            generic.add(d.id)
                        continue
            if info.name != "ld":
                continue
            why = _why_not(inst, consts, params, addr, generic)
            if why is None:
                res.safe.add(inst)
                if inst.uses and not isinstance(inst.uses[0], Imm) and inst.uses[0].id in addr:
                    res.address_insts.update(addr[inst.uses[0].id][2])
            else:
                res.reasons[inst] = why
    return res


def _why_not(
    inst: Inst,
    consts: dict[str, int],
    params: set[str],
    addr: dict[int, tuple[str, int, tuple[Inst, ...]]],
    generic: set[int],
) -> str | None:
    info = inst.info
    assert info is not None
    if inst.pred is not None:
        return "guarded"
    mods = inst.ast.mods
    if ".volatile" in mods or any(m in mods for m in (".acquire", ".relaxed", ".mmio")):
        return "volatile or ordered"
    a = inst.ast.operands[1] if len(inst.ast.operands) > 1 else None
    if not isinstance(a, Addr) or a.extra:
        return "address form"
    size = bit_width(info.type) // 8 if info.type else 0
    for m in mods:
        if m in (".v2", ".v4", ".v8"):
            size *= int(m[2:])
    if info.space == ".param":
        if isinstance(a.base, Sym) and a.base.name in params:
            return None
        return "not one of the function's own parameters"
    const_generic = (
        info.space == ""
        and isinstance(a.base, Reg)
        and bool(inst.uses)
        and not isinstance(inst.uses[0], Imm)
        and inst.uses[0].id in generic
    )
    if info.space != ".const" and not const_generic:
        return "not a constant-bank load"
    if isinstance(a.base, Sym):
        sym, off = a.base.name, a.offset
    elif isinstance(a.base, Reg) and inst.uses and not isinstance(inst.uses[0], Imm):
        known = addr.get(inst.uses[0].id)
        if known is not None and (inst.uses[0].id in generic) != const_generic:
            known = None
        if known is None:
            return "address not a known constant-bank address"
        sym, off = known[0], known[1] + a.offset
    else:
        return "address form"
    total = consts.get(sym, 0)
    if total <= 0 or off < 0 or off + size > total:
        return "constant-bank access not provably in bounds"
    return None
