"""What a pipeline run reports: time per step, how many functions each step changed,
each pass's counters (``--stats``) and decisions (``--explain``).  Kept apart from
:mod:`ptxopt.pipeline` so that a run without passes does not import the passes'
machinery."""

from __future__ import annotations

from collections import Counter

from ptxopt.record import Node


class PipelineReport(Node):
    __slots__ = ("times", "changed", "stats", "notes")
    times: list[tuple[str, float]]
    changed: dict[str, int]
    # per step label: the pass's own counters (``copies propagated`` ...)
    stats: dict[str, Counter[str]]
    # per step label: the pass's decisions, a line each (``--explain``)
    notes: dict[str, list[str]]

    def __init__(
        self,
        times: list[tuple[str, float]] | None = None,
        changed: dict[str, int] | None = None,
        stats: dict[str, Counter[str]] | None = None,
        notes: dict[str, list[str]] | None = None,
    ) -> None:
        self.times = [] if times is None else times
        self.changed = {} if changed is None else changed
        self.stats = {} if stats is None else stats
        self.notes = {} if notes is None else notes

    def format_explain(self) -> str:
        lines = ["===  ptxopt decisions  ==="]
        for label, notes in self.notes.items():
            lines.extend(f"{label}: {n}" for n in notes)
        if len(lines) == 1:
            lines.append("  (no pass explained a decision)")
        return "\n".join(lines)

    def format_stats(self) -> str:
        lines = ["===  ptxopt pass statistics  ==="]
        for label, counts in self.stats.items():
            for what, n in sorted(counts.items()):
                lines.append(f"{n:10d}  {label}: {what}")
        if len(lines) == 1:
            lines.append("  (no pass counted anything)")
        return "\n".join(lines)

    def add_time(self, name: str, seconds: float) -> None:
        self.times.append((name, seconds))

    def format_times(self) -> str:
        total = sum(t for _, t in self.times) or 1e-12
        lines = ["===  ptxopt pass timing  ===", f"{'seconds':>10} {'%':>6}  name"]
        for name, t in self.times:
            lines.append(f"{t:10.4f} {100 * t / total:6.1f}  {name}")
        lines.append(f"{sum(t for _, t in self.times):10.4f} {100.0:6.1f}  total")
        return "\n".join(lines)
