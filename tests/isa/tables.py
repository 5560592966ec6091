"""Every edge table, by family."""

from __future__ import annotations

import table_bits
import table_carry
import table_convert
import table_float
import table_half
import table_integer
import table_misc
import table_video
from lanes import Case

MODULES = [
    table_integer,
    table_carry,
    table_bits,
    table_float,
    table_half,
    table_convert,
    table_video,
    table_misc,
]


def all_cases() -> list[Case]:
    out: list[Case] = []
    for m in MODULES:
        out.extend(m.cases())
    names = [f"{c.family}:{c.name}" for c in out]
    assert len(names) == len(set(names)), "duplicate case names"
    return out
