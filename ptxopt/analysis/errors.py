"""Exceptions of the analyses that the compiled build compiles (:mod:`ptxopt.accel`):
a compiled module cannot define a subclass of a built-in exception, so they live here."""

from __future__ import annotations


class LivenessBudgetExceeded(RuntimeError):
    """The liveness fixed point did not settle within its evaluation budget."""
