"""Live variables: backward dataflow to a fixed point over Python-int bitsets.

The classic equations (Aho, Lam, Sethi, Ullman, *Compilers* 2nd ed., section 9.2.5), extended
for SSA phis as in the SSA book (Rastello and Bouchez Tichadou eds., *SSA-based Compiler
Design*, chapter 9, "Liveness", the data-flow formulation)::

    live_in[b]  = phi_defs[b] | uses[b] | (live_out[b] & ~defs[b])
    live_out[b] = OR over successors s of ((live_in[s] & ~phi_defs[s]) | phi_uses[(b, s)])

``uses[b]``: values read by b's non-phi instructions before any non-phi definition in b
(upward exposed; may include b's own phi results); ``defs[b]``: values defined by b's non-phi
instructions; ``phi_defs[b]``: values defined by b's phis (they count as live on entry to b,
being defined on the incoming edges, but do not flow to b's predecessors);
``phi_uses[(p, s)]``: values the phis of ``s`` read on the edge from ``p`` (live out of ``p``,
not live into ``s``).  Without phis this is plain liveness.

Solved by a worklist seeded in postorder (reachable nodes, then the unreachable ones by index),
re-queuing a block's predecessors when its ``live_in`` grows.  Sets only grow, so the fixed
point is reached after at most ``n + E * (V + 1)`` block evaluations (``V`` the number of
distinct values); that bound, or a caller's smaller ``budget``, is enforced and exceeding it
raises :class:`LivenessBudgetExceeded` instead of hanging.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

from ptxopt.analysis.errors import LivenessBudgetExceeded
from ptxopt.analysis.graph import Succs, preds_of
from ptxopt.analysis.rpo import postorder
from ptxopt.record import Record, set_field


class Liveness(Record):
    """Per-block live-in / live-out bitsets and the number of block evaluations it took."""

    __slots__ = ("live_in", "live_out", "evaluations")
    live_in: list[int]
    live_out: list[int]
    evaluations: int

    def __init__(self, live_in: list[int], live_out: list[int], evaluations: int) -> None:
        set_field(self, "live_in", live_in)
        set_field(self, "live_out", live_out)
        set_field(self, "evaluations", evaluations)

    def live_in_set(self, b: int) -> list[int]:
        return bits_of(self.live_in[b])

    def live_out_set(self, b: int) -> list[int]:
        return bits_of(self.live_out[b])


def bits_of(x: int) -> list[int]:
    """Indices of the set bits of ``x``, ascending."""
    out = []
    while x:
        low = x & -x
        out.append(low.bit_length() - 1)
        x ^= low
    return out


def liveness(
    succs: Succs,
    uses: Sequence[int],
    defs: Sequence[int],
    *,
    phi_defs: Sequence[int] | None = None,
    phi_uses: Mapping[tuple[int, int], int] | None = None,
    entry: int = 0,
    preds: Sequence[Sequence[int]] | None = None,
    budget: int | None = None,
) -> Liveness:
    """Solve liveness; see the module docstring for the meaning of each input."""
    n = len(succs)
    if len(uses) != n or len(defs) != n or (phi_defs is not None and len(phi_defs) != n):
        raise ValueError("uses, defs and phi_defs need one bitset per block")
    if preds is None:
        preds = preds_of(succs)
    pdefs: Sequence[int] = phi_defs if phi_defs is not None else [0] * n
    out_extra = [0] * n  # values read by successors' phis on b's out-edges
    if phi_uses:
        for (p, _s), bits in phi_uses.items():
            out_extra[p] |= bits
    kill = [~d for d in defs]
    pass_up = [~d for d in pdefs]
    gen = [pdefs[b] | uses[b] for b in range(n)]

    if budget is None:
        universe = 0
        for b in range(n):
            universe |= uses[b] | defs[b] | pdefs[b] | out_extra[b]
        edges = sum(len(s) for s in succs)
        budget = n + edges * (universe.bit_count() + 1)

    order = postorder(succs, entry) if n else []
    if len(order) < n:
        seen = bytearray(n)
        for b in order:
            seen[b] = 1
        order.extend(b for b in range(n) if not seen[b])
    live_in = list(gen)
    live_out = [0] * n
    queued = bytearray(b"\x01") * n
    work = deque(order)
    evaluations = 0
    while work:
        b = work.popleft()
        queued[b] = 0
        evaluations += 1
        if evaluations > budget:
            raise LivenessBudgetExceeded(
                f"liveness did not converge within {budget} block evaluations "
                f"({n} blocks); the inputs are probably inconsistent"
            )
        out = out_extra[b]
        for s in succs[b]:
            out |= live_in[s] & pass_up[s]
        live_out[b] = out
        new_in = gen[b] | (out & kill[b])
        if new_in != live_in[b]:
            live_in[b] = new_in
            for p in preds[b]:
                if not queued[p]:
                    queued[p] = 1
                    work.append(p)
    return Liveness(live_in, live_out, evaluations)
