"""The warp-aware SSA IR: values, instructions, phis, blocks, functions, modules.

An :class:`Inst` keeps its AST instruction as a *template*: the register operands
of the template are replaced, slot by slot in a fixed order, by SSA values.
``defs`` are the written registers (vector and pair elements included, ``_``
sinks excluded), ``uses`` the read ones (address bases, vector elements, ``!p``
sources, call arguments).  A use slot may also hold an :class:`~ptxopt.ptx.ast.Imm`
once a pass has folded a constant into it.

GPU semantics carried by the IR:

* A predicated non-branch instruction is a *partial definition*: in lanes where
  the guard is false the destination keeps its old value, so ``olds[k]`` is the
  value that def slot ``k`` had before the instruction (an implicit use).
* Carry chains (``add.cc`` / ``addc``) pass an implicit flag: ``carry_out`` is
  the value of the carry written, ``carry_in`` the one read.  The flag is an
  ordinary SSA value of the pseudo register :data:`CARRY`, never printed.
* Special registers (``%tid.x``) are values of kind ``"special"``; registers read
  before any write are values of kind ``"undef"``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ptxopt.ir.operands import regs_of
from ptxopt.ir.regtypes import RegTypes
from ptxopt.ir.scopes import NameOrigin, ScopeInfo
from ptxopt.ptx.ast import DebugLoc, Function, Imm, Instr, Module, RegDecl, Stmt
from ptxopt.ptx.opcodes import CARRY_FLAG, OpInfo

CARRY = CARRY_FLAG  # the carry flag's pseudo register (not a PTX identifier)


class Value:
    """An SSA value.  ``var`` is the PTX register it came from (after scope
    renaming), ``type`` that register's declared type."""

    __slots__ = ("id", "var", "type", "kind", "inst", "block")

    def __init__(
        self,
        vid: int,
        var: str,
        vtype: str,
        kind: str,
        inst: Inst | Phi | None = None,
        block: Block | None = None,
    ) -> None:
        self.id = vid
        self.var = var
        self.type = vtype
        self.kind = kind  # "inst", "phi", "special", "undef", "param"
        self.inst = inst
        self.block = block

    def __repr__(self) -> str:
        return f"{self.var}.{self.id}"


# the result of a phi between its making and its own result's (Func.new_phi)
_PENDING = Value(-1, "", "", "pending")


class Inst:
    """An instruction in SSA form (see the module docstring)."""

    __slots__ = (
        "ast",
        "info",
        "defs",
        "uses",
        "olds",
        "pred",
        "pred_neg",
        "carry_in",
        "carry_out",
        "block",
        "loc",
        "raw",
        "slot_names",
        "point",
    )

    def __init__(
        self,
        ast: Instr,
        info: OpInfo | None,
        defs: list[Value],
        uses: list[Value | Imm],
        pred: Value | None = None,
        loc: DebugLoc | None = None,
    ) -> None:
        self.ast = ast
        self.info = info
        self.defs = defs
        self.uses = uses
        # Tied old values, one per def slot (None where the slot is not tied):
        # predicated (partial) definitions and read-modify-write operands.
        self.olds: list[Value | None] | None = None
        self.pred = pred
        self.pred_neg = ast.pred_neg
        self.carry_in: Value | None = None
        self.carry_out: Value | None = None
        self.block: Block | None = None
        self.loc = loc
        self.raw: str | None = None  # statement kept verbatim (.pragma)
        # Register names of the template's def slots then use slots, as parsed.
        self.slot_names: list[str] = []
        # Scratch: the program point a whole-function sweep numbered this instruction
        # with (ptxopt.ori.view.scan), -1 before any; meaningful only to that sweep's
        # user, and only while the function is unchanged.
        self.point = -1

    @property
    def opcode(self) -> str:
        return self.ast.opcode

    @property
    def name(self) -> str:
        return self.ast.name

    @property
    def is_terminator(self) -> bool:
        return self.info is not None and self.info.terminator

    def operand_values(self) -> Iterator[Value]:
        """Every SSA value this instruction reads, implicit ones included (an iterator
        over :meth:`operand_list`)."""
        return iter(self.operand_list())

    def operand_list(self) -> list[Value]:
        """Every SSA value this instruction reads, as a list: the guard predicate, the
        register sources in slot order, the tied old values, the carry flag read."""
        out = [] if self.pred is None else [self.pred]
        for u in self.uses:
            if isinstance(u, Value):
                out.append(u)
        if self.olds is not None:
            for o in self.olds:
                if o is not None:
                    out.append(o)
        if self.carry_in is not None:
            out.append(self.carry_in)
        return out

    def result_values(self) -> Iterator[Value]:
        yield from self.defs
        if self.carry_out is not None:
            yield self.carry_out

    def __repr__(self) -> str:
        return f"<{self.ast.name} defs={self.defs} uses={self.uses}>"


class Phi:
    """``result = phi(incoming[k] from block.preds[k])``."""

    __slots__ = ("result", "incoming", "block")
    __deletable__ = ("block",)  # IRModule.release deletes it (mypyc asks for this)

    def __init__(self, result: Value, incoming: list[Value], block: Block) -> None:
        self.result = result
        self.incoming = incoming
        self.block = block

    def __repr__(self) -> str:
        return f"<phi {self.result} = {self.incoming}>"


class Block:
    """A basic block.  ``labels`` are the PTX labels that start it (all kept,
    since debug sections may refer to them); ``succs``/``preds`` are blocks."""

    __slots__ = ("index", "labels", "phis", "insts", "succs", "preds", "fallthrough")

    def __init__(self, index: int, labels: list[str]) -> None:
        self.index = index
        self.labels = labels
        self.phis: list[Phi] = []
        self.insts: list[Inst] = []
        self.succs: list[Block] = []
        self.preds: list[Block] = []
        # The successor reached by falling off the end (None after ret/exit/bra).
        self.fallthrough: Block | None = None

    @property
    def terminator(self) -> Inst | None:
        if self.insts and self.insts[-1].is_terminator:
            return self.insts[-1]
        return None

    def __repr__(self) -> str:
        return f"<block {self.index} {self.labels}>"


class Func:
    """A function in SSA form.

    ``reg_types`` maps each register name (after scope resolution) to its declared
    type, and ``head`` holds body statements kept verbatim at the top of the body
    (variables, branch-target tables, call prototypes).  ``scopes`` are the
    ``{ }`` blocks of the source (0 is the body itself) and ``origins`` maps every
    name declared in a nested block to its source spelling and block
    (:mod:`ptxopt.ir.scopes`).
    """

    def __init__(self, ast: Function) -> None:
        self.ast = ast
        self.name = ast.name
        self.blocks: list[Block] = []
        self.reg_order: list[str] = []
        self.reg_types = RegTypes(self.reg_order)
        self.head: list[Stmt] = []
        self.scopes: list[ScopeInfo] = []
        self.origins: dict[str, NameOrigin] = {}
        self.params: list[Value] = []
        self.next_id = 0
        self.specials: dict[str, Value] = {}
        self.undefs: dict[str, Value] = {}
        # set by the pass pipeline: the module (ptxopt.analysis.divergence.bind_module)
        # and the sizes of the module's .const variables (ptxopt.analysis.speculation)
        self.module: IRModule | None = None
        self.module_consts: dict[str, int] | None = None

    # -- value creation ------------------------------------------------------

    def new_value(
        self,
        var: str,
        vtype: str,
        kind: str,
        inst: Inst | Phi | None = None,
        block: Block | None = None,
    ) -> Value:
        v = Value(self.next_id, var, vtype, kind, inst, block)
        self.next_id += 1
        return v

    def new_phi(
        self, var: str, vtype: str, block: Block, incoming: list[Value] | None = None
    ) -> Phi:
        """A phi of ``block`` for register ``var`` with a new result (not yet in
        ``block.phis``): the result refers to the phi, so the phi is made first,
        with a placeholder result."""
        phi = Phi(_PENDING, [] if incoming is None else incoming, block)
        phi.result = self.new_value(var, vtype, "phi", phi, block)
        return phi

    def special(self, name: str) -> Value:
        v = self.specials.get(name)
        if v is None:
            v = self.specials[name] = self.new_value(name, _special_type(name), "special")
        return v

    def undef(self, var: str) -> Value:
        v = self.undefs.get(var)
        if v is None:
            v = self.undefs[var] = self.new_value(var, self.reg_types.get(var, ".b32"), "undef")
        return v

    # -- CFG -------------------------------------------------------------------

    def cfg_succs(self) -> list[list[int]]:
        return [[s.index for s in b.succs] for b in self.blocks]

    def renumber(self) -> None:
        for i, b in enumerate(self.blocks):
            b.index = i

    @property
    def entry(self) -> Block:
        return self.blocks[0]

    def instructions(self) -> Iterator[Inst]:
        for b in self.blocks:
            yield from b.insts

    def values(self) -> Iterator[Value]:
        """Every value defined in the function (params and phis included)."""
        yield from self.params
        for b in self.blocks:
            for phi in b.phis:
                yield phi.result
            for ins in b.insts:
                yield from ins.result_values()

    def declare(self, name: str, rtype: str) -> None:
        if not dict.__contains__(self.reg_types, name):
            self.reg_order.append(name)
        self.reg_types[name] = rtype

    def declare_range(self, stem: str, count: int, rtype: str) -> None:
        """Declare ``stem0`` .. ``stem{count-1}`` without listing them."""
        self.reg_types.ranges[stem] = (count, rtype)

    def __repr__(self) -> str:
        return f"<func {self.name}: {len(self.blocks)} blocks>"


_modules_made = 0


class IRModule:
    """A PTX module whose function bodies are in SSA form."""

    def __init__(self, ast: Module, funcs: Sequence[Func]) -> None:
        global _modules_made
        self.ast = ast
        self.funcs = list(funcs)
        self.arch: str | None = ast.arch
        # unique in the process: tables of per-module results tell modules apart by
        # it without holding them (IR classes take no weak references when compiled)
        self.serial = _modules_made
        _modules_made += 1

    def func(self, name: str) -> Func:
        for f in self.funcs:
            if f.name == name:
                return f
        raise KeyError(name)

    def release(self) -> None:
        """Dismantle the IR once nothing will read it: the links between blocks,
        instructions and values form reference cycles, so without this only the
        cyclic collector frees them, and one collection over a large module costs
        a good part of a round trip.  Afterwards the module has no functions."""
        for f in self.funcs:
            f.module = None
            for v in f.params:
                v.inst = v.block = None
            for b in f.blocks:
                for phi in b.phis:
                    del phi.block
                    phi.result.inst = phi.result.block = None
                for ins in b.insts:
                    ins.block = None
                    for v in ins.defs:
                        if v is not None:
                            v.inst = v.block = None
                    if ins.carry_out is not None:
                        ins.carry_out.inst = ins.carry_out.block = None
                b.succs.clear()
                b.preds.clear()
                b.fallthrough = None
            f.blocks.clear()
        self.funcs.clear()


_SPECIAL_64 = ("%clock64", "%globaltimer", "%gridid", "%pm0_64", "%pm1_64", "%pm2_64")


def _special_type(name: str) -> str:
    base = name.split(".")[0]
    if base in _SPECIAL_64 or base.startswith("%pm") and base.endswith("_64"):
        return ".u64"
    if base.startswith("%envreg") or base.startswith("%lanemask"):
        return ".b32"
    return ".u32"


def reg_decls(func: Func) -> list[RegDecl]:
    """One declaration per register, grouped by type in first-seen order."""
    by_type: dict[str, list[tuple[str, int | None]]] = {}
    for name in func.reg_order:
        if name == CARRY:
            continue
        by_type.setdefault(func.reg_types[name], []).append((name, None))
    return [RegDecl(t, names) for t, names in by_type.items()]


def address_slots(inst: Inst) -> list[int]:
    """Indices into ``inst.uses`` of the registers inside its address operands (none
    for an instruction without an address or of unknown form)."""
    info = inst.info
    if info is None or not info.addrs:
        return []
    ops = inst.ast.operands
    out: list[int] = []
    k = 0
    for i in info.uses:
        if i in info.defs or i >= len(ops):
            continue
        cnt = sum(1 for _ in regs_of(ops[i]))
        if i in info.addrs:
            out.extend(range(k, k + cnt))
        k += cnt
    return out
