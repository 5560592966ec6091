"""Edge tables: integer arithmetic (PTX ISA 9.0, section 9.7.1) and the carry chain
(section 9.7.2), each checked against Python-integer references.

Readings settled with ptxas and the hardware (see ``hwcheck/``):

* Division by zero is "unspecified" in the ISA text: on an H100 both ``div`` and
  ``rem`` give all ones, for signed and unsigned types of every width; ``s32``
  ``MIN / -1`` wraps to ``MIN`` with remainder 0.
* The carry flag after a subtraction is the carry out of ``a + ~b + 1`` (not the
  borrow): ptxas assembles ``sub.cc`` to ``IADD3 R, P0, a, -b, RZ``, ``subc`` to
  ``IADD3.X R, P0, a, ~b, RZ, P0`` and reads the flag with ``SEL r, RZ, 1, !P0``;
  ``sub.cc.u32 r, 1, 2; addc.u32 s, 0, 0`` folds to storing 0.
"""

from __future__ import annotations

from itertools import product

from lanes import Case, grid, make
from refs import clamp, edge_ints, int_range, signed, wrap

FAMILY = "integer"
WIDTHS = (16, 32, 64)


def _t(kind: str, bits: int) -> str:
    return f"{kind}{bits}"


def _val(x: int, kind: str, bits: int) -> int:
    return signed(x, bits) if kind == "s" else wrap(x, bits)


def _binary_cases() -> list[Case]:
    out: list[Case] = []
    for kind, bits in product("us", WIDTHS):
        t = _t(kind, bits)
        a, b = grid(edge_ints(bits), edge_ints(bits))
        lo, hi = int_range(bits, kind == "s")
        refs = {
            "add": lambda x, y, bits=bits: x + y,
            "sub": lambda x, y, bits=bits: x - y,
            "min": lambda x, y, kind=kind, bits=bits: min(_val(x, kind, bits), _val(y, kind, bits)),
            "max": lambda x, y, kind=kind, bits=bits: max(_val(x, kind, bits), _val(y, kind, bits)),
            "mul.lo": lambda x, y: x * y,
            "mul.hi": lambda x, y, kind=kind, bits=bits: (
                (_val(x, kind, bits) * _val(y, kind, bits)) >> bits
            ),
            "div": lambda x, y, kind=kind, bits=bits: _div(x, y, kind, bits)[0],
            "rem": lambda x, y, kind=kind, bits=bits: _div(x, y, kind, bits)[1],
        }
        for op, ref in refs.items():
            out.append(
                make(
                    f"{op}.{t}",
                    FAMILY,
                    f"{op}.{t} %d, %a, %b;",
                    {"a": (t, a), "b": (t, b)},
                    {"d": (t, ref)},
                )
            )
        if bits < 64:
            w = _t(kind, 2 * bits)
            out.append(
                make(
                    f"mul.wide.{t}",
                    FAMILY,
                    f"mul.wide.{t} %d, %a, %b;",
                    {"a": (t, a), "b": (t, b)},
                    {
                        "d": (
                            w,
                            lambda x, y, kind=kind, bits=bits: (
                                _val(x, kind, bits) * _val(y, kind, bits)
                            ),
                        )
                    },
                )
            )
        if kind == "s":
            out.append(
                make(
                    f"abs/neg.{t}",
                    FAMILY,
                    f"abs.{t} %d, %a;\nneg.{t} %e, %a;",
                    {"a": (t, edge_ints(bits))},
                    {
                        "d": (t, lambda x, bits=bits: abs(signed(x, bits))),
                        "e": (t, lambda x, bits=bits: -signed(x, bits)),
                    },
                )
            )
        del lo, hi
    a, b = grid(edge_ints(32), edge_ints(32))
    for op in ("add", "sub"):
        out.append(
            make(
                f"{op}.sat.s32",
                FAMILY,
                f"{op}.sat.s32 %d, %a, %b;",
                {"a": ("s32", a), "b": ("s32", b)},
                {
                    "d": (
                        "s32",
                        lambda x, y, op=op: clamp(
                            signed(x, 32) + (signed(y, 32) if op == "add" else -signed(y, 32)),
                            -(2**31),
                            2**31 - 1,
                        ),
                    )
                },
            )
        )
    for op in ("min", "max"):
        out.append(
            make(
                f"{op}.relu.s32",
                FAMILY,
                f"{op}.relu.s32 %d, %a, %b;",
                {"a": ("s32", a), "b": ("s32", b)},
                {
                    "d": (
                        "s32",
                        lambda x, y, op=op: max(
                            0, (min if op == "min" else max)(signed(x, 32), signed(y, 32))
                        ),
                    )
                },
            )
        )
    return out


def _product(x: int, y: int, kind: str, bits: int) -> int:
    return _val(x, kind, bits) * _val(y, kind, bits)


def _div(x: int, y: int, kind: str, bits: int) -> tuple[int, int]:
    """Truncating division; a zero divisor gives all ones for both the quotient and
    the remainder (the ISA leaves it unspecified; the H100 gives all ones)."""
    a, b = _val(x, kind, bits), _val(y, kind, bits)
    if b == 0:
        return -1, -1
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    return q, a - q * b


def _packed16_cases() -> list[Case]:
    """``add/min/max.{u16x2,s16x2}`` and ``min/max.relu.s16x2``: each half-word
    independently (sm_90; ``sub`` has no packed form)."""
    halves = [0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x8001, 0x1234]
    words = [lo | hi << 16 for lo in halves for hi in halves]
    a, b = grid(words, words[::3])
    fns = {
        "add": lambda x, y: x + y,
        "min": min,
        "max": max,
    }
    out = []
    for kind in "us":
        t = f"{kind}16x2"
        for op, fn in fns.items():
            for relu in ("", ".relu"):
                if relu and (kind == "u" or op == "add"):
                    continue

                def ref(x: int, y: int, fn=fn, kind=kind, relu=relu) -> int:
                    r = 0
                    for k in (0, 16):
                        hx, hy = (x >> k) & 0xFFFF, (y >> k) & 0xFFFF
                        if kind == "s":
                            hx, hy = signed(hx, 16), signed(hy, 16)
                        v = fn(hx, hy)
                        if relu:
                            v = max(v, 0)
                        r |= wrap(v, 16) << k
                    return r

                out.append(
                    make(
                        f"{op}{relu}.{t}",
                        FAMILY,
                        f"{op}{relu}.{t} %d, %a, %b;",
                        {"a": ("b32", a), "b": ("b32", b)},
                        {"d": ("b32", ref)},
                    )
                )
    return out


def _mad_cases() -> list[Case]:
    out: list[Case] = []
    small = {b: edge_ints(b)[::2] for b in WIDTHS}
    for kind, bits in product("us", WIDTHS):
        t = _t(kind, bits)
        a, b, c = grid(small[bits], small[bits], small[bits][:5])
        out.append(
            make(
                f"mad.lo.{t}",
                FAMILY,
                f"mad.lo.{t} %d, %a, %b, %c;",
                {"a": (t, a), "b": (t, b), "c": (t, c)},
                {"d": (t, lambda x, y, z: x * y + z)},
            )
        )
        out.append(
            make(
                f"mad.hi.{t}",
                FAMILY,
                f"mad.hi.{t} %d, %a, %b, %c;",
                {"a": (t, a), "b": (t, b), "c": (t, c)},
                {
                    "d": (
                        t,
                        lambda x, y, z, kind=kind, bits=bits: (
                            ((_val(x, kind, bits) * _val(y, kind, bits)) >> bits) + z
                        ),
                    )
                },
            )
        )
        if bits < 64:
            w = _t(kind, 2 * bits)
            a2, b2, c2 = grid(small[bits], small[bits], small[2 * bits][:5])
            out.append(
                make(
                    f"mad.wide.{t}",
                    FAMILY,
                    f"mad.wide.{t} %d, %a, %b, %c;",
                    {"a": (t, a2), "b": (t, b2), "c": (w, c2)},
                    {
                        "d": (
                            w,
                            lambda x, y, z, kind=kind, bits=bits: (
                                _val(x, kind, bits) * _val(y, kind, bits) + z
                            ),
                        )
                    },
                )
            )
        out.append(
            make(
                f"sad.{t}",
                FAMILY,
                f"sad.{t} %d, %a, %b, %c;",
                {"a": (t, a), "b": (t, b), "c": (t, c)},
                {
                    "d": (
                        t,
                        lambda x, y, z, kind=kind, bits=bits: (
                            abs(_val(x, kind, bits) - _val(y, kind, bits)) + z
                        ),
                    )
                },
            )
        )
    a, b, c = grid(edge_ints(32)[::2], edge_ints(32)[::2], edge_ints(32)[::3])
    out.append(
        make(
            "mad.hi.sat.s32",
            FAMILY,
            "mad.hi.sat.s32 %d, %a, %b, %c;",
            {"a": ("s32", a), "b": ("s32", b), "c": ("s32", c)},
            {
                "d": (
                    "s32",
                    lambda x, y, z: clamp(
                        ((signed(x, 32) * signed(y, 32)) >> 32) + signed(z, 32),
                        -(2**31),
                        2**31 - 1,
                    ),
                )
            },
        )
    )
    return out


def _mul24_cases() -> list[Case]:
    """``mul24``/``mad24``: the low 24 bits of each source (sign-extended for .s32),
    the 48-bit product's bits 31..0 (``.lo``) or 47..16 (``.hi``)."""
    vals = sorted(set(edge_ints(32)) | {0x7FFFFF, 0x800000, 0xFFFFFF, 0x1000000, 0xFF800000})
    a, b = grid(vals, vals)
    out = []
    for kind in "us":
        t = f"{kind}32"

        def p24(x: int, y: int, kind: str = kind) -> int:
            x24, y24 = x & 0xFFFFFF, y & 0xFFFFFF
            if kind == "s":
                x24, y24 = signed(x24, 24), signed(y24, 24)
            return x24 * y24

        for half in ("lo", "hi"):
            shift = 0 if half == "lo" else 16
            out.append(
                make(
                    f"mul24.{half}.{t}",
                    FAMILY,
                    f"mul24.{half}.{t} %d, %a, %b;\nmad24.{half}.{t} %e, %a, %b, %a;",
                    {"a": (t, a), "b": (t, b)},
                    {
                        "d": (t, lambda x, y, s=shift, p=p24: p(x, y) >> s),
                        "e": (t, lambda x, y, s=shift, p=p24: (p(x, y) >> s) + x),
                    },
                )
            )
    a3, b3, c3 = grid(vals[::2], vals[::2], edge_ints(32)[::3])
    out.append(
        make(
            "mad24.hi.sat.s32",
            FAMILY,
            "mad24.hi.sat.s32 %d, %a, %b, %c;",
            {"a": ("s32", a3), "b": ("s32", b3), "c": ("s32", c3)},
            {
                "d": (
                    "s32",
                    lambda x, y, z: clamp(
                        (signed(x & 0xFFFFFF, 24) * signed(y & 0xFFFFFF, 24) >> 16) + signed(z, 32),
                        -(2**31),
                        2**31 - 1,
                    ),
                )
            },
        )
    )
    return out


def _dp_cases() -> list[Case]:
    """``dp4a``/``dp2a``: dot products of bytes (and half-words) with a 32-bit
    accumulator, each source signed or unsigned by its own type."""
    words = [0, 1, 0x7F7F7F7F, 0x80808080, 0xFFFFFFFF, 0x01FF807F, 0x12345678, 0xFEDCBA98]
    a, b, c = grid(words, words, [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF])
    out = []
    for ta, tb in product(("u32", "s32"), repeat=2):
        sa, sb = ta == "s32", tb == "s32"
        acc = "s32" if sa or sb else "u32"

        def byte(x: int, i: int, s: bool) -> int:
            v = (x >> (8 * i)) & 0xFF
            return signed(v, 8) if s else v

        def half(x: int, i: int, s: bool) -> int:
            v = (x >> (16 * i)) & 0xFFFF
            return signed(v, 16) if s else v

        def dp4(x: int, y: int, z: int, sa: bool = sa, sb: bool = sb) -> int:
            return z + sum(byte(x, i, sa) * byte(y, i, sb) for i in range(4))

        def dp2(x: int, y: int, z: int, hi: bool, sa: bool = sa, sb: bool = sb) -> int:
            k = 2 if hi else 0
            return z + sum(half(x, i, sa) * byte(y, i + k, sb) for i in range(2))

        out.append(
            make(
                f"dp4a/dp2a.{ta}.{tb}",
                FAMILY,
                f"dp4a.{ta}.{tb} %d, %a, %b, %c;\n"
                f"dp2a.lo.{ta}.{tb} %e, %a, %b, %c;\n"
                f"dp2a.hi.{ta}.{tb} %f, %a, %b, %c;",
                {"a": ("b32", a), "b": ("b32", b), "c": (acc, c)},
                {
                    "d": (acc, dp4),
                    "e": (acc, lambda x, y, z, f=dp2: f(x, y, z, False)),
                    "f": (acc, lambda x, y, z, f=dp2: f(x, y, z, True)),
                },
            )
        )
    return out


def cases() -> list[Case]:
    return _binary_cases() + _packed16_cases() + _mad_cases() + _mul24_cases() + _dp_cases()
