"""Liveness of SSA values by path exploration (Appel; Boissinot et al., "Computing
Liveness Sets for SSA-Form Programs", 2011, the per-variable variant).

For each use, walk predecessors upwards from the using block until the defining
block is reached, marking the value live-in / live-out on the way.  A phi operand
is used at the end of the matching predecessor.  Cost is the total size of the
live ranges, so the analysis is linear in the output.
"""

from __future__ import annotations

from ptxopt.ir.core import Func, Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from ptxopt.analysis.manager import AnalysisManager


class SsaLiveness:
    """``live_in[b]`` / ``live_out[b]``: sets of value ids; ``uses[vid]``: list of
    ``(block index, position)`` of ordinary uses (phi uses are recorded as the
    predecessor's end, position ``len(insts)``)."""

    def __init__(self, func: Func) -> None:
        n = len(func.blocks)
        self.live_in: list[set[int]] = [set() for _ in range(n)]
        self.live_out: list[set[int]] = [set() for _ in range(n)]
        self.uses: dict[int, list[tuple[int, int]]] = {}
        live_in = self.live_in
        live_out = self.live_out
        uses = self.uses

        def up_from(v: Value, b: int) -> None:
            """v is live-in at block b (b is not v's defining block)."""
            defb = v.block.index if v.block is not None else -1
            stack = [b]
            while stack:
                x = stack.pop()
                if v.id in live_in[x]:
                    continue
                live_in[x].add(v.id)
                for p in func.blocks[x].preds:
                    pi = p.index
                    live_out[pi].add(v.id)
                    if pi != defb and v.id not in live_in[pi]:
                        stack.append(pi)

        for blk in func.blocks:
            bi = blk.index
            for pos, inst in enumerate(blk.insts):
                for v in inst.operand_values():
                    if v.kind in ("special", "undef"):
                        continue
                    uses.setdefault(v.id, []).append((bi, pos))
                    if v.block is not blk:
                        up_from(v, bi)
            end = len(blk.insts)
            for s in blk.succs:
                j = s.preds.index(blk)
                for phi in s.phis:
                    v = phi.incoming[j]
                    if v.kind in ("special", "undef"):
                        continue
                    uses.setdefault(v.id, []).append((bi, end))
                    live_out[bi].add(v.id)
                    if v.block is not blk:
                        up_from(v, bi)

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> SsaLiveness:
        assert isinstance(fn, Func)
        return cls(fn)

    def live_after(self, v: Value, block: int, pos: int) -> bool:
        """Is ``v`` live just after position ``pos`` of ``block`` (``-1``: after the
        phis)?  ``v`` must be defined before that point."""
        if v.id in self.live_out[block]:
            return True
        for b, p in self.uses.get(v.id, ()):
            if b == block and p > pos:
                return True
        return False
