"""The opcode table's entry (:class:`OpInfo`): what one instruction form does.

:mod:`ptxopt.ptx.opcodes` builds the entries and exports the class; it lives apart
so that the compiled build (:mod:`ptxopt.accel`) makes it a native class.  Every
stage reads a few of its fields per instruction (the validator, the lifter, the
lowering, the passes, the uniform-register model); from compiled code a field of an
interpreted class is read through the interpreter's attribute lookup, of a native one
directly.  Both builds behave alike: an entry is a value -- equal by class and
fields, hashable, read-only, pickled and copied through ``__reduce__`` -- as the
record it replaces was.
"""

from __future__ import annotations

from ptxopt.ptx.nodes import _Value

_FIELDS = (
    "name",
    "defs",
    "uses",
    "rmw",
    "type",
    "space",
    "mem",
    "side_effects",
    "barrier",
    "terminator",
    "carry_in",
    "carry_out",
    "commutative",
    "pure",
    "divergence",
    "types",
    "addrs",
    "convergent",
    "invariant_mem",
    "ur_min_sm",
    "arity",
)


class OpInfo(_Value):
    """What the table knows about one instruction form (see :mod:`ptxopt.ptx.opcodes`)."""

    __slots__ = _FIELDS
    name: str  # the table key: "add", "ld", "wgmma.mma_async"
    defs: tuple[int, ...]  # operand indices written
    uses: tuple[int, ...]  # operand indices read (addresses included)
    rmw: tuple[int, ...]  # indices both read and written (also in defs and uses)
    type: str | None  # principal (last) type modifier
    space: str | None  # state space; "" = generic for a memory op; None = no memory
    mem: str | None  # None, "read", "write", "rw"
    side_effects: bool  # may not be deleted when its results are unused
    barrier: bool  # ordering point: nothing that touches memory/registers moves across
    terminator: bool  # ends a basic block
    carry_in: bool  # reads the implicit carry flag (addc, subc, madc)
    carry_out: bool  # writes the implicit carry flag (.cc)
    commutative: bool  # the first two sources may be swapped
    pure: bool  # result depends only on operands: CSE/DCE/hoisting may act
    divergence: str  # seed class for the divergence analysis
    types: tuple[str, ...]  # every type modifier in source order (cvt: dst, src)
    addrs: tuple[int, ...]  # operand indices that are memory addresses
    convergent: bool  # result/effect depends on which lanes execute it together
    invariant_mem: bool  # reads memory that cannot change in the kernel
    ur_min_sm: int | None  # lowest sm_ on which the uniform datapath can run it
    arity: tuple[int, ...]  # operand counts this form accepts

    def __init__(
        self,
        name: str,
        defs: tuple[int, ...],
        uses: tuple[int, ...],
        rmw: tuple[int, ...],
        type: str | None,
        space: str | None,
        mem: str | None,
        side_effects: bool,
        barrier: bool,
        terminator: bool,
        carry_in: bool,
        carry_out: bool,
        commutative: bool,
        pure: bool,
        divergence: str,
        types: tuple[str, ...] = (),
        addrs: tuple[int, ...] = (),
        convergent: bool = False,
        invariant_mem: bool = False,
        ur_min_sm: int | None = None,
        arity: tuple[int, ...] = (),
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "defs", defs)
        object.__setattr__(self, "uses", uses)
        object.__setattr__(self, "rmw", rmw)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "space", space)
        object.__setattr__(self, "mem", mem)
        object.__setattr__(self, "side_effects", side_effects)
        object.__setattr__(self, "barrier", barrier)
        object.__setattr__(self, "terminator", terminator)
        object.__setattr__(self, "carry_in", carry_in)
        object.__setattr__(self, "carry_out", carry_out)
        object.__setattr__(self, "commutative", commutative)
        object.__setattr__(self, "pure", pure)
        object.__setattr__(self, "divergence", divergence)
        object.__setattr__(self, "types", types)
        object.__setattr__(self, "addrs", addrs)
        object.__setattr__(self, "convergent", convergent)
        object.__setattr__(self, "invariant_mem", invariant_mem)
        object.__setattr__(self, "ur_min_sm", ur_min_sm)
        object.__setattr__(self, "arity", arity)

    def _key(self) -> tuple[object, ...]:
        return tuple([getattr(self, n) for n in _FIELDS])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OpInfo) or type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={v!r}" for n, v in zip(_FIELDS, self._key(), strict=True))
        return f"OpInfo({body})"

    def __reduce__(self) -> tuple[object, ...]:
        return (OpInfo, self._key())
