"""iv-demotion: run 64-bit loop counters in 32 bits where that is proven exact.

The narrowing sub-pass of cicc's rematerialisation (spec 04).  For each loop,
innermost first, each 64-bit header phi that steps by a loop-invariant amount is a
candidate.  It is demoted when :mod:`ptxopt.analysis.value_ranges` proves that the
initial value, every value the phi takes, the increment on the exiting iteration
and the bound of the exit test all lie in the 32-bit window (levels 1-4 keep a bit
of headroom: the signed 32-bit window, so zero- and sign-extension agree; level 5
allows the whole unsigned window).  Two additions go beyond the original:

* *exit-test rewriting* (knob ``remat-iv-exit-rewrite``): a bottom-tested
  ``i + s < n`` with 32-bit ``n`` and ``s`` and ``i < n`` on entry is tested as
  ``n - i > s``, which never overflows, so grid-stride loops demote without a
  bound on ``i + s``;
* *loop versioning* (level 5 or ``remat-iv-version``, :mod:`.versioning`): a
  uniform runtime test that the bounds fit selects a demoted copy of the loop,
  the original is the fallback.

The rewrite creates, in the spec's names: ``newInit`` (the truncated initial
value), ``newBaseIV`` (the 32-bit phi), ``newInc`` (its increment), ``argBaseIV``
(truncated loop invariants: the step and the bound), ``newICmp`` (the 32-bit exit
compare), ``substIV`` (a 64-bit use rebuilt from the narrow value, ``mul.wide`` /
``mad.wide``), ``iv_base_clone_`` (an extension back to 64 bits placed right
before a use that needs the wide value: escapes and other arithmetic).  The wide
phi and its increment are deleted once nothing reads them.

Which uses a level accepts (a use outside the accepted set keeps the IV wide):

======================  =======
use                     level
======================  =======
same-block arithmetic   1
loop exit compare       2
other blocks, escapes   3
other phis, pointer     4
recurrences (GEP-like)
no range headroom       5
======================  =======

``dump-remat-iv`` (1) prints each loop's decision and reason to stderr; (2) adds
the rewritten loop's IR.  A profitability model (:func:`profitable`, measured in
``bench/iv_demotion.py``) can refuse a legal demotion.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.graph import Graph
from ptxopt.analysis.loops import LoopForest
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.analysis.value_ranges import (
    IVInfo,
    Range,
    ValueRanges,
    iv_bounds,
    setp_condition,
    sources,
    type_width,
)
from ptxopt.ir.core import Block, Func, Inst, Phi, Value
from ptxopt.ir.dump import dump_function
from ptxopt.ir.edit import fresh_var, insert_at_end, insert_before, make_inst, remove
from ptxopt.knobs import Knob
from ptxopt.ptx.ast import Imm
from ptxopt.transforms.base import FunctionPass, register

__all__ = ["IVDemotion", "LoopDecision", "demote_function"]

# use categories and the lowest level that accepts each
LEVEL_OF = {
    "same-block": 1,
    "exit-compare": 2,
    "cross-block": 3,
    "escape": 3,
    "phi": 4,
    "pointer": 4,
}


@dataclass
class LoopDecision:
    """What happened to one candidate IV (one line of ``dump-remat-iv``)."""

    func: str
    loop_header: str
    iv: str
    demoted: bool
    reason: str
    mode: str = ""  # "range" / "exit-rewrite"
    versioned: bool = False
    pointers: int = 0  # pointer recurrences rebuilt from the narrow IV
    clones: int = 0  # iv_base_clone_ extensions

    def what(self) -> str:
        """The decision without the function's name (a line of ``--explain``)."""
        what = "demoted" if self.demoted else "kept"
        extra = f" [{self.mode}]" if self.mode else ""
        if self.versioned:
            extra += " [versioned]"
        return f"loop {self.loop_header} phiNode {self.iv}: {what}{extra}: {self.reason}"

    def line(self) -> str:
        return f"remat-iv: {self.func} {self.what()}"


@dataclass
class _Ctx:
    func: Func
    level: int
    exit_rewrite: bool
    max_clones: int
    users: dict[int, list[Inst | Phi]] = field(default_factory=dict)
    consumed: set[int] = field(default_factory=set)
    dt: DomTree | None = None
    max_pointer_uses: int = 8
    narrowed: dict[tuple[int, int], Value] = field(default_factory=dict)


def _users(func: Func) -> dict[int, list[Inst | Phi]]:
    out: dict[int, list[Inst | Phi]] = {}
    for b in func.blocks:
        for phi in b.phis:
            for v in phi.incoming:
                lst = out.setdefault(v.id, [])
                if not lst or lst[-1] is not phi:
                    lst.append(phi)
        for ins in b.insts:
            for v in ins.operand_values():
                lst = out.setdefault(v.id, [])
                if not lst or lst[-1] is not ins:
                    lst.append(ins)
    return out


def _window(level: int, signed: bool) -> tuple[int, int]:
    """The values a demoted IV may take, in the compare's signedness."""
    if signed:
        return -(1 << 31), (1 << 31) - 1
    return 0, ((1 << 32) - 1 if level >= 5 else (1 << 31) - 1)


def _fits(lo: int, hi: int, win: tuple[int, int]) -> bool:
    return win[0] <= lo and hi <= win[1]


def _reads_only_as_operand(user: Inst, v: Value) -> bool:
    if user.pred is v or user.carry_in is v:
        return False
    return not (user.olds and any(o is v for o in user.olds))


def _classify(
    ctx: _Ctx, forest: LoopForest, loop: int, iv: IVInfo
) -> tuple[list[tuple[Value, Inst | Phi, str]], str]:
    """Every use of the IV's two values outside its own cycle, with its category;
    or a reason why a use cannot be rewritten at all."""
    out: list[tuple[Value, Inst | Phi, str]] = []
    phi_v, nxt = iv.phi.result, iv.next
    for v, home in ((phi_v, iv.phi.block), (nxt, iv.inc.block)):
        for u in ctx.users.get(v.id, []):
            if u is iv.phi or u is iv.inc:
                if isinstance(u, Inst) and u is iv.inc and v is nxt:
                    return [], "the increment reads its own result"
                continue
            if u is iv.compare:
                out.append((v, u, "exit-compare"))
                continue
            if isinstance(u, Phi):
                ub = u.block
                # a phi outside the loop is an LCSSA-style escape
                cat = "phi" if forest.contains(loop, ub.index) else "escape"
                out.append((v, u, cat))
                continue
            if not _reads_only_as_operand(u, v):
                return [], f"{v} is read as a guard, tied value or carry"
            if any(s is None for s in sources(u)) and v in u.uses and not _addr_ok(u, v):
                return [], f"{v} is read inside an address or vector operand"
            ub2 = u.block
            assert ub2 is not None
            if not forest.contains(loop, ub2.index):
                cat = "escape"
            elif ub2 is home:
                cat = "same-block"
            else:
                cat = "cross-block"
            out.append((v, u, cat))
    return out, ""


def _addr_ok(u: Inst, v: Value) -> bool:
    """A value read inside an address can take an extension in its place."""
    return True


@dataclass
class _Plan:
    iv: IVInfo
    mode: str
    signed_cmp: bool  # 32-bit compare signedness
    sext: bool  # extension back to 64 bits
    uses: list[tuple[Value, Inst | Phi, str]]
    pointers: list[tuple[IVInfo, Value | Imm | None, int]]  # (recurrence, base, scale)
    init_fits: bool = False  # the initial value is the extension of its truncation


def _guard_implies_lt(
    func: Func, dt: DomTree, hdr: Block, pre: Block, init: Value | Imm, bound: Value | Imm
) -> bool:
    """Some dominating branch proves ``init < bound`` (unsigned) on the way to ``hdr``."""
    b = hdr.index
    steps = 0
    while steps < 64:
        steps += 1
        d = dt.idom[b] if b != dt.entry else -1
        if d is None or d < 0 or d == b:
            return False
        db = func.blocks[d]
        term = db.terminator
        if (
            term is not None
            and term.opcode == "bra"
            and term.pred is not None
            and len(db.succs) == 2
        ):
            # the successor on the way to hdr
            on_way = [s for s in db.succs if dt.dominates(s.index, hdr.index)]
            if len(on_way) == 1 and (len(on_way[0].preds) == 1 or (on_way[0] is hdr and db is pre)):
                s = on_way[0]
                tgt = term.ast.operands[-1]
                taken = getattr(tgt, "name", None) in s.labels and s is not db.fallthrough
                p = term.pred
                if p.kind == "inst" and isinstance(p.inst, Inst):
                    sc = setp_condition(p.inst)
                    if sc is not None:
                        cond, _signed = sc
                        a, c = sources(p.inst)
                        holds = taken != term.pred_neg
                        if not holds:
                            cond = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}.get(cond, "")
                        if a is init and c is bound and cond == "lt" and not _signed:
                            return True
                        if a is bound and c is init and cond == "gt" and not _signed:
                            return True
        b = d
    return False


def _pointer_recurrences(
    func: Func, vr: ValueRanges, forest: LoopForest, loop: int, iv: IVInfo, ctx: _Ctx
) -> list[tuple[IVInfo, Value | Imm | None, int]]:
    """Other 64-bit IVs of the loop that are ``base + c * iv`` by construction:
    ``init = base + c * iv.init`` and ``step = c * iv.step`` (both mod 2^64)."""
    out: list[tuple[IVInfo, Value | Imm | None, int]] = []
    for other in vr.ivs.values():
        if other is iv or other.phi.block is not iv.phi.block or other.down != iv.down:
            continue
        if other.phi not in other.phi.block.phis or id(other.phi) in ctx.consumed:
            continue
        if type_width(other.phi.result.type) != 64:
            continue
        nusers = ctx.users.get(other.next.id, [])
        if any(u is not other.phi for u in nusers):
            continue
        c = _scale_of(other.step, iv.step)
        if c is None:
            continue
        base = _base_of(other.init, iv.init, c)
        if base is False:
            continue
        out.append((other, base, c))  # type: ignore[arg-type]
    return out


def _def(v: Value | Imm | None) -> Inst | None:
    if isinstance(v, Value) and v.kind == "inst" and isinstance(v.inst, Inst):
        return v.inst
    return None


def _scaled(v: Value | Imm | None, x: Value | Imm) -> int | None:
    """``c`` if ``v`` is computed as ``x * c`` / ``x << k`` (64-bit), else None."""
    if isinstance(v, Imm) and isinstance(x, Imm):
        xv, vv = int(x.value), int(v.value)
        if xv and vv % xv == 0:
            return vv // xv
        return None
    if v is x:
        return 1
    d = _def(v)
    if d is None or d.info is None or d.pred is not None:
        return None
    s = sources(d)
    if len(s) != 2 or s[0] is not x or not isinstance(s[1], Imm):
        return None
    k = s[1].value
    if not isinstance(k, int):
        return None
    if d.info.name == "shl" and 0 <= k < 31:
        return 1 << k
    if d.info.name == "mul" and ".lo" in d.ast.mods and 0 < k < 1 << 31:
        return k
    return None


def _scale_of(step: Value | Imm, base_step: Value | Imm) -> int | None:
    c = _scaled(step, base_step)
    return c if c is not None and 0 < c < 1 << 31 else None


def _base_of(init: Value | Imm, base_init: Value | Imm, c: int) -> Value | Imm | None | bool:
    """``None`` when ``init = c * base_init``; the base when ``init = base + c *
    base_init``; ``False`` otherwise."""
    if _scaled(init, base_init) == c:
        return None
    d = _def(init)
    if d is None or d.info is None or d.info.name != "add" or d.pred is not None:
        return False
    if any(m in (".cc", ".sat") for m in d.ast.mods) or d.carry_in is not None:
        return False
    s = sources(d)
    if len(s) != 2 or None in s:
        return False
    for k in (0, 1):
        if _scaled(s[k], base_init) == c:
            return s[1 - k]
    return False


def profitable(plan: _Plan, ctx: _Ctx) -> tuple[bool, str]:
    """The model measured with ptxas 13.0.88 (bench/iv_demotion.py, docs/iv-demotion.md).

    A legal demotion was never worse on sm_75/80/90: the 32-bit counter removes the
    carry pair of every 64-bit add/compare, and an extension back to 64 bits for a
    wide use is free (the high half is ``RZ``), so even eleven ``iv_base_clone_``
    extensions in one loop shortened it (39 -> 31 SASS).  Two knobs keep the limits:
    ``remat-iv-max-clones`` (in-loop extensions, default 32) and
    ``remat-iv-pointer-uses`` (uses of a rebuilt pointer recurrence, default 8:
    ptxas commons the per-use ``IMAD.WIDE``; rebuilding a 4-use pointer still
    shortened the loop 20 -> 14..16 and lowered registers 20 -> 12..14)."""
    in_loop = sum(
        1
        for _v, u, cat in plan.uses
        if cat in ("same-block", "cross-block") and not _has_wide_form(u)
    )
    if in_loop > ctx.max_clones:
        return False, f"{in_loop} in-loop uses need a 64-bit extension (> {ctx.max_clones})"
    return True, ""


def _has_wide_form(u: Inst | Phi) -> bool:
    """A 64-bit use that becomes one ``mul.wide`` / a plain truncation."""
    if isinstance(u, Phi) or u.info is None:
        return False
    return _wide_form(u) is not None


def _wide_form(u: Inst) -> tuple[str, int] | None:
    """``("mul", c)`` for ``shl.b64 d, x, k`` / ``mul.lo.*64 d, x, c``; ``("trunc", 0)``
    for ``cvt.u32.u64 d, x``."""
    info = u.info
    if info is None or u.pred is not None or len(u.defs) != 1:
        return None
    s = sources(u)
    if info.name == "cvt" and len(s) == 1 and len(info.types) == 2:
        dt, st = info.types
        if type_width(dt) == 32 and type_width(st) == 64 and not dt.startswith(".f"):
            if not any(m.startswith(".r") or m == ".sat" for m in u.ast.mods):
                return ("trunc", 0)
        return None
    if len(s) != 2 or not isinstance(s[1], Imm) or not isinstance(s[1].value, int):
        return None
    k = s[1].value
    if info.name == "shl" and type_width(u.defs[0].type) == 64 and 0 <= k <= 30:
        return ("mul", 1 << k)
    if info.name == "mul" and ".lo" in u.ast.mods and type_width(u.defs[0].type) == 64:
        if 0 <= k < 1 << 31:
            return ("mul", k)
    return None


def _plan(
    ctx: _Ctx,
    vr: ValueRanges,
    forest: LoopForest,
    dt: DomTree,
    loop: int,
    iv: IVInfo,
    pre: Block,
) -> tuple[_Plan | None, str]:
    func = ctx.func
    if iv.compare is None or iv.bound is None:
        return None, "no exit test of the IV (unknown trip count)"
    uses, why = _classify(ctx, forest, loop, iv)
    if why:
        return None, why
    for _v, _u, cat in uses:
        if LEVEL_OF[cat] > ctx.level:
            return None, f"a {cat} use needs remat-iv >= {LEVEL_OF[cat]}"
    signed = iv.signed
    bounds = iv_bounds(iv, vr)
    brange = vr.of(iv.bound, 64)
    blo, bhi = brange.view(signed)
    win = _window(ctx.level, signed)
    mode = ""
    reason = ""
    if bounds is None:
        reason = "no bound on the IV (step or exit test unknown, or it may wrap)"
    else:
        lo, hi, nlo, nhi = bounds
        if not _fits(lo, hi, win):
            reason = f"IV range [{lo}, {hi}] does not fit the 32-bit window"
        elif not _fits(nlo, nhi, win):
            reason = f"i + step on the exiting iteration reaches {nhi}, beyond the 32-bit window"
        elif not _fits(blo, bhi, win):
            reason = f"exit bound range [{blo}, {bhi}] does not fit 32 bits"
        else:
            mode = "range"
    if not mode and ctx.exit_rewrite:
        ok, why2 = _exit_rewrite_ok(ctx, vr, dt, iv, uses, win, pre)
        if ok:
            mode = "exit-rewrite"
        elif why2:
            reason += f"; exit-test rewrite: {why2}"
    if not mode:
        return None, reason
    ir = vr.of(iv.init, 64)
    sext = signed and (ir.slo < 0 or (bounds is not None and min(bounds[0], bounds[2]) < 0))
    pointers = []
    if ctx.level >= LEVEL_OF["pointer"] and not sext:
        pointers = _pointer_recurrences(func, vr, forest, loop, iv, ctx)
        # profitability: a rebuilt pointer costs one IMAD.WIDE per use
        pointers = [
            p
            for p in pointers
            if len(ctx.users.get(p[0].phi.result.id, [])) - 1 <= ctx.max_pointer_uses
        ]
    plan = _Plan(iv, mode, signed, sext, uses, pointers)
    plan.init_fits = ir.fits_s(32) if sext else ir.fits_u(32)
    ok, why3 = profitable(plan, ctx)
    if not ok:
        return None, "not profitable: " + why3
    return plan, "proven" if mode == "range" else "proven with the n - i > s exit test"


def _exit_rewrite_ok(
    ctx: _Ctx,
    vr: ValueRanges,
    dt: DomTree,
    iv: IVInfo,
    uses: list[tuple[Value, Inst | Phi, str]],
    win: tuple[int, int],
    pre: Block,
) -> tuple[bool, str]:
    if iv.down or not iv.cmp_on_next or iv.cond not in ("lt", "le"):
        return False, "needs an increasing, bottom-tested i + s < n loop"
    if ctx.level < LEVEL_OF["exit-compare"]:
        return False, ""
    for v, _u, cat in uses:
        if v is iv.next and cat != "exit-compare":
            return False, "i + s has uses besides the exit test"
    assert iv.bound is not None
    b = vr.of(iv.bound, 64)
    s = vr.of(iv.step, 64)
    ir = vr.of(iv.init, 64)
    # values stay below n: no headroom is needed, the unsigned window is exact
    uwin = (0, (1 << 32) - 1)
    del win
    if not _fits(b.ulo, b.uhi, uwin) or not _fits(s.ulo, s.uhi, uwin):
        return False, "n or the stride is not known to fit 32 bits"
    if iv.signed and (b.slo < 0 or ir.slo < 0 or s.slo < 0):
        return False, "signed compare with possibly negative operands"
    if not (
        ir.uhi < b.ulo or _guard_implies_lt(ctx.func, dt, iv.phi.block, pre, iv.init, iv.bound)
    ):
        return False, "i < n on entry is not proven"
    return True, ""


# ---------------------------------------------------------------------------
# rewriting


def _imm32(value: int, signed: bool) -> Imm:
    v = value & 0xFFFFFFFF
    if signed and v >> 31:
        v -= 1 << 32
    return Imm(v, str(v))


class _Rewriter:
    def __init__(self, ctx: _Ctx, plan: _Plan, pre: Block) -> None:
        self.ctx = ctx
        self.func = ctx.func
        self.plan = plan
        self.pre = pre
        self.clones = 0
        self.dead: list[Inst | Phi] = []

    def new(self, stem: str, vtype: str = ".b32") -> str:
        return fresh_var(self.func, vtype, stem)

    def narrow_invariant(self, v: Value | Imm) -> Value | Imm:
        """A loop-invariant 64-bit operand truncated in the preheader (argBaseIV)."""
        if isinstance(v, Imm):
            return _imm32(int(v.value), self.plan.signed_cmp)
        got = self.ctx.narrowed.get((self.pre.index, v.id))
        if got is not None:
            return got
        ins = make_inst(self.func, "cvt", (".u32", ".u64"), [self.new("%argBaseIV")], [v])
        insert_at_end(self.pre, ins)
        self.ctx.narrowed[(self.pre.index, v.id)] = ins.defs[0]
        return ins.defs[0]

    def extend(self, x32: Value, before: Inst | None, block: Block) -> Value:
        """``iv_base_clone_``: the wide value rebuilt right where it is needed."""
        t = (".s64", ".s32") if self.plan.sext else (".u64", ".u32")
        ins = make_inst(self.func, "cvt", t, [self.new("%iv_base_clone_", ".b64")], [x32])
        if before is None:
            insert_at_end(block, ins)
        else:
            insert_before(block, block.insts.index(before), ins)
        self.clones += 1
        return ins.defs[0]

    def run(self) -> None:
        func, plan = self.func, self.plan
        iv = plan.iv
        hdr = iv.phi.block
        # newInit, newBaseIV and newInc are values of one new register, as the
        # wide cycle's were: out of SSA then needs no copies around the loop
        pvar = self.new("%newBaseIV")
        if isinstance(iv.init, Imm):
            i0 = make_inst(func, "mov", (".b32",), [pvar], [_imm32(int(iv.init.value), False)])
        else:
            i0 = make_inst(func, "cvt", (".u32", ".u64"), [pvar], [iv.init])
        self._after_def(iv.init, i0)
        new_init = i0.defs[0]
        self.new_init = new_init
        # newBaseIV
        phi = func.new_phi(pvar, ".b32", hdr)
        hdr.phis.append(phi)
        # newInc next to the wide increment: the low 32 bits of phi +/- step are
        # the 32-bit sum of the low halves, whatever the ranges
        raw = sources(iv.inc)[1] if sources(iv.inc)[0] is iv.phi.result else sources(iv.inc)[0]
        assert raw is not None
        step32 = self.narrow_invariant(iv.step)
        step_src: Value | Imm = (
            _imm32(int(raw.value), True) if isinstance(raw, Imm) else self.narrow_invariant(raw)
        )
        op = iv.inc.info.name if iv.inc.info is not None else "add"
        inc = make_inst(func, op, (".s32",), [pvar], [phi.result, step_src])
        self.pvar = pvar
        ib = iv.inc.block
        assert ib is not None
        if plan.mode == "exit-rewrite":
            # after the n - i test, so the old and new counter never overlap and
            # out of SSA keeps them in one register (no split back edge)
            insert_at_end(ib, inc)
        else:
            insert_before(ib, ib.insts.index(iv.inc) + 1, inc)
        new_inc = inc.defs[0]
        phi.incoming = [new_init if p is self.pre else new_inc for p in hdr.preds]
        narrow = {iv.phi.result.id: phi.result, iv.next.id: new_inc}
        # the exit compare
        cmp = iv.compare
        assert cmp is not None and iv.bound is not None
        cb = cmp.block
        assert cb is not None
        if plan.mode == "exit-rewrite":
            n32 = self.narrow_invariant(iv.bound)
            s32 = _imm32(int(iv.step.value), False) if isinstance(iv.step, Imm) else step32
            dist = make_inst(func, "sub", (".s32",), [self.new("%newICmp_dist")], [n32, phi.result])
            test = "gt" if iv.cond == "lt" else "ge"
            newc = make_inst(
                func,
                "setp",
                (f".{test}", ".u32"),
                [self.new("%newICmp", ".pred")],
                [dist.defs[0], s32],
            )
            # newc computes the continue condition; the branch reads the old predicate
            cont_is_p = self._branch_continues_on_p()
            at = cb.insts.index(cmp)
            insert_before(cb, at, dist)
            insert_before(cb, at + 1, newc)
            pv = newc.defs[0]
            if not cont_is_p:
                notp = make_inst(func, "not", (".pred",), [self.new("%newICmp", ".pred")], [pv])
                insert_before(cb, at + 2, notp)
                pv = notp.defs[0]
            self._replace(cmp.defs[0], pv)
            self.dead.append(cmp)
        else:
            sc = setp_condition(cmp)
            assert sc is not None
            cond, _ = sc
            srcs = sources(cmp)
            new_srcs: list[Value | Imm] = []
            for s in srcs:
                assert s is not None
                if isinstance(s, Value) and s.id in narrow:
                    new_srcs.append(narrow[s.id])
                else:
                    new_srcs.append(self.narrow_invariant(s))
            t = ".s32" if plan.signed_cmp else ".u32"
            newc = make_inst(
                func, "setp", (f".{cond}", t), [self.new("%newICmp", ".pred")], new_srcs
            )
            insert_before(cb, cb.insts.index(cmp), newc)
            self._replace(cmp.defs[0], newc.defs[0])
            self.dead.append(cmp)
        # the other uses
        self.narrow = narrow
        for v, u, _cat in plan.uses:
            if u is cmp or u in self.dead:
                continue
            x32 = narrow[v.id]
            if isinstance(u, Phi) and self._narrow_exit_phi(u):
                continue
            self._subst(v, u, x32)
        # pointer recurrences: base + c * iv, rebuilt per use
        for rec, base, c in plan.pointers:
            for u in list(self.ctx.users.get(rec.phi.result.id, [])):
                if u is rec.inc:
                    continue
                self._pointer_use(rec.phi.result, u, phi.result, base, c)
            self.dead.extend([rec.phi, rec.inc])
        self.dead.extend([iv.phi, iv.inc])

    def _after_def(self, v: Value | Imm, ins: Inst) -> None:
        """Place ``ins`` (which reads ``v``) right after ``v`` is defined, so it is
        available wherever ``v`` is."""
        if isinstance(v, Value) and v.kind == "inst" and isinstance(v.inst, Inst):
            b = v.inst.block
            if b is not None:
                insert_before(b, b.insts.index(v.inst) + 1, ins)
                return
        if isinstance(v, Value) and v.kind == "phi" and v.block is not None:
            insert_before(v.block, 0, ins)
            return
        insert_before(self.func.blocks[0], 0, ins)

    def _narrow_exit_phi(self, u: Phi) -> bool:
        """A phi after the loop merging only the IV, its increment and its initial
        value becomes a 32-bit phi plus one extension (no copy on the exit edge)."""
        iv = self.plan.iv
        dt = self.ctx.dt
        if dt is None or not self.plan.init_fits:
            return False
        init_b = self.new_init.block
        assert init_b is not None
        incs: list[Value] = []
        for k, w in enumerate(u.incoming):
            if w is iv.phi.result or w is iv.next:
                incs.append(self.narrow[w.id])
            elif w is iv.init and dt.dominates(init_b.index, u.block.preds[k].index):
                incs.append(self.new_init)
            else:
                return False
        b = u.block
        np_ = self.func.new_phi(self.pvar, ".b32", b, incs)
        b.phis.append(np_)
        t = (".s64", ".s32") if self.plan.sext else (".u64", ".u32")
        ext = make_inst(self.func, "cvt", t, [self.new("%substIV", ".b64")], [np_.result])
        insert_before(b, 0, ext)
        self._replace(u.result, ext.defs[0])
        self.dead.append(u)
        return True

    def _branch_continues_on_p(self) -> bool:
        iv = self.plan.iv
        sc = setp_condition(iv.compare)  # type: ignore[arg-type]
        assert sc is not None and iv.compare is not None
        cond, _ = sc
        a, _b = sources(iv.compare)
        if a is not iv.next:
            cond = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(cond, cond)
        # iv.cond is the continue condition with the IV on the left
        return cond == iv.cond

    def _replace(self, old: Value, new: Value) -> None:
        for u in self.ctx.users.get(old.id, []):
            _replace_in(u, old, new)
        self.ctx.users.setdefault(new.id, []).extend(self.ctx.users.get(old.id, []))

    def _subst(self, v: Value, u: Inst | Phi, x32: Value) -> None:
        func = self.func
        if isinstance(u, Phi):
            for k, w in enumerate(u.incoming):
                if w is v:
                    u.incoming[k] = self.extend(x32, None, u.block.preds[k])
            return
        ub = u.block
        assert ub is not None
        form = _wide_form(u)
        srcs = sources(u)
        if form is not None and srcs and srcs[0] is v:
            kind, c = form
            if kind == "trunc":
                self._replace(u.defs[0], x32)
            else:
                sgn = ".s32" if self.plan.sext else ".u32"
                if self.plan.sext and c >= 1 << 31:
                    form = None
                else:
                    m = make_inst(
                        func,
                        "mul",
                        (".wide", sgn),
                        [self.new("%substIV", ".b64")],
                        [x32, _imm32(c, False)],
                    )
                    insert_before(ub, ub.insts.index(u), m)
                    self._replace(u.defs[0], m.defs[0])
            if form is not None:
                self.dead.append(u)
                return
        clone = self.extend(x32, u, ub)
        _replace_in(u, v, clone)

    def _pointer_use(
        self, q: Value, u: Inst | Phi, x32: Value, base: Value | Imm | None, c: int
    ) -> None:
        if isinstance(u, Phi):
            for k, w in enumerate(u.incoming):
                if w is q:
                    blk = u.block.preds[k]
                    u.incoming[k] = self._mad(x32, base, c, None, blk)
            return
        ub = u.block
        assert ub is not None
        _replace_in(u, q, self._mad(x32, base, c, u, ub))

    def _mad(
        self, x32: Value, base: Value | Imm | None, c: int, before: Inst | None, blk: Block
    ) -> Value:
        func = self.func
        name = self.new("%substIV", ".b64")
        if base is None:
            ins = make_inst(func, "mul", (".wide", ".u32"), [name], [x32, _imm32(c, False)])
        else:
            ins = make_inst(func, "mad", (".wide", ".u32"), [name], [x32, _imm32(c, False), base])
        if before is None:
            insert_at_end(blk, ins)
        else:
            insert_before(blk, blk.insts.index(before), ins)
        return ins.defs[0]


def _replace_in(u: Inst | Phi, old: Value, new: Value) -> None:
    if isinstance(u, Phi):
        u.incoming = [new if w is old else w for w in u.incoming]
        return
    u.uses = [new if w is old else w for w in u.uses]
    if u.pred is old:
        u.pred = new
    if u.olds:
        u.olds = [new if w is old else w for w in u.olds]
    if u.carry_in is old:
        u.carry_in = new


def delete_dead(func: Func, candidates: list[Inst | Phi]) -> int:
    """Delete the candidates nothing live reads (cycles among them included)."""
    users = _users(func)
    dead: dict[int, Inst | Phi] = {}
    for c in candidates:
        if isinstance(c, Inst) and (c.info is None or c.info.side_effects or c.is_terminator):
            continue
        dead[id(c)] = c

    def results(c: Inst | Phi) -> list[Value]:
        return [c.result] if isinstance(c, Phi) else list(c.result_values())

    changed = True
    while changed:
        changed = False
        for key, c in list(dead.items()):
            for r in results(c):
                if any(id(u) not in dead for u in users.get(r.id, [])):
                    del dead[key]
                    changed = True
                    break
    for c in dead.values():
        if isinstance(c, Phi):
            c.block.phis.remove(c)
        else:
            remove(c)
    return len(dead)


def _preheader(func: Func, forest: LoopForest, loop: int) -> Block | None:
    hdr = func.blocks[forest.loops[loop].header]
    outside = [p for p in hdr.preds if not forest.contains(loop, p.index)]
    return outside[0] if len(outside) == 1 else None


def _wide_int(phi: Phi) -> bool:
    """A candidate of :func:`demote_function`: a 64-bit integer phi."""
    t = phi.result.type
    return type_width(t) == 64 and not t.startswith(".f")


def _has_candidates(func: Func, forest: LoopForest, only_headers: set[int] | None) -> bool:
    """Does a loop header (of ``only_headers``) hold a 64-bit integer phi?"""
    for lp in forest.loops:
        if only_headers is not None and lp.header not in only_headers:
            continue
        if any(_wide_int(phi) for phi in func.blocks[lp.header].phis):
            return True
    return False


def demote_function(
    func: Func,
    am: AnalysisManager,
    level: int = 4,
    *,
    exit_rewrite: bool = True,
    max_clones: int = 32,
    max_pointer_uses: int = 8,
    only_headers: set[int] | None = None,
    facts: dict[int, dict[int, Range]] | None = None,
    log: Callable[[LoopDecision], None] | None = None,
) -> list[LoopDecision]:
    """Demote what can be demoted in ``func``; one decision per candidate IV."""
    decisions: list[LoopDecision] = []
    if level <= 0:
        return decisions
    forest = am.get(LoopForest, func)
    dt = am.get(DomTree, func)
    if not _has_candidates(func, forest, only_headers):
        am.get(Graph, func)  # (what computing the value ranges leaves cached)
        return decisions  # the value ranges would answer nothing
    vr = am.get(ValueRanges, func)
    ctx = _Ctx(func, level, exit_rewrite, max_clones)
    ctx.users = _users(func)
    ctx.dt = dt
    ctx.max_pointer_uses = max_pointer_uses
    changed_any = False
    order = sorted(range(len(forest.loops)), key=lambda i: -forest.loops[i].depth)
    consumed = ctx.consumed
    for li in order:
        lp = forest.loops[li]
        if only_headers is not None and lp.header not in only_headers:
            continue
        hdr = func.blocks[lp.header]
        label = hdr.labels[0] if hdr.labels else f"bb{hdr.index}"
        for phi in list(hdr.phis):
            if type_width(phi.result.type) != 64 or phi.result.type.startswith(".f"):
                continue
            if id(phi) in consumed:
                continue
            iv = vr.ivs.get(phi.result.id)
            d = LoopDecision(func.name, label, str(phi.result), False, "")
            if iv is None:
                d.reason = "not a linear induction variable (step not loop-invariant)"
                decisions.append(d)
                continue
            pre = _preheader(func, forest, li)
            if pre is None:
                d.reason = "the loop has no single preheader"
                decisions.append(d)
                continue
            lvr = vr.assuming(facts[lp.header]) if facts and lp.header in facts else vr
            if lvr is not vr:
                d.versioned = True
            plan, why = _plan(ctx, lvr, forest, dt, li, iv, pre)
            d.reason = why
            if plan is not None:
                rw = _Rewriter(ctx, plan, pre)
                rw.run()
                delete_dead(func, rw.dead)
                ctx.users = _users(func)
                for rec, _b, _c in plan.pointers:
                    consumed.add(id(rec.phi))
                d.demoted = True
                d.mode = plan.mode
                d.pointers = len(plan.pointers)
                d.clones = rw.clones
                changed_any = True
            decisions.append(d)
            if log is not None:
                log(d)
    del changed_any
    return decisions


@register
class IVDemotion(FunctionPass):
    name = "iv-demotion"
    description = "narrow 64-bit loop induction variables to 32 bits where ranges prove it exact"
    knobs = (
        Knob(
            "remat-iv",
            "int",
            4,
            "IV demotion level: 0 off, 1-2 basic, 3 extended, 4 full, 5 aggressive",
            spec="04-iv-demotion.txt",
            lo=0,
            hi=5,
        ),
        Knob(
            "dump-remat-iv",
            "int",
            0,
            "print each loop's IV demotion decision (2: and the IR)",
            spec="04-iv-demotion.txt",
            lo=0,
        ),
        Knob(
            "remat-iv-exit-rewrite",
            "bool",
            True,
            "test grid-stride loops as n - i > s so they demote without bounding i + s",
        ),
        Knob(
            "remat-iv-version",
            "bool",
            False,
            "version unprovable loops behind a uniform runtime range test (on at remat-iv=5)",
        ),
        Knob(
            "remat-iv-max-clones",
            "int",
            32,
            "profitability: most in-loop uses needing a 64-bit extension",
            lo=0,
        ),
        Knob(
            "remat-iv-pointer-uses",
            "int",
            8,
            "profitability: rebuild a pointer recurrence from the narrow IV when it has at "
            "most this many uses (0: never)",
            lo=0,
        ),
    )

    def run(self, func: Func, am: AnalysisManager) -> bool:
        level = int(self.knob("remat-iv"))  # type: ignore[call-overload]
        if level <= 0:
            return False
        dump = int(self.knob("dump-remat-iv"))  # type: ignore[call-overload]
        changed = False
        made: dict[int, dict[int, Range]] = {}
        if level >= 5 or self.knob("remat-iv-version"):
            from ptxopt.transforms.iv_demotion.versioning import version_loops

            made = version_loops(func, am, level=level, stats=self.stats, dump=dump)
            if made:
                changed = True
                am.invalidate(func, frozenset())
        decisions = demote_function(
            func,
            am,
            level,
            exit_rewrite=bool(self.knob("remat-iv-exit-rewrite")),
            max_clones=int(self.knob("remat-iv-max-clones")),  # type: ignore[call-overload]
            facts=made,
            max_pointer_uses=int(self.knob("remat-iv-pointer-uses")),  # type: ignore[call-overload]
        )
        self.decisions = decisions
        for d in decisions:
            self.stats["IVs demoted" if d.demoted else "IVs kept wide"] += 1
            self.stats["pointer recurrences rebuilt"] += d.pointers
            self.explain(func, d.what())
            if dump:
                print(d.line(), file=sys.stderr)
            changed |= d.demoted
        if dump >= 2 and changed:
            print(dump_function(func), file=sys.stderr)
        return changed
