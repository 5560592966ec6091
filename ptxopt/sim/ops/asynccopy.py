"""Asynchronous copies and their synchronization objects.

``cp.async`` (``.ca``/``.cg``, 4/8/16 bytes, a source size that zero-fills the rest,
the ``ignore-src`` predicate), ``cp.async.commit_group``/``wait_group``/``wait_all``,
``cp.async.mbarrier.arrive``, ``mbarrier.*`` (init, inval, arrive, arrive_drop,
expect_tx, complete_tx, test_wait, try_wait, pending_count), the bulk copies
``cp.async.bulk`` and ``cp.async.bulk.tensor`` (tile mode, through the tensor maps of
:mod:`ptxopt.sim.tma`) with their bulk groups, and ``tensormap.replace`` /
``tensormap.cp_fenceproxy``.

Memory model
------------
A copy is performed when it is issued (one legal schedule: the hardware may complete
it at any time before the wait), but its destination bytes stay *pending* until the
program has waited for it: ``cp.async`` bytes until the issuing thread's
``cp.async.wait_group`` covers their group, bulk copies until the phase of their
mbarrier completes.  Any load or store of a pending shared byte - by any thread - is
reported as an error (:meth:`ptxopt.sim.memory.Memory.check_pending`); the ISA leaves
its value undefined, so a program that passes here does not depend on copy timing.

mbarrier objects live in shared memory; their state (expected arrivals, pending
arrivals, transaction count, phase) is kept beside it, keyed by the shared byte.
A state token returned by ``arrive`` is the phase number it arrived in.
``mbarrier.try_wait`` is potentially blocking: a warp whose lanes' phases are not all
complete is suspended (``Machine.op_wait``) until some mbarrier changes state and then
retries, so it only ever returns true; when no warp can run any more the launch fails
with a deadlock.  ``mbarrier.test_wait`` never blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Addr, Imm, Instr, Reg, Sink, Vec
from ptxopt.sim.errors import SimError
from ptxopt.sim.machine import Op, W
from ptxopt.sim.ops.decoder import Decoder, handles
from ptxopt.sim.values import TYPES, Reader, addr_reader

_SPACES = (".shared", ".shared::cta", ".shared::cluster", ".global")


@dataclass(slots=True)
class Barrier:
    expected: int
    pending: int
    tx: int = 0
    phase: int = 0
    # shared-buffer (index, size) of copies whose completion this barrier tracks
    copies: list[tuple[np.ndarray, int]] = field(default_factory=list)
    # copies of completed phases that no wait has observed yet (still pending)
    unobserved: list[tuple[np.ndarray, int]] = field(default_factory=list)


@dataclass(slots=True)
class CpRecord:
    tids: np.ndarray
    idx: np.ndarray  # shared-buffer index per lane
    size: int
    group: np.ndarray  # the thread's group number per lane


class AsyncState:
    """Per-batch state of asynchronous copies and mbarriers."""

    def __init__(self, m: Any) -> None:
        self.commits = np.zeros(m.T, dtype=np.int64)
        self.records: list[CpRecord] = []
        self.barriers: dict[int, Barrier] = {}


def state(m: Any) -> AsyncState:
    st = m.async_state
    if st is None:
        st = m.async_state = AsyncState(m)
    return st


def _shared_index(m: Any, space: str, a: np.ndarray, t: np.ndarray, size: int, ins: Instr) -> Any:
    parts = m.mem.translate(space, a, t, size, ins.span)
    if len(parts) != 1 or parts[0][0] is not m.mem.shared:
        raise SimError(ins.span, f"'{ins.name}': address is not in shared memory")
    return parts[0][1]


def _space(ins: Instr, default: str = "") -> str:
    for m in ins.mods:
        if m.startswith(".shared"):
            return ".shared"
    return default


def _addr(d: Decoder, ins: Instr, i: int, space: str) -> tuple[str, Reader]:
    a = ins.operands[i]
    if not isinstance(a, Addr):
        raise SimError(ins.span, f"'{ins.name}': operand {i + 1} must be an address")
    eff, rd = addr_reader(d.ops, Addr(a.base, a.offset), space, ins.span)
    return eff or "generic", rd


def _lanes64(v: Any, t: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(np.asarray(v), t.shape)).astype(np.int64)


# ----------------------------------------------------------------------------- cp.async


@handles("cp")
def op_cp(d: Decoder, ins: Instr, pc: int) -> Op:
    mods = ins.mods
    if ".async" not in mods or ".reduce" in mods:
        raise SimError(ins.span, f"'{ins.name}' is unsupported by the interpreter")
    if ".bulk" in mods:
        if ".prefetch" in mods:
            return Op("alu", ins, lambda m, s, t: None)  # a cache hint
        if ".tensor" in mods:
            from ptxopt.sim.tma import op_bulk_tensor

            return op_bulk_tensor(d, ins, pc)
        if ".commit_group" in mods or ".wait_group" in mods or ".prefetch" in mods:
            # bulk copies complete when issued; their sources are read at issue
            return Op("alu", ins, lambda m, s, t: None)
        return _bulk(d, ins, pc)
    if ".commit_group" in mods:
        return Op("alu", ins, _commit)
    if ".wait_group" in mods or ".wait_all" in mods:
        if ".wait_all" in mods:
            n_r: Reader = lambda m, s: np.int64(0)  # noqa: E731
        else:
            n_r = d.rd(ins.operands[0], TYPES[".u32"], ins)

        def wait(m: Any, s: Any, t: np.ndarray) -> None:
            if ".wait_all" in mods:
                _commit(m, s, t)
            n = int(np.max(np.asarray(n_r(m, s))))
            _complete(m, t, n)

        return Op("alu", ins, wait)
    if ".mbarrier" in mods and ".arrive" in mods:
        return _cp_mbarrier_arrive(d, ins, pc)
    return _cp_async(d, ins, pc)


def _commit(m: Any, s: Any, t: np.ndarray) -> None:
    state(m).commits[t] += 1


def _complete(m: Any, t: np.ndarray, n: int) -> None:
    """Threads ``t`` wait until at most ``n`` of their committed groups are pending."""
    st = state(m)
    if not st.records:
        return
    mine = np.zeros(m.T, dtype=bool)
    mine[t] = True
    keep: list[CpRecord] = []
    for r in st.records:
        done = mine[r.tids] & (r.group < st.commits[r.tids] - n)
        if done.any():
            m.mem.mark_pending(r.idx[done], r.size, False)
            if done.all():
                continue
            r = CpRecord(r.tids[~done], r.idx[~done], r.size, r.group[~done])
        keep.append(r)
    st.records = keep


def _cp_async(d: Decoder, ins: Instr, pc: int) -> Op:
    ops_ = ins.operands
    size_op = ops_[2]
    if not isinstance(size_op, Imm) or size_op.value not in (4, 8, 16):
        raise SimError(ins.span, f"'{ins.name}': cp-size must be 4, 8 or 16")
    size = int(size_op.value)
    if ".cg" in ins.mods and size != 16:
        raise SimError(ins.span, f"'{ins.name}': .cg copies 16 bytes")
    _, dst_r = _addr(d, ins, 0, ".shared")
    _, src_r = _addr(d, ins, 1, ".global")
    ignore: Reader | None = None
    srcsize: Reader | None = None
    for o in ops_[3:]:
        if isinstance(o, Reg) and d.reg_dtype(o.name, ins.span) is np.bool_:
            ignore = d.rd(o, TYPES[".pred"], ins)
        elif srcsize is None and isinstance(o, Reg | Imm):
            # a 64-bit register after src-size is a cache policy
            if isinstance(o, Reg) and np.dtype(d.reg_dtype(o.name, ins.span)).itemsize == 8:
                continue
            srcsize = d.rd(o, TYPES[".u32"], ins)
    span = ins.span

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        dst = _lanes64(dst_r(m, s), t)
        src = _lanes64(src_r(m, s), t)
        ss = np.full(t.shape, size, dtype=np.int64)
        if srcsize is not None:
            ss = _lanes64(srcsize(m, s), t)
            if (ss > size).any():
                i = int(np.argmax(ss > size))
                raise SimError(span, f"src-size {int(ss[i])} exceeds cp-size {size}")
        if ignore is not None:
            ss = np.where(np.broadcast_to(np.asarray(ignore(m, s)), t.shape), 0, ss)
        data = np.zeros((len(t), size), dtype=np.uint8)
        full = ss == size
        if full.any():
            if (src[full] & (size - 1)).any():
                raise SimError(span, f"misaligned {size}-byte cp.async source")
            for k in range(0, size, 4):
                v = m.mem.load(".global", src[full] + k, t[full], 4, span)
                data[full, k : k + 4] = v.view(np.uint8).reshape(-1, 4)
        part = (ss > 0) & ~full
        if part.any():
            for b in range(size):
                lanes = part & (ss > b)
                if lanes.any():
                    data[lanes, b] = m.mem.load(".global", src[lanes] + b, t[lanes], 1, span)
        words = np.ascontiguousarray(data).view(np.uint32)
        for k in range(size // 4):
            m.mem.store(".shared", dst + 4 * k, t, 4, words[:, k], span)
        idx = _shared_index(m, ".shared", dst, t, size, ins)
        m.mem.mark_pending(idx, size, True)
        st = state(m)
        st.records.append(CpRecord(t.copy(), idx, size, st.commits[t].copy()))

    return Op("alu", ins, run)


def _cp_mbarrier_arrive(d: Decoder, ins: Instr, pc: int) -> Op:
    """The barrier tracks the thread's earlier cp.async copies; without ``.noinc`` the
    pending count is raised first, so the triggered arrival leaves it unchanged."""
    _, br = _addr(d, ins, 0, _space(ins))
    noinc = ".noinc" in ins.mods
    eff = _space(ins) or "generic"

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        st = state(m)
        keys = _shared_index(m, eff, _lanes64(br(m, s), t), t, 8, ins)
        mine = np.zeros(m.T, dtype=bool)
        for key in np.unique(keys):
            b = _barrier(m, int(key), ins)
            who = t[keys == key]
            mine[:] = False
            mine[who] = True
            keep = []
            for r in st.records:
                sel = mine[r.tids]
                if sel.any():
                    b.copies.append((r.idx[sel], r.size))
                    if not sel.all():
                        keep.append(CpRecord(r.tids[~sel], r.idx[~sel], r.size, r.group[~sel]))
                else:
                    keep.append(r)
            st.records = keep
            if noinc:
                _arrive(m, b, len(who), ins)

    return Op("alu", ins, run)


# ----------------------------------------------------------------------------- mbarrier


def _barrier(m: Any, key: int, ins: Instr) -> Barrier:
    b = state(m).barriers.get(key)
    if b is None:
        raise SimError(ins.span, f"'{ins.name}': mbarrier object not initialized (mbarrier.init)")
    return b


def _maybe_complete(m: Any, b: Barrier) -> None:
    if b.pending <= 0 and b.tx == 0:
        b.phase += 1
        b.pending = b.expected
        b.unobserved += b.copies
        b.copies = []
        m.async_epoch += 1


def _arrive(m: Any, b: Barrier, count: int, ins: Instr) -> None:
    if count > b.pending:
        raise SimError(
            ins.span,
            f"'{ins.name}': {count} arrivals on an mbarrier with {b.pending} pending (undefined)",
        )
    b.pending -= count
    _maybe_complete(m, b)


def complete_tx(m: Any, key: int, nbytes: int, ins: Instr, copy: Any = None) -> None:
    """A copy of ``nbytes`` signals the mbarrier at shared-buffer index ``key``."""
    b = _barrier(m, key, ins)
    if copy is not None:
        b.copies.append(copy)
    b.tx -= nbytes
    _maybe_complete(m, b)


@handles("mbarrier")
def op_mbarrier(d: Decoder, ins: Instr, pc: int) -> Op:
    mods = ins.mods
    sp = _space(ins)
    eff = sp or "generic"
    kind = mods[0] if mods else ""
    ops_ = ins.operands
    u32 = TYPES[".u32"]
    span = ins.span

    def keys_of(ar: Reader, m: Any, s: Any, t: np.ndarray) -> np.ndarray:
        a = _lanes64(ar(m, s), t)
        return np.asarray(_shared_index(m, eff, a, t, 8, ins))

    if kind == ".init":
        _, ar = _addr(d, ins, 0, sp)
        cnt = d.rd(ops_[1], u32, ins)

        def init(m: Any, s: Any, t: np.ndarray) -> None:
            keys = keys_of(ar, m, s, t)
            c = _lanes64(cnt(m, s), t)
            if ((c < 1) | (c > (1 << 20) - 1)).any():
                raise SimError(span, "mbarrier.init: count must be in 1 .. 2^20-1")
            st = state(m)
            for k, n in zip(keys.tolist(), c.tolist(), strict=True):
                st.barriers[k] = Barrier(n, n)
            m.async_epoch += 1

        return Op("alu", ins, init)
    if kind == ".inval":
        _, ar = _addr(d, ins, 0, sp)

        def inval(m: Any, s: Any, t: np.ndarray) -> None:
            for k in keys_of(ar, m, s, t).tolist():
                state(m).barriers.pop(k, None)

        return Op("alu", ins, inval)
    if kind in (".expect_tx", ".complete_tx"):
        _, ar = _addr(d, ins, 0, sp)
        txr = d.rd(ops_[1], u32, ins)
        sign = 1 if kind == ".expect_tx" else -1

        def tx(m: Any, s: Any, t: np.ndarray) -> None:
            keys = keys_of(ar, m, s, t)
            n = _lanes64(txr(m, s), t)
            for k, v in zip(keys.tolist(), n.tolist(), strict=True):
                b = _barrier(m, k, ins)
                b.tx += sign * v
                if sign < 0:
                    _maybe_complete(m, b)

        return Op("alu", ins, tx)
    if kind in (".arrive", ".arrive_drop"):
        wdst = None if isinstance(ops_[0], Sink) else d.wr(ops_[0], TYPES[".b64"], ins)
        _, ar = _addr(d, ins, 1, sp)
        expect_tx = ".expect_tx" in mods
        extra = d.rd(ops_[2], u32, ins) if len(ops_) > 2 else None
        drop = kind == ".arrive_drop"
        no_complete = ".noComplete" in mods

        def arrive(m: Any, s: Any, t: np.ndarray) -> None:
            keys = keys_of(ar, m, s, t)
            ex = _lanes64(extra(m, s), t) if extra is not None else None
            tokens = np.zeros(len(t), dtype=np.uint64)
            for k in np.unique(keys).tolist():
                sel = keys == k
                b = _barrier(m, k, ins)
                tokens[sel] = b.phase
                if expect_tx:
                    assert ex is not None
                    b.tx += int(ex[sel].sum())
                    count = int(sel.sum())
                else:
                    count = int(ex[sel].sum()) if ex is not None else int(sel.sum())
                if drop:
                    b.expected -= count
                if no_complete and count >= b.pending:
                    raise SimError(span, "mbarrier.arrive.noComplete would complete the phase")
                _arrive(m, b, count, ins)
            if wdst is not None:
                wdst(m, s, t, tokens, pc)

        return Op("alu", ins, arrive)
    if kind == ".pending_count":
        w = d.wr(ops_[0], u32, ins)
        return Op("alu", ins, lambda m, s, t: None if w is None else w(m, s, t, np.uint32(0), pc))
    if kind in (".test_wait", ".try_wait"):
        return _mb_wait(d, ins, pc, kind == ".try_wait", ".parity" in mods, sp)
    raise SimError(span, f"'{ins.name}' is unsupported by the interpreter")


def _mb_wait(d: Decoder, ins: Instr, pc: int, blocking: bool, parity: bool, sp: str) -> Op:
    ops_ = ins.operands
    wp = None if isinstance(ops_[0], Sink) else d.wr(ops_[0], TYPES[".pred"], ins)
    _, ar = _addr(d, ins, 1, sp)
    eff = sp or "generic"
    tok = d.rd(ops_[2], TYPES[".u32"] if parity else TYPES[".b64"], ins)

    def ready_of(m: Any, s: Any, t: np.ndarray) -> np.ndarray:
        a = _lanes64(ar(m, s), t)
        keys = np.asarray(_shared_index(m, eff, a, t, 8, ins))
        tv = _lanes64(np.asarray(tok(m, s)).astype(np.uint64).view(np.int64), t)
        bars = [_barrier(m, k, ins) for k in keys.tolist()]
        phase = np.array([b.phase for b in bars], dtype=np.int64)
        if parity:
            r = np.asarray((phase & 1) != (tv & 1))
        else:
            r = np.asarray(phase > tv)
        for i in np.flatnonzero(r).tolist():
            b = bars[i]
            if b.unobserved:  # the wait makes the completed copies visible
                for idx, size in b.unobserved:
                    m.mem.mark_pending(idx, size, False)
                b.unobserved = []
        return r

    if not blocking:

        def test(m: Any, s: Any, t: np.ndarray) -> None:
            r = ready_of(m, s, t)
            if wp is not None:
                wp(m, s, t, r, pc)

        return Op("alu", ins, test)

    def wait(m: Any, G: np.ndarray, t: np.ndarray, pc_: int) -> np.ndarray:
        r = ready_of(m, t, t)
        rows = np.searchsorted(G, t // W)
        bad = np.zeros(len(G), dtype=bool)
        bad[rows[~r]] = True
        ok = ~bad
        if wp is not None:
            sel = ok[rows]
            if sel.any():
                wp(m, t[sel], t[sel], np.ones(int(sel.sum()), dtype=bool), pc)
        return ok

    return Op("wait", ins, wait)


# ----------------------------------------------------------------------------- bulk copies


def _bulk(d: Decoder, ins: Instr, pc: int) -> Op:
    """``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src],
    size, [mbar]`` and ``cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size``
    (and shared::cta -> shared::cluster with an mbarrier)."""
    mods = ins.mods
    spaces = [m for m in mods if m in _SPACES]
    if len(spaces) < 2:
        raise SimError(ins.span, f"'{ins.name}': missing state spaces")
    dsp, ssp = (".shared" if x.startswith(".shared") else x for x in spaces[:2])
    _, dr = _addr(d, ins, 0, dsp)
    _, sr = _addr(d, ins, 1, ssp)
    nr = d.rd(ins.operands[2], TYPES[".u32"], ins)
    mb = _addr(d, ins, 3, ".shared")[1] if ".mbarrier::complete_tx::bytes" in mods else None
    span = ins.span

    def run(m: Any, s: Any, t: np.ndarray) -> None:
        dst = _lanes64(dr(m, s), t)
        src = _lanes64(sr(m, s), t)
        n = _lanes64(nr(m, s), t)
        if (n % 16).any() or (dst % 16).any() or (src % 16).any():
            raise SimError(span, f"'{ins.name}': addresses and size must be multiples of 16")
        keys = _lanes64(mb(m, s), t) if mb is not None else None
        for i in range(len(t)):
            ti = t[i : i + 1]
            offs = np.arange(0, int(n[i]), 4, dtype=np.int64)
            tt = np.repeat(ti, len(offs))
            v = m.mem.load(ssp, src[i] + offs, tt, 4, span)
            m.mem.store(dsp, dst[i] + offs, tt, 4, v, span)
            if keys is not None:
                idx = _shared_index(m, dsp, dst[i] + offs, tt, 4, ins)
                m.mem.mark_pending(idx, 4, True)
                k = int(_shared_index(m, ".shared", keys[i : i + 1], ti, 8, ins)[0])
                complete_tx(m, k, int(n[i]), ins, (idx, 4))

    return Op("alu", ins, run)


def vec_regs(op: Any) -> list[Any]:
    return list(op.elems) if isinstance(op, Vec) else [op]


@handles("tensormap")
def op_tensormap(d: Decoder, ins: Instr, pc: int) -> Op:
    from ptxopt.sim.tma import op_tensormap as impl

    return impl(d, ins, pc)
