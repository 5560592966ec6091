"""Phase 86, InsertPseudoUseDefForConvUR: CONV.ALLOC keep-alive markers (spec 02).

After phase 74 a uniform web may have no per-thread reader left; the dead-code pass
between the two phases (ptxas phase 84) would then see nothing keeping its writes
alive across the allocator.  Phase 86 puts a pseudo instruction (CONV.ALLOC, no
encoding, removed before emission) in front of each such reader: it reads the UR value
and writes a fresh virtual register, an artificial def-use link.  The model lists where
those markers go: before the first reader of every converted web whose readers are all
uniform instructions (or that has none), skipping writes that already are markers.

Calls annotated ``allowConvAlloc`` (a ``.pragma "allowConvAlloc"`` before the call in
PTX) must sit inside a convergent region with exactly one call: a second call in the
region is diagnostic 7021, a call with no enclosing convergent region (reconvergence
point) is 7020.  In PTX terms the region is the basic block of the call: the call must
be warp-uniform (``call.uni`` or a uniform guard) and alone in its block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt.ir.core import Func, Value
from ptxopt.ori.ur_alloc import FuncPlan

__all__ = ["ConvAllocPlan", "Marker", "plan_conv_alloc", "E7020", "E7021"]

E7020 = (
    "error 7020: Missing proper convergent boundary around func call annotated with allowConvAlloc"
)
E7021 = "error 7021: Multiple functions calls within the allowConvAlloc convergent boundary"


@dataclass(slots=True)
class Marker:
    reg: str
    line: int


@dataclass(slots=True)
class ConvAllocPlan:
    markers: list[Marker] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)


def plan_conv_alloc(func: Func, plan: FuncPlan) -> ConvAllocPlan:
    """Markers and diagnostics for ``func`` given phase 74's ``plan``."""
    out = ConvAllocPlan()
    uniform = plan.uniform
    readers: dict[str, list[tuple[int, int, bool]]] = {}
    n = 0
    for b in func.blocks if uniform else ():
        for ins in b.insts:
            n += 1
            hits = [
                u.var for u in ins.uses if isinstance(u, Value) and u.var in uniform
            ]  # the explicit operands; the implicit reads are rare
            p = ins.pred
            if p is not None and p.var in uniform or ins.olds is not None or ins.carry_in:
                hits = [v.var for v in ins.operand_values() if v.var in uniform]
            if not hits:
                continue
            writes_uniform = any(d.var in uniform for d in ins.defs)
            line = ins.ast.span.line if ins.ast.span is not None else 0
            for var in hits:
                readers.setdefault(var, []).append((n, line, writes_uniform))
    for k in sorted(uniform):
        rs = readers.get(k, [])
        if any(not wu for _, _, wu in rs):
            continue  # a per-thread reader keeps it alive already
        line = min(rs)[1] if rs else (plan.webs[k].lines or [0])[-1]
        out.markers.append(Marker(k, line))
    out.markers.sort(key=lambda m: (m.line, m.reg))
    _check_allow_conv_alloc(func, out)
    return out


def _check_allow_conv_alloc(func: Func, out: ConvAllocPlan) -> None:
    from ptxopt.analysis.divergence import call_sites_of_inst  # noqa: F401

    for b in func.blocks:
        pending = False
        calls = 0
        for ins in b.insts:
            if ins.raw is not None and "allowConvAlloc" in ins.raw:
                pending = True
                continue
            if ins.info is not None and ins.info.name == "call":
                if pending:
                    calls += 1
                    uni = ".uni" in ins.ast.mods and ins.pred is None
                    if not uni:
                        out.diagnostics.append(f"{E7020} (line {_ln(ins)})")
                    elif calls > 1:
                        out.diagnostics.append(f"{E7021} (line {_ln(ins)})")
                    pending = False
                elif calls:
                    calls += 1
                    out.diagnostics.append(f"{E7021} (line {_ln(ins)})")


def _ln(ins: object) -> int:
    span = getattr(getattr(ins, "ast", None), "span", None)
    return span.line if span is not None else 0
