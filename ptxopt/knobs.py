"""The knob registry: every tunable the spec names, in one table.

A knob has the spec's name (``CopyPropBudget``, ``EnableGvnCseMode``, ``remat-iv``),
a type, a default, the pass that owns it and the spec file that documents it.  Passes
declare their knobs as :class:`Knob` objects in their ``knobs`` class attribute; the
registry (:func:`registry`) collects them from every registered pass, plus the few
knobs that belong to the driver rather than to one pass (:data:`GLOBAL_KNOBS`).

``--knob Name=Value`` (repeatable), ``ptxopt passes``, the pipeline and the docs all
read this registry; a pass never parses its own options.  :func:`parse_assignments`
turns command-line strings into typed values with clear errors for unknown names
and bad values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ptxopt.record import Record, set_field

__all__ = [
    "GLOBAL_KNOBS",
    "Knob",
    "KnobError",
    "parse_assignments",
    "parse_value",
    "registry",
]


class KnobError(ValueError):
    """An unknown knob or a value the knob does not accept."""


class Knob(Record):
    """One tunable.  ``type`` is ``"int"``, ``"bool"``, ``"float"`` or ``"str"``;
    ``choices`` (if given) lists the accepted values; ``lo``/``hi`` bound an int or
    float.  ``owner`` is the ``-p`` name of the pass that reads it (``""``: the
    driver), ``spec`` the spec file that documents it."""

    __slots__ = ("name", "type", "default", "help", "owner", "spec", "choices", "lo", "hi")
    name: str
    type: str
    default: object
    help: str
    owner: str
    spec: str
    choices: tuple[object, ...]
    lo: float | None
    hi: float | None

    def __init__(
        self,
        name: str,
        type: str,
        default: object,
        help: str = "",
        owner: str = "",
        spec: str = "",
        choices: tuple[object, ...] = (),
        lo: float | None = None,
        hi: float | None = None,
    ) -> None:
        set_field(self, "name", name)
        set_field(self, "type", type)
        set_field(self, "default", default)
        set_field(self, "help", help)
        set_field(self, "owner", owner)
        set_field(self, "spec", spec)
        set_field(self, "choices", choices)
        set_field(self, "lo", lo)
        set_field(self, "hi", hi)

    def describe_range(self) -> str:
        if self.choices:
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.type == "bool":
            return "0/1 (or true/false)"
        if self.lo is not None and self.hi is not None:
            return f"{self.type} in [{self.lo}, {self.hi}]"
        if self.lo is not None:
            return f"{self.type} >= {self.lo}"
        return self.type


_TRUE = frozenset({"1", "true", "on", "yes"})
_FALSE = frozenset({"0", "false", "off", "no"})


def parse_value(knob: Knob, text: str) -> object:
    """Convert ``text`` to ``knob``'s type; :class:`KnobError` if it does not fit."""
    t = text.strip()
    value: object
    try:
        if knob.type == "bool":
            low = t.lower()
            if low in _TRUE:
                value = True
            elif low in _FALSE:
                value = False
            else:
                raise ValueError
        elif knob.type == "int":
            value = int(t, 0)
        elif knob.type == "float":
            value = float(t)
        else:
            value = t
    except ValueError:
        raise KnobError(
            f"knob {knob.name}: '{text}' is not a valid value ({knob.describe_range()})"
        ) from None
    if knob.choices and value not in knob.choices:
        raise KnobError(f"knob {knob.name}: '{text}' is not {knob.describe_range()}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if (knob.lo is not None and value < knob.lo) or (knob.hi is not None and value > knob.hi):
            raise KnobError(f"knob {knob.name}: {text} is out of range ({knob.describe_range()})")
    return value


#: Knobs read by the driver rather than by a single pass.
GLOBAL_KNOBS: tuple[Knob, ...] = (
    Knob(
        "do-cssa",
        "bool",
        True,
        "leave SSA through conventional SSA and coalescing (0: the legacy out-of-SSA,"
        " which splits critical edges and copies at the join)",
        spec="05-cssa.txt",
    ),
    Knob(
        "cssa-coalesce",
        "int",
        2,
        "coalescing aggressiveness: 0 keeps every phi copy; 1 coalesces under the SIMT "
        "condition (a used warp-uniform value never shares a register with lanes merged "
        "at a divergent join); 2 by per-thread interference alone; 3 also coalesces the "
        "program's own register moves",
        spec="05-cssa.txt",
        lo=0,
        hi=3,
    ),
    Knob(
        "cssa-verbosity",
        "int",
        0,
        "1: per-function copy statistics, 2: every coalescing decision, 3: the "
        "conventional-SSA form with its pcp copies",
        spec="05-cssa.txt",
        lo=0,
    ),
    Knob(
        "dump-before-cssa",
        "bool",
        False,
        "print the whole IR module before leaving SSA",
        spec="05-cssa.txt",
    ),
)


def registry() -> dict[str, Knob]:
    """Every knob by name: the driver's and those of every registered pass."""
    from ptxopt.pipeline import available_passes

    out: dict[str, Knob] = {k.name: k for k in GLOBAL_KNOBS}
    for name, cls in available_passes().items():
        for k in cls.knobs:
            prev = out.get(k.name)
            if prev is not None and prev.owner != k.owner and prev.default != k.default:
                raise RuntimeError(
                    f"knob {k.name} declared twice with different defaults "
                    f"({prev.owner or 'driver'} and {name})"
                )
            out.setdefault(k.name, k)
    return out


def parse_assignments(
    items: Iterable[str], known: Mapping[str, Knob] | None = None
) -> dict[str, object]:
    """``["CopyPropBudget=100", "remat-iv=3"]`` -> typed values.  Names are the spec's,
    matched exactly (a case-insensitive match is suggested in the error)."""
    items = list(items)
    if not items:
        return {}  # without importing the passes for their knobs
    known = registry() if known is None else known
    out: dict[str, object] = {}
    for item in items:
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise KnobError(f"--knob expects Name=Value, got '{item}'")
        knob = known.get(name)
        if knob is None:
            near = [k for k in known if k.lower() == name.lower()]
            hint = f" (did you mean {near[0]}?)" if near else " (see 'ptxopt passes')"
            raise KnobError(f"unknown knob '{name}'{hint}")
        out[name] = parse_value(knob, text)
    return out
