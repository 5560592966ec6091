"""PTX instruction -> SASS instruction class, and register webs (spec 02, phase 74 input).

ptxas builds one virtual register per PTX register, whatever the number of writes, so
the unit a register file is chosen for is the *web*: all SSA values of one PTX register
(after scope renaming) of one function.  :func:`sass_class` names the SASS class a PTX
instruction becomes (the class ptxas's opcode table would give it: ``add.s32`` ->
``IADD3``, ``mul.wide.u32`` -> ``IMAD``, ``setp.lt.f32`` -> ``FSETP`` ...); the
capability of each class is :mod:`ptxopt.ori.capability`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ptxopt.ir.core import Func, Inst, Value

__all__ = [
    "Scan",
    "Use",
    "Web",
    "build_webs",
    "is_pred_type",
    "record_reads",
    "reg_count",
    "sass_class",
    "scan",
]

_INT = ("s", "u", "b")
_UNIFORM_SPECIAL = ("%ctaid", "%clusterid", "%cluster_ctaid", "%cluster_nctaid", "%gridid")
_CONST_SPECIAL = ("%ntid", "%nctaid", "%nclusterid", "%cluster_nctarank")


def _is_int(t: str | None) -> bool:
    return t is not None and t[1:2] in _INT and t != ".pred"


def _is_float(t: str | None) -> bool:
    return t is not None and (t.startswith(".f") or t.startswith(".bf") or t == ".tf32")


def is_pred_type(t: str) -> bool:
    return t == ".pred"


def reg_count(t: str) -> int:
    """32-bit registers a value of PTX type ``t`` occupies (predicates: 1 predicate)."""
    if t == ".pred":
        return 1
    digits = "".join(ch for ch in t if ch.isdigit())
    bits = int(digits) if digits else 32
    return max(1, bits // 32)


_SIMPLE = {
    "and": "LOP3",
    "or": "LOP3",
    "xor": "LOP3",
    "not": "LOP3",
    "cnot": "LOP3",
    "lop3": "LOP3",
    "shl": "SHF",
    "shr": "SHF",
    "shf": "SHF",
    "prmt": "PRMT",
    "popc": "POPC",
    "brev": "BREV",
    "clz": "FLO",
    "bfind": "FLO",
    "bmsk": "LOP3",
    "bfi": "LOP3",
    "szext": "SGXT",
    "shfl": "SHFL",
    "bar": "BAR",
    "barrier": "BAR",
    "bra": "BRA",
    "brx": "BRA",
    "call": "CALL",
    "ret": "BRA",
    "exit": "BRA",
    "rcp": "MUFU",
    "sqrt": "MUFU",
    "rsqrt": "MUFU",
    "ex2": "MUFU",
    "lg2": "MUFU",
    "sin": "MUFU",
    "cos": "MUFU",
    "tanh": "MUFU",
}


def sass_class(inst: Inst) -> str:
    """The SASS class ``inst`` lowers to (``OTHER`` for what has no row of its own)."""
    info = inst.info
    if info is None:
        return "OTHER"
    name = info.name
    t = info.type
    if name in _SIMPLE:
        if name in ("and", "or", "xor", "not") and t == ".pred":
            return "PLOP3"
        return _SIMPLE[name]
    if name in ("add", "sub", "addc", "subc", "neg"):
        if _is_float(t):
            return "DFMA" if t == ".f64" else "FADD"
        return "IADD3"
    if name in ("mul", "mad", "madc", "mul24", "mad24"):
        if _is_float(t):
            return "DFMA" if t == ".f64" else ("FMUL" if name == "mul" else "FFMA")
        return "IMAD"
    if name == "fma":
        return "DFMA" if t == ".f64" else "FFMA"
    if name in ("min", "max"):
        return "FMNMX" if _is_float(t) else "IMNMX"
    if name == "abs":
        return "FADD" if _is_float(t) else "IABS"
    if name in ("div", "rem"):
        return "MUFU" if _is_float(t) else "OTHER"
    if name == "selp":
        return "SEL"
    if name in ("setp", "set"):
        return "FSETP" if any(_is_float(x) for x in info.types) else "ISETP"
    if name == "bfe":
        return "SGXT" if t is not None and t.startswith(".s") else "SHF"
    if name == "cvt":
        ts = info.types
        if any(_is_float(x) for x in ts):
            if all(_is_float(x) for x in ts):
                return "F2F"
            return "I2F" if _is_float(ts[0]) else "F2I"
        if len(ts) == 2 and ts[1].startswith(".s") and reg_count(ts[0]) >= reg_count(ts[1]):
            return "SGXT"
        return "MOV" if len(ts) == 2 and reg_count(ts[1]) == 2 else "PRMT"
    if name == "cvta":
        return "IADD3"
    if name == "mov":
        return _mov_class(inst)
    if name in ("ld", "ldu"):
        sp = info.space
        if sp in (".param", ".const"):
            return "LDC"
        return {".shared": "LDS", ".global": "LDG", ".local": "LDL"}.get(sp or "", "LD")
    if name == "st":
        sp = info.space
        if sp == ".param":
            return "MOV"  # an outgoing call argument: a copy into the ABI register
        return {".shared": "STS", ".global": "STG", ".local": "STL"}.get(sp or "", "ST")
    if name in ("atom", "red"):
        return "ATOMS" if info.space == ".shared" else "ATOMG"
    if name in ("vote", "activemask", "redux", "elect"):
        return "VOTE"
    if name.startswith("mbarrier"):
        return "SYNCS"
    if name == "mapa" and info.space == ".shared::cluster" and reg_count(t or ".u32") == 1:
        # the rank goes into the address's top byte: PRMT R, R_rank, 0x654, R_addr
        return "PRMT"
    if name.startswith(("mma", "wmma", "wgmma", "ldmatrix", "stmatrix", "cp")):
        return "MMA"
    return "OTHER"


def _mov_class(inst: Inst) -> str:
    ops = inst.ast.operands
    src = ops[1] if len(ops) > 1 else None
    text = getattr(src, "name", "")
    if isinstance(text, str) and text.startswith("%"):
        base = text.split(".")[0]
        if base in _UNIFORM_SPECIAL:
            return "S2R"
        if base in _CONST_SPECIAL:
            return "LDC"
        if inst.uses and isinstance(inst.uses[0], Value) and inst.uses[0].kind == "special":
            return "S2R"
    return "MOV"


@dataclass(slots=True)
class Use:
    """One read of a web: instruction, index into ``inst.uses`` (-1: the guard
    predicate, -2: a tied old value or carry), and whether the slot is an address."""

    inst: Inst
    slot: int
    address: bool


@dataclass(slots=True)
class Web:
    """All SSA values of one PTX register in one function."""

    name: str
    type: str
    values: list[Value] = field(default_factory=list)
    defs: list[Inst] = field(default_factory=list)
    uses: list[Use] = field(default_factory=list)
    phis: int = 0

    @property
    def is_pred(self) -> bool:
        return self.type == ".pred"

    @property
    def width(self) -> int:
        return reg_count(self.type)


def _addr_slots(inst: Inst) -> set[int]:
    from ptxopt.ir.operands import regs_of

    info = inst.info
    if info is None or not info.addrs:
        return set()
    ops = inst.ast.operands
    out: set[int] = set()
    k = 0
    for i in info.uses:
        if i in info.defs or i >= len(ops):
            continue
        cnt = sum(1 for _ in regs_of(ops[i]))
        if i in info.addrs:
            out.update(range(k, k + cnt))
        k += cnt
    return out


_NOT_A_WEB = "special"  # the one value kind that belongs to no register web
_COPIES = ("LDC", "MOV")


@dataclass(slots=True)
class Scan:
    """One sweep over a function: its webs with their values and writes (no reads yet,
    see :func:`record_reads`), each instruction's program point and SASS class, and
    per-web facts gathered on the way.  ``webs`` are in the order of their first
    parameter, phi, write or undefined read."""

    webs: dict[str, Web]
    pos: dict[int, int]  # id(inst) -> program point
    cls: dict[int, str]  # id(inst) -> SASS class
    n: int  # instructions
    varying: set[str]  # webs with a value the given divergence vector marks varying
    not_written: set[str]  # webs with a parameter or undefined value
    copies: set[str]  # webs with a write that is an LDC, a MOV or a cvta.to.global
    specials: set[str]  # webs with a write of class S2R


def _is_cvta_global(ins: Inst) -> bool:
    """``cvta.to.global`` (class IADD3): the identity of the generic window."""
    return ins.ast.opcode == "cvta" and ins.ast.name.startswith("cvta.to.global")


def scan(func: Func, varying: bytearray | None = None) -> Scan:
    """The first sweep (see :class:`Scan`).  The class of every instruction but a
    ``mov`` depends on its opcode form alone and is computed once per form."""
    webs: dict[str, Web] = {}
    get = webs.get
    pos: dict[int, int] = {}
    cls: dict[int, str] = {}
    memo: dict[int, str] = {}
    vary = varying if varying is not None else bytearray()
    nv = len(vary)
    out = Scan(webs, pos, cls, 0, set(), set(), set(), set())
    vary_set, not_written, copies, specials = out.varying, out.not_written, out.copies, out.specials

    def add(v: Value) -> Web:
        w = get(v.var)
        if w is None:
            w = webs[v.var] = Web(v.var, v.type)
        w.values.append(v)
        if v.id < nv and vary[v.id]:
            vary_set.add(v.var)
        if v.kind in ("param", "undef"):
            not_written.add(v.var)
        return w

    for v in func.params:
        if v.kind != _NOT_A_WEB:
            add(v)
    undefs = bool(func.undefs)
    n = 0
    for b in func.blocks:
        for phi in b.phis:
            if phi.result.kind != _NOT_A_WEB:
                add(phi.result).phis += 1
        for ins in b.insts:
            k = id(ins)
            pos[k] = n
            n += 1
            info = ins.info
            if info is None or info.name == "mov":
                c = sass_class(ins)
            else:
                hit = memo.get(id(info))
                if hit is None:
                    hit = memo[id(info)] = sass_class(ins)
                c = hit
            cls[k] = c
            ds = ins.defs if ins.carry_out is None else list(ins.result_values())
            if not ds:
                pass
            elif len(ds) == 1 and ds[0].kind == "inst" and ds[0].var[:3] != "%cc":
                # the common case, inline: one register written by the instruction
                d = ds[0]
                var = d.var
                w = get(var)
                if w is None:
                    w = webs[var] = Web(var, d.type)
                    w.values.append(d)
                    w.defs.append(ins)
                else:
                    w.values.append(d)
                    if w.defs[-1] is not ins if w.defs else True:
                        w.defs.append(ins)
                if d.id < nv and vary[d.id]:
                    vary_set.add(var)
                if c in _COPIES or (c == "IADD3" and _is_cvta_global(ins)):
                    copies.add(var)
                elif c == "S2R":
                    specials.add(var)
            else:
                copy = c in _COPIES or (c == "IADD3" and _is_cvta_global(ins))
                for d in ds:
                    if d.kind == _NOT_A_WEB or d.var.startswith("%cc"):
                        continue
                    w = add(d)
                    wd = w.defs
                    if not wd or wd[-1] is not ins:
                        wd.append(ins)
                    if copy:
                        copies.add(d.var)
                    if c == "S2R":
                        specials.add(d.var)
            if undefs:  # a register read before any write starts its web there
                for u in (ins.pred, *ins.uses):
                    if isinstance(u, Value) and u.kind == "undef" and u.var not in webs:
                        webs[u.var] = Web(u.var, u.type)
    out.n = n
    return out


def record_reads(func: Func, webs: dict[str, Web], names: Iterable[str]) -> None:
    """The second sweep: append to ``uses`` every read of the webs ``names`` (guard
    predicate first, then the operands in slot order, in program order)."""
    reads: dict[str, list[Use]] = {k: webs[k].uses for k in names}
    if not reads:
        return
    rget = reads.get
    for b in func.blocks:
        for ins in b.insts:
            p = ins.pred
            if p is not None:
                lst = rget(p.var)
                if lst is not None and p.kind != _NOT_A_WEB:
                    lst.append(Use(ins, -1, False))
            addr: set[int] | None = None
            k = -1
            for u in ins.uses:
                k += 1
                if type(u) is Value:
                    lst = rget(u.var)
                    if lst is not None and u.kind != _NOT_A_WEB:
                        if addr is None:
                            addr = _addr_slots(ins)
                        lst.append(Use(ins, k, k in addr))


def build_webs(func: Func) -> dict[str, Web]:
    """PTX register name -> :class:`Web`, every write and read included."""
    webs = scan(func).webs
    record_reads(func, webs, webs)
    return webs
