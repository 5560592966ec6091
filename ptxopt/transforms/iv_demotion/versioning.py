"""Loop versioning for IV demotion: a runtime test chooses a 32-bit copy of a loop.

When a grid-stride loop's bound or stride is a 64-bit value nothing bounds (a
``size_t n`` parameter, ``blockDim.x * gridDim.x`` widened), the range proof
fails.  If both are warp-uniform, the preheader can test them instead:

* ``ok = n <= 0xFFFFFFFF && step <= 0xFFFFFFFF`` (a uniform predicate);
* ``@ok bra.uni`` to a copy of the loop, laid out at the end of the function,
  which is then demoted under those facts (with the ``n - i > s`` exit test);
* otherwise fall through to the original loop, untouched.

The copy is made in SSA form: every value of the loop gets a twin, the copy's
exits join the original exit block, whose phis gain one operand per new edge,
and a value used after the loop without a phi gets one in the exit block.  The
cost (instructions added) is counted in ``--stats`` and in the dump.

Only loops of a simple shape are versioned: one preheader that falls through to
the header, one exit block, a function that ends in an unconditional
terminator (so appended blocks are never fallen into).
"""

from __future__ import annotations

import sys
from collections import Counter

from ptxopt.analysis.divergence import Divergence
from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.loops import LoopForest
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.analysis.value_ranges import Range, ValueRanges, type_width
from ptxopt.ir.core import Block, Func, Inst, Phi, Value
from ptxopt.ir.edit import fresh_var, insert_at_end, make_inst
from ptxopt.ptx.ast import Imm, Sym
from ptxopt.record import replace

U32_MAX = (1 << 32) - 1


def _candidates(
    func: Func, am: AnalysisManager, level: int
) -> list[tuple[int, Value | Imm, Value | Imm]]:
    """Loops (by header block) whose IV the exit-test rewrite could demote if the
    bound and the stride fit 32 bits: ``(header, bound, step)``."""
    from ptxopt.transforms.iv_demotion import _Ctx, _plan, _preheader, _users

    forest = am.get(LoopForest, func)
    dt = am.get(DomTree, func)
    vr = am.get(ValueRanges, func)
    div = am.get(Divergence, func)
    ctx = _Ctx(func, level, True, 1 << 30)
    ctx.users = _users(func)
    out: list[tuple[int, Value | Imm, Value | Imm]] = []
    for li, lp in enumerate(forest.loops):
        if lp.children:
            continue
        hdr = func.blocks[lp.header]
        pre = _preheader(func, forest, li)
        if pre is None:
            continue
        for phi in hdr.phis:
            iv = vr.ivs.get(phi.result.id)
            if iv is None or type_width(phi.result.type) != 64 or iv.bound is None:
                continue
            plan, _why = _plan(ctx, vr, forest, dt, li, iv, pre)
            if plan is not None:
                break  # provable as it is: no copy needed
            facts: dict[int, Range] = {}
            uniform = True
            for v in (iv.bound, iv.step):
                if isinstance(v, Value):
                    uniform &= not div.is_varying(v)
                    facts[v.id] = vr.of(v, 64).refine_u(0, U32_MAX)
            if not uniform:
                continue
            plan, _why = _plan(ctx, vr.assuming(facts), forest, dt, li, iv, pre)
            if plan is not None and plan.mode == "exit-rewrite":
                out.append((lp.header, iv.bound, iv.step))
                break
    return out


def _shape_ok(func: Func, forest: LoopForest, li: int, pre: Block) -> bool:
    lp = forest.loops[li]
    hdr = func.blocks[lp.header]
    if pre.terminator is not None or pre.fallthrough is not hdr:
        return False
    if len(lp.exits) != 1 or not func.blocks[lp.exits[0]].labels:
        return False
    last = func.blocks[-1]
    t = last.terminator
    if t is None or t.pred is not None or t.opcode not in ("ret", "exit", "bra", "trap"):
        return False
    blocks = sorted(lp.blocks)
    if blocks != list(range(blocks[0], blocks[0] + len(blocks))):
        return False  # not contiguous in the layout
    for b in blocks:
        blk = func.blocks[b]
        if blk.fallthrough is not None and b != blocks[-1] and blk.fallthrough.index != b + 1:
            return False
        if any(i.raw is not None for i in blk.insts):
            return False
    return True


def version_loop(
    func: Func, am: AnalysisManager, header: int, bound: Value | Imm, step: Value | Imm, k: int
) -> tuple[int, int] | None:
    """Copy the loop of ``header`` behind a range test; ``(new header index, added
    instructions)`` or ``None`` when its shape does not allow it."""
    from ptxopt.transforms.iv_demotion import _preheader

    forest = am.get(LoopForest, func)
    li = forest.loop_of[header]
    if li < 0 or forest.loops[li].header != header:
        return None
    pre = _preheader(func, forest, li)
    if pre is None or not _shape_ok(func, forest, li, pre):
        return None
    lp = forest.loops[li]
    inside = set(lp.blocks)
    exit_blk = func.blocks[lp.exits[0]]
    # values of the loop read after it other than through the exit block's phis
    defined: dict[int, Value] = {}
    for b in lp.blocks:
        blk = func.blocks[b]
        for phi in blk.phis:
            defined[phi.result.id] = phi.result
        for ins in blk.insts:
            for v in ins.result_values():
                defined[v.id] = v
    outside_uses: dict[int, list[Inst]] = {}
    for blk in func.blocks:
        if blk.index in inside:
            continue
        for phi in blk.phis:
            for p, v in zip(blk.preds, phi.incoming, strict=True):
                if v.id in defined and not (blk is exit_blk and p.index in inside):
                    return None
        for ins in blk.insts:
            for v in ins.operand_values():
                if v.id in defined:
                    outside_uses.setdefault(v.id, []).append(ins)
    if outside_uses and any(p.index not in inside for p in exit_blk.preds):
        return None
    # -- copy the blocks
    order = sorted(lp.blocks)
    bmap: dict[int, Block] = {}
    lab: dict[str, str] = {}
    for j, b in enumerate(order):
        nb = Block(len(func.blocks) + j, [f"$L__ivdemo_v{k}_{j}"])
        bmap[b] = nb
        for old in func.blocks[b].labels:
            lab[old] = nb.labels[0]
    vmap: dict[int, Value] = {}

    def m(v: Value) -> Value:
        return vmap.get(v.id, v)

    added = 0
    phis: list[tuple[Phi, Phi]] = []
    for b in lp.blocks:  # RPO: definitions before uses, except through phis
        blk, nb = func.blocks[b], bmap[b]
        for phi in blk.phis:
            np_ = func.new_phi(phi.result.var, phi.result.type, nb)
            vmap[phi.result.id] = np_.result
            nb.phis.append(np_)
            phis.append((phi, np_))
        for ins in blk.insts:
            ast = ins.ast
            if ins.is_terminator and ast.operands and isinstance(ast.operands[-1], Sym):
                tgt = ast.operands[-1].name
                if tgt in lab:
                    ops = list(ast.operands)
                    ops[-1] = Sym(lab[tgt])
                    ast = replace(ast, operands=ops)
            ni = Inst(ast, ins.info, [], [m(u) if isinstance(u, Value) else u for u in ins.uses])
            ni.pred = m(ins.pred) if ins.pred is not None else None
            ni.pred_neg = ins.pred_neg
            ni.loc = ins.loc
            ni.slot_names = list(ins.slot_names)
            ni.olds = [m(o) if o is not None else None for o in ins.olds] if ins.olds else None
            ni.carry_in = m(ins.carry_in) if ins.carry_in is not None else None
            ni.block = nb
            for d in ins.defs:
                nv = func.new_value(d.var, d.type, "inst", ni, nb)
                vmap[d.id] = nv
                ni.defs.append(nv)
            if ins.carry_out is not None:
                cv = func.new_value(ins.carry_out.var, ins.carry_out.type, "inst", ni, nb)
                vmap[ins.carry_out.id] = cv
                ni.carry_out = cv
            nb.insts.append(ni)
            added += 1
    # edges of the copy
    tail: Block | None = None
    new_exit_preds: list[tuple[Block, Block]] = []  # (new pred of exit, original pred)
    for b in order:
        blk, nb = func.blocks[b], bmap[b]
        for s in blk.succs:
            if s.index in inside:
                t = bmap[s.index]
                nb.succs.append(t)
                if blk.fallthrough is s:
                    nb.fallthrough = t
            elif blk.fallthrough is s:  # falls out of the loop: a block with a branch
                tail = Block(len(func.blocks) + len(order), [])
                br = make_inst(func, "bra", (".uni",), [], [Sym(s.labels[0])])
                br.block = tail
                tail.insts.append(br)
                added += 1
                nb.succs.append(tail)
                nb.fallthrough = tail
                tail.preds.append(nb)
                tail.succs.append(s)
                new_exit_preds.append((tail, blk))
            else:
                nb.succs.append(s)
                new_exit_preds.append((nb, blk))
    for b in order:
        for s in bmap[b].succs:
            if s is not tail and s is not exit_blk:
                s.preds.append(bmap[b])
    hdr = func.blocks[header]
    new_hdr = bmap[header]
    # the copy's header: its outside edge comes from the preheader
    new_hdr.preds = [pre if p is pre else bmap[p.index] for p in hdr.preds]
    for phi, np_ in phis:
        ob = phi.block
        nb = np_.block
        np_.incoming = []
        for p in nb.preds:
            op = pre if p is pre else next(q for q in ob.preds if bmap.get(q.index) is p)
            np_.incoming.append(m(phi.incoming[ob.preds.index(op)]))
    # the exit block
    for newp, oldp in new_exit_preds:
        exit_blk.preds.append(newp)
        j = exit_blk.preds.index(oldp)
        for phi in exit_blk.phis:
            phi.incoming.append(m(phi.incoming[j]))
    n_old = len(exit_blk.preds) - len(new_exit_preds)
    for vid, users in outside_uses.items():
        v = defined[vid]
        ephi = func.new_phi(v.var, v.type, exit_blk)
        ephi.incoming = [v] * n_old + [m(v)] * len(new_exit_preds)
        exit_blk.phis.append(ephi)
        for u in users:
            u.uses = [ephi.result if w is v else w for w in u.uses]
            if u.pred is v:
                u.pred = ephi.result
            if u.olds:
                u.olds = [ephi.result if o is v else o for o in u.olds]
    # the guard in the preheader
    oks: list[Value] = []
    for x in (bound, step):
        if isinstance(x, Imm):
            continue
        ok = make_inst(
            func,
            "setp",
            (".le", ".u64"),
            [fresh_var(func, ".pred", "%ivdemo_fits")],
            [x, Imm(U32_MAX, str(U32_MAX))],
        )
        insert_at_end(pre, ok)
        oks.append(ok.defs[0])
        added += 1
    while len(oks) > 1:
        a, b2 = oks.pop(), oks.pop()
        both = make_inst(
            func, "and", (".pred",), [fresh_var(func, ".pred", "%ivdemo_fits")], [a, b2]
        )
        insert_at_end(pre, both)
        oks.append(both.defs[0])
        added += 1
    if not oks:
        return None
    br = make_inst(func, "bra", (".uni",), [], [Sym(new_hdr.labels[0])], pred=oks[0])
    br.block = pre
    pre.insts.append(br)
    added += 1
    pre.succs = [new_hdr, hdr]
    pre.fallthrough = hdr
    func.blocks.extend(bmap[b] for b in order)
    if tail is not None:
        func.blocks.append(tail)
    func.renumber()
    return new_hdr.index, added


def version_loops(
    func: Func, am: AnalysisManager, *, level: int, stats: Counter[str], dump: int = 0
) -> dict[int, dict[int, Range]]:
    """Version every candidate loop of ``func``; per new header, the facts its
    guard establishes (value id -> range) for the demotion of the copy."""
    made: dict[int, dict[int, Range]] = {}
    vr = am.get(ValueRanges, func)
    facts: dict[int, Range] = {}
    for _h, bound, step in _candidates(func, am, level):
        for x in (bound, step):
            if isinstance(x, Value):
                facts[x.id] = vr.of(x, 64).refine_u(0, U32_MAX)
    cands = _candidates(func, am, level)
    for k, (header, bound, step) in enumerate(cands):
        mine = {x.id: facts[x.id] for x in (bound, step) if isinstance(x, Value)}
        # headers of earlier candidates keep their indices: copies are appended
        got = version_loop(func, am, header, bound, step, k)
        am.invalidate(func, frozenset())
        if got is None:
            continue
        new_hdr, added = got
        made[new_hdr] = mine
        stats["loops versioned"] += 1
        stats["versioning: instructions added"] += added
        if dump:
            label = func.blocks[header].labels[0] if func.blocks[header].labels else header
            print(
                f"remat-iv: {func.name} loop {label}: versioned behind a uniform "
                f"32-bit range test (+{added} PTX instructions)",
                file=sys.stderr,
            )
    return made
