"""Reference liveness: round-robin set iteration until nothing changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def naive_liveness(
    succs: Sequence[Sequence[int]],
    uses: Sequence[set[int]],
    defs: Sequence[set[int]],
    phi_defs: Sequence[set[int]],
    phi_uses: Mapping[tuple[int, int], set[int]],
) -> tuple[list[set[int]], list[set[int]]]:
    n = len(succs)
    live_in: list[set[int]] = [set() for _ in range(n)]
    live_out: list[set[int]] = [set() for _ in range(n)]
    changed = True
    while changed:
        changed = False
        for b in range(n):
            out: set[int] = set()
            for s in succs[b]:
                out |= live_in[s] - phi_defs[s]
                out |= phi_uses.get((b, s), set())
            inn = phi_defs[b] | uses[b] | (out - defs[b])
            if out != live_out[b] or inn != live_in[b]:
                live_out[b], live_in[b] = out, inn
                changed = True
    return live_in, live_out
