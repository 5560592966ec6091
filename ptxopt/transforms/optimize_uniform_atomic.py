"""optimize-uniform-atomic: warp-aggregated atomics for warp-uniform addresses.

ptxas phase 44, OptimizeUniformAtomic (spec 02, "Uniform Atomic Optimization"): an
``atom``/``red`` whose address is the same in every active lane (the divergence
analysis' address-varying flag is clear) is done once per warp.  The lanes that
execute it elect a leader, combine their operands into one value, the leader performs
the single atomic, and when the result is read each lane gets the value it would have
seen had the lanes gone one after the other in lane order (ptxas's ELECT + REDUX +
conditional ATOM, written here in PTX):

* the member mask is ``activemask`` (exactly the lanes executing the atomic, so the
  rewrite is sound under any divergence); the leader is the highest member lane
  (``bfind``);
* combining: ``redux.sync`` where the target (sm_80+) and type (32-bit integers)
  allow it and no per-lane result is needed; a warp-uniform operand needs no
  communication at all (``add``: operand x number of members; ``and``/``or``/``min``/
  ``max``: the operand itself); otherwise an inclusive scan over the member lanes
  with ``shfl.sync.idx``; the lane ``2^k`` members below is found by pointer
  jumping from the previous member (``bfind`` of the mask below the lane), so holes
  in the mask are skipped;
* per-lane results: the leader's old value is broadcast with ``shfl.sync.idx`` and
  combined with the lane's exclusive prefix (``add``: inclusive minus own operand;
  others: the inclusive value of the previous member lane).

Handled: ``add``, ``and``, ``or``, ``xor``, ``min``, ``max`` on 32- and 64-bit integers,
and ``inc`` with the bound ``0xFFFFFFFF`` (an increment without wrap).  Skipped: ``cas``,
``exch``, ``dec``, other ``inc``, vector and guarded atomics, acquire/release
semantics, varying addresses, and floating-point ``add`` unless
``OptimizeUniformAtomicMode`` is 2 (reassociating float sums changes rounding).
Knob ``OptimizeUniformAtomicMode`` (spec knob 510): 0 off, 1 integer atomics (default),
2 also ``atom.add.f32/f64``.
"""

from __future__ import annotations

import re

from ptxopt.analysis.divergence import Divergence
from ptxopt.analysis.divergence_calls import call_sites, param_symbol
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.core import Block, Func, Inst, IRModule, Phi, Value
from ptxopt.ir.defuse import DefUse
from ptxopt.ir.edit import fresh_var, insert_before, make_inst, new_def, remove, replace_uses
from ptxopt.knobs import Knob
from ptxopt.ptx.ast import Imm, Operand, Reg, Sym, Vec
from ptxopt.ptx.types import bit_width, is_float
from ptxopt.transforms.base import FunctionPass, register

__all__ = ["OptimizeUniformAtomic", "run"]

_OPS = ("add", "and", "or", "xor", "min", "max", "inc")
_SKIP_SEM = frozenset({".acquire", ".release", ".acq_rel", ".sc", ".mmio", ".volatile"})
_IDENTITY_FREE = frozenset({"and", "or", "min", "max"})


def _sm(arch: str | None) -> int:
    m = re.match(r"sm_(\d+)", arch or "")
    return int(m.group(1)) if m else 0


def _version(mod_version: str | None) -> tuple[int, int]:
    try:
        a, b = (mod_version or "0.0").split(".")
        return int(a), int(b)
    except ValueError:
        return (0, 0)


class _Builder:
    """Emits instructions before ``at`` in ``block``."""

    def __init__(self, func: Func, block: Block, at: Inst) -> None:
        self.func = func
        self.block = block
        self.at = at

    def emit(
        self,
        opcode: str,
        mods: tuple[str, ...],
        vtype: str | None,
        srcs: list[Value | Imm | Operand],
        pred: Value | None = None,
        olds: list[Value | None] | None = None,
    ) -> Value | None:
        dsts = [fresh_var(self.func, vtype, "%ua")] if vtype is not None else []
        inst = make_inst(self.func, opcode, mods, dsts, srcs, pred=pred, olds=olds, loc=self.at.loc)
        insert_before(self.block, self.block.insts.index(self.at), inst)
        return inst.defs[0] if inst.defs else None

    def v(
        self, opcode: str, mods: tuple[str, ...], vtype: str, srcs: list[Value | Imm | Operand]
    ) -> Value:
        out = self.emit(opcode, mods, vtype, srcs)
        assert out is not None
        return out


def _imm(n: int) -> Imm:
    return Imm(n, str(n) if -(1 << 31) <= n < (1 << 31) else f"0x{n & ((1 << 64) - 1):X}")


class _Candidate:
    __slots__ = ("inst", "op", "type", "value", "addr_uses", "has_result", "width", "uniform_value")

    def __init__(
        self,
        inst: Inst,
        op: str,
        vtype: str,
        value: Value | Imm,
        addr_uses: list[Value | Imm],
        has_result: bool,
    ) -> None:
        self.inst = inst
        self.op = op
        self.type = vtype
        self.value = value
        self.addr_uses = addr_uses
        self.has_result = has_result
        self.width = bit_width(vtype)
        self.uniform_value = isinstance(value, Imm)


def candidate(inst: Inst, div: Divergence, mode: int) -> _Candidate | str | None:
    """The atomic ``inst`` as a candidate, a reason it is skipped, or None (not an
    atomic at all)."""
    info = inst.info
    if info is None or info.name not in ("atom", "red"):
        return None
    mods = inst.ast.mods
    op = next((m[1:] for m in mods if m[1:] in _OPS + ("cas", "exch", "dec")), None)
    if op is None or op in ("cas", "exch", "dec"):
        return "cas/exch/dec"
    if inst.pred is not None:
        return "guarded"
    if any(m in _SKIP_SEM for m in mods):
        return "ordering semantics"
    if any(m.startswith(".v") and m[2:].isdigit() for m in mods) or any(
        m.startswith(".L2::") or m == ".noftz" for m in mods
    ):
        return "vector or cache hint"
    has_result = info.name == "atom"
    nops = 3 if has_result else 2
    if len(inst.ast.operands) != nops or len(inst.uses) < 1:
        return "operand form"
    vtype = info.type
    if vtype is None or vtype not in (
        ".u32",
        ".s32",
        ".b32",
        ".u64",
        ".s64",
        ".b64",
        ".f32",
        ".f64",
    ):
        return "type"
    if is_float(vtype) and (op != "add" or mode < 2):
        return "float"
    if div.address_varying(inst):
        return "varying address"
    last = inst.ast.operands[-1]
    value: Value | Imm
    if isinstance(last, Reg):
        value, addr_uses = inst.uses[-1], list(inst.uses[:-1])
    elif isinstance(last, Imm) and last.kind == "int":
        value, addr_uses = last, list(inst.uses)
    else:
        return "operand form"
    if op == "inc":
        if not (isinstance(value, Imm) and int(value.value) & 0xFFFFFFFF == 0xFFFFFFFF):
            return "inc with wrap"
        if vtype != ".u32":
            return "type"
    return _Candidate(inst, op, vtype, value, addr_uses, has_result)


def _combine(b: _Builder, op: str, vtype: str, x: Value, y: Value) -> Value:
    """``x op y`` in ``vtype``."""
    w = bit_width(vtype)
    if op == "add":
        if is_float(vtype):
            return b.v("add", (vtype,), vtype, [x, y])
        return b.v("add", (f".s{w}",), vtype, [x, y])
    if op in ("min", "max"):
        t = vtype if vtype[1] in "us" else f".u{w}"
        return b.v(op, (t,), vtype, [x, y])
    return b.v(op, (f".b{w}",), vtype, [x, y])


def _shfl(b: _Builder, x: Value, lane: Value, mask: Value) -> Value:
    """``x`` of lane ``lane`` (a member of ``mask``); 64-bit values in two halves."""
    w = bit_width(x.type)
    if w == 32:
        return b.v("shfl", (".sync", ".idx", ".b32"), ".b32", [x, lane, _imm(31), mask])
    lo = fresh_var(b.func, ".b32", "%ua")
    hi = fresh_var(b.func, ".b32", "%ua")
    split = make_inst(b.func, "mov", (".b64",), [], [Vec((Reg(lo), Reg(hi))), x], loc=b.at.loc)
    split.defs = [new_def(b.func, lo, split), new_def(b.func, hi, split)]
    split.uses = [x]
    split.slot_names = [lo, hi, x.var]
    insert_before(b.block, b.block.insts.index(b.at), split)
    slo = _shfl(b, split.defs[0], lane, mask)
    shi = _shfl(b, split.defs[1], lane, mask)
    out = fresh_var(b.func, x.type, "%ua")
    join = make_inst(
        b.func, "mov", (".b64",), [out], [Vec((Reg(slo.var), Reg(shi.var)))], loc=b.at.loc
    )
    join.uses = [slo, shi]
    join.slot_names = [out, slo.var, shi.var]
    insert_before(b.block, b.block.insts.index(b.at), join)
    return join.defs[0]


def _lanemask_lt(b: _Builder) -> Value:
    return b.v("mov", (".u32",), ".u32", [b.func.special("%lanemask_lt")])


def _widen(b: _Builder, n: Value, vtype: str) -> Value:
    """A 32-bit count as a value of ``vtype``."""
    if bit_width(vtype) == 32:
        return n
    return b.v("cvt", (".u64", ".u32"), vtype, [n])


def rewrite(
    func: Func, c: _Candidate, arch_sm: int, redux_ok: bool, used: bool, keep_def: bool = False
) -> str:
    """Replace the atomic of ``c`` by its warp-aggregated form; return the strategy."""
    inst = c.inst
    block = inst.block
    assert block is not None
    b = _Builder(func, block, inst)
    vt = c.type
    w = c.width
    op = "add" if c.op == "inc" else c.op
    value: Value | Imm = Imm(1, "1") if c.op == "inc" else c.value
    mask = b.v("activemask", (".b32",), ".b32", [])
    lane = b.v("mov", (".u32",), ".u32", [func.special("%laneid")])
    leader_lane = b.v("bfind", (".u32",), ".u32", [mask])
    is_leader = b.v("setp", (".eq", ".u32"), ".pred", [lane, leader_lane])
    div_uniform = isinstance(value, Imm) or c.uniform_value
    total: Value | Imm
    excl: Value | None = None  # exclusive prefix (combined with the old value)
    has_excl: Value | None = None  # where the prefix is not empty (else: old value)
    if div_uniform:
        strategy = "uniform operand"
        if op == "add":
            cnt = b.v("popc", (".b32",), ".u32", [mask])
            cw = _widen(b, cnt, vt)
            val = value if isinstance(value, Value) else _imm(int(value.value))
            total = b.v("mul", (".lo", f".s{w}"), vt, [val, cw])
            if used:
                lt = b.v("and", (".b32",), ".b32", [mask, _lanemask_lt(b)])
                rank = b.v("popc", (".b32",), ".u32", [lt])
                excl = b.v("mul", (".lo", f".s{w}"), vt, [val, _widen(b, rank, vt)])
        elif op == "xor":
            cnt = b.v("popc", (".b32",), ".u32", [mask])
            odd = b.v("and", (".b32",), ".b32", [cnt, _imm(1)])
            oddp = b.v("setp", (".ne", ".u32"), ".pred", [odd, _imm(0)])
            zero = _imm(0)
            total = b.v("selp", (f".b{w}",), vt, [value, zero, oddp])
            if used:
                lt = b.v("and", (".b32",), ".b32", [mask, _lanemask_lt(b)])
                rank = b.v("popc", (".b32",), ".u32", [lt])
                rodd = b.v("and", (".b32",), ".b32", [rank, _imm(1)])
                roddp = b.v("setp", (".ne", ".u32"), ".pred", [rodd, _imm(0)])
                excl = b.v("selp", (f".b{w}",), vt, [value, zero, roddp])
        else:
            total = value
            if used:
                lt = b.v("and", (".b32",), ".b32", [mask, _lanemask_lt(b)])
                has_excl = b.v("setp", (".ne", ".b32"), ".pred", [lt, _imm(0)])
                excl = value if isinstance(value, Value) else b.v("mov", (f".b{w}",), vt, [value])
    elif redux_ok and not used and w == 32 and not is_float(vt):
        strategy = "redux.sync"
        assert isinstance(value, Value)
        rt = f".b{w}" if op in ("and", "or", "xor") else (vt if vt[1] in "us" else f".u{w}")
        total = b.v("redux", (".sync", f".{op}", rt), vt, [value, mask])
    else:
        strategy = "shuffle scan"
        assert isinstance(value, Value)
        x: Value = value
        # pointer jumping: ``p`` is the member lane 2^k members below (or none,
        # 0xffffffff); each step doubles the distance by reading the pointer of
        # that lane
        below = b.v("and", (".b32",), ".b32", [mask, _lanemask_lt(b)])
        p = b.v("bfind", (".u32",), ".u32", [below])
        valid0 = valid = b.v("setp", (".ne", ".u32"), ".pred", [p, _imm(0xFFFFFFFF)])
        src0 = src = b.v("selp", (".b32",), ".b32", [p, lane, valid])
        for step in range(5):
            y = _shfl(b, x, src, mask)
            xy = _combine(b, op, vt, y, x)
            x = b.v("selp", (f".b{w}",), vt, [xy, x, valid])
            if step < 4:
                p = _shfl(b, p, src, mask)
                valid = b.v("setp", (".ne", ".u32"), ".pred", [p, _imm(0xFFFFFFFF)])
                src = b.v("selp", (".b32",), ".b32", [p, lane, valid])
        total = x
        if used:
            if op == "add" and not is_float(vt):
                excl = b.v("sub", (f".s{w}",), vt, [x, value])
            else:
                has_excl = valid0
                excl = _shfl(b, x, src0, mask)
    # the one atomic, done by the leader with the combined operand
    opmods = tuple(".add" if m == ".inc" else m for m in inst.ast.mods)
    addr = inst.ast.operands[1 if c.has_result else 0]
    addr_uses = c.addr_uses
    srcs: list[Value | Imm | Operand] = [addr, total]
    if c.has_result and used:
        zero_var = fresh_var(func, vt, "%ua")
        z = make_inst(func, "mov", (f".b{w}",), [zero_var], [_imm(0)], loc=inst.loc)
        insert_before(block, block.insts.index(inst), z)
        old_var = fresh_var(func, vt, "%ua")
        leader_atom = make_inst(
            func, "atom", opmods, [old_var], srcs, pred=is_leader, olds=[z.defs[0]], loc=inst.loc
        )
    else:
        leader_atom = make_inst(func, "red", opmods, [], srcs, pred=is_leader, loc=inst.loc)
    # the address operand was taken verbatim: its registers are the atomic's own
    leader_atom.uses = [*addr_uses, *([total] if isinstance(total, Value) else [])]
    leader_atom.slot_names = [d.var for d in leader_atom.defs] + [
        u.var for u in leader_atom.uses if isinstance(u, Value)
    ]
    insert_before(block, block.insts.index(inst), leader_atom)
    if c.has_result and used:
        old = leader_atom.defs[0]
        oldb = _shfl(b, old, leader_lane, mask)
        result: Value = oldb
        if excl is not None:
            comb = _combine(b, op, vt, oldb, excl)
            if has_excl is not None:
                result = b.v("selp", (f".b{w}",), vt, [comb, oldb, has_excl])
            else:
                result = comb
        replace_uses(func, inst.defs[0], result)
    elif c.has_result and keep_def:
        # read only by a return value no caller uses: any value will do
        zero_mov = make_inst(func, "mov", (f".b{w}",), [fresh_var(func, vt, "%ua")], [_imm(0)])
        insert_before(block, block.insts.index(inst), zero_mov)
        replace_uses(func, inst.defs[0], zero_mov.defs[0])
    remove(inst)
    return strategy


def dead_returns(mod: IRModule) -> set[str]:
    """``.func`` names whose return values no caller reads (optimistic fixed point):
    a value that only flows into its own function's return parameter is dead when
    that function's return is dead.  Functions callable from elsewhere (``.visible``,
    ``.extern``, ``.weak``) or whose address is taken keep a live return."""
    names = {f.name for f in mod.funcs}
    live: set[str] = set()
    deps: dict[str, set[str]] = {}  # caller -> callees whose return it forwards
    taken: set[str] = set()
    for f in mod.funcs:
        if f.ast.linkage and f.ast.kind == ".func":
            live.add(f.name)
        rets = {p.name for p in f.ast.rets}
        du = DefUse(f)
        loads: dict[str, list[Inst]] = {}
        for inst in f.instructions():
            sym = param_symbol(inst)
            if sym is not None and inst.info is not None and inst.info.name == "ld":
                loads.setdefault(sym, []).append(inst)
            if inst.info is not None and inst.info.name in ("mov", "cvta"):
                for op in inst.ast.operands:
                    if isinstance(op, Sym) and op.name in names:
                        taken.add(op.name)
        for site in call_sites(f):
            if site.callee is None:
                continue
            for r in site.rets:
                if not isinstance(r, str):
                    live.add(site.callee)
                    continue
                for ld in loads.get(r, []):
                    for v in ld.defs:
                        for u in du.uses_of(v):
                            if _is_return_store(u, rets):
                                deps.setdefault(f.name, set()).add(site.callee)
                            else:
                                live.add(site.callee)
    live |= taken
    work = list(live)
    while work:
        g = work.pop()
        for callee in deps.get(g, ()):
            if callee not in live:
                live.add(callee)
                work.append(callee)
    return {f.name for f in mod.funcs if not f.ast.is_entry and f.ast.rets} - live


def _is_return_store(u: Inst | Phi, rets: set[str]) -> bool:
    return (
        isinstance(u, Inst)
        and param_symbol(u) in rets
        and u.info is not None
        and u.info.name == "st"
    )


def _result_used(func: Func, inst: Inst, du: DefUse, dead_ret: bool) -> bool:
    """Does anything read the atomic's result (a store into a dead return does not)?"""
    rets = {p.name for p in func.ast.rets}
    for u in du.uses_of(inst.defs[0]):
        if not (dead_ret and _is_return_store(u, rets)):
            return True
    return False


def run(
    func: Func,
    am: AnalysisManager,
    mode: int,
    arch: str | None,
    version: str | None,
    dead: set[str] | None = None,
    notes: list[str] | None = None,
) -> dict[str, int]:
    """Aggregate every eligible atomic of ``func``; return counts by outcome (and,
    into ``notes``, a line per atomic)."""
    counts: dict[str, int] = {}
    if mode <= 0:
        return counts
    div = am.get(Divergence, func)
    sm = _sm(arch)
    redux_ok = sm >= 80 and _version(version) >= (7, 0)
    found: list[_Candidate] = []
    for inst in func.instructions():
        c = candidate(inst, div, mode)
        if c is None:
            continue
        if isinstance(c, str):
            counts[f"skipped: {c}"] = counts.get(f"skipped: {c}", 0) + 1
            if notes is not None:
                notes.append(f"{_where(inst)}: skipped: {c}")
            continue
        if isinstance(c.value, Value):
            c.uniform_value = div.is_uniform(c.value)
        found.append(c)
    if not found:
        return counts
    du = DefUse(func)
    dead_ret = func.name in (dead or set())
    for c in found:
        used = c.has_result and _result_used(func, c.inst, du, dead_ret)
        keep = c.has_result and not du.is_dead(c.inst.defs[0])
        how = rewrite(func, c, sm, redux_ok, used, keep)
        counts[f"aggregated ({how})"] = counts.get(f"aggregated ({how})", 0) + 1
        if notes is not None:
            notes.append(f"{_where(c.inst)}: aggregated ({how})")
    return counts


def _where(inst: Inst) -> str:
    """``line N: atom.global.add.u32`` for a line of ``--explain``."""
    op = inst.ast.opcode + "".join(inst.ast.mods)
    span = inst.ast.span
    return f"line {span.line}: {op}" if span is not None else op


@register
class OptimizeUniformAtomic(FunctionPass):
    name = "optimize-uniform-atomic"
    phase = 44
    description = "warp-aggregate atom/red with a warp-uniform address (one atomic per warp)"
    knobs = (
        Knob(
            "OptimizeUniformAtomicMode",
            "int",
            1,
            "0 off, 1 integer atomics, 2 also float add (reassociates: rounding may change)",
            spec="02-uniform-registers.txt",
            choices=(0, 1, 2),
        ),
    )

    _dead: set[str] | None = None
    _dead_for: IRModule | None = None

    def run(self, func: Func, am: AnalysisManager) -> bool:
        mode = int(self.knob("OptimizeUniformAtomicMode"))  # type: ignore[call-overload]
        version = self.module.ast.version if self.module is not None else None
        if self.module is not None and self._dead_for is not self.module:
            self._dead = dead_returns(self.module)
            self._dead_for = self.module
        notes: list[str] = []
        counts = run(func, am, mode, self.arch, version, self._dead, notes)
        self.stats.update(counts)
        for n in notes:
            self.explain(func, n)
        return any(k.startswith("aggregated") for k in counts)
