"""reassociate: OriReassociateAndCommon (ptxas phase 50).

Spec 03, "Phase 50 -- OriReassociateAndCommon".  GvnCse cannot see that ``(a + b) + c``
and ``(a + c) + b`` are one value; this pass rewrites every associative tree into one
canonical shape and then commons what became equal.

1. **Flatten.**  From the top of a tree of one associative operation (``add``/``sub``,
   ``mul.lo``, ``and``, ``or``, ``xor`` with identical modifiers) collect its leaves.
   An operand is an inner node only when the same operation defines it, in the same
   block, unguarded, and the tree is its only reader (pulling a shared value inside
   would duplicate work); anything else - another operation, a constant, a value from
   another block, a value with several readers - is a leaf.  A ``sub`` is absorbed
   into an ``add`` tree as a negated leaf: the negation never becomes an instruction
   (``SUB -> ADD`` only when absorbed), and a lone ``a - b`` is left alone.
2. **Canonical order.**  Non-constant leaves by ascending value number (the SSA value
   id: after gvn-cse equal values are one value), positive before negated ones;
   constants last, folded into one with the operation's wrap-around semantics.
3. **Rebuild** a left-leaning chain ``((l0 op l1) op l2) op ...``: equal leaf prefixes
   give equal inner nodes, whatever the original nesting.  A tree already in that
   shape is not touched.  With ``DistributeAndReassociateMulBudget`` > 0, two integer
   products with a common factor in one sum become one product first
   (``a*b + a*c -> a*(b+c)``, exact modulo 2^n), at most that many times per function.
4. **Windowed local CSE.**  In each block, an instruction whose key
   (:func:`ptxopt.ir.value_key.expr_key`) matches one of the previous
   ``ReassociateCSEWindow`` instructions is replaced by it.

Integer (and bitwise) trees only: floating-point addition and multiplication are not
associative, so float trees are rewritten only with ``ReassociateFastMath=1`` (results
may change in the last bits).  ``ReassociateLargeImmInUIADD64=0`` keeps a 64-bit add
from receiving a folded constant that needs more than 32 bits when no input constant
did.  ``ReassociateCSEBudget`` bounds the instructions processed per function and
``ReassociateCSESkip`` leaves the first N alone (a bisection aid).
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxopt.analysis.dominators import DomTree
from ptxopt.analysis.graph import Graph
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.ir.commoning import Edits, Users, common_into, prune_dead
from ptxopt.ir.core import Block, Func, Inst, Value
from ptxopt.ir.edit import fresh_var, make_inst, replace_uses
from ptxopt.ir.value_key import Eligibility, eligibility, expr_key
from ptxopt.knobs import Knob
from ptxopt.ptx.ast import Imm, Reg
from ptxopt.ptx.types import bit_width, is_float, is_int
from ptxopt.transforms.base import FunctionPass, register

_FAMILY = {"add": "add", "sub": "add", "mul": "mul", "and": "and", "or": "or", "xor": "xor"}
_INT_TYPES = frozenset({".s16", ".u16", ".s32", ".u32", ".s64", ".u64"})
_BIT_TYPES = frozenset({".b16", ".b32", ".b64", ".pred"})
_FLOAT_TYPES = frozenset({".f32", ".f64"})
# modifiers that break associativity (saturation, carries, high halves, wide results)
_BREAKS = frozenset({".sat", ".cc", ".hi", ".wide", ".approx"})
MAX_LEAVES = 64


@dataclass(slots=True)
class Leaf:
    neg: bool
    val: Value | Imm


def _family(inst: Inst, fast_math: bool) -> str | None:
    """The associative family of ``inst`` (``"add"`` for add/sub ...) or None."""
    info = inst.info
    if info is None or inst.raw or len(inst.defs) != 1:
        return None
    if inst.pred is not None or inst.olds or inst.carry_in or inst.carry_out:
        return None
    fam = _FAMILY.get(info.name)
    if fam is None:
        return None
    mods = inst.ast.mods
    if _BREAKS & set(mods):
        return None
    ty = info.type
    if ty is None:
        return None
    ops = inst.ast.operands
    if len(ops) != 3 or not all(isinstance(o, Reg | Imm) for o in ops[1:]):
        return None
    if fam in ("and", "or", "xor"):
        return fam if ty in _BIT_TYPES else None
    if fam == "mul" and ty in _INT_TYPES and ".lo" not in mods:
        return None
    if ty in _INT_TYPES:
        return fam
    if ty in _FLOAT_TYPES and fast_math and fam in ("add", "mul"):
        return fam
    return None


def sources(inst: Inst) -> list[Value | Imm]:
    """The two sources of a binary instruction (``_family`` checked the shape): register
    slots from ``uses``, immediates from the template."""
    out: list[Value | Imm] = []
    k = 0
    for op in inst.ast.operands[1:]:
        if isinstance(op, Reg):
            out.append(inst.uses[k])
            k += 1
        else:
            assert isinstance(op, Imm)
            out.append(op)
    return out


def _same_op(a: Inst, b: Inst) -> bool:
    """Same family and identical modifiers (``sub`` and ``add`` of one type match)."""
    if a.ast.mods != b.ast.mods:
        return False
    return _FAMILY.get(a.ast.opcode) == _FAMILY.get(b.ast.opcode)


class _Reassociator:
    def __init__(self, func: Func, pass_: Reassociate) -> None:
        self.func = func
        self.users = Users(func)
        self.edits = Edits()
        self.fast_math = bool(pass_.knob("ReassociateFastMath"))
        self.large_imm = bool(pass_.knob("ReassociateLargeImmInUIADD64"))
        self.mul_budget = int(pass_.knob("DistributeAndReassociateMulBudget"))  # type: ignore[call-overload]
        self.rebuilt = 0
        self.distributed = 0
        self.folded = 0
        self.dead: list[Inst] = []

    # -- flatten ---------------------------------------------------------------------

    def inner(self, v: Value | Imm, root: Inst, parent: Inst) -> Inst | None:
        """The instruction defining ``v`` if it is an inner node of ``root``'s tree."""
        if not isinstance(v, Value) or v.kind != "inst":
            return None
        d = v.inst
        if not isinstance(d, Inst) or d.block is not root.block:
            return None
        if _family(d, self.fast_math) is None or not _same_op(d, root):
            return None
        us = self.users.of(v)
        if len(us) != 1 or us[0] is not parent:
            return None
        if sum(1 for u in sources(parent) if u is v) != 1:
            return None
        return d

    def flatten(self, root: Inst) -> tuple[list[Leaf], list[Inst]] | None:
        leaves: list[Leaf] = []
        nodes: list[Inst] = []
        stack: list[tuple[Inst, bool]] = [(root, False)]
        while stack:
            node, neg = stack.pop()
            nodes.append(node)
            is_sub = node.ast.opcode == "sub"
            for k, u in enumerate(sources(node)):
                sign = neg ^ (is_sub and k == 1)
                d = self.inner(u, root, node)
                if d is not None and len(nodes) + len(stack) < MAX_LEAVES:
                    stack.append((d, sign))
                else:
                    leaves.append(Leaf(sign, u))
        return leaves, nodes

    # -- canonical order and constants ---------------------------------------------------

    def canonical(self, root: Inst, leaves: list[Leaf]) -> list[Leaf] | None:
        info = root.info
        assert info is not None and info.type is not None
        ty = info.type
        fam = _FAMILY[root.ast.opcode]
        consts = [lf for lf in leaves if isinstance(lf.val, Imm)]
        regs = [lf for lf in leaves if isinstance(lf.val, Value)]
        regs.sort(key=lambda lf: (lf.neg, lf.val.id))  # type: ignore[union-attr]
        if not regs or regs[0].neg:
            return None  # no positive operand to start from
        out = list(regs)
        if len(consts) > 1 and not is_float(ty):
            c = self.fold(fam, ty, consts)
            if c is None:
                out.extend(sorted(consts, key=lambda lf: (lf.neg, str(lf.val))))
            else:
                self.folded += len(consts) - 1
                if not _is_identity(fam, ty, c):
                    out.append(Leaf(False, Imm(c, _imm_text(c, ty))))
        else:
            out.extend(sorted(consts, key=lambda lf: (lf.neg, str(lf.val))))
        return out

    def fold(self, fam: str, ty: str, consts: list[Leaf]) -> int | None:
        w = bit_width(ty)
        mask = (1 << w) - 1 if ty != ".pred" else 1
        vals: list[int] = []
        for lf in consts:
            v = lf.val
            assert isinstance(v, Imm)
            if v.kind != "int":
                return None
            vals.append((-int(v.value) if lf.neg else int(v.value)) & mask)
        acc: int
        if fam == "add":
            acc = sum(vals) & mask
        elif fam == "mul":
            acc = 1
            for x in vals:
                acc = (acc * x) & mask
        elif fam == "and":
            acc = mask
            for x in vals:
                acc &= x
        elif fam == "or":
            acc = 0
            for x in vals:
                acc |= x
        else:
            acc = 0
            for x in vals:
                acc ^= x
        if w == 64 and not self.large_imm and fam == "add":
            small = all(-(1 << 31) <= _signed(x, 64) < (1 << 31) for x in vals)
            if small and not -(1 << 31) <= _signed(acc, 64) < (1 << 31):
                return None
        if is_int(ty) and ty.startswith(".s"):
            return _signed(acc, w)
        return acc

    # -- distribution ----------------------------------------------------------------------

    def distribute(self, root: Inst, leaves: list[Leaf]) -> list[Leaf]:
        """``a*b + a*c -> a*(b+c)`` on integer sums, within the budget."""
        info = root.info
        assert info is not None
        if self.mul_budget <= 0 or _FAMILY[root.ast.opcode] != "add":
            return leaves
        if info.type not in _INT_TYPES:
            return leaves
        out = list(leaves)
        changed = True
        while changed and self.mul_budget > 0:
            changed = False
            prods: list[tuple[int, Inst]] = []
            for i, lf in enumerate(out):
                m = self._product(lf, root)
                if m is not None:
                    prods.append((i, m))
            found = _shared_factor(prods)
            if found is None:
                break
            (i, mi, fi), (j, mj, fj) = found
            a = sources(mi)[fi]
            b = sources(mi)[1 - fi]
            c = sources(mj)[1 - fj]
            if isinstance(b, Imm) and isinstance(c, Imm):
                break
            li, lj = out[i], out[j]
            block = root.block
            assert block is not None
            ty = root.defs[0].type
            inner_op = "sub" if li.neg != lj.neg else "add"
            s = make_inst(
                self.func, inner_op, root.ast.mods, [fresh_var(self.func, ty)], [b, c],
                loc=root.loc,
            )  # fmt: skip
            m = make_inst(
                self.func, "mul", mi.ast.mods, [fresh_var(self.func, ty)], [a, s.defs[0]],
                loc=root.loc,
            )  # fmt: skip
            self.edits.insert_before(root, s)
            self.edits.insert_before(root, m)
            self.users.add(s)
            self.users.add(m)
            self.dead.extend([mi, mj])
            new = Leaf(li.neg, m.defs[0])
            out = [lf for k, lf in enumerate(out) if k not in (i, j)] + [new]
            self.mul_budget -= 1
            self.distributed += 1
            changed = True
        return out

    def _product(self, lf: Leaf, root: Inst) -> Inst | None:
        v = lf.val
        if not isinstance(v, Value) or v.kind != "inst" or not isinstance(v.inst, Inst):
            return None
        d = v.inst
        info = d.info
        if d.block is not root.block or info is None or info.name != "mul":
            return None
        if _family(d, False) != "mul" or d.defs[0].type != root.defs[0].type:
            return None
        if info.type != root.info.type:  # type: ignore[union-attr]
            return None
        if len(self.users.of(v)) != 1:
            return None
        return d

    # -- rebuild ---------------------------------------------------------------------------

    def matches(self, root: Inst, seq: list[Leaf]) -> bool:
        """Is ``root`` already the left-leaning chain of ``seq``?"""
        node: Inst | None = root
        for k in range(len(seq) - 1, 0, -1):
            if node is None:
                return False
            lf = seq[k]
            want = "sub" if lf.neg else _base_op(node)
            srcs = sources(node)
            if node.ast.opcode != want or not _same_leaf(srcs[1], lf.val):
                return False
            prev = srcs[0]
            if k == 1:
                return _same_leaf(prev, seq[0].val) and not seq[0].neg
            node = self.inner(prev, root, node)
        return False

    def rebuild(self, root: Inst, seq: list[Leaf], nodes: list[Inst]) -> None:
        block = root.block
        assert block is not None
        ty = root.defs[0].type
        base = _base_op(root)
        acc: Value | Imm = seq[0].val
        last: Inst | None = None
        for lf in seq[1:]:
            op = "sub" if lf.neg else base
            ins = make_inst(
                self.func, op, root.ast.mods, [fresh_var(self.func, ty)], [acc, lf.val],
                loc=root.loc,
            )  # fmt: skip
            self.edits.insert_before(root, ins)
            self.users.add(ins)
            acc = ins.defs[0]
            last = ins
        old = root.defs[0]
        if last is None:
            assert isinstance(acc, Value)
            new: Value = acc
        else:
            new = last.defs[0]
        replace_uses(self.func, old, new, self.users.of(old))
        self.users.moved(old, new)
        self.dead.extend(nodes)
        self.rebuilt += 1

    def root_of_tree(self, inst: Inst) -> bool:
        """``inst`` is a tree's top: no single same-operation reader in its block."""
        us = self.users.of(inst.defs[0])
        if len(us) == 1:
            u = us[0]
            if (
                isinstance(u, Inst)
                and u.block is inst.block
                and self.inner(inst.defs[0], u, u) is inst
            ):
                return False
        return True

    def process(self, inst: Inst) -> None:
        if inst.block is None or _family(inst, self.fast_math) is None:
            return
        if not self.root_of_tree(inst):
            return
        flat = self.flatten(inst)
        if flat is None:
            return
        leaves, nodes = flat
        if len(leaves) <= 2:
            return
        before = self.distributed
        leaves = self.distribute(inst, leaves)
        seq = self.canonical(inst, leaves)
        if seq is None or len(seq) < 1:
            if self.distributed != before:
                # the products were merged: rebuild in the original leaf order
                self.rebuild(inst, leaves, nodes)
            return
        fresh = self.distributed == before
        if fresh and len(nodes) == len(seq) - 1 and self.matches(inst, seq):
            return
        if len(seq) == 1 and isinstance(seq[0].val, Imm):
            return
        self.rebuild(inst, seq, nodes)


def _base_op(inst: Inst) -> str:
    op = inst.ast.opcode
    return "add" if op == "sub" else op


def _same_leaf(a: Value | Imm, b: Value | Imm) -> bool:
    if isinstance(a, Value) or isinstance(b, Value):
        return a is b
    return a.kind == b.kind and a.value == b.value


def _shared_factor(
    prods: list[tuple[int, Inst]],
) -> tuple[tuple[int, Inst, int], tuple[int, Inst, int]] | None:
    seen: dict[int, tuple[int, Inst, int]] = {}
    for i, m in prods:
        srcs = sources(m)
        for f in (0, 1):
            u = srcs[f]
            if not isinstance(u, Value):
                continue
            prev = seen.get(u.id)
            if prev is not None and prev[1] is not m:
                return prev, (i, m, f)
        for f in (0, 1):
            u = srcs[f]
            if isinstance(u, Value):
                seen.setdefault(u.id, (i, m, f))
    return None


def _signed(x: int, w: int) -> int:
    x &= (1 << w) - 1
    return x - (1 << w) if x >> (w - 1) else x


def _is_identity(fam: str, ty: str, c: int) -> bool:
    w = bit_width(ty) if ty != ".pred" else 1
    mask = (1 << w) - 1
    if fam in ("add", "or", "xor"):
        return c & mask == 0
    if fam == "mul":
        return c & mask == 1
    return c & mask == mask  # and


def _imm_text(c: int, ty: str) -> str:
    return str(c)


def local_cse(
    func: Func, users: Users, edits: Edits, window: int, budget: list[int], skip: list[int]
) -> int:
    """Windowed local commoning: each block, keys seen in the last ``window``
    instructions."""
    n = 0
    for b in func.blocks:
        seen: dict[tuple[object, ...], tuple[Inst, int]] = {}
        for i, inst in enumerate(list(b.insts)):
            if skip[0] > 0:
                skip[0] -= 1
                continue
            if budget[0] <= 0:
                return n
            budget[0] -= 1
            if eligibility(inst) not in (Eligibility.PURE, Eligibility.INVARIANT_LOAD):
                continue
            key = expr_key(inst)
            if key is None:
                continue
            hit = seen.get(key)
            if hit is not None and i - hit[1] <= window:
                common_into(func, users, inst, hit[0], edits)
                n += 1
                continue
            seen[key] = (inst, i)
    return n


def _rpo_blocks(func: Func, am: AnalysisManager) -> list[Block]:
    dom = am.get(DomTree, func)
    return [func.blocks[i] for i in dom.rpo]


@register
class Reassociate(FunctionPass):
    name = "reassociate"
    phase = 50
    description = (
        "flatten, sort and rebuild associative integer trees, then common (ptxas phase 50)"
    )
    preserves = frozenset({Graph, DomTree})
    knobs = (
        Knob("AllowReassociateCSE", "bool", True, "master enable", spec="03-copyprop-cse.txt"),
        Knob(
            "ReassociateCSEBudget",
            "int",
            100000,
            "instructions processed per function",
            spec="03-copyprop-cse.txt",
            lo=0,
        ),
        Knob(
            "ReassociateCSEWindow",
            "int",
            64,
            "instructions back that the local commoning looks",
            spec="03-copyprop-cse.txt",
            lo=0,
        ),
        Knob(
            "ReassociateCSESkip",
            "int",
            0,
            "leave the first N instructions alone",
            spec="03-copyprop-cse.txt",
            lo=0,
        ),
        Knob(
            "ReassociateLargeImmInUIADD64",
            "bool",
            False,
            "let a 64-bit add receive a folded constant wider than 32 bits",
            spec="03-copyprop-cse.txt",
        ),
        Knob(
            "DistributeAndReassociateMulBudget",
            "int",
            32,
            "a*b + a*c -> a*(b+c) rewrites per function",
            spec="03-copyprop-cse.txt",
            lo=0,
        ),
        Knob(
            "ReassociateFastMath",
            "bool",
            False,
            "also reassociate f32/f64 add and mul trees (changes rounding)",
            spec="03-copyprop-cse.txt",
        ),
    )

    def run(self, func: Func, am: AnalysisManager) -> bool:
        if not self.knob("AllowReassociateCSE"):
            return False
        budget = [int(self.knob("ReassociateCSEBudget"))]  # type: ignore[call-overload]
        skip = [int(self.knob("ReassociateCSESkip"))]  # type: ignore[call-overload]
        r = _Reassociator(func, self)
        skip_left = skip[0]
        for b in _rpo_blocks(func, am):
            for inst in list(b.insts):
                if skip_left > 0:
                    skip_left -= 1
                    continue
                if budget[0] <= 0:
                    break
                budget[0] -= 1
                r.process(inst)
        pruned = prune_dead(r.users, r.dead, r.edits)
        r.edits.flush()
        window = int(self.knob("ReassociateCSEWindow"))  # type: ignore[call-overload]
        commoned = local_cse(func, r.users, r.edits, window, budget, skip)
        r.edits.flush()
        if r.rebuilt:
            self.stats["trees rebuilt"] += r.rebuilt
        if r.distributed:
            self.stats["products distributed"] += r.distributed
        if r.folded:
            self.stats["constants folded"] += r.folded
        if commoned:
            self.stats["instructions commoned"] += commoned
        if pruned:
            self.stats["dead inner nodes removed"] += pruned
        return bool(r.rebuilt or r.distributed or commoned or pruned)
