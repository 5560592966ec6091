"""Analysis manager: cached analysis results, invalidated by what a pass preserves.

Modelled on LLVM's new pass manager (``AnalysisManager`` / ``PreservedAnalyses``): an analysis
is a class with ``compute(fn, am)`` returning an instance of that class; ``am.get(Cls, fn)``
computes it on first request and returns the cached instance afterwards; after a pass has run,
``am.invalidate(fn, preserved)`` drops every cached result for ``fn`` whose class is not in
``preserved``.  An analysis may ask ``am`` for the analyses it builds on.

The manager knows nothing about the IR: ``fn`` is any object, keyed by identity.  The cache
keeps a reference to ``fn`` next to its results, so an ``id`` cannot be reused by another
object while results for it are cached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Self, TypeVar


class Analysis(Protocol):
    """What ``AnalysisManager.get`` needs from an analysis class."""

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> Self: ...


A = TypeVar("A", bound=Analysis)


class _PreserveAll(frozenset[type]):
    """A preserved-set that contains every analysis class."""

    __slots__ = ()

    def __contains__(self, item: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "PRESERVE_ALL"


PRESERVE_ALL: frozenset[type] = _PreserveAll()
"""Pass result meaning "nothing changed that any analysis depends on"."""

PRESERVE_NONE: frozenset[type] = frozenset()
"""Pass result meaning "every cached analysis of the function is stale"."""


class AnalysisCycleError(RuntimeError):
    """An analysis (indirectly) asked for itself while being computed."""


@dataclass(slots=True)
class AnalysisStats:
    """How often results were computed, served from the cache, and dropped."""

    computed: int = 0
    hits: int = 0
    invalidated: int = 0


@dataclass(slots=True)
class _Entry:
    fn: object
    results: dict[type, object] = field(default_factory=dict)


class AnalysisManager:
    """Per-function cache of analysis results."""

    __slots__ = ("_cache", "_active", "stats", "ir_version", "changes", "memo")

    def __init__(self) -> None:
        self._cache: dict[int, _Entry] = {}
        self._active: list[tuple[type, int]] = []
        self.stats = AnalysisStats()
        # Set by the pass pipeline while it runs: a number that changes (to one never
        # used before) whenever a pass reports a change to any function; ``None`` when
        # no one tracks changes.  An analysis recomputed "from scratch" on request may
        # keep a result stamped with the current number (nothing changed since).
        self.ir_version: int | None = None
        # Also kept by the pipeline while it runs (empty otherwise): how many changes
        # passes reported per function (by ``id``), and what a pass noted for its later
        # runs in the same pipeline run (keyed by the pass).
        self.changes: dict[int, int] = {}
        self.memo: dict[object, object] = {}

    def get(self, cls: type[A], fn: object) -> A:
        """The result of analysis ``cls`` on ``fn``, computed now if not cached."""
        entry = self._cache.get(id(fn))
        if entry is not None:
            hit = entry.results.get(cls)
            if hit is not None:
                self.stats.hits += 1
                return hit  # type: ignore[return-value]
        result = self.compute_fresh(cls, fn)
        entry = self._cache.get(id(fn))
        if entry is None:
            entry = self._cache[id(fn)] = _Entry(fn)
        entry.results[cls] = result
        return result

    def compute_fresh(self, cls: type[A], fn: object) -> A:
        """Compute ``cls`` on ``fn`` without consulting or filling the cache for ``cls``
        (its dependencies still come from the cache).  Used to verify preserved results."""
        key = (cls, id(fn))
        if key in self._active:
            chain = " -> ".join(c.__name__ for c, _ in self._active)
            raise AnalysisCycleError(f"analysis cycle: {chain} -> {cls.__name__}")
        self._active.append(key)
        try:
            result = cls.compute(fn, self)
        finally:
            self._active.pop()
        self.stats.computed += 1
        return result

    def cached(self, cls: type[A], fn: object) -> A | None:
        """The cached result, or ``None`` (never computes)."""
        entry = self._cache.get(id(fn))
        if entry is None:
            return None
        return entry.results.get(cls)  # type: ignore[return-value]

    def is_cached(self, cls: type, fn: object) -> bool:
        entry = self._cache.get(id(fn))
        return entry is not None and cls in entry.results

    def invalidate(self, fn: object, preserved: frozenset[type] | None = PRESERVE_NONE) -> None:
        """Drop ``fn``'s cached results except those whose class is in ``preserved``
        (``None`` means :data:`PRESERVE_NONE`; :data:`PRESERVE_ALL` keeps everything)."""
        entry = self._cache.get(id(fn))
        if entry is None:
            return
        if preserved is None:
            preserved = PRESERVE_NONE
        stale = [cls for cls in entry.results if cls not in preserved]
        for cls in stale:
            del entry.results[cls]
        self.stats.invalidated += len(stale)
        if not entry.results:
            del self._cache[id(fn)]

    def forget(self, fn: object) -> None:
        """Drop everything about ``fn`` (for example when the function is deleted)."""
        entry = self._cache.pop(id(fn), None)
        if entry is not None:
            self.stats.invalidated += len(entry.results)

    def clear(self) -> None:
        """Drop every cached result of every function."""
        for entry in self._cache.values():
            self.stats.invalidated += len(entry.results)
        self._cache.clear()

    def cached_analyses(self, fn: object) -> list[type]:
        """Classes with a cached result for ``fn``, sorted by name (deterministic)."""
        entry = self._cache.get(id(fn))
        if entry is None:
            return []
        return sorted(entry.results, key=lambda c: (c.__module__, c.__qualname__))
