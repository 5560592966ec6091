"""The pass pipeline: which passes run, in what order, with knobs, verification,
timing and statistics.

Passes are named as in ``-p`` (``-p none`` lifts and lowers only; ``-p default`` or
no ``-p`` runs the phase table of :mod:`ptxopt.phases`; ``PASS@NN`` names one
placement).  Each pass runs on every function of the module; after a pass reports a
change, the analyses it does not preserve are invalidated.  ``verify_each`` runs
the IR verifier after every pass; the returned :class:`PipelineReport` holds wall
time per step (lifting and lowering included), how many functions each step changed
and each pass's own counters (``--stats``).
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Sequence

from ptxopt.analysis.divergence import bind_module
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Func, IRModule
from ptxopt.ir.dump import dump_module
from ptxopt.ir.verify import VerifyError, verify_function
from ptxopt.knobs import registry as knob_registry
from ptxopt.phases import Step, default_steps, resolve_pass_list
from ptxopt.pipeline_report import PipelineReport
from ptxopt.transforms.base import REGISTRY, FunctionPass

# module versions (AnalysisManager.ir_version): never reused, across pipeline runs too
_VERSIONS = itertools.count(1)


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


def default_pipeline() -> list[Step]:
    """The default pipeline: the phase table's default placements that exist."""
    return default_steps(available_passes())


def parse_pipeline(spec: str | None) -> list[Step]:
    """``None``/``"default"`` → the default pipeline; ``"none"`` → no passes; else a
    comma list of passes or placements (``ValueError`` naming an unknown one)."""
    if spec is not None and spec.strip() in ("none", ""):
        return []  # without importing a single pass
    return resolve_pass_list(spec, available_passes())


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


def _as_steps(items: Sequence[str | Step]) -> list[Step]:
    out: list[Step] = []
    for it in items:
        if isinstance(it, Step):
            out.append(it)
        else:
            out.extend(resolve_pass_list(it, available_passes()))
    return out


def pass_options(cls: type[FunctionPass], knobs: dict[str, object]) -> dict[str, object]:
    """The values of ``cls``'s knobs among ``knobs`` (others are ignored)."""
    mine = {k.name for k in cls.knobs}
    return {k: v for k, v in knobs.items() if k in mine}


def run_pipeline(
    mod: IRModule,
    names: Sequence[str | Step],
    *,
    verify_each: bool = False,
    report: PipelineReport | None = None,
    am: AnalysisManager | None = None,
    knobs: dict[str, object] | None = None,
    dump_before: frozenset[str] = frozenset(),
    dump_after: frozenset[str] = frozenset(),
    dump: Callable[[str], None] | None = None,
    reports: bool = True,
) -> PipelineReport:
    """Run the steps ``names`` (pass names, placements or :class:`Step` objects) over
    every function of ``mod``.  ``knobs`` maps knob names (the spec's) to values;
    each pass receives those it declares, and a step's own knobs override them.
    ``dump_before``/``dump_after`` name passes or placements (or ``"all"``) around
    which the SSA IR is written to ``dump``.  With ``reports`` off, the passes that
    only report (:attr:`FunctionPass.report_only`) are skipped: the caller reads no
    counters or notes, and the IR is the same either way."""
    report = report or PipelineReport()
    if not names and not knobs:
        return report  # nothing to run: no pass is imported
    am = am or AnalysisManager()
    knobs = dict(knobs or {})
    unknown = set(knobs) - set(knob_registry())
    if unknown:
        raise ValueError(f"unknown knob '{sorted(unknown)[0]}'")
    # analyses that look across calls (divergence) need to know the module
    bind_module(mod)
    classes = available_passes()
    # (function, pass, knobs) -> the module version at which that pass last changed
    # nothing there; the version counts every change to any function of the module
    # (the divergence analysis of one function looks at its callees)
    settled: dict[tuple[int, str, str], int] = {}
    version = 0
    # a number for the current state of the module: anything cached in ``am`` from
    # before this run may be stale
    am.ir_version = next(_VERSIONS)
    am.changes.clear()
    am.memo.clear()
    try:
        for step in _as_steps(names):
            cls = classes[step.pass_name]
            if cls.report_only and not reports:
                continue
            p = cls(**pass_options(cls, {**knobs, **step.knobs}))
            p.module = mod
            p.reports = reports
            label = step.label
            wanted = {step.pass_name, label, "all"}
            if dump is not None and wanted & dump_before:
                dump(f"*** IR before {label} ***\n{dump_module(mod)}")
            t0 = time.perf_counter()
            changed = 0
            options = repr(sorted(p.options.items()))
            for func in mod.funcs:
                key = (id(func), step.pass_name, options)
                if cls.idempotent and settled.get(key) == version:
                    continue
                if p.run(func, am):
                    changed += 1
                    version += 1
                    am.ir_version = next(_VERSIONS)
                    am.changes[id(func)] = am.changes.get(id(func), 0) + 1
                    am.invalidate(func, p.preserves)
                    if verify_each:
                        check_preserved(label, func, am)
                elif cls.idempotent:
                    settled[key] = version
                if verify_each:
                    verify_function(func)
            report.add_time(label, time.perf_counter() - t0)
            report.changed[label] = report.changed.get(label, 0) + changed
            if p.stats:
                report.stats.setdefault(label, Counter()).update(p.stats)
            if p.notes:
                report.notes.setdefault(label, []).extend(p.notes)
            if dump is not None and wanted & dump_after:
                dump(f"*** IR after {label} ***\n{dump_module(mod)}")
    finally:
        am.ir_version = None  # changes made outside the pipeline are not tracked
        am.changes.clear()
        am.memo.clear()
    return report
