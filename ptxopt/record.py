"""Records written by hand: slotted classes with the behaviour of dataclasses (a
frozen one: equal by class and compared fields, hashable, read-only; a mutable one:
compared by identity), without generating their methods at import.  They are used
by the modules every command imports (the AST, the opcode table), where generating
the methods of some thirty dataclasses took a quarter of the start-up time."""

from __future__ import annotations

from operator import attrgetter

set_field = object.__setattr__  # how a Record's ``__init__`` sets its fields
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any, ClassVar, TypeVar

    R = TypeVar("R")  # a Record, a Node or a class of ptxopt.ptx.nodes


def _slots(node: object) -> tuple[str, ...]:
    """The fields of ``node``: its class's ``__slots__``, or, for a class compiled as
    a native class (which has none), the attributes mypyc lists for it."""
    cls = type(node)
    slots: tuple[str, ...] | None = getattr(cls, "__slots__", None)
    if slots is None:
        slots = getattr(cls, "__mypyc_attrs__")  # noqa: B009
    return slots


class Record:
    """An immutable record: equal when of the same class with equal compared fields
    (``_compare``, default: every slot), hashable, read-only after ``__init__``
    (which sets its slots with :data:`set_field`), picklable and copyable."""

    __slots__ = ()
    _compare: ClassVar[tuple[str, ...]] = ()  # the fields equality and hash look at
    _key: ClassVar[Any]

    def __init_subclass__(cls) -> None:
        names = cls.__dict__.get("_compare", cls.__slots__)
        cls._compare = tuple(names)
        cls._key = attrgetter(*cls._compare) if names else staticmethod(lambda _node: ())

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key(self) == self._key(other)  # type: ignore[no-any-return]

    def __hash__(self) -> int:
        return hash(self._key(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in _slots(self))
        return f"{type(self).__name__}({fields})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __getstate__(self) -> tuple[object, ...]:
        return tuple(getattr(self, n) for n in _slots(self))

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for n, v in zip(_slots(self), state, strict=True):
            set_field(self, n, v)


class Node:
    """A mutable record: compared by identity, printed with its fields."""

    __slots__ = ()

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in _slots(self))
        return f"{type(self).__name__}({fields})"


def replace(obj: R, **changes: object) -> R:
    """A copy of the record ``obj`` with ``changes`` (as ``dataclasses.replace``:
    every ``__init__`` parameter of a record is named after its slot)."""
    fields = {n: getattr(obj, n) for n in _slots(obj)}
    fields.update(changes)
    return type(obj)(**fields)
