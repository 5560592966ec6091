"""Kernel launches: argument marshalling, memory set-up and CTA batching.

``launch`` places module variables and argument arrays in global memory, lays out
kernel parameters, and runs the grid in batches of CTAs (all CTAs of a batch execute
together, vectorized; batches run one after another, which is one legal schedule of
a CUDA grid).  After the run the argument arrays are updated in place.
"""

from __future__ import annotations

import re
import struct
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Module, VarDecl
from ptxopt.ptx.initializer import layout, plain_ints
from ptxopt.ptx.parser import no_gc
from ptxopt.sim.claims import Claims, resolve_claims
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Machine, Op, Stats, Violation, W
from ptxopt.sim.memory import Memory
from ptxopt.sim.ops import Decoder
from ptxopt.sim.program import FuncInfo, Program, build_program, type_bytes, var_size
from ptxopt.sim.tma import TensorMap
from ptxopt.sim.values import TYPES

Dim = int | tuple[int, ...] | list[int]
ALLOCA_BYTES = 4096  # per-thread memory for alloca in kernels that use it


@dataclass(slots=True)
class LaunchResult(Stats):
    """Statistics (the counters of :class:`~ptxopt.sim.machine.Stats`, summed over all
    batches of CTAs) and checks of one launch."""

    kernel: str = ""
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    batches: int = 0
    seconds: float = 0.0
    violations: list[Violation] = field(default_factory=list)
    globals: dict[str, np.ndarray] = field(default_factory=dict)

    def summary(self) -> str:
        rate = self.lane_instructions / self.seconds if self.seconds > 0 else 0.0
        return (
            f"{self.kernel}<<<{self.grid}, {self.block}>>>: "
            f"{self.warp_instructions} warp-instructions, {self.lane_instructions} "
            f"lane-instructions, {self.divergent_branches} divergent branches, max "
            f"divergence depth {self.max_divergence_depth}, {self.barriers} barrier "
            f"arrivals, {self.atomics} atomic lane-ops, {self.calls} calls; "
            f"{self.seconds:.3f} s ({rate / 1e6:.1f} M lane-instr/s)"
        )


@dataclass
class ParamBlob:
    """A by-value parameter given as raw bytes (a library's ``Params`` struct built by
    its host code), with the arrays its pointer fields point to: ``pointers`` maps a
    byte offset of ``data`` to an array that the launch places in global memory and
    whose address it writes there (8 bytes, little endian); the arrays are updated in
    place after the run like argument arrays."""

    data: bytes
    pointers: dict[int, np.ndarray] = field(default_factory=dict)


@dataclass(slots=True)
class Compiled:
    prog: Program
    code: list[Op]
    dec: Decoder
    globals: list[tuple[str, VarDecl, int]]  # unique name, decl, address
    shared_static: int
    dynamic_shared_offset: int
    local_static: int
    symbols: dict[str, tuple[str, int]]


_CACHE: OrderedDict[Any, Compiled] = OrderedDict()
# The cache's bounds: modules, and decoded instructions over all of them.  A decoded
# instruction holds some fifty objects (its AST, closures, operand readers), and every
# full collection of the garbage collector walks them all; a few large kernels (42k
# instructions each) would otherwise keep millions of objects alive.
_CACHE_MODULES = 16
_CACHE_OPS = 100_000


def compile_module(ptx: str | Module, filename: str = "<input>") -> Compiled:
    """``ptx`` parsed, laid out and decoded for the interpreter (kept for the next
    launch of the same text or module, within the cache's bounds)."""
    key: Any = (ptx, filename) if isinstance(ptx, str) else id(ptx)
    hit = _CACHE.get(key)
    if hit is not None and (isinstance(ptx, str) or hit.prog.module is ptx):
        _CACHE.move_to_end(key)
        return hit
    with no_gc():
        comp = _compile(ptx, filename)
    _CACHE[key] = comp
    ops = sum(len(c.code) for c in _CACHE.values())
    while len(_CACHE) > 1 and (len(_CACHE) > _CACHE_MODULES or ops > _CACHE_OPS):
        ops -= len(_CACHE.popitem(last=False)[1].code)
    return comp


def _compile(ptx: str | Module, filename: str) -> Compiled:
    if isinstance(ptx, str):
        from ptxopt.ptx.parser import parse

        module = parse(ptx, filename)
    else:
        module = ptx
    prog = build_program(module)
    symbols: dict[str, tuple[str, int]] = {}
    globals_: list[tuple[str, VarDecl, int]] = []
    shared_off = 0
    local_off = 0
    dyn: list[tuple[str, VarDecl]] = []
    decls: list[tuple[str, VarDecl]] = [(v.name, v) for v in module.globals]
    for info in prog.funcs.values():
        for u, vi in info.vars.items():
            if vi.decl is not None and vi.space in (".shared", ".global", ".const"):
                decls.append((u, vi.decl))
    # global addresses are assigned at launch time (after the memory exists); here only
    # offsets for shared/local and the list of global-space variables
    gaddr = 0
    for name, v in decls:
        if v.type in (".texref", ".samplerref", ".surfref"):
            continue  # only the texture/surface instructions use them, and they are refused
        size, align = var_size(v)
        if v.space == ".shared":
            if v.dims and v.dims[-1] is None or (".extern" in v.linkage and size == 0):
                dyn.append((name, v))
                continue
            shared_off = (shared_off + align - 1) // align * align
            symbols[name] = (".shared", shared_off)
            shared_off += size
        elif v.space in (".global", ".const"):
            globals_.append((name, v, gaddr))
            symbols[name] = (v.space, 0)  # patched below
        elif v.space == ".local":
            local_off = (local_off + align - 1) // align * align
            symbols[name] = (".slocal", local_off)
            local_off += size
        elif v.space == ".tex":
            raise SimError(v.span, "texture variables are unsupported by the interpreter")
    dyn_off = (shared_off + 15) // 16 * 16
    for name, v in dyn:
        align = max(v.align or 16, 16)
        dyn_off = (dyn_off + align - 1) // align * align
        symbols[name] = (".shared", dyn_off)
    # fixed global layout (independent of the arguments): module variables first
    mem = Memory()
    placed: list[tuple[str, VarDecl, int]] = []
    for name, v, _ in globals_:
        size, align = var_size(v)
        addr = mem.allocate(name, max(size, 1), align, readonly=v.space == ".const")
        placed.append((name, v, addr))
        symbols[name] = (v.space, addr)
    dec = Decoder(prog, symbols)
    code = dec.decode_all()
    return Compiled(
        prog, code, dec, placed, shared_off, dyn_off, (local_off + 15) // 16 * 16, symbols
    )


def _dim3(d: Dim, what: str) -> tuple[int, int, int]:
    if isinstance(d, int | np.integer):
        t = (int(d), 1, 1)
    else:
        v = [int(x) for x in d]
        if not 1 <= len(v) <= 3:
            raise SimError(None, f"{what} must have 1 to 3 dimensions")
        t = (v + [1, 1])[:3]  # type: ignore[assignment]
        t = (t[0], t[1], t[2])
    if min(t) < 1:
        raise SimError(None, f"{what} dimensions must be positive, got {t}")
    return t


_SYM_ITEM = re.compile(r"([A-Za-z_$.%][\w$.]*)\s*(?:([+-])\s*(\w+))?")


def _init_bytes(v: VarDecl, symbols: dict[str, tuple[str, int]]) -> bytes:
    """The bytes ``v``'s initializer puts in memory: items laid out along the
    dimensions (and vector components), each short level padded with zeros
    (:func:`ptxopt.ptx.initializer.layout`)."""
    assert v.init is not None
    ty = TYPES.get(v.type)
    if ty is None:
        raise SimError(v.span, f"unsupported initializer type {v.type}")
    el = ty.size
    vec = int(v.vector[2:]) if v.vector else 0
    if len(v.dims) == 1 and not vec and ty.kind in ("u", "s", "b") and plain_ints(v.init):
        # a data table: one value per item, the rest of the array zero
        inner = v.init[1:-1]
        mask = (1 << (8 * el)) - 1
        vals = [int(x) & mask for x in inner.split(",")] if inner.strip() else []
        table = np.array(vals, dtype=ty.ut).tobytes()
        return table + bytes(max(0, el * (v.dims[0] or 0) - len(table)))
    data = layout(v.init, v.dims, vec, el, lambda item: _item_bytes(item, ty, v, symbols))
    if data is None:  # the validator refuses such an initializer
        raise SimError(v.span, f"the initializer of {v.name} does not fit its declaration")
    return data


def _item_bytes(item: str, ty: Any, v: VarDecl, symbols: dict[str, tuple[str, int]]) -> bytes:
    """One initializer item: a literal, or a symbol's address plus an offset."""
    text = re.sub(r"generic\(\s*([^)]*?)\s*\)", r"\1", item)
    val: Any
    if text[:2].lower() == "0f":
        val = struct.unpack("<f", int(text[2:], 16).to_bytes(4, "little"))[0]
    elif text[:2].lower() == "0d":
        val = struct.unpack("<d", int(text[2:], 16).to_bytes(8, "little"))[0]
    elif text[0].isalpha() or text[0] in "_$.%":
        m = _SYM_ITEM.fullmatch(text)
        if m is None or m.group(1) not in symbols:
            raise SimError(v.span, f"unknown symbol {text} in initializer")
        val = symbols[m.group(1)][1]
        if m.group(3) is not None:
            off = int(m.group(3).rstrip("U"), 0)
            val += off if m.group(2) == "+" else -off
    else:
        t = text.rstrip("U")
        val = int(t, 0) if re.fullmatch(r"[-+]?(0[xX][0-9a-fA-F]+|[0-9]+)", t) else float(t)
    if ty.kind == "f":
        return struct.pack("<f" if ty.size == 4 else "<d", float(val))
    if ty.kind == "h":
        return bytes(np.float16(float(val)).tobytes())
    return (int(val) & ((1 << (8 * ty.size)) - 1)).to_bytes(ty.size, "little")


def _stack_bytes(prog: Program, entry: FuncInfo, default: int) -> tuple[int, bool]:
    """Per-thread bytes for the frames of the deepest call chain from ``entry``."""
    memo: dict[str, int] = {}
    unbounded = False

    def depth(name: str, active: set[str]) -> int:
        nonlocal unbounded
        if name in memo:
            return memo[name]
        info = prog.funcs[name]
        if info.recursive or info.indirect_calls or name in active:
            unbounded = True
            return 0
        active.add(name)
        best = 0
        for c in info.callees:
            if c in prog.funcs:
                best = max(best, depth(c, active))
        active.discard(name)
        memo[name] = info.frame_size + best
        return memo[name]

    d = depth(entry.name, set())
    if unbounded:
        return max(d, default), True
    return d, False


def launch(
    ptx: str | Module,
    kernel: str,
    grid: Dim,
    block: Dim,
    args: list[Any] | tuple[Any, ...],
    shared_bytes: int = 0,
    uniform_claims: dict[str, Any] | None = None,
    *,
    max_steps: int = 20_000_000,
    stack_bytes: int = 8192,
    max_batch_threads: int | None = None,
    filename: str = "<input>",
) -> LaunchResult:
    """Run ``kernel`` of ``ptx`` on the CPU (see :mod:`ptxopt.sim`).  The cyclic
    garbage collector is paused meanwhile (:func:`~ptxopt.ptx.parser.no_gc`): the
    decoded program and the run make millions of objects that live on."""
    with no_gc():
        return _launch(
            ptx, kernel, grid, block, args, shared_bytes, uniform_claims,
            max_steps, stack_bytes, max_batch_threads, filename,
        )  # fmt: skip


def _launch(
    ptx: str | Module,
    kernel: str,
    grid: Dim,
    block: Dim,
    args: list[Any] | tuple[Any, ...],
    shared_bytes: int,
    uniform_claims: dict[str, Any] | None,
    max_steps: int,
    stack_bytes: int,
    max_batch_threads: int | None,
    filename: str,
) -> LaunchResult:
    import time

    t0 = time.perf_counter()
    comp = compile_module(ptx, filename)
    prog = comp.prog
    entry = prog.funcs.get(kernel)
    if entry is None or not entry.is_entry:
        names = [f.name for f in prog.funcs.values() if f.is_entry]
        raise SimError(None, f"no kernel entry named {kernel!r} (entries: {', '.join(names)})")
    g3 = _dim3(grid, "grid")
    b3 = _dim3(block, "block")
    nthr = b3[0] * b3[1] * b3[2]
    if nthr > 1024:
        raise SimError(entry.fn.span, f"block of {nthr} threads exceeds 1024")
    params = entry.params
    if len(args) != len(params):
        raise SimError(
            entry.fn.span, f"{kernel} takes {len(params)} parameters, got {len(args)} arguments"
        )
    # -- global memory: module variables (fixed), then the argument arrays
    mem = Memory()
    for name, v, _addr in comp.globals:
        size, align = var_size(v)
        mem.allocate(name, max(size, 1), align, readonly=v.space == ".const")
    arrays: list[tuple[int, np.ndarray, int]] = []
    kp = bytearray()
    for i, (p, a) in enumerate(zip(params, args, strict=True)):
        off = (len(kp) + p.align - 1) // p.align * p.align
        kp += bytes(off - len(kp))
        if isinstance(a, ParamBlob):
            blob = bytearray(a.data)
            for off, arr in a.pointers.items():
                addr = next((ad for _j, x, ad in arrays if x is arr), 0)
                if not addr:
                    addr = mem.allocate(f"arg{i}@{off}", max(arr.nbytes, 1), 256)
                    arrays.append((-1, arr, addr))
                blob[off : off + 8] = addr.to_bytes(8, "little")
            if len(blob) > p.size:
                raise SimError(entry.fn.span, f"parameter blob of {len(blob)} bytes for {p.name}")
            kp += bytes(blob) + bytes(p.size - len(blob))
        elif isinstance(a, TensorMap):
            # a tensor map over an argument array (or an array of its own)
            addr = next((ad for _j, arr, ad in arrays if arr is a.array), 0)
            if not addr:
                addr = mem.allocate(f"tensormap{i}", max(a.array.nbytes, 1), 256)
                arrays.append((-1, a.array, addr))
            kp += a.encode(addr)[: p.size] + bytes(max(0, p.size - 128))
        elif (
            isinstance(a, np.ndarray)
            and a.ndim > 0
            and p.size == 8
            and p.decl is None
            and (params_type(entry, i) in (".u64", ".b64", ".s64"))
        ):
            addr = mem.allocate(f"arg{i}", max(a.nbytes, 1), 256)
            arrays.append((i, a, addr))
            kp += addr.to_bytes(8, "little")
        else:
            kp += _scalar_bytes(a, entry, i, p.size)
    mem.finalize_global()
    for _name, v, addr in comp.globals:
        if v.init is not None:
            data = _init_bytes(v, comp.symbols)
            size, _ = var_size(v)
            mem.write_bytes(addr, data[:size])
    for _i, a, addr in arrays:
        mem.write_bytes(addr, np.ascontiguousarray(a).view(np.uint8).ravel())
    mem.kparams = np.zeros((len(kp) + 15) // 16 * 16 or 16, dtype=np.uint8)
    mem.kparams[: len(kp)] = np.frombuffer(bytes(kp), dtype=np.uint8)
    # -- claims
    claims: Claims | None = None
    if uniform_claims is not None:
        claims = resolve_claims(prog, uniform_claims)
    # -- batching
    stack, _rec = _stack_bytes(prog, entry, stack_bytes)
    local_bytes = comp.local_static + stack
    # alloca takes memory from the top of each thread's local memory, growing down
    if any(ins.opcode == "alloca" for ins in prog.instrs):
        mem.alloca_floor = (local_bytes + 15) // 16 * 16
        local_bytes = mem.alloca_floor + ALLOCA_BYTES
    shared_total = (
        comp.dynamic_shared_offset + shared_bytes
        if shared_bytes
        else max(
            comp.shared_static,
            comp.dynamic_shared_offset
            if comp.dynamic_shared_offset > comp.shared_static
            else comp.shared_static,
        )
    )
    shared_total = max(shared_total, comp.shared_static)
    wpc = (nthr + W - 1) // W
    slot_threads = wpc * W
    nregs = max(1, len(comp.dec.reg_types))
    per_thread = 8 * min(nregs, 64) + local_bytes + shared_total / slot_threads + 48
    if max_batch_threads is None:
        # ~32K threads per batch keeps the register arrays cache-resident (measured fastest)
        max_batch_threads = int(max(slot_threads, min(1 << 15, (256 << 20) / per_thread)))
    ctas_per_batch = max(1, max_batch_threads // slot_threads)
    total_ctas = g3[0] * g3[1] * g3[2]
    all_ids = np.stack(
        np.unravel_index(np.arange(total_ctas), (g3[2], g3[1], g3[0]))[::-1], axis=1
    ).astype(np.int64)
    stats = Stats()
    violations: list[Violation] = []
    batches = 0
    old = np.seterr(all="ignore")
    try:
        for b0 in range(0, total_ctas, ctas_per_batch):
            ids = all_ids[b0 : b0 + ctas_per_batch]
            mem.setup_batch(len(ids), slot_threads, shared_total, local_bytes)
            m = Machine(
                prog,
                comp.code,
                mem,
                entry,
                len(ids),
                b3,
                ids,
                g3,
                comp.dec.reg_types,
                claims,
                max_steps,
                comp.local_static,
            )
            m.run()
            stats.merge(m.stats)
            violations.extend(m.violations)
            batches += 1
    finally:
        np.seterr(**old)
    for _i, a, addr in arrays:
        dev = mem.read_bytes(addr, a.nbytes)
        if a.flags.c_contiguous and a.flags.writeable:
            a.view(np.uint8).reshape(-1)[:] = dev
        elif a.flags.writeable:
            a[...] = dev.view(a.dtype).reshape(a.shape)
    res = LaunchResult(kernel=kernel, grid=g3, block=b3)
    res.merge(stats)
    res.batches = batches
    res.violations = violations
    for name, v, addr in comp.globals:
        size, _ = var_size(v)
        res.globals[name] = mem.read_bytes(addr, size).copy()
    res.seconds = time.perf_counter() - t0
    return res


def params_type(entry: FuncInfo, i: int) -> str:
    return entry.fn.params[i].type


def _scalar_bytes(a: Any, entry: FuncInfo, i: int, size: int) -> bytes:
    p = entry.fn.params[i]
    t = p.type
    if isinstance(a, bytes | bytearray):
        b = bytes(a)
    elif isinstance(a, np.ndarray) and (a.ndim > 0 or p.dims):
        b = np.ascontiguousarray(a).view(np.uint8).tobytes()
    else:
        ty = TYPES.get(t)
        if ty is None:
            raise SimError(p.span, f"unsupported parameter type {t}")
        if ty.kind == "f":
            b = np.array(a, dtype=ty.dt).tobytes()
        elif ty.kind == "h":
            b = np.array(a, dtype=np.float16).tobytes()
        elif ty.kind == "p":
            b = bytes([1 if a else 0])
        else:
            if isinstance(a, float | np.floating):
                v = np.array(a, dtype=np.float32 if type_bytes(t) == 4 else np.float64)
                b = v.tobytes()[: type_bytes(t)]
            else:
                iv = int(a)
                b = (iv & ((1 << (8 * ty.size)) - 1)).to_bytes(ty.size, "little")
    if len(b) > size:
        raise SimError(
            p.span,
            f"argument {i} ({len(b)} bytes) is larger than parameter {p.name} ({size} bytes)",
        )
    return b + bytes(size - len(b))
