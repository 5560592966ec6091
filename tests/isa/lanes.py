"""Edge-value cases: one small kernel per case, one lane per input tuple.

A :class:`Case` names its inputs (``%a``, ``%b`` ... loaded from global memory, one
element per thread), its outputs (``%d``, ``%e`` ... stored back) and a body of PTX
that computes the outputs; in the body ``%addr`` holds the global address of the last
input's element (atomics operate on it).  The expected outputs are computed when the case is built,
by references written from the ISA text (:mod:`refs`) - never by the interpreter.

The same kernels feed the hardware check (``hwcheck/``): :func:`kernel_text` is the
exact PTX that runs in the interpreter and on the GPU.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

#: memory type -> (numpy dtype, register type used when none is given)
MEM = {
    "u8": (np.uint8, ".u8"),
    "s8": (np.int8, ".s8"),
    "b8": (np.uint8, ".b8"),
    "u16": (np.uint16, ".u16"),
    "s16": (np.int16, ".s16"),
    "b16": (np.uint16, ".b16"),
    "f16": (np.uint16, ".f16"),
    "bf16": (np.uint16, ".b16"),
    "u32": (np.uint32, ".u32"),
    "s32": (np.int32, ".s32"),
    "b32": (np.uint32, ".b32"),
    "f32": (np.uint32, ".f32"),
    "u64": (np.uint64, ".u64"),
    "s64": (np.int64, ".s64"),
    "b64": (np.uint64, ".b64"),
    "f64": (np.uint64, ".f64"),
    "pred": (np.uint8, ".pred"),
}
_LDST = {"f16": "b16", "bf16": "b16", "f32": "b32", "f64": "b64", "pred": "u8"}


@dataclass(slots=True)
class Port:
    """One input or output: its register ``%name``, memory type and register type."""

    name: str
    mem: str
    reg: str = ""

    def __post_init__(self) -> None:
        if not self.reg:
            self.reg = MEM[self.mem][1]

    @property
    def dtype(self) -> type:
        return MEM[self.mem][0]  # type: ignore[return-value]

    @property
    def size(self) -> int:
        return int(np.dtype(self.dtype).itemsize)


@dataclass(slots=True)
class Case:
    """A kernel over ``len(values)`` lanes; ``expect`` holds the reference outputs
    (raw bits in the memory type) and ``any_nan`` the outputs of a float type where
    any NaN encoding is accepted; ``hw_deviation`` describes a known disagreement
    of the GPU with the ISA text (``hwcheck/compare.py`` reports it as such)."""

    name: str
    family: str
    body: str
    inputs: list[Port]
    outputs: list[Port]
    values: dict[str, np.ndarray]
    expect: dict[str, np.ndarray]
    target: str = "sm_90"
    version: str = "8.6"
    regs: str = ""
    any_nan: frozenset[str] = field(default_factory=frozenset)
    # where the GPU is known to contradict the ISA text (the reference follows the ISA)
    hw_deviation: str = ""

    @property
    def lanes(self) -> int:
        return len(next(iter(self.values.values())))

    def opcodes(self) -> set[str]:
        """Instruction names (``add.cc.u32`` ...) of the body."""
        out = set()
        for line in self.body.splitlines():
            s = line.strip().rstrip(";")
            if s and not s.startswith(("//", "@")):
                out.add(s.split()[0])
            elif s.startswith("@"):
                out.add(s.split()[1])
        return out


def kernel_text(case: Case) -> str:
    """The PTX of ``case``: entry ``edge(p_<input>..., p_<output>..., n)``."""
    params = [f".param .u64 p_{p.name}" for p in case.inputs + case.outputs]
    params.append(".param .u32 n")
    decl = [
        ".reg .pred %lane_out;",
        ".reg .b32 %gid, %cnt, %tmp32;",
        ".reg .b64 %addr;",
        ".reg .b16 %tmp16;",
    ]
    decl += [f".reg {p.reg} %{p.name};" for p in case.inputs + case.outputs]
    lines = [
        "mov.u32 %gid, %tid.x;",
        "mov.u32 %tmp32, %ctaid.x;",
        "mov.u32 %cnt, %ntid.x;",
        "mad.lo.u32 %gid, %tmp32, %cnt, %gid;",
        "ld.param.u32 %cnt, [n];",
        "setp.ge.u32 %lane_out, %gid, %cnt;",
        "@%lane_out bra DONE;",
    ]
    for p in case.inputs:
        lines += [
            f"ld.param.u64 %addr, [p_{p.name}];",
            f"mad.wide.u32 %addr, %gid, {p.size}, %addr;",
        ]
        if p.mem == "pred":
            lines += ["ld.global.u8 %tmp16, [%addr];", f"setp.ne.u16 %{p.name}, %tmp16, 0;"]
        else:
            lines.append(f"ld.global.{_LDST.get(p.mem, p.mem)} %{p.name}, [%addr];")
    lines += [ln.strip() for ln in case.body.strip().splitlines() if ln.strip()]
    for p in case.outputs:
        lines += [
            f"ld.param.u64 %addr, [p_{p.name}];",
            f"mad.wide.u32 %addr, %gid, {p.size}, %addr;",
        ]
        if p.mem == "pred":
            lines += [f"selp.u16 %tmp16, 1, 0, %{p.name};", "st.global.u8 [%addr], %tmp16;"]
        else:
            lines.append(f"st.global.{_LDST.get(p.mem, p.mem)} [%addr], %{p.name};")
    body = "\n\t".join(decl + ([case.regs] if case.regs else []) + lines)
    return (
        f".version {case.version}\n.target {case.target}\n.address_size 64\n\n"
        f".visible .entry edge({', '.join(params)})\n{{\n\t{body}\nDONE:\n\tret;\n}}\n"
    )


def _address(p: Port) -> list[str]:
    return [f"ld.param.u64 %addr, [p_{p.name}];", f"mad.wide.u32 %addr, %gid, {p.size}, %addr;"]


def buffers(case: Case) -> list[np.ndarray]:
    """Fresh argument arrays: inputs (copies), zeroed outputs."""
    n = case.lanes
    args = [np.ascontiguousarray(case.values[p.name].astype(p.dtype)) for p in case.inputs]
    args += [np.zeros(n, dtype=p.dtype) for p in case.outputs]
    return args


def run_interpreter(case: Case) -> dict[str, np.ndarray]:
    from ptxopt.sim import launch

    args = buffers(case)
    n = case.lanes
    block = min(256, n)
    launch(kernel_text(case), "edge", (n + block - 1) // block, block, [*args, np.uint32(n)])
    outs = args[len(case.inputs) :]
    return {p.name: o for p, o in zip(case.outputs, outs, strict=True)}


def _is_nan_bits(bits: np.ndarray, mem: str) -> np.ndarray:
    u = bits.astype(np.uint64)
    if mem in ("f32",):
        return (u & 0x7FFFFFFF) > 0x7F800000
    if mem == "f64":
        return (u & 0x7FFFFFFFFFFFFFFF) > 0x7FF0000000000000
    if mem == "f16":
        return (u & 0x7FFF) > 0x7C00
    if mem == "bf16":
        return (u & 0x7FFF) > 0x7F80
    return np.zeros(u.shape, dtype=bool)


def mismatches(case: Case, got: dict[str, np.ndarray], limit: int = 8) -> list[str]:
    """Human-readable differences between ``got`` and the case's expectation."""
    out: list[str] = []
    for p in case.outputs:
        exp = case.expect[p.name].astype(p.dtype)
        g = got[p.name].astype(p.dtype)
        bad = exp != g
        if p.name in case.any_nan:
            bad &= ~(_is_nan_bits(exp, p.mem) & _is_nan_bits(g, p.mem))
        for i in np.flatnonzero(bad)[:limit]:
            ins = ", ".join(f"{q.name}={_fmt(case.values[q.name][i], q)}" for q in case.inputs)
            out.append(
                f"{case.name}: lane {i} ({ins}): %{p.name} expected "
                f"{_fmt(exp[i], p)} got {_fmt(g[i], p)}"
            )
        if bad.sum() > limit:
            out.append(f"{case.name}: ... {int(bad.sum())} differing lanes of %{p.name}")
    return out


def digest(a: np.ndarray) -> str:
    """SHA-256 of an array's bytes (the hardware record stores these)."""
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def input_digest(case: Case) -> str:
    """One digest of a case's kernel text and input values: a recorded hardware result
    applies to a case only while this is unchanged."""
    h = hashlib.sha256(kernel_text(case).encode())
    for p in case.inputs:
        h.update(np.ascontiguousarray(case.values[p.name].astype(p.dtype)).tobytes())
    return h.hexdigest()[:16]


def _fmt(v: object, p: Port) -> str:
    if p.mem.startswith(("s",)):
        return str(int(v))  # type: ignore[call-overload]
    width = 2 * p.size
    return f"{int(v) & ((1 << (8 * p.size)) - 1):#0{width + 2}x}"  # type: ignore[call-overload]


# -- building blocks --------------------------------------------------------------------


def grid(*columns: Sequence[int]) -> list[np.ndarray]:
    """Every combination of the given value lists, as parallel int arrays (object
    dtype: Python integers of any width)."""
    mesh = np.meshgrid(*[np.array(c, dtype=object) for c in columns], indexing="ij")
    return [m.ravel() for m in mesh]


def lanes_of(values: Sequence[int] | np.ndarray, mem: str) -> np.ndarray:
    """Python integers (any sign) -> the memory type's bit pattern array."""
    dt = MEM[mem][0]
    bits = 8 * np.dtype(dt).itemsize
    raw = np.array([int(v) & ((1 << bits) - 1) for v in values], dtype=np.uint64)
    return raw.astype(np.dtype(f"u{bits // 8}")).view(dt)


def make(
    name: str,
    family: str,
    body: str,
    inputs: dict[str, tuple],
    outputs: dict[str, tuple],
    **kw: object,
) -> Case:
    """Build a case.  ``inputs``: name -> (memory type, column of Python integers (bit
    patterns or signed values){, register type}); ``outputs``: name -> (memory type,
    reference{, register type}) where the reference is a function called once per lane
    with the inputs' *bit patterns* (unsigned Python integers) or a precomputed column.
    Keyword arguments are :class:`Case` fields."""
    in_ports = [Port(k, spec[0], spec[2] if len(spec) > 2 else "") for k, spec in inputs.items()]
    values = {k: lanes_of(spec[1], spec[0]) for k, spec in inputs.items()}
    cols = [[_bits(x, p.size) for x in values[p.name]] for p in in_ports]
    n = len(cols[0])
    out_ports = []
    expect = {}
    for k, spec in outputs.items():
        mem, ref = spec[0], spec[1]
        out_ports.append(Port(k, mem, spec[2] if len(spec) > 2 else ""))
        column = [ref(*(c[i] for c in cols)) for i in range(n)] if callable(ref) else list(ref)
        expect[k] = lanes_of(column, mem)
    return Case(name, family, body, in_ports, out_ports, values, expect, **kw)  # type: ignore[arg-type]


def _bits(x: object, size: int) -> int:
    return int(x) & ((1 << (8 * size)) - 1)  # type: ignore[call-overload]
