"""Edge tables: logic, shifts, funnel shifts and bit manipulation (PTX ISA 9.0,
sections 9.7.1 and 9.7.8), checked against Python-integer transcriptions of the ISA
pseudocode.

Readings settled with ptxas and the hardware: ``bfe``/``bfi`` positions and lengths
beyond 255 are taken mod 256 by the 32-bit forms and whole by the 64-bit ones; shift
amounts are unsigned 32-bit values and any amount >= the width shifts everything out
(sign fill for ``shr.s``);
``bmsk.wrap`` with a width of 0 mod 32 gives 0 and ``bmsk.clamp`` with a width >= 32
gives the mask from ``a`` up; ``szext.wrap`` with ``N = 32`` gives 0 (N mod 32 = 0),
``szext.clamp`` with ``N >= 32`` gives ``a``.
"""

from __future__ import annotations

from itertools import product

from lanes import Case, grid, make
from refs import edge_ints, signed, wrap

FAMILY = "bits"
SHIFTS = [0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 0x80000000, 0xFFFFFFFF]


def _logic_cases() -> list[Case]:
    out = []
    for bits in (16, 32, 64):
        t = f"b{bits}"
        a, b = grid(edge_ints(bits), edge_ints(bits)[::2])
        out.append(
            make(
                f"and/or/xor/not/cnot.{t}",
                FAMILY,
                f"and.{t} %d, %a, %b;\nor.{t} %e, %a, %b;\nxor.{t} %f, %a, %b;\n"
                f"not.{t} %g, %a;\ncnot.{t} %h, %a;",
                {"a": (t, a), "b": (t, b)},
                {
                    "d": (t, lambda x, y: x & y),
                    "e": (t, lambda x, y: x | y),
                    "f": (t, lambda x, y: x ^ y),
                    "g": (t, lambda x, y, bits=bits: wrap(~x, bits)),
                    "h": (t, lambda x, y: 1 if x == 0 else 0),
                },
            )
        )
    p, q = grid([0, 1], [0, 1])
    out.append(
        make(
            "and/or/xor/not.pred",
            FAMILY,
            "and.pred %d, %a, %b;\nor.pred %e, %a, %b;\nxor.pred %f, %a, %b;\nnot.pred %g, %a;",
            {"a": ("pred", p), "b": ("pred", q)},
            {
                "d": ("pred", lambda x, y: x & y),
                "e": ("pred", lambda x, y: x | y),
                "f": ("pred", lambda x, y: x ^ y),
                "g": ("pred", lambda x, y: 1 - x),
            },
        )
    )
    return out


def _shift_cases() -> list[Case]:
    out = []
    for bits in (16, 32, 64):
        vals = edge_ints(bits)
        a, b = grid(vals, SHIFTS)
        n = [min(int(s), bits) for s in b]
        del n
        shl = f"shl.b{bits}"
        out.append(
            make(
                shl,
                FAMILY,
                f"{shl} %d, %a, %b;",
                {"a": (f"b{bits}", a), "b": ("u32", b)},
                {"d": (f"b{bits}", lambda x, s, bits=bits: 0 if s >= bits else x << s)},
            )
        )
        for kind in "bus":
            t = f"{kind}{bits}"
            out.append(
                make(
                    f"shr.{t}",
                    FAMILY,
                    f"shr.{t} %d, %a, %b;",
                    {"a": (t, a), "b": ("u32", b)},
                    {
                        "d": (
                            t,
                            lambda x, s, kind=kind, bits=bits: (
                                (signed(x, bits) if kind == "s" else x) >> min(s, bits)
                            ),
                        )
                    },
                )
            )
    vals = [0, 1, 0x80000000, 0xFFFFFFFF, 0x12345678, 0x89ABCDEF]
    a, b, c = grid(vals, vals, SHIFTS[:10])
    for direction, mode in product("lr", ("wrap", "clamp")):

        def funnel(x: int, y: int, s: int, direction: str = direction, mode: str = mode) -> int:
            n = s & 31 if mode == "wrap" else min(s, 32)
            both = (y << 32) | x
            return (both << n) >> 32 if direction == "l" else both >> n

        out.append(
            make(
                f"shf.{direction}.{mode}.b32",
                FAMILY,
                f"shf.{direction}.{mode}.b32 %d, %a, %b, %c;",
                {"a": ("b32", a), "b": ("b32", b), "c": ("u32", c)},
                {"d": ("b32", funnel)},
            )
        )
    return out


def _field_operands(pos: int, ln: int, bits: int) -> tuple[int, int]:
    """``bfe``/``bfi`` position and length: the ISA restricts them to 0..255; the
    32-bit forms take them mod 256 (the pseudocode's ``& 0xff``), the 64-bit forms
    (expanded by ptxas) use them whole - confirmed on an H100."""
    if bits == 32:
        return pos & 0xFF, ln & 0xFF
    return pos, ln


def _bfe(x: int, pos: int, ln: int, signed_: bool, bits: int) -> int:
    msb = bits - 1
    pos, ln = _field_operands(pos, ln, bits)
    sbit = 0 if (not signed_ or ln == 0) else (x >> min(pos + ln - 1, msb)) & 1
    d = 0
    for i in range(bits):
        bit = (x >> (pos + i)) & 1 if (i < ln and pos + i <= msb) else sbit
        d |= bit << i
    return d


def _bfi(x: int, y: int, pos: int, ln: int, bits: int) -> int:
    msb = bits - 1
    pos, ln = _field_operands(pos, ln, bits)
    f = y
    i = 0
    while i < ln and pos + i <= msb:
        f = (f & ~(1 << (pos + i))) | (((x >> i) & 1) << (pos + i))
        i += 1
    return f


def _bfind(x: int, signed_: bool, bits: int, shiftamt: bool) -> int:
    msb = bits - 1
    if signed_ and (x >> msb) & 1:
        x = wrap(~x, bits)
    d = 0xFFFFFFFF
    for i in range(msb, -1, -1):
        if (x >> i) & 1:
            d = i
            break
    if shiftamt and d != 0xFFFFFFFF:
        d = msb - d
    return d


def _field_cases() -> list[Case]:
    out = []
    positions = [0, 1, 7, 8, 31, 32, 33, 63, 64, 255, 256, 0x101]
    for bits in (32, 64):
        vals = [0, 0xFFFFFFFFFFFFFFFF & ((1 << bits) - 1), 0x8000000000000000 >> (64 - bits)]
        vals += [0x123456789ABCDEF0 & ((1 << bits) - 1), 0x7F]
        a, b, c = grid(vals, positions, positions[:8] + [256, 257, 0x1FF])
        for kind in "us":
            t = f"{kind}{bits}"
            out.append(
                make(
                    f"bfe.{t}",
                    FAMILY,
                    f"bfe.{t} %d, %a, %b, %c;",
                    {"a": (t, a), "b": ("u32", b), "c": ("u32", c)},
                    {
                        "d": (
                            t,
                            lambda x, p, n, kind=kind, bits=bits: _bfe(x, p, n, kind == "s", bits),
                        )
                    },
                )
            )
        a4, b4, c4, d4 = grid(vals[:4], vals[1:3], positions[::2], positions[:7] + [256, 257])
        out.append(
            make(
                f"bfi.b{bits}",
                FAMILY,
                f"bfi.b{bits} %d, %a, %b, %c, %e;",
                {"a": (f"b{bits}", a4), "b": (f"b{bits}", b4), "c": ("u32", c4), "e": ("u32", d4)},
                {"d": (f"b{bits}", lambda x, y, p, n, bits=bits: _bfi(x, y, p, n, bits))},
            )
        )
        ev = edge_ints(bits)
        for kind in "us":
            t = f"{kind}{bits}"
            out.append(
                make(
                    f"bfind.{t}",
                    FAMILY,
                    f"bfind.{t} %d, %a;\nbfind.shiftamt.{t} %e, %a;",
                    {"a": (t, ev)},
                    {
                        "d": (
                            "u32",
                            lambda x, kind=kind, bits=bits: _bfind(x, kind == "s", bits, False),
                        ),
                        "e": (
                            "u32",
                            lambda x, kind=kind, bits=bits: _bfind(x, kind == "s", bits, True),
                        ),
                    },
                )
            )
        t = f"b{bits}"
        out.append(
            make(
                f"popc/clz/brev.{t}",
                FAMILY,
                f"popc.{t} %d, %a;\nclz.{t} %e, %a;\nbrev.{t} %f, %a;",
                {"a": (t, ev)},
                {
                    "d": ("u32", lambda x: bin(x).count("1")),
                    "e": ("u32", lambda x, bits=bits: bits - x.bit_length()),
                    "f": (t, lambda x, bits=bits: int(format(x, f"0{bits}b")[::-1], 2)),
                },
            )
        )
    return out


def _bmsk(a: int, b: int, clamp: bool) -> int:
    a1, b1 = a & 0x1F, b & 0x1F
    total = a1 + b1
    mask0 = wrap(~0 << a1, 32)
    mask1 = wrap(~0 << total, 32) if total < 32 else 0
    overflow = total >= 32
    if clamp:
        if a >= 32:
            overflow = True
            mask0 = 0
        if b >= 32:
            overflow = True
    if overflow:
        mask1 = 0
    elif b1 == 0:
        mask1 = 0xFFFFFFFF
    return mask0 & ~mask1 & 0xFFFFFFFF


def _szext(a: int, b: int, clamp: bool, signed_: bool) -> int:
    b1 = b & 0x1F
    too_large = b >= 32 and clamp
    mask = 0 if too_large else wrap(~0 << b1, 32)
    sign = 0 if (b1 == 0 or too_large or not signed_) else (a >> ((b1 - 1) & 0x1F)) & 1
    return (a & ~mask & 0xFFFFFFFF) | (mask if sign else 0)


def _fns(mask: int, base: int, offset: int) -> int:
    offset = signed(offset, 32)
    if offset == 0:
        return base if (mask >> base) & 1 else 0xFFFFFFFF
    pos, count, inc = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if (mask >> pos) & 1:
            if count == 0:
                return pos
            count -= 1
        pos += inc
    return 0xFFFFFFFF


def _newer_cases() -> list[Case]:
    """``bmsk``, ``szext`` and ``fns`` (PTX 7.6/7.6/6.0) from the ISA pseudocode."""
    out = []
    widths = [0, 1, 2, 7, 8, 16, 30, 31, 32, 33, 40, 63, 64, 0x80000000, 0xFFFFFFFF]
    a, b = grid(widths, widths)
    for mode in ("clamp", "wrap"):
        out.append(
            make(
                f"bmsk.{mode}.b32",
                FAMILY,
                f"bmsk.{mode}.b32 %d, %a, %b;",
                {"a": ("u32", a), "b": ("u32", b)},
                {"d": ("b32", lambda x, y, mode=mode: _bmsk(x, y, mode == "clamp"))},
            )
        )
    vals = [0, 1, 0x7F, 0x80, 0xFF, 0x8000, 0x12345678, 0x87654321, 0xFFFFFFFF, 0x80000000]
    a2, b2 = grid(vals, widths)
    for mode, kind in product(("clamp", "wrap"), "us"):
        t = f"{kind}32"
        out.append(
            make(
                f"szext.{mode}.{t}",
                FAMILY,
                f"szext.{mode}.{t} %d, %a, %b;",
                {"a": (t, a2), "b": ("u32", b2)},
                {
                    "d": (
                        t,
                        lambda x, y, mode=mode, kind=kind: _szext(
                            x, y, mode == "clamp", kind == "s"
                        ),
                    )
                },
            )
        )
    masks = [0, 1, 0x80000000, 0xFFFFFFFF, 0x12345678, 0xF0F0F0F0, 0x00010001]
    bases = [0, 1, 4, 15, 16, 30, 31]
    offsets = [0, 1, 2, 3, 5, 17, 32, 33, wrap(-1, 32), wrap(-2, 32), wrap(-5, 32), wrap(-32, 32)]
    a3, b3, c3 = grid(masks, bases, offsets)
    out.append(
        make(
            "fns.b32",
            FAMILY,
            "fns.b32 %d, %a, %b, %c;",
            {"a": ("b32", a3), "b": ("u32", b3), "c": ("s32", c3)},
            {"d": ("b32", _fns)},
        )
    )
    return out


PRMT_MODES = {
    # d.b3 d.b2 d.b1 d.b0 for c[1:0] = 0, 1, 2, 3 (the ISA's table)
    "f4e": [(3, 2, 1, 0), (4, 3, 2, 1), (5, 4, 3, 2), (6, 5, 4, 3)],
    "b4e": [(5, 6, 7, 0), (6, 7, 0, 1), (7, 0, 1, 2), (0, 1, 2, 3)],
    "rc8": [(0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)],
    "ecl": [(3, 2, 1, 0), (3, 2, 1, 1), (3, 2, 2, 2), (3, 3, 3, 3)],
    "ecr": [(0, 0, 0, 0), (1, 1, 1, 0), (2, 2, 1, 0), (3, 2, 1, 0)],
    "rc16": [(1, 0, 1, 0), (3, 2, 3, 2), (1, 0, 1, 0), (3, 2, 3, 2)],
}


def _prmt(a: int, b: int, c: int, mode: str) -> int:
    src = [(((b << 32) | a) >> (8 * i)) & 0xFF for i in range(8)]
    d = 0
    for i in range(4):
        if mode:
            byte = src[PRMT_MODES[mode][c & 3][3 - i]]
        else:
            sel = (c >> (4 * i)) & 0xF
            byte = src[sel & 7]
            if sel & 8:
                byte = 0xFF if byte & 0x80 else 0
        d |= byte << (8 * i)
    return d


def _prmt_cases() -> list[Case]:
    out = []
    words = [0x03020100, 0x87868584, 0xFF7F8001, 0x00000000]
    selectors = [0x3210, 0x7654, 0x0123, 0x4567, 0x8888, 0xFEDC, 0xBA98, 0x1111, 0x9D5E, 0xFFFF0000]
    a, b, c = grid(words, words[1:3], selectors)
    out.append(
        make(
            "prmt.b32",
            FAMILY,
            "prmt.b32 %d, %a, %b, %c;",
            {"a": ("b32", a), "b": ("b32", b), "c": ("b32", c)},
            {"d": ("b32", lambda x, y, s: _prmt(x, y, s, ""))},
        )
    )
    a2, b2, c2 = grid(words, words[1:3], [0, 1, 2, 3, 4, 7, 0xFFFFFFFC, 0xFFFFFFFF])
    for mode in PRMT_MODES:
        out.append(
            make(
                f"prmt.b32.{mode}",
                FAMILY,
                f"prmt.b32.{mode} %d, %a, %b, %c;",
                {"a": ("b32", a2), "b": ("b32", b2), "c": ("b32", c2)},
                {"d": ("b32", lambda x, y, s, mode=mode: _prmt(x, y, s, mode))},
            )
        )
    return out


def _lop3(a: int, b: int, c: int, lut: int) -> int:
    d = 0
    for i in range(32):
        idx = (((a >> i) & 1) << 2) | (((b >> i) & 1) << 1) | ((c >> i) & 1)
        d |= ((lut >> idx) & 1) << i
    return d


def _lop3_cases() -> list[Case]:
    words = [0, 0xFFFFFFFF, 0xF0F0F0F0, 0xCCCCCCCC, 0xAAAAAAAA, 0x12345678]
    a, b, c = grid(words, words, words[2:])
    luts = [0x00, 0xFF, 0x96, 0xE8, 0xF0, 0xCC, 0xAA, 0x80, 0xFE, 0x1B, 0x6A]
    body = "\n".join(f"lop3.b32 %o{k}, %a, %b, %c, {lut:#04x};" for k, lut in enumerate(luts))
    outputs = {
        f"o{k}": ("b32", lambda x, y, z, lut=lut: _lop3(x, y, z, lut)) for k, lut in enumerate(luts)
    }
    out = [
        make("lop3.b32", FAMILY, body, {"a": ("b32", a), "b": ("b32", b), "c": ("b32", c)}, outputs)
    ]
    p = [k % 2 for k in range(len(a))]
    body2 = "lop3.or.b32 %d|%e, %a, %b, %c, 0x96, %q;\nlop3.and.b32 %f|%g, %a, %b, %c, 0x80, %q;"
    out.append(
        make(
            "lop3.boolop.b32",
            FAMILY,
            body2,
            {"a": ("b32", a), "b": ("b32", b), "c": ("b32", c), "q": ("pred", p)},
            {
                "d": ("b32", lambda x, y, z, q: _lop3(x, y, z, 0x96)),
                "e": ("pred", lambda x, y, z, q: int(_lop3(x, y, z, 0x96) != 0 or q == 1)),
                "f": ("b32", lambda x, y, z, q: _lop3(x, y, z, 0x80)),
                "g": ("pred", lambda x, y, z, q: int(_lop3(x, y, z, 0x80) != 0 and q == 1)),
            },
            version="8.2",
        )
    )
    return out


def cases() -> list[Case]:
    return (
        _logic_cases()
        + _shift_cases()
        + _field_cases()
        + _newer_cases()
        + _prmt_cases()
        + _lop3_cases()
    )
