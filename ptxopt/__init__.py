"""ptxopt: a warp-aware PTX middle-end.

``ptxopt.optimize(ptx, passes=..., knobs=..., arch=...)``, ``ptxopt.analyze(ptx)`` and
``ptxopt.explain(ptx, reg)`` (:mod:`ptxopt.api`) and ``ptxopt.specialize(ptx, kernel,
values)`` (:mod:`ptxopt.specialization`) are loaded on first use, so that
``import ptxopt`` stays cheap for the command-line tools.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

__version__ = "0.1.0"
__all__ = ["__version__", "analyze", "explain", "optimize", "specialize"]

if TYPE_CHECKING:
    from typing import Any

    from ptxopt.api import analyze, explain, optimize
    from ptxopt.specialization import specialize


def __getattr__(name: str) -> Any:
    if name in ("optimize", "analyze", "explain"):
        from ptxopt import api

        return getattr(api, name)
    if name == "specialize":
        from ptxopt.specialization import specialize

        return specialize
    raise AttributeError(f"module 'ptxopt' has no attribute '{name}'")
