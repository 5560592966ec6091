"""Errors raised while simulating PTX."""

from __future__ import annotations

from ptxopt.ptx.ast import PtxError, Span


class SimError(PtxError):
    """A run-time error of the interpreter (bad access, deadlock, unsupported op...).

    Formats as ``file:line:col: error: message`` like every other diagnostic."""

    def __init__(self, span: Span | None, message: str) -> None:
        super().__init__(span, message)
