"""Expression keys and eligibility classes shared by the commoning passes.

GvnCse (phase 49), OriReassociateAndCommon (phase 50) and LateOriCommoning (phase 64)
of spec 03 all ask the same two questions about an instruction: *may it be commoned
at all* (its eligibility class) and *which other instructions compute the same
value* (its key).  Both answers live here so the three passes cannot disagree.

The key of an instruction is a hashable tuple built from

* the opcode and every modifier (types, rounding, ``.ftz``, cache operators, state
  space: a ``ld.shared`` never matches a ``ld.global``),
* the shape of the destination operands and the declared type of every result (a
  ``.f32`` result never stands in for a ``.u32`` one, so a replacement is always
  type-correct),
* the source operands with every register slot replaced by the id of the SSA value it
  reads (immediates and symbols stay as written),
* the guard value and its polarity, and the tied old values of a partial definition
  (a guarded instruction keeps its old value where the guard is false, so two guarded
  instructions agree only when guard, polarity and old values all agree: the
  predicate-compatibility rule of the spec).

For a commutative operation the first two sources are put in a canonical order
first (spec: "commutativity normalization"), so ``a + b`` and ``b + a`` share a key.

Memory: :func:`mem_access` describes the bytes an instruction reads or writes
(state space, base register or symbol, offset, size) and :func:`may_alias` decides,
conservatively, whether two accesses can overlap.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from ptxopt.ir.core import Func, Inst, Value
from ptxopt.ir.operands import rebuild
from ptxopt.ptx.ast import Addr, Imm, Operand, ParenList, Reg, Sym
from ptxopt.ptx.opcodes import OpInfo, is_volatile_special_register
from ptxopt.ptx.types import bit_width, is_float

__all__ = [
    "Eligibility",
    "MemAccess",
    "eligibility",
    "expr_key",
    "may_alias",
    "mem_access",
    "readonly_param_symbols",
    "TRANSCENDENTALS",
]


class Eligibility(Enum):
    """The commoning classes (spec 03, "Instruction Eligibility"), in our terms."""

    NONE = "none"  # never commoned: side effects, atomics, volatile reads, calls
    PURE = "pure"  # arithmetic, logic, compare/select, conversions, moves
    TRANSCENDENTAL = "transcendental"  # MUFU-class: sin cos ex2 lg2 rsqrt tanh .approx
    WARP = "warp"  # shfl.sync, vote.sync, redux.sync, match.sync (same lanes, same bits)
    INVARIANT_LOAD = "invariant-load"  # ld.const, ld.global.nc, ldu, tex, read-only ld.param
    LOAD = "load"  # any other plain load: valid until an aliasing store or a barrier


#: MUFU-class opcodes (an ``.approx`` ``rcp``/``sqrt`` is one too).
TRANSCENDENTALS = frozenset({"sin", "cos", "ex2", "lg2", "rsqrt", "tanh"})
_WARP = frozenset({"shfl", "vote", "redux", "match"})
_LOADS = frozenset({"ld", "ldu", "tex", "tld4", "txq", "suq"})
# cache operators that ask for a fresh fetch every time
_FRESH = frozenset({".cv", ".volatile", ".mmio"})


def _volatile_read(inst: Inst) -> bool:
    for u in inst.uses:
        if isinstance(u, Value) and u.kind == "special" and is_volatile_special_register(u.var):
            return True
    return False


def eligibility(inst: Inst, readonly_params: frozenset[str] = frozenset()) -> Eligibility:
    """The class of ``inst``.  ``readonly_params``: ``.param`` symbols never written
    in the function (:func:`readonly_param_symbols`), whose loads are invariant."""
    info = inst.info
    if info is None or inst.raw is not None or not inst.defs:
        return Eligibility.NONE
    if inst.carry_in is not None or inst.carry_out is not None:
        return Eligibility.NONE
    name = info.name
    if info.pure:
        if _volatile_read(inst):
            return Eligibility.NONE
        if not any(isinstance(u, Value) for u in inst.uses) and inst.pred is None:
            # a constant or address materialization: ptxas recomputes it for free, and
            # commoning it only stretches a live range (and can empty a loop preheader,
            # which changes ptxas's unrolling: collatz 203 -> 13170 SASS on sm_75)
            return Eligibility.NONE
        ops = inst.ast.operands
        if name == "mov" and len(ops) == 2 and isinstance(ops[1], Reg):
            # a plain copy computes nothing: removing copies is copy propagation's job,
            # and commoning two copies of one value merges registers that were kept
            # apart on purpose (Triton's separate wgmma accumulators: 994 -> 1454 SASS)
            return Eligibility.NONE
        if name in TRANSCENDENTALS or (name in ("rcp", "sqrt") and ".approx" in inst.ast.mods):
            return Eligibility.TRANSCENDENTAL
        return Eligibility.PURE
    if name in _WARP:
        # the deprecated forms without .sync depend on which lanes happen to be active
        if ".sync" in inst.ast.mods and not info.side_effects and info.mem is None:
            return Eligibility.WARP
        return Eligibility.NONE
    if name in _LOADS and info.mem == "read":
        if info.side_effects or info.barrier or _FRESH & set(inst.ast.mods):
            return Eligibility.NONE
        if info.invariant_mem or info.space == ".const":
            return Eligibility.INVARIANT_LOAD
        if info.space == ".param":
            acc = mem_access(inst)
            if acc is not None and acc.symbol is not None and acc.symbol in readonly_params:
                return Eligibility.INVARIANT_LOAD
        return Eligibility.LOAD
    return Eligibility.NONE


# -- keys -------------------------------------------------------------------------------


def _names(inst: Inst) -> Iterator[str | Imm]:
    for u in inst.uses:
        yield u if isinstance(u, Imm) else f"%#{u.id}"


def _order(op: Operand) -> tuple[int, str]:
    """A total order on register and immediate sources (registers first)."""
    if isinstance(op, Reg):
        return (0, f"{len(op.name):04d}{op.name}")
    return (1, str(op))


def _plain_key(inst: Inst, info: OpInfo) -> tuple[object, ...] | None:
    """The key of an instruction whose operands are all plain registers and immediates
    (most of them), without rebuilding operands: the sources as value ids and
    immediates in operand order (a commutative pair in a fixed order), the results as
    their count.  Two plain instructions get equal keys exactly when
    :func:`expr_key`'s general form would be equal; a plain key never equals a general
    one (its first element is ``None``)."""
    ast = inst.ast
    ops = ast.operands
    n = len(ops)
    defs = info.defs
    for op in ops:
        t = type(op)
        if t is not Reg and t is not Imm:
            return None
    srcs: list[object] = []
    uses = inst.uses
    j = 0
    for k in info.uses:
        if k >= n or k in defs:
            continue
        op = ops[k]
        if type(op) is Imm:  # written in the source: no register slot
            srcs.append(op)
            continue
        if j >= len(uses):
            return None
        u = uses[j]
        j += 1
        srcs.append(u if type(u) is Imm else u.id)  # type: ignore[union-attr]
    if j != len(uses):
        return None
    if info.commutative and len(srcs) >= 2:
        a, b = srcs[0], srcs[1]
        if _plain_order(b) < _plain_order(a):
            srcs[0], srcs[1] = b, a
    olds = tuple(o.id if o is not None else -1 for o in inst.olds) if inst.olds else ()
    pred = (inst.pred.id, inst.pred_neg) if inst.pred is not None else None
    return (
        None,
        ast.opcode,
        ast.mods,
        sum(1 for k in defs if k < n),
        tuple(d.type for d in inst.defs),
        tuple(srcs),
        pred,
        olds,
    )


def _plain_order(x: object) -> tuple[int, int, str]:
    """Registers (by value id) before immediates (by spelling)."""
    if type(x) is int:
        return (0, x, "")
    return (1, 0, str(x))


def expr_key(inst: Inst) -> tuple[object, ...] | None:
    """The key of ``inst`` (see the module docstring), or ``None`` when its operands
    cannot be described (a form the key does not model)."""
    info = inst.info
    if info is None:
        return None
    plain = _plain_key(inst, info)
    if plain is not None:
        return plain
    ast = inst.ast
    ops = ast.operands
    defs = set(info.defs)
    use_ops = [k for k in info.uses if k < len(ops) and k not in defs]
    try:
        it = _names(inst)
        srcs = tuple(rebuild(ops[k], it) for k in use_ops)
    except (ValueError, StopIteration):
        return None
    if info.commutative and len(srcs) >= 2:
        a, b = srcs[0], srcs[1]
        if isinstance(a, Reg | Imm) and isinstance(b, Reg | Imm) and _order(b) < _order(a):
            srcs = (b, a, *srcs[2:])
    dshape = tuple(rebuild(ops[k], iter(["%d"] * 64)) for k in info.defs if k < len(ops))
    olds = tuple(o.id if o is not None else -1 for o in inst.olds) if inst.olds else ()
    pred = (inst.pred.id, inst.pred_neg) if inst.pred is not None else None
    return (
        ast.opcode,
        ast.mods,
        dshape,
        tuple(d.type for d in inst.defs),
        srcs,
        pred,
        olds,
    )


# -- memory -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemAccess:
    """Bytes ``[offset, offset + size)`` from ``base`` (an SSA value id) or ``symbol``
    in state space ``space`` (``"global"``, ``"shared"``, ``"local"``, ``"param"``,
    ``"const"``, ``""`` = generic).  ``size`` ``None``: unknown extent."""

    space: str
    base: int | None
    symbol: str | None
    offset: int
    size: int | None


def _space(sp: str | None) -> str:
    if not sp:
        return ""
    s = sp.lstrip(".")
    if s.startswith("shared"):
        return "shared"
    return s


def _access_size(inst: Inst) -> int | None:
    info = inst.info
    assert info is not None
    ty = info.type
    if ty is None:
        return None
    try:
        width = bit_width(ty)
    except ValueError:
        return None
    n = 1
    for m in inst.ast.mods:
        if m.startswith(".v") and m[2:].isdigit():
            n = int(m[2:])
    return max(1, width // 8) * n


def mem_access(inst: Inst, which: int = 0) -> MemAccess | None:
    """The access made through address operand ``which`` of ``inst`` (``None`` if the
    instruction has no such plain address)."""
    info = inst.info
    if info is None or which >= len(info.addrs):
        return None
    k = info.addrs[which]
    ops = inst.ast.operands
    if k >= len(ops):
        return None
    addr = ops[k]
    if not isinstance(addr, Addr) or addr.extra:
        return None
    space = _space(info.space)
    size = _access_size(inst)
    base = addr.base
    if base is None:
        return MemAccess(space, None, None, addr.offset, size)
    if isinstance(base, Sym):
        return MemAccess(space, None, base.name, addr.offset, size)
    if isinstance(base, Reg):
        # the address register is the first use slot that belongs to this operand
        slot = _first_slot(inst, k)
        if slot is None:
            return None
        v = inst.uses[slot]
        if isinstance(v, Imm):
            return MemAccess(space, None, None, int(v.value) + addr.offset, size)
        return MemAccess(space, v.id, None, addr.offset, size)
    return None


def _first_slot(inst: Inst, k: int) -> int | None:
    """Index in ``inst.uses`` of the first register slot of operand ``k``."""
    from ptxopt.ir.operands import reg_names

    info = inst.info
    assert info is not None
    ops = inst.ast.operands
    defs = set(info.defs)
    n = 0
    for j in info.uses:
        if j >= len(ops) or j in defs:
            continue
        if j == k:
            return n if n < len(inst.uses) else None
        names: list[str] = []
        reg_names(ops[j], names)
        n += len(names)
    return None


def may_alias(a: MemAccess | None, b: MemAccess | None) -> bool:
    """Can the two accesses touch a common byte?  ``None`` (unknown) aliases all."""
    if a is None or b is None:
        return True
    if a.space and b.space and a.space != b.space:
        return False  # distinct state spaces are distinct memories
    if a.space != b.space:
        return True  # one generic address: it may point into the other's space
    if a.symbol is not None and b.symbol is not None and a.symbol != b.symbol:
        return False  # distinct variables
    same_base = (
        (a.base is not None and a.base == b.base)
        or (a.symbol is not None and a.symbol == b.symbol)
        or (a.base is None and a.symbol is None and b.base is None and b.symbol is None)
    )
    if not same_base:
        return True
    if a.size is None or b.size is None:
        return True
    return a.offset < b.offset + b.size and b.offset < a.offset + a.size


def readonly_param_symbols(func: Func) -> frozenset[str]:
    """``.param`` symbols the function never writes nor lets escape: the kernel's or
    function's own parameters in the usual case.  Anything stored with ``st.param``,
    named in a ``call`` (return values are written by the callee) or whose address is
    taken (``mov``/``cvta``) is left out."""
    names = {p.name for p in func.ast.params}
    written: set[str] = set()
    for inst in func.instructions():
        info = inst.info
        if info is None:
            continue
        if info.name == "call" or (info.mem in ("write", "rw")):
            for op in inst.ast.operands:
                _collect_syms(op, written)
        elif info.mem is None:
            for op in inst.ast.operands:
                if isinstance(op, Sym):
                    written.add(op.name)
    return frozenset(n for n in names if n not in written)


def _collect_syms(op: Operand, out: set[str]) -> None:
    if isinstance(op, Sym):
        out.add(op.name)
    elif isinstance(op, Addr):
        if isinstance(op.base, Sym):
            out.add(op.base.name)
    elif isinstance(op, ParenList):
        for e in op.items:
            _collect_syms(e, out)


def is_float_op(inst: Inst) -> bool:
    """Does ``inst`` compute in a floating-point type?"""
    info = inst.info
    return info is not None and info.type is not None and is_float(info.type)
