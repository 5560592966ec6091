"""Whole kernels: module header, device functions, the entry's prologue (thread indices,
buffer pointers, pool registers loaded from the inputs), random statements, and an
epilogue that stores every pool register.

The buffer layout is written into a first-line comment (``// ptxopt-fuzz-kernel ...``)
so a reproducer file alone says how to build its inputs (see
:mod:`fuzz.kernelgen.inputs`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# feature modules register themselves on import
from fuzz.kernelgen import arith, control, memory, warp  # noqa: F401
from fuzz.kernelgen.calls import make_function
from fuzz.kernelgen.core import CLASSES, FEATURES, MODIFIERS, Ctx, Gen, Scope

ALL_FEATURES = frozenset(FEATURES) | frozenset(MODIFIERS)
KERNEL_POOL = {"r": 6, "rd": 3, "f": 3, "fd": 2, "h": 3, "p": 3}  # p last: set from r
IN_WORDS = 16  # per-thread input words
UIN_WORDS = 8  # words every thread reads
SCRATCH_WORDS = 8
ACC_WORDS = 8
PARAMS = (("in", ".u64"), ("uin", ".u64"), ("out", ".u64"), ("acc", ".u64"),
          ("a", ".u32"), ("b", ".u64"), ("c", ".f32"), ("d", ".f64"))  # fmt: skip
HEADER = re.compile(r"^// ptxopt-fuzz-kernel seed=(\d+) in=(\d+) uin=(\d+) out=(\d+) acc=(\d+)")


@dataclass(frozen=True, slots=True)
class Layout:
    """Buffer sizes of a generated kernel, in 32-bit words (per thread for in/out)."""

    in_words: int = IN_WORDS
    uin_words: int = UIN_WORDS
    out_words: int = 0
    acc_words: int = ACC_WORDS


@dataclass(frozen=True, slots=True)
class Kernel:
    seed: int
    text: str
    layout: Layout
    name: str = "fk"


def layout_of(text: str) -> Layout:
    """The layout recorded in a generated kernel's first line."""
    m = HEADER.match(text)
    if m is None:
        raise ValueError("not a generated kernel: the '// ptxopt-fuzz-kernel' line is missing")
    _, i, u, o, a = (int(x) for x in m.groups())
    return Layout(i, u, o, a)


def generate_kernel(seed: int, features: Iterable[str] | None = None) -> Kernel:
    """The kernel of ``seed`` using ``features`` (default: all of :data:`ALL_FEATURES`)."""
    feats = ALL_FEATURES if features is None else frozenset(features)
    unknown = feats - ALL_FEATURES
    if unknown:
        raise ValueError(f"unknown feature {sorted(unknown)[0]!r}")
    g = Gen(seed, feats)
    g.in_words, g.uin_words, g.acc_words = IN_WORDS, UIN_WORDS, ACC_WORDS
    funcs: list[str] = []
    if "call" in feats:
        for i in range(g.rng.randint(1, 3)):
            funcs += [*make_function(g, i), ""]
    g.scope = Scope("fk")
    slots = _prologue(g)
    g.budget = g.rng.randint(8, 40)
    g.statements(Ctx(), 10**6)
    out_words = _epilogue(g, slots)
    layout = Layout(IN_WORDS, UIN_WORDS, out_words, ACC_WORDS)
    text = _module(g, seed, layout, funcs)
    return Kernel(seed, text, layout)


def _fact(g: Gen, text: str, varying: bool, cls: str = "r") -> str:
    reg = g.temp(cls)
    g.set_flag(reg, varying)
    g.emit(text.format(t=reg))
    return reg


def _prologue(g: Gen) -> int:
    """Thread indices, pointers, pool registers; returns the first scratch word."""
    f = g.facts
    ptr = {}
    for name in ("in", "uin", "out", "acc"):
        r = _fact(g, f"ld.param.u64 {{t}}, [fk_{name}];", False, "rd")
        g.emit(f"cvta.to.global.u64 {r}, {r};")
        ptr[name] = r
    sp = {n: _fact(g, f"mov.u32 {{t}}, %{n};", n.startswith("tid"), "r") for n in
          ("tid.x", "tid.y", "tid.z", "ntid.x", "ntid.y", "ntid.z", "ctaid.x", "ctaid.y",
           "ctaid.z", "nctaid.x", "nctaid.y")}  # fmt: skip
    t = _fact(g, f"mad.lo.u32 {{t}}, {sp['ntid.y']}, {sp['tid.z']}, {sp['tid.y']};", True)
    f.ltid = _fact(g, f"mad.lo.u32 {{t}}, {sp['ntid.x']}, {t}, {sp['tid.x']};", True)
    f.nthr = _fact(g, f"mul.lo.u32 {{t}}, {sp['ntid.x']}, {sp['ntid.y']};", False)
    g.emit(f"mul.lo.u32 {f.nthr}, {f.nthr}, {sp['ntid.z']};")
    c = _fact(g, f"mad.lo.u32 {{t}}, {sp['nctaid.y']}, {sp['ctaid.z']}, {sp['ctaid.y']};", False)
    g.emit(f"mad.lo.u32 {c}, {sp['nctaid.x']}, {c}, {sp['ctaid.x']};")
    f.gtid = _fact(g, f"mad.lo.u32 {{t}}, {c}, {f.nthr}, {f.ltid};", True)
    f.pin = _thread_ptr(g, ptr["in"], IN_WORDS)
    f.puin, f.pacc = ptr["uin"], ptr["acc"]
    w = _fact(g, f"and.b32 {{t}}, {f.nthr}, 31;", False)
    f.partial = _fact(g, f"setp.ne.u32 {{t}}, {w}, 0;", False, "p")
    f.nthr32 = _fact(g, f"add.u32 {{t}}, {f.nthr}, 31;", False)
    g.emit(f"and.b32 {f.nthr32}, {f.nthr32}, -32;")
    f.sh = _fact(g, "mov.u32 {t}, fk_sh;", False)
    f.shc = _fact(g, "mov.u32 {t}, fk_shc;", False)
    if "shared-atomic" in g.features:
        z = _fact(g, "mov.u32 {t}, 0;", False)
        q = _fact(g, f"setp.eq.u32 {{t}}, {f.ltid}, 0;", True, "p")
        g.emit(f"@{q} st.shared.v4.u32 [{f.shc}], {{{z}, {z}, {z}, {z}}};")
        g.emit("bar.sync 0;")
    for cls, n in KERNEL_POOL.items():
        g.scope.pool[cls] = [g.temp(cls) for _ in range(n)]
        for reg in g.scope.pool[cls]:
            _init_pool(g, reg, cls, sp)
    # output slots (see _epilogue), then the scratch words
    pool = g.scope.pool
    words = sum((2 if c in ("rd", "fd") else 1) * len(regs) for c, regs in pool.items())
    first = (words + 1) // 2 * 2
    g.scratch = (first, SCRATCH_WORDS)
    f.pout = _thread_ptr(g, ptr["out"], first + SCRATCH_WORDS)
    if "uniform-atomic" in g.features:
        t0 = _fact(g, f"mul.lo.u32 {{t}}, {c}, {f.nthr};", False)
        f.pcta0 = _fact(g, f"mul.wide.u32 {{t}}, {t0}, {4 * (first + SCRATCH_WORDS)};", False, "rd")
        g.emit(f"add.s64 {f.pcta0}, {ptr['out']}, {f.pcta0};")
    return first


def _thread_ptr(g: Gen, base: str, words: int) -> str:
    o = _fact(g, f"mul.wide.u32 {{t}}, {g.facts.gtid}, {4 * words};", True, "rd")
    g.emit(f"add.s64 {o}, {base}, {o};")
    return o


def _init_pool(g: Gen, reg: str, cls: str, sp: dict[str, str]) -> None:
    """Define pool register ``reg`` from this thread's inputs, the shared inputs, a
    parameter or a thread index (predicates: a comparison of an integer register)."""
    f = g.facts
    bits = CLASSES[cls][2]
    size = max(bits // 8, 4) if cls != "h" else 2
    per_thread = f"[{f.pin}+{g.rng.randrange(IN_WORDS * 4 // size) * size}]"
    shared = f"[{f.puin}+{g.rng.randrange(UIN_WORDS * 4 // size) * size}]"
    ty = {"r": "u32", "rd": "u64", "f": "f32", "fd": "f64", "h": "u16"}.get(cls, "")
    param = {"r": "fk_a", "rd": "fk_b", "f": "fk_c", "fd": "fk_d"}.get(cls)
    choices: list[tuple[str, bool]] = []
    if cls == "p":
        a = g.src("r")
        cmp = g.choice(("ne.u32", "lt.s32", "gt.u32", "eq.u32"))
        choices.append((f"setp.{cmp} {reg}, {a}, {g.int_imm(32)};", g.varying(a)))
    else:
        choices += [(f"ld.global.{ty} {reg}, {per_thread};", True)] * 3
        choices.append((f"ld.global.nc.{ty} {reg}, {shared};", False))
        if param is not None:
            choices.append((f"ld.param.{ty} {reg}, [{param}];", False))
    if cls == "r":
        choices.append((f"mov.u32 {reg}, {sp['ctaid.x']};", False))
        choices.append((f"mov.u32 {reg}, %laneid;", True))
        choices.append((f"mov.u32 {reg}, {f.ltid};", True))
    text, varying = g.rng.choice(choices)
    g.set_flag(reg, varying)
    g.emit(text)


STORE_TYPE = {"rd": "b64", "fd": "f64", "r": "b32", "f": "f32", "h": "b16"}


def _epilogue(g: Gen, first_scratch: int) -> int:
    """Store every pool register; returns the output words per thread."""
    f = g.facts
    off = 0
    for cls in ("rd", "fd", "r", "f", "h", "p"):
        for reg in g.scope.pool[cls]:
            if cls == "p":
                t = g.temp("r")
                g.emit(f"selp.u32 {t}, 1, 0, {reg};")
                g.emit(f"st.global.u32 [{f.pout}+{off}], {t};")
            else:
                g.emit(f"st.global.{STORE_TYPE[cls]} [{f.pout}+{off}], {reg};")
            off += 8 if cls in ("rd", "fd") else 4
    assert off <= first_scratch * 4
    g.emit("ret;")
    return first_scratch + SCRATCH_WORDS


def _module(g: Gen, seed: int, layout: Layout, funcs: list[str]) -> str:
    feats = "all" if g.features == ALL_FEATURES else ",".join(sorted(g.features))
    params = ",\n".join(f"\t.param {ty} fk_{n}" for n, ty in PARAMS)
    lines = [
        f"// ptxopt-fuzz-kernel seed={seed} in={layout.in_words} uin={layout.uin_words} "
        f"out={layout.out_words} acc={layout.acc_words}",
        f"// features: {feats}",
        ".version 8.0",
        ".target sm_80",
        ".address_size 64",
        "",
        ".shared .align 8 .b8 fk_sh[8192];",
        ".shared .align 16 .b32 fk_shc[4];",
        "",
        *funcs,
        f".visible .entry fk(\n{params}\n)",
        "{",
        *g.scope.declarations(),
        *g.scope.lines,
        "}",
        "",
    ]
    return "\n".join(lines)
