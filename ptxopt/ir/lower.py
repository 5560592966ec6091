"""Lower SSA functions back to PTX text.

The register assignment and copies come from an SSA-destruction strategy
(:func:`ptxopt.ir.out_of_ssa.destruct` by default).  Copies of an edge are placed
before the predecessor's terminator, never in the join block; an edge is split
only when its predecessor has several successors and the edge carries copies (a
fall-through edge gets a block right after the predecessor, a branch edge a new
labelled block at the end of the function).  A terminator that reads a register
the copies overwrite reads a saved copy instead.  ``.loc`` lines are re-emitted
whenever the source location changes; register declarations are regenerated.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ptxopt.ir.core import CARRY, Block, Func, Inst, IRModule, Value
from ptxopt.ir.operands import rebuild
from ptxopt.ir.out_of_ssa import Assignment, Copy, destruct
from ptxopt.ir.parallel_copy import sequentialize
from ptxopt.ptx.ast import BranchTargets, DebugLoc, Imm, Instr, Reg, Sym
from ptxopt.ptx.parser import split_name
from ptxopt.ptx.printer import format_body, format_instr, format_loc, print_module
from ptxopt.ptx.types import reg_class

Destructor = Callable[[Func], Assignment]

_INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")


def _mov(dst: str, src: str | Imm, vtype: str) -> Instr:
    cls = reg_class(vtype)
    return Instr("mov", (f".{cls}",), [Reg(dst), src if isinstance(src, Imm) else Reg(src)])


class _Lowerer:
    def __init__(self, func: Func, asg: Assignment) -> None:
        self.func = func
        self.asg = asg
        self.lines: list[str] = []
        self.last_loc: tuple[int, int, int, str] | None = None
        self.seen_locs: set[tuple[int, int, int]] = set()
        self.temp_count = 0
        self.used_regs: dict[str, str] = {}
        self.split_count = 0
        self.tables = {st.name: st for st in func.head if isinstance(st, BranchTargets)}
        self.extra_tables: list[BranchTargets] = []
        self.label_block = {lab: b.index for b in func.blocks for lab in b.labels}

    def temp(self, vtype: str) -> str:
        while True:
            self.temp_count += 1
            name = f"%tmp_pc{self.temp_count}"
            if name not in self.func.reg_types and name not in self.asg.new_regs:
                break
        self.asg.new_regs[name] = vtype
        return name

    def emit_instr(self, ins: Instr, loc: DebugLoc | None) -> None:
        if loc is not None:
            key = (loc.file, loc.line, loc.col, loc.extra)
            if key != self.last_loc:
                for b in loc.before:
                    self.lines.append("\t" + format_loc(b))
                    self.seen_locs.add((b.file, b.line, b.col))
                self.emit_inlined_origin(loc)
                self.lines.append("\t" + format_loc(loc))
                self.seen_locs.add((loc.file, loc.line, loc.col))
                self.last_loc = key
        self.lines.append("\t" + format_instr(ins))

    def emit_inlined_origin(self, loc: DebugLoc) -> None:
        """ptxas wants the location an ``inlined_at`` names to appear in an earlier
        ``.loc``; when the instruction that carried it is gone (or shared its place
        with another ``.loc``), emit it bare right before: no instruction maps to it."""
        m = _INLINED_AT.search(loc.extra)
        if m is None:
            return
        where = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if where not in self.seen_locs:
            self.lines.append(f"\t.loc\t{where[0]} {where[1]} {where[2]}")
            self.seen_locs.add(where)

    def emit_copies(self, copies: list[Copy], loc: DebugLoc | None) -> None:
        for dst, src, t in sequentialize(copies, self.temp):
            self.emit_instr(_mov(dst, src, t), loc)

    def lower_inst(self, inst: Inst) -> Instr:
        reg = self.asg.reg.get
        names: list[str | Imm] = [reg(d.id, d.var) for d in inst.defs]
        names += [u if type(u) is Imm else reg(u.id, u.var) for u in inst.uses]  # type: ignore[union-attr]
        pred = inst.pred
        ast = inst.ast
        pred_name = reg(pred.id, pred.var) if pred is not None else None
        if names == inst.slot_names and (pred is None or pred_name == ast.pred.name):  # type: ignore[union-attr]
            return ast
        it = iter(names)
        info = inst.info
        assert info is not None
        defs = set(info.defs)
        ops = list(ast.operands)
        for k in info.defs:
            if k < len(ops):
                ops[k] = rebuild(ops[k], it)
        for k in info.uses:
            if k < len(ops) and k not in defs:
                ops[k] = rebuild(ops[k], it)
        new_pred = Reg(pred_name) if isinstance(pred_name, str) else ast.pred
        return Instr(ast.opcode, ast.mods, ops, new_pred, ast.pred_neg, ast.span)

    def run(self) -> list[str]:
        func = self.func
        asg = self.asg
        blocks = list(func.blocks)
        end_copies: dict[int, list[Copy]] = {}
        after: dict[int, list[Block]] = {}  # blocks to place right after a block
        tail: list[tuple[str, list[Copy], str]] = []  # split blocks at the end
        retarget: dict[tuple[int, int], str] = {}  # (pred, succ block) -> split label
        for bi, copies in asg.block_copies.items():
            end_copies.setdefault(bi, []).extend(copies)
        for (pi, si), copies in sorted(asg.edge_copies.items()):
            pred = func.blocks[pi]
            succ = func.blocks[si]
            if len(pred.succs) == 1:
                end_copies.setdefault(pi, []).extend(copies)
                continue
            self.split_count += 1
            if pred.fallthrough is succ:
                nb = Block(-1, [])
                after.setdefault(pi, []).append(nb)
                end_copies[id(nb)] = copies
            else:
                label = f"$L__ptxopt_edge{self.split_count}"
                target = succ.labels[0]
                tail.append((label, copies, target))
                retarget[(pi, si)] = label
        for b in blocks:
            self.emit_block(b, end_copies.get(b.index, []), retarget)
            for nb in after.get(b.index, []):
                self.emit_copies(end_copies[id(nb)], None)
        for label, copies, target in tail:
            self.lines.append(f"{label}:")
            self.emit_copies(copies, None)
            self.lines.append(f"\tbra.uni \t{target};")
        head_lines = format_body([*func.head, *self.extra_tables], 1)
        return head_lines + self.decl_lines() + self.lines

    def emit_block(
        self, b: Block, copies: list[Copy], retarget: dict[tuple[int, int], str]
    ) -> None:
        for lab in b.labels:
            self.lines.append(f"{lab}:")
        start = self.asg.start_copies.get(b.index)
        if start:
            self.emit_copies(start, None)
        insts = b.insts
        term = b.terminator
        body = insts[:-1] if term is not None else insts
        for inst in body:
            self.emit_inst(inst)
        if term is None:
            if copies:
                self.emit_copies(copies, insts[-1].loc if insts else None)
            return
        ast = term.ast if self.asg.identity else self.lower_inst(term)
        if copies:
            dests = {d for d, _s, _t in copies}
            ops = list(ast.operands)
            pred = ast.pred
            if pred is not None and pred.name in dests:
                t = self.temp(".pred")
                self.emit_instr(_mov(t, pred.name, ".pred"), term.loc)
                pred = Reg(t)
            for k, op in enumerate(ops):
                if isinstance(op, Reg) and op.name in dests:
                    vt = self.func.reg_types.get(op.name) or self.asg.new_regs.get(op.name, ".b32")
                    t = self.temp(vt)
                    self.emit_instr(_mov(t, op.name, vt), term.loc)
                    ops[k] = Reg(t)
            ast = Instr(ast.opcode, ast.mods, ops, pred, ast.pred_neg, ast.span)
            self.emit_copies(copies, term.loc)
        if retarget and ast.opcode == "bra":
            tgt = ast.operands[-1]
            if isinstance(tgt, Sym):
                key = (b.index, self.label_block.get(tgt.name, -1))
                if key in retarget:
                    ops = list(ast.operands)
                    ops[-1] = Sym(retarget[key])
                    ast = Instr(ast.opcode, ast.mods, ops, ast.pred, ast.pred_neg, ast.span)
        if retarget and ast.opcode == "brx":
            tbl = ast.operands[-1]
            if isinstance(tbl, Sym) and tbl.name in self.tables:
                labels = self.tables[tbl.name].labels
                keys = [(b.index, self.label_block.get(lab, -1)) for lab in labels]
                if any(k in retarget for k in keys):
                    # this branch's own copy of the table, pointing at the split blocks
                    name = f"{tbl.name}_ptxopt{len(self.extra_tables) + 1}"
                    new = [retarget.get(k, lab) for k, lab in zip(keys, labels, strict=True)]
                    self.extra_tables.append(BranchTargets(name, new))
                    ops = list(ast.operands)
                    ops[-1] = Sym(name)
                    ast = Instr(ast.opcode, ast.mods, ops, ast.pred, ast.pred_neg, ast.span)
        self.emit_instr(ast, term.loc)

    def emit_inst(self, inst: Inst) -> None:
        if inst.raw is not None:
            self.lines.append("\t" + inst.raw)
            return
        tie = self.asg.tie_copies.get(id(inst))
        if tie:
            self.emit_copies(tie, inst.loc)
        if self.asg.drop and id(inst) in self.asg.drop:
            return
        self.emit_instr(inst.ast if self.asg.identity else self.lower_inst(inst), inst.loc)

    def decl_lines(self) -> list[str]:
        func = self.func
        asg = self.asg
        used: dict[str, str] = {}
        types = func.reg_types
        reg = asg.reg.get
        new_regs = asg.new_regs

        values: list[Value] = list(func.params)
        for b in func.blocks:
            for phi in b.phis:
                values.append(phi.result)
            for inst in b.insts:
                values.extend(inst.defs)
        # the first value of each register name
        firsts: dict[str, Value] = {}
        if asg.reg:
            for v in values:
                name = reg(v.id, v.var)
                if name not in firsts:
                    firsts[name] = v
        else:
            for v in values:
                name = v.var
                if name not in firsts:
                    firsts[name] = v
        firsts.pop(CARRY, None)
        plain_get = dict.get  # a name lifting entered; RegTypes.get for the others
        for name, v in firsts.items():
            used[name] = plain_get(types, name) or types.get(name) or new_regs.get(name) or v.type
        for u in func.undefs.values():  # registers read before any write
            if u.var != CARRY:
                used.setdefault(u.var, types.get(u.var, u.type))
        for name, t in asg.new_regs.items():
            used.setdefault(name, t)
        params = {p.name for p in func.ast.params + func.ast.rets if p.space == ".reg"}
        by_type: dict[str, dict[str, list[int]]] = {}
        singles: dict[str, list[str]] = {}
        # names with a zero-padded index (%rd04): registers of their own, but inside
        # a range %rd<N> with N > 4 ptxas counts them as declared by it
        padded: dict[str, list[tuple[int, str, str]]] = {}
        for name in sorted(used):
            if name in params:
                continue
            t = used[name]
            stem, index = split_name(name)  # the name is stem + decimal index
            k = len(stem)
            if index >= 0 and (k + 1 == len(name) or name[k] != "0"):
                by_type.setdefault(t, {}).setdefault(stem, []).append(index)
            else:
                singles.setdefault(t, []).append(name)
                if index >= 0:
                    padded.setdefault(stem, []).append((index, t, name))
        stem_types: dict[str, int] = {}
        for stems in by_type.values():
            for stem in stems:
                stem_types[stem] = stem_types.get(stem, 0) + 1
        covered: set[str] = set()  # padded names a printed range declares
        ranges: dict[tuple[str, str], int] = {}  # (type, stem) -> count
        for t, stems in by_type.items():
            for stem, nums in stems.items():
                count = max(nums) + 1
                inside = [(t2, n) for k, t2, n in padded.get(stem, ()) if k < count]
                if (
                    len(nums) * 2 >= count
                    and stem_types[stem] == 1
                    and all(t2 == t for t2, _ in inside)
                ):
                    ranges[t, stem] = count
                    covered.update(n for _, n in inside)
        out: list[str] = []
        order = sorted(set(by_type) | set(singles), key=_type_rank)
        for t in order:
            parts: list[str] = []
            for stem, nums in sorted(by_type.get(t, {}).items()):
                count = ranges.get((t, stem), 0)
                if count:
                    parts.append(f"{stem}<{count}>")
                else:
                    parts.extend(f"{stem}{k}" for k in sorted(nums))
            parts.extend(n for n in singles.get(t, []) if n not in covered)
            if parts:
                out.append(f"\t.reg {t} {', '.join(parts)};")
        return out


_RANK = {".pred": 0, ".b16": 1, ".b32": 2, ".f32": 3, ".b64": 4, ".f64": 5}


def _type_rank(t: str) -> tuple[int, str]:
    return (_RANK.get(t, 10), t)


def lower_function(func: Func, destructor: Destructor = destruct) -> list[str]:
    """Body lines (between the braces) of ``func``."""
    asg = destructor(func)
    return _Lowerer(func, asg).run()


def print_ir_module(mod: IRModule, destructor: Destructor = destruct) -> str:
    bodies = {id(f.ast): lower_function(f, destructor) for f in mod.funcs}
    return print_module(mod.ast, bodies)
