"""Edge tables: carry chains (PTX ISA 9.0, section 9.7.2) - ``add.cc``, ``addc``,
``sub.cc``, ``subc``, ``mad.cc``, ``madc`` in every mix, carries rippling through
several limbs, checked against a Python model of the condition-code flag.

The flag model (confirmed with ptxas's SASS and on an H100): every instruction of
the chain is one adder ``x + y + cin`` producing the carry out of the type's width;
``sub``/``subc`` feed ``~b`` as ``y``, ``sub.cc`` uses ``cin = 1``, ``add.cc`` and
``mad.cc`` use ``cin = 0``, and ``addc``/``subc``/``madc`` use ``cin = CC.CF``.  So
after ``sub.cc`` the flag is 1 exactly when no borrow occurred (``a >= b``), and
``subc`` subtracts an extra 1 exactly when the flag is 0.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from lanes import Case, make
from refs import wrap

FAMILY = "carry"

# chains: (name, [(opcode, mode)]) applied limb by limb: limb i = op(a_i, b_i)
CHAINS = [
    ("add.cc+addc", ["add.cc", "addc.cc", "addc.cc", "addc"]),
    ("sub.cc+subc", ["sub.cc", "subc.cc", "subc.cc", "subc"]),
    ("sub.cc+addc", ["sub.cc", "addc.cc", "addc.cc", "addc"]),
    ("add.cc+subc", ["add.cc", "subc.cc", "subc.cc", "subc"]),
    ("sub.cc+addc+subc", ["sub.cc", "addc.cc", "subc.cc", "addc"]),
    ("add.cc+subc+addc", ["add.cc", "subc.cc", "addc.cc", "subc"]),
]


def _step(op: str, x: int, y: int, cf: int, bits: int) -> tuple[int, int]:
    """One instruction of the chain: (result, carry out)."""
    m = (1 << bits) - 1
    sub = op.startswith("sub")
    cin = cf if op.startswith(("addc", "subc", "madc")) else (1 if sub else 0)
    total = x + ((~y & m) if sub else y) + cin
    return total & m, total >> bits


def _chain_ref(ops: list[str], bits: int, a: list[int], b: list[int]) -> tuple[list[int], int]:
    cf = 0
    out = []
    for op, x, y in zip(ops, a, b, strict=True):
        r, c = _step(op, x, y, cf, bits)
        out.append(r)
        if op.endswith(".cc") or op in ("add.cc", "sub.cc"):
            cf = c
    return out, cf


def _chain_column(*v: int, ops: list[str], bits: int, n: int, out: int) -> int:
    """Limb ``out`` of the chain's result (``out == n``: the final flag)."""
    limbs, cf = _chain_ref(ops, bits, list(v[:n]), list(v[n:]))
    return cf if out == n else limbs[out]


def _limb_values(bits: int, n: int, rng: np.random.Generator) -> list[list[int]]:
    """Per limb, a column of values: all-zero and all-ones limbs (carries ripple
    through every limb), 1, the top bit, and random limbs."""
    m = (1 << bits) - 1
    edge = [0, 1, m, m - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1]
    cols: list[list[int]] = [[] for _ in range(n)]
    for v in edge:
        for w in edge:
            for i in range(n):
                cols[i].append(v if i % 2 == 0 else w)
    for _ in range(64):
        for i in range(n):
            cols[i].append(int(rng.integers(0, 1 << bits, dtype=np.uint64)) & m)
    return cols


def _chain_cases() -> list[Case]:
    out = []
    rng = np.random.default_rng(17)
    for bits in (32, 64):
        t = f"u{bits}"
        n = 4
        acols = _limb_values(bits, n, rng)
        bcols = _limb_values(bits, n, rng)
        # every a-row against several b-rows
        reps = 4
        A = [c * reps for c in acols]
        B = [sum((c[k:] + c[:k] for k in range(reps)), []) for c in bcols]
        for name, ops in CHAINS:
            ops = ops[:-1] + [_cc(ops[-1])]  # the last one writes the flag: read it below
            body = [f"{op}.{t} %d{i}, %a{i}, %b{i};" for i, op in enumerate(ops)]
            body.append(f"addc.{t} %f, 0, 0;")
            inputs = {f"a{i}": (t, A[i]) for i in range(n)} | {f"b{i}": (t, B[i]) for i in range(n)}
            ref = partial(_chain_column, ops=ops, bits=bits, n=n)
            outputs = {f"d{i}": (t, partial(ref, out=i)) for i in range(n)}
            outputs["f"] = (t, partial(ref, out=n))
            out.append(make(f"{name}.{t}", FAMILY, "\n".join(body), inputs, outputs))
    return out


def _cc(op: str) -> str:
    """The carry-out form of a chain instruction (``addc`` -> ``addc.cc``)."""
    return op if op.endswith(".cc") else op + ".cc"


def _single(x: int, y: int, op: str, bits: int, out: str) -> int:
    r, cf = _step(op, x, y, 0, bits)
    return {"result": r, "flag": cf, "flag-1": wrap(cf - 1, bits)}[out]


def _flag_cases() -> list[Case]:
    """The flag after a single ``add.cc``/``sub.cc``, read by ``addc r, 0, 0`` and by
    ``subc r, 0, 0`` (which gives ``CF - 1``)."""
    out = []
    for bits in (32, 64):
        t = f"u{bits}"
        m = (1 << bits) - 1
        vals = [0, 1, 2, m, m - 1, 1 << (bits - 1)]
        a = [x for x in vals for _ in vals]
        b = [y for _ in vals for y in vals]
        for op in ("add", "sub"):
            body = (
                f"{op}.cc.{t} %d, %a, %b;\naddc.{t} %e, 0, 0;\n"
                f"{op}.cc.{t} %d, %a, %b;\nsubc.{t} %f, 0, 0;"
            )
            step = partial(_single, op=op + ".cc", bits=bits)
            out.append(
                make(
                    f"{op}.cc-flag.{t}",
                    FAMILY,
                    body,
                    {"a": (t, a), "b": (t, b)},
                    {
                        "d": (t, partial(step, out="result")),
                        "e": (t, partial(step, out="flag")),
                        "f": (t, partial(step, out="flag-1")),
                    },
                )
            )
    return out


def _mad_chain_cases() -> list[Case]:
    """Schoolbook 64x64 -> 128-bit multiplication from 32-bit limbs, with ``mad.lo.cc``,
    ``madc.hi``, ``madc.hi.cc`` and ``addc``, and a chain that feeds a subtraction's
    flag into ``madc``."""
    rng = np.random.default_rng(5)
    m = (1 << 32) - 1
    edge = [0, 1, m, m - 1, 1 << 31]
    rows = [(x, y, z, w) for x in edge for y in edge for z in edge[:3] for w in edge[:3]]
    rows += [tuple(int(v) for v in rng.integers(0, 1 << 32, 4, dtype=np.uint64)) for _ in range(64)]
    a0, a1, b0, b1 = (list(c) for c in zip(*rows, strict=True))
    body = """
mul.lo.u32 %d0, %a0, %b0;
mul.hi.u32 %d1, %a0, %b0;
mad.lo.cc.u32 %d1, %a1, %b0, %d1;
madc.hi.u32 %d2, %a1, %b0, 0;
mad.lo.cc.u32 %d1, %a0, %b1, %d1;
madc.hi.cc.u32 %d2, %a0, %b1, %d2;
addc.u32 %d3, 0, 0;
mad.lo.cc.u32 %d2, %a1, %b1, %d2;
madc.hi.u32 %d3, %a1, %b1, %d3;
sub.cc.u32 %e, %a0, %b0;
madc.lo.u32 %f, %a1, %b1, %a0;
"""

    def limb(i: int):  # noqa: ANN202
        return lambda x0, x1, y0, y1: (((x1 << 32) | x0) * ((y1 << 32) | y0) >> (32 * i)) & m

    return [
        make(
            "mad.cc+madc.u32",
            FAMILY,
            body,
            {"a0": ("u32", a0), "a1": ("u32", a1), "b0": ("u32", b0), "b1": ("u32", b1)},
            {
                "d0": ("u32", limb(0)),
                "d1": ("u32", limb(1)),
                "d2": ("u32", limb(2)),
                "d3": ("u32", limb(3)),
                "e": ("u32", lambda x0, x1, y0, y1: x0 - y0),
                # flag after sub.cc: 1 when no borrow
                "f": ("u32", lambda x0, x1, y0, y1: x1 * y1 + x0 + (1 if x0 >= y0 else 0)),
            },
        )
    ]


def cases() -> list[Case]:
    return _chain_cases() + _flag_cases() + _mad_chain_cases()
