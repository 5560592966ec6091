"""The generator's state: register pools, contexts, immediates and the feature registry.

A kernel is built statement by statement.  Every *pool* register is written in the
prologue (from the inputs), so any later read sees a defined value on every path;
statements overwrite pool registers, which is what makes phis, partial definitions
(guards) and values live across loops.  Temporaries hold intermediate values inside
one statement only.  The epilogue stores every pool register, so every write can be
observed.

Each pool register carries a flag: *uniform* means "the same in every thread of the
CTA" (derived only from parameters, ``%ctaid``, ``%ntid``, immediates and read-only
uniform loads, under CTA-uniform control).  The flag is conservative: a register is
uniform only when that is certain.  A :class:`Ctx` with ``uniform=True`` means every
live thread of the CTA executes the statement together; only there may barriers and
warp-synchronous instructions appear, which keeps every kernel free of divergent
barriers and of undefined warp-synchronous behaviour.

A feature is a function ``emit(gen, ctx)`` registered with :func:`feature`; adding a
kind of code to the fuzzer is writing one such function in the module of its family.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TypeVar

T = TypeVar("T")

# register classes: name -> (PTX register type, prefix, bits)
CLASSES: dict[str, tuple[str, str, int]] = {
    "p": (".pred", "%p", 1),
    "h": (".b16", "%h", 16),
    "r": (".b32", "%r", 32),
    "rd": (".b64", "%rd", 64),
    "f": (".f32", "%f", 32),
    "fd": (".f64", "%fd", 64),
}

# values that break naive reasoning: zero, signs, extremes, bit-width boundaries
EDGE_INT = {
    16: (0, 1, 2, 7, 15, 16, 17, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0xFFFE),
    32: (0, 1, 2, 7, 31, 32, 33, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF,
         0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFFE),
    64: (0, 1, 2, 63, 64, 65, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF,
         0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0xFFFFFFFF00000000),
}  # fmt: skip
EDGE_F32 = (
    0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000,
    0x7F800001, 0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0x3F000000, 0x4F000000,
    0xCF000000, 0x3FC00000,
)  # fmt: skip
EDGE_F64 = (
    0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000, 0xBFF0000000000000,
    0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0x0000000000000001,
    0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x41E0000000000000, 0xC3E0000000000000,
    0x3FE8000000000000,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Ctx:
    """Where a statement is emitted."""

    uniform: bool = True  # all live threads of the CTA execute it together
    depth: int = 0  # nesting of compound statements
    loop_depth: int = 0
    in_func: bool = False

    def nested(self, uniform: bool | None = None, loop: bool = False) -> Ctx:
        u = self.uniform if uniform is None else (self.uniform and uniform)
        return replace(self, uniform=u, depth=self.depth + 1, loop_depth=self.loop_depth + loop)


@dataclass(slots=True)
class Scope:
    """One function body under construction."""

    name: str
    lines: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    pool: dict[str, list[str]] = field(default_factory=dict)
    varying: set[str] = field(default_factory=set)

    def new(self, cls: str) -> str:
        """A fresh register of class ``cls`` (declared by :meth:`declarations`)."""
        n = self.counts[cls]
        self.counts[cls] = n + 1
        return f"{CLASSES[cls][1]}{n}"

    def emit(self, line: str) -> None:
        self.lines.append(line if line.endswith(":") else "\t" + line)

    def declarations(self) -> list[str]:
        return [
            f"\t.reg {CLASSES[c][0]} {CLASSES[c][1]}<{n}>;" for c, n in self.counts.items() if n
        ]


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    emit: Callable[[Gen, Ctx], None]
    weight: float
    uniform_only: bool = False  # barriers, warp-synchronous instructions
    kernel_only: bool = False  # needs the kernel's buffers or may not run in a .func
    compound: bool = False  # nests statements


FEATURES: dict[str, Feature] = {}
# flags that change how other features emit instead of adding statements
MODIFIERS = {
    "guards": "predicated (partial) writes on arithmetic, loads, stores and atomics",
    "divergent-loop": "loops with per-thread trip counts and breaks (divergent exits)",
}


def feature(
    name: str,
    weight: float,
    *,
    uniform_only: bool = False,
    kernel_only: bool = False,
    compound: bool = False,
) -> Callable[[Callable[[Gen, Ctx], None]], Callable[[Gen, Ctx], None]]:
    """Register a statement kind under ``name`` (the flag that enables it)."""

    def deco(fn: Callable[[Gen, Ctx], None]) -> Callable[[Gen, Ctx], None]:
        FEATURES[name] = Feature(name, fn, weight, uniform_only, kernel_only, compound)
        return fn

    return deco


@dataclass(slots=True)
class KernelFacts:
    """Registers the prologue computes that statements may read (kernel only)."""

    ltid: str = ""  # linear thread index in the CTA
    nthr: str = ""  # threads per CTA
    nthr32: str = ""  # threads per CTA rounded up to whole warps (barrier counts)
    gtid: str = ""  # linear thread index in the grid
    pin: str = ""  # this thread's input words
    puin: str = ""  # words every thread reads (uniform)
    pout: str = ""  # this thread's output words
    pacc: str = ""  # words shared by all threads (contended atomics)
    pcta0: str = ""  # the output words of the CTA's first thread (warp-uniform address)
    sh: str = ""  # shared exchange array (32-bit address)
    shc: str = ""  # shared counters (32-bit address)
    partial: str = ""  # predicate: the CTA has a partial warp


class Gen:
    """Random choices plus the scope being written; feature modules call its helpers."""

    MAX_DEPTH = 3

    def __init__(self, seed: int, features: frozenset[str]) -> None:
        self.rng = random.Random(seed)
        self.features = features
        self.labels = 0
        self.scope = Scope("")
        self.facts = KernelFacts()
        self.budget = 0
        self.no_sync = False  # a thread may have exited: no more barriers or warp ops
        self.funcs: list[FuncSig] = []
        self.in_words = 0  # per-thread input words the statements may read
        self.uin_words = 0
        self.scratch = (0, 0)  # (first word, count) of the per-thread scratch in out
        self.acc_words = 8

    # -- randomness -----------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def choice(self, seq: Iterable[T]) -> T:
        return self.rng.choice(list(seq))

    def has(self, name: str) -> bool:
        return name in self.features

    # -- labels and lines -------------------------------------------------------------
    def label(self) -> str:
        self.labels += 1
        return f"$L{self.labels}"

    def emit(self, line: str) -> None:
        self.scope.emit(line)

    def place(self, label: str) -> None:
        self.scope.emit(label + ":")

    # -- registers ----------------------------------------------------------------------
    def temp(self, cls: str) -> str:
        return self.scope.new(cls)

    def src(self, cls: str) -> str:
        """A pool register of class ``cls``."""
        return self.rng.choice(self.scope.pool[cls])

    def varying(self, *regs: str) -> bool:
        return any(r in self.scope.varying for r in regs)

    def dest(self, cls: str, ctx: Ctx, varying: bool) -> str:
        """A pool register to overwrite; its flag becomes what it now holds."""
        d = self.rng.choice(self.scope.pool[cls])
        self.set_flag(d, varying or not ctx.uniform)
        return d

    def set_flag(self, reg: str, varying: bool) -> None:
        if varying:
            self.scope.varying.add(reg)
        else:
            self.scope.varying.discard(reg)

    def guard(self, ctx: Ctx) -> tuple[str, bool]:
        """An optional ``@%p``/``@!%p`` prefix and whether it is varying."""
        if not self.has("guards") or not self.chance(0.2):
            return "", False
        p = self.src("p")
        return f"@{'!' if self.chance(0.5) else ''}{p} ", self.varying(p)

    def operand(self, cls: str, imm_p: float = 0.2) -> str:
        """A pool register, or sometimes an edge-valued immediate."""
        if cls in ("r", "rd", "h") and self.chance(imm_p):
            return str(self.int_imm(CLASSES[cls][2]))
        if cls == "f" and self.chance(imm_p / 2):
            return f"0f{self.rng.choice(EDGE_F32):08X}"
        if cls == "fd" and self.chance(imm_p / 2):
            return f"0d{self.rng.choice(EDGE_F64):016X}"
        return self.src(cls)

    def field(self) -> str:
        """A bit position or length operand: a pool register or an immediate 0..255."""
        if self.chance(0.4):
            return self.src("r")
        return str(self.rng.choice((0, 1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 255)))

    def int_imm(self, bits: int) -> int:
        return self.rng.choice(EDGE_INT[bits]) if self.chance(0.7) else self.rng.randrange(-8, 9)

    def pool_varying(self, ops: Iterable[str]) -> bool:
        return any(o in self.scope.varying for o in ops)

    # -- backtracking -----------------------------------------------------------------
    def checkpoint(self) -> tuple[int, dict[str, int], set[str], int, bool]:
        sc = self.scope
        return len(sc.lines), dict(sc.counts), set(sc.varying), self.budget, self.no_sync

    def rollback(self, cp: tuple[int, dict[str, int], set[str], int, bool]) -> None:
        n, counts, varying, self.budget, self.no_sync = cp
        sc = self.scope
        del sc.lines[n:]
        sc.counts = counts
        sc.varying = varying

    def all_pool(self) -> set[str]:
        return {r for regs in self.scope.pool.values() for r in regs}

    # -- statements ---------------------------------------------------------------------
    def allowed(self, f: Feature, ctx: Ctx) -> bool:
        if f.name not in self.features:
            return False
        if f.uniform_only and (not ctx.uniform or self.no_sync or ctx.in_func):
            return False
        if f.kernel_only and ctx.in_func:
            return False
        return not (f.compound and ctx.depth >= self.MAX_DEPTH)

    def statements(self, ctx: Ctx, n: int) -> None:
        for _ in range(n):
            if self.budget <= 0:
                return
            self.statement(ctx)

    def statement(self, ctx: Ctx) -> None:
        cands = [f for f in FEATURES.values() if self.allowed(f, ctx)]
        if not cands:
            return
        f = self.rng.choices(cands, weights=[c.weight for c in cands])[0]
        self.budget -= 1
        f.emit(self, ctx)


@dataclass(frozen=True, slots=True)
class FuncSig:
    """A generated ``.func``: parameter and result register classes."""

    name: str
    params: tuple[str, ...]
    result: str
