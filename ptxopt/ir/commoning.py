"""Shared machinery of the commoning passes (gvn-cse, reassociate, late-commoning).

* :class:`Users`: def-use lists kept current while values are replaced (a replaced
  value's readers move to its replacement), so no pass rescans the function.
* :func:`common_into`: make every reader of a redundant instruction's results read
  the leader's results instead, then delete the redundant instruction.
* :func:`prune_dead`: delete pure instructions whose results nobody reads any more,
  following operands backwards (a worklist, each instruction removed at most once).
* :class:`ScopedTable`: a hash table with undoable scopes, the dominator-tree walk's
  "values visible here" (entries made in a subtree disappear when the walk leaves it).
* :class:`Edits`: deletions and insertions recorded as they happen and applied to each
  touched block's list once (:meth:`Edits.flush`), so a pass that removes or inserts
  thousands of instructions in one block stays linear.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

from ptxopt.ir.core import Block, Func, Inst, Phi, Value
from ptxopt.ir.edit import replace_uses

__all__ = ["Edits", "ScopedTable", "Users", "common_into", "prune_dead"]


class Edits:
    """Pending block-list edits.  A removed instruction is detached at once
    (``inst.block`` is ``None``: every check in this module treats it as gone); an
    inserted one is attached to its block at once and placed before its anchor when
    :meth:`flush` rebuilds the lists."""

    def __init__(self) -> None:
        self._before: dict[int, list[Inst]] = {}
        self._dirty: dict[int, Block] = {}

    def remove(self, inst: Inst) -> None:
        b = inst.block
        if b is not None:
            self._dirty[b.index] = b
        inst.block = None

    def insert_before(self, anchor: Inst, inst: Inst) -> None:
        b = anchor.block
        assert b is not None
        inst.block = b
        for v in inst.result_values():
            v.block = b
        self._before.setdefault(id(anchor), []).append(inst)
        self._dirty[b.index] = b

    def flush(self) -> None:
        before = self._before
        for b in self._dirty.values():
            out: list[Inst] = []
            for inst in b.insts:
                extra = before.get(id(inst))
                if extra:
                    out.extend(i for i in extra if i.block is b)
                if inst.block is b:
                    out.append(inst)
            b.insts = out
        self._before = {}
        self._dirty = {}


class Users:
    """``of(v)``: the instructions and phis reading ``v`` (may hold stale entries for
    readers that no longer read it; every consumer re-checks)."""

    def __init__(self, func: Func) -> None:
        users: dict[int, list[Inst | Phi]] = {}
        for b in func.blocks:
            for phi in b.phis:
                for v in phi.incoming:
                    users.setdefault(v.id, []).append(phi)
            for inst in b.insts:
                for v in inst.operand_values():
                    users.setdefault(v.id, []).append(inst)
        self.users = users

    def of(self, v: Value) -> list[Inst | Phi]:
        return self.users.get(v.id, [])

    def moved(self, old: Value, new: Value) -> None:
        lst = self.users.pop(old.id, None)
        if lst:
            self.users.setdefault(new.id, []).extend(lst)

    def add(self, inst: Inst) -> None:
        for v in inst.operand_values():
            self.users.setdefault(v.id, []).append(inst)

    def is_used(self, v: Value) -> bool:
        for u in self.users.get(v.id, ()):
            if isinstance(u, Phi):
                if u.block is not None and any(w is v for w in u.incoming):
                    return True
            elif u.block is not None and any(w is v for w in u.operand_values()):
                return True
        return False


def common_into(func: Func, users: Users, cand: Inst, leader: Inst, edits: Edits) -> None:
    """Replace ``cand``'s results by ``leader``'s (same count, same types) and delete
    ``cand``."""
    for d, l in zip(cand.defs, leader.defs, strict=True):
        replace_uses(func, d, l, users.of(d))
        users.moved(d, l)
    edits.remove(cand)


def prune_dead(users: Users, seeds: Iterable[Inst], edits: Edits) -> int:
    """Delete the pure instructions among ``seeds`` whose results are unused, then
    those that become unused; return how many were deleted."""
    work = [s for s in seeds]
    n = 0
    while work:
        inst = work.pop()
        if inst.block is None or inst.info is None or not inst.info.pure or inst.raw:
            continue
        if any(users.is_used(v) for v in inst.result_values()):
            continue
        srcs = [v for v in inst.operand_values() if v.kind == "inst"]
        edits.remove(inst)
        n += 1
        for v in srcs:
            d = v.inst
            if isinstance(d, Inst) and d.block is not None:
                work.append(d)
    return n


K = TypeVar("K")
V = TypeVar("V")
_MISSING = object()


class ScopedTable(Generic[K, V]):
    """``push()`` opens a scope, ``pop()`` undoes every ``set`` made since."""

    def __init__(self) -> None:
        self.data: dict[K, V] = {}
        self._log: list[tuple[K, object]] = []
        self._marks: list[int] = []

    def push(self) -> None:
        self._marks.append(len(self._log))

    def pop(self) -> None:
        mark = self._marks.pop()
        log = self._log
        data = self.data
        while len(log) > mark:
            k, prev = log.pop()
            if prev is _MISSING:
                del data[k]
            else:
                data[k] = prev  # type: ignore[assignment]

    def get(self, key: K) -> V | None:
        return self.data.get(key)

    def set(self, key: K, value: V) -> None:
        self._log.append((key, self.data.get(key, _MISSING)))  # type: ignore[arg-type]
        self.data[key] = value
