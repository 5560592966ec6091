"""PTX fundamental types (PTX ISA 9.0, section "Fundamental Types").

A type modifier is spelled with its leading dot (``".s32"``, ``".f16x2"``).  The
tables here answer how wide a type is, which register class holds it (registers of
one width are interchangeable in PTX: a ``.b32`` register can hold an ``.f32``), and
whether it is a float, a signed or an unsigned integer.  Packed and narrow
floating-point formats used by the tensor-core and ``cvt`` families (``.e4m3x2``,
``.e2m1x2``, ``.ue8m0x2`` …) are included so that every type-like modifier is
recognized, even where only ``cvt``/``mma`` accept it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from ptxopt.ptx.ast import Instr

# name -> (bit width, kind); kind is one of "pred", "bits", "uint", "sint", "float".
_TYPES: dict[str, tuple[int, str]] = {
    ".pred": (1, "pred"),
    ".b8": (8, "bits"),
    ".b16": (16, "bits"),
    ".b32": (32, "bits"),
    ".b64": (64, "bits"),
    ".b128": (128, "bits"),
    ".u8": (8, "uint"),
    ".u16": (16, "uint"),
    ".u32": (32, "uint"),
    ".u64": (64, "uint"),
    ".s8": (8, "sint"),
    ".s16": (16, "sint"),
    ".s32": (32, "sint"),
    ".s64": (64, "sint"),
    # packed integers (min/max/add/sub on 16x2, dp2a/dp4a, mma)
    ".u16x2": (32, "uint"),
    ".s16x2": (32, "sint"),
    ".u4": (4, "uint"),
    ".s4": (4, "sint"),
    ".b1": (1, "bits"),
    # floating point
    ".f16": (16, "float"),
    ".f16x2": (32, "float"),
    ".bf16": (16, "float"),
    ".bf16x2": (32, "float"),
    ".f32": (32, "float"),
    ".f32x2": (64, "float"),
    ".f64": (64, "float"),
    ".tf32": (32, "float"),
    # narrow formats (cvt, mma, tcgen05)
    ".e4m3": (8, "float"),
    ".e5m2": (8, "float"),
    ".e4m3x2": (16, "float"),
    ".e5m2x2": (16, "float"),
    ".e4m3x4": (32, "float"),
    ".e5m2x4": (32, "float"),
    ".e2m3": (8, "float"),
    ".e3m2": (8, "float"),
    ".e2m3x2": (16, "float"),
    ".e3m2x2": (16, "float"),
    ".e2m3x4": (32, "float"),
    ".e3m2x4": (32, "float"),
    ".e2m1": (4, "float"),
    ".e2m1x2": (8, "float"),
    ".e2m1x4": (16, "float"),
    ".ue8m0": (8, "float"),
    ".ue8m0x2": (16, "float"),
}

#: Every type modifier this module knows, in table order.
TYPE_MODIFIERS: tuple[str, ...] = tuple(_TYPES)
_TYPE_SET: frozenset[str] = frozenset(_TYPES)


def is_type(mod: str) -> bool:
    """True if ``mod`` (with its dot) is a PTX type modifier."""
    return mod in _TYPE_SET


def bit_width(ty: str) -> int:
    """Bits in one value of ``ty``: ``.f16x2`` -> 32, ``.pred`` -> 1."""
    try:
        return _TYPES[ty][0]
    except KeyError:
        raise ValueError(f"unknown PTX type {ty!r}") from None


def reg_class(ty: str) -> str:
    """The register class that holds a ``ty`` value: ``"pred"``, ``"b16"``,
    ``"b32"``, ``"b64"`` or ``"b128"``.  Types narrower than 16 bits (``.b8``,
    ``.e4m3``) live in 16-bit registers, as PTX allocates them."""
    width, kind = _TYPES.get(ty, (0, ""))
    if kind == "pred":
        return "pred"
    if width == 0:
        raise ValueError(f"unknown PTX type {ty!r}")
    if width <= 16:
        return "b16"
    if width <= 32:
        return "b32"
    if width <= 64:
        return "b64"
    return "b128"


def is_float(ty: str) -> bool:
    return _TYPES.get(ty, (0, ""))[1] == "float"


def is_signed(ty: str) -> bool:
    """True for signed integers (``.s8`` … ``.s64``, ``.s16x2``, ``.s4``)."""
    return _TYPES.get(ty, (0, ""))[1] == "sint"


def is_unsigned(ty: str) -> bool:
    return _TYPES.get(ty, (0, ""))[1] == "uint"


def is_int(ty: str) -> bool:
    """True for signed and unsigned integers (not for untyped ``.bN`` bits)."""
    return _TYPES.get(ty, (0, ""))[1] in ("sint", "uint")


def is_bits(ty: str) -> bool:
    return _TYPES.get(ty, (0, ""))[1] == "bits"


def is_pred(ty: str) -> bool:
    return ty == ".pred"


def type_mods(mods: tuple[str, ...]) -> tuple[str, ...]:
    """The type-like modifiers of ``mods`` in source order."""
    return tuple(m for m in mods if m in _TYPE_SET)


def instr_type(instr: Instr) -> str | None:
    """The last type-like modifier of ``instr`` (``cvt.rn.f32.s32`` -> ``.s32``;
    ``setp.lt.s32`` -> ``.s32``), or ``None`` if it has none."""
    for m in reversed(instr.mods):
        if m in _TYPE_SET:
            return m
    return None
