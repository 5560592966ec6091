"""Edge tables: video instructions (PTX ISA 9.0, section 9.7.18) - the scalar
``vadd``/``vsub``/``vabsdiff``/``vmin``/``vmax``/``vshl``/``vshr``/``vset``/``vmad`` with
every type combination, byte/half-word selectors, ``.sat``, secondary operations and
destination merges, and the SIMD ``...2``/``...4`` forms with their lane selectors,
masks, ``.sat`` and ``.add``.  References: Python integers following the ISA's
pseudocode (``partSelectSignExtend``, ``optSaturate``, ``optSecondaryOp``,
``optMerge``, ``extractAndSignExt``).

The reading settled on the hardware: ``vset`` has no destination type, so the ISA's
rule that ``c`` takes dtype's sign does not apply; an H100 gives ``c`` the sign of
``atype``.

The SIMD forms agree with an H100 lane for lane.  The scalar forms do not in corner
cases, where sm_90 has no video unit and ptxas's expansion contradicts the ISA
pseudocode (the reference and the interpreter follow the ISA; ``hwcheck/compare.py``
reports these as documented deviations): with a secondary operation the primary
result is wrapped to 32 bits, neither saturated nor kept exact (``vadd.u32.u32.u32.sat
.add`` of 1, 0xffffffff, 0x7f gives 0x7f, the ISA 0x7e); ``.min``/``.max`` compare that
32-bit value sign-extended even for ``.u32`` results; a saturated result merged into
``d.h1`` writes 0; ``vshl.sat`` does not saturate bits shifted out; ``vmad``
sign-extends ``c`` for unsigned results.
"""

from __future__ import annotations

from functools import partial
from itertools import product

from lanes import Case, make
from refs import clamp, signed

FAMILY = "video"
SCALAR_DEVIATION = (
    "ptxas's sm_90 expansion wraps the primary result to 32 bits before a secondary "
    "operation (no .sat there), compares it sign-extended in .min/.max, writes 0 for a "
    "saturated d.h1 merge and does not saturate vshl overflow"
)
WORDS = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x80FF7F01, 0x017F80FF, 0x7FFFFFFF]
WORDS += [0x80000000, 0xFFFFFFFF, 0x12345678, 0xFEDCBA98]


def _part(x: int, sel: str, is_signed: bool) -> int:
    if sel.startswith("b"):
        v, w = (x >> (8 * int(sel[1]))) & 0xFF, 8
    elif sel.startswith("h"):
        v, w = (x >> (16 * int(sel[1]))) & 0xFFFF, 16
    else:
        v, w = x, 32
    return signed(v, w) if is_signed else v


def _sat_range(dsel: str, is_signed: bool) -> tuple[int, int]:
    w = 8 if dsel.startswith("b") else 16 if dsel.startswith("h") else 32
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if is_signed else (0, (1 << w) - 1)


def _merge(tmp: int, c: int, dsel: str) -> int:
    if not dsel:
        return tmp
    if dsel[0] == "b":
        sh, mask = 8 * int(dsel[1]), 0xFF
    else:
        sh, mask = 16 * int(dsel[1]), 0xFFFF
    return ((tmp & mask) << sh) | (c & ~(mask << sh) & 0xFFFFFFFF)


def _scalar(
    a: int,
    b: int,
    c: int,
    *,
    op: str,
    dt: str,
    at: str,
    bt: str,
    asel: str,
    bsel: str,
    dsel: str,
    sat: bool,
    op2: str,
) -> int:
    ta, tb = _part(a, asel, at == "s32"), _part(b, bsel, bt == "s32")
    if op == "vset":
        tmp = int(
            {"eq": ta == tb, "ne": ta != tb, "lt": ta < tb, "le": ta <= tb, "gt": ta > tb}.get(
                dt, ta >= tb
            )
        )
        dsigned = False
    else:
        if op in ("vshl", "vshr"):
            tb = tb & 31 if "wrap" in op2 else min(tb, 32)
            tmp = ta << tb if op == "vshl" else ta >> tb
        else:
            tmp = {
                "vadd": ta + tb,
                "vsub": ta - tb,
                "vabsdiff": abs(ta - tb),
                "vmin": min(ta, tb),
                "vmax": max(ta, tb),
            }[op]
        dsigned = dt == "s32"
        if sat:
            tmp = clamp(tmp, *_sat_range(dsel, dsigned))
    second = op2.replace("wrap", "").replace("clamp", "")
    if second:
        # vset has no destination type: its c takes atype's sign (the H100 reading; the
        # ISA ties c's sign to dtype, which vset lacks)
        cv = signed(c, 32) if dsigned or (op == "vset" and at == "s32") else c
        tmp = {"add": tmp + cv, "min": min(tmp, cv), "max": max(tmp, cv)}[second]
    return _merge(tmp & 0xFFFFFFFF, c, dsel) & 0xFFFFFFFF


def _scalar_cases() -> list[Case]:
    out = []
    a = [x for x in WORDS for _ in WORDS]
    b = [y for _ in WORDS for y in WORDS]
    c = [WORDS[(i * 5 + 2) % len(WORDS)] for i in range(len(a))]
    inputs = {"a": ("b32", a), "b": ("b32", b), "c": ("b32", c)}
    for op in ("vadd", "vsub", "vabsdiff", "vmin", "vmax"):
        body, outputs = [], {}
        k = 0
        for dt, at, bt in product(("u32", "s32"), repeat=3):
            forms = [("", "", "", False, ""), ("b1", "h1", "", True, ""), ("", "", "", True, "add")]
            forms += [("", "b3", "h0", False, "min"), ("", "h0", "b2", True, "max")]
            forms += [("", "", "", False, "#b2"), ("b0", "b3", "", True, "#h1")]
            for asel, bsel, _, sat, second in forms:
                dsel = second[1:] if second.startswith("#") else ""
                op2 = "" if second.startswith("#") else second
                mods = f".{dt}.{at}.{bt}" + (".sat" if sat else "") + (f".{op2}" if op2 else "")
                d = f"%o{k}" + (f".{dsel}" if dsel else "")
                srcs = f"%a{'.' + asel if asel else ''}, %b{'.' + bsel if bsel else ''}"
                tail = ", %c" if (op2 or dsel) else ""
                body.append(f"{op}{mods} {d}, {srcs}{tail};")
                ref = partial(
                    _scalar, op=op, dt=dt, at=at, bt=bt, asel=asel, bsel=bsel, dsel=dsel,
                    sat=sat, op2=op2,
                )  # fmt: skip
                outputs[f"o{k}"] = ("b32", ref)
                k += 1
        out.append(
            make(
                f"{op}.scalar",
                FAMILY,
                "\n".join(body),
                inputs,
                outputs,
                hw_deviation=SCALAR_DEVIATION,
            )
        )
    # shifts: vshl/vshr.dtype.atype.u32{.sat}.mode
    shifts = [0, 1, 4, 15, 16, 31, 32, 33, 255, 0x10000, 0xFFFFFFFF]
    a2 = [x for x in WORDS for _ in shifts]
    b2 = [s for _ in WORDS for s in shifts]
    c2 = [WORDS[(i * 3 + 1) % len(WORDS)] for i in range(len(a2))]
    inputs2 = {"a": ("b32", a2), "b": ("b32", b2), "c": ("b32", c2)}
    for op in ("vshl", "vshr"):
        body, outputs = [], {}
        k = 0
        for dt, at, mode, sat in product(
            ("u32", "s32"), ("u32", "s32"), ("clamp", "wrap"), (False, True)
        ):
            for asel, second in (("", ""), ("h1", "add"), ("b2", "#b1")):
                dsel = second[1:] if second.startswith("#") else ""
                op2 = "" if second.startswith("#") else second
                mods = f".{dt}.{at}.u32" + (".sat" if sat else "") + f".{mode}"
                mods += f".{op2}" if op2 else ""
                d = f"%o{k}" + (f".{dsel}" if dsel else "")
                tail = ", %c" if (op2 or dsel) else ""
                body.append(f"{op}{mods} {d}, %a{'.' + asel if asel else ''}, %b{tail};")
                ref = partial(
                    _scalar, op=op, dt=dt, at=at, bt="u32", asel=asel, bsel="", dsel=dsel,
                    sat=sat, op2=mode + op2,
                )  # fmt: skip
                outputs[f"o{k}"] = ("b32", ref)
                k += 1
        out.append(
            make(
                f"{op}.scalar",
                FAMILY,
                "\n".join(body),
                inputs2,
                outputs,
                hw_deviation=SCALAR_DEVIATION,
            )
        )
    # vset.atype.btype.cmp
    body, outputs = [], {}
    k = 0
    for at, bt in product(("u32", "s32"), repeat=2):
        for cmp, asel, bsel, second in (
            ("eq", "", "", ""),
            ("lt", "b0", "b3", ""),
            ("ge", "h1", "h0", "add"),
            ("gt", "", "", "max"),
            ("le", "b1", "", "#b2"),
            ("ne", "h0", "b1", "min"),
        ):
            dsel = second[1:] if second.startswith("#") else ""
            op2 = "" if second.startswith("#") else second
            d = f"%o{k}" + (f".{dsel}" if dsel else "")
            tail = ", %c" if (op2 or dsel) else ""
            srcs = f"%a{'.' + asel if asel else ''}, %b{'.' + bsel if bsel else ''}"
            body.append(f"vset.{at}.{bt}.{cmp}{'.' + op2 if op2 else ''} {d}, {srcs}{tail};")
            ref = partial(
                _scalar, op="vset", dt=cmp, at=at, bt=bt, asel=asel, bsel=bsel, dsel=dsel,
                sat=False, op2=op2,
            )  # fmt: skip
            outputs[f"o{k}"] = ("b32", ref)
            k += 1
    out.append(make("vset.scalar", FAMILY, "\n".join(body), inputs, outputs))
    return out


def _vmad(
    a: int, b: int, c: int, *, at: str, bt: str, neg: str, po: bool, sat: bool, shift: int
) -> int:
    ta, tb = _part(a, "", at == "s32"), _part(b, "", bt == "s32")
    pneg = ("a" in neg) != ("b" in neg)
    cneg = "c" in neg
    is_signed = at == "s32" or bt == "s32" or pneg or cneg
    cv = signed(c, 32) if is_signed else c
    p = -ta * tb if pneg else ta * tb
    r = (p + (-cv if cneg else cv) + (1 if po else 0)) >> shift
    if sat:
        r = clamp(r, -(2**31), 2**31 - 1) if is_signed else clamp(r, 0, 2**32 - 1)
    return r & 0xFFFFFFFF


def _vmad_cases() -> list[Case]:
    vals = [0, 1, 2, 0x7F, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x12345]
    a = [x for x in vals for _ in vals]
    b = [y for _ in vals for y in vals]
    c = [vals[(i * 3 + 1) % len(vals)] for i in range(len(a))]
    body, outputs = [], {}
    forms = [
        ("u32", "u32", "u32", "", False, False, 0),
        ("s32", "u32", "s32", "a", False, True, 0),
        ("s32", "u32", "u32", "c", False, False, 0),
        ("s32", "s32", "s32", "ab", False, True, 7),
        ("u32", "u32", "u32", "", True, True, 15),
        ("s32", "s32", "u32", "b", False, False, 15),
        ("u32", "u32", "u32", "", False, True, 0),
    ]
    for k, (dt, at, bt, neg, po, sat, shift) in enumerate(forms):
        mods = f".{dt}.{at}.{bt}" + (".po" if po else "") + (".sat" if sat else "")
        mods += f".shr{shift}" if shift else ""
        srcs = ", ".join(("-" if x in neg else "") + f"%{x}" for x in "abc")
        body.append(f"vmad{mods} %o{k}, {srcs};")
        outputs[f"o{k}"] = (
            "b32",
            partial(_vmad, at=at, bt=bt, neg=neg, po=po, sat=sat, shift=shift),
        )
    body.append("vmad.u32.u32.u32 %h, %a.h1, %b.b2, %c;")
    outputs["h"] = (
        "b32",
        lambda x, y, z: ((((x >> 16) & 0xFFFF) * ((y >> 16) & 0xFF)) + z) & 0xFFFFFFFF,
    )
    inputs = {"a": ("b32", a), "b": ("b32", b), "c": ("b32", c)}
    return [
        make(
            "vmad",
            FAMILY,
            "\n".join(body),
            inputs,
            outputs,
            hw_deviation="ptxas's expansion sign-extends c for unsigned results and does not "
            "saturate .po results the ISA way",
        )
    ]


def _simd(
    a: int,
    b: int,
    c: int,
    *,
    op: str,
    n: int,
    dt: str,
    at: str,
    bt: str,
    asel: str,
    bsel: str,
    mask: str,
    sat: bool,
    add: bool,
) -> int:
    w = 32 // n
    field = (1 << w) - 1
    both = (b << 32) | a
    aidx = [int(ch) for ch in reversed((asel or ("h10" if n == 2 else "b3210"))[1:])]
    bidx = [int(ch) for ch in reversed((bsel or ("h32" if n == 2 else "b7654"))[1:])]
    if asel:
        aidx = [int(ch) for ch in reversed(asel[1:])]
    if bsel:
        bidx = [int(ch) for ch in reversed(bsel[1:])]
    lanes = [str(i) in (mask[1:] if mask else "".join(map(str, range(n)))) for i in range(n)]

    def lane(v: int, k: int, s: bool) -> int:
        x = (v >> (w * k)) & field
        return signed(x, w) if s else x

    d = c if add else 0
    for i in range(n):
        x, y = lane(both, aidx[i], at == "s32"), lane(both, bidx[i], bt == "s32")
        if op == "vset":
            t = int(
                {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y}.get(dt, x >= y)
            )
        else:
            t = {
                "vadd": x + y,
                "vsub": x - y,
                "vavrg": (x + y + 1) >> 1 if x + y >= 0 else (x + y) >> 1,
                "vabsdiff": abs(x - y),
                "vmin": min(x, y),
                "vmax": max(x, y),
            }[op]
            if sat:
                lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if dt == "s32" else (0, field)
                t = clamp(t, lo, hi)
        if add:
            d += t if lanes[i] else 0
        else:
            d |= ((t if lanes[i] else (c >> (w * i))) & field) << (w * i)
    return d & 0xFFFFFFFF


def _simd_cases() -> list[Case]:
    out = []
    a = [x for x in WORDS for _ in WORDS]
    b = [y for _ in WORDS for y in WORDS]
    c = [WORDS[(i * 7 + 4) % len(WORDS)] for i in range(len(a))]
    inputs = {"a": ("b32", a), "b": ("b32", b), "c": ("b32", c)}
    for n in (2, 4):
        sel_forms = (
            [("", "", ""), ("h01", "h23", "h1"), ("h33", "h10", "h0"), ("h20", "h13", "h10")]
            if n == 2
            else [
                ("", "", ""),
                ("b0123", "b7654", "b20"),
                ("b4567", "b0000", "b3"),
                ("b7531", "b6420", "b310"),
            ]
        )
        for op in ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax", "vset"):
            body, outputs = [], {}
            k = 0
            types = [
                ("u32", "u32", "u32"),
                ("s32", "s32", "s32"),
                ("s32", "u32", "s32"),
                ("u32", "s32", "u32"),
            ]
            for dt, at, bt in types:
                for asel, bsel, mask in sel_forms:
                    for sat, add in ((False, False), (True, False), (False, True)):
                        if op == "vset":
                            if sat:
                                continue
                            cmp = ("lt", "ge", "ne", "eq")[k % 4]
                            mods = f".{at}.{bt}.{cmp}" + (".add" if add else "")
                            dkey = cmp
                        else:
                            mods = (
                                f".{dt}.{at}.{bt}"
                                + (".sat" if sat else "")
                                + (".add" if add else "")
                            )
                            dkey = dt
                        d = f"%o{k}" + (f".{mask}" if mask else "")
                        srcs = f"%a{'.' + asel if asel else ''}, %b{'.' + bsel if bsel else ''}"
                        body.append(f"{op}{n}{mods} {d}, {srcs}, %c;")
                        ref = partial(
                            _simd, op=op, n=n, dt=dkey, at=at, bt=bt, asel=asel, bsel=bsel,
                            mask=mask, sat=sat, add=add,
                        )  # fmt: skip
                        outputs[f"o{k}"] = ("b32", ref)
                        k += 1
            out.append(make(f"{op}{n}", FAMILY, "\n".join(body), inputs, outputs))
    return out


def cases() -> list[Case]:
    return _scalar_cases() + _vmad_cases() + _simd_cases()
