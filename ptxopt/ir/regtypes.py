"""Register name -> declared type for one function (:attr:`ptxopt.ir.core.Func.reg_types`).

A ``dict`` subclass with its own ``__missing__``, ``__contains__`` and ``get``: it
stays interpreted Python when :mod:`ptxopt.ir.core` is compiled (``ptxopt/accel.py``),
since a compiled subclass of ``dict`` need not route every lookup through them.
"""

from __future__ import annotations

from ptxopt.ptx.parser import enter_range, range_lookup

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import overload
else:

    def overload(f: object) -> object:  # each overload is replaced by the next def
        return f


class RegTypes(dict[str, str]):
    """Register name -> declared type.  A range ``%r<N>`` is stored as its stem and
    count and a name of it is entered on first access, so memory and time follow the
    registers used, never the count declared."""

    def __init__(self, order: list[str]) -> None:
        super().__init__()
        self.order = order
        self.ranges: dict[str, tuple[int, str]] = {}

    def in_range(self, name: str) -> bool:
        return bool(self.ranges) and range_lookup(self.ranges, name) is not None

    def __missing__(self, name: str) -> str:
        t = enter_range(self, self.ranges, self.order, name)
        if t is None:
            raise KeyError(name)
        return t

    def __contains__(self, name: object) -> bool:
        if dict.__contains__(self, name):
            return True
        if not self.ranges or not isinstance(name, str):
            return False
        try:
            self[name]  # enters the name: the next test is one dictionary probe
        except KeyError:
            return False
        return True

    @overload  # type: ignore[override]
    def get(self, name: str) -> str | None: ...
    @overload
    def get(self, name: str, default: str) -> str: ...  # noqa: F811
    @overload
    def get(self, name: str, default: None) -> str | None: ...  # noqa: F811
    def get(self, name: str, default: str | None = None) -> str | None:  # noqa: F811
        try:
            return self[name]
        except KeyError:
            return default
