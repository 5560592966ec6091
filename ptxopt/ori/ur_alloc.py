"""Phase 74, ConvertToUniformReg: which register webs ptxas puts in UR / UP (spec 02).

The model works on the Ori view (:mod:`ptxopt.ori.view`) of one function, after the
divergence analysis (phases 53/70 in ptxas, :mod:`ptxopt.analysis.divergence` here).

Eligibility (the five criteria of the spec, in PTX terms):

1. *R-file value*: the web is a per-thread register (R or P) written by instructions,
   not a ``.func`` parameter (those arrive in R by the calling convention), and warp
   uniform in every write (the divergence analysis).
2. *UR-expressible opcode*: every instruction writing the web has a uniform form on the
   target (:func:`ptxopt.ori.capability.uniform_form`).
3. *Consumers accept UR*: a breadth-first walk over the readers (through ``mov`` copies,
   with an FNV-1a visited set) counts the readers that cannot take the value from UR:
   a per-thread reader whose slot has no UR form, a second UR operand of one per-thread
   instruction, a uniform predicate read by anything but a branch (as its guard) or a
   ``wgmma`` (as its scale-d).  A uniform reader of the web itself placed before
   its definition (a loop-carried read) costs one more (a back reference); a reader
   the walk reaches through a copy reads the copy and costs none.
4. *Excluded operand categories*: a 64-bit web feeding the address of a global or
   generic access is excluded -- unless the kernel's name contains ``cutlass`` (the
   override the spec describes).
5. *Bridge feasibility*: every register source of every write must itself be in UR or
   a constant-bank read; a per-thread source needs an R2UR bridge.

Cost = 1 + bridges (readers needing R, sources needing R2UR, back references); 0 =
not promotable.  A web that needs no R2UR and whose uniform readers outnumber its
bridges costs 1 when it is written more than once or when it has one bridge only (a
copy into R or a back reference; see :func:`_cost`).  The pass starts from every
eligible web, keeps those of cost 1 (no bridge), then extracts candidates min-cost
first against the budgets (63 UR, 7 UP: interval pressure in program order), and
retries.  The costs of one attempt are computed in program order, and a web found to
need a bridge leaves UR at once, so the webs costed after it see it in R; a demotion
that travels against program order (from a reader to its sources) needs the next
attempt, so the loop runs again, at most ``max_attempts`` times (default 5, knob
``ConvertToUniformRegMaxAttempts``; ptxas's knob 862).  Demotions the last attempt
could not propagate stay as R2UR/UR2R bridges in the plan.  An attempt computes
again only the costs whose inputs changed (:class:`_Costs`); the others, and their
slot claims, are reused, with the same result as computing them all.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping, ValuesView
from dataclasses import dataclass, field
from typing import Final

from ptxopt.analysis.divergence import Divergence
from ptxopt.analysis.divergence_sync import CfgContext
from ptxopt.analysis.scc import tarjan_scc
from ptxopt.ir.core import Func, Inst, Value, address_slots
from ptxopt.ori.capability import (
    UP_BUDGET,
    UR_BUDGET,
    accepts_up_source,
    accepts_ur_source,
    has_uniform_file,
    uniform_forms,
)
from ptxopt.ori.view import Classes, Use, Web, Webs, is_cvta_global, record_reads, scan
from ptxopt.ptx.ast import Imm, Reg, Sym, VarDecl

__all__ = [
    "Bridge",
    "FNV_BASIS",
    "FNV_PRIME",
    "FnvSet",
    "FuncPlan",
    "NOT_WRITTEN",
    "VARYING",
    "WebPlan",
    "fnv1a",
    "plan_function",
    "with_callees",
]

FNV_PRIME: Final = 0x01000193
FNV_BASIS: Final = 0x811C9DC5
_NARROW: Final = ("MOV",)  # copies the BFS walks through
_GLOBAL_MEM: Final = ("LDG", "STG", "ATOMG", "LD", "ST")
_MEMORY_OPS: Final = frozenset(("ld", "ldu", "st", "atom", "red"))  # the opcodes of _GLOBAL_MEM
# the two reasons of the webs the model does not judge
NOT_WRITTEN: Final = "not written by an instruction (parameter or undefined)"
VARYING: Final = "varying (divergence analysis)"
_NEEDS_BRIDGES: Final = "needs bridges"  # and its cost, which the plan of the web adds


def fnv1a(key: int) -> int:
    """32-bit FNV-1a of the 4 little-endian bytes of ``key``."""
    h = FNV_BASIS
    for shift in (0, 8, 16, 24):
        h ^= (key >> shift) & 0xFF
        h = (h * FNV_PRIME) & 0xFFFFFFFF
    return h


class FnvSet:
    """Open-addressing set of small integers hashed with FNV-1a; 8 buckets to start,
    4x growth when more than half full (the visited set of the consumer walk)."""

    __slots__ = ("_slots", "_n")

    def __init__(self) -> None:
        self._slots: list[int] = [-1] * 8
        self._n = 0

    def add(self, key: int) -> bool:
        """Insert ``key``; False if it was there already."""
        if 2 * (self._n + 1) > len(self._slots):
            old = [k for k in self._slots if k >= 0]
            self._slots = [-1] * (len(self._slots) * 4)
            self._n = 0
            for k in old:
                self._insert(k)
        return self._insert(key)

    def _insert(self, key: int) -> bool:
        mask = len(self._slots) - 1
        i = fnv1a(key) & mask
        while True:
            k = self._slots[i]
            if k == key:
                return False
            if k < 0:
                self._slots[i] = key
                self._n += 1
                return True
            i = (i + 1) & mask

    def __contains__(self, key: int) -> bool:
        mask = len(self._slots) - 1
        i = fnv1a(key) & mask
        while True:
            k = self._slots[i]
            if k == key:
                return True
            if k < 0:
                return False
            i = (i + 1) & mask

    def __len__(self) -> int:
        return self._n


class Bridge:
    """An R2UR (per-thread source into a uniform instruction) or UR2R (uniform value
    read where only R is accepted) the conversion needs, at a PTX line.  (Plain
    classes, this and :class:`WebPlan`: compiled, their constructors are direct
    calls, where a dataclass's generated ``__init__`` runs in the interpreter.)"""

    __slots__ = ("kind", "reg", "line")

    def __init__(self, kind: str, reg: str, line: int) -> None:
        self.kind = kind
        self.reg = reg
        self.line = line

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Bridge):
            return NotImplemented
        return (self.kind, self.reg, self.line) == (other.kind, other.reg, other.line)

    def __repr__(self) -> str:
        return f"Bridge(kind={self.kind!r}, reg={self.reg!r}, line={self.line!r})"


class WebPlan:
    """The decision for one web: ``file`` is R, P, UR or UP; ``why`` says which
    criterion kept it per-thread (empty when converted)."""

    __slots__ = ("reg", "file", "cls", "cost", "why", "lines")

    def __init__(
        self, reg: str, file: str, cls: str, cost: int, why: str, lines: list[int] | None = None
    ) -> None:
        self.reg = reg
        self.file = file
        self.cls = cls
        self.cost = cost
        self.why = why
        self.lines: list[int] = [] if lines is None else lines

    def _key(self) -> tuple[str, str, str, int, str, list[int]]:
        return (self.reg, self.file, self.cls, self.cost, self.why, self.lines)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WebPlan):
            return NotImplemented
        return self._key() == other._key()

    def __repr__(self) -> str:
        return (
            f"WebPlan(reg={self.reg!r}, file={self.file!r}, cls={self.cls!r}, "
            f"cost={self.cost!r}, why={self.why!r}, lines={self.lines!r})"
        )


class WebPlans(Mapping[str, WebPlan]):
    """Register name -> :class:`WebPlan` for every web of a function, in web order.
    The plans are made from the decisions (the webs in UR, their costs, the reasons
    the others stay per-thread) when asked for: most webs are varying, and a caller
    that only looks up some (the pass, the fidelity study) does not pay for all."""

    __slots__ = ("_made", "_webs", "_cls", "_ur", "_cost", "_why", "_default", "_params")

    def __init__(
        self,
        webs: Webs,
        cls: Classes,
        ur: set[str],
        cost: dict[str, int],
        why: dict[str, str],
        default_why: str,
        params: set[str],
    ) -> None:
        self._made: dict[str, WebPlan] = {}
        self._webs = webs
        self._cls = cls
        self._ur = ur
        self._cost = cost
        self._why = why
        self._default = default_why
        self._params = params

    def __getitem__(self, k: str) -> WebPlan:
        hit = self._made.get(k)
        if hit is None:
            hit = self._made[k] = self._plan(k)
        return hit

    def _all(self) -> dict[str, WebPlan]:
        """Every plan, in web order (made once; what callers iterate)."""
        made = self._made
        if len(made) < len(self._webs):
            get, plan = made.get, self._plan
            made = self._made = {k: get(k) or plan(k) for k in self._webs}
        return made

    def items(self) -> ItemsView[str, WebPlan]:
        return self._all().items()

    def values(self) -> ValuesView[WebPlan]:
        return self._all().values()

    def _plan(self, k: str) -> WebPlan:
        defs = self._webs.defs(k)  # KeyError: not a web
        cls = self._cls
        if len(defs) == 1:
            c = cls.of(defs[0])
            lines = [_line(defs[0])]
        else:
            c = cls.of(defs[0]) if defs else ""
            lines = sorted({_line(d) for d in defs})
        pred = self._webs.type_of(k) == ".pred"
        if k in self._ur:
            wp = WebPlan(
                k, "UP" if pred else "UR", c, self._cost.get(k, 0), self._why.get(k, ""), lines
            )
        else:
            reason = self._why.get(k) or self._default
            if not reason:  # not looked at: a varying web (or a parameter's)
                reason = NOT_WRITTEN if not defs or k in self._params else VARYING
            elif reason == _NEEDS_BRIDGES:
                reason = f"{_NEEDS_BRIDGES} (cost {self._cost[k]})"
            wp = WebPlan(k, "P" if pred else "R", c, 0, reason, lines)
        return wp

    def __contains__(self, k: object) -> bool:
        return k in self._webs

    def __iter__(self) -> Iterator[str]:
        return iter(self._webs)

    def __len__(self) -> int:
        return len(self._webs)


@dataclass(slots=True)
class FuncPlan:
    name: str
    arch_sm: int
    webs: Mapping[str, WebPlan] = field(default_factory=dict)
    uniform: set[str] = field(default_factory=set)  # the webs in UR or UP
    bridges: list[Bridge] = field(default_factory=list)
    ur_count: int = 0
    up_count: int = 0
    # the count model applied to the webs written at the ``ur_lines`` of
    # :func:`plan_function` (a study of the count alone); -1 when none were given
    ur_count_of_lines: int = -1
    # per callee: the URs of this function live across one of its calls (the memory
    # descriptor; see with_callees)
    live_across: dict[str, int] = field(default_factory=dict)
    attempts: int = 0
    costs_computed: int = 0  # by the retry loop and the final pass (reused ones not counted)
    budget_demoted: int = 0
    converted: int = 0
    # per web the cost sent to R: the bridges its cost counted when it was demoted, as
    # found (a copy reached through two readers twice; see :meth:`would_need`)
    needs: dict[str, list[Bridge]] = field(default_factory=dict)
    # the reason every web of the function stays per-thread, when one does for all (a
    # debug target, a target without a uniform register file); '' otherwise
    default_why: str = ""
    diagnostics: list[str] = field(default_factory=list)
    # the webs with their writes, and the reads of every web the model looked at (the
    # webs in UR/UP among them): what phase 86 reads its markers from
    regs: Webs = field(default_factory=lambda: Webs({}, {}))

    def would_need(self, k: str) -> list[Bridge]:
        """What keeping web ``k`` in UR would have taken when its cost sent it to R,
        the other webs as decided at that point: its bridges, each once, by line (a
        loop-carried read before its write and a shuffle kept per-thread add to the
        cost without a bridge of their own).  Empty for a web not demoted by cost."""
        return _unique_bridges(self.needs.get(k, []))


@dataclass(slots=True)
class _Ctx:
    func: Func
    div: Divergence
    sm: int
    cutlass: bool
    webs: Webs
    cls: Classes  # SASS classes (by program point: at_point)
    web_id: dict[str, int]
    insts: list[Inst] = field(default_factory=list)  # program point -> instruction
    uniform: dict[str, None] = field(default_factory=dict)  # webs without a varying value
    not_written: set[str] = field(default_factory=set)  # webs with a parameter value
    leaf_rule: bool = False
    leaf_exempt: tuple[str, ...] = ("S2R",)
    # program point -> _slot_taker (None: not asked yet); most instructions are asked
    # once, so a list the sweep sizes, not a dict that grows with every answer
    slot: list[str | None] = field(default_factory=list)
    consts: set[str] = field(default_factory=set)  # webs that are constant operands
    folded: set[Inst] = field(default_factory=set)  # muls folded into an add
    nots: set[str] = field(default_factory=set)  # complements computed per-thread
    tolerate_bridges: bool = False
    variables: set[str] = field(default_factory=set)  # multi-valued, read per-thread
    uread: dict[str, bool] = field(default_factory=dict)  # _read_uniformly cache
    divregion: set[int] | None = None  # blocks inside divergent regions (lazy)
    rows: dict[str, list[_Row]] = field(default_factory=dict)  # _reader_rows cache
    srcs: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # _sources cache
    first: dict[str, int] = field(default_factory=dict)  # candidate -> first write's point
    addr_regs: set[str] | None = None  # _address_registers (lazy)
    spin: bool | None = None  # _unsynced_spin (lazy)
    block_loops: tuple[list[int], list[bool]] | None = None  # _block_loops (lazy)
    vary: bytes = b""  # value id -> varying (the sweep's copy of the divergence vector)
    forms: dict[str, str] = field(default_factory=dict)  # class -> uniform form at sm


def _line(inst: Inst) -> int:
    return inst.ast.span.line if inst.ast.span is not None else 0


def _def_name(inst: Inst) -> str | None:
    """The web ``inst`` writes (its first result), by name: every result of an
    instruction the sweep saw starts or joins a web (the carry flag is no result,
    ``Inst.carry_out``), so the name is read off the result, not looked up."""
    return inst.defs[0].var if inst.defs else None


def _def_web(inst: Inst, ctx: _Ctx) -> Web | None:
    k = _def_name(inst)
    return ctx.webs[k] if k is not None else None


def _param_addresses(func: Func, webs: Webs, copies: set[str], insts: list[Inst]) -> set[str]:
    """Webs holding the address of a kernel parameter: ``mov.b64 %rd56, kernel_param``,
    and an immediate added to such an address (``add.s64 %rd1, %rd56, 196``), each the
    web's only write.  ptxas folds the address into every ``ld.param [%rd1+-156]``
    that reads it, which becomes a constant-bank read at a fixed offset (``ULDC.64
    UR4, c[0x0][0x190]`` for ``cutlass/ampere_fmha.sm80.ptx`` line 87 at sm_80): the
    address is no register at all, and the loads need no R2UR for it."""
    params = {p.name for p in func.ast.params}
    out: set[str] = set()
    for k in copies:
        ds = webs.defs(k)
        if len(ds) == 1:
            ops = ds[0].ast.operands
            if (
                ds[0].ast.opcode == "mov"
                and len(ops) == 2
                and isinstance(ops[1], Sym)
                and ops[1].name in params
            ):
                out.add(k)
    if not out:
        return out
    for ins in insts:  # program order: a chain's adds follow the address they add to
        if ins.ast.opcode != "add" or len(ins.defs) != 1:
            continue
        vals = [v for v in ins.uses if isinstance(v, Value)]
        if (
            len(vals) == 1
            and vals[0].var in out
            and any(isinstance(o, Imm) for o in ins.ast.operands[1:])
            and webs.ndefs(ins.defs[0].var) == 1
        ):
            out.add(ins.defs[0].var)
    return out


def _constant_webs(names: Iterable[str], webs: Webs, cls: Classes) -> set[str]:
    """Webs whose value is a constant operand rather than a computed register: every
    write is a constant-bank read (``ld.param`` of a kernel parameter, ``%ntid``), a
    ``mov`` of an immediate, or an identity of such a web (``mov``, and
    ``cvta.to.global`` -- the global window is the generic one, so ptxas emits nothing
    and the reader takes ``c[0x0][0x160]`` itself).  Such a value materialises in UR
    only for a uniform reader (ULDC / UMOV), never by itself.

    A fixpoint over the identities, linear: each web waits for the webs it copies
    (``waiting``) and is settled when the last of them is.  ``names``: the candidates
    (their writes read from the sweep's lists: no :class:`Web` made for them)."""
    out: set[str] = set()
    waiting: dict[str, list[str]] = {}  # source web -> the webs that copy it
    missing: dict[str, int] = {}  # web -> sources not yet known constant
    for name in names:
        defs = webs.defs(name)
        if not defs:
            continue
        srcs: list[str] = []  # (most webs are written once: one source, no set)
        for d in defs:
            c = cls.at_point(d)
            if c == "LDC":
                continue
            if c != "MOV" and not is_cvta_global(d):
                break
            vals = d.operand_list()
            if not vals and d.ast.opcode == "mov":
                if any(isinstance(o, Imm) for o in d.ast.operands):
                    continue  # mov of an immediate
                break
            if len(vals) == 1 and vals[0].kind != "special":
                srcs.append(vals[0].var)
                continue
            break
        else:
            if not srcs:
                out.add(name)
                continue
            if len(srcs) > 1:
                srcs = sorted(set(srcs))
            missing[name] = len(srcs)
            for v in srcs:
                waiting.setdefault(v, []).append(name)
    work = [k for k in out if k in waiting]
    while work:
        for k in waiting.get(work.pop(), ()):
            missing[k] -= 1
            if missing[k] == 0:
                out.add(k)
                work.append(k)
    return out


def _scale(c: Inst) -> int:
    """The immediate factor of a ``mul`` (its immediate) or ``shl`` (2 ** shift); 1
    when there is none."""
    imm = next((o.value for o in c.ast.operands if isinstance(o, Imm)), None)
    if not isinstance(imm, int):
        return 1
    return 1 << imm if c.ast.opcode == "shl" else imm


def _folded_multiplies(webs: list[Web], ctx: _Ctx) -> set[Inst]:
    """Uniform 32-bit ``mul.lo``, or ``shl`` by an immediate, whose one reader is a
    per-thread ``add`` (and a uniform ``mul.wide``, see :func:`_folded_wide`): ptxas
    fuses the pair into one per-thread IMAD (``mul.lo %r15, %ctaid, %ntid; add %r4,
    %r15, %tid`` -> ``IMAD R0, R3, UR4, R6``), so the product is never a register of its
    own and its sources are read by a per-thread instruction
    with one UR slot.  With an immediate factor that slot is the immediate's
    (``shl.b32 %r1865, %r1866, 7; add.s32 %r213, %r1865, %r1185`` -> ``IMAD R3, R0, 0x80,
    R137``, cutlass/ampere_tf32_gemm.sm80.ptx line 1754 at sm_80), so the uniform
    source is read in R: %r1866 is ``S2R R0, SR_CTAID.X`` + ``SHF.R.S32.HI R0``."""
    out: set[Inst] = set()
    for w in webs:
        if len(w.defs) != 1 or not w.uses:
            continue
        d = w.defs[0]
        if _stepped_shift(w, d, ctx):
            out.add(d)
            continue
        if len(w.uses) > 1 or w.width != 1:
            # a 64-bit mul.lo splits (low half per-thread, high half UIMAD); a
            # mul.wide read only by per-thread adds folds into each of them
            if _folded_wide(w, d, ctx):
                out.add(d)
            continue
        is_mul = d.ast.opcode == "mul" and ctx.cls.at_point(d) == "IMAD" and ".lo" in d.ast.mods
        is_shl = d.ast.opcode == "shl" and isinstance(d.ast.operands[-1], Imm)
        if not (is_mul or is_shl):
            continue
        r = w.uses[0].inst
        if is_shl and _disjoint_or(r, w.name, d):
            pass  # or of disjoint bits: the same IMAD as an add
        elif r.ast.opcode != "add" or ctx.cls.at_point(r) != "IADD3" or w.uses[0].slot < 0:
            continue
        if not _writes_varying(r, ctx):
            continue
        if w.name not in ctx.uniform:
            continue
        out.add(d)
    return out


def _stepped_shift(w: Web, d: Inst, ctx: _Ctx) -> bool:
    """A uniform 64-bit ``shl`` by an immediate whose one reader is the per-thread step
    of a pointer (``add.s64 %rd16, %rd16, %rd4``: the add writes the register it
    reads), where the value it shifts is also read per-thread elsewhere (by a
    per-thread instruction, or by another step ``add``): ptxas computes that
    source in R and fuses the shift into the step as a ``LEA``, whose shifted operand
    is a register of the thread (the shift is a field, so the model lets the
    immediate hold the slot).  ``llvm/saxpy_i64.sm75.ptx`` lines 38-50 at sm_90:
    ``mul.wide.u32 %rd2, %r2, %r4; shl.b64 %rd4, %rd2, 2`` read by ``add.s64
    %rd17, %rd17, %rd2`` and ``add.s64 %rd16, %rd16, %rd4`` in the loop are
    ``IMAD.WIDE.U32 R2, R0, UR4, RZ`` and ``LEA R11, P1, R2, R11, 0x2`` (the high
    half by ``SHF.L.U64.HI R13, R2, 0x2, R3`` before the loop).  The same shift read
    by a step, with no other per-thread reader of its source, stays ``USHF`` (and
    the step reads the UR: ``IADD3 R4, P1, R4, UR4, RZ``), and so does one read by an
    add into another register (``tests/ori/test_ur_rules.py``, the stepped shift)."""
    if w.width != 2 or len(w.uses) != 1 or w.name not in ctx.uniform:
        return False
    if d.ast.opcode != "shl" or not isinstance(d.ast.operands[-1], Imm):
        return False
    u = w.uses[0]
    r = u.inst
    if u.slot < 0 or not _step(r, ctx) or not _writes_varying(r, ctx):
        return False
    for v in d.uses:
        s = ctx.webs.get(v.var) if isinstance(v, Value) else None
        if s is None:
            continue
        for x in s.uses:
            if x.inst is not d and (_writes_varying(x.inst, ctx) or _step(x.inst, ctx)):
                return True
    return False


def _step(r: Inst, ctx: _Ctx) -> bool:
    """``r`` is an integer ``add`` to the register it writes (``add.s64 %rd7, %rd7,
    %rd8``)."""
    if r.ast.opcode != "add" or len(r.defs) != 1 or ctx.cls.at_point(r) != "IADD3":
        return False
    var = r.defs[0].var
    for v in r.uses:
        if isinstance(v, Value) and v.var == var:
            return True
    return False


def _int_imm(o: object) -> int | None:
    return o.value if isinstance(o, Imm) and isinstance(o.value, int) else None


def _disjoint_or(r: Inst, name: str, d: Inst) -> bool:
    """``r`` is an ``or`` of the shift ``d`` (``shl`` by an immediate k, register
    ``name``) with a value masked below 2^k (``and.b32 %r14, %r12, 127``): the bits
    are disjoint, so the ``or`` is an add and ptxas fuses the pair into one IMAD
    (``shl.b32 %r10, %r9, 8; or.b32 %r15, %r10, %r14`` -> ``IMAD R0, R3, 0x100, R0``,
    triton/cumsum.sm80.ptx lines 35-43 at sm_80 and sm_90, ``%ctaid`` by ``S2R R3``)."""
    k = _int_imm(d.ast.operands[-1])
    if r.ast.opcode != "or" or k is None or not 0 < k < 32:
        return False
    other = [u for u in r.uses if not (isinstance(u, Value) and u.var == name)]
    if len(other) != 1 or not isinstance(other[0], Value) or other[0].kind != "inst":
        return False
    a = other[0].inst
    if not isinstance(a, Inst) or a.ast.opcode != "and":
        return False
    mask = _int_imm(a.ast.operands[-1])
    return mask is not None and 0 <= mask < (1 << k)


def _per_thread_nots(webs: list[Web], ctx: _Ctx) -> set[str]:
    """Uniform ``not`` whose every reader is a per-thread ``and``/``or``/``xor``: ptxas
    computes the complement in R next to its readers, folded into their LOP3 or as a
    LOP3 of its own (``not.b32 %r1226, %r1225; and.b32 %r1217, %r3218, %r1226`` ->
    ``LOP3.LUT R10, RZ, R6, RZ, 0x33, !PT``, cub/radix_sort.sm80.ptx line 3697 at
    sm_80); the shifted mask it complements is read by that per-thread LOP3."""
    out: set[str] = set()
    for w in webs:
        if len(w.defs) != 1 or not w.uses or w.defs[0].ast.opcode != "not":
            continue
        if all(
            u.slot >= 0
            and u.inst.ast.opcode in ("and", "or", "xor")
            and _writes_varying(u.inst, ctx)
            for u in w.uses
        ):
            out.add(w.name)
    return out


def _writes_varying(r: Inst, ctx: _Ctx) -> bool:
    """``r`` writes a value the divergence analysis calls varying: a per-thread reader."""
    return any(_varying(x, ctx) for x in r.defs)


def _varying(v: Value, ctx: _Ctx) -> bool:
    """The divergence analysis calls ``v`` varying (read from the sweep's copy of its
    vector: a direct read in compiled code, where ``Divergence.is_varying`` is a call
    into the interpreter)."""
    vary = ctx.vary
    return 0 <= v.id < len(vary) and vary[v.id] != 0


def _per_thread_add(u: Use, ctx: _Ctx) -> bool:
    """``u`` is a register operand of an integer ``add`` whose result is varying, or
    is a uniform 64-bit base that criterion 4 keeps per-thread (:func:`_offset_base`:
    ``mul.wide.s32 %rd13, %r36, 4; add.s64 %rd14, %rd7, %rd13`` -> ``IMAD.WIDE R4,
    R10, R7, c[0x0][0x160]``, triton/layer_norm_fwd.sm80.ptx lines 59-60 at sm_80)."""
    r = u.inst
    if r.ast.opcode != "add" or ctx.cls.at_point(r) != "IADD3" or u.slot < 0:
        return False
    if _writes_varying(r, ctx):
        return True
    x = None if ctx.cutlass else _def_web(r, ctx)
    return x is not None and x.width == 2 and _offset_base(x, ctx)


def _folded_wide(w: Web, d: Inst, ctx: _Ctx) -> bool:
    """A uniform ``mul.wide`` every reader of which is a per-thread ``add``: ptxas
    emits one per-thread ``IMAD.WIDE`` per add, with the add's other operand as the
    64-bit addend (``mul.wide.u32 %rd5, %r3, 4; add.s64 %rd6, %rd4, %rd5`` ->
    ``IMAD.WIDE.U32 R2, R3, 0x4, R4``), so the product is never a register of its
    own; an immediate factor holds the IMAD's UR/constant slot, as for the folded
    shift, and the uniform factor is then read in R."""
    if d.ast.opcode != "mul" or ".wide" not in d.ast.mods or ctx.cls.at_point(d) != "IMAD":
        return False
    if w.width != 2 or w.name not in ctx.uniform:
        return False
    return all(_per_thread_add(u, ctx) for u in w.uses)


def _copied_factor(c: Inst, s: Web, ctx: _Ctx) -> bool:
    """On sm_75-89, a uniform factor of a folded ``mul.wide`` (see :func:`_folded_wide`)
    that finds the IMAD.WIDE's UR slot taken by the other factor, and that uniform
    instructions read too, stays in UR and is copied to R for the IMAD
    (``S2UR UR6, SR_CTAID.X`` ... ``IMAD.U32 R5, RZ, RZ, UR6; IMAD.WIDE R4, R5,
    c[0x0][0x0], R8``, numba/clamp_count.sm80.ptx lines 52-55 at sm_80;
    ``IMAD.U32 R0, RZ, RZ, UR4; IMAD.WIDE R114, R0, 0x2, R120``,
    cutlass/ampere_fmha.sm80.ptx line 3306): no demotion.  On sm_90 ptxas computes
    such a factor in R (the same clamp_count lines: ``S2R R4, SR_CTAID.X``)."""
    return c in ctx.folded and ".wide" in c.ast.mods and _read_uniformly(s, ctx)


def _read_uniformly(s: Web, ctx: _Ctx) -> bool:
    """Some uniform instruction (not a folded multiply) reads ``s`` (cached per web)."""
    hit = ctx.uread.get(s.name)
    if hit is None:
        hit = ctx.uread[s.name] = any(
            bool(u.inst.defs)
            and u.inst not in ctx.folded
            and not any(_varying(x, ctx) for x in u.inst.defs)
            for u in s.uses
        )
    return hit


def _slot_taker(c: Inst, ctx: _Ctx) -> str:
    """The operand that already occupies the one UR/constant source slot of the
    per-thread instruction ``c`` ('' when the slot is free): a non-zero immediate of
    an instruction that also reads two registers (``mad.lo %r, %u, 4, %tid`` becomes
    ``IMAD R, R_u, 0x4, R_tid``; zero is RZ and takes no slot), or a constant-bank
    value (a parameter, ``%ntid``).  On sm_75-89 the constant is a ``c[bank][offset]``
    operand (``IMAD R2, R2, c[0x0][0x0], R3``: ``%ctaid`` then comes in R by ``S2R``);
    on sm_90 ptxas gives the slot to the computed uniform value and loads the constant
    into R (``LDC R7, c[0x0][RZ]; IMAD R7, R7, UR4, R0``) unless uniform instructions
    read the constant too (then it is ULDC'd into a UR that takes the slot).  A uniform
    register source of ``c`` that finds the slot taken needs R."""
    hit = ctx.slot[c.point]
    if hit is not None:
        return hit
    regs = [u for u in c.uses if isinstance(u, Value)]
    taker = ""
    if c in ctx.folded and _scale(c) not in (0, 1):
        # fused into the reading add as IMAD R, R_u, imm, R_v: the immediate has it
        ctx.slot[c.point] = "<immediate>"
        return "<immediate>"
    for v in regs:
        if v.var in ctx.consts:  # the constants are webs
            if ctx.sm < 90 or _read_uniformly(ctx.webs[v.var], ctx):
                taker = v.var
                break
    else:
        if len(regs) >= 2 and any(isinstance(o, Imm) and o.value != 0 for o in c.ast.operands):
            taker = "<immediate>"
        elif _lop3_immediate(c, regs):
            taker = "<immediate>"
    ctx.slot[c.point] = taker
    return taker


_LOGIC: Final = ("and", "or", "xor")


def _lop3_immediate(c: Inst, regs: list[Value]) -> bool:
    """``c`` is an ``and``/``or``/``xor`` of two registers one of which is, in the same
    block, an ``and``/``or``/``xor`` of a register and an immediate: ptxas fuses the
    pair into one three-input LOP3 whose immediate holds the UR/constant slot
    (``or.b32 %r5, %r4, 30; or.b32 %r9, %r5, %r2`` -> ``LOP3.LUT R5, R0, 0x1e, R5,
    0xfe, !PT``), so a uniform source of ``c`` is read from R: ``%r2 = %ctaid << 6`` is
    ``S2R R0; IMAD.SHL.U32 R0, R0, 0x40, RZ`` there at sm_80 and sm_90, and ``S2UR UR4;
    USHF.L.U32 UR4, UR4, 0x6, URZ; LOP3.LUT R5, R0, UR4, RZ, 0xfc, !PT`` without the
    inner immediate (``triton/matmul_fp16.sm80.ptx`` lines 709-718: ``LOP3.LUT R36, R3,
    0x1e, R5, 0xfe, !PT`` for ``or.b32 %r567, %r21, %r23``).  All-ones and zero masks
    fold away and take no slot."""
    if c.ast.opcode not in _LOGIC or len(regs) != 2:
        return False
    if c.info is not None and c.info.type == ".pred":
        return False  # PLOP3 of predicates: no immediate operand
    for v in regs:
        d = v.inst if v.kind == "inst" and isinstance(v.inst, Inst) else None
        if d is None or d.ast.opcode not in _LOGIC or d.block is not c.block:
            continue
        if any(isinstance(o, Imm) and o.value not in (0, -1) for o in d.ast.operands):
            return True
    return False


def _branch_only_compare(w: Web, ctx: _Ctx) -> bool:
    """A uniform compare read only by branch guards whose register sources are constant
    operands (parameters, immediates) -- on sm_90 also one special-register read (``mov
    %ctaid``) that nothing else reads: ptxas computes it per-thread (``ISETP.NE.U32.AND
    P0, PT, RZ, UR4`` / ``ISETP.LE.AND P0, PT, R4, UR4``, one instruction) instead of
    UISETP into UP plus the PLOP3 that moves UP into the P a branch reads.  A compare
    of a computed uniform value stays UP (``UISETP ... ; PLOP3.LUT P0, ..., UP0``)."""
    if not w.is_pred or not w.uses or not w.defs:
        return False
    if any(u.slot != -1 or ctx.cls.at_point(u.inst) != "BRA" for u in w.uses):
        return False
    for d in w.defs:
        if ctx.cls.at_point(d) != "ISETP":
            return False
        leaves = 0
        for v in d.uses:
            if not isinstance(v, Value):
                continue
            s = ctx.webs.get(v.var)
            if s is not None and s.name in ctx.consts:
                continue
            if (
                ctx.sm >= 90
                and s is not None
                and len(s.defs) == 1
                and ctx.cls.at_point(s.defs[0]) == "S2R"
                and all(u.inst is d for u in s.uses)
            ):
                leaves += 1
                continue
            return False
        if leaves > 1:
            return False
    return True


def _backward(b: Inst) -> bool:
    """``b`` is a branch back to itself or an earlier block (a loop latch)."""
    blk = b.block
    return blk is not None and any(s.index <= blk.index for s in blk.succs)


def _is_param(s: Web | None, ctx: _Ctx) -> bool:
    """``s`` is a kernel parameter: a constant operand loaded by ``ld.param``."""
    return (
        s is not None
        and s.name in ctx.consts
        and all(d.ast.opcode == "ld" and ctx.cls.at_point(d) == "LDC" for d in s.defs)
    )


def _zero_test_branch(w: Web, ctx: _Ctx) -> bool:
    """A uniform integer compare against zero -- on sm_90 also against a kernel
    parameter, unless the branch is a loop latch -- whose only readers are branch
    guards: ptxas emits one per-thread ``ISETP`` that reads the uniform value from UR
    and the zero as RZ (``shr.u32 %r57, %r1, 1; setp.eq.s32 %p2, %r57, 0; @%p2 bra``
    -> ``USHF.R.U32.HI UR4, URZ, 0x1, UR4; ISETP.NE.AND P1, PT, RZ, UR4, PT``,
    cuda/atomics.O3.sm75.ptx lines 190-192 at sm_80), not UISETP into UP plus the
    PLOP3 that moves UP into the branch's P.  On sm_90 the parameter comes by a
    per-thread LDC (``setp.ge.s32 %p13, %ctaid.y, <param>`` -> ``ISETP.LE.AND P0, PT,
    R4, UR4, PT``, cub/histogram.sm90.ptx line 1448); the compare of a uniform loop's
    counter with its bound at the latch stays UISETP
    (cutlass/ampere_conv2d_fprop.sm80.ptx line 1094 at sm_90)."""
    if not w.is_pred or not w.uses or not w.defs:
        return False
    if any(u.slot != -1 or ctx.cls.at_point(u.inst) != "BRA" for u in w.uses):
        return False
    for d in w.defs:
        if ctx.cls.at_point(d) != "ISETP" or d.ast.opcode != "setp":
            return False
        imms = [o for o in d.ast.operands if isinstance(o, Imm)]
        regs = [v for v in d.uses if isinstance(v, Value)]
        if len(imms) + len(regs) != 2:
            return False
        zero = any(o.value == 0 for o in imms)
        if not zero and not (
            ctx.sm >= 90
            and any(_is_param(ctx.webs.get(v.var), ctx) for v in regs)
            and not any(_backward(u.inst) for u in w.uses)
        ):
            return False
    return True


def _zero_tested_mask(w: Web, ctx: _Ctx) -> bool:
    """An ``and`` whose every reader is ``setp.eq``/``setp.ne`` of it against zero:
    ptxas computes the pair as one LOP3 that writes the predicate directly
    (``and.b32 %r522, %r508, 3; setp.eq.s32 %p7, %r522, 0`` -> ``LOP3.LUT P0, RZ, R0,
    0x3, RZ, 0xc0, !PT``, cub/histogram.sm80.ptx line 191 at sm_80): the mask itself
    is never written to a register."""
    if w.is_pred or len(w.defs) != 1 or not w.uses:
        return False
    d = w.defs[0]
    if d.ast.opcode != "and" or ctx.cls.at_point(d) != "LOP3":
        return False
    for u in w.uses:
        c = u.inst
        if u.slot < 0 or c.ast.opcode != "setp" or ctx.cls.at_point(c) != "ISETP":
            return False
        if not (".eq" in c.ast.mods or ".ne" in c.ast.mods):
            return False
        imms = [o for o in c.ast.operands if isinstance(o, Imm)]
        if len(c.uses) != 1 or len(imms) != 1 or imms[0].value != 0:
            return False
    return True


def _broadcast(d: Inst, ctx: _Ctx) -> bool:
    """``shfl.sync.idx`` from a fixed lane (its result uniform, which the caller has
    checked): lanes of a warp-uniform source hold one value, so ptxas drops the
    shuffle and moves the source into UR (``shr.u32 %r4, %r3, 5`` -> ``R2UR UR22, R9``;
    ``shfl.sync.idx.b32 %r882, %r4, 0, 31, -1`` emits nothing and its readers use
    UR22: triton/attention_fwd_fp16.sm90a.ptx lines 268, 364, 366).  The lane may be a
    register holding an immediate (``mov.u32 %r288, 0``), which ptxas sees as the
    constant: cutlass/ampere_fmha.sm80.ptx line 275, ``shfl.sync.idx.b32 %r45|%p1,
    %r1296, %r288, %r289, %r290``, emits nothing, and the compare of %r46 at line 300
    reads UR24.  When ptxas keeps the shuffle it copies the result into UR right after
    it (``SHFL.IDX PT, R20, R20, RZ, 0x1f ; R2UR UR13, R20``,
    cutlass/ampere_conv2d_fprop.sm80.ptx line 671 at sm_90): UR either way."""
    ops = d.ast.operands
    if d.ast.opcode != "shfl" or ".idx" not in d.ast.mods or len(ops) < 3:
        return False
    lane = ops[2]
    if isinstance(lane, Imm):
        return True
    if not isinstance(lane, Reg):
        return False
    for v in d.uses:
        if isinstance(v, Value) and v.var == lane.name:
            m = v.inst.ast if v.kind == "inst" and isinstance(v.inst, Inst) else None
            return (
                m is not None
                and m.opcode == "mov"
                and len(m.operands) == 2
                and isinstance(m.operands[1], Imm)
            )
    return False


def _kept_shuffle(d: Inst, ctx: _Ctx) -> bool:
    """A broadcast (:func:`_broadcast`) of a value the divergence analysis calls
    varying: ptxas keeps the SHFL, and its result reaches UR only through an R2UR for
    uniform readers; read only per-thread it stays in R (``SHFL.IDX PT, R8, R2, RZ,
    0x1f`` read by ``IADD3 R5, R7, R8, RZ``, cuda/reduce.O3.sm75.ptx lines 279-282)."""
    src = d.uses[0] if d.uses else None
    return isinstance(src, Value) and _varying(src, ctx)


def _wide_multiply(d: Inst, ctx: _Ctx) -> bool:
    """A 64-bit ``mul``/``mad`` (not ``.wide``) both of whose factors are full 64-bit
    registers.  In a kernel whose lanes rejoin unsynchronised after a spin loop
    (:func:`_unsynced_spin`) ptxas expands it into per-thread ``IMAD.WIDE.U32`` /
    ``IMAD.X`` steps even when every value is uniform (``cutlass/hopper_fp8_gemm.sm90a.ptx``
    lines 643 and 659); elsewhere it is a ``UIMAD.WIDE.U32`` sequence like any uniform
    product (the FastDivmod ``mul.hi.u64`` of ``hopper_mixed_dtype_gemm``'s
    mixed-input kernels, line 6105).  A factor zero- or sign-extended from 32 bits
    (``cvt.u64.u32``) makes it one ``UIMAD.WIDE.U32`` (``cuda/elementwise.O3.sm75.ptx``
    line 44 at sm_80)."""
    if ctx.cls.at_point(d) != "IMAD" or ".wide" in d.ast.mods:
        return False
    if d.info is None or d.info.type is None or not d.info.type.endswith("64"):
        return False
    factors = d.uses[:2]
    if len(factors) < 2:
        return False
    for v in factors:
        if not isinstance(v, Value):
            return False  # an immediate factor
        s = ctx.webs.get(v.var)
        if s is None or not s.defs:
            return False
        if all(_extended_from_32(x) for x in s.defs):
            return False
    return True


def _extended_from_32(d: Inst) -> bool:
    types = d.info.types if d.info is not None else ()
    return d.ast.opcode == "cvt" and len(types) == 2 and not types[1].endswith("64")


def _divergent_blocks(ctx: _Ctx) -> set[int]:
    """Blocks that lanes split by a divergent branch may run apart: the union of the
    regions the divergence analysis computed for its divergent branches (a region is
    what the branch reaches before its immediate post-dominator), once per function.
    A branch with a successor that only returns is an early exit (``@P EXIT`` in SASS:
    the lanes leave, nothing runs apart), so it opens no region.  Only when the analysis
    gave up on its budget are branches divergent without a region; those are computed
    here."""
    if ctx.divregion is None:
        out: set[int] = set()
        blocks = ctx.func.blocks
        regions = ctx.div.regions
        cfg: CfgContext | None = None
        for b in blocks:
            if not ctx.div.branch_divergent(b.index):
                continue
            if any(
                s.insts and all(i.ast.opcode in ("ret", "exit") for i in s.insts) for s in b.succs
            ):
                continue
            region = regions.get(b.index)
            if region is None:
                if cfg is None:
                    cfg = CfgContext(ctx.func.cfg_succs(), [False] * len(blocks))
                region = cfg.region(b.index).blocks
            out.update(region)
        ctx.divregion = out
    return ctx.divregion


_SYNC_OPS: Final = ("bar.warp.sync", "setmaxnreg")
_AFTER_SPIN: Final = "in a kernel whose lanes rejoin unsynchronised after a spin loop"


def _spin_source(d: Inst) -> bool:
    if d.ast.opcode == "mbarrier":
        return "try_wait" in d.ast.name or "test_wait" in d.ast.name
    return d.ast.opcode in ("ld", "ldu") and any(
        m in d.ast.mods for m in (".volatile", ".acquire", ".relaxed")
    )


def _condition_from(term: Inst, found: Callable[[Value], bool], depth: int) -> bool:
    """Some value within ``depth`` definitions of the branch condition of ``term``
    (through every operand, guards included) satisfies ``found``."""
    work = [(term.pred, depth)]
    seen: set[int] = set()
    while work:
        v, k = work.pop()
        if v is None or v.id in seen:
            continue
        seen.add(v.id)
        if found(v):
            return True
        if k > 1 and v.kind == "inst" and isinstance(v.inst, Inst):
            work.extend((u, k - 1) for u in v.inst.operand_values())
    return False


def _spin_value(v: Value) -> bool:
    """Written by a read of memory another thread may change: a ``mbarrier.try_wait`` /
    ``test_wait`` result, a volatile, relaxed or acquire load."""
    return v.kind == "inst" and isinstance(v.inst, Inst) and _spin_source(v.inst)


def _lane_value(v: Value) -> bool:
    """Picks lanes of a warp: an ``elect.sync`` result or ``%laneid``."""
    if v.kind == "special":
        return v.var.startswith("%laneid")
    return v.kind == "inst" and isinstance(v.inst, Inst) and v.inst.ast.opcode == "elect"


def _cycles(succs: list[list[int]]) -> tuple[list[int], list[bool]]:
    """The strongly connected component of each node of a graph and whether the node
    lies on a cycle (a component of several nodes, or an edge to itself)."""
    comp = tarjan_scc(succs).comp_of
    size: dict[int, int] = {}
    for c in comp:
        size[c] = size.get(c, 0) + 1
    return comp, [size[c] > 1 or i in succs[i] for i, c in enumerate(comp)]


def _block_loops(ctx: _Ctx) -> tuple[list[int], list[bool]]:
    """:func:`_cycles` of the function's control-flow graph (once per function)."""
    if ctx.block_loops is None:
        ctx.block_loops = _cycles([[s.index for s in b.succs] for b in ctx.func.blocks])
    return ctx.block_loops


def _unsynced_spin(ctx: _Ctx) -> bool:
    """The function has a branch that picks lanes of the warp (on an ``elect.sync``
    result or ``%laneid``) around a loop of its region that spins on memory -- the
    loop's exit depends on a ``mbarrier.try_wait`` result or a volatile load -- where
    the lanes rejoin inside a loop around the region (the warp runs the rejoined code
    again) with no ``bar.warp.sync`` (or ``setmaxnreg``) at the rejoin.  ptxas then
    keeps 64 x 64-bit products and ``%cluster_ctaid`` per-thread in the whole kernel:
    the producer's elected lane waiting on the pipeline in cutlass/hopper_fp8_gemm.sm90a.ptx
    (``elect.sync`` at line 767, rejoin at line 840); one ``bar.warp.sync -1`` there
    makes its tile scheduler uniform.  Computed once per function, linear in the sizes
    of the lane-picked regions.  See docs/uniform-registers.md, "Ninth round"."""
    if ctx.spin is None:
        ctx.spin = False
        func = ctx.func
        regions = ctx.div.regions
        if regions:
            blocks = func.blocks
            for br, region in regions.items():
                head = blocks[br].terminator
                if head is None or not _condition_from(head, _lane_value, 4):
                    continue
                inside = set(region)
                # the loops of the region itself: cycles of the blocks inside it
                local = {b: i for i, b in enumerate(region)}
                sub = [
                    [local[s.index] for s in blocks[b].succs if s.index in local] for b in region
                ]
                cyclic = _cycles(sub)[1]
                if not any(
                    cyclic[i]
                    and (term := blocks[b].terminator) is not None
                    and _condition_from(term, _spin_value, 3)
                    for i, b in enumerate(region)
                ):
                    continue
                # the warp meets the rejoined code again only in a loop around the
                # region (lanes that return from the region never rejoin)
                comp = _block_loops(ctx)[0]
                rejoin = {
                    s.index
                    for b in region
                    for s in blocks[b].succs
                    if s.index not in inside and s.index != br and comp[s.index] == comp[br] >= 0
                }
                if rejoin and not any(
                    i.ast.name.startswith(_SYNC_OPS) for s in rejoin for i in blocks[s].insts
                ):
                    ctx.spin = True
                    break
    return ctx.spin


def _cluster_ctaid(d: Inst) -> bool:
    """``mov %r, %cluster_ctaid.*``: ptxas derives it from ``SR_CTAID`` by per-thread
    float arithmetic (``S2R R8, SR_CTAID.Y; I2FP.F32.U32 R5, R8; FMUL R12, R5, UR4;
    F2I.U32.TRUNC.NTZ``, cutlass/hopper_fp8_gemm.sm90a.ptx line 270 at sm_90), so the
    value starts in R; a kernel in UR mode copies it to UR (``R2UR UR16, R2``,
    cutlass/hopper_mixed_dtype_gemm.sm90a.ptx line 6114), one whose lanes rejoin
    unsynchronised after a spin (:func:`_unsynced_spin`) does not."""
    ops = d.ast.operands
    return (
        d.ast.opcode == "mov"
        and len(ops) > 1
        and str(getattr(ops[1], "name", "")).startswith("%cluster_ctaid")
    )


def _written_apart(w: Web, ctx: _Ctx) -> bool:
    """``w`` is written more than once and one of its writes lies in a divergent region
    (:func:`_divergent_blocks`).  ptxas keeps such a register per-thread even when
    every value written is uniform, e.g. the counter of a loop nested in a loop with a
    per-thread trip count: ``mov.u32 %r425, 0`` ... ``add.s32 %r425, %r425, 16`` is
    ``MOV R17, RZ`` ... ``VIADD R17, R17, 0x10`` and the shifts by it are per-thread
    ``SHF.L.U32 R15, R10, R17, RZ`` (cutlass/hopper_mixed_dtype_gemm.sm90a.ptx lines
    20757-21058 at sm_90, the curand skip-ahead of ``RandomUniformFunc``)."""
    if len(w.defs) < 2:
        return False
    reg = _divergent_blocks(ctx)
    return bool(reg) and any(d.block is not None and d.block.index in reg for d in w.defs)


def _eligible(w: Web, ctx: _Ctx) -> str:
    """'' when ``w`` passes criteria 1, 2 and 4; otherwise the reason it does not."""
    if not w.defs or w.name in ctx.not_written:
        return NOT_WRITTEN
    if w.name not in ctx.uniform:
        return VARYING
    for d in w.defs:
        c = ctx.cls.at_point(d)
        if _broadcast(d, ctx):
            if w.is_pred:  # the lane-valid predicate of the shuffle: a per-thread P
                return f"{c} has no uniform form on sm_{ctx.sm}"
            continue
        if c not in ctx.forms:
            return f"{c} has no uniform form on sm_{ctx.sm}"
        if c == "S2R" and _cluster_ctaid(d) and _unsynced_spin(ctx):
            return f"%cluster_ctaid computed per-thread {_AFTER_SPIN}"
        if _wide_multiply(d, ctx) and _unsynced_spin(ctx):
            return f"64 x 64-bit multiply: per-thread IMAD.WIDE {_AFTER_SPIN}"
        if len(d.defs) > 1 and c not in ("IMAD", "IADD3", "LDC", "ISETP", "MOV"):
            return f"{c} writes several registers"
    if w.width > 2:
        return "wider than 64 bits"
    if _written_apart(w, ctx):
        return "written more than once, inside a divergent region"
    if len(w.defs) == 1 and w.defs[0] in ctx.folded:
        if w.width == 2 and w.defs[0].ast.opcode == "shl":
            return "shift folded into the per-thread pointer step that reads it (LEA)"
        return "multiply folded into the per-thread add that reads it (IMAD)"
    if w.name in ctx.nots:
        return "complement read only by per-thread logic: a LOP3 beside its readers"
    if _branch_only_compare(w, ctx):
        return "compare read only by branches: ISETP reads the uniform source"
    if _zero_test_branch(w, ctx):
        return "compare with zero (sm_90: a parameter) read only by branches: ISETP"
    if _zero_tested_mask(w, ctx):
        return "mask tested against zero: one LOP3 writes the predicate"
    if w.width == 2 and not ctx.cutlass:
        for u in w.uses:
            if u.address and ctx.cls.at_point(u.inst) in ("LDG", "STG", "ATOMG", "LD", "ST"):
                return "64-bit global/generic address (excluded operand category)"
        if _address_base(w, ctx, 4):
            return "64-bit global/generic address base (excluded operand category)"
        if _offset_base(w, ctx):
            return "64-bit base of a per-thread global/generic address (IMAD.WIDE / IADD3)"
    return ""


def _address_registers(ctx: _Ctx) -> set[str]:
    """The registers whose value is a global or generic address, or a 64-bit term of
    one (closed over the 64-bit ``add``s that compute an address), once per function."""
    if ctx.addr_regs is None:
        out: set[str] = set()
        work: list[str] = []
        for ins in ctx.insts:
            info = ins.info
            if info is None or info.name not in _MEMORY_OPS or not info.addrs:
                continue
            if ctx.cls.at_point(ins) not in _GLOBAL_MEM:
                continue
            for k in address_slots(ins):
                v = ins.uses[k] if k < len(ins.uses) else None
                if isinstance(v, Value) and v.var not in out:
                    out.add(v.var)
                    work.append(v.var)
        webs = ctx.webs
        defs_of = webs.defs_of
        while work:
            reg = work.pop()
            for d in webs.defs(reg) if reg in defs_of else ():
                t = d.info.type if d.info is not None else None
                if d.ast.opcode != "add" or t is None or not t.endswith("64"):
                    continue
                for v in d.uses:
                    if isinstance(v, Value) and v.var in defs_of and v.var not in out:
                        out.add(v.var)
                        work.append(v.var)
        ctx.addr_regs = out
    return ctx.addr_regs


def _offset_base(w: Web, ctx: _Ctx) -> bool:
    """``w`` is a base ``param + (x * imm)`` (see :func:`_scaled_addend`) whose one
    reader, in the same block, adds a per-thread offset to make a global/generic
    address: ptxas fuses the product, the base and the offset into two per-thread
    ``IMAD.WIDE`` (``mul.wide.s32 %rd13, %r36, 4; add.s64 %rd14, %rd7, %rd13; ...
    add.s64 %rd1, %rd14, %rd15`` -> ``IMAD.WIDE R4, R10, R7, c[0x0][0x160];
    IMAD.WIDE.U32 R4, R0, 0x4, R4``, triton/layer_norm_fwd.sm80.ptx lines 56-63 at
    sm_80).  A base read by several addresses (triton/attention_bwd_bf16.sm90a.ptx line
    76) or in a later block (triton/attention_bwd_fp16.sm80.ptx line 205) stays UR,
    ``UIMAD.WIDE UR6, UR33, 0x2, UR6``."""
    if len(w.defs) != 1 or len(w.uses) != 1:
        return False
    d0 = w.defs[0]
    u = w.uses[0]
    c = u.inst
    if u.slot < 0 or c.ast.opcode != "add" or not c.defs or c.block is not d0.block:
        return False
    if not any(
        isinstance(v, Value) and v.var in ctx.consts and _scaled_addend(d0, v.var, ctx)
        for v in d0.uses
    ):
        return False
    d = c.defs[0]
    return _varying(d, ctx) and d.var in _address_registers(ctx)


def _address_base(w: Web, ctx: _Ctx, depth: int) -> bool:
    """``w`` plus immediates (at most ``depth`` adds) is a global/generic address: the
    immediates fold into the memory operand's offset, so ``w`` is the per-thread
    register pair of the access (``add.s64 %rd108, %rd112, 512; st [%rd108]`` ->
    ``ST.E.128 desc[UR10][R16.64+0x200]``, cub/reduce_by_key.sm90.ptx line 838 at
    sm_90) and falls under the excluded category like the address itself."""
    for u in w.uses:
        c = u.inst
        if u.address and ctx.cls.at_point(c) in ("LDG", "STG", "ATOMG", "LD", "ST"):
            return True
        if depth and c.ast.opcode == "add" and any(isinstance(o, Imm) for o in c.ast.operands):
            x = _def_web(c, ctx)
            if x is not None and x.width == 2 and _address_base(x, ctx, depth - 1):
                return True
    return False


# One reader of a web, as :func:`_cost` sees it (everything that does not depend on
# which webs are in UR, computed once per web, see :func:`_reader_rows`):
# (guard, uniform branch guard / constant operand, web the reader writes (None for an
#  LDC: it is no uniform reader), reader is a MOV, reader, how a per-thread reader
#  takes the value -- 0 by a bridge, 1 from UR without one, 2 from UR when this web
#  gets the reader's one UR/constant slot (or, on sm_75-89, as a copied factor));
#  the reader's point, line and id are read off it where needed (no boxed integers)
_Row = tuple[bool, bool, str | None, bool, Inst, int]


def _reader_rows(cur: Web, ctx: _Ctx) -> list[_Row]:
    """The readers of ``cur`` with their static facts (cached per web)."""
    hit = ctx.rows.get(cur.name)
    if hit is not None:
        return hit
    rows: list[_Row] = []
    const = cur.name in ctx.consts
    cls = ctx.cls
    for u in cur.uses:
        c = u.inst
        cc = cls.at_point(c)
        xn = _def_name(c)
        if u.slot == -1:  # guard predicate
            rows.append((True, cc == "BRA", xn, False, c, 0))
            continue
        free = 0
        if const:
            pass  # a c[bank][offset] / immediate operand: it claims the slot, no bridge
        elif cur.is_pred:
            # a predicate read as a source: UP only for a wgmma's scale-d, otherwise a
            # PLOP3.LUT copy into P (``setp.eq.s32 %p28, %r488, 16`` feeding a per-thread
            # selp, cutlass/ampere_tf32_gemm.sm80.ptx line 362: ISETP.NE.AND P5 at sm_80)
            if accepts_up_source(cc, c.ast.opcode):
                free = 1
        elif cc == "MMA" and cur.width == 2 and c.ast.opcode.startswith("wgmma"):
            free = 1  # a wgmma matrix descriptor is read from UR
        elif cc == "MMA" and c.ast.name.startswith("cp.async.bulk.tensor"):
            free = 1  # a TMA copy reads every operand from UR (UTMALDG / UTMASTG)
        else:
            shared = cc in ("LDS", "STS", "ATOMS", "SYNCS")
            cut = ctx.cutlass and u.address and cc in _GLOBAL_MEM
            if cc == "SYNCS" and not u.address:
                # an mbarrier operand besides the address, e.g. a wait's phase parity:
                # ptxas keeps the phase in UR and copies it into R at the wait, a
                # copy it does not count against UR
                # (``IMAD.U32 R16, RZ, RZ, UR4 ; SHF.L.U32 R16, R16, 0x1f, RZ ;
                # SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR12], R16`` for
                # cutlass/hopper_mixed_dtype_gemm.sm90a.ptx line 1511 at sm_90)
                free = 1
            elif accepts_ur_source(cc) and shared == u.address:
                free = 2  # (a global access's address slot never is such a slot)
            elif cut:
                free = 1
        xn_op = None if cc == "LDC" else xn
        rows.append((False, const, xn_op, cc in _NARROW, c, free))
    ctx.rows[cur.name] = rows
    return rows


def _sources(w: Web, ctx: _Ctx) -> list[tuple[str, int]]:
    """(web, PTX line) of every register source of ``w``'s writes that would need an
    R2UR when it is not in UR (cached per web)."""
    hit = ctx.srcs.get(w.name)
    if hit is not None:
        return hit
    out: list[tuple[str, int]] = []
    defs_of, consts = ctx.webs.defs_of, ctx.consts
    for d in w.defs:
        if _broadcast(d, ctx):
            continue  # the R2UR itself (see _broadcast)
        for v in d.operand_list():
            k = v.var
            if v.kind == "special" or k not in defs_of or k == w.name or k in consts:
                continue
            out.append((k, _line(d)))
    ctx.srcs[w.name] = out
    return out


def _cost(
    w: Web,
    ur: set[str],
    ctx: _Ctx,
    claims: list[str | None],
    out: list[Bridge],
    touched: list[str],
    seen_claims: dict[Inst, str | None],
) -> int:
    """Criteria 3 and 5: 1 + the bridges ``w`` needs when it is in UR and ``ur`` are.
    What the result depends on beyond the static facts is recorded for
    :class:`_Costs`: every web whose membership of ``ur`` it tests (``touched``), and
    for every slot claim it reads, the claim it found (``seen_claims``: ``None`` for
    none)."""
    if _reduced_in_ur(w):
        return 1
    bridges = 0
    r2ur = 0  # bridges that move a per-thread source into UR
    uniform_readers = 0
    def_pos = ctx.first[w.name]
    web_id = ctx.web_id
    seen: FnvSet | None = None  # made at the first copy the walk goes through
    queue = [w]
    k = 0
    while k < len(queue):
        cur = queue[k]
        k += 1
        name = cur.name
        for guard, flag, xn, narrow, c, free in _reader_rows(cur, ctx):
            if xn is not None:
                touched.append(xn)
            if guard:
                if flag or xn in ur:
                    uniform_readers += 1
                    continue
                bridges += 1
                out.append(Bridge("UR2R", w.name, _line(c)))
                continue
            if xn is not None and xn in ur:
                uniform_readers += 1
                if narrow:
                    if seen is None:
                        seen = FnvSet()
                        seen.add(web_id[w.name])
                    if seen.add(web_id[xn]):
                        queue.append(ctx.webs[xn])
                if c.point < def_pos and cur is w:
                    # a loop-carried read before the definition: of the web itself
                    # (a reader found through a copy reads the copy, see the
                    # eighth round in docs/uniform-registers.md)
                    bridges += 1
                continue
            if flag:  # a constant operand: it claims the slot
                owner = claims[c.point]
                if c not in seen_claims:
                    seen_claims[c] = owner
                if owner is None:
                    claims[c.point] = _slot_taker(c, ctx) or name
                continue
            if free == 1:
                continue
            if free >= 2:
                owner = claims[c.point]
                if c not in seen_claims:
                    seen_claims[c] = owner
                if owner is None:
                    owner = claims[c.point] = _slot_taker(c, ctx) or name
                if owner == name:
                    continue
                if ctx.sm < 90 and _copied_factor(c, cur, ctx):
                    continue
            bridges += 1
            out.append(Bridge("UR2R", w.name, _line(c)))
    for s, line in _sources(w, ctx):
        touched.append(s)
        if s in ur:
            continue
        bridges += 1
        r2ur += 1
        out.append(Bridge("R2UR", s, line))
    if uniform_readers == 0 and any(_broadcast(d, ctx) and _kept_shuffle(d, ctx) for d in w.defs):
        return 2 + bridges  # a kept SHFL read only per-thread (see _kept_shuffle)
    if len(w.defs) > 1 and uniform_readers == 0 and _distinct_writes(w):
        # a variable of the program that only per-thread instructions read: ptxas
        # keeps it in R (see _distinct_writes)
        ctx.variables.add(w.name)
        return 2 + bridges
    if (
        ctx.leaf_rule
        and uniform_readers == 0
        and ctx.cls.at_point(w.defs[0]) not in ctx.leaf_exempt
    ):
        bridges += 1  # read only by per-thread instructions: computed in R directly
    if ctx.tolerate_bridges and bridges and uniform_readers > bridges:
        return 1  # the variant that lets uniform readers outvote the bridges
    if not r2ur and uniform_readers > bridges and (len(w.defs) > 1 or bridges == 1):
        # a web written more than once (a loop-carried value) whose uniform readers
        # outnumber its per-thread ones: ptxas keeps it in UR and copies it to R once
        # (``IMAD.U32 R42, RZ, RZ, UR5``, cub/histogram.sm80.ptx line 6645 at sm_80).
        # Likewise a web that at least two uniform instructions read and whose one
        # bridge would be a single copy into R (or one back reference, which is
        # counted the same way): the extraction commits promotable
        # candidates cheapest first, and demoting it would start a cascade through
        # its uniform readers (cutlass/ampere_fmha.sm80.ptx: %rd9, the zero-extended
        # %ctaid.z of line 74, charged one copy for the per-thread mad of line 198,
        # took the batch offsets of lines 80-118 to R; ptxas computes all of them in
        # UR -- ``UIMAD UR4, UR20, UR4, UR21`` for that mad, ``UIMAD.WIDE.U32 UR30,
        # UR20, UR8, URZ`` for line 102; docs/uniform-registers.md, eighth round)
        return 1
    return 1 + bridges


def _reduced_in_ur(w: Web) -> bool:
    """Every write of ``w`` is a ``redux.sync``: SASS ``REDUX`` reads a register of
    each thread and writes a uniform register, so the result is in UR whatever reads
    it, and a per-thread reader gets a copy (``REDUX.SUM UR6, R2 ; MOV R7, UR6`` for
    ``redux.sync.add.u32 %r4, %r13, %r11`` stored by ``st.global``,
    cuda/reduce.O3.sm90.ptx line 435 at sm_90): no bridge of phase 74."""
    for d in w.defs:
        if d.ast.opcode != "redux":
            return False
    return bool(w.defs)


def _reduce_mask(u: Use) -> bool:
    """``u`` is the member mask of a ``redux.sync`` (its last source), which ``REDUX``
    has no operand for."""
    return u.inst.ast.opcode == "redux" and u.slot == len(u.inst.uses) - 1


def _distinct_writes(w: Web) -> bool:
    """The writes of ``w`` are not all the same expression (``mov %r5, 0`` twice).
    Such a web whose readers are all per-thread is a variable that ptxas keeps in R,
    each write a per-thread instruction: ``mov.u16 %rs267, 1`` / ``selp.u16 %rs267,
    1, 0, %p31`` on the two paths into ``$L__BB0_12`` are ``IMAD.MOV.U32 R6, RZ, RZ,
    0x1`` / ``SEL R6, RZ, 0x1, !P0`` (cutlass/hopper_fp8_gemm.sm90a.ptx lines 130 and
    145 at sm_90).  A loop-carried value that uniform instructions read stays UR
    (the loop-carried rule in :func:`_cost`)."""
    first = w.defs[0].ast
    key = (first.name, tuple(map(repr, first.operands[1:])))
    return any((d.ast.name, tuple(map(repr, d.ast.operands[1:]))) != key for d in w.defs[1:])


class _MaxTree:
    """Range add / range max over ``n`` points (budget checks of the extraction): a
    bottom-up segment tree, ``mx[i]`` the maximum of node ``i``'s range counting the
    additions ``lz`` pending at ``i`` and below (not those of its ancestors, which a
    query pushes down the two boundary paths first).  O(log n) per call, no recursion."""

    def __init__(self, n: int) -> None:
        size = 1
        while size < max(1, n):
            size *= 2
        self.size = size
        self.height = size.bit_length() - 1
        self.mx = [0] * (2 * size)
        self.lz = [0] * (2 * size)

    def _rebuild(self, i: int) -> None:
        mx, lz = self.mx, self.lz
        while i > 1:
            i >>= 1
            a, b = mx[2 * i], mx[2 * i + 1]
            mx[i] = (a if a > b else b) + lz[i]

    def _push(self, i: int) -> None:
        mx, lz = self.mx, self.lz
        for s in range(self.height, 0, -1):
            j = i >> s
            v = lz[j]
            if v:
                mx[2 * j] += v
                lz[2 * j] += v
                mx[2 * j + 1] += v
                lz[2 * j + 1] += v
                lz[j] = 0

    def add(self, lo: int, hi: int, v: int) -> None:
        """Add ``v`` at every point of ``lo..hi`` (inclusive)."""
        mx, lz = self.mx, self.lz
        lo += self.size
        hi += self.size + 1
        first, last = lo, hi - 1
        while lo < hi:
            if lo & 1:
                mx[lo] += v
                lz[lo] += v
                lo += 1
            if hi & 1:
                hi -= 1
                mx[hi] += v
                lz[hi] += v
            lo >>= 1
            hi >>= 1
        self._rebuild(first)
        self._rebuild(last)

    def max(self, lo: int, hi: int) -> int:
        """The largest value at a point of ``lo..hi`` (inclusive)."""
        mx = self.mx
        lo += self.size
        hi += self.size + 1
        self._push(lo)
        self._push(hi - 1)
        best = -(1 << 30)
        while lo < hi:
            if lo & 1:
                if mx[lo] > best:
                    best = mx[lo]
                lo += 1
            if hi & 1:
                hi -= 1
                if mx[hi] > best:
                    best = mx[hi]
            lo >>= 1
            hi >>= 1
        return best


def _interval(w: Web) -> tuple[int, int]:
    """First and last program point of ``w``'s writes and reads (a plain loop: in
    compiled code, no list and no call of the built-in ``min``/``max``)."""
    lo = hi = w.defs[0].point if w.defs else w.uses[0].inst.point
    for d in w.defs:
        p = d.point
        if p < lo:
            lo = p
        elif p > hi:
            hi = p
    for u in w.uses:
        p = u.inst.point
        if p < lo:
            lo = p
        elif p > hi:
            hi = p
    return lo, hi


def _first_point(w: Web) -> int:
    """The program point of ``w``'s first write (it has one)."""
    first = w.defs[0].point
    for d in w.defs:
        if d.point < first:
            first = d.point
    return first


def _bank_constants(ctx: _Ctx) -> set[str]:
    """The constant operands that live in a constant bank (a kernel parameter,
    ``%ntid``, and their identities), as opposed to a ``mov`` of an immediate: only
    these are ever loaded by ``ULDC``.  A worklist over the identities, like
    :func:`_constant_webs`."""
    out: set[str] = set()
    waiting: dict[str, list[str]] = {}
    for k in ctx.consts:
        for d in ctx.webs[k].defs:
            if ctx.cls.at_point(d) == "LDC":
                out.add(k)
                break
            for v in d.operand_values():
                if v.var in ctx.consts:
                    waiting.setdefault(v.var, []).append(k)
    work = list(out)
    while work:
        for k in waiting.get(work.pop(), ()):
            if k not in out:
                out.add(k)
                work.append(k)
    return out


def _self_loops(func: Func) -> dict[int, tuple[int, int]]:
    """Block index -> (first, last program point) of the block, for every loop that is
    one basic block (the block branches to itself)."""
    out: dict[int, tuple[int, int]] = {}
    for b in func.blocks:
        if b.insts and b in b.succs:
            out[b.index] = (b.insts[0].point, b.insts[-1].point)
    return out


def _loop_span(
    c: Inst, self_loops: dict[int, tuple[int, int]], small: dict[int, tuple[int, int]]
) -> tuple[int, int]:
    """The points a constant load for reader ``c`` is live over: the small loop
    around it (:func:`_small_loops`), else its block when that is a loop of one block
    (:func:`_self_loops`), else ``c``'s own point."""
    p = c.point
    hit = small.get(p) if small else None
    if hit is None and c.block is not None:
        hit = self_loops.get(c.block.index)
    return hit if hit is not None else (p, p)


# The largest loop (PTX instructions) whose constant loads sm_90 hoists, see
# :func:`_small_loops`.  Measured on the full corpus at sm_90 (kernels within 2 of
# ptxas, 137 without the rule): 100 -> 141, 200 -> 142, 300 -> 141.  The cutlass
# ``BlockForEach`` grid-stride loop (118 instructions in cutlass/hopper_ws_gemm.sm90a.ptx)
# hoists; the tile loops of ``cub/histogram`` (350 to 980) reload at each reader.
_HOIST_LOOP_LIMIT: Final = 200


def _small_loops(func: Func, limit: int) -> dict[int, tuple[int, int]]:
    """Program point -> (first, last point) of the outermost loop around it that has
    at most ``limit`` instructions (a loop: the blocks from a back edge's target to
    its source, in program order).  sm_90 hoists the constant loads of such a loop
    before it and keeps them live through it: the grid-stride loop of the cutlass
    ``BlockForEach<float, RandomUniformFunc>`` kernel (cutlass/hopper_ws_gemm.sm90a.ptx
    at sm_90) ``ULDC``s ``c[0x0][0x0]``, ``0xc``, ``0x210``, ``0x218``, ``0x230``,
    ``0x238``, ``0x240``-``0x248`` into UR4-UR15 once before the loop and reads them
    on every iteration (``FMUL R2, R14, UR10``, ``IADD3 R12, P0, R12, UR13, RZ``),
    12 names against the model's 6 with a load at each reader.  Large loops reload at
    each reader instead (``cub/histogram.sm90.ptx``, ``ULDC UR5, c[0x0][0x234]`` again
    for each reader between lines 3731 and 3997), hence ``limit``.  sm_80 is left
    out: every way of hoisting out of loops of several blocks lost sm_80 kernels
    (docs/uniform-registers.md, "Tried and rejected"), and there a per-thread reader
    takes ``c[bank][offset]`` itself."""
    blocks = func.blocks
    # instructions in blocks[:k], so that a loop's size is one subtraction (linear time
    # over all back edges; only the loops within ``limit`` are walked)
    before = [0]
    for c in blocks:
        before.append(before[-1] + len(c.insts))
    spans: list[tuple[int, int]] = []
    for b in blocks:
        for t in b.succs:
            if t.index > b.index:
                continue
            size = before[b.index + 1] - before[t.index]
            if size == 0 or size > limit:
                continue
            ps = [i.point for c in blocks[t.index : b.index + 1] for i in c.insts]
            spans.append((min(ps), max(ps)))
    out: dict[int, tuple[int, int]] = {}
    for lo, hi in sorted(spans, key=lambda s: s[0] - s[1]):
        for p in range(lo, hi + 1):
            out.setdefault(p, (lo, hi))
    return out


def _constant_points(
    ur: set[str],
    ctx: _Ctx,
    claims: list[str | None],
    self_loops: dict[int, tuple[int, int]],
    small: dict[int, tuple[int, int]],
) -> list[tuple[int, int, int]]:
    """(first point, last point, width) of every constant operand held in UR.

    A constant that a uniform instruction reads is ULDC'd for it (the web is in ``ur``);
    ptxas reloads it at each reader rather than keeping it live.  On sm_90 a
    per-thread instruction never takes a ``c[bank][offset]`` operand: the constant
    that holds its one UR/constant slot (the ``claims`` of the last attempt) is ULDC'd
    into a UR right before it (``ULDC UR6, c[0x0][0x224]; ISETP.GT.AND P0, PT, R2, UR6,
    PT``, cuda/reduce.O3.sm90.ptx line 324; a pointer parameter is a pair, ``ULDC.64
    UR6, c[0x0][0x210]; LEA R2, P0, R4, UR6, 0x2; LEA.HI.X R3, R4, UR7, R3, 0x2, P0``,
    line 902 of the -O0 file), and any other constant it reads comes by a per-thread
    ``LDC``.  On sm_75-89 the per-thread reader reads ``c[0x0][...]`` itself and holds
    no UR.  An identity of a constant (``cvta.to.global``) emits nothing: its readers
    are the ones that load it.  A reader in a loop of one basic block has its load
    hoisted before the loop, one load for all the readers there, live through the
    loop (``ULDC.64 UR10, c[0x0][0x228]``, ``UR12`` and ``UR14`` before the grid-stride
    loop of cuda/elementwise.O3.sm90.ptx ``saxpy_gs``, read at lines 50-57 on every
    iteration).  The ranges of one constant that overlap are one load."""
    bank = _bank_constants(ctx) if ctx.sm >= 90 else set()
    out: list[tuple[int, int, int]] = []
    for k in sorted(ctx.consts):
        w = ctx.webs[k]
        at: set[int] = set()  # lo * 2**32 + hi: a sort of plain integers orders them
        for u in w.uses:
            c = u.inst
            xn = _def_name(c)
            if xn is not None and xn in ctx.consts:
                continue  # an identity: its own readers load the value
            if xn is not None and xn in ur:
                if k in ur:
                    lo, hi = _loop_span(c, self_loops, small)
                    at.add(lo << 32 | hi)
                continue
            if k not in bank or u.slot < 0 or claims[c.point] != k:
                continue
            if _scaled_addend(c, k, ctx):
                continue  # IMAD.WIDE R, R, imm, R: the immediate has the slot (LDC)
            cc = ctx.cls.at_point(c)
            shared = cc in ("LDS", "STS", "ATOMS", "SYNCS")
            if accepts_ur_source(cc) and shared == u.address:
                lo, hi = _loop_span(c, self_loops, small)
                at.add(lo << 32 | hi)
        merged: list[list[int]] = []
        for e in sorted(at):
            lo, hi = e >> 32, e & 0xFFFFFFFF
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        out.extend((lo, hi, w.width) for lo, hi in merged)
    return out


def _scaled_addend(c: Inst, k: str, ctx: _Ctx) -> bool:
    """``c`` is an integer ``add`` of the constant ``k`` and a ``mul.wide`` by an
    immediate: ptxas fuses the pair into ``IMAD.WIDE R, R_x, imm, R_k`` whatever the
    product's divergence, so the immediate holds the one UR/constant slot and the
    constant comes in R by ``LDC`` (``mul.wide.s32 %rd4, %r2, 4; add.s64 %rd5, %rd3,
    %rd4`` -> ``LDC.64 R2, c[0x0][0x210]; IMAD.WIDE R2, R5, 0x4, R2``,
    cuda/reduce.O3.sm90.ptx lines 119-120 at sm_90).  A ``shl`` by an immediate instead
    becomes ``LEA``, whose shift is a field, not a source: the constant keeps the slot
    (``ULDC.64 UR6, c[0x0][0x210]; LEA R2, P0, R4, UR6, 0x2``, cuda/reduce.O0.sm90.ptx
    lines 901-902)."""
    if c.ast.opcode != "add" or ctx.cls.at_point(c) != "IADD3":
        return False
    for v in c.uses:
        if not isinstance(v, Value) or v.var == k:
            continue
        s = ctx.webs.get(v.var)
        if s is None or len(s.defs) != 1:
            continue
        d = s.defs[0]
        if d.ast.opcode == "mul" and ".wide" in d.ast.mods and _scale(d) not in (0, 1):
            return True
    return False


def _window_temporaries(ur: set[str], ctx: _Ctx) -> list[tuple[int, int, int]]:
    """sm_90: a ``mov`` of a 32-bit symbol (a shared variable's address) is computed
    in UR from the CTA's shared window, ``S2UR UR6, SR_CgaCtaId; UMOV UR4, 0x400; ULEA
    UR4, UR6, UR4, 0x18`` (cuda/reduce.O3.sm90.ptx line 55 at sm_90): one UR beyond the
    result is live at the write.  Below sm_90 the address is an immediate."""
    out: list[tuple[int, int, int]] = []
    if ctx.sm < 90:
        return out
    for k in ur:
        w = ctx.webs[k]
        if w.width != 1:
            continue
        for d in w.defs:
            ops = d.ast.operands
            if d.ast.opcode == "mov" and len(ops) > 1 and isinstance(ops[1], Sym):
                p = d.point
                out.append((p, p, 1))
    return out


def _shared_addresses(ws: list[Web], func: Func, module_vars: Iterable[object]) -> set[str]:
    """The webs of ``ws`` every write of which is a ``mov`` of a variable's address.
    Below sm_90 a shared variable's address is an immediate, its offset in the shared
    window, and takes no register: ``mov.u64 %rd13, scratch; mul.wide.u32 %rd12, %r1,
    4; add.s64 %rd2, %rd13, %rd12`` is ``IMAD.SHL.U32 R0, R6, 0x4, RZ`` (``scratch`` at
    offset 0; ``llvm/block_bitcount.sm75.ptx`` lines 57-59 at sm_80, 2 UR names in
    all); a global variable's is a constant-bank operand (``IMAD.WIDE.U32 R2, R2, R3,
    c[0x4][0x0]``).  (sm_90 computes a shared one in UR from the window, see
    :func:`_window_temporaries`.)  The declarations are read only when a web is a
    ``mov`` of a symbol."""
    found: dict[str, list[str]] = {}  # web -> the symbols its writes move
    for w in ws:
        syms = []
        for d in w.defs:
            ops = d.ast.operands
            if d.ast.opcode != "mov" or len(ops) < 2 or not isinstance(ops[1], Sym):
                break
            syms.append(ops[1].name)
        else:
            if syms:
                found[w.name] = syms
    if not found:
        return set()
    shared = _shared_symbols(func, module_vars)
    return {k for k, syms in found.items() if all(x in shared for x in syms)}


def _shared_symbols(func: Func, module_vars: Iterable[object] = ()) -> set[str]:
    """The shared, global and constant variables ``func`` sees: its own and the
    module's (``module_vars``: the module's items, when ``func`` is not bound to it)."""
    items: list[object] = list(func.head)
    items += func.module.ast.items if func.module is not None else module_vars
    return {v.name for v in items if isinstance(v, VarDecl) and v.space in _FOLDED_SPACES}


# below sm_90 the address of such a variable is an immediate (its offset in the shared
# window) or a constant-bank operand (``c[0x4][0x0]`` for a ``.global`` variable)
_FOLDED_SPACES: Final = (".shared", ".global", ".const")


def _descriptor(ctx: _Ctx, debug: bool) -> list[tuple[int, int, int]]:
    """The 64-bit global memory descriptor (``ULDC.64 UR4, c[0x0][0x118]`` on sm_80,
    ``c[0x0][0x208]`` on sm_90) as one live range, from the first global or generic
    access to the last, of one register name (only the pair's low register is ever
    named, ``desc[UR4]``).  ptxas loads it just before the first access, so a UR that
    is dead by then is reused: cuda/reduce.O3.sm90.ptx ``warp_reduce_f32`` ULDCs
    ``c[0x0][0x0]`` and ``c[0x0][0x220]`` into UR4 for lines 113-114 and then the
    descriptor into UR4 for the load at line 121 (one UR name in all).  A debug target
    keeps the descriptor in R and moves it by two R2URs before each access, which name
    both registers (``R2UR UR4, R30; R2UR UR5, R31; LD.E R2, desc[UR4][R2.64]``,
    cuda/reduce.G.sm90.ptx line 1229).  None when the function touches no global or
    generic memory."""
    insts, cls = ctx.insts, ctx.cls
    first = -1
    for i in insts:  # (plain loops and a module-level test: no closure called per instruction)
        if _global_access(i, cls):
            first = i.point
            break
    if first < 0:
        return []
    if not debug and ctx.sm >= 90 and ctx.func.ast.kind != ".entry":
        staged = _staged_descriptor(ctx)
        if staged:
            return staged
    last = first
    for p in range(len(insts) - 1, first, -1):
        if _global_access(insts[p], cls):
            last = p
            break
    return [(first, last, 2 if debug else 1)]


def _global_access(i: Inst, cls: Classes) -> bool:
    """``i`` is a global or generic memory access (reads the descriptor)."""
    info = i.info
    return info is not None and info.name in _MEMORY_OPS and cls.at_point(i) in _GLOBAL_MEM


def _staged_descriptor(ctx: _Ctx) -> list[tuple[int, int, int]]:
    """The descriptor of a called function (``.func``, sm_90) with a global or generic
    access inside a loop: ptxas hoists it out of the loop into an R pair (``LDC.64 R14,
    c[0x0][0x208]``) and copies it into a UR pair before the accesses (``R2UR UR8, R14;
    R2UR UR9, R15; LDG.E R5, desc[UR8][R10.64]``), one pair per access of a block, all
    copied ahead of the first (``desc[UR8]`` .. ``desc[UR14]`` for the four loads of
    ``g_scramble`` in cuda/control.O3.sm90.ptx ``_Z8mix_hashji``, line 73; a block of
    24 independent loads names 24 pairs, UR6-UR53), while the accesses of a loop that
    ptxas unrolls share one.  An entry keeps the descriptor in UR (``ULDC.64``), and so
    does a ``.func`` without such a loop: what :func:`_descriptor` counts then.  One
    range per block with accesses, from its first access to its last, two registers
    per access.  Empty when no access is in a loop."""
    cyclic = _block_loops(ctx)[1]
    looped = False
    out: list[tuple[int, int, int]] = []
    for b in ctx.func.blocks:
        points = [i.point for i in b.insts if _global_access(i, ctx.cls)]
        if not points:
            continue
        looped = looped or cyclic[b.index]
        out.append((points[0], points[-1], 2 * len(points)))
    return out if looped else []


def _aggregated_atomics(ctx: _Ctx) -> tuple[list[tuple[int, int, int]], list[Inst]]:
    """A global or generic ``atom`` whose result is never read, at an address the
    divergence analysis calls uniform, becomes one ``RED`` per warp, and the warp's share
    is worked out in UR at the atomic: an ``add`` of an immediate by ``VOTEU.ANY UR8,
    UPT, PT; UFLO.U32 UR9, UR8; POPC R9, UR8`` (the active mask and its leader, two URs),
    an ``add`` of a register by ``REDUX.SUM UR5, R0 ; VOTEU.ANY UR4, UPT, PT ; UFLO.U32
    UR4, UR4`` (two URs, ``numba/clamp_count.sm80.ptx`` line 326, a generic address), a
    ``min``/``max`` of an integer by ``REDUX.MIN.S32 UR10, R7`` (one UR).
    cuda/atomics.O3.sm90.ptx ``count_matches``, lines 139 and 141 (``atom.global.add.u32
    %r8, [%rd6], 1; atom.global.min.s32 %r9, [%rd7], %r1``): at sm_90 UR8-UR10 beside
    the descriptor and the address pair, 6 names against the model's 2; at sm_80
    ``VOTEU.ANY UR6``, ``UFLO.U32 UR7``, ``REDUX.MIN.S32 UR8`` beside the descriptor
    UR4, 4 names against 1.  ptxas interleaves the atomics of one block (the
    ``REDUX`` of line 141 comes before the ``VOTEU`` of line 139), so each one's URs live
    to the block's last such atomic.  A result that is read keeps the ``ATOMG`` (``sum_last_block``
    line 221), a varying address too; ``ctx.func`` is scanned once.  Returns the ranges
    and the atomics: the URs ptxas writes at such a line are the aggregation's, which
    the report gives as the file of the (unread) result."""
    atoms = [
        [i for i in b.insts if i.ast.opcode == "atom" and _global_access(i, ctx.cls)]
        for b in ctx.func.blocks
    ]
    if not any(atoms):
        return [], []  # most functions: no second sweep for the registers that are read
    read: set[str] = set()
    for b in ctx.func.blocks:
        for ins in b.insts:
            for v in ins.uses:
                if isinstance(v, Value):
                    read.add(v.var)
    out: list[tuple[int, int, int]] = []
    aggregated: list[Inst] = []
    for found in atoms:
        block: list[tuple[int, int]] = []
        for ins in found:
            a = ins.ast
            if any(d.var in read for d in ins.defs):
                continue
            vals = [v for v in ins.uses if isinstance(v, Value)]
            if not vals or (vals[0].kind != "special" and vals[0].var not in ctx.uniform):
                continue
            p = ins.point
            ints = not any(t in a.mods for t in (".f32", ".f64", ".f16", ".bf16", ".f16x2"))
            if ".add" in a.mods and len(vals) <= 2 and ints:
                block.append((p, 2))
            elif (".min" in a.mods or ".max" in a.mods) and len(vals) == 2 and ints:
                block.append((p, 1))
            else:
                continue
            aggregated.append(ins)
        if block:
            last = max(p for p, _ in block)
            out.extend((p, last, n) for p, n in block)
    return out, aggregated


def _pressure(ws: list[Web], ctx: _Ctx, ranges: Iterable[tuple[int, int, int]] = ()) -> int:
    """Peak number of live registers of ``ws`` in program order (a constant operand is
    not live of its own), plus ``ranges`` (first point, last point, width: the loads
    of constant operands, see :func:`_constant_points`, the memory descriptor and
    other registers ptxas adds)."""
    # each event one integer, point * 2**16 + bias + change, so that a sort of plain
    # integers orders them by point and, at one point, the ends (negative changes)
    # before the starts
    ev: list[int] = []
    for w in ws:
        if w.name in ctx.consts:
            continue
        lo, hi = _interval(w)
        ev.append(lo * _EVENT + _BIAS + w.width)
        ev.append((hi + 1) * _EVENT + _BIAS - w.width)
    for lo, hi, width in ranges:
        ev.append(lo * _EVENT + _BIAS + width)
        ev.append((hi + 1) * _EVENT + _BIAS - width)
    ev.sort()
    cur = best = 0
    for e in ev:
        cur += (e & _EVENT_MASK) - _BIAS
        if cur > best:
            best = cur
    return best


_EVENT: Final = 1 << 16  # (a register width is far below _BIAS)
_EVENT_MASK: Final = _EVENT - 1
_BIAS: Final = 1 << 15


def _call_points(ctx: _Ctx) -> dict[int, str]:
    """Program point -> called function, for every direct ``call`` (the call sites the
    divergence analysis listed)."""
    return {s.inst.point: s.callee for s in ctx.div.sites if s.callee is not None}


def with_callees(funcs: list[Func], plans: list[FuncPlan]) -> None:
    """A function's UR count is at least that of every function it calls, directly or
    not, plus the registers it holds across the call (``plans[i]`` is the plan of
    ``funcs[i]``; both counts are raised in place).  ptxas does not inline a ``.func``
    that is called from several places, and the kernel's SASS, whose UR names the
    count is compared with, holds the callee's code: cuda/control.O0.sm90.ptx
    ``collatz`` (calls ``_Z8mix_hashji``) at sm_90 names UR4-UR7 itself (``ULDC.64
    UR4, c[0x0][0x208]`` for the descriptor, ``ULDC.64 UR6, c[0x0][0x218]`` at line
    344) and UR6-UR9 in the callee's loop (``ULDC.64 UR6, c[0x4][0x8]`` at line 133 for
    ``g_scramble``, the descriptor moved in by ``R2UR UR8, R10; R2UR UR9, R11`` at
    line 134): 6 names.  The callee reuses the caller's names where their ranges do not
    meet (UR6 above), but not a register live across the call: the descriptor, which
    the kernel reads before and after it, keeps the callee off UR4-UR5
    (``FuncPlan.live_across``; in cuda/control.O3.sm90.ptx the callee names UR6-UR15).
    So the count is the maximum of the function's own and, per callee, what it holds
    across a call plus the callee's count.  A worklist over the call graph, each
    function's callees merged once after theirs (linear in the functions and calls; a
    recursive cycle is one set)."""
    index = {f.name: i for i, f in enumerate(funcs)}
    calls: list[set[int]] = []
    for f in funcs:
        cs: set[int] = set()
        for b in f.blocks:
            for ins in b.insts:
                if ins.ast.opcode == "call":
                    for o in ins.ast.operands:
                        if isinstance(o, Sym) and o.name in index:
                            cs.add(index[o.name])
        calls.append(cs)
    # components come out callees first, so each one's count is final when its
    # callers read it
    scc = tarjan_scc([sorted(cs) for cs in calls])
    order, comp = scc.components, scc.comp_of
    for members in order:
        for attr in ("ur_count", "ur_count_of_lines"):
            best = max(getattr(plans[i], attr) for i in members)
            for i in members:
                for c in calls[i]:
                    if comp[c] != comp[i]:
                        held = plans[i].live_across.get(funcs[c].name, 0)
                        best = max(best, held + getattr(plans[c], attr))
            for i in members:
                setattr(plans[i], attr, best)


# The retry loop reuses a cost while nothing it read changed (:class:`_Costs`); the
# tests turn this off to check that the decisions are those of computing every cost
# again (a module attribute, so that it can be set on a compiled build too).
REUSE_COSTS = True

# what :func:`_cost` is given and returns (a stand-in takes its place in tests)
CostFn = Callable[
    [
        Web,
        set[str],
        "_Ctx | None",
        list[str | None],
        list[Bridge],
        list[str],
        dict[Inst, str | None],
    ],
    int,
]


def _claims_as_found(
    slots: list[tuple[Inst, str | None, str | None]], claims: list[str | None]
) -> bool:
    """Every slot a kept cost read holds the claim it found then."""
    for cid, was, _ in slots:
        x = claims[cid.point]
        if x is not was and x != was:
            return False
    return True


def _none_in(xs: list[str], s: set[str]) -> bool:
    """No item of ``xs`` is in ``s`` (a plain loop: compiled, no generic call)."""
    for x in xs:
        if x in s:
            return False
    return True


class _Costs:
    """The costs of the retry loop, recomputed only where an input changed.

    A web's cost is a function of static facts, of the membership in ``ur`` of the
    webs it tests, and of the slot claims it reads (claims are made in program order
    within one attempt).  Each result is kept with what it read; at the next attempt
    (or the final pass) it is reused, and its own claims replayed, when none of the
    webs it tested was demoted by the attempt before or so far in this one (a result
    is checked at every attempt, so older demotions were checked before) and every
    claim it reads is as it found it -- so the costs, bridges and claims are exactly
    those of computing all of them again.  Only a cost of 1 is kept: a web of any
    other cost leaves UR for good, so the retry loop never asks for it again (the
    final pass may, and computes it).  ``last`` holds the bridges of the last cost
    asked for, computed or reused.  ``compute`` replaces :func:`_cost` (tests);
    ``computed`` counts the costs computed, reused ones not included."""

    __slots__ = ("webs", "ur", "ctx", "changed", "kept", "compute", "reuse", "computed", "last")

    def __init__(
        self, webs: Webs, ur: set[str], ctx: _Ctx | None, compute: CostFn | None = None
    ) -> None:
        self.webs = webs
        self.ur = ur
        self.ctx = ctx
        self.compute = compute
        self.reuse = REUSE_COSTS
        self.computed = 0
        self.changed: set[str] = set()  # demoted by the last attempt and this one so far
        self.last: list[Bridge] = []
        # web -> (cost, webs tested, (reader, claim found, claim left) per slot read,
        # bridges)
        self.kept: dict[
            str, tuple[int, list[str], list[tuple[Inst, str | None, str | None]], list[Bridge]]
        ] = {}

    def cost(self, k: str, claims: list[str | None]) -> int:
        """The cost of ``k`` given ``claims`` (slot owner by program point), which it
        updates with its own claims."""
        hit = self.kept.get(k) if self.reuse else None
        if hit is not None:
            c, touched, slots, self.last = hit
            if _none_in(touched, self.changed) and _claims_as_found(slots, claims):
                for cid, _, now in slots:  # replay its claims
                    claims[cid.point] = now
                return c
        tested: list[str] = []  # (a list: appended per reader, read only at a reuse)
        read: dict[Inst, str | None] = {}
        out: list[Bridge] = []
        ctx = self.ctx
        if self.compute is not None:
            c = self.compute(self.webs[k], self.ur, ctx, claims, out, tested, read)
        else:
            assert ctx is not None
            c = _cost(self.webs[k], self.ur, ctx, claims, out, tested, read)
        self.computed += 1
        self.last = out
        if c == 1:
            self.kept[k] = (c, tested, [(i, v, claims[i.point]) for i, v in read.items()], out)
        return c


def _unique_bridges(bs: list[Bridge]) -> list[Bridge]:
    """``bs`` without repeats (the same copy found through two readers), by line."""
    by_key = {(b.line, b.kind, b.reg): b for b in bs}
    return [by_key[k] for k in sorted(by_key)]


def plan_function(
    func: Func,
    div: Divergence,
    sm: int,
    *,
    kernel_name: str | None = None,
    max_attempts: int = 5,
    ur_budget: int = UR_BUDGET,
    up_budget: int = UP_BUDGET,
    cutlass_override: bool = True,
    debug: bool = False,
    tolerate_bridges: bool = False,
    ur_lines: set[int] | None = None,
    module_vars: Iterable[object] = (),
) -> FuncPlan:
    """The register file of every web of ``func`` at target ``sm`` (see module doc).
    ``debug``: the module's ``.target`` says ``debug`` (ptxas then compiles without
    optimisation and phase 74 does not run).  ``tolerate_bridges``: a web whose uniform
    readers outnumber the bridges it needs keeps UR (a measured variant, not the
    default: ptxas does pay such bridges -- ``S2UR UR6; IMAD.U32 R5, RZ, RZ, UR6`` --
    but not always; see docs/uniform-registers.md).  ``ur_lines``: PTX lines at which
    ptxas writes a UR; ``ur_count_of_lines`` is then the count of the webs written there
    (not constants, not MMA results) with the same additions as ``ur_count``, which
    tells the count's own error from the error of the set it counts (the varying webs
    among them have no recorded reads: only their writes make their live range).
    ``module_vars``: the module's items (its variable declarations), for a function not
    bound to its module (``Func.module``)."""
    plan = FuncPlan(func.name, sm)
    sc = scan(func, div.varying)
    webs, cls = sc.webs, sc.cls
    active = not debug and has_uniform_file(sm)
    # the webs whose reads the model looks at: the uniform ones, constant operands
    # (their readers' slots) and special-register reads (compares)
    names = list(sc.uniform) if active else []
    uniform = [webs[k] for k in names]
    consts = _constant_webs(sc.copies, webs, cls) if active else set()
    addresses = _param_addresses(func, webs, sc.copies, sc.insts) if active else set()
    consts |= addresses
    if active:
        names += sorted(k for k in consts | sc.specials if k not in sc.uniform)
    record_reads(func, webs, names, sc.insts)
    name = kernel_name if kernel_name is not None else func.name
    ctx = _Ctx(
        func, div, sm, cutlass_override and "cutlass" in name, webs, cls,
        {w.name: i for i, w in enumerate(uniform)}, sc.insts, sc.uniform, sc.not_written,
    )  # fmt: skip
    ctx.tolerate_bridges = tolerate_bridges
    ctx.vary = sc.vary
    ctx.slot = [None] * len(sc.insts)
    ctx.forms = uniform_forms(sm)
    ctx.consts = consts
    why: dict[str, str] = {}
    default_why = ""
    ur: set[str] = set()
    reduced: list[str] = []  # debug: the REDUX results (UR without phase 74)
    if debug:
        default_why = "debug target: ptxas runs no optimisation phase (74 included)"
        if has_uniform_file(sm):
            # instruction selection, not phase 74: REDUX writes UR at -O0 too
            # (``REDUX.SUM UR62, R13``, cuda/reduce.G.sm90.ptx line 1704)
            reduced = [
                d.var
                for ins in sc.insts
                if ins.ast.opcode == "redux"
                for d in ins.defs
                if _reduced_in_ur(webs[d.var])
            ]
    elif has_uniform_file(sm):
        ctx.folded = _folded_multiplies(uniform, ctx)
        ctx.nots = _per_thread_nots(uniform, ctx)
        for w in uniform:
            r = _eligible(w, ctx)
            if r:
                why[w.name] = r
            else:
                ur.add(w.name)
    else:
        default_why = f"sm_{sm} has no uniform register file"
    first = ctx.first = {w.name: _first_point(w) for w in uniform if w.name in ur}
    cost: dict[str, int] = {}
    spans = {w.name: _interval(w) for w in uniform if w.name in ur and w.name not in consts}
    costs = _Costs(webs, ur, ctx)
    # the candidates by their first write's point, ties by name (not set order); ur
    # only shrinks, so each attempt takes its order from this one
    ranked = sorted(sorted(ur), key=first.__getitem__)
    attempt = 0
    while attempt < max_attempts and ur:
        attempt += 1
        # the owner of each reader's one UR/constant slot, by program point
        claims: list[str | None] = [None] * len(sc.insts)
        order = [k for k in ranked if k in ur]
        for k in order:
            c = cost[k] = costs.cost(k, claims)
            if c != 1:
                # demoted at once: the webs costed after it in this attempt see it in R
                ur.discard(k)
                costs.changed.add(k)
                plan.needs[k] = costs.last  # (computed now: a kept cost is 1)
        demote = {k for k in order if cost[k] != 1}
        # min-cost greedy extraction against the UR / UP budgets, once the costs have
        # settled (an attempt that demotes nothing by cost) or at the last attempt.
        # Checked at every attempt, the first attempt's candidates -- every eligible
        # web, most of which the cost demotes in the next attempts -- fill the 63 URs
        # with live ranges that never materialise: triton/matmul_fp16.sm90a.ptx at
        # sm_90 then lost 252 webs to the budget in the first attempt, the wgmma
        # descriptors ptxas computes in UR among them (``ULOP3.LUT UR17, UR5,
        # 0x4000000, URZ, 0xfc, !UPT`` for line 316), and predicted 5 URs against
        # ptxas's 29; checked once settled it evicts none there and predicts 33
        # (docs/uniform-registers.md, fifth round)
        settled = not demote or attempt == max_attempts
        # candidates cheapest first: every one left costs 1 (the others are demoted),
        # so that is the order of their first points
        keep = [k for k in order if k not in demote] if settled else []
        # the pressure only changes at interval ends: one tree leaf per end point
        ends = sorted({p for k in keep if k in spans for p in spans[k]})
        leaf = {p: i for i, p in enumerate(ends)}
        trees = {False: _MaxTree(len(ends)), True: _MaxTree(len(ends))}
        over = 0
        for k in keep:
            w = webs[k]
            if k in ctx.consts:
                continue  # rematerialised by a ULDC/UMOV at each reader: no live range
            lo, hi = spans[k]
            lo, hi = leaf[lo], leaf[hi]
            budget = up_budget if w.is_pred else ur_budget
            t = trees[w.is_pred]
            if t.max(lo, hi) + w.width > budget:
                demote.add(k)
                why[k] = "over the uniform register budget"
                over += 1
                continue
            t.add(lo, hi, w.width)
        plan.budget_demoted += over
        for k in demote:
            if k in ctx.variables:
                why.setdefault(k, "a variable written with different values, read per-thread")
            why.setdefault(k, _NEEDS_BRIDGES)  # (the cost is added when the plan is made)
        if not demote:
            costs.changed = set()
            break
        ur -= demote
        costs.changed = demote
    plan.attempts = attempt
    # final bridges of the committed set
    claims = [None] * len(sc.insts)
    for k in ranked:
        if k not in ur:
            continue
        cost[k] = costs.cost(k, claims)
        plan.bridges.extend(costs.last)
    plan.bridges = _unique_bridges(plan.bridges)
    plan.costs_computed = costs.computed
    # a constant operand only materialises in UR for a uniform reader that is not
    # itself a constant (ULDC / UMOV); per-thread readers take it as a c[bank][offset]
    # or immediate operand.  Identities of constants (cvta.to.global) chain, so settle
    # from the end of each chain backwards.
    for k in addresses:
        ur.discard(k)
        plan.needs.pop(k, None)
        why[k] = "a parameter's address: folded into the ld.param that reads it"
    for _, k in sorted([(-first[k], k) for k in ur if k in ctx.consts]):
        if not any(
            (x := _def_name(u.inst)) is not None and x in ur and x != k and not _reduce_mask(u)
            for u in webs[k].uses
        ):
            ur.discard(k)
            why[k] = "constant operand of per-thread readers"
    # the URs ptxas writes outside phase 74: a debug target's REDUX results (in the
    # files and the count) and the per-warp aggregation of an atomic whose result is
    # unread (in the files, at the atomic's line; its URs are counted as ranges)
    ranges, atomics = _aggregated_atomics(ctx) if has_uniform_file(sm) else ([], [])
    counted = ur | set(reduced) if reduced else ur
    files = counted
    if atomics:
        files = counted | {
            d.var for i in atomics for d in i.defs if d.kind != "special" and webs.ndefs(d.var) == 1
        }
    for k in reduced:
        cost[k] = 1
    plan.webs = WebPlans(webs, cls, files, cost, why, default_why, sc.not_written)
    plan.default_why = default_why
    plan.regs = webs
    plan.uniform = ur
    plan.converted = len(ur)
    ur_ws = [webs[k] for k in counted if not webs[k].is_pred]
    if sm < 90:
        immediate = _shared_addresses(ur_ws, func, module_vars)
        if immediate:
            ur_ws = [w for w in ur_ws if w.name not in immediate]
    up_ws = [webs[k] for k in ur if webs[k].is_pred]
    small = _small_loops(func, _HOIST_LOOP_LIMIT) if sm >= 90 else {}
    points = _constant_points(ur, ctx, claims, _self_loops(func), small)
    points += _window_temporaries(ur, ctx)
    if has_uniform_file(sm):
        desc = _descriptor(ctx, debug)
        points += desc
        points += ranges
        if not debug:  # a debug target moves the descriptor in before each access
            for p, callee in _call_points(ctx).items():
                held = sum(w for lo, hi, w in desc if lo < p < hi)
                plan.live_across[callee] = max(plan.live_across.get(callee, 0), held)
    plan.ur_count = _pressure(ur_ws, ctx, points)
    if ur_lines is not None:
        given = [
            w
            for k, w in webs.items()
            if not w.is_pred
            and k not in consts
            and all(cls.at_point(d) != "MMA" for d in w.defs)
            and any(_line(d) in ur_lines for d in w.defs)
        ]
        plan.ur_count_of_lines = _pressure(given, ctx, points)
    plan.up_count = _pressure(up_ws, ctx)
    return plan
