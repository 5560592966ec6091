"""Def-use chains of SSA values.

``users[value id]`` lists every instruction or phi that reads the value, in block
order (an instruction that reads a value twice appears once).  Built in one pass
over the function; cached by the analysis manager like the CFG analyses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ptxopt.ir.core import Func, Inst, Phi, Value

if TYPE_CHECKING:
    from ptxopt.analysis.manager import AnalysisManager


class DefUse:
    def __init__(self, func: Func) -> None:
        users: dict[int, list[Inst | Phi]] = {}
        for b in func.blocks:
            for phi in b.phis:
                seen: set[int] = set()
                for v in phi.incoming:
                    if v.id not in seen:
                        seen.add(v.id)
                        users.setdefault(v.id, []).append(phi)
            for inst in b.insts:
                seen = set()
                for v in inst.operand_values():
                    if v.id not in seen:
                        seen.add(v.id)
                        users.setdefault(v.id, []).append(inst)
        self.users = users

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> DefUse:
        assert isinstance(fn, Func)
        return cls(fn)

    def uses_of(self, v: Value) -> list[Inst | Phi]:
        return self.users.get(v.id, [])

    def is_dead(self, v: Value) -> bool:
        return v.id not in self.users
