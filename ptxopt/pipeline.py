"""The pass pipeline: which passes run, in what order, with verification and timing.

Passes are named as in ``-p`` (``-p none`` lifts and lowers only).  Each pass runs
on every function of the module; after a pass reports a change, the analyses it
does not preserve are invalidated.  ``verify_each`` runs the IR verifier after
every pass; ``time_passes`` records wall time per pass (lifting and lowering
included) in the returned :class:`PipelineReport`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ptxopt.analysis.divergence import bind_module
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Func, IRModule
from ptxopt.ir.dump import dump_module
from ptxopt.ir.verify import VerifyError, verify_function
from ptxopt.transforms.base import REGISTRY, FunctionPass

# Passes run when no -p is given.  Transformations join it as they are verified
# by execution; analyses run on demand.
DEFAULT_PIPELINE: list[str] = []


def _load_passes() -> None:
    """Import the modules that register passes."""
    import importlib
    import pkgutil

    import ptxopt.transforms as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name != "base":
            importlib.import_module(f"ptxopt.transforms.{info.name}")


def available_passes() -> dict[str, type[FunctionPass]]:
    _load_passes()
    return dict(sorted(REGISTRY.items()))


def parse_pipeline(spec: str | None) -> list[str]:
    """``None`` → the default pipeline; ``"none"`` → no passes; else a comma list."""
    if spec is None:
        return list(DEFAULT_PIPELINE)
    if spec.strip() in ("none", ""):
        return []
    names = [s.strip() for s in spec.split(",") if s.strip()]
    known = available_passes()
    for n in names:
        if n not in known:
            raise ValueError(f"unknown pass '{n}' (known: {', '.join(known) or 'none'})")
    return names


@dataclass
class PipelineReport:
    times: list[tuple[str, float]] = field(default_factory=list)
    changed: dict[str, int] = field(default_factory=dict)

    def add_time(self, name: str, seconds: float) -> None:
        self.times.append((name, seconds))

    def format_times(self) -> str:
        total = sum(t for _, t in self.times) or 1e-12
        lines = ["===  ptxopt pass timing  ===", f"{'seconds':>10} {'%':>6}  name"]
        for name, t in self.times:
            lines.append(f"{t:10.4f} {100 * t / total:6.1f}  {name}")
        lines.append(f"{sum(t for _, t in self.times):10.4f} {100.0:6.1f}  total")
        return "\n".join(lines)


def _same(a: object, b: object) -> bool | None:
    """Do two results of one analysis agree?  ``None``: the analysis cannot tell."""
    same_as = getattr(a, "same_as", None)
    if callable(same_as):
        return bool(same_as(b))
    if type(a).__eq__ is not object.__eq__:
        return a == b
    return None


def check_preserved(pass_name: str, func: Func, am: AnalysisManager) -> None:
    """Recompute, from scratch, every analysis still cached for ``func`` after a pass
    changed it (those the pass claims to preserve) and compare with the cached one."""
    for cls in am.cached_analyses(func):
        cached: object = am.get(cls, func)
        fresh: object = AnalysisManager().get(cls, func)
        if _same(cached, fresh) is False:
            raise VerifyError(
                func.ast.span,
                f"pass '{pass_name}' claims to preserve {cls.__name__} of '{func.name}', "
                "but recomputing it gives a different result",
            )


def run_pipeline(
    mod: IRModule,
    names: list[str],
    *,
    verify_each: bool = False,
    report: PipelineReport | None = None,
    am: AnalysisManager | None = None,
    options: dict[str, dict[str, object]] | None = None,
    dump_before: frozenset[str] = frozenset(),
    dump_after: frozenset[str] = frozenset(),
    dump: Callable[[str], None] | None = None,
) -> PipelineReport:
    """Run ``names`` over every function of ``mod``.  ``dump_before``/``dump_after``
    name passes (or ``"all"``) around which the SSA IR is written to ``dump``."""
    report = report or PipelineReport()
    am = am or AnalysisManager()
    # analyses that look across calls (divergence) need to know the module
    bind_module(mod)
    classes = available_passes()
    for name in names:
        p = classes[name](**(options or {}).get(name, {}))
        if dump is not None and (name in dump_before or "all" in dump_before):
            dump(f"*** IR before {name} ***\n{dump_module(mod)}")
        t0 = time.perf_counter()
        changed = 0
        for func in mod.funcs:
            if p.run(func, am):
                changed += 1
                am.invalidate(func, p.preserves)
                if verify_each:
                    check_preserved(name, func, am)
            if verify_each:
                verify_function(func)
        report.add_time(name, time.perf_counter() - t0)
        report.changed[name] = changed
        if dump is not None and (name in dump_after or "all" in dump_after):
            dump(f"*** IR after {name} ***\n{dump_module(mod)}")
    return report
