"""Edge tables: selection and moves (``selp``, ``mov`` packing), atomics at edge values
(``atom``/``red`` with every operation, wrap-around of ``inc``/``dec``, signed
``min``/``max``, ``cas`` misses, f32 flushing) and the warp collectives (``vote``,
``shfl.sync`` in every mode with clamp and segment values, ``redux.sync``,
``match.sync``, ``activemask``, ``elect.sync``) over whole warps of per-lane inputs.
References: Python integers; cross-lane references are computed per warp of 32
consecutive lanes (the kernels run in blocks that are whole warps).

Reading settled on an H100: ``atom.add.f32`` flushes subnormal inputs and results
to zero of the same sign, as the ISA says, and returns the canonical NaN 0x7fffffff
for a NaN sum.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from lanes import Case, grid, make
from refs import F32, Val, decode, edge_floats, edge_ints, encode, signed, wrap

FAMILY = "misc"


def _select_cases() -> list[Case]:
    out = []
    for t in ("b16", "u32", "s64", "f32", "f64"):
        bits = 16 if t == "b16" else 32 if t in ("u32", "f32") else 64
        vals = edge_ints(bits)
        a, b, p = grid(vals[:6], vals[-6:], [0, 1])
        out.append(
            make(
                f"selp.{t}",
                FAMILY,
                f"selp.{t} %d, %a, %b, %p;",
                {"a": (t, a), "b": (t, b), "p": ("pred", p)},
                {"d": (t, lambda x, y, q: x if q else y)},
            )
        )
    words = edge_ints(64)
    out.append(
        make(
            "mov.b64 pack/unpack",
            FAMILY,
            "mov.b64 {%lo, %hi}, %a;\nmov.b64 %d, {%hi, %lo};\n"
            "mov.b32 {%s0, %s1}, %lo;\nmov.b32 %e, {%s1, %s0};",
            {"a": ("b64", words)},
            {
                "d": ("b64", lambda x: (x >> 32) | ((x & 0xFFFFFFFF) << 32)),
                "e": ("b32", lambda x: ((x & 0xFFFF) << 16) | ((x >> 16) & 0xFFFF)),
            },
            regs=".reg .b32 %lo, %hi;\n.reg .b16 %s0, %s1;",
        )
    )
    return out


def _inc(old: int, b: int) -> int:
    return 0 if old >= b else old + 1


def _dec(old: int, b: int) -> int:
    return b if old == 0 or old > b else old - 1


def _f32_add_ftz(x: int, y: int) -> int:
    """atom.add.f32: subnormal inputs and results flush to zero, round to nearest."""
    a, b = decode(x, F32), decode(y, F32)
    tiny = Fraction(2) ** F32.emin
    a = Val(a.kind, a.neg, Fraction(0)) if a.kind == "num" and a.mag < tiny else a
    b = Val(b.kind, b.neg, Fraction(0)) if b.kind == "num" and b.mag < tiny else b
    if "nan" in (a.kind, b.kind) or (a.kind == b.kind == "inf" and a.neg != b.neg):
        return 0x7FFFFFFF
    if a.kind == "inf" or b.kind == "inf":
        return encode(a if a.kind == "inf" else b, F32)
    s = a.value + b.value
    r = decode(encode(Val.of(s, a.neg and b.neg), F32), F32)
    return encode(Val("num", r.neg) if r.kind == "num" and r.mag < tiny else r, F32)


def _atomic_cases() -> list[Case]:
    """``atom.global.op`` on each lane's own word (the input ``b``'s element): the
    old value is returned, the new one read back."""
    out = []
    ops = {
        "add.u32": lambda o, a: o + a,
        "min.s32": lambda o, a: min(signed(o, 32), signed(a, 32)),
        "max.s32": lambda o, a: max(signed(o, 32), signed(a, 32)),
        "min.u32": min,
        "max.u32": max,
        "inc.u32": _inc,
        "dec.u32": _dec,
        "and.b32": lambda o, a: o & a,
        "or.b32": lambda o, a: o | a,
        "xor.b32": lambda o, a: o ^ a,
        "exch.b32": lambda o, a: a,
    }
    vals = edge_ints(32)
    a, b = grid(vals, vals)
    for op, fn in ops.items():
        t = op.split(".")[1]
        out.append(
            make(
                f"atom.{op}",
                FAMILY,
                f"atom.global.{op} %d, [%addr], %a;\nld.global.{t} %e, [%addr];",
                {"a": (t, a), "b": (t, b)},
                {"d": (t, lambda x, y: y), "e": (t, lambda x, y, fn=fn: fn(y, x))},
            )
        )
    c = [vals[(i * 3) % len(vals)] for i in range(len(a))]
    hits = [x if i % 3 else y for i, (x, y) in enumerate(zip(a, b, strict=True))]  # some match
    out.append(
        make(
            "atom.cas.b32",
            FAMILY,
            "atom.global.cas.b32 %d, [%addr], %a, %c;\nld.global.b32 %e, [%addr];",
            {"a": ("b32", a), "c": ("b32", c), "b": ("b32", hits)},
            {
                "d": ("b32", lambda x, z, y: y),
                "e": ("b32", lambda x, z, y: z if y == x else y),
            },
        )
    )
    fv = edge_floats(F32)
    fa, fb = grid(fv, fv)
    out.append(
        make(
            "atom/red.add.f32",
            FAMILY,
            "atom.global.add.f32 %d, [%addr], %a;\nred.global.add.f32 [%addr], %a;\n"
            "ld.global.f32 %e, [%addr];",
            {"a": ("f32", fa), "b": ("f32", fb)},
            {
                "d": ("f32", lambda x, y: y),
                "e": ("f32", lambda x, y: _f32_add_ftz(x, _f32_add_ftz(y, x))),
            },
        )
    )
    w64 = edge_ints(64)
    a6, b6 = grid(w64, w64)
    out.append(
        make(
            "atom.add/max.u64",
            FAMILY,
            "atom.global.add.u64 %d, [%addr], %a;\natom.global.max.s64 %f, [%addr], %a;\n"
            "ld.global.u64 %e, [%addr];",
            {"a": ("u64", a6), "b": ("u64", b6)},
            {
                "d": ("u64", lambda x, y: y),
                "f": ("u64", lambda x, y: wrap(x + y, 64)),
                "e": ("s64", lambda x, y: max(signed(wrap(x + y, 64), 64), signed(x, 64))),
            },
        )
    )
    return out


def _warps(n: int) -> list[range]:
    return [range(w, w + 32) for w in range(0, n, 32)]


def _warp_cases() -> list[Case]:
    """Collectives over full warps of per-lane inputs (all lanes active)."""
    rng = np.random.default_rng(3)
    n = 32 * 8
    x = [int(v) for v in rng.integers(0, 1 << 32, n, dtype=np.uint64)]
    # warps 0-1: edge values, warp 2: all equal, warp 3: few distinct values
    x[0:32] = [edge_ints(32)[i % len(edge_ints(32))] for i in range(32)]
    x[32:64] = [wrap(-i, 32) if i % 2 else 0x80000000 + i for i in range(32)]
    x[64:96] = [0xDEADBEEF] * 32
    x[96:128] = [i % 3 for i in range(32)]
    pred = [(v >> 7) & 1 for v in x]
    pred[128:160] = [1] * 32
    pred[160:192] = [0] * 32
    outs: dict[str, list[int]] = {k: [0] * n for k in ("ball", "all", "any", "uni")}
    outs |= {k: [0] * n for k in ("rmin", "rmax", "radd", "rand", "ror", "rxor", "rumin")}
    outs |= {k: [0] * n for k in ("many", "mall", "mallp", "sidx", "sup", "sdown", "sbfly")}
    outs |= {k: [0] * n for k in ("supp", "sdownp", "seg", "act", "el", "elp")}
    for lanes in _warps(n):
        xs = [x[i] for i in lanes]
        ps = [pred[i] for i in lanes]
        ball = sum(p << k for k, p in enumerate(ps))
        sx = [signed(v, 32) for v in xs]
        for k, i in enumerate(lanes):
            outs["ball"][i] = ball
            outs["all"][i] = int(all(ps))
            outs["any"][i] = int(any(ps))
            outs["uni"][i] = int(all(ps) or not any(ps))
            outs["rmin"][i] = min(sx)
            outs["rmax"][i] = max(sx)
            outs["radd"][i] = sum(xs)
            outs["rumin"][i] = min(xs)
            outs["rand"][i] = _fold(xs, lambda a, b: a & b)
            outs["ror"][i] = _fold(xs, lambda a, b: a | b)
            outs["rxor"][i] = _fold(xs, lambda a, b: a ^ b)
            outs["many"][i] = sum(1 << j for j, v in enumerate(xs) if v == xs[k])
            same = len(set(xs)) == 1
            outs["mall"][i] = 0xFFFFFFFF if same else 0
            outs["mallp"][i] = int(same)
            src = xs[k] & 31  # shfl lane operand: each lane's own value
            outs["sidx"][i] = xs[src]
            up = k - 3
            outs["sup"][i] = xs[up] if up >= 0 else xs[k]
            outs["supp"][i] = int(up >= 0)
            dn = k + 5
            outs["sdown"][i] = xs[dn] if dn <= 31 else xs[k]
            outs["sdownp"][i] = int(dn <= 31)
            outs["sbfly"][i] = xs[k ^ 6]
            # segmented idx: segments of 8 lanes (c = 0x1807: seg mask 0x18, clamp 7)
            base = k & 0x18
            j = base | (2 & ~0x18)
            outs["seg"][i] = xs[j]
            outs["act"][i] = 0xFFFFFFFF
            outs["el"][i] = 0
            outs["elp"][i] = int(k == 0)
    body = """
vote.sync.ballot.b32 %ball, %p, 0xffffffff;
vote.sync.all.pred %qall, %p, 0xffffffff;
vote.sync.any.pred %qany, %p, 0xffffffff;
vote.sync.uni.pred %quni, %p, 0xffffffff;
selp.u32 %all, 1, 0, %qall;
selp.u32 %any, 1, 0, %qany;
selp.u32 %uni, 1, 0, %quni;
redux.sync.min.s32 %rmin, %a, 0xffffffff;
redux.sync.max.s32 %rmax, %a, 0xffffffff;
redux.sync.add.u32 %radd, %a, 0xffffffff;
redux.sync.min.u32 %rumin, %a, 0xffffffff;
redux.sync.and.b32 %rand, %a, 0xffffffff;
redux.sync.or.b32 %ror, %a, 0xffffffff;
redux.sync.xor.b32 %rxor, %a, 0xffffffff;
match.any.sync.b32 %many, %a, 0xffffffff;
match.all.sync.b32 %mall|%qm, %a, 0xffffffff;
selp.u32 %mallp, 1, 0, %qm;
and.b32 %lane, %a, 31;
shfl.sync.idx.b32 %sidx, %a, %lane, 0x1f, 0xffffffff;
shfl.sync.up.b32 %sup|%qu, %a, 3, 0, 0xffffffff;
selp.u32 %supp, 1, 0, %qu;
shfl.sync.down.b32 %sdown|%qd, %a, 5, 0x1f, 0xffffffff;
selp.u32 %sdownp, 1, 0, %qd;
shfl.sync.bfly.b32 %sbfly, %a, 6, 0x1f, 0xffffffff;
shfl.sync.idx.b32 %seg, %a, 2, 0x1807, 0xffffffff;
activemask.b32 %act;
elect.sync %el|%qe, 0xffffffff;
selp.u32 %elp, 1, 0, %qe;
"""
    signed_outs = {"rmin", "rmax"}
    outputs = {k: ("s32" if k in signed_outs else "b32", v) for k, v in outs.items()}
    regs = ".reg .pred %qall, %qany, %quni, %qm, %qu, %qd, %qe;\n.reg .b32 %lane;"
    return [
        make(
            "warp collectives",
            FAMILY,
            body,
            {"a": ("b32", x), "p": ("pred", pred)},
            outputs,
            regs=regs,
        )
    ]


def _fold(xs: list[int], fn: object) -> int:
    acc = xs[0]
    for v in xs[1:]:
        acc = fn(acc, v)  # type: ignore[operator]
    return acc


def cases() -> list[Case]:
    return _select_cases() + _atomic_cases() + _warp_cases()
