"""Sequentialize a parallel copy (Boissinot et al., "Revisiting Out-of-SSA
Translation for Correctness, Code Quality, and Efficiency", CGO 2009, Algorithm 1).

All copies of a parallel copy read their sources before any destination is
written.  Copies whose destination is no other copy's pending source are emitted
first; what remains are cycles (the swap problem), each broken with one
temporary register.
"""

from __future__ import annotations

from collections.abc import Callable

from ptxopt.ptx.ast import Imm

Copy = tuple[str, "str | Imm", str]


def sequentialize(copies: list[Copy], temp: Callable[[str], str]) -> list[Copy]:
    """Order ``copies`` (``dst <- src`` of type ``t``) so that executing them one
    by one has the parallel semantics.  ``temp(type)`` returns a fresh register."""
    out: list[Copy] = []
    pending: dict[str, tuple[str | Imm, str]] = {}
    for dst, src, t in copies:
        if src == dst:
            continue
        if dst in pending:
            raise ValueError(f"parallel copy writes '{dst}' twice")
        pending[dst] = (src, t)
    # location[x]: where the value originally in register x currently lives
    location: dict[str, str] = {}
    readers: dict[str, int] = {}
    for _dst, (src, _t) in pending.items():
        if isinstance(src, str):
            location[src] = src
            readers[src] = readers.get(src, 0) + 1
    ready = [d for d in pending if readers.get(d, 0) == 0]
    ready.sort()
    while pending:
        while ready:
            d = ready.pop()
            src, t = pending.pop(d)
            if isinstance(src, str):
                cur = location[src]
                out.append((d, cur, t))
                readers[src] -= 1
                if readers[src] == 0 and src in pending and src not in ready:
                    ready.append(src)
            else:
                out.append((d, src, t))
        if pending:
            # only cycles remain: save one destination's current value in a temp
            d = min(pending)
            _src, t = pending[d]
            tmp = temp(t)
            out.append((tmp, d, t))
            location[d] = tmp
            readers[d] = 0
            ready.append(d)
    return out
