"""Pre-decoding of a PTX module for the SIMT interpreter.

Every function body is flattened into one program-wide instruction array (a global
``pc`` space shared by all functions so that calls are jumps).  Nested ``{ }`` scopes
are resolved here: each register, scope-local variable (``.param`` call slots,
``.local`` and ``.shared`` arrays), label and branch-target table gets a unique key,
so shadowing needs no run-time work and a branch reaches the label its block sees.

For each function the basic blocks and their successors are built, the
post-dominator tree is computed (:mod:`ptxopt.analysis.postdominators`, with a
virtual exit), and every branch gets its *reconvergence pc*: the first instruction
of the immediate post-dominator of its block, or ``-1`` when that is the virtual exit.

Frame layout of a function (per thread, in the ``.local`` window, relative to the
thread's frame pointer): return values, then parameters, then ``.local`` variables
of the body and of its scopes, then the ``.param`` slots declared in its scopes (the
argument and result slots of the calls it makes), each aligned to its natural
alignment; the frame size is rounded up to 16 bytes.

The interpreter works from the AST on purpose and shares no code with the lifter
(:mod:`ptxopt.ir.lift`), which flattens scopes too: it is the oracle that checks the
lifter and every pass by execution, so a bug there must not hide itself here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt.analysis.postdominators import PostDomTree
from ptxopt.ptx.ast import (
    Addr,
    BranchTargets,
    Function,
    Instr,
    Label,
    Module,
    Not,
    Operand,
    Pair,
    ParenList,
    Reg,
    RegDecl,
    RegImm,
    Scope,
    Sel,
    Stmt,
    Sym,
    VarDecl,
    Vec,
)
from ptxopt.ptx.parser import range_lookup
from ptxopt.sim.errors import SimError

TYPE_BITS: dict[str, int] = {
    ".pred": 1,
    ".b8": 8,
    ".u8": 8,
    ".s8": 8,
    ".b16": 16,
    ".u16": 16,
    ".s16": 16,
    ".f16": 16,
    ".bf16": 16,
    ".b32": 32,
    ".u32": 32,
    ".s32": 32,
    ".f32": 32,
    ".f16x2": 32,
    ".bf16x2": 32,
    ".u16x2": 32,
    ".s16x2": 32,
    ".tf32": 32,
    ".b64": 64,
    ".u64": 64,
    ".s64": 64,
    ".f64": 64,
    ".b128": 128,
}

TERMINATORS = frozenset({"bra", "brx", "ret", "exit", "trap"})


def type_bytes(t: str) -> int:
    bits = TYPE_BITS.get(t)
    if bits is None:
        raise KeyError(t)
    return max(1, bits // 8)


@dataclass(slots=True)
class VarInfo:
    """A variable with storage: where it lives and its byte size/alignment."""

    name: str
    space: str  # ".global" ".const" ".shared" ".local" ".param" (frame) ".kparam"
    size: int
    align: int
    offset: int = 0  # frame offset (.local/.param in functions), shared offset, or address
    decl: VarDecl | None = None


@dataclass(slots=True)
class FuncInfo:
    name: str
    fn: Function
    index: int
    start: int = 0
    end: int = 0
    labels: dict[str, int] = field(default_factory=dict)
    regs: dict[str, str] = field(default_factory=dict)  # unique name -> PTX type
    vars: dict[str, VarInfo] = field(default_factory=dict)  # unique symbol -> storage
    params: list[VarInfo] = field(default_factory=list)
    rets: list[VarInfo] = field(default_factory=list)
    frame_size: int = 0
    recursive: bool = False
    callees: set[str] = field(default_factory=set)
    indirect_calls: bool = False
    branch_tables: dict[str, list[str]] = field(default_factory=dict)

    @property
    def is_entry(self) -> bool:
        return self.fn.is_entry


@dataclass(slots=True)
class Program:
    module: Module
    instrs: list[Instr] = field(default_factory=list)
    owner: list[FuncInfo] = field(default_factory=list)  # function of each pc
    funcs: dict[str, FuncInfo] = field(default_factory=dict)
    reconv: dict[int, int] = field(default_factory=dict)  # branch pc -> reconvergence pc
    is_reconv: list[bool] = field(default_factory=list)
    address_taken: set[str] = field(default_factory=set)


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def var_size(v: VarDecl) -> tuple[int, int]:
    """Byte size and alignment of a variable declaration."""
    el = type_bytes(v.type)
    if v.vector:
        el *= int(v.vector[2:])
    n = 1
    for k, d in enumerate(v.dims):
        if not d and k == 0 and v.init is not None:
            from ptxopt.ptx.initializer import first_dim

            d = first_dim(v.init)  # x[] = {1, 2, 3}: three elements
        n *= d if d is not None else 0
    align = v.align or el
    return el * n, align


def _param_size(p: object) -> tuple[int, int]:
    from ptxopt.ptx.ast import Param

    assert isinstance(p, Param)
    el = type_bytes(p.type)
    n = 1
    for d in p.dims:
        n *= d if d is not None else 0
    return el * n, p.align or el


class _Flattener:
    """Scoped names of one function body resolved to unique keys.

    A block's labels and branch-target tables are visible in the whole block (a
    branch may jump ahead), its registers and variables from their declaration on;
    lookups go from the innermost block outwards.  Names of the body itself keep
    their spelling (registers get the function name as prefix), names of nested
    blocks get ``#n`` with the block's number, so a label of a nested block can
    never be reached from outside it.
    """

    def __init__(self, prog: Program, info: FuncInfo) -> None:
        self.prog = prog
        self.info = info
        self.scopes: list[dict[str, str]] = []
        self.ranges: list[dict[str, tuple[int, str]]] = []  # per scope: stem -> (count, type)
        self.suffixes: list[str] = []
        self.nscope = 0
        self.frame_vars: list[VarInfo] = []
        self.ret_stores: list[Instr] = []

    def lookup(self, name: str) -> str:
        for k in range(len(self.scopes) - 1, -1, -1):
            sc = self.scopes[k]
            if name in sc:
                return sc[name]
            ranges = self.ranges[k]
            if ranges:
                t = range_lookup(ranges, name)
                if t is not None:
                    # a register of a range %r<N>: allocated on first use
                    u = f"{self.info.name}::{name}{self.suffixes[k]}"
                    sc[name] = u
                    self.info.regs[u] = t
                    return u
        return name

    def suffix(self) -> str:
        return self.suffixes[-1]

    def declare_labels(self, stmts: list[Stmt]) -> None:
        sc = self.scopes[-1]
        suffix = self.suffix()
        for s in stmts:
            if isinstance(s, Label | BranchTargets):
                if s.name in sc:
                    raise SimError(s.span, f"label {s.name!r} defined twice in one block")
                sc[s.name] = s.name + suffix

    def declare_regs(self, d: RegDecl) -> None:
        sc = self.scopes[-1]
        suffix = self.suffix()
        fname = self.info.name
        if d.vector:
            raise SimError(d.span, f"vector register declarations ({d.vector}) are unsupported")
        for nm, cnt in d.names:
            if cnt is not None:
                self.ranges[-1][nm] = (cnt, d.type)
                continue
            u = f"{fname}::{nm}{suffix}"
            sc[nm] = u
            self.info.regs[u] = d.type

    def declare_var(self, v: VarDecl) -> None:
        size, align = var_size(v)
        sc = self.scopes[-1]
        if v.space in (".local", ".param"):
            u = v.name + self.suffix()
            sc[v.name] = u
            vi = VarInfo(u, v.space, size, align, decl=v)
            self.info.vars[u] = vi
            self.frame_vars.append(vi)
        elif v.space in (".shared", ".global", ".const"):
            # function-scope static variables behave like module variables
            u = f"{self.info.name}::{v.name}{self.suffix()}"
            sc[v.name] = u
            self.info.vars[u] = VarInfo(u, v.space, size, align, decl=v)
        else:
            raise SimError(v.span, f"variables in state space {v.space} are unsupported")

    def operand(self, op: Operand) -> Operand:
        if isinstance(op, Reg):
            u = self.lookup(op.name)
            return op if u == op.name else Reg(u)
        if isinstance(op, Sym):
            u = self.lookup(op.name)
            return op if u == op.name else Sym(u)
        if isinstance(op, Not):
            r = self.operand(op.operand)
            assert isinstance(r, Reg)
            return Not(r)
        if isinstance(op, Sel):
            r = self.operand(op.reg)
            assert isinstance(r, Reg)
            return Sel(r, op.sel, op.neg)
        if isinstance(op, RegImm):
            r = self.operand(op.reg)
            assert isinstance(r, Reg)
            return RegImm(r, op.offset)
        if isinstance(op, Vec):
            return Vec(tuple(self.operand(e) for e in op.elems))
        if isinstance(op, Pair):
            return Pair(self.operand(op.first), self.operand(op.second))
        if isinstance(op, Addr):
            base = self.operand(op.base) if op.base is not None else None
            return Addr(base, op.offset, tuple(self.operand(e) for e in op.extra), op.plus_zero)
        if isinstance(op, ParenList):
            return ParenList(tuple(self.operand(e) for e in op.items))
        return op

    def reg_params(self, fn: Function) -> None:
        """``.reg`` parameters live in registers of the callee; they are passed through
        frame slots like ``.param`` ones: loaded into their registers on entry and
        stored from them before each ``ret`` (see :meth:`emit`)."""
        regs = [p for p in fn.params + fn.rets if p.space == ".reg"]
        if not regs:
            return
        self.scopes.append({})
        self.ranges.append({})
        self.suffixes.append("")
        for p in regs:
            if p.type == ".pred":
                raise SimError(p.span, ".reg .pred parameters are unsupported")
            u = f"{self.info.name}::{p.name}"
            self.scopes[0][p.name] = u
            self.info.regs[u] = p.type
        for p in fn.params:
            if p.space == ".reg":
                bits = f".b{type_bytes(p.type) * 8}"
                self.emit_raw(
                    Instr(
                        "ld",
                        (".param", bits),
                        [Reg(f"{self.info.name}::{p.name}"), Addr(Sym(_slot_name(p)))],
                        span=p.span,
                    )
                )
        self.ret_stores = [
            Instr(
                "st",
                (".param", f".b{type_bytes(p.type) * 8}"),
                [Addr(Sym(_slot_name(p))), Reg(f"{self.info.name}::{p.name}")],
                span=p.span,
            )
            for p in fn.rets
            if p.space == ".reg"
        ]

    def emit_raw(self, ins: Instr) -> None:
        self.prog.instrs.append(ins)
        self.prog.owner.append(self.info)

    def emit(self, ins: Instr) -> None:
        """Append ``ins`` (operands already resolved); a call passing registers to
        ``.reg`` parameters goes through frame slots of the caller."""
        if ins.opcode == "ret" and self.ret_stores:
            for st in self.ret_stores:
                self.emit_raw(
                    Instr(st.opcode, st.mods, st.operands, ins.pred, ins.pred_neg, ins.span)
                )
        if ins.opcode != "call" or not any(
            isinstance(o, ParenList) and any(not isinstance(e, Sym) for e in o.items)
            for o in ins.operands
        ):
            self.emit_raw(ins)
            return
        ops = list(ins.operands)
        target = next(o for o in ops if not isinstance(o, ParenList))
        try:
            callee = self.prog.module.function(target.name) if isinstance(target, Sym) else None
        except KeyError:
            callee = None
        if callee is None:
            raise SimError(ins.span, "registers passed to an unknown or indirect callee")
        after: list[Instr] = []
        for k, o in enumerate(ops):
            if not isinstance(o, ParenList):
                continue
            is_ret = k == 0 and len(ops) > 1
            formals = callee.rets if is_ret else callee.params
            items = []
            for j, e in enumerate(o.items):
                if isinstance(e, Sym) or j >= len(formals):
                    items.append(e)
                    continue
                nbytes = type_bytes(formals[j].type)
                bits = (f".b{nbytes * 8}",)
                name = f"%callslot#{len(self.frame_vars)}"
                vi = VarInfo(name, ".param", nbytes, nbytes)
                self.info.vars[name] = vi
                self.frame_vars.append(vi)
                slot = Addr(Sym(name))
                items.append(Sym(name))
                if is_ret:
                    after.append(Instr("ld", (".param", *bits), [e, slot], span=ins.span))
                else:
                    st = Instr("st", (".param", *bits), [slot, e], ins.pred, ins.pred_neg, ins.span)
                    self.emit_raw(st)
            ops[k] = ParenList(tuple(items))
        self.emit_raw(Instr(ins.opcode, ins.mods, ops, ins.pred, ins.pred_neg, ins.span))
        for a in after:
            self.emit_raw(Instr(a.opcode, a.mods, a.operands, ins.pred, ins.pred_neg, ins.span))

    def body(self, stmts: list[Stmt], top: bool) -> None:
        self.scopes.append({})
        self.ranges.append({})
        if not top:
            self.nscope += 1
        self.suffixes.append("" if top else f"#{self.nscope}")
        self.declare_labels(stmts)
        for s in stmts:
            if isinstance(s, RegDecl):
                self.declare_regs(s)
            elif isinstance(s, VarDecl):
                self.declare_var(s)
            elif isinstance(s, Instr):
                pred = s.pred
                if pred is not None:
                    r = self.operand(pred)
                    assert isinstance(r, Reg)
                    pred = r
                ni = Instr(
                    s.opcode,
                    s.mods,
                    [self.operand(o) for o in s.operands],
                    pred,
                    s.pred_neg,
                    s.span,
                )
                self.emit(ni)
            elif isinstance(s, Label):
                self.info.labels[self.lookup(s.name)] = len(self.prog.instrs)
            elif isinstance(s, Scope):
                self.body(s.body, False)
            elif isinstance(s, BranchTargets):
                self.info.branch_tables[self.lookup(s.name)] = [
                    self.lookup(lab) for lab in s.labels
                ]
        self.scopes.pop()
        self.ranges.pop()
        self.suffixes.pop()


def _slot_name(p: object) -> str:
    """The frame slot of a parameter: its own name, or for a ``.reg`` parameter a
    name no PTX symbol can have (the register keeps the parameter's name)."""
    from ptxopt.ptx.ast import Param

    assert isinstance(p, Param)
    return f"%regparam#{p.name}" if p.space == ".reg" else p.name


def _layout_frame(info: FuncInfo, frame_vars: list[VarInfo]) -> None:
    off = 0
    for vi in info.rets + info.params + frame_vars:
        off = _align(off, max(vi.align, 1))
        vi.offset = off
        off += vi.size
    info.frame_size = _align(off, 16)


def build_program(module: Module) -> Program:
    prog = Program(module)
    defs: list[Function] = []
    seen: set[str] = set()
    for fn in module.functions:
        if fn.body is not None and fn.name not in seen:
            seen.add(fn.name)
            defs.append(fn)
    for i, fn in enumerate(defs):
        info = FuncInfo(fn.name, fn, i)
        prog.funcs[fn.name] = info
        info.start = len(prog.instrs)
        fl = _Flattener(prog, info)
        space = ".kparam" if fn.is_entry else ".param"
        for p in fn.rets:
            size, align = _param_size(p)
            vi = VarInfo(_slot_name(p), space, size, align)
            info.rets.append(vi)
            info.vars[vi.name] = vi
        for p in fn.params:
            size, align = _param_size(p)
            vi = VarInfo(_slot_name(p), space, size, align)
            info.params.append(vi)
            info.vars[vi.name] = vi
        assert fn.body is not None
        fl.reg_params(fn)
        fl.body(fn.body, True)
        # falling off the end of a body returns (an implicit, usually unreachable, ret)
        prog.instrs.append(Instr("ret", (), [], span=fn.span))
        prog.owner.append(info)
        info.end = len(prog.instrs)
        if fn.is_entry:
            off = 0
            for vi in info.params:
                off = _align(off, max(vi.align, 1))
                vi.offset = off
                off += vi.size
            _layout_frame_entry(info, fl.frame_vars)
        else:
            _layout_frame(info, fl.frame_vars)
    prog.is_reconv = [False] * (len(prog.instrs) + 1)
    for info in prog.funcs.values():
        _scan_calls(prog, info)
        _reconvergence(prog, info)
    _mark_recursion(prog)
    return prog


def _layout_frame_entry(info: FuncInfo, frame_vars: list[VarInfo]) -> None:
    off = 0
    for vi in frame_vars:
        off = _align(off, max(vi.align, 1))
        vi.offset = off
        off += vi.size
    info.frame_size = _align(off, 16)


def _scan_calls(prog: Program, info: FuncInfo) -> None:
    for pc in range(info.start, info.end):
        ins = prog.instrs[pc]
        if ins.opcode == "call":
            tgt = _call_target(ins)
            if isinstance(tgt, Sym):
                info.callees.add(tgt.name)
            else:
                info.indirect_calls = True
        for op in ins.operands:
            if isinstance(op, Sym) and op.name in prog.funcs:
                if ins.opcode in ("mov", "cvta"):
                    prog.address_taken.add(op.name)
                elif ins.opcode != "call":
                    # ptxas accepts this and reads the name as 0 (measured on sm_80);
                    # no PTX semantics stand behind that, so it is refused here
                    raise SimError(ins.span, f"the function '{op.name}' as a value of '{ins.name}'")


def _call_target(ins: Instr) -> Operand:
    for op in ins.operands:
        if not isinstance(op, ParenList):
            return op
    raise SimError(ins.span, "call without a target")


def _mark_recursion(prog: Program) -> None:
    graph: dict[str, set[str]] = {}
    for name, info in prog.funcs.items():
        out = {c for c in info.callees if c in prog.funcs}
        if info.indirect_calls:
            out |= prog.address_taken
        graph[name] = out
    for name, info in prog.funcs.items():
        # reachable from itself?
        stack = list(graph[name])
        seen: set[str] = set()
        while stack:
            u = stack.pop()
            if u == name:
                info.recursive = True
                break
            if u in seen:
                continue
            seen.add(u)
            stack.extend(graph.get(u, ()))


def _reconvergence(prog: Program, info: FuncInfo) -> None:
    start, end = info.start, info.end
    if start == end:
        return
    leaders = {start}
    for pc in info.labels.values():
        if start <= pc < end:
            leaders.add(pc)
    for pc in range(start, end):
        if prog.instrs[pc].opcode in TERMINATORS and pc + 1 < end:
            leaders.add(pc + 1)
    starts = sorted(leaders)
    block_of: dict[int, int] = {s: i for i, s in enumerate(starts)}
    succs: list[list[int]] = []
    for i, _s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else end
        last = prog.instrs[e - 1]
        out: list[int] = []
        guarded = last.pred is not None
        if last.opcode == "bra":
            out.append(block_of[_label_pc(prog, info, last, _branch_label(last))])
            if guarded and e < end:
                out.append(block_of[e])
        elif last.opcode == "brx":
            for lab in _brx_labels(info, last):
                out.append(block_of[_label_pc(prog, info, last, lab)])
            if guarded and e < end:
                out.append(block_of[e])
        elif last.opcode in ("ret", "exit", "trap"):
            if guarded and e < end:
                out.append(block_of[e])
        elif e < end:
            out.append(block_of[e])
        succs.append(sorted(set(out)))
    pdt = PostDomTree.build(succs, 0)
    ipdom = pdt.ipdom
    n = len(starts)
    for i, _s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else end
        last = prog.instrs[e - 1]
        if last.opcode in ("bra", "brx", "ret", "exit", "trap", "call"):
            p = ipdom[i]
            rpc = -1 if p >= n else starts[p]
            prog.reconv[e - 1] = rpc
            if rpc >= 0:
                prog.is_reconv[rpc] = True


def _branch_label(ins: Instr) -> str:
    for op in ins.operands:
        if isinstance(op, Sym):
            return op.name
    raise SimError(ins.span, "branch without a label")


def _brx_labels(info: FuncInfo, ins: Instr) -> list[str]:
    tab = ins.operands[1] if len(ins.operands) > 1 else None
    if isinstance(tab, Sym) and tab.name in info.branch_tables:
        return info.branch_tables[tab.name]
    raise SimError(ins.span, "brx.idx needs a .branchtargets table declared in the function")


def _label_pc(prog: Program, info: FuncInfo, ins: Instr, name: str) -> int:
    pc = info.labels.get(name)
    if pc is None:
        raise SimError(ins.span, f"unknown label {name!r}")
    return pc
