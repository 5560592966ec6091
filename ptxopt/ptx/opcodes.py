"""The PTX opcode table: one place that says what every instruction does.

Every pass asks this table instead of testing opcodes itself: which operands an
instruction writes and reads, whether it touches memory (and in which state space),
whether it may be deleted, moved, commuted or value-numbered, whether it ends a basic
block, reads or writes the implicit carry flag, and how it seeds the divergence
analysis (spec 01, "Divergence Roots — Seed Table": ``shfl`` and per-thread atomics are
always varying, ``vote`` - including ``vote.ballot`` - is always uniform, loads follow
their address, ``ld.local`` is always varying).

Instructions are looked up by their head opcode plus a prefix of their modifiers
(``cp.async.bulk.tensor``, ``mbarrier.try_wait``, ``wgmma.mma_async``); the rest of the
modifiers refine the answer (``.cc`` sets ``carry_out``, ``.volatile`` makes a load
side-effecting, ``.local`` makes it varying, ``.cas`` adds an operand).  Operand roles
are written as small patterns, one letter per operand:

=====  ===========================================================================
``d``  written (a :class:`Vec`/:class:`Pair` there: every element is written)
``u``  read
``x``  read and written (``wgmma.mma_async``'s accumulator)
``a``  read, and a memory address (``[...]``) - listed in ``OpInfo.addrs``
``?``  suffix: the operand is optional (only trailing operands may be)
=====  ===========================================================================

Results are cached by ``(opcode, mods, operand count)`` (``call`` adds whether its
first operand is a return list), so a lookup costs one dict probe.

Divergence classes (``OpInfo.divergence``):

``"default"``  varying iff a register it reads is varying (special registers are
               classified by :func:`special_register_divergence`).
``"varying"``  every result is varying whatever the inputs: ``shfl``, ``atom``,
               ``ld.local``, ``match.any``, ``mma``/``wgmma``/``ldmatrix`` fragments,
               ``mbarrier`` wait results, ``cvta.local`` (a generic address of per-thread
               memory: loads through it differ per lane even though its bits do not).
``"uniform"``  every result is warp-uniform: ``vote.*`` (``vote.ballot`` included),
               ``redux.sync``, ``match.all``, ``activemask``, ``bar.red``.
``"address"``  loads: varying iff an address operand (``OpInfo.addrs``) is varying.
``"elect"``    ``elect.sync d|p``: ``d`` (the elected lane id) is uniform, ``p`` (true
               in the elected lane only) is varying.
``"call"``     results come from the callee (inter-procedural step of spec 01).
"""

from __future__ import annotations

from ptxopt.ptx.ast import (
    Addr,
    Instr,
    Not,
    Operand,
    Pair,
    ParenList,
    PtxError,
    Reg,
    RegImm,
    Sel,
    Vec,
)
from ptxopt.ptx.opinfo import OpInfo
from ptxopt.ptx.types import is_float, is_int, type_mods
from ptxopt.record import Record, set_field

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "OpInfo",
    "lookup",
    "def_regs",
    "use_regs",
    "is_special_register",
    "special_register_divergence",
    "is_volatile_special_register",
    "reads_volatile_state",
    "is_pure",
    "supported_opcodes",
    "STATE_SPACES",
    "CARRY_FLAG",
]

# The name under which the IR and the interpreter hold the carry flag (``CC.CF``) that
# ``add.cc`` writes and ``addc`` reads: not a PTX identifier, since ptxas accepts a
# register declared as ``%cc`` (or ``%ccx``), which must not meet the flag.
CARRY_FLAG = "%cc#"


# ---------------------------------------------------------------------------
# Table specification


class _Spec(Record):
    __slots__ = (
        "key",
        "pattern",
        "by_mod",
        "mem",
        "side_effects",
        "barrier",
        "terminator",
        "commutative",
        "carry_in",
        "cc",
        "divergence",
        "div_by_mod",
        "convergent",
        "invariant_mem",
        "ur",
        "stateful",
        "space_default",
    )
    key: str
    pattern: str
    by_mod: tuple[tuple[str, str], ...]  # (modifier, pattern) overrides, first wins
    mem: str | None
    side_effects: bool
    barrier: bool
    terminator: bool
    commutative: bool
    carry_in: bool
    cc: bool  # accepts .cc (carry out)
    divergence: str
    div_by_mod: tuple[tuple[str, str], ...]
    convergent: bool
    invariant_mem: bool
    ur: str  # "" no; "int": int types sm_75; "num": int sm_75, f32 sm_100; "any": sm_75
    stateful: bool  # result depends on hidden state (not pure) without side effects
    space_default: str  # state space when no space modifier is written

    def __init__(
        self,
        key: str,
        pattern: str,
        by_mod: tuple[tuple[str, str], ...] = (),
        mem: str | None = None,
        side_effects: bool = False,
        barrier: bool = False,
        terminator: bool = False,
        commutative: bool = False,
        carry_in: bool = False,
        cc: bool = False,
        divergence: str = "default",
        div_by_mod: tuple[tuple[str, str], ...] = (),
        convergent: bool = False,
        invariant_mem: bool = False,
        ur: str = "",
        stateful: bool = False,
        space_default: str = "",
    ) -> None:
        set_field(self, "key", key)
        set_field(self, "pattern", pattern)
        set_field(self, "by_mod", by_mod)
        set_field(self, "mem", mem)
        set_field(self, "side_effects", side_effects)
        set_field(self, "barrier", barrier)
        set_field(self, "terminator", terminator)
        set_field(self, "commutative", commutative)
        set_field(self, "carry_in", carry_in)
        set_field(self, "cc", cc)
        set_field(self, "divergence", divergence)
        set_field(self, "div_by_mod", div_by_mod)
        set_field(self, "convergent", convergent)
        set_field(self, "invariant_mem", invariant_mem)
        set_field(self, "ur", ur)
        set_field(self, "stateful", stateful)
        set_field(self, "space_default", space_default)


def _with_boolop(pattern: str) -> tuple[tuple[str, str], ...]:
    """``setp``/``set``/``lop3`` with a boolean combiner take one more source."""
    return tuple((m, pattern) for m in (".and", ".or", ".xor"))


def _spec(key: str, pattern: str, *, SB: bool = False, **kw: Any) -> _Spec:
    """A table row; ``SB=True`` marks a synchronizing instruction (side effects and
    an ordering barrier)."""
    if SB:
        kw["side_effects"] = True
        kw["barrier"] = True
    return _Spec(key, pattern, **kw)


def _specs() -> list[_Spec]:
    S = _spec
    return [
        # -- integer and floating-point arithmetic --------------------------------
        S("add", "d u u", commutative=True, cc=True, ur="num"),
        S("sub", "d u u", cc=True, ur="num"),
        S("mul", "d u u", commutative=True, ur="num"),
        S("mad", "d u u u", commutative=True, cc=True, ur="int"),
        S("fma", "d u u u", commutative=True, ur="num"),
        S("mul24", "d u u", commutative=True),
        S("mad24", "d u u u", commutative=True),
        S("sad", "d u u u", commutative=True),
        S("div", "d u u"),
        S("rem", "d u u"),
        S("abs", "d u", ur="int"),
        S("neg", "d u", ur="int"),
        S("min", "d u u u?", commutative=True, ur="num"),
        S("max", "d u u u?", commutative=True, ur="num"),
        S("addc", "d u u", commutative=True, carry_in=True, cc=True, ur="int"),
        S("subc", "d u u", carry_in=True, cc=True, ur="int"),
        S("madc", "d u u u", commutative=True, carry_in=True, cc=True, ur="int"),
        S("popc", "d u", ur="any"),
        S("clz", "d u", ur="any"),
        S("bfind", "d u", ur="any"),
        S("fns", "d u u u"),
        S("brev", "d u", ur="any"),
        S("bfe", "d u u u"),
        S("bfi", "d u u u u"),
        S("bmsk", "d u u", ur="any"),
        S("szext", "d u u", ur="any"),
        S("dp4a", "d u u u"),
        S("dp2a", "d u u u"),
        S("rcp", "d u"),
        S("sqrt", "d u"),
        S("rsqrt", "d u"),
        S("sin", "d u"),
        S("cos", "d u"),
        S("lg2", "d u"),
        S("ex2", "d u"),
        S("tanh", "d u"),
        S("copysign", "d u u"),
        S("testp", "d u"),
        # -- conversion -------------------------------------------------------------
        S("cvt", "d u u? u?"),  # cvt d,a | cvt.rn.f16x2.f32 d,a,b | cvt.pack d,a,b,c
        S("cvta", "d u", div_by_mod=((".local", "varying"),)),
        S("isspacep", "d u"),
        S("mapa", "d u u"),
        S("getctarank", "d u"),
        # -- logic and shift --------------------------------------------------------
        S("and", "d u u", commutative=True, ur="any"),
        S("or", "d u u", commutative=True, ur="any"),
        S("xor", "d u u", commutative=True, ur="any"),
        S("not", "d u", ur="any"),
        S("cnot", "d u", ur="any"),
        S("lop3", "d u u u u", by_mod=_with_boolop("d u u u u u"), ur="any"),
        S("shl", "d u u", ur="any"),
        S("shr", "d u u", ur="any"),
        S("shf", "d u u u", ur="any"),
        S("prmt", "d u u u", ur="any"),
        # -- comparison and selection -----------------------------------------------
        S("set", "d u u", by_mod=_with_boolop("d u u u")),
        S("setp", "d u u", by_mod=_with_boolop("d u u u"), ur="num"),
        S("selp", "d u u u", ur="any"),
        S("slct", "d u u u"),
        # -- data movement ----------------------------------------------------------
        S("mov", "d u"),
        S("ld", "d a u?", mem="read", divergence="address", div_by_mod=((".local", "varying"),)),
        S("ldu", "d a", mem="read", divergence="address", invariant_mem=True),
        S("st", "a u u?", mem="write", side_effects=True),
        S("st.async", "a u a", mem="write", side_effects=True),
        S("st.bulk", "a u u", mem="write", side_effects=True),
        S("prefetch", "a", side_effects=True),
        S("prefetchu", "a", side_effects=True),
        S("applypriority", "a u", side_effects=True),
        S("discard", "a u", mem="write", side_effects=True),
        S("createpolicy", "d u? u? u?"),
        S(
            "shfl",
            "d u u u",
            by_mod=((".sync", "d u u u u"),),
            divergence="varying",
            convergent=True,
        ),
        S("stacksave", "d", stateful=True),
        S("stackrestore", "u", side_effects=True),
        S("alloca", "d u u?", side_effects=True),
        S("multimem.ld_reduce", "d a", mem="read", side_effects=True, divergence="address"),
        S("multimem.st", "a u", mem="write", side_effects=True),
        S("multimem.red", "a u", mem="rw", side_effects=True),
        # -- atomics ----------------------------------------------------------------
        S(
            "atom",
            "d a u u?",
            by_mod=((".cas", "d a u u u?"),),
            mem="rw",
            side_effects=True,
            divergence="varying",
        ),
        S("red", "a u u?", by_mod=((".async", "a u a"),), mem="rw", side_effects=True),
        # -- barriers and fences ----------------------------------------------------
        S("bar.sync", "u u?", convergent=True, SB=True),
        S("bar.arrive", "u u", convergent=True, SB=True),
        S("bar.red", "d u u u?", divergence="uniform", convergent=True, SB=True),
        S("bar.warp.sync", "u", convergent=True, SB=True),
        S("barrier.sync", "u u?", convergent=True, SB=True),
        S("barrier.arrive", "u u", convergent=True, SB=True),
        S("barrier.red", "d u u u?", divergence="uniform", convergent=True, SB=True),
        S("barrier.cluster", "", convergent=True, SB=True),
        S("membar", "", SB=True),
        S("fence", "a? u?", SB=True),
        S("griddepcontrol", "", SB=True),
        # -- warp-level -------------------------------------------------------------
        S(
            "vote",
            "d u",
            by_mod=((".sync", "d u u"),),
            divergence="uniform",
            convergent=True,
            ur="any",
        ),
        S(
            "match",
            "d u",
            by_mod=((".sync", "d u u"),),
            divergence="varying",
            div_by_mod=((".all", "uniform"),),
            convergent=True,
        ),
        S("redux", "d u u", divergence="uniform", convergent=True),
        S("activemask", "d", divergence="uniform", convergent=True, stateful=True),
        S("elect", "d u", divergence="elect", convergent=True),
        # -- control flow -----------------------------------------------------------
        S("bra", "u", terminator=True, side_effects=True),
        S("brx.idx", "u u", terminator=True, side_effects=True),
        S("ret", "", terminator=True, side_effects=True),
        S("exit", "", terminator=True, side_effects=True),
        S("trap", "", terminator=True, side_effects=True),
        S("brkpt", "", side_effects=True),
        S("nanosleep", "u", side_effects=True),
        S("pmevent", "u", side_effects=True),
        S("setmaxnreg", "u", convergent=True, SB=True),
        # -- video (scalar with optional secondary operation or merge; SIMD) --------
        *(S(v, "d u u u?") for v in ("vadd", "vsub", "vabsdiff", "vmin", "vmax")),
        *(S(v, "d u u u?") for v in ("vshl", "vshr", "vset")),
        S("vmad", "d u u u"),
        *(
            S(f"{v}{n}", "d u u u")
            for v in ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax", "vset")
            for n in (2, 4)
        ),
        # -- texture and surface ----------------------------------------------------
        S("tex", "d a u? u? u?", mem="read", invariant_mem=True),
        S("tld4", "d a u? u?", mem="read", invariant_mem=True),
        S("txq", "d a u?", mem="read", invariant_mem=True),
        S("suq", "d a", mem="read", invariant_mem=True),
        S("suld", "d a", mem="read"),
        S("sust", "a u", mem="write", side_effects=True),
        S("sured", "a u", mem="rw", side_effects=True),
        S("istypep", "d u"),
        # -- tensor cores (mma, wmma, wgmma, tcgen05) -------------------------------
        S("mma", "d u u u u? u? u? u?", divergence="varying", convergent=True),
        S("wmma.load", "d a u?", mem="read", divergence="varying", convergent=True),
        S("wmma.store", "a u u?", mem="write", side_effects=True, convergent=True),
        S("wmma.mma", "d u u u", divergence="varying", convergent=True),
        S("ldmatrix", "d a", mem="read", divergence="varying", convergent=True),
        S("stmatrix", "a u", mem="write", side_effects=True, convergent=True),
        S("movmatrix", "d u", divergence="varying", convergent=True),
        S("wgmma.fence", "", convergent=True, SB=True),
        S("wgmma.commit_group", "", convergent=True, SB=True),
        S("wgmma.wait_group", "u", convergent=True, SB=True),
        S(
            "wgmma.mma_async",
            "x u u u u? u? u? u?",
            by_mod=((".sp", "x u u u u u u? u? u? u?"),),
            mem="read",
            space_default=".shared::cta",
            divergence="varying",
            convergent=True,
            SB=True,
        ),
        S("tcgen05.alloc", "a u", mem="write", convergent=True, SB=True),
        S("tcgen05.dealloc", "u u", convergent=True, SB=True),
        S("tcgen05.relinquish_alloc_permit", "", convergent=True, SB=True),
        S(
            "tcgen05.ld",
            "d a u?",
            by_mod=((".red", "d d a u?"),),
            mem="read",
            divergence="varying",
            convergent=True,
            SB=True,
        ),
        S("tcgen05.st", "a u u?", mem="write", convergent=True, SB=True),
        S("tcgen05.wait::ld", "", convergent=True, SB=True),
        S("tcgen05.wait::st", "", convergent=True, SB=True),
        S("tcgen05.commit", "a u?", mem="rw", SB=True),
        S("tcgen05.mma", "a u u u u? u? u? u?", mem="rw", SB=True),
        S("tcgen05.cp", "a u", mem="rw", SB=True),
        S("tcgen05.shift", "a", mem="rw", SB=True),
        S("tcgen05.fence::before_thread_sync", "", SB=True),
        S("tcgen05.fence::after_thread_sync", "", SB=True),
        # -- asynchronous copies ----------------------------------------------------
        S("cp.async", "a a u u? u?", mem="rw", side_effects=True),
        S("cp.async.commit_group", "", SB=True),
        S("cp.async.wait_group", "u", SB=True),
        S("cp.async.wait_all", "", SB=True),
        S("cp.async.mbarrier.arrive", "a", mem="rw", SB=True),
        S("cp.async.bulk", "a a u u? u? u? u?", mem="rw", side_effects=True),
        S("cp.async.bulk.tensor", "a a u? u? u? u?", mem="rw", side_effects=True),
        S("cp.async.bulk.prefetch", "a u u?", side_effects=True),
        S("cp.async.bulk.prefetch.tensor", "a u? u?", side_effects=True),
        S("cp.async.bulk.commit_group", "", SB=True),
        S("cp.async.bulk.wait_group", "u", SB=True),
        S("cp.reduce.async.bulk", "a a u u?", mem="rw", side_effects=True),
        S("cp.reduce.async.bulk.tensor", "a a u?", mem="rw", side_effects=True),
        S("tensormap.replace", "a u u?", mem="write", side_effects=True),
        S("tensormap.cp_fenceproxy", "a a u", mem="rw", convergent=True, SB=True),
        S("clusterlaunchcontrol.try_cancel", "a a", mem="rw", side_effects=True),
        S("clusterlaunchcontrol.query_cancel", "d u"),
        # -- mbarrier ---------------------------------------------------------------
        S("mbarrier.init", "a u", mem="write", side_effects=True),
        S("mbarrier.inval", "a", mem="write", side_effects=True),
        S("mbarrier.arrive", "d a u?", mem="rw", divergence="varying", SB=True),
        S("mbarrier.arrive_drop", "d a u?", mem="rw", divergence="varying", SB=True),
        S("mbarrier.expect_tx", "a u", mem="rw", side_effects=True),
        S("mbarrier.complete_tx", "a u", mem="rw", side_effects=True),
        S("mbarrier.test_wait", "d a u", mem="read", divergence="varying", SB=True),
        S("mbarrier.try_wait", "d a u u?", mem="read", divergence="varying", SB=True),
        S("mbarrier.pending_count", "d u"),
    ]


# ---------------------------------------------------------------------------
# Building the index


def _parse_pattern(pattern: str) -> dict[int, str]:
    """``"d a u?"`` -> ``{2: "da", 3: "dau"}``: operand count -> role letters."""
    toks = pattern.split()
    required = [t for t in toks if not t.endswith("?")]
    n_req = len(required)
    if toks[:n_req] != required:
        raise ValueError(f"optional operands must be trailing: {pattern!r}")
    letters = "".join(t[0] for t in toks)
    return {n: letters[:n] for n in range(n_req, len(toks) + 1)}


_SPECS: dict[str, _Spec] = {}
# head opcode -> [(modifier prefix, spec)], longest prefix first
_HEADS: dict[str, list[tuple[tuple[str, ...], _Spec]]] = {}
for _s in _specs():
    _SPECS[_s.key] = _s
    _head, *_sub = _s.key.split(".")
    _HEADS.setdefault(_head, []).append((tuple("." + p for p in _sub), _s))
for _lst in _HEADS.values():
    _lst.sort(key=lambda e: -len(e[0]))
del _s, _head, _sub, _lst

#: Modifiers skipped before matching a sub-operation (``bar.cta.sync`` is ``bar.sync``).
_SKIP_LEADING: dict[str, frozenset[str]] = {
    "bar": frozenset({".cta"}),
    "barrier": frozenset({".cta"}),
}

STATE_SPACES: frozenset[str] = frozenset(
    {
        ".global",
        ".shared",
        ".shared::cta",
        ".shared::cluster",
        ".local",
        ".param",
        ".param::entry",
        ".param::func",
        ".const",
        ".tex",
    }
)
_ORDERING = frozenset({".acquire", ".release", ".acq_rel", ".sc"})
_VOLATILE = frozenset({".volatile", ".relaxed", ".acquire", ".release", ".acq_rel", ".sc", ".mmio"})
_COMMUTATIVE_CMP = frozenset({".eq", ".ne", ".equ", ".neu", ".num", ".nan"})
_INVARIANT_LOAD = frozenset({".nc", ".const"})


def _find_spec(opcode: str, mods: tuple[str, ...]) -> _Spec | None:
    cands = _HEADS.get(opcode)
    if cands is None:
        return None
    skip = _SKIP_LEADING.get(opcode)
    if skip:
        i = 0
        while i < len(mods) and mods[i] in skip:
            i += 1
        mods = mods[i:]
    for prefix, spec in cands:
        if mods[: len(prefix)] == prefix:
            return spec
    return None


def _arity_text(counts: list[int]) -> str:
    if len(counts) == 1:
        n = counts[0]
        return f"{n} operand" + ("" if n == 1 else "s")
    if counts == list(range(counts[0], counts[-1] + 1)) and len(counts) > 2:
        return f"{counts[0]} to {counts[-1]} operands"
    return ", ".join(str(c) for c in counts[:-1]) + f" or {counts[-1]} operands"


def _build(opcode: str, mods: tuple[str, ...], n: int) -> OpInfo | str:
    """The OpInfo for one form, or the error message for an unsupported/bad form."""
    full = opcode + "".join(mods)
    spec = _find_spec(opcode, mods)
    if spec is None:
        return f"unsupported instruction '{full}'"
    pattern = spec.pattern
    for mod, pat in spec.by_mod:
        if mod in mods:
            pattern = pat
            break
    forms = _parse_pattern(pattern) if pattern else {0: ""}
    roles = forms.get(n)
    if roles is None:
        return f"'{full}' expects {_arity_text(sorted(forms))}, got {n}"
    defs = tuple(i for i, r in enumerate(roles) if r in "dx")
    uses = tuple(i for i, r in enumerate(roles) if r in "uxa")
    rmw = tuple(i for i, r in enumerate(roles) if r == "x")
    addrs = tuple(i for i, r in enumerate(roles) if r == "a")
    return _finish(spec, mods, defs, uses, rmw, addrs, tuple(sorted(forms)))


def _finish(
    spec: _Spec,
    mods: tuple[str, ...],
    defs: tuple[int, ...],
    uses: tuple[int, ...],
    rmw: tuple[int, ...],
    addrs: tuple[int, ...],
    arity: tuple[int, ...],
) -> OpInfo:
    modset = frozenset(mods)
    types = type_mods(mods)
    ty = types[-1] if types else None
    space: str | None = next((m for m in mods if m in STATE_SPACES), None)
    if space is None and spec.mem is not None:
        space = spec.space_default
    mem = spec.mem
    side_effects = spec.side_effects
    barrier = spec.barrier
    if mem is not None or spec.key in ("fence", "membar"):
        if modset & _VOLATILE:
            side_effects = True
        if modset & _ORDERING:
            barrier = True
    carry_out = spec.cc and ".cc" in modset
    commutative = spec.commutative
    if spec.key in ("set", "setp"):
        commutative = bool(modset & _COMMUTATIVE_CMP)
    divergence = spec.divergence
    for mod, cls in spec.div_by_mod:
        if mod in modset:
            divergence = cls
            break
    convergent = spec.convergent or ".sync" in modset or ".aligned" in modset
    invariant = spec.invariant_mem or (
        mem == "read" and bool(modset & _INVARIANT_LOAD) and not (modset & _VOLATILE)
    )
    pure = not (
        side_effects
        or barrier
        or spec.terminator
        or mem is not None
        or convergent
        or spec.carry_in
        or carry_out
        or spec.stateful
    )
    ur_min_sm: int | None = None
    if spec.ur == "any":
        ur_min_sm = 75
    elif spec.ur in ("int", "num") and (ty is None or not is_float(ty)):
        ur_min_sm = 75
    elif spec.ur == "num" and ty == ".f32":
        ur_min_sm = 100
    if spec.key == "setp" and ty is not None and is_int(ty):
        ur_min_sm = 75
    return OpInfo(
        name=spec.key,
        defs=defs,
        uses=uses,
        rmw=rmw,
        type=ty,
        space=space,
        mem=mem,
        side_effects=side_effects,
        barrier=barrier,
        terminator=spec.terminator,
        carry_in=spec.carry_in,
        carry_out=carry_out,
        commutative=commutative,
        pure=pure,
        divergence=divergence,
        types=types,
        addrs=addrs,
        convergent=convergent,
        invariant_mem=invariant,
        ur_min_sm=ur_min_sm,
        arity=arity,
    )


def _call_info(mods: tuple[str, ...], n: int, has_rets: bool) -> OpInfo | str:
    """``call[.uni] [(rets),] target [, (args)] [, prototype|targets]``."""
    full = "call" + "".join(mods)
    lo, hi = (2, 4) if has_rets else (1, 3)
    if not lo <= n <= hi:
        return f"'{full}' expects {lo} to {hi} operands, got {n}"
    defs = (0,) if has_rets else ()
    uses = tuple(range(1 if has_rets else 0, n))
    return OpInfo(
        name="call",
        defs=defs,
        uses=uses,
        rmw=(),
        type=None,
        space=".param",
        mem="rw",
        side_effects=True,
        barrier=True,
        terminator=False,
        carry_in=False,
        carry_out=False,
        commutative=False,
        pure=False,
        divergence="call",
        types=(),
        addrs=(),
        convergent=".uni" not in mods,
        arity=tuple(range(lo, hi + 1)),
    )


_CACHE: dict[tuple[object, ...], OpInfo | str] = {}


def lookup(instr: Instr) -> OpInfo:
    """The table entry for ``instr``; raises :class:`PtxError` at the instruction's
    span for an unsupported instruction or a wrong operand count."""
    ops = instr.operands
    if instr.opcode == "call":
        has_rets = bool(ops) and isinstance(ops[0], ParenList)
        key: tuple[object, ...] = ("call", instr.mods, len(ops), has_rets)
        info = _CACHE.get(key)
        if info is None:
            info = _CACHE[key] = _call_info(instr.mods, len(ops), has_rets)
    else:
        key = (instr.opcode, instr.mods, len(ops))
        info = _CACHE.get(key)
        if info is None:
            info = _CACHE[key] = _build(instr.opcode, instr.mods, len(ops))
    if isinstance(info, OpInfo):
        return info
    raise PtxError(instr.span, info)


def supported_opcodes() -> list[str]:
    """Every table key, sorted (``"add"``, ``"cp.async.bulk.tensor"`` …)."""
    return sorted([*_SPECS, "call"])


# ---------------------------------------------------------------------------
# Register operands


def _collect(op: Operand, out: list[Reg]) -> None:
    """Append every register read by ``op`` (a source operand)."""
    if isinstance(op, Reg):
        out.append(op)
    elif isinstance(op, Not):
        out.append(op.operand)
    elif isinstance(op, Sel | RegImm):
        out.append(op.reg)
    elif isinstance(op, Addr):
        if op.base is not None:
            _collect(op.base, out)
        for e in op.extra:
            _collect(e, out)
    elif isinstance(op, Vec):
        for e in op.elems:
            _collect(e, out)
    elif isinstance(op, ParenList):
        for e in op.items:
            _collect(e, out)
    elif isinstance(op, Pair):
        _collect(op.first, out)
        _collect(op.second, out)


def _collect_defs(op: Operand, out: list[Reg]) -> None:
    """Append every register written through ``op`` (addresses are never written)."""
    if isinstance(op, Reg):
        out.append(op)
    elif isinstance(op, Sel):
        out.append(op.reg)
    elif isinstance(op, Vec):
        for e in op.elems:
            _collect_defs(e, out)
    elif isinstance(op, Pair):
        _collect_defs(op.first, out)
        _collect_defs(op.second, out)
    elif isinstance(op, ParenList):
        for e in op.items:
            _collect_defs(e, out)


def def_regs(instr: Instr) -> list[Reg]:
    """Registers ``instr`` writes, in operand order (Vec/Pair flattened, sinks skipped).
    A predicated instruction's defs are partial; that is the IR's business."""
    info = lookup(instr)
    ops = instr.operands
    out: list[Reg] = []
    for i in info.defs:
        _collect_defs(ops[i], out)
    return out


def use_regs(instr: Instr) -> list[Reg]:
    """Registers ``instr`` reads: its guard predicate first, then its source operands
    in order (registers inside addresses, vectors, lists and ``!p`` included; special
    registers such as ``%tid.x`` appear as :class:`Reg`)."""
    info = lookup(instr)
    ops = instr.operands
    out: list[Reg] = []
    if instr.pred is not None:
        out.append(instr.pred)
    for i in info.uses:
        _collect(ops[i], out)
    if info.defs:
        for i in info.defs:
            op = ops[i]
            if isinstance(op, Addr) and i not in info.uses:
                _collect(op, out)
    return out


# ---------------------------------------------------------------------------
# Special registers

_XYZ = frozenset({".x", ".y", ".z"})
_VECTOR_SREGS = frozenset(
    {
        "%tid",
        "%ntid",
        "%ctaid",
        "%nctaid",
        "%clusterid",
        "%nclusterid",
        "%cluster_ctaid",
        "%cluster_nctaid",
    }
)
_SCALAR_SREGS = frozenset(
    {
        "%laneid",
        "%warpid",
        "%nwarpid",
        "%smid",
        "%nsmid",
        "%gridid",
        "%lanemask_eq",
        "%lanemask_le",
        "%lanemask_lt",
        "%lanemask_ge",
        "%lanemask_gt",
        "%clock",
        "%clock_hi",
        "%clock64",
        "%globaltimer",
        "%globaltimer_lo",
        "%globaltimer_hi",
        "%total_smem_size",
        "%aggr_smem_size",
        "%dynamic_smem_size",
        "%reserved_smem_offset_begin",
        "%reserved_smem_offset_end",
        "%reserved_smem_offset_cap",
        "%reserved_smem_offset_0",
        "%reserved_smem_offset_1",
        "%is_explicit_cluster",
        "%cluster_ctarank",
        "%cluster_nctarank",
        "%current_graph_exec",
    }
    | {f"%pm{i}" for i in range(8)}
    | {f"%pm{i}_64" for i in range(8)}
    | {f"%envreg{i}" for i in range(32)}
)
# Varying across the lanes of a warp; everything else is warp-uniform (spec 01 seed
# table: %warpid, %ctaid, %nctaid, %smid, %gridid are uniform).  Clocks and
# performance counters are treated as varying because no two reads agree.
_VARYING_SREGS = frozenset(
    {
        "%tid",
        "%laneid",
        "%lanemask_eq",
        "%lanemask_le",
        "%lanemask_lt",
        "%lanemask_ge",
        "%lanemask_gt",
        "%clock",
        "%clock_hi",
        "%clock64",
        "%globaltimer",
        "%globaltimer_lo",
        "%globaltimer_hi",
    }
    | {f"%pm{i}" for i in range(8)}
    | {f"%pm{i}_64" for i in range(8)}
)
# Reads that may return a different value each time (never CSE'd, never hoisted).
_VOLATILE_SREGS = frozenset(
    {"%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"}
    | {f"%pm{i}" for i in range(8)}
    | {f"%pm{i}_64" for i in range(8)}
)


def _sreg_base(name: str) -> str | None:
    if name in _SCALAR_SREGS or name in _VECTOR_SREGS:
        return name
    base, dot, comp = name.rpartition(".")
    if dot and base in _VECTOR_SREGS and "." + comp in _XYZ:
        return base
    return None


def is_special_register(name: str) -> bool:
    """True for PTX special registers (``%tid.x``, ``%laneid``, ``%clock64`` …)."""
    return _sreg_base(name) is not None


def special_register_divergence(name: str) -> str:
    """``"varying"`` or ``"uniform"`` for a special register (spec 01 seed table)."""
    base = _sreg_base(name)
    if base is None:
        raise ValueError(f"not a special register: {name!r}")
    return "varying" if base in _VARYING_SREGS else "uniform"


def is_volatile_special_register(name: str) -> bool:
    """Clocks, global timers and performance counters: every read may differ."""
    return _sreg_base(name) in _VOLATILE_SREGS


def reads_volatile_state(instr: Instr) -> bool:
    """True if ``instr`` reads a volatile special register (``mov %r, %clock``)."""
    return any(
        r.name.startswith("%") and is_volatile_special_register(r.name) for r in use_regs(instr)
    )


def is_pure(instr: Instr) -> bool:
    """``lookup(instr).pure`` and no volatile special-register read: the instruction
    may be value-numbered, hoisted or deleted when unused."""
    return lookup(instr).pure and not reads_volatile_state(instr)
