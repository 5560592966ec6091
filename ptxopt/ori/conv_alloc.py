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

from collections.abc import Iterable
from dataclasses import dataclass, field

from ptxopt.ir.core import Func, Inst
from ptxopt.ori.ur_alloc import FuncPlan
from ptxopt.ori.view import Webs, record_reads, scan

__all__ = ["ConvAllocPlan", "Marker", "current_reads", "plan_conv_alloc", "E7020", "E7021"]

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


def plan_conv_alloc(func: Func, plan: FuncPlan, regs: Webs | None = None) -> ConvAllocPlan:
    """Markers and diagnostics for ``func`` given phase 74's ``plan``.  The readers of
    each converted web are the reads phase 74 recorded (``plan.regs``, in program
    order: guard, then operands; ``regs``: the webs of :func:`current_reads` instead,
    for a function changed since) and the writes of the web that keep its old value
    (a guarded write's tied old value); the latter write the web itself, so they never
    keep it alive, they only can be its first reader."""
    out = ConvAllocPlan()
    uniform = plan.uniform
    if regs is None:
        regs = plan.regs
    writes_uniform: dict[Inst, bool] = {}  # reader -> it writes a web in UR/UP
    for k in sorted(uniform):
        w = regs.get(k)
        if w is None:
            continue  # no longer in the function
        first: Inst | None = None  # the first reader in program order
        alive = False
        for u in w.uses:
            r = u.inst
            wu = writes_uniform.get(r)
            if wu is None:
                wu = writes_uniform[r] = any(d.var in uniform for d in r.defs)
            if not wu:
                alive = True  # a per-thread reader keeps it alive already
                break
            if first is None:
                first = r
        if alive:
            continue
        for d in w.defs:
            if d.olds is not None and (first is None or d.point < first.point):
                if any(o is not None and o.var == k for o in d.olds):
                    first = d
        if first is not None:
            line = _ln(first)
        else:  # no reader: at its last write (0: a parameter)
            line = max((_ln(d) for d in w.defs), default=0)
        out.markers.append(Marker(k, line))
    out.markers.sort(key=lambda m: (m.line, m.reg))
    _check_allow_conv_alloc(func, out)
    return out


def current_reads(func: Func, names: Iterable[str]) -> Webs:
    """The webs of ``func`` as it is now, with the reads of those of ``names`` it still
    has recorded (program points renumbered)."""
    sc = scan(func)
    webs = sc.webs
    record_reads(func, webs, sorted(k for k in names if k in webs), sc.insts)
    return webs


def _check_allow_conv_alloc(func: Func, out: ConvAllocPlan) -> None:
    for b in func.blocks:
        pending = False
        calls = 0
        for ins in b.insts:
            if ins.raw is not None and "allowConvAlloc" in ins.raw:
                pending = True
                continue
            if not pending and not calls:
                continue  # (most instructions: no annotated call in this block yet)
            if ins.info is not None and ins.info.name == "call":
                if pending:
                    calls += 1
                    uni = ".uni" in ins.ast.mods and ins.pred is None
                    if not uni:
                        out.diagnostics.append(f"{E7020} (line {_ln(ins)})")
                    elif calls > 1:
                        out.diagnostics.append(f"{E7021} (line {_ln(ins)})")
                    pending = False
                else:
                    calls += 1
                    out.diagnostics.append(f"{E7021} (line {_ln(ins)})")


def _ln(ins: Inst) -> int:
    span = ins.ast.span
    return span.line if span is not None else 0
