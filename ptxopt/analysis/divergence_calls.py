"""Inter-procedural bookkeeping of the varying propagation (spec 01, "Inter-Procedural Walk").

* :func:`fnv1a_be` is the 32-bit FNV-1a hash over the four bytes of a 32-bit key taken
  most-significant byte first (offset basis ``0x811C9DC5``, prime ``0x01000193``) - the
  byte order ptxas uses, which differs from stock FNV-1a over a little-endian word.
* :class:`CalleeTable` maps a callee (its index in the module) to its
  :class:`CalleeState`: one varying bit per parameter and per return value.  It is an
  open hash table with chaining whose bucket is ``fnv1a_be(key) & (size - 1)``; bits only
  ever go from uniform to varying.
* :func:`call_sites` decodes the calls of a function: the callee, and where each argument
  and result lives (a register, or a ``.param`` symbol written by ``st.param`` before the
  call / read by ``ld.param`` after it, the way nvcc and LLVM pass them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt.ir.core import Func, Inst, Value
from ptxopt.ptx.ast import Addr, Imm, Operand, ParenList, Reg, Sym

FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193


def fnv1a_be(key: int) -> int:
    """FNV-1a over the bytes of the 32-bit ``key``, most significant byte first."""
    h = FNV_OFFSET
    for shift in (24, 16, 8, 0):
        h = ((h ^ ((key >> shift) & 0xFF)) * FNV_PRIME) & 0xFFFFFFFF
    return h


@dataclass(slots=True)
class CalleeState:
    """Varying bits of one callee's parameters and return values."""

    key: int
    name: str
    params: list[bool]
    rets: list[bool]


class CalleeTable:
    """Callee index -> :class:`CalleeState`, hashed with :func:`fnv1a_be`."""

    __slots__ = ("_buckets", "_count")

    def __init__(self, size: int = 16) -> None:
        n = 1
        while n < size:
            n <<= 1
        self._buckets: list[list[CalleeState]] = [[] for _ in range(n)]
        self._count = 0

    def bucket_of(self, key: int) -> int:
        return fnv1a_be(key) & (len(self._buckets) - 1)

    def get(self, key: int) -> CalleeState | None:
        for st in self._buckets[self.bucket_of(key)]:
            if st.key == key:
                return st
        return None

    def insert(self, state: CalleeState) -> None:
        if self.get(state.key) is not None:
            raise KeyError(state.key)
        if self._count + 1 > len(self._buckets):
            old = [s for b in self._buckets for s in b]
            self._buckets = [[] for _ in range(2 * len(self._buckets))]
            for s in old:
                self._buckets[self.bucket_of(s.key)].append(s)
        self._buckets[self.bucket_of(state.key)].append(state)
        self._count += 1

    def states(self) -> list[CalleeState]:
        """Every state, by key (deterministic)."""
        return sorted((s for b in self._buckets for s in b), key=lambda s: s.key)

    def __len__(self) -> int:
        return self._count


@dataclass(slots=True)
class CallSite:
    """One ``call``: ``callee`` is the target name (``None``: indirect through a register).
    ``args[k]``/``rets[k]`` are a :class:`Value` (``.reg`` passing), a ``.param`` symbol
    name, or ``None`` (an immediate argument / a sink)."""

    inst: Inst
    callee: str | None
    args: list[Value | str | None] = field(default_factory=list)
    rets: list[Value | str | None] = field(default_factory=list)


def _slot_items(op: Operand) -> list[Operand]:
    return list(op.items) if isinstance(op, ParenList) else [op]


def call_sites(func: Func) -> list[CallSite]:
    """Every call of ``func`` in block order."""
    out: list[CallSite] = []
    for b in func.blocks:
        for inst in b.insts:
            if inst.info is None or inst.info.name != "call":
                continue
            ops = inst.ast.operands
            has_rets = bool(ops) and isinstance(ops[0], ParenList)
            k = 1 if has_rets else 0
            target = ops[k] if k < len(ops) else None
            uses = iter(inst.uses)
            defs = iter(inst.defs)
            site = CallSite(inst, target.name if isinstance(target, Sym) else None)
            if has_rets:
                for item in _slot_items(ops[0]):
                    if isinstance(item, Reg):
                        site.rets.append(next(defs, None))
                    elif isinstance(item, Sym):
                        site.rets.append(item.name)
                    else:
                        site.rets.append(None)
            if isinstance(target, Reg):
                next(uses, None)  # the indirect target register
            if k + 1 < len(ops) and isinstance(ops[k + 1], ParenList):
                for item in _slot_items(ops[k + 1]):
                    if isinstance(item, Reg):
                        u = next(uses, None)
                        site.args.append(u if isinstance(u, Value) else None)
                    elif isinstance(item, Sym):
                        site.args.append(item.name)
                    elif isinstance(item, Imm):
                        site.args.append(None)
                    else:
                        site.args.append(None)
            out.append(site)
    return out


def param_symbol(inst: Inst) -> str | None:
    """The ``.param`` symbol a ``ld.param``/``st.param`` addresses directly, else ``None``."""
    info = inst.info
    if info is None or info.space not in (".param", ".param::func", ".param::entry"):
        return None
    for k in info.addrs:
        ops = inst.ast.operands
        if k < len(ops):
            a = ops[k]
            if isinstance(a, Addr) and isinstance(a.base, Sym):
                return a.base.name
    return None
