"""Value ranges and known bits of integer SSA values.

Every integer value of a function gets a :class:`Range`: an interval for the
register's bits read as an unsigned number, another for the bits read as a
two's-complement number, and the bits known to be zero or one.  The three views
refine each other (an unsigned interval below the sign bit is also the signed one).

Facts come from:

* special registers: ``%tid`` < ``%ntid`` <= 1024 (64 in z), tightened by the
  function's ``.reqntid`` / ``.maxntid``; ``%ctaid.x`` < 2^31, ``%ctaid.y/z`` <
  65535; ``%laneid`` < 32; ``%warpid``/``%nwarpid`` < 64 ...;
* parameter and memory widths: a ``.u8``/``.u16`` load zero-extends, ``.s8``/``.s16``
  sign-extends;
* instructions: ``cvt`` extensions and truncations, ``add``/``sub``/``mul``/``mad``
  (``.lo`` and ``.wide``), ``shl``/``shr``, ``and``/``or``/``xor``, ``rem``/``div``,
  ``min``/``max``, ``selp``;
* loops: a header phi that steps by a positive (negative) amount and whose loop only
  continues while a compare of the phi or its increment against a bound holds is
  bounded by the initial value and the bound.  The proof is inductive and explicitly
  requires that the increment cannot wrap (see :func:`iv_bounds`), so every fact is
  sound for the modular arithmetic PTX performs.

Arithmetic is computed on mathematical integers and kept only when the result lies
in the register's range; anything that might wrap becomes the full range.  The walk
is one pass over the blocks in reverse post-order; values reached through a back
edge that are not recognised induction variables are unknown (full range).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.graph import Graph
from ptxopt.analysis.loops import LoopForest
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Block, Func, Inst, Phi, Value
from ptxopt.ir.operands import regs_of
from ptxopt.ptx.ast import Imm, Reg, Sym

__all__ = [
    "IVInfo",
    "Range",
    "ValueRanges",
    "find_iv",
    "iv_bounds",
    "sources",
    "type_width",
]


_TYPE_WIDTH_RE = re.compile(r"^\.[busf](8|16|32|64|128)$")
_TYPE_WIDTHS: dict[str, int] = {}  # memo of type_width (a few dozen type names)


def type_width(t: str) -> int:
    """Bit width of a PTX type (``.u64`` -> 64, ``.pred`` -> 1); 0 if not an integer."""
    w = _TYPE_WIDTHS.get(t)
    if w is None:
        m = _TYPE_WIDTH_RE.match(t)
        w = int(m.group(1)) if m else (1 if t == ".pred" else 0)
        _TYPE_WIDTHS[t] = w
    return w


@dataclass(frozen=True, slots=True)
class Range:
    """Facts about a ``width``-bit value: unsigned interval ``[ulo, uhi]``, signed
    interval ``[slo, shi]``, bits known zero (``zeros``) and known one (``ones``)."""

    width: int
    ulo: int
    uhi: int
    slo: int
    shi: int
    zeros: int = 0
    ones: int = 0

    # -- construction --------------------------------------------------------

    @staticmethod
    def full(w: int) -> Range:
        return Range(w, 0, (1 << w) - 1, -(1 << (w - 1)) if w > 1 else 0, (1 << (w - 1)) - 1)

    @staticmethod
    def const(w: int, c: int) -> Range:
        m = (1 << w) - 1
        u = c & m
        s = u - (1 << w) if w > 1 and u >> (w - 1) else u
        return Range(w, u, u, s, s, m & ~u, u)

    @staticmethod
    def unsigned(w: int, lo: int, hi: int) -> Range:
        """Unsigned interval; the full range if it leaves ``[0, 2^w)``."""
        if lo < 0 or hi >= 1 << w or lo > hi:
            return Range.full(w)
        return Range.full(w).refine_u(lo, hi)

    @staticmethod
    def signed(w: int, lo: int, hi: int) -> Range:
        """Signed interval; the full range if it leaves ``[-2^(w-1), 2^(w-1))``."""
        half = 1 << (w - 1)
        if lo < -half or hi >= half or lo > hi:
            return Range.full(w)
        return Range.full(w).refine_s(lo, hi)

    # -- refinement ----------------------------------------------------------

    def refine_u(self, lo: int, hi: int) -> Range:
        lo, hi = max(lo, self.ulo), min(hi, self.uhi)
        if lo > hi:  # contradictory facts: unreachable code, keep the old ones
            return self
        slo, shi = self.slo, self.shi
        half = 1 << (self.width - 1)
        if hi < half:  # below the sign bit: both views agree
            slo, shi = max(slo, lo), min(shi, hi)
        elif lo >= half:
            slo, shi = max(slo, lo - (1 << self.width)), min(shi, hi - (1 << self.width))
        if slo > shi:
            slo, shi = self.slo, self.shi
        zeros = self.zeros | ((1 << self.width) - 1) & ~((1 << hi.bit_length()) - 1)
        return Range(self.width, lo, hi, slo, shi, zeros, self.ones)

    def refine_s(self, lo: int, hi: int) -> Range:
        lo, hi = max(lo, self.slo), min(hi, self.shi)
        if lo > hi:
            return self
        r = Range(self.width, self.ulo, self.uhi, lo, hi, self.zeros, self.ones)
        if lo >= 0:
            return r.refine_u(lo, hi)
        if hi < 0:
            m = 1 << self.width
            return r.refine_u(lo + m, hi + m)
        return r

    def with_bits(self, zeros: int, ones: int) -> Range:
        m = (1 << self.width) - 1
        zeros, ones = (self.zeros | zeros) & m, (self.ones | ones) & m
        if zeros & ones:
            return self
        r = Range(self.width, self.ulo, self.uhi, self.slo, self.shi, zeros, ones)
        return r.refine_u(ones, m & ~zeros)

    def join(self, o: Range) -> Range:
        if o.width != self.width:
            return Range.full(self.width)
        r = Range.full(self.width)
        r = Range(
            self.width,
            min(self.ulo, o.ulo),
            max(self.uhi, o.uhi),
            min(self.slo, o.slo),
            max(self.shi, o.shi),
            self.zeros & o.zeros,
            self.ones & o.ones,
        )
        return r

    # -- queries -------------------------------------------------------------

    @property
    def is_const(self) -> bool:
        return self.ulo == self.uhi

    def fits_u(self, bits: int) -> bool:
        return self.uhi < 1 << bits

    def fits_s(self, bits: int) -> bool:
        return -(1 << (bits - 1)) <= self.slo and self.shi < 1 << (bits - 1)

    def view(self, signed: bool) -> tuple[int, int]:
        return (self.slo, self.shi) if signed else (self.ulo, self.uhi)

    def __str__(self) -> str:
        return f"u[{self.ulo}, {self.uhi}] s[{self.slo}, {self.shi}]"


def sources(inst: Inst) -> list[Value | Imm | None]:
    """The source operands of ``inst`` in AST order: a value for a plain register,
    an immediate, or ``None`` for anything else (addresses, vectors, predicates
    with ``!``)."""
    info = inst.info
    if info is None:
        return []
    out: list[Value | Imm | None] = []
    it = iter(inst.uses)
    ops = inst.ast.operands
    defs = info.defs
    for k in info.uses:
        if k >= len(ops) or k in defs:
            continue
        op = ops[k]
        if isinstance(op, Reg):
            out.append(next(it))
        elif isinstance(op, Imm):
            out.append(op)
        else:
            for _ in regs_of(op):
                next(it)
            out.append(None)
    return out


# ---------------------------------------------------------------------------
# special registers

_SPECIAL_LIMITS = {
    "%tid.x": (0, 1023),
    "%tid.y": (0, 1023),
    "%tid.z": (0, 63),
    "%ntid.x": (1, 1024),
    "%ntid.y": (1, 1024),
    "%ntid.z": (1, 64),
    "%ctaid.x": (0, (1 << 31) - 2),
    "%ctaid.y": (0, 65534),
    "%ctaid.z": (0, 65534),
    "%nctaid.x": (1, (1 << 31) - 1),
    "%nctaid.y": (1, 65535),
    "%nctaid.z": (1, 65535),
    "%laneid": (0, 31),
    "%warpid": (0, 63),
    "%nwarpid": (1, 64),
    "%warpsz": (32, 32),
    "%smid": (0, 1023),
    "%nsmid": (1, 1024),
    "%cluster_ctarank": (0, 15),
    "%cluster_nctarank": (1, 16),
}


def _block_dims(func: Func) -> tuple[int, int, int] | None:
    """The largest block shape ``.reqntid``/``.maxntid`` allow, if declared."""
    for d in func.ast.directives:
        m = re.match(r"\s*\.(reqntid|maxntid)\s+(.*)", d)
        if m:
            nums = [int(x, 0) for x in re.findall(r"0x[0-9a-fA-F]+|\d+", m.group(2))]
            while len(nums) < 3:
                nums.append(1)
            total = nums[0] * nums[1] * nums[2]
            # with maxntid a dimension may take the whole product
            if m.group(1) == "maxntid":
                return (min(total, 1024), min(total, 1024), min(total, 64))
            return (nums[0], nums[1], nums[2])
    return None


def special_range(func: Func, name: str, w: int) -> Range:
    lim = _SPECIAL_LIMITS.get(name)
    if lim is None:
        return Range.full(w)
    lo, hi = lim
    dims = _block_dims(func)
    if dims is not None and name[:4] in ("%tid", "%nti"):
        k = "xyz".index(name[-1])
        if name.startswith("%tid"):
            hi = min(hi, dims[k] - 1)
        else:
            hi = min(hi, dims[k])
    return Range.unsigned(w, lo, hi)


# ---------------------------------------------------------------------------
# induction variables


@dataclass(slots=True)
class IVInfo:
    """A header phi ``phi = [init, next]`` with ``next = phi + step`` (or ``- step``),
    and the compare that decides whether the loop goes on.

    ``compare`` is the ``setp`` instruction; ``cmp_on_next`` says whether it tests
    ``next`` (bottom-tested loop) or ``phi`` (top-tested); ``bound`` is the other
    operand; ``cond`` is the condition (``lt``/``le``/``gt``/``ge``) under which the loop
    continues, written with the IV on the left; ``signed`` is the compare's signedness."""

    phi: Phi
    init: Value | Imm
    next: Value
    inc: Inst
    step: Value | Imm
    down: bool
    compare: Inst | None = None
    cmp_on_next: bool = True
    bound: Value | Imm | None = None
    cond: str = ""
    signed: bool = False
    latch: Block | None = None
    exit_branch: Inst | None = None


_SWAP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_NEG = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}
_UNSIGNED_CMP = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}


def setp_condition(inst: Inst) -> tuple[str, bool] | None:
    """``(cond, signed)`` of an integer ``setp`` without a combining predicate."""
    if inst.info is None or inst.info.name != "setp" or len(inst.defs) != 1:
        return None
    if len(sources(inst)) != 2:
        return None
    mods = inst.ast.mods
    t = mods[-1] if mods else ""
    if type_width(t) == 0 or t.startswith(".f"):
        return None
    cond = None
    for m in mods:
        c = m[1:]
        if c in _SWAP:
            cond = c
        elif c in _UNSIGNED_CMP:
            cond = _UNSIGNED_CMP[c]
    if cond is None:
        return None
    return cond, t.startswith(".s")


def find_iv(func: Func, forest: LoopForest, loop: int, phi: Phi) -> IVInfo | None:
    """Recognise ``phi`` (in the header of ``loop``) as a linear induction variable."""
    lp = forest.loops[loop]
    hdr = func.blocks[lp.header]
    if phi.block is not hdr or len(lp.latches) != 1:
        return None
    latch = func.blocks[lp.latches[0]]
    inside = [forest.contains(loop, p.index) for p in hdr.preds]
    if inside.count(True) != 1 or len(inside) != 2:
        return None
    init = phi.incoming[inside.index(False)]
    nxt = phi.incoming[inside.index(True)]
    if nxt.kind != "inst" or not isinstance(nxt.inst, Inst):
        return None
    inc = nxt.inst
    if inc.info is None or inc.pred is not None or inc.carry_out is not None:
        return None
    srcs = sources(inc)
    if inc.info.name not in ("add", "sub") or len(srcs) != 2 or None in srcs:
        return None
    if any(m in (".cc", ".sat") for m in inc.ast.mods):
        return None
    a, b = srcs
    step: Value | Imm | None
    if a is phi.result:
        step = b
    elif b is phi.result and inc.info.name == "add":
        step = a
    else:
        return None
    if step is None:
        return None
    down = inc.info.name == "sub"
    w = type_width(phi.result.type)
    if isinstance(step, Imm):
        if not isinstance(step.value, int):
            return None
        sv = step.value & ((1 << w) - 1)
        if sv >> (w - 1):  # a negative constant: count the other way
            down = not down
            step = Imm((1 << w) - sv, str((1 << w) - sv))
    elif isinstance(step, Value):
        if step.block is not None and forest.contains(loop, step.block.index):
            return None  # not loop invariant
    iv = IVInfo(phi, init, nxt, inc, step, down, latch=latch)
    _find_exit_test(func, forest, loop, iv)
    return iv


def _find_exit_test(func: Func, forest: LoopForest, loop: int, iv: IVInfo) -> None:
    """The compare whose outcome keeps the loop running, if the loop has one exit
    test of the IV: a bottom test in the latch or a top test in the header."""
    lp = forest.loops[loop]
    if len(lp.exiting) != 1:
        return
    blk = func.blocks[lp.exiting[0]]
    term = blk.terminator
    if term is None or term.opcode != "bra" or term.pred is None:
        return
    p = term.pred
    if p.kind != "inst" or not isinstance(p.inst, Inst):
        return
    cmp = p.inst
    sc = setp_condition(cmp)
    if sc is None or cmp.pred is not None:
        return
    cond, signed = sc
    a, b = sources(cmp)
    phi_v = iv.phi.result
    if a is iv.next or b is iv.next:
        on_next = True
        me = iv.next
    elif a is phi_v or b is phi_v:
        on_next = False
        me = phi_v
    else:
        return
    if on_next and blk is not iv.latch:
        return
    if not on_next and blk.index != lp.header:
        return
    if a is me:
        bound = b
    else:
        bound = a
        cond = _SWAP[cond]
    if bound is me or bound is None:
        return
    if (
        isinstance(bound, Value)
        and bound.block is not None
        and forest.contains(loop, bound.block.index)
    ):
        return
    # the branch target: taken when the guard (possibly negated) holds
    tgt = term.ast.operands[-1]
    if not isinstance(tgt, Sym):
        return
    taken_inside = any(tgt.name in s.labels and forest.contains(loop, s.index) for s in blk.succs)
    holds_continue = taken_inside != term.pred_neg
    iv.cond = cond if holds_continue else _NEG[cond]
    iv.compare = cmp
    iv.cmp_on_next = on_next
    iv.bound = bound
    iv.signed = signed
    iv.exit_branch = term


def iv_bounds(iv: IVInfo, rng: ValueRanges) -> tuple[int, int, int, int] | None:
    """Bounds ``(lo, hi)`` of every value the header phi takes and ``(nlo, nhi)`` of
    every value ``next`` takes (the exiting iteration included), in the compare's
    signedness; ``None`` when nothing is proven.

    Induction for an increasing IV continuing while ``x < n`` (``x`` the tested value):
    claim ``phi in [L, U]`` with ``L = init.lo`` and ``U = max(init.hi, n.hi - 1)``
    (``n.hi`` for ``<=``; for a top test ``U`` adds the step).  If ``U + step.hi``
    cannot wrap, ``next = phi + step`` is in ``[L + step.lo, U + step.hi]``, and a
    ``next`` that reaches the header passed the test, so it is in ``[L, U]`` again."""
    if iv.compare is None or iv.bound is None:
        return None
    signed = iv.signed
    w = type_width(iv.phi.result.type)
    if w == 0:
        return None
    lo_lim, hi_lim = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    ilo, ihi = rng.of(iv.init, w).view(signed)
    blo, bhi = rng.of(iv.bound, w).view(signed)
    st = rng.of(iv.step, w)
    slo, shi = st.ulo, st.uhi
    if shi > hi_lim:
        return None  # the step may be negative in this view
    cond = iv.cond
    if not iv.down:
        if cond == "lt":
            top = bhi - 1
        elif cond == "le":
            top = bhi
        else:
            return None
        if iv.cmp_on_next:
            U = max(ihi, top)
        else:
            U = max(ihi, top + shi)
            # the phi at the header may exceed the bound once (the exiting value)
        L = ilo
        if U + shi > hi_lim:
            return None
        if iv.cmp_on_next:
            return L, U, L + slo, U + shi
        return L, U, L + slo, U + shi
    if cond == "gt":
        bot = blo + 1
    elif cond == "ge":
        bot = blo
    else:
        return None
    L = min(ilo, bot) if iv.cmp_on_next else min(ilo, bot - shi)
    U = ihi
    if L - shi < lo_lim:
        return None
    return L, U, L - shi, U - slo


# ---------------------------------------------------------------------------
# the analysis


def _is_int_type(t: str) -> bool:
    return type_width(t) > 1 and not t.startswith(".f")


class ValueRanges:
    """Ranges of the integer values of one function (``am.get(ValueRanges, func)``)."""

    def __init__(self, func: Func) -> None:
        self.func = func
        self.ranges: dict[int, Range] = {}
        self.ivs: dict[int, IVInfo] = {}  # phi result id -> recognised IV

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> ValueRanges:
        assert isinstance(fn, Func)
        self = cls(fn)
        forest = am.get(LoopForest, fn)
        dt = am.get(DomTree, fn)
        am.get(Graph, fn)
        self._run(forest, dt)
        return self

    def assuming(self, facts: dict[int, Range]) -> ValueRanges:
        """A copy that also believes ``facts`` (value id -> range): for code that a
        runtime test guards, e.g. a versioned loop."""
        other = ValueRanges(self.func)
        other.ranges = {**self.ranges, **facts}
        other.ivs = self.ivs
        return other

    def of(self, v: Value | Imm | None, w: int) -> Range:
        """The range of ``v`` seen as ``w`` bits (an immediate is a constant)."""
        if isinstance(v, Imm):
            if isinstance(v.value, int):
                return Range.const(w, v.value)
            return Range.full(w)
        if v is None:
            return Range.full(w)
        r = self.ranges.get(v.id)
        if r is None:
            if v.kind == "special":
                return special_range(self.func, v.var, w)
            return Range.full(w)
        if r.width == w:
            return r
        if r.width < w:  # the register is narrower: the upper bits are unknown
            return Range.full(w)
        return Range.full(w) if not r.fits_u(w) else Range.unsigned(w, r.ulo, r.uhi)

    def _run(self, forest: LoopForest, dt: DomTree) -> None:
        func = self.func
        for bi in dt.rpo:
            b = func.blocks[bi]
            lp = forest.loop_of[bi]
            is_header = lp >= 0 and forest.loops[lp].header == bi
            for phi in b.phis:
                w = type_width(phi.result.type)
                if not _is_int_type(phi.result.type):
                    continue
                r: Range | None = None
                if is_header:
                    iv = find_iv(func, forest, lp, phi)
                    if iv is not None:
                        self.ivs[phi.result.id] = iv
                        bounds = iv_bounds(iv, self)
                        if bounds is not None:
                            lo, hi, _nlo, _nhi = bounds
                            r = Range.signed(w, lo, hi) if iv.signed else Range.unsigned(w, lo, hi)
                    if r is None:
                        r = Range.full(w)
                else:
                    for v in phi.incoming:
                        x = self.ranges.get(v.id) if v.kind != "special" else self.of(v, w)
                        if x is None or x.width != w:
                            r = Range.full(w)
                            break
                        r = x if r is None else r.join(x)
                self.ranges[phi.result.id] = r or Range.full(w)
            for ins in b.insts:
                if ins.info is None or len(ins.defs) != 1:
                    continue
                d = ins.defs[0]
                if not _is_int_type(d.type):
                    continue
                w = type_width(d.type)
                r = _transfer(self, ins, w)
                if ins.pred is not None and ins.olds and ins.olds[0] is not None:
                    r = r.join(self.of(ins.olds[0], w))
                self.ranges[d.id] = r
        # after the walk: next values of IVs get their (exiting-iteration) bounds
        for iv in self.ivs.values():
            bounds = iv_bounds(iv, self)
            if bounds is None:
                continue
            w = type_width(iv.next.type)
            _lo, _hi, nlo, nhi = bounds
            r = Range.signed(w, nlo, nhi) if iv.signed else Range.unsigned(w, nlo, nhi)
            old = self.ranges.get(iv.next.id)
            if old is not None:
                r = old.refine_u(r.ulo, r.uhi).refine_s(r.slo, r.shi)
            self.ranges[iv.next.id] = r


def _mod_type(ins: Inst) -> str:
    mods = ins.ast.mods
    for m in reversed(mods):
        if type_width(m) > 1:
            return m
    return ""


def _transfer(vr: ValueRanges, ins: Inst, w: int) -> Range:  # noqa: C901 - one table
    info = ins.info
    assert info is not None
    op = info.name
    mods = ins.ast.mods
    t = _mod_type(ins)
    signed = t.startswith(".s")
    uses = sources(ins)
    full = Range.full(w)
    if ins.carry_in is not None or ins.carry_out is not None or ".sat" in mods:
        return full

    def arg(k: int, width: int | None = None) -> Range:
        return _narrow(vr, uses[k], width or w) if k < len(uses) else Range.full(width or w)

    # slot layout: uses hold register values only; immediates fold in as Imm too
    if op == "mov" and len(uses) == 1:
        return arg(0)
    if op == "ld":
        tw = type_width(t)
        if 0 < tw < w and not ins.ast.operands[0].__class__.__name__ == "Vec":
            if signed:
                return Range.signed(w, -(1 << (tw - 1)), (1 << (tw - 1)) - 1)
            return Range.unsigned(w, 0, (1 << tw) - 1)
        return full
    if op == "cvt" and len(uses) == 1 and len(info.types) >= 2:
        dt, st = info.types[0], info.types[-1]
        if st.startswith(".f") or dt.startswith(".f"):
            return full
        sw = type_width(st)
        src = arg(0, sw)
        if sw >= w:  # truncation (or same width)
            if st.startswith(".s") and src.fits_s(w) and dt.startswith(".s"):
                return Range.signed(w, src.slo, src.shi)
            return (
                Range.unsigned(w, src.ulo, src.uhi)
                if src.fits_u(w)
                else (Range.signed(w, src.slo, src.shi) if src.fits_s(w) else full)
            )
        if st.startswith(".s"):
            return Range.signed(w, src.slo, src.shi)
        return Range.unsigned(w, src.ulo, src.uhi)
    if len(uses) < 2 and op not in ("not", "neg", "abs", "popc", "clz", "brev"):
        return full
    if op in ("popc", "clz"):
        return Range.unsigned(w, 0, type_width(t) or w)
    if op in ("add", "sub"):
        a, b = arg(0), arg(1)
        sign = 1 if op == "add" else -1
        r = Range.unsigned(w, *_addsub(a.ulo, a.uhi, b.ulo, b.uhi, sign))
        s = Range.signed(w, *_addsub(a.slo, a.shi, b.slo, b.shi, sign))
        return r.refine_s(s.slo, s.shi)
    if op in ("mul", "mad"):
        wide = ".wide" in mods
        if ".hi" in mods:
            return full
        sw = w // 2 if wide else w
        a, b = arg(0, sw), arg(1, sw)
        if signed:
            lo, hi = _mul(a.slo, a.shi, b.slo, b.shi)
        else:
            lo, hi = _mul(a.ulo, a.uhi, b.ulo, b.uhi)
        if op == "mad":
            c = arg(2)
            cl, ch = c.view(signed)
            lo, hi = lo + cl, hi + ch
        return Range.signed(w, lo, hi) if signed else Range.unsigned(w, lo, hi)
    if op == "shl":
        a, b = arg(0), arg(1, 32)
        if b.is_const and b.ulo < w:
            k = b.ulo
            r = Range.unsigned(w, a.ulo << k, a.uhi << k)
            return r.with_bits((1 << k) - 1, 0)
        return full
    if op == "shr":
        a, b = arg(0), arg(1, 32)
        if signed:
            klo, khi = min(b.ulo, w - 1), min(b.uhi, w - 1)
            return Range.signed(w, min(a.slo >> klo, a.slo >> khi), max(a.shi >> klo, a.shi >> khi))
        if b.uhi >= w:
            return Range.unsigned(w, 0, a.uhi >> min(b.ulo, w))
        return Range.unsigned(w, a.ulo >> b.uhi, a.uhi >> b.ulo)
    if op == "and":
        a, b = arg(0), arg(1)
        hi = min(a.uhi, b.uhi)
        r = Range.unsigned(w, 0, hi).with_bits(a.zeros | b.zeros, a.ones & b.ones)
        if a.slo >= 0 or b.slo >= 0:
            r = r.refine_s(0, r.uhi)
        return r
    if op in ("or", "xor"):
        a, b = arg(0), arg(1)
        top = (1 << max(a.uhi.bit_length(), b.uhi.bit_length())) - 1
        lo = max(a.ulo, b.ulo) if op == "or" else 0
        r = Range.unsigned(w, lo, top)
        if op == "or":
            r = r.with_bits(a.zeros & b.zeros, a.ones | b.ones)
        return r
    if op == "rem":
        a, b = arg(0), arg(1)
        if signed:
            m = max(abs(b.slo), abs(b.shi)) - 1
            if m < 0:
                return full
            lo = 0 if a.slo >= 0 else max(-m, a.slo)
            hi = 0 if a.shi < 0 else min(m, a.shi)
            return Range.signed(w, lo, hi)
        if b.ulo == 0:
            return Range.unsigned(w, 0, a.uhi)  # x % 0 is x's bits or less on GPUs? unknown
        return Range.unsigned(w, 0, min(a.uhi, b.uhi - 1))
    if op == "div":
        a, b = arg(0), arg(1)
        if signed or b.ulo == 0:
            return full
        return Range.unsigned(w, a.ulo // b.uhi, a.uhi // b.ulo)
    if op in ("min", "max"):
        a, b = arg(0), arg(1)
        f = min if op == "min" else max
        if signed:
            return Range.signed(w, f(a.slo, b.slo), f(a.shi, b.shi))
        return Range.unsigned(w, f(a.ulo, b.ulo), f(a.uhi, b.uhi))
    if op == "selp" and len(uses) >= 2:
        return arg(0).join(arg(1))
    return full


def _narrow(vr: ValueRanges, v: Value | Imm | None, w: int) -> Range:
    """The range of the low ``w`` bits of ``v`` (an operand read at width ``w``)."""
    if isinstance(v, Value):
        r = vr.ranges.get(v.id)
        if r is not None and r.width > w:
            return (
                Range.unsigned(w, r.ulo, r.uhi)
                if r.fits_u(w)
                else (Range.signed(w, r.slo, r.shi) if r.fits_s(w) else Range.full(w))
            )
    return vr.of(v, w)


def _addsub(alo: int, ahi: int, blo: int, bhi: int, sign: int) -> tuple[int, int]:
    if sign > 0:
        return alo + blo, ahi + bhi
    return alo - bhi, ahi - blo


def _mul(alo: int, ahi: int, blo: int, bhi: int) -> tuple[int, int]:
    c = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
    return min(c), max(c)
