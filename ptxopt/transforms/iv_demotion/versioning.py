"""Loop versioning for IV demotion (placeholder, filled in below)."""

from __future__ import annotations

from collections import Counter

from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Func


def version_loops(
    func: Func, am: AnalysisManager, *, level: int, stats: Counter[str], dump: int = 0
) -> int:
    return 0
