"""Lane bits: which bits of a value can differ between the lanes of one warp.

The varying propagation (:mod:`ptxopt.analysis.divergence`) is a two-point lattice: a
value is uniform or varying.  Kernels that split a block into warps compute the warp
index from the thread index — ``%tid.x >> 5``, ``%tid.x / 32``, ``%tid.x & ~31`` — and
ptxas keeps those values in uniform registers.  They are uniform for a reason the
two-point lattice cannot see: within one warp only the low five bits of ``%tid.x``
differ, and the arithmetic throws exactly those bits away.

This module refines a varying value with a *lane mask*: a set of bits outside which
every active lane of a warp holds the same bits.  A value whose mask becomes empty is
uniform.  The masks come from known bits of the block shape and of the arithmetic, not
from matching idioms:

* **Block shape** (``.reqntid`` / ``.maxntid``).  The 32 lanes of a warp are 32
  consecutive linear thread ids ``x + X*(y + Y*z)``.  When the block is one-dimensional
  (the directive bounds ``Y`` and ``Z`` to 1), ``%tid.x`` is the linear id, so only its
  low five bits differ within a warp, and ``%tid.y``/``%tid.z`` are 0.  When the exact
  width ``X`` (``.reqntid``) is a multiple of 32, each warp lies in one row: again only
  the low five bits of ``%tid.x`` differ and ``%tid.y``/``%tid.z`` are uniform.
  ``%laneid`` always differs in its low five bits only.
* **Arithmetic** on a refined value and uniform values (exact bit transfer, sound under
  wrap-around): ``mov``; ``and``/``or``/``xor`` (a constant ``and`` clears bits);
  shifts by a constant; integer widening and narrowing ``cvt``; ``add``/``sub``/
  ``mul.lo`` (a carry can reach every bit above the lowest varying one);
  multiplication and unsigned division by a power of two; unsigned division by a
  multiple of ``2^k`` when only the low ``k`` bits vary (``(32q + r) / 32m = q / m`` for
  ``r < 32``); ``bfe`` with constant position and length; ``selp`` with a uniform
  condition.  Anything else is fully varying.

Guarded definitions, phis and divergent control flow keep the ordinary rules of the
propagation: a mask only ever describes straight-line arithmetic.  Soundness is checked
by execution (the interpreter's uniform-claims checker) in ``tests/test_lane_bits.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ptxopt.ir.core import Inst, Value
from ptxopt.ptx.ast import Imm, Reg

__all__ = ["BlockShape", "block_shape", "result_mask", "special_mask"]

LANE_BITS = 0x1F

_DIRECTIVE = re.compile(r"^\s*\.(reqntid|maxntid)\s+(.*?)\s*;?\s*$")


class BlockShape:
    """What the function's thread-block directives guarantee."""

    __slots__ = ("one_dimensional", "rows_hold_warps")

    def __init__(self, one_dimensional: bool = False, rows_hold_warps: bool = False) -> None:
        #: ``ntid.y == ntid.z == 1``: ``%tid.x`` is the linear thread id.
        self.one_dimensional = one_dimensional
        #: ``ntid.x`` is a known multiple of 32: every warp lies in one row.
        self.rows_hold_warps = rows_hold_warps

    @property
    def warps_split_tid_x(self) -> bool:
        """Lanes of one warp differ only in the low five bits of ``%tid.x``."""
        return self.one_dimensional or self.rows_hold_warps


def _dims(text: str) -> list[int] | None:
    try:
        vals = [int(p.strip(), 0) for p in text.split(",") if p.strip()]
    except ValueError:
        return None
    if not 1 <= len(vals) <= 3:
        return None
    return vals + [1] * (3 - len(vals))


def block_shape(directives: Sequence[str]) -> BlockShape:
    """The shape facts of ``.reqntid`` / ``.maxntid`` directives (kept as text)."""
    one_d = False
    rows = False
    for d in directives:
        m = _DIRECTIVE.match(d)
        if m is None:
            continue
        dims = _dims(m.group(2))
        if dims is None:
            continue
        x, y, z = dims
        if y == 1 and z == 1:
            one_d = True  # both directives bound ntid.y and ntid.z by 1
        if m.group(1) == "reqntid" and x > 0 and x % 32 == 0:
            rows = True
    return BlockShape(one_d, rows)


def special_mask(name: str, shape: BlockShape) -> int | None:
    """Lane mask of a special register the seed table calls varying: ``None`` when
    nothing is known (fully varying), ``0`` when the register is uniform per warp."""
    if name == "%laneid":
        return LANE_BITS
    if name == "%tid.x" and shape.warps_split_tid_x:
        return LANE_BITS
    if name in ("%tid.y", "%tid.z") and shape.warps_split_tid_x:
        return 0
    return None


# -- transfer functions -------------------------------------------------------------------

_WIDTH = {"8": 8, "16": 16, "32": 32, "64": 64}
_WIDTH_RE = re.compile(r"\.[bus](8|16|32|64)")
_WIDTHS: dict[str, int | None] = {}  # modifier -> its width (memo of _width)

# the opcodes result_mask has a rule for
_KNOWN = frozenset(
    {"mov", "and", "or", "xor", "shl", "shr", "add", "sub", "mul", "div", "cvt", "bfe", "selp"}
)


def _width(t: str) -> int | None:
    w = _WIDTHS.get(t, -1)
    if w != -1:
        return w
    m = _WIDTH_RE.fullmatch(t)
    w = _WIDTH[m.group(1)] if m else None
    _WIDTHS[t] = w
    return w


def _from_lowest(mask: int, width: int) -> int:
    """Every bit at or above the lowest bit of ``mask`` (what a carry can reach)."""
    if not mask:
        return 0
    low = (mask & -mask).bit_length() - 1
    return ((1 << width) - 1) & ~((1 << low) - 1)


def _operands(inst: Inst) -> list[Value | int] | None:
    """The source operands of a plain ``op d, a, b, ...``: SSA values or integer
    immediates; ``None`` for any other shape (vectors, addresses, pairs)."""
    ops = inst.ast.operands
    if len(inst.defs) != 1 or len(ops) < 2 or not isinstance(ops[0], Reg):
        return None
    out: list[Value | int] = []
    k = 0
    uses = inst.uses
    for op in ops[1:]:
        if isinstance(op, Reg):
            if k >= len(uses):
                return None
            u = uses[k]
            k += 1
            if isinstance(u, Value):
                out.append(u)
            elif isinstance(u, Imm) and isinstance(u.value, int):
                out.append(u.value)
            else:
                return None
        elif isinstance(op, Imm) and isinstance(op.value, int):
            out.append(op.value)
        else:
            return None
    if k != len(uses):
        return None
    return out


def result_mask(inst: Inst, mask_of: Callable[[Value], int | None]) -> int | None:
    """Lane mask of ``inst``'s single result given the masks of its operands
    (``mask_of``: 0 for a uniform value, ``None`` for a fully varying one).  ``None``
    when the result is fully varying or the instruction is not one this module knows."""
    info = inst.info
    if info is None or inst.carry_in is not None or inst.carry_out is not None:
        return None
    if inst.ast.opcode not in _KNOWN:
        return None  # (no rule below)
    srcs = _operands(inst)
    if srcs is None:
        return None
    masks: list[int | None] = []
    consts: list[int | None] = []
    for s in srcs:
        if isinstance(s, Value):
            masks.append(mask_of(s))
            consts.append(None)
        else:
            masks.append(0)
            consts.append(s)
    if any(m is None for m in masks):
        return None
    ms: list[int] = [m for m in masks if m is not None]
    op = inst.ast.opcode
    mods = inst.ast.mods
    types = [m for m in mods if _width(m) is not None]
    if not types:
        return None
    width = _width(types[0])
    assert width is not None
    full = (1 << width) - 1
    signed = types[0].startswith(".s")

    if op == "mov" and len(ms) == 1:
        return ms[0] & full
    if op in ("and", "or", "xor") and len(ms) == 2:
        if op == "and":
            for i in (0, 1):
                c = consts[1 - i]
                if c is not None:
                    return ms[i] & c & full
        return (ms[0] | ms[1]) & full
    if op in ("shl", "shr") and len(ms) == 2:
        k = consts[1]
        if k is None:
            return None if ms[0] or ms[1] else 0
        k &= 0xFFFFFFFF  # the amount is a .u32: a negative immediate shifts by >= width
        if op == "shl":
            return (ms[0] << min(k, width)) & full
        if k >= width:
            return full if signed and ms[0] >> (width - 1) & 1 else 0
        out = ms[0] >> k
        if signed and ms[0] >> (width - 1) & 1:
            out |= full & ~((1 << (width - k)) - 1)  # copies of a varying sign bit
        return out
    if op in ("add", "sub") and len(ms) == 2 and not (set(mods) & {".sat", ".cc"}):
        return _from_lowest(ms[0] | ms[1], width)
    if op == "mul" and len(ms) == 2 and ".lo" in mods:
        for i in (0, 1):
            c = consts[1 - i]
            if c is not None and c > 0 and c & (c - 1) == 0:
                return (ms[i] << (c.bit_length() - 1)) & full
        return _from_lowest(ms[0] | ms[1], width)
    if op == "mul" and len(ms) == 2 and ".wide" in mods:
        wide = (1 << (2 * width)) - 1
        for i in (0, 1):
            c = consts[1 - i]
            sign_varies = signed and ms[i] >> (width - 1) & 1
            if c is not None and c > 0 and c & (c - 1) == 0 and not sign_varies:
                return (ms[i] << (c.bit_length() - 1)) & wide
        return None
    if op == "div" and len(ms) == 2 and not signed:
        c = consts[1]
        if c is None or c <= 0:
            return None if ms[0] or ms[1] else 0
        tz = (c & -c).bit_length() - 1
        if ms[0] < (1 << tz):  # only bits below the divisor's factor 2^tz vary
            return 0
        if c & (c - 1) == 0:
            return ms[0] >> tz
        return None
    if op == "cvt" and len(ms) == 1 and len(types) == 2 and not set(mods) & {".sat"}:
        dw, sw = _width(types[0]), _width(types[1])
        assert dw is not None and sw is not None
        m = ms[0] & ((1 << sw) - 1)
        if types[1].startswith(".s") and m >> (sw - 1) & 1:
            m |= ((1 << dw) - 1) & ~((1 << sw) - 1)  # sign extension copies the top bit
        return m & ((1 << dw) - 1)
    if op == "bfe" and len(ms) == 3 and consts[1] is not None and consts[2] is not None:
        pos, ln = consts[1] & 0xFF, consts[2] & 0xFF
        if ln == 0:
            return 0
        if pos >= width:
            return full if signed and ms[0] >> (width - 1) & 1 else 0
        ln = min(ln, width - pos)
        out = (ms[0] >> pos) & ((1 << ln) - 1)
        if signed and out >> (ln - 1) & 1:
            out |= full & ~((1 << ln) - 1)
        return out
    if op == "selp" and len(ms) == 3:
        if ms[2]:
            return None
        return (ms[0] | ms[1]) & full
    return None
