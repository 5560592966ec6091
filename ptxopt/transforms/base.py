"""The shape every transformation pass has.

A pass is a small class: a kebab-case ``name`` (its module carries the same name in
snake_case), an optional ptxas ``phase`` number, ``knobs`` (name -> default value),
``preserves`` (the analyses still valid after it changed something), and
``run(func, am) -> changed``.
Passes register themselves in :data:`REGISTRY` with :func:`register`.
"""

from __future__ import annotations

from typing import ClassVar

from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Func


class FunctionPass:
    name: ClassVar[str] = ""
    phase: ClassVar[int | None] = None
    description: ClassVar[str] = ""
    # Analyses still valid after the pass changed something.  None: none are.
    preserves: ClassVar[frozenset[type] | None] = None
    knobs: ClassVar[dict[str, object]] = {}

    def __init__(self, **options: object) -> None:
        unknown = set(options) - set(self.knobs)
        if unknown:
            raise ValueError(f"pass '{self.name}' has no knob {sorted(unknown)[0]!r}")
        self.options = {**self.knobs, **options}

    def run(self, func: Func, am: AnalysisManager) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError


REGISTRY: dict[str, type[FunctionPass]] = {}


def register(cls: type[FunctionPass]) -> type[FunctionPass]:
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    REGISTRY[cls.name] = cls
    return cls
