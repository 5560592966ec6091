"""The Python API: PTX text in, PTX text (or a report) out.

``import ptxopt`` loads nothing but this package's ``__init__``; the functions here
are reached through it lazily (``ptxopt.optimize``), and each imports the parts of
ptxopt it uses when called.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["analyze", "optimize"]


def _knob_items(knobs: Mapping[str, object] | Sequence[str] | None) -> list[str]:
    if knobs is None:
        return []
    if isinstance(knobs, Mapping):
        items = []
        for name, value in knobs.items():
            text = ("1" if value else "0") if isinstance(value, bool) else str(value)
            items.append(f"{name}={text}")
        return items
    return list(knobs)


def _pass_spec(passes: str | Sequence[str] | None) -> str:
    if passes is None:
        return "default"
    if isinstance(passes, str):
        return passes
    return ",".join(passes) or "none"


def optimize(
    ptx: str,
    passes: str | Sequence[str] | None = "default",
    *,
    knobs: Mapping[str, object] | Sequence[str] | None = None,
    arch: str | None = None,
    verify_each: bool = False,
    stats: dict[str, Counter[str]] | None = None,
    filename: str = "<ptx>",
) -> str:
    """Optimize PTX text and return the new PTX text.

    ``passes``: ``"default"`` (the phase table, as ``ptxopt opt -O``), ``"none"``
    (lift and lower only), a comma-separated string or a list of pass names and
    placements (``"general-optimize@29"``).  ``knobs``: ``{"Name": value}`` or
    ``["Name=value"]`` with the spec's knob names (``ptxopt passes`` lists them).
    ``arch``: the target for decisions that depend on it (default: the file's
    ``.target``).  ``stats``: a dict that receives each pass's counters (without it, the passes
    that only report are skipped: the text is the same).

    Raises ``ptxopt.ptx.ast.PtxError`` for input ptxas would reject and
    ``ValueError`` for an unknown pass or knob or a bad knob value."""
    from ptxopt.driver import optimize as run
    from ptxopt.knobs import parse_assignments
    from ptxopt.pipeline import parse_pipeline

    steps = parse_pipeline(_pass_spec(passes))
    values = parse_assignments(_knob_items(knobs))
    result = run(
        ptx,
        filename,
        steps,
        arch=arch,
        knobs=values,
        verify_each=verify_each,
        reports=stats is not None,
        release=True,
    )
    if stats is not None:
        for label, counts in result.report.stats.items():
            stats.setdefault(label, Counter()).update(counts)
    return result.text


def analyze(ptx: str, *, filename: str = "<ptx>") -> dict[str, Any]:
    """The divergence report of PTX text, as ``ptxopt analyze --json`` prints it: per
    function, each register ``"uniform"`` or ``"varying"`` (with the reason), each
    conditional branch uniform or divergent, and a summary (the schema is in
    :mod:`ptxopt.report.divergence_report`)."""
    from ptxopt.report.analyze_cli import analyze_text

    return analyze_text(ptx, filename)[2]


def explain(ptx: str, register: str, *, filename: str = "<ptx>") -> str:
    """Why ``register`` (``"%r5"`` or ``"func:%r5"``) is varying: the chain of values
    back to a divergence root, one line each."""
    from ptxopt.report.analyze_cli import analyze_text
    from ptxopt.report.divergence_report import explain as chain

    mod, md, _ = analyze_text(ptx, filename)
    return chain(mod, md, register)
