"""The shape every transformation pass has.

A pass is a small class: a kebab-case ``name`` (its module carries the same name in
snake_case), an optional ptxas ``phase`` number, ``knobs`` (a tuple of
:class:`~ptxopt.knobs.Knob`, the spec's names and defaults), ``preserves`` (the
analyses still valid after it changed something), and ``run(func, am) -> changed``.
Passes register themselves in :data:`REGISTRY` with :func:`register`.

The pipeline hands each instance the knob values (``self.options``, defaults filled
in), the module being compiled (``self.module``, for the target architecture and
module-level facts) and a counter for ``--stats`` (``self.stats``: what the pass did,
e.g. ``copies propagated``).  A pass that takes decisions a user may question (which
loop it narrowed, which atomic it left alone) also writes one line per decision with
:meth:`FunctionPass.explain`; ``ptxopt opt --explain`` prints them.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, ClassVar

from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Func
from ptxopt.knobs import Knob
from ptxopt.record import replace

if TYPE_CHECKING:
    from ptxopt.ir.core import IRModule


class FunctionPass:
    name: ClassVar[str] = ""
    phase: ClassVar[int | None] = None
    description: ClassVar[str] = ""
    # Analyses still valid after the pass changed something.  None: none are.
    preserves: ClassVar[frozenset[type] | None] = None
    knobs: ClassVar[tuple[Knob, ...]] = ()
    # A run that changes nothing is a fixed point: with the same knobs, a later
    # placement on an unchanged module would change nothing either, and is skipped.
    idempotent: ClassVar[bool] = False
    # The pass never changes the IR: what it finds reaches the user only through its
    # counters and notes (``--stats``, ``--explain``, reports).  A run whose caller
    # reads neither (the drop-in, the Triton hook, plain ``ptxopt opt``) skips it.
    report_only: ClassVar[bool] = False

    def __init__(self, **options: object) -> None:
        declared = {k.name: k for k in self.knobs}
        unknown = set(options) - set(declared)
        if unknown:
            raise ValueError(f"pass '{self.name}' has no knob {sorted(unknown)[0]!r}")
        self.options: dict[str, object] = {k.name: k.default for k in self.knobs}
        self.options.update(options)
        self.module: IRModule | None = None
        # whether the caller reads this run's counters and notes (set by the pipeline)
        self.reports = True
        self.stats: Counter[str] = Counter()
        self.notes: list[str] = []

    def knob(self, name: str) -> object:
        """The value of one of this pass's knobs."""
        return self.options[name]

    def explain(self, func: Func, text: str) -> None:
        """Record one decision about ``func`` (a line of ``--explain``)."""
        self.notes.append(f"{func.name}: {text}")

    @property
    def arch(self) -> str | None:
        """The target (``sm_90a``) of the module being compiled, if known."""
        return self.module.arch if self.module is not None else None

    def run(self, func: Func, am: AnalysisManager) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError


REGISTRY: dict[str, type[FunctionPass]] = {}


def register(cls: type[FunctionPass]) -> type[FunctionPass]:
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    # a knob declared by a pass is owned by it unless it says otherwise
    cls.knobs = tuple(k if k.owner else replace(k, owner=cls.name) for k in cls.knobs)
    REGISTRY[cls.name] = cls
    return cls
