"""Uniformity claims: what the interpreter checks for ``launch(uniform_claims=...)``.

A claim names a value an analysis calls warp-uniform.  It is checked where the value
is *written* (the lanes that write it agree) and where it is *read* (every lane that
executes an instruction reading it sees the same bits).  The read check is what
catches values that are uniform at each write but differ between lanes once paths
meet: a join reached before the post-dominator, or a value leaving a loop whose lanes
exited in different iterations (temporal divergence).  Two forms are accepted per
function:

* a PTX register name (``"%r5"``): every write of that register in the function must
  give the same bits in every lane of a warp that executes it, and every instruction
  reading it must find the same bits in all its active lanes;
* an SSA value of :mod:`ptxopt.ir` (``Value`` from ``lift_module(parse(text))``).
  A value defined by an instruction is checked where that instruction (the one at
  the same source position) writes the value's register.  A value defined by a phi
  is checked at the join: whenever a warp reaches the first instruction of the
  phi's block, the register must hold the same bits in all executing lanes (after
  reconvergence, that is every lane that arrives together).  Either kind is also
  checked at every instruction that reads it (implicit reads included: the guard,
  the old value of a guarded write, the carry flag).

SSA registers are matched to the interpreter's scope-resolved registers by the
operand position of the register in the defining instruction, so registers that
lifting renamed (shadowing in nested scopes) still resolve.  A value whose
position cannot be found (no source span, an empty block) falls back to a
register-name claim.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ptxopt.ptx.ast import Addr, Instr, Not, Operand, Pair, ParenList, Reg, Sel, Vec
from ptxopt.ptx.opcodes import CARRY_FLAG, use_regs
from ptxopt.sim.program import Program


@dataclass(slots=True)
class Claims:
    """Resolved claims of one launch."""

    # function -> register names (short, as written in PTX) checked at every write
    names: dict[str, set[str]] = field(default_factory=dict)
    # pc -> {interpreter register -> (PTX register, SSA value)} checked when that pc
    # writes the register
    writes: dict[int, dict[str, tuple[str, str]]] = field(default_factory=dict)
    # pc -> [(interpreter register, PTX register, SSA value)] checked when a warp
    # reaches pc
    joins: dict[int, list[tuple[str, str, str]]] = field(default_factory=dict)
    # pc -> [(interpreter register, PTX register, SSA value)] read by the instruction
    # at pc: checked over its active lanes before it executes
    reads: dict[int, list[tuple[str, str, str]]] = field(default_factory=dict)

    def at_pc(self) -> dict[int, list[tuple[str, str, str]]]:
        """Every check made when a warp reaches a pc (joins and reads together)."""
        out = {pc: list(v) for pc, v in self.joins.items()}
        for pc, v in self.reads.items():
            out.setdefault(pc, []).extend(v)
        return out


def _paths(op: Operand, name: str, path: tuple[int, ...]) -> list[tuple[int, ...]]:
    if isinstance(op, Reg):
        return [path] if op.name == name else []
    if isinstance(op, Not):
        return _paths(op.operand, name, path + (0,))
    if isinstance(op, Sel):
        return _paths(op.reg, name, path + (0,))
    if isinstance(op, Vec):
        return [p for i, e in enumerate(op.elems) for p in _paths(e, name, path + (i,))]
    if isinstance(op, Pair):
        return _paths(op.first, name, path + (0,)) + _paths(op.second, name, path + (1,))
    if isinstance(op, ParenList):
        return [p for i, e in enumerate(op.items) for p in _paths(e, name, path + (i,))]
    if isinstance(op, Addr) and op.base is not None:
        return _paths(op.base, name, path + (0,))
    return []


def _at(op: Operand, path: tuple[int, ...]) -> Operand | None:
    for i in path:
        if isinstance(op, Not):
            op = op.operand
        elif isinstance(op, Sel):
            op = op.reg
        elif isinstance(op, Vec) and i < len(op.elems):
            op = op.elems[i]
        elif isinstance(op, Pair):
            op = op.first if i == 0 else op.second
        elif isinstance(op, ParenList) and i < len(op.items):
            op = op.items[i]
        elif isinstance(op, Addr) and op.base is not None:
            op = op.base
        else:
            return None
    return op


def _find_pcs(prog: Program, fname: str, ast: Instr) -> list[int]:
    info = prog.funcs.get(fname)
    sp = ast.span
    if info is None or sp is None:
        return []
    out = []
    for pc in range(info.start, info.end):
        s = prog.instrs[pc].span
        if s is not None and s.line == sp.line and s.col == sp.col and s.file == sp.file:
            out.append(pc)
    return out


def _resolve(prog: Program, fname: str, ast: Instr, var: str) -> list[tuple[int, str]]:
    """(pc, interpreter register) pairs of ``var`` at the instruction ``ast``."""
    if var == CARRY_FLAG:
        return [(pc, f"{fname}::{CARRY_FLAG}") for pc in _find_pcs(prog, fname, ast)]
    paths = [p for i, o in enumerate(ast.operands) for p in _paths(o, var, (i,))]
    if ast.pred is not None and ast.pred.name == var:
        paths.append((-1,))
    out = []
    for pc in _find_pcs(prog, fname, ast):
        sim = prog.instrs[pc]
        for p in paths:
            op = sim.pred if p == (-1,) else _at(sim.operands[p[0]], p[1:])
            if isinstance(op, Reg):
                out.append((pc, op.name))
                break
    return out


def _register_of_phi(prog: Program, fname: str, phi: Any) -> str | None:
    """The interpreter register of a phi's PTX register, found through the
    instructions that define its incoming values."""
    var = phi.result.var
    seen: set[int] = set()
    stack = [phi]
    while stack:
        p = stack.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        for v in p.incoming:
            d = getattr(v, "inst", None)
            if d is None:
                continue
            ast = getattr(d, "ast", None)
            if ast is not None:
                hits = _resolve(prog, fname, ast, var)
                if hits:
                    return hits[0][1]
            elif hasattr(d, "incoming"):
                stack.append(d)
    u = f"{fname}::{var}"
    info = prog.funcs.get(fname)
    return u if info is not None and u in info.regs else None


def _block_entry(prog: Program, fname: str, block: Any) -> int | None:
    info = prog.funcs[fname]
    for lab in getattr(block, "labels", ()):
        if lab in info.labels:
            return info.labels[lab]
    insts = getattr(block, "insts", [])
    if insts:
        pcs = _find_pcs(prog, fname, insts[0].ast)
        if pcs:
            return pcs[0]
    return None


def resolve_claims(prog: Program, uniform_claims: dict[str, Any]) -> Claims:
    claims = Claims()
    for fname, vals in uniform_claims.items():
        names = claims.names.setdefault(fname, set())
        ssa: list[Any] = []
        for v in vals:
            if isinstance(v, str):
                names.add(v)
                continue
            var = getattr(v, "var", None)
            if var is None:
                names.add(str(v))
                continue
            ssa.append(v)
            label = repr(v)
            d = getattr(v, "inst", None)
            ast = getattr(d, "ast", None)
            if fname in prog.funcs and ast is not None:
                hits = _resolve(prog, fname, ast, var)
                for pc, reg in hits:
                    claims.writes.setdefault(pc, {})[reg] = (var, label)
                if hits:
                    continue
            elif fname in prog.funcs and d is not None and hasattr(d, "incoming"):
                pc0 = _block_entry(prog, fname, d.block)
                reg0 = _register_of_phi(prog, fname, d)
                if pc0 is not None and reg0 is not None:
                    claims.joins.setdefault(pc0, []).append((reg0, var, label))
                    continue
            names.add(var)
        if fname in prog.funcs:
            _name_reads(prog, fname, names, claims)
            _ssa_reads(prog, fname, ssa, claims)
    return claims


def _name_reads(prog: Program, fname: str, names: set[str], claims: Claims) -> None:
    """Read checks of register-name claims: every instruction of ``fname`` reading one."""
    if not names:
        return
    info = prog.funcs[fname]
    for pc in range(info.start, info.end):
        for r in dict.fromkeys(x.name for x in use_regs(prog.instrs[pc])):
            short = r.split("::", 1)[1] if "::" in r else r
            if short in names or short.split("#", 1)[0] in names:
                claims.reads.setdefault(pc, []).append((r, short, ""))


def _blocks_of(values: list[Any]) -> list[Any]:
    """Every block connected to the blocks of ``values`` (one function's CFG)."""
    seen: dict[int, Any] = {}
    stack = [b for v in values if (b := getattr(v, "block", None)) is not None]
    while stack:
        b = stack.pop()
        if id(b) in seen:
            continue
        seen[id(b)] = b
        stack.extend(getattr(b, "succs", ()))
        stack.extend(getattr(b, "preds", ()))
    return sorted(seen.values(), key=lambda b: b.index)


def _ssa_reads(prog: Program, fname: str, values: list[Any], claims: Claims) -> None:
    """Read checks of SSA claims: every IR instruction that reads a claimed value,
    mapped to its pc and the interpreter register holding the value there."""
    if not values:
        return
    claimed = {id(v): v for v in values}
    for b in _blocks_of(values):
        for inst in b.insts:
            for u in inst.operand_values():
                if id(u) not in claimed:
                    continue
                for pc, reg in _resolve(prog, fname, inst.ast, u.var):
                    entry = (reg, u.var, repr(u))
                    if entry not in claims.reads.get(pc, []):
                        claims.reads.setdefault(pc, []).append(entry)
