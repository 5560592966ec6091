"""Divergence analysis: which SSA values and branches are warp-uniform, and why not.

This is ptxas's ``OriPropagateVarying`` (spec 01, "Algorithm", "Inter-Procedural Walk";
spec 02, "Varying Propagation (Supporting Analysis)"), on the SSA IR:

1. **Reset**: every value starts uniform (each run recomputes from scratch; the phase-53 and
   phase-70 runs share nothing, see :func:`propagate_varying`).
2. **Seed** (:mod:`divergence_seeds`): ``%tid``/``%laneid``/..., ``shfl``, atomic results,
   ``ld.local``, ``.func`` parameters that some call site passes a varying value.
3. **Fixed point**: one forward sweep over the blocks in reverse postorder, then a worklist
   of newly varying values kept as a bit vector (next value = highest set bit of the
   highest non-empty 64-bit word, as ptxas scans it) until nothing changes.  A value is
   varying when a value it reads is varying (a predicated definition also reads its
   guard and the old value it merges with); a load when its address is; a phi when an
   incoming value is, or when it merges lanes split at a divergent branch
   (:mod:`divergence_sync`: joins at and before the post-dominator, loops desynchronised
   by the branch, repeated executions of impure instructions).
4. **Inter-procedural step** (:class:`ModuleDivergence`): per callee, one varying bit per
   parameter and per return value in a :class:`~divergence_calls.CalleeTable` (FNV-1a,
   big-endian byte order).  After each function, its call sites update the callee bits
   and its own return bits are published; when a bit changes that a function already
   analysed in this sweep had read, the whole module is re-analysed from scratch.

Besides the per-value flag, every memory instruction gets an "address operand is varying"
flag (spec 01, "Two-Bit Coordinate": the replica OptimizeUniformAtomic reads).

Every fixed point has a budget; hitting it is recorded in :attr:`Divergence.stats` and
makes the result fully varying (sound).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ptxopt.analysis.divergence_calls import (
    CalleeState,
    CalleeTable,
    CallSite,
    call_sites,
    param_symbol,
)
from ptxopt.analysis.divergence_seeds import (
    SEED_ADDRESS,
    SEED_CALL,
    SEED_UNIFORM,
    SEED_VARYING,
    def_seeds,
    membermask_slot,
    special_is_varying,
)
from ptxopt.analysis.divergence_sync import CfgContext
from ptxopt.analysis.lane_bits import block_shape, result_mask, special_mask
from ptxopt.ir.core import CARRY, Func, Inst, IRModule, Phi, Value, address_slots
from ptxopt.ptx.ast import Imm, Reg
from ptxopt.ptx.opcodes import reads_volatile_state

if TYPE_CHECKING:
    from ptxopt.analysis.manager import AnalysisManager

#: Phase numbers of the two pipeline runs (spec 01, "Why Two Runs?").
PHASES: dict[int, str] = {53: "OriPropagateVaryingFirst", 70: "OriPropagateVaryingSecond"}

# A reason is (kind, ref, note): ``ref`` is a value id for "operand"/"guard"/"address"/
# "mask", a block index for "join"/"loop"/"irreducible"/"repeat", else -1.
Reason = tuple[str, int, str]

_EXIT = -1  # "use block" of a return-value store: outside every region


class BitWorklist:
    """A set of small integers popped highest first; 64-bit words with a stack of the
    non-empty ones, so push and pop are O(1) amortised."""

    __slots__ = ("words", "nonzero")

    def __init__(self, n: int) -> None:
        self.words = [0] * ((n >> 6) + 1)
        self.nonzero: list[int] = []

    def push(self, v: int) -> None:
        w = v >> 6
        x = self.words[w]
        if not x:
            self.nonzero.append(w)
        self.words[w] = x | (1 << (v & 63))

    def pop(self) -> int:
        """The highest member of the top non-empty word; -1 when empty."""
        nz = self.nonzero
        words = self.words
        while nz:
            w = nz[-1]
            x = words[w]
            if not x:
                nz.pop()
                continue
            bit = x.bit_length() - 1
            x ^= 1 << bit
            words[w] = x
            if not x:
                nz.pop()
            return (w << 6) | bit
        return -1


@dataclass(slots=True)
class DivergenceStats:
    sweeps: int = 0
    pops: int = 0
    divergent_branches: int = 0
    budget: int = 0
    budget_hit: bool = False
    irreducible: bool = False
    rounds: int = 0  # module level: sweeps over the functions
    restarts: int = 0  # module level: restarts from scratch


@dataclass(slots=True)
class FuncEnv:
    """What a function's analysis needs from the rest of the module."""

    is_entry: bool
    param_varying: list[bool]  # per ``func.ast.params`` entry
    call_ret: Callable[[CallSite, int], bool]  # is return ``k`` of this call varying?

    @staticmethod
    def conservative(func: Func) -> FuncEnv:
        """No module context: parameters of a ``.func`` and call results are varying."""
        entry = func.ast.kind == ".entry"
        return FuncEnv(entry, [not entry] * len(func.ast.params), lambda site, k: True)


class Divergence:
    """Divergence of one function: per SSA value id, per block terminator, per memory
    instruction's address.  ``Divergence.compute(func, am)`` is the analysis-manager entry
    (module-aware when the function was bound with :func:`bind_module`)."""

    def __init__(self, func: Func) -> None:
        self.func = func
        self.varying = bytearray(func.next_id)
        self.reasons: dict[int, Reason] = {}
        self.divergent = bytearray(len(func.blocks))  # per block: its branch is divergent
        # divergent branch's block -> the blocks of its region (reachable from it before
        # its immediate post-dominator), as the propagation computed it
        self.regions: dict[int, list[int]] = {}
        self.addr_varying: dict[Inst, bool] = {}
        self.stats = DivergenceStats()
        self.sites: list[CallSite] = []
        self.arg_varying: list[list[bool]] = []  # per call site, per argument
        self.ret_varying: list[bool] = []  # per ``func.ast.rets`` entry

    # -- queries -------------------------------------------------------------------------

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> Divergence:
        assert isinstance(fn, Func)
        mod = module_of(fn)
        if mod is None or fn not in mod.funcs:
            return analyze_function(fn, FuncEnv.conservative(fn))
        md = am.cached(ModuleDivergence, mod)
        if md is None or fn in md.handed_out:
            am.invalidate(mod)
            md = am.get(ModuleDivergence, mod)
        md.handed_out.add(fn)
        return md.funcs[fn.name]

    def same_as(self, other: object) -> bool:
        """Same verdicts (values, branches, addresses) as ``other``: used by
        ``--verify-each`` to check a pass that claims to preserve divergence."""
        return (
            isinstance(other, Divergence)
            and self.varying == other.varying
            and self.divergent == other.divergent
            and self.addr_varying == other.addr_varying
        )

    def is_varying(self, v: Value) -> bool:
        return v.id < len(self.varying) and bool(self.varying[v.id])

    def is_uniform(self, v: Value) -> bool:
        return not self.is_varying(v)

    def branch_divergent(self, block: int) -> bool:
        """Is the terminator of block ``block`` a divergent branch?"""
        return bool(self.divergent[block])

    def address_varying(self, inst: Inst) -> bool:
        """Is an address operand of memory instruction ``inst`` varying?"""
        return self.addr_varying.get(inst, False)

    def reason(self, v: Value) -> Reason | None:
        return self.reasons.get(v.id)

    def explain(self, v: Value, limit: int = 64) -> list[tuple[Value | None, str]]:
        """The chain from ``v`` back to a divergence root: (value, why) steps."""
        values = _value_index(self.func)
        out: list[tuple[Value | None, str]] = []
        seen: set[int] = set()
        cur: Value | None = v
        while cur is not None and len(out) < limit and cur.id not in seen:
            seen.add(cur.id)
            r = self.reasons.get(cur.id)
            if r is None:
                out.append((cur, "uniform"))
                break
            kind, ref, note = r
            out.append((cur, describe(self.func, r)))
            nxt: Value | None = None
            if kind in ("operand", "guard", "address", "mask"):
                nxt = values.get(ref)
            elif kind in ("join", "loop", "irreducible", "repeat"):
                nxt = branch_condition(self.func.blocks[ref].terminator)
            cur = nxt
        return out


def branch_condition(term: Inst | None) -> Value | None:
    """The value that decides a conditional branch (guard of ``bra``, index of ``brx``)."""
    if term is None or term.info is None:
        return None
    if term.info.name == "brx.idx":
        u = term.uses[0] if term.uses else None
        return u if isinstance(u, Value) else None
    return term.pred


def is_conditional_branch(inst: Inst | None) -> bool:
    if inst is None or inst.info is None:
        return False
    name = inst.info.name
    return (name == "bra" and inst.pred is not None) or name == "brx.idx"


def _value_index(func: Func) -> dict[int, Value]:
    out: dict[int, Value] = {}
    for v in func.values():
        out[v.id] = v
    for v in func.specials.values():
        out[v.id] = v
    for v in func.undefs.values():
        out[v.id] = v
    return out


def describe(func: Func, r: Reason) -> str:
    """A reason in words."""
    kind, ref, note = r
    if kind in ("join", "loop", "irreducible", "repeat"):
        term = func.blocks[ref].terminator
        line = term.ast.span.line if term is not None and term.ast.span else 0
        where = f"divergent branch at line {line}"
        return {
            "join": f"merges lanes split by the {where}",
            "loop": f"loop desynchronised by the {where} (temporal divergence)",
            "irreducible": f"irreducible cycle desynchronised by the {where}",
            "repeat": f"impure result recomputed per lane group under the {where}",
        }[kind]
    if kind == "operand":
        return f"reads varying {note}"
    if kind == "guard":
        return f"predicated definition under varying guard {note}"
    if kind == "address":
        return f"load from varying address {note}"
    if kind == "mask":
        return f"warp collective with varying membermask {note}"
    return note


# ---------------------------------------------------------------------------
# the intra-procedural propagator


def _repeatable(inst: Inst) -> bool:
    """Same operands -> same result, whenever and by whichever lanes it runs."""
    info = inst.info
    if info is None:
        return True
    if info.name == "call":
        return False
    if info.pure:
        return not reads_volatile_state(inst.ast)
    if (
        info.mem == "read"
        and not info.side_effects
        and (info.invariant_mem or info.space == ".param")
    ):
        return True
    return False


class _Propagator:
    def __init__(self, func: Func, env: FuncEnv, budget: int | None) -> None:
        self.func = func
        self.env = env
        self.res = Divergence(func)
        n = func.next_id
        self.var = self.res.varying
        self.reasons = self.res.reasons
        self.work = BitWorklist(n)
        self.users: list[list[Inst | Phi] | None] = [None] * n
        self.use_block: dict[Inst, int] = {}
        self.addr_slots: dict[Inst, list[int]] = {}
        self.sym_stores: dict[str, list[Inst]] = {}
        self.ret_of_value: dict[int, tuple[CallSite, int]] = {}
        self.ret_of_symbol: dict[str, tuple[CallSite, int]] = {}
        self.own_params = {p.name: i for i, p in enumerate(func.ast.params)}
        self.own_rets = {p.name: i for i, p in enumerate(func.ast.rets)}
        self.any_divergence = False
        self.repeatable: dict[Inst, bool] = {}  # memo of _repeatable (regions overlap)
        # varying values known to differ only in some bits within a warp (lane_bits)
        self.lmask: dict[int, int] = {}
        self.shape = block_shape(func.ast.directives)
        cond_ret = [False] * len(func.blocks)
        if not env.is_entry:
            for b in func.blocks:
                t = b.terminator
                if t is not None and t.info is not None and t.pred is not None:
                    if t.info.name in ("ret", "exit", "trap"):
                        cond_ret[b.index] = True
        self.ctx = CfgContext(func.cfg_succs(), cond_ret)
        ninst = sum(len(b.insts) + len(b.phis) for b in func.blocks)
        self.budget = budget if budget is not None else 8 * (n + ninst) + 1024
        self.res.stats.budget = self.budget
        self.res.stats.irreducible = self.ctx.irreducible

    # -- indexing --------------------------------------------------------------------------

    def _add_user(self, v: Value, u: Inst | Phi) -> None:
        lst = self.users[v.id]
        if lst is None:
            self.users[v.id] = [u]
        elif lst[-1] is not u:
            lst.append(u)

    def index(self) -> None:
        func = self.func
        for b in func.blocks:
            for phi in b.phis:
                for v in phi.incoming:
                    self._add_user(v, phi)
            for inst in b.insts:
                info = inst.info
                if info is None:
                    continue
                for v in inst.operand_values():
                    self._add_user(v, inst)
                if info.addrs:
                    self.addr_slots[inst] = address_slots(inst)
                if info.space is not None and info.space.startswith(".param"):
                    sym = param_symbol(inst)
                    if sym is not None and info.mem == "write":
                        self.sym_stores.setdefault(sym, []).append(inst)
        self.res.sites = call_sites(func)
        for site in self.res.sites:
            blk = site.inst.block
            assert blk is not None
            for k, r in enumerate(site.rets):
                if isinstance(r, Value):
                    self.ret_of_value[r.id] = (site, k)
                elif isinstance(r, str):
                    self.ret_of_symbol[r] = (site, k)
            for a in site.args:
                if isinstance(a, str):
                    for st in self.sym_stores.get(a, ()):
                        self.use_block[st] = blk.index
        for name in self.own_rets:
            for st in self.sym_stores.get(name, ()):
                self.use_block[st] = _EXIT

    # -- marking ---------------------------------------------------------------------------

    def mark(self, v: Value, reason: Reason) -> None:
        vid = v.id
        if not self.var[vid]:
            self.var[vid] = 1
            self.reasons[vid] = reason
            self.work.push(vid)
        elif vid in self.lmask:  # a refined value becomes fully varying
            del self.lmask[vid]
            self.reasons[vid] = reason
            self.work.push(vid)

    def mark_partial(self, v: Value, reason: Reason, mask: int) -> None:
        """``v`` is varying, but only the bits of ``mask`` differ within a warp."""
        vid = v.id
        if not self.var[vid]:
            self.var[vid] = 1
            self.reasons[vid] = reason
            self.lmask[vid] = mask
            self.work.push(vid)
            return
        old = self.lmask.get(vid)
        if old is not None and old | mask != old:
            self.lmask[vid] = old | mask
            self.work.push(vid)

    def mask_of(self, v: Value) -> int | None:
        """Lane mask of ``v``: 0 uniform, ``None`` fully varying (see lane_bits)."""
        if not self.var[v.id]:
            return 0
        return self.lmask.get(v.id)

    def _broadcast(self, inst: Inst) -> bool:
        """``shfl.sync.idx`` reading one uniform source lane for the whole warp: a
        constant ``c`` with no segment mask whose clamp admits the lane, and a
        membermask that is not varying.  Every lane then reads the same register."""
        ast = inst.ast
        if ast.opcode != "shfl" or ".idx" not in ast.mods or ".sync" not in ast.mods:
            return False
        ops = ast.operands
        if len(ops) != 5:
            return False
        vals: list[Value | int | None] = []
        k = 0
        for op in ops[1:]:
            if isinstance(op, Reg):
                u = inst.uses[k] if k < len(inst.uses) else None
                k += 1
                if isinstance(u, Imm) and isinstance(u.value, int):
                    vals.append(u.value)
                elif isinstance(u, Value):
                    c0 = _constant(u)
                    vals.append(u if c0 is None else c0)
                else:
                    vals.append(None)
            elif isinstance(op, Imm) and isinstance(op.value, int):
                vals.append(op.value)
            else:
                vals.append(None)
        _a, b, c, mask = vals
        if not isinstance(c, int) or (c >> 8) & 31:
            return False
        if isinstance(b, int):
            if b & 31 > c & 31:
                return False
        elif not isinstance(b, Value) or self.mask_of(b) != 0 or c & 31 != 31:
            return False
        return isinstance(mask, int) or (isinstance(mask, Value) and not self.var[mask.id])

    def seed(self) -> None:
        func = self.func
        for name in sorted(func.specials):
            v = func.specials[name]
            if special_is_varying(name):
                m = special_mask(name, self.shape)
                why: Reason = ("seed", -1, f"special register {name} differs per lane")
                if m is None:
                    self.mark(v, why)
                elif m:
                    self.mark_partial(v, why, m)
        by_name = {p.var: p for p in func.params}
        for i, p in enumerate(func.ast.params):
            if p.space == ".reg" and i < len(self.env.param_varying) and self.env.param_varying[i]:
                pv = by_name.get(p.name)
                if pv is not None:
                    self.mark(pv, ("param", -1, f"parameter {p.name} is varying at a call site"))

    def eval_phi(self, phi: Phi) -> None:
        res = phi.result
        if self.var[res.id]:
            return
        for v in phi.incoming:
            if self.var[v.id]:
                self.mark(res, ("operand", v.id, repr(v)))
                return

    def eval_inst(self, inst: Inst) -> None:
        info = inst.info
        if info is None:
            return
        var = self.var
        lmask = self.lmask
        for d in inst.defs:  # a result not (fully) varying yet?
            if not var[d.id] or d.id in lmask:
                self._eval_defs(inst)
                break
        if inst.carry_out is not None and not var[inst.carry_out.id]:
            for v in inst.operand_values():
                if var[v.id]:
                    self.mark(inst.carry_out, ("operand", v.id, repr(v)))
                    break
        if info.terminator:
            self.eval_branch(inst)

    def _eval_defs(self, inst: Inst) -> None:
        var = self.var
        pred = inst.pred
        if pred is not None and var[pred.id]:
            for d in inst.defs:
                self.mark(d, ("guard", pred.id, repr(pred)))
            return
        seeds = def_seeds(inst)
        olds = inst.olds
        opv: Value | None = None
        for u in inst.uses:
            if isinstance(u, Value) and var[u.id]:
                opv = u
                break
        if opv is None and inst.carry_in is not None and var[inst.carry_in.id]:
            opv = inst.carry_in
        lmask = self.lmask
        for k, d in enumerate(inst.defs):
            if var[d.id] and d.id not in lmask:
                continue
            s = seeds[k]
            r: Reason | None = None
            if s == SEED_VARYING:
                if not self._broadcast(inst):
                    r = ("seed", -1, f"{inst.ast.name} result differs per lane")
            elif s == SEED_UNIFORM:
                ms = membermask_slot(inst)
                if ms is not None:
                    m = inst.uses[ms]
                    if isinstance(m, Value) and var[m.id]:
                        r = ("mask", m.id, repr(m))
            elif s == SEED_ADDRESS:
                r = self._load_reason(inst)
            elif s == SEED_CALL:
                r = self._call_reason(d)
            elif opv is not None:
                r = ("operand", opv.id, repr(opv))
                if len(inst.defs) == 1:
                    rm = result_mask(inst, self.mask_of)
                    if rm == 0:
                        r = None  # only lane bits the arithmetic discards differ
                    elif rm is not None and not (olds and olds[0] is not None and var[olds[0].id]):
                        self.mark_partial(d, r, rm)
                        continue
            if r is None and olds is not None and k < len(olds):
                o = olds[k]
                if o is not None and var[o.id]:
                    r = ("operand", o.id, repr(o))
            if r is not None:
                self.mark(d, r)

    def _load_reason(self, inst: Inst) -> Reason | None:
        info = inst.info
        assert info is not None
        var = self.var
        for k in self.addr_slots.get(inst, ()):
            u = inst.uses[k]
            if isinstance(u, Value) and var[u.id]:
                return ("address", u.id, repr(u))
        if info.space is not None and info.space.startswith(".param"):
            sym = param_symbol(inst)
            if sym is None:
                if not self.env.is_entry:
                    return ("seed", -1, "ld.param through a register in a .func")
                return None
            if sym in self.ret_of_symbol:
                site, k = self.ret_of_symbol[sym]
                if self.env.call_ret(site, k):
                    return (
                        "return",
                        -1,
                        f"return value {k} of {site.callee or 'an indirect call'}",
                    )
                return None
            if self.env.is_entry:
                return None
            if sym in self.own_params:
                i = self.own_params[sym]
                if i >= len(self.env.param_varying) or self.env.param_varying[i]:
                    return ("param", -1, f"parameter {sym} is varying at a call site")
                return None
            return ("seed", -1, f"ld.param of {sym} (conservative)")
        return None

    def _call_reason(self, d: Value) -> Reason | None:
        hit = self.ret_of_value.get(d.id)
        if hit is None:
            return ("seed", -1, "call result (conservative)")
        site, k = hit
        if self.env.call_ret(site, k):
            return ("return", -1, f"return value {k} of {site.callee or 'an indirect call'}")
        return None

    # -- branches -------------------------------------------------------------------------

    def eval_branch(self, term: Inst) -> None:
        blk = term.block
        assert blk is not None
        b = blk.index
        if self.res.divergent[b]:
            return
        cond: Value | None
        info = term.info
        assert info is not None
        if info.name == "bra" or (info.name in ("ret", "exit", "trap") and not self.env.is_entry):
            cond = term.pred
        elif info.name == "brx.idx":
            u = term.uses[0] if term.uses else None
            cond = u if isinstance(u, Value) else None
        else:
            return
        if cond is None or not self.var[cond.id]:
            return
        if len(self.ctx.succs[b]) < 2:
            return
        self.res.divergent[b] = 1
        self.any_divergence = True
        self.res.stats.divergent_branches += 1
        self.apply_region(b)

    def apply_region(self, b: int) -> None:
        ctx = self.ctx
        reg = ctx.region(b)
        self.res.regions[b] = reg.blocks
        blocks = self.func.blocks
        for j in reg.joins:
            for phi in blocks[j].phis:
                if not _trivial(phi):
                    self.mark(phi.result, ("join", b, ""))
        for h in reg.desync_headers:
            for phi in blocks[h].phis:
                self.mark(phi.result, ("loop", b, ""))
        for x in reg.irreducible_blocks:
            for phi in blocks[x].phis:
                self.mark(phi.result, ("irreducible", b, ""))
        # Impure results computed in the region and used outside it.
        var = self.var
        users = self.users
        repeatable = self.repeatable
        for x in reg.blocks:
            for inst in blocks[x].insts:
                if not inst.defs:
                    continue
                rep = repeatable.get(inst)
                if rep is None:
                    rep = repeatable[inst] = _repeatable(inst)
                if rep:
                    continue
                for d in inst.defs:
                    if var[d.id]:
                        continue
                    for u in users[d.id] or ():
                        if isinstance(u, Phi):
                            ub = u.block.index
                        else:
                            ub = self.use_block.get(u, -2)
                            if ub == -2:
                                assert u.block is not None
                                ub = u.block.index
                        if ub == _EXIT or not ctx.in_last_region(ub):
                            self.mark(d, ("repeat", b, ""))
                            break

    # -- driver ------------------------------------------------------------------------------

    def run(self) -> Divergence:
        self.index()
        self.seed()
        func = self.func
        order = self.ctx.order
        # One forward sweep in reverse postorder (unreachable blocks last).
        stats = self.res.stats
        stats.sweeps = 1
        for b in sorted(func.blocks, key=lambda blk: order[blk.index]):
            for phi in b.phis:
                self.eval_phi(phi)
            for inst in b.insts:
                self.eval_inst(inst)
        # Then the worklist of newly varying values.
        users = self.users
        pops = 0
        budget = self.budget
        while True:
            vid = self.work.pop()
            if vid < 0:
                break
            pops += 1
            if pops > budget:
                stats.budget_hit = True
                self._give_up()
                break
            for u in users[vid] or ():
                if isinstance(u, Phi):
                    self.eval_phi(u)
                else:
                    self.eval_inst(u)
        stats.pops = pops
        self.finish()
        return self.res

    def _give_up(self) -> None:
        for v in self.func.values():
            if not self.var[v.id]:
                self.var[v.id] = 1
                self.reasons[v.id] = ("budget", -1, "fixed-point budget exhausted")
        for b in self.func.blocks:
            if is_conditional_branch(b.terminator):
                self.res.divergent[b.index] = 1
        self.any_divergence = True

    def finish(self) -> None:
        var = self.var
        res = self.res
        for inst, slots in self.addr_slots.items():
            flag = False
            for k in slots:
                u = inst.uses[k]
                if isinstance(u, Value) and var[u.id]:
                    flag = True
                    break
            res.addr_varying[inst] = flag
        for site in res.sites:
            res.arg_varying.append([self._arg_varying(a) for a in site.args])
        rets: list[bool] = []
        for p in self.func.ast.rets:
            if p.space == ".reg":
                vals = [v for v in self.func.values() if v.var == p.name and v.kind != "param"]
                flag = any(var[v.id] for v in vals)
                if not flag and self.any_divergence:
                    flag = len({v.block.index for v in vals if v.block is not None}) > 1
                rets.append(flag)
            else:
                rets.append(self._symbol_varying(p.name))
        res.ret_varying = rets

    def _arg_varying(self, a: Value | str | None) -> bool:
        if a is None:
            return False
        if isinstance(a, Value):
            return bool(self.var[a.id])
        return self._symbol_varying(a)

    def _symbol_varying(self, sym: str) -> bool:
        stores = self.sym_stores.get(sym, [])
        var = self.var
        for st in stores:
            for v in st.operand_values():
                if var[v.id]:
                    return True
        if self.any_divergence and len({st.block.index for st in stores if st.block}) > 1:
            return True
        return False


def _constant(v: Value) -> int | None:
    """The integer ``v`` holds when an unguarded ``mov`` of an immediate defines it
    (Triton passes shfl's lane, clamp and mask in such registers)."""
    inst = v.inst
    if v.kind != "inst" or not isinstance(inst, Inst) or inst.pred is not None:
        return None
    if inst.ast.opcode != "mov" or len(inst.ast.operands) != 2 or inst.uses:
        return None
    op = inst.ast.operands[1]
    return op.value if isinstance(op, Imm) and isinstance(op.value, int) else None


def _trivial(phi: Phi) -> bool:
    """All incoming values are one value (undefined incomings ignored)."""
    first: Value | None = None
    for v in phi.incoming:
        if v.kind == "undef":
            continue
        if first is None:
            first = v
        elif v is not first:
            return False
    return True


def analyze_function(func: Func, env: FuncEnv, *, budget: int | None = None) -> Divergence:
    """Divergence of one function given its module context ``env`` (from scratch)."""
    return _Propagator(func, env, budget).run()


# ---------------------------------------------------------------------------
# the module level: inter-procedural walk with restart from scratch


def bind_module(mod: IRModule) -> None:
    """Make ``Divergence.compute`` of ``mod``'s functions module-aware."""
    for f in mod.funcs:
        f.module = mod


def module_of(func: Func) -> IRModule | None:
    """The module ``func`` was bound with (:func:`bind_module`)."""
    return func.module


@dataclass(slots=True)
class ModuleDivergence:
    """Divergence of every function of a module (``funcs`` by name) and the callee table."""

    funcs: dict[str, Divergence]
    table: CalleeTable
    stats: DivergenceStats
    order: list[str]
    handed_out: set[Func] = field(default_factory=set)
    # ``am.ir_version`` when computed (``None``: not known to match the module now)
    ir_version: int | None = None

    @classmethod
    def compute(cls, fn: object, am: AnalysisManager) -> ModuleDivergence:
        assert isinstance(fn, IRModule)
        md = analyze_module(fn)
        md.ir_version = am.ir_version
        return md


def _call_order(mod: IRModule) -> list[Func]:
    """Callers before callees: DFS postorder of the call graph from the entries, reversed,
    then functions no entry reaches (module order)."""
    by_name = {f.name: f for f in mod.funcs}
    callees: dict[str, list[str]] = {}
    for f in mod.funcs:
        seen: dict[str, None] = {}
        for b in f.blocks:
            for inst in b.insts:
                if inst.info is not None and inst.info.name == "call":
                    for s in call_sites_of_inst(inst):
                        if s in by_name:
                            seen[s] = None
        callees[f.name] = list(seen)
    visited: set[str] = set()
    post: list[str] = []
    for root in [f.name for f in mod.funcs if f.ast.kind == ".entry"] + [f.name for f in mod.funcs]:
        if root in visited:
            continue
        visited.add(root)
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            name, i = stack[-1]
            cs = callees[name]
            if i < len(cs):
                stack[-1] = (name, i + 1)
                c = cs[i]
                if c not in visited:
                    visited.add(c)
                    stack.append((c, 0))
            else:
                stack.pop()
                post.append(name)
    post.reverse()
    return [by_name[n] for n in post]


def call_sites_of_inst(inst: Inst) -> list[str]:
    from ptxopt.ptx.ast import ParenList, Sym

    ops = inst.ast.operands
    k = 1 if ops and isinstance(ops[0], ParenList) else 0
    if k < len(ops) and isinstance(ops[k], Sym):
        return [ops[k].name]  # type: ignore[union-attr]
    return []


def _address_taken(mod: IRModule) -> set[str]:
    """Functions whose name is used other than as a direct call target."""
    from ptxopt.ptx.ast import Sym

    names = {f.name for f in mod.ast.functions}
    out: set[str] = set()
    for f in mod.funcs:
        for b in f.blocks:
            for inst in b.insts:
                ops = inst.ast.operands
                skip = -1
                if inst.info is not None and inst.info.name == "call":
                    from ptxopt.ptx.ast import ParenList

                    skip = 1 if ops and isinstance(ops[0], ParenList) else 0
                for i, op in enumerate(ops):
                    if i != skip and isinstance(op, Sym) and op.name in names:
                        out.add(op.name)
    return out


def _recording(
    call_ret: Callable[[CallSite, int], bool], asked: list[tuple[CallSite, int, bool]]
) -> Callable[[CallSite, int], bool]:
    """``call_ret`` that also appends each question and its answer to ``asked``."""

    def ask(site: CallSite, k: int) -> bool:
        answer = call_ret(site, k)
        asked.append((site, k, answer))
        return answer

    return ask


def analyze_module(mod: IRModule, *, max_rounds: int | None = None) -> ModuleDivergence:
    """Divergence of every function with the inter-procedural step (spec 01)."""
    order = _call_order(mod)
    index = {f.name: i for i, f in enumerate(mod.funcs)}
    table = CalleeTable(max(16, 2 * len(mod.funcs)))
    for f in mod.funcs:
        visible = any(x in (".visible", ".weak", ".extern", ".common") for x in f.ast.linkage)
        outside = f.ast.kind != ".entry" and visible
        table.insert(
            CalleeState(
                index[f.name],
                f.name,
                [outside] * len(f.ast.params),
                [False] * len(f.ast.rets),
            )
        )
    taken = _address_taken(mod)
    callers: dict[str, set[str]] = {f.name: set() for f in mod.funcs}
    for f in mod.funcs:
        for b in f.blocks:
            for inst in b.insts:
                if inst.info is not None and inst.info.name == "call":
                    for c in call_sites_of_inst(inst):
                        if c in callers:
                            callers[c].add(f.name)
    nbits = sum(len(f.ast.params) + len(f.ast.rets) for f in mod.funcs)
    limit = max_rounds if max_rounds is not None else nbits + 2
    stats = DivergenceStats()
    results: dict[str, Divergence] = {}

    def state(name: str) -> CalleeState | None:
        i = index.get(name)
        return None if i is None else table.get(i)

    def call_ret(site: CallSite, k: int) -> bool:
        if site.callee is None:
            return True
        st = state(site.callee)
        if st is None or k >= len(st.rets):
            return True  # a declared-only (external) function
        return st.rets[k]

    # per function, its last analysis and the inputs it read (parameter flags, the
    # call_ret answers asked): a function whose inputs are unchanged in a restarted
    # round would be analysed to the same result
    last: dict[str, tuple[list[bool], list[tuple[CallSite, int, bool]], Divergence]] = {}

    rounds = 0
    while True:
        rounds += 1
        results = {}
        done: set[str] = set()
        stale = False
        for f in order:
            st = state(f.name)
            assert st is not None
            entry = f.ast.kind == ".entry"
            params = list(st.params) if not entry else [False] * len(f.ast.params)
            memo = last.get(f.name)
            if (
                memo is not None
                and memo[0] == params
                and all(call_ret(site, k) == was for site, k, was in memo[1])
            ):
                res = memo[2]
            else:
                asked: list[tuple[CallSite, int, bool]] = []
                env = FuncEnv(entry, params, _recording(call_ret, asked))
                res = analyze_function(f, env)
                last[f.name] = (params, asked, res)
            results[f.name] = res
            done.add(f.name)
            # inter-procedural step: call edges of f, then f's own return values
            for site, flags in zip(res.sites, res.arg_varying, strict=True):
                targets: list[str]
                if site.callee is None:
                    targets = sorted(taken)
                else:
                    targets = [site.callee]
                for c in targets:
                    cs = state(c)
                    if cs is None:
                        continue
                    for k in range(len(cs.params)):
                        flag = flags[k] if site.callee is not None and k < len(flags) else True
                        if flag and not cs.params[k]:
                            cs.params[k] = True
                            if c in done:
                                stale = True
            for k, flag in enumerate(res.ret_varying):
                if flag and not st.rets[k]:
                    st.rets[k] = True
                    if callers[f.name] & done:
                        stale = True
        if not stale:
            break
        stats.restarts += 1
        if rounds >= limit:
            stats.budget_hit = True
            for f in mod.funcs:
                results[f.name] = analyze_function(f, FuncEnv.conservative(f), budget=0)
            break
    stats.rounds = rounds
    for r in results.values():
        r.stats.rounds = rounds
        r.stats.restarts = stats.restarts
        stats.pops += r.stats.pops
        stats.divergent_branches += r.stats.divergent_branches
        stats.irreducible = stats.irreducible or r.stats.irreducible
        stats.budget_hit = stats.budget_hit or r.stats.budget_hit
    return ModuleDivergence(results, table, stats, [f.name for f in order])


# ---------------------------------------------------------------------------
# the two pipeline runs


def propagate_varying(
    func: Func, am: AnalysisManager, phase: int = 53, *, module: bool = True
) -> Divergence:
    """Phase 53 (``OriPropagateVaryingFirst``) or 70 (``OriPropagateVaryingSecond``): drop
    any cached divergence of ``func`` (and of its bound module) and recompute from scratch.
    ``module=False`` keeps the module's result: a pass that runs this on every function
    of an unchanged module recomputes the module once, not once per function.  Inside
    the pass pipeline (``am.ir_version`` set), a module result computed since the last
    reported change is kept: recomputing it would give the same result."""
    if phase not in PHASES:
        raise ValueError(f"varying propagation runs at phases {sorted(PHASES)}, not {phase}")
    mod = module_of(func)
    if mod is not None and am.ir_version is not None:
        # nothing changed in the module since its analysis was computed from scratch
        # (the pipeline's version is unchanged): recomputing would give the same result
        md = am.cached(ModuleDivergence, mod)
        if md is not None and md.ir_version == am.ir_version:
            d = am.cached(Divergence, func)
            if d is not None and d is md.funcs.get(func.name):
                return d
    drop_varying(func, am, module=module)
    return am.get(Divergence, func)


def drop_varying(func: Func, am: AnalysisManager, *, module: bool = True) -> None:
    """What :func:`propagate_varying` does before it recomputes: drop the cached
    divergence of ``func`` (and, with ``module``, of its bound module).  The next
    reader computes it from scratch on the code it sees."""
    keep = frozenset(c for c in am.cached_analyses(func) if c is not Divergence)
    am.invalidate(func, keep)
    mod = module_of(func)
    if mod is not None and module:
        am.invalidate(mod)


def register_names(func: Func) -> dict[str, list[Value]]:
    """PTX register name -> its SSA values (params, instruction results, phis), sorted."""
    out: dict[str, list[Value]] = {}
    for v in func.values():
        if v.var == CARRY:
            continue
        out.setdefault(v.var, []).append(v)
    return dict(sorted(out.items(), key=lambda kv: _reg_sort_key(kv[0])))


def _reg_sort_key(name: str) -> tuple[str, int, str]:
    i = len(name)
    while i > 0 and name[i - 1].isdigit():
        i -= 1
    head, digits = name[:i], name[i:]
    return (head, int(digits) if digits else -1, name)
