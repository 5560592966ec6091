"""PTX instruction -> SASS instruction class, and register webs (spec 02, phase 74 input).

ptxas builds one virtual register per PTX register, whatever the number of writes, so
the unit a register file is chosen for is the *web*: all SSA values of one PTX register
(after scope renaming) of one function.  :func:`sass_class` names the SASS class a PTX
instruction becomes (the class ptxas's opcode table would give it: ``add.s32`` ->
``IADD3``, ``mul.wide.u32`` -> ``IMAD``, ``setp.lt.f32`` -> ``FSETP`` ...); the
capability of each class is :mod:`ptxopt.ori.capability`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from ptxopt.ir.core import Func, Inst, Value, address_slots
from ptxopt.ptx.nodes import Reg

__all__ = [
    "Classes",
    "Scan",
    "Use",
    "Web",
    "Webs",
    "build_webs",
    "is_cvta_global",
    "is_pred_type",
    "record_reads",
    "reg_count",
    "sass_class",
    "scan",
]

_INT: Final = ("s", "u", "b")
_UNIFORM_SPECIAL: Final = frozenset(
    ("%ctaid", "%clusterid", "%cluster_ctaid", "%cluster_nctaid", "%gridid")
)
_CONST_SPECIAL: Final = frozenset(("%ntid", "%nctaid", "%nclusterid", "%cluster_nctarank"))


def _is_int(t: str | None) -> bool:
    return t is not None and t[1:2] in _INT and t != ".pred"


def _is_float(t: str | None) -> bool:
    return t is not None and (t.startswith(".f") or t.startswith(".bf") or t == ".tf32")


def is_pred_type(t: str) -> bool:
    return t == ".pred"


_REG_COUNT: Final[dict[str, int]] = {}


def reg_count(t: str) -> int:
    """32-bit registers a value of PTX type ``t`` occupies (predicates: 1 predicate)."""
    hit = _REG_COUNT.get(t)
    if hit is None:
        if t == ".pred":
            hit = 1
        else:
            digits = "".join(ch for ch in t if ch.isdigit())
            hit = max(1, (int(digits) if digits else 32) // 32)
        _REG_COUNT[t] = hit
    return hit


_SIMPLE: Final = {
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
    uses = inst.uses
    if uses:
        u = uses[0]
        if type(u) is Value and u.kind != _NOT_A_WEB:
            return "MOV"  # a copy of a register (a special register is never a web)
    ops = inst.ast.operands
    src = ops[1] if len(ops) > 1 else None
    # (a register operand read directly: compiled, the generic lookup is slower)
    text = src.name if type(src) is Reg else getattr(src, "name", "")
    if isinstance(text, str) and text.startswith("%"):
        dot = text.find(".")
        base = text[:dot] if dot >= 0 else text
        if base in _UNIFORM_SPECIAL:
            return "S2R"
        if base in _CONST_SPECIAL:
            return "LDC"
        if inst.uses and isinstance(inst.uses[0], Value) and inst.uses[0].kind == "special":
            return "S2R"
    return "MOV"


class Use:
    """One read of a web: instruction, index into ``inst.uses`` (-1: the guard
    predicate, -2: a tied old value or carry), and whether the slot is an address.
    (A plain class rather than a dataclass: compiled, its constructor is a direct
    call; a dataclass's generated ``__init__`` runs in the interpreter.)"""

    __slots__ = ("inst", "slot", "address")

    def __init__(self, inst: Inst, slot: int, address: bool) -> None:
        self.inst = inst
        self.slot = slot
        self.address = address

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Use):
            return NotImplemented
        return (self.inst, self.slot, self.address) == (other.inst, other.slot, other.address)

    def __repr__(self) -> str:
        return f"Use(inst={self.inst!r}, slot={self.slot!r}, address={self.address!r})"


class Web:
    """One PTX register of one function: its writes and, once recorded
    (:func:`record_reads`), its reads.  Whether any of its SSA values is varying or a
    parameter is a fact of the :class:`Scan` (``uniform``, ``not_written``)."""

    __slots__ = ("name", "type", "defs", "uses", "width")

    def __init__(
        self, name: str, type: str, defs: list[Inst] | None = None, uses: list[Use] | None = None
    ) -> None:
        self.name = name
        self.type = type
        self.width = reg_count(type)  # 32-bit registers it occupies (read often)
        self.defs: list[Inst] = [] if defs is None else defs
        self.uses: list[Use] = [] if uses is None else uses

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Web):
            return NotImplemented
        return (self.name, self.type, self.defs, self.uses) == (
            other.name,
            other.type,
            other.defs,
            other.uses,
        )

    def __repr__(self) -> str:
        return (
            f"Web(name={self.name!r}, type={self.type!r}, defs={self.defs!r}, uses={self.uses!r})"
        )

    @property
    def is_pred(self) -> bool:
        return self.type == ".pred"


class Webs(Mapping[str, Web]):
    """Register name -> :class:`Web`, for every web of a function, in the order of the
    first parameter, phi, write or undefined read.  The sweep only lists each web's
    writes (``defs_of``: the one instruction of a web written once, a list otherwise --
    no list made for most webs, which are written once; ``types`` only for the webs
    without a write); the :class:`Web`
    object is made the first time a web is asked for, so a function whose webs are
    mostly varying pays for the few the model looks at."""

    __slots__ = ("_made", "defs_of", "types")

    def __init__(self, defs_of: dict[str, list[Inst] | Inst], types: dict[str, str]) -> None:
        self._made: dict[str, Web] = {}
        self.defs_of = defs_of
        self.types = types

    def get(self, name: str, default: Web | None = None) -> Web | None:  # type: ignore[override]
        w = self._made.get(name)
        if w is None:
            w = self._make(name)
            if w is None:
                return default
        return w

    def _make(self, name: str) -> Web | None:
        """The :class:`Web` of ``name``, made now (``None``: not a web)."""
        ds = self.defs_of.get(name)
        if ds is None:
            return None
        t = self.types.get(name)
        if isinstance(ds, list):
            w = Web(name, t if t is not None else _result_type(ds[0], name), ds)
        else:
            w = Web(name, t if t is not None else _result_type(ds, name), [ds])
        self._made[name] = w
        return w

    def defs(self, name: str) -> list[Inst]:
        """The writes of web ``name`` (``KeyError``: not a web)."""
        ds = self.defs_of[name]
        return ds if isinstance(ds, list) else [ds]

    def ndefs(self, name: str) -> int:
        """How many instructions write ``name`` (0 when it is not a web)."""
        ds = self.defs_of.get(name)
        if ds is None:
            return 0
        return len(ds) if isinstance(ds, list) else 1

    def type_of(self, name: str) -> str:
        """The declared type of web ``name``: the one the sweep noted for a web that
        starts without a write (a parameter, a phi, a register read before any write),
        else that of its first write's value."""
        t = self.types.get(name)
        if t is not None:
            return t
        ds = self.defs_of[name]
        return _result_type(ds[0] if isinstance(ds, list) else ds, name)

    def __getitem__(self, name: str) -> Web:
        w = self._made.get(name)  # (the common case without a second call)
        if w is None:
            w = self._make(name)
            if w is None:
                raise KeyError(name)
        return w

    def __contains__(self, name: object) -> bool:
        return name in self.defs_of

    def __iter__(self) -> Iterator[str]:
        return iter(self.defs_of)

    def __len__(self) -> int:
        return len(self.defs_of)


def _result_type(first: Inst, name: str) -> str:
    """The type of register ``name`` as ``first``, its first write, writes it."""
    for d in first.defs:
        if d.var == name:
            return d.type
    raise KeyError(name)


# (Final: a constant compiled code reads inline, not from the module's namespace)
_NOT_A_WEB: Final = "special"  # the one value kind that belongs to no register web
_COPIES: Final = ("LDC", "MOV")
# the opcodes whose class can be LDC, MOV or S2R, or that are cvta.to.global
_COPY_OPS: Final = frozenset(("mov", "ld", "ldu", "cvt", "cvta"))


class Classes:
    """The SASS class (:func:`sass_class`) of the instructions of one function, each
    computed once per opcode form (but per ``mov``): :meth:`at_point` for the
    instructions the sweep numbered (computed on first lookup, kept by program
    point), :meth:`of` for any instruction."""

    __slots__ = ("_at", "_memo")

    def __init__(self, n: int) -> None:
        self._memo: dict[int, str] = {}
        self._at: list[str] = [""] * n  # "" until looked up

    def at_point(self, ins: Inst) -> str:
        """The class of ``ins``, numbered by the sweep (``Inst.point``)."""
        p = ins.point
        c = self._at[p]
        if not c:
            c = self._at[p] = self.of(ins)
        return c

    def of(self, ins: Inst) -> str:
        info = ins.info
        if info is None:
            return sass_class(ins)
        if info.name == "mov":
            return _mov_class(ins)
        memo = self._memo
        c = memo.get(id(info))
        if c is None:
            c = memo[id(info)] = sass_class(ins)
        return c


@dataclass(slots=True)
class Scan:
    """One sweep over a function: its webs with their writes (no reads yet, see
    :func:`record_reads`), its instructions in program order (each numbered with its
    program point, ``Inst.point``) with their SASS classes, and per-web facts
    gathered on the way."""

    webs: Webs
    insts: list[Inst]  # program order: program point -> instruction (``Inst.point``)
    cls: Classes  # SASS classes
    uniform: dict[str, None]  # webs none of whose values the vector marks varying,
    # in web order (a dict as an ordered set: most webs are varying, so the sweep
    # lists the few others rather than the many)
    not_written: set[str]  # webs with a parameter value
    copies: set[str]  # webs with a write that is an LDC, a MOV or a cvta.to.global
    specials: set[str]  # webs with a write of class S2R
    vary: bytes  # value id -> 1 where the divergence vector marks the value varying


def is_cvta_global(ins: Inst) -> bool:
    """``cvta.to.global`` (class IADD3): the identity of the generic window."""
    return ins.ast.opcode == "cvta" and ins.ast.name.startswith("cvta.to.global")


def _write(
    ins: Inst,
    d: Value,
    defs_of: dict[str, list[Inst] | Inst],
    vary: bytes,
    fresh: list[str],
    late: set[str],
) -> None:
    """:func:`scan`'s step for one result ``d`` of ``ins`` (its type is read from the
    value when the web is made, :meth:`Webs.type_of`).  A web started by a value the
    divergence vector calls uniform goes on ``fresh``; a varying write to a web that
    has one already goes into ``late``."""
    var = d.var
    if d.kind == _NOT_A_WEB:
        return
    cur = defs_of.setdefault(var, ins)  # (one lookup: most webs are written once)
    if cur is ins:  # a new web, or a second result of ``ins`` in the same register
        if not vary[d.id]:
            fresh.append(var)  # (twice in the second case: the caller keeps the first)
        elif len(ins.defs) > 1:
            late.add(var)  # (a second result may follow the uniform first one)
        return
    if isinstance(cur, list):
        if not cur or cur[-1] is not ins:
            cur.append(ins)
    else:
        defs_of[var] = [cur, ins]  # (same key: the web keeps its place in the order)
    if vary[d.id]:
        late.add(var)


def _note(
    v: Value,
    defs_of: dict[str, list[Inst] | Inst],
    types: dict[str, str],
    vary: bytes,
    fresh: list[str],
    late: set[str],
) -> None:
    """:func:`scan`'s step for a parameter or phi: a value no instruction writes."""
    if v.var not in defs_of:
        defs_of[v.var] = []
        types[v.var] = v.type
        if not vary[v.id]:
            fresh.append(v.var)
    elif vary[v.id]:
        late.add(v.var)


def scan(func: Func, varying: bytearray | None = None) -> Scan:
    """The first sweep (see :class:`Scan`): one step per instruction and write; the
    class is only computed for the opcodes that can make a copy or a special-register
    read."""
    defs_of: dict[str, list[Inst] | Inst] = {}
    types: dict[str, str] = {}
    # one byte per value id, values made after the analysis included (not varying)
    given = varying if varying is not None else b""
    vary = bytes(given) + bytes(max(0, func.next_id - len(given)))
    fresh: list[str] = []  # webs whose first value is uniform, in web order
    late: set[str] = set()  # webs with a varying value after their first
    not_written: set[str] = set()
    copies: set[str] = set()
    specials: set[str] = set()
    insts: list[Inst] = []
    copy_ins: list[Inst] = []

    for v in func.params:
        if v.kind != _NOT_A_WEB:
            _note(v, defs_of, types, vary, fresh, late)
            not_written.add(v.var)
    undefs = bool(func.undefs)
    for b in func.blocks:
        for phi in b.phis:
            if phi.result.kind != _NOT_A_WEB:
                _note(phi.result, defs_of, types, vary, fresh, late)
        block = b.insts
        insts.extend(block)
        for ins in block:
            # (a plain loop and call: the fast forms in compiled code; the carry flag,
            # ``ins.carry_out``, belongs to no web)
            defs = ins.defs
            for d in defs:
                _write(ins, d, defs_of, vary, fresh, late)
            if defs:
                info = ins.info
                if info is not None and info.name in _COPY_OPS:
                    copy_ins.append(ins)
            if undefs:  # a register read before any write starts its web there
                p = ins.pred
                if p is not None and p.kind == "undef" and p.var not in defs_of:
                    defs_of[p.var] = []
                    types[p.var] = p.type
                    fresh.append(p.var)  # (judged by its writes, as before the read)
                for u in ins.uses:
                    if isinstance(u, Value) and u.kind == "undef" and u.var not in defs_of:
                        defs_of[u.var] = []
                        types[u.var] = u.type
                        fresh.append(u.var)
    n = 0
    for ins in insts:
        ins.point = n
        n += 1
    cls = Classes(n)
    for ins in copy_ins:
        c = cls.at_point(ins)
        if c in _COPIES or (c == "IADD3" and is_cvta_global(ins)):
            into = copies
        elif c == "S2R":
            into = specials
        else:
            continue
        for d in ins.defs:
            if d.kind != _NOT_A_WEB:
                into.add(d.var)
    webs = Webs(defs_of, types)
    uniform = {k: None for k in fresh if k not in late}
    return Scan(webs, insts, cls, uniform, not_written, copies, specials, vary)


def record_reads(
    func: Func, webs: Webs, names: Iterable[str], insts: list[Inst] | None = None
) -> None:
    """The second sweep: append to ``uses`` every read of the webs ``names`` (guard
    predicate first, then the operands in slot order, in program order).  ``insts``:
    the function's instructions in program order, when the caller has them.

    An operand is matched by its value, not its register name: each value of the webs
    asked for (their writes' results, phis, parameters and reads before any write)
    first gets its web's list of reads at its id, so that the sweep reads one list
    entry per operand instead of looking its name up (a read of any of these webs is
    a read of one of its values)."""
    reads: dict[str, list[Use]] = {k: webs[k].uses for k in names}
    if not reads:
        return
    n = func.next_id
    into: list[list[Use] | None] = [None] * n  # value id -> its web's reads
    defs_of = webs.defs_of
    undefs = func.undefs
    for name, uses in reads.items():
        ds = defs_of[name]
        if isinstance(ds, list):
            for d in ds:
                _mark_result(d, name, uses, into)
        else:
            _mark_result(ds, name, uses, into)
        undef = undefs.get(name)
        if undef is not None:
            into[undef.id] = uses
    for v in func.params:
        into[v.id] = reads.get(v.var)
    for blk in func.blocks:
        for phi in blk.phis:
            into[phi.result.id] = reads.get(phi.result.var)
    if insts is None:
        insts = list(func.instructions())
    for ins in insts:  # (a list: compiled, iterated directly)
        p = ins.pred
        if p is not None and 0 <= p.id < n:
            got = into[p.id]
            if got is not None and p.kind != _NOT_A_WEB:
                got.append(Use(ins, -1, False))
        addr: set[int] | None = None
        k = -1
        for u in ins.uses:
            k += 1
            if type(u) is Value and 0 <= u.id < n:
                got = into[u.id]
                if got is None or u.kind == _NOT_A_WEB:
                    continue
                if addr is None:
                    info = ins.info
                    addr = set(address_slots(ins)) if info is not None and info.addrs else _NONE
                got.append(Use(ins, k, k in addr))


_NONE: Final[set[int]] = set()


def _mark_result(d: Inst, name: str, uses: list[Use], into: list[list[Use] | None]) -> None:
    """:func:`record_reads`: the values of register ``name`` that ``d`` writes are
    reads of ``uses``."""
    for v in d.defs:
        if v.var == name:
            into[v.id] = uses


def build_webs(func: Func) -> Webs:
    """PTX register name -> :class:`Web`, every write and read included."""
    webs = scan(func).webs
    record_reads(func, webs, webs)
    return webs
