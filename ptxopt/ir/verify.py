"""IR verifier: CFG consistency, SSA single definition and dominance, register
classes.  Runs after lifting and, with ``--verify-each``, after every pass.

Checks:

* CFG: successor and predecessor lists mirror each other; a terminator is only
  the last instruction of its block; block indices match positions.
* SSA: every value is defined once; every use is dominated by its definition
  (a phi operand by the end of the matching predecessor); every phi has one
  incoming value per predecessor.
* Classes: a guard is a predicate; phi operands have the register class of the
  phi; a value has the class of the register it was lifted from.
"""

from __future__ import annotations

from ptxopt.analysis.dominators import DomTree
from ptxopt.ir.core import CARRY, Func, Value
from ptxopt.ptx.ast import PtxError
from ptxopt.ptx.types import reg_class


class VerifyError(PtxError):
    """The IR broke an invariant (a bug in ptxopt or in a pass)."""


def _cls(t: str) -> str:
    try:
        return reg_class(t)
    except (KeyError, ValueError):
        return t


def verify_function(func: Func) -> None:
    def fail(msg: str) -> VerifyError:
        span = func.ast.span
        return VerifyError(span, f"IR verification failed in '{func.name}': {msg}")

    blocks = func.blocks
    for i, b in enumerate(blocks):
        if b.index != i:
            raise fail(f"block {i} has index {b.index}")
        for s in b.succs:
            if b not in s.preds:
                raise fail(f"edge {b.index}->{s.index} missing from predecessors")
        for p in b.preds:
            if b not in p.succs:
                raise fail(f"edge {p.index}->{b.index} missing from successors")
        for k, inst in enumerate(b.insts):
            if inst.block is not b:
                raise fail(f"instruction '{inst.name}' has a stale block link")
            if inst.is_terminator and k != len(b.insts) - 1:
                raise fail(f"terminator '{inst.name}' in the middle of block {b.index}")
        for phi in b.phis:
            if len(phi.incoming) != len(b.preds):
                raise fail(
                    f"phi {phi.result} has {len(phi.incoming)} operands, block has "
                    f"{len(b.preds)} predecessors"
                )
    dom = DomTree.build(func.cfg_succs(), 0)
    where: dict[int, tuple[int, int]] = {}
    for param in func.params:
        where[param.id] = (0, -2)

    def define(v: Value, bi: int, pos: int) -> None:
        if v.id in where:
            raise fail(f"value {v} defined twice")
        where[v.id] = (bi, pos)

    for b in blocks:
        for phi in b.phis:
            define(phi.result, b.index, -1)
        for k, inst in enumerate(b.insts):
            for d in inst.result_values():
                define(d, b.index, k)

    def check_use(v: Value, bi: int, pos: int, what: str) -> None:
        if v.kind in ("special", "undef"):
            return
        loc = where.get(v.id)
        if loc is None:
            raise fail(f"{what} uses {v}, which is not defined in the function")
        db, dp = loc
        if not dom.reachable(bi):
            return
        if db == bi:
            if dp >= pos:
                raise fail(f"{what} uses {v} before its definition")
        elif not dom.dominates(db, bi):
            raise fail(f"{what} uses {v}, whose definition does not dominate it")

    for b in blocks:
        for k, inst in enumerate(b.insts):
            what = f"'{inst.name}' (block {b.index})"
            for v in inst.operand_values():
                check_use(v, b.index, k, what)
            if inst.pred is not None and inst.pred.type != ".pred":
                raise fail(f"{what} is guarded by non-predicate {inst.pred}")
            for d in inst.defs:
                if d.var != CARRY and d.var in func.reg_types:
                    if _cls(d.type) != _cls(func.reg_types[d.var]):
                        raise fail(f"{what} defines {d} with the wrong register class")
        for phi in b.phis:
            rc = _cls(phi.result.type)
            for j, v in enumerate(phi.incoming):
                if v.kind != "undef" and v.var != CARRY and _cls(v.type) != rc:
                    raise fail(f"phi {phi.result} mixes register classes ({v})")
                check_use(v, b.preds[j].index, len(b.preds[j].insts), f"phi {phi.result}")
