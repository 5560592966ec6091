"""The SIMT machine: warps, reconvergence stacks, scheduling, calls and barriers.

Execution model
---------------
A batch of CTAs runs at once.  Thread slot ``t`` belongs to warp ``t // 32`` (lane
``t % 32``); CTA ``c`` of the batch owns warps ``c*wpc .. (c+1)*wpc-1``.  Lanes of a
partial last warp do not exist and start out *exited*.  Every register is one numpy
array over all thread slots of the batch, so one instruction executes for many warps
with one numpy operation.

Each warp has a *SIMT reconvergence stack* (the classic immediate-post-dominator
model, Fung et al. MICRO 2007; the same model pre-Volta hardware used): entries
``(pc, reconvergence pc, mask, kind)``.  A divergent branch turns the top entry into
the reconvergence entry (``pc = ipdom``) and pushes the fall-through and taken sides
(taken side runs first); an entry is popped when its pc reaches its reconvergence
pc or its mask becomes empty.  A ``call`` pushes a *call entry* (return pc) under
the callee's entry; ``ret`` removes the returning lanes from every entry above the
nearest call entry, and when the call entry is uncovered the lanes return together.
``exit`` removes lanes from every entry.  A ``ret`` with no call entry is ``exit``.

Scheduling: among runnable warps (not done, not waiting at a barrier) the scheduler
picks the lowest pc and executes that one instruction for *every* warp at that pc.
This keeps warps in lock step as much as possible and amortises dispatch.  When no
warp is runnable, satisfied barriers are released; if none can be, the launch is
deadlocked and a :class:`SimError` names the barrier.

Differences from independent thread scheduling (sm_70+): threads of one warp never
interleave except at the reconvergence points above.  A warp-synchronous operation
(``bar.warp.sync``, ``shfl.sync``, ``vote.sync`` ...) reached by only part of the lanes
its membermask names lets the other side of the divergent branch run first when that
side has not started a warp-level op (its lanes exit or reconverge, and the op then
waits only for the named lanes that have not exited, as the ISA says); otherwise it is
reported as an error instead of waiting (programs that rely on ITS to make such code
work are rejected, never run wrongly);
spin loops that wait for another warp of the same CTA to make progress may livelock
(the step budget reports it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Instr, Span
from ptxopt.sim.claims import Claims
from ptxopt.sim.errors import SimError
from ptxopt.sim.memory import FUNC_BASE, Memory
from ptxopt.sim.program import FuncInfo, Program

W = 32
NORMAL = 0
CALL = 1
_AR32 = np.arange(W, dtype=np.int64)
_NOPC = np.int64(np.iinfo(np.int64).max)
_ALL = slice(None)


@dataclass(slots=True)
class Stats:
    warp_instructions: int = 0
    lane_instructions: int = 0
    steps: int = 0
    divergent_branches: int = 0
    max_divergence_depth: int = 0
    barriers: int = 0
    calls: int = 0
    atomics: int = 0

    def merge(self, o: Stats) -> None:
        self.warp_instructions += o.warp_instructions
        self.lane_instructions += o.lane_instructions
        self.steps += o.steps
        self.divergent_branches += o.divergent_branches
        self.max_divergence_depth = max(self.max_divergence_depth, o.max_divergence_depth)
        self.barriers += o.barriers
        self.calls += o.calls
        self.atomics += o.atomics


@dataclass(slots=True)
class Violation:
    """A value claimed warp-uniform that was written, or read, with differing bits."""

    function: str
    register: str
    instruction: str
    location: str
    warp: int
    values: dict[int, int] = field(default_factory=dict)  # lane -> bits
    value: str = ""  # the SSA value claimed (``%r5.12``), for SSA claims

    def __str__(self) -> str:
        vals = ", ".join(f"{k}:{v:#x}" for k, v in list(self.values.items())[:8])
        what = f"{self.register} ({self.value})" if self.value else self.register
        return (
            f"{self.location}: {what} in {self.function} not uniform in warp "
            f"{self.warp} at '{self.instruction}' (lane:value {vals})"
        )


def _lanes(v: Any, tids: np.ndarray) -> np.ndarray:
    """A per-lane int64 array from a reader result (which may be a scalar)."""
    return np.broadcast_to(np.asarray(v), tids.shape).astype(np.int64)


def pack_mask(b: np.ndarray) -> np.ndarray:
    """bool (g, 32) -> uint32 (g,)."""
    return np.packbits(b, axis=1, bitorder="little").view(np.uint32).ravel()


def unpack_mask(m: np.ndarray) -> np.ndarray:
    """uint32 (g,) -> bool (g, 32)."""
    m = np.ascontiguousarray(m, dtype=np.uint32)
    return np.unpackbits(m.view(np.uint8).reshape(-1, 4), axis=1, bitorder="little").astype(bool)


class Registers(dict[str, np.ndarray]):
    """Register arrays over all thread slots, created (zeroed) on first use."""

    def __init__(self, types: dict[str, Any], n: int) -> None:
        super().__init__()
        self.types = types
        self.n = n

    factory: Callable[[str], np.ndarray | None] | None = None

    def __missing__(self, key: str) -> np.ndarray:
        if self.factory is not None and key.startswith("%"):
            v = self.factory(key)
            if v is not None:
                self[key] = v
                return v
        dt = self.types.get(key)
        if dt is None:
            raise KeyError(key)
        arr = np.zeros(self.n, dtype=dt)
        self[key] = arr
        return arr


class _Deferred(Exception):
    """Raised by :meth:`Machine.check_members` for the warps (``rows`` of the op's
    warp group) that must let other paths run before a ``.sync`` op."""

    def __init__(self, rows: np.ndarray) -> None:
        super().__init__("deferred")
        self.rows = rows


class Op:
    """A pre-decoded instruction.  ``kind`` selects how the machine runs it:
    ``alu`` (``fn(m, sel, tids)``), ``warp`` (``fn(m, G, lanes2d, sel, tids)``) or a
    control kind handled by the machine itself."""

    __slots__ = ("kind", "fn", "ins", "data", "guard", "guard_neg", "lanewise")

    def __init__(
        self, kind: str, ins: Instr, fn: Callable[..., Any] | None = None, data: Any = None
    ) -> None:
        self.kind = kind
        self.ins = ins
        self.fn = fn
        self.data = data
        self.guard = ins.pred.name if ins.pred is not None else None
        self.guard_neg = ins.pred_neg
        # set by the decoder: an ``alu`` op that is a pure per-lane function of
        # registers (may run on whole arrays with a write mask)
        self.lanewise = False


class Machine:
    def __init__(
        self,
        prog: Program,
        code: list[Op],
        mem: Memory,
        entry: FuncInfo,
        n_ctas: int,
        block: tuple[int, int, int],
        cta_ids: np.ndarray,
        grid: tuple[int, int, int],
        reg_types: dict[str, Any],
        claims: Claims | None,
        max_steps: int,
        local_static: int,
    ) -> None:
        self.prog = prog
        self.code = code
        self.mem = mem
        self.entry = entry
        self.n_ctas = n_ctas
        nthr = block[0] * block[1] * block[2]
        self.threads_per_cta = nthr
        self.wpc = (nthr + W - 1) // W
        self.NW = n_ctas * self.wpc
        self.T = self.NW * W
        self.stats = Stats()
        self.max_steps = max_steps
        self.violations: list[Violation] = []
        self.claims = claims
        self.R = Registers(reg_types, self.T)
        self.wmask: np.ndarray | None = None  # lane mask of a whole-array ALU step
        T = self.T
        self.all_tids = np.arange(T, dtype=np.int64)
        self.all_warps = np.arange(self.NW, dtype=np.int64)
        slot = self.wpc * W
        self.exited = np.tile(np.arange(slot) >= nthr, n_ctas)  # lanes of a partial warp
        self.active = ~self.exited
        self.n_live = int(self.active.sum())
        self._full = not self.exited.any()
        # memory uses thread slots; shared index = slot // threads_per_cta_slot
        mem.threads_per_cta = self.wpc * W
        # special registers are computed on first use (see _special)
        self._block = block
        self._grid = grid
        self._cta_ids = cta_ids
        self.R.factory = self._special
        self.clock = 0
        # frames
        self.fp = np.full(T, local_static, dtype=np.int64)
        # alloca's stack pointer: a local address, growing down from the top
        self.stack_top = np.full(T, mem.local_stride, dtype=np.int64)
        self.cdepth = np.zeros(T, dtype=np.int64)
        self.saves: dict[str, np.ndarray] = {}
        # SIMT stacks
        D = 8
        self.D = D
        self.stk_pc = np.zeros((self.NW, D), dtype=np.int64)
        self.stk_rpc = np.full((self.NW, D), -1, dtype=np.int64)
        self.stk_mask = np.zeros((self.NW, D), dtype=np.uint32)
        self.stk_kind = np.zeros((self.NW, D), dtype=np.int8)
        self.sp = np.ones(self.NW, dtype=np.int64)
        self.pc = np.full(self.NW, entry.start, dtype=np.int64)
        self.blocked = np.zeros(self.NW, dtype=bool)
        self.done: np.ndarray = np.asarray(~self.active.reshape(self.NW, W).any(1))
        self.sp[self.done] = 0
        self.together = not self.done.any()
        # barriers: per (cta, id) arrivals of bar.arrive; waiting warps record id/pc
        self.bar_id = np.full(self.NW, -1, dtype=np.int64)
        self.bar_pc = np.full(self.NW, -1, dtype=np.int64)
        self.bar_expect = np.zeros(self.NW, dtype=np.int64)
        self.bar_arrived = np.zeros((n_ctas, 16), dtype=np.int64)
        self.bar_red = np.zeros(T, dtype=np.int64)
        # warps blocked in a potentially blocking wait (mbarrier.try_wait): they retry
        # once some asynchronous-synchronization object changes state (async_epoch)
        self.mb_waiting = np.zeros(self.NW, dtype=bool)
        self.mb_epoch = np.zeros(self.NW, dtype=np.int64)
        self.async_epoch = 0
        self.async_state: Any = None  # ptxopt.sim.ops.asynccopy.AsyncState, on first use
        mem.describe = self.describe

    def _special(self, name: str) -> np.ndarray | None:
        """Build a special register (per-CTA pattern tiled over the batch)."""
        T = self.T
        block, grid = self._block, self._grid
        slot = self.wpc * W
        nthr = self.threads_per_cta
        n = self.n_ctas

        def tile(pattern: np.ndarray) -> np.ndarray:
            return np.tile(pattern.astype(np.uint32), n)

        lin = np.minimum(np.arange(slot, dtype=np.int64), nthr - 1)
        if name.startswith("%tid."):
            bx, by = block[0], block[1]
            v = {"x": lin % bx, "y": (lin // bx) % by, "z": lin // (bx * by)}[name[-1]]
            return tile(v)
        ax = "xyz".find(name[-1]) if name[-2] == "." else -1
        if name.startswith("%ntid."):
            return np.full(T, block[ax], dtype=np.uint32)
        if name.startswith("%nctaid."):
            return np.full(T, grid[ax], dtype=np.uint32)
        if name.startswith("%ctaid."):
            return np.repeat(self._cta_ids[:, ax].astype(np.uint32), slot)
        one = np.uint32(1)
        lane = np.arange(slot, dtype=np.uint32) % np.uint32(W)
        lt = (one << lane) - one
        table: dict[str, Callable[[], np.ndarray]] = {
            "%laneid": lambda: lane,
            "%warpid": lambda: np.arange(slot, dtype=np.uint32) // np.uint32(W),
            "%lanemask_eq": lambda: one << lane,
            "%lanemask_lt": lambda: lt,
            "%lanemask_le": lambda: lt | (one << lane),
            "%lanemask_ge": lambda: ~lt,
            "%lanemask_gt": lambda: ~(lt | (one << lane)),
        }
        f = table.get(name)
        if f is not None:
            return tile(f())
        if name.startswith("%clusterid."):  # every CTA is a cluster of one
            return np.repeat(self._cta_ids[:, ax].astype(np.uint32), slot)
        if name.startswith("%nclusterid."):
            return np.full(T, grid[ax], dtype=np.uint32)
        if name.startswith("%cluster_nctaid."):
            return np.ones(T, dtype=np.uint32)
        consts = {
            "%cluster_ctarank": 0,
            "%cluster_nctarank": 1,
            "%cluster_ctaid.x": 0,
            "%cluster_ctaid.y": 0,
            "%cluster_ctaid.z": 0,
            "%is_explicit_cluster": 0,
            "%nwarpid": self.wpc,
            "%smid": 0,
            "%nsmid": 1,
            "%dynamic_smem_size": self.mem.shared_limit,
            "%total_smem_size": self.mem.shared_limit,
        }
        if name in consts:
            return np.full(T, consts[name], dtype=np.uint32)
        if name == "%gridid":
            return np.zeros(T, dtype=np.uint64)
        return None

    # -- helpers ---------------------------------------------------------------
    def positions(self, G: np.ndarray, tids: np.ndarray) -> np.ndarray:
        """Index of each thread ``tids`` in the flattened (len(G), 32) lane grid of G."""
        if len(G) == self.NW:
            return tids
        pm = np.empty(self.NW, dtype=np.int64)
        pm[G] = np.arange(len(G), dtype=np.int64)
        return pm[tids // W] * W + (tids % W)

    def describe(self, t: int) -> str:
        cta = t // (self.wpc * W)
        lin = t % (self.wpc * W)
        tid = (
            int(self.R["%tid.x"][t]),
            int(self.R["%tid.y"][t]),
            int(self.R["%tid.z"][t]),
        )
        ctaid = (
            int(self.R["%ctaid.x"][t]),
            int(self.R["%ctaid.y"][t]),
            int(self.R["%ctaid.z"][t]),
        )
        return f"thread {tid} of CTA {ctaid} (warp {lin // W}, lane {lin % W}, batch CTA {cta})"

    def warp_threads(self, G: np.ndarray) -> np.ndarray:
        if len(G) == self.NW:  # G is always sorted and duplicate-free
            return self.all_tids
        return (G[:, None] * W + _AR32).ravel()

    def ensure_depth(self, extra: int) -> None:
        need = int(self.sp.max()) + extra
        if need <= self.D:
            return
        D = max(need, self.D * 2)
        for name in ("stk_pc", "stk_rpc", "stk_mask", "stk_kind"):
            old = getattr(self, name)
            new = np.zeros((self.NW, D), dtype=old.dtype)
            if name == "stk_rpc":
                new[:] = -1
            new[:, : self.D] = old
            setattr(self, name, new)
        self.D = D

    def store_reg(self, name: str, sel: Any, tids: np.ndarray, bits: Any, pc: int) -> None:
        arr = self.R[name]
        wm = self.wmask
        if wm is None:
            arr[sel] = bits
        else:
            np.copyto(arr, bits, casting="unsafe", where=wm if arr.ndim == 1 else wm[:, None])
            tids = np.flatnonzero(wm)
        if self.claims is not None:
            self._check_write(name, tids, pc)

    def _check_write(self, name: str, tids: np.ndarray, pc: int) -> None:
        claims = self.claims
        assert claims is not None
        at = claims.writes.get(pc)
        if at is not None and name in at:
            var, label = at[name]
            self._check_uniform(name, tids, pc, var, label)
            return
        owner = self.prog.owner[pc]
        claimed = claims.names.get(owner.name)
        if not claimed:
            return
        short = name.split("::", 1)[1] if "::" in name else name
        base = short.split("#", 1)[0]
        if short not in claimed and base not in claimed:
            return
        self._check_uniform(name, tids, pc, short, "")

    def check_at(self, checks: list[tuple[str, str, str]], pc: int, tids: np.ndarray) -> None:
        """Phi and read claims: each register holds one value per warp in the lanes
        ``tids`` that reach ``pc``."""
        for reg, var, label in checks:
            self._check_uniform(reg, tids, pc, var, label)

    def _check_uniform(self, name: str, tids: np.ndarray, pc: int, short: str, value: str) -> None:
        if not len(tids):
            return
        owner = self.prog.owner[pc]
        arr = self.R[name]
        vals = arr[tids]
        if vals.ndim == 2:  # .b128: compare both words
            vals = vals[:, 0] ^ (vals[:, 1] * np.uint64(0x9E3779B97F4A7C15))
        warps = tids // W
        # first value of each warp among written lanes
        order = np.argsort(warps, kind="stable")
        w_sorted = warps[order]
        v_sorted = vals[order]
        starts = np.r_[0, np.nonzero(np.diff(w_sorted))[0] + 1]
        firsts = np.repeat(v_sorted[starts], np.diff(np.r_[starts, len(w_sorted)]))
        bad = v_sorted != firsts
        if not bad.any():
            return
        ins = self.prog.instrs[pc]
        for w in np.unique(w_sorted[bad])[:16]:
            m = w_sorted == w
            lanes = tids[order][m] % W
            vv = v_sorted[m]
            self.violations.append(
                Violation(
                    owner.name,
                    short,
                    ins.name + " " + ", ".join(str(o) for o in ins.operands),
                    str(ins.span) if ins.span else "?",
                    int(w),
                    {
                        int(ln): int(
                            np.asarray(v)
                            .view(np.uint64 if v.dtype.itemsize == 8 else v.dtype)
                            .astype(np.uint64)
                        )
                        for ln, v in zip(lanes, vv, strict=True)
                    },
                    value,
                )
            )

    # -- main loop ---------------------------------------------------------------
    def run(self) -> None:
        code = self.code
        stats = self.stats
        steps = 0
        at_pc = self.claims.at_pc() if self.claims is not None else {}
        checks = at_pc or None
        while True:
            if self.together:
                G = self.all_warps
                is_all = True
                pc = int(self.pc[0])
                Gm: Any = None
            else:
                runnable = ~(self.done | self.blocked)
                if not runnable.any():
                    if self.done.all():
                        stats.steps = steps
                        return
                    self.release_barriers()
                    continue
                pcs = np.where(runnable, self.pc, _NOPC)
                pc = int(pcs.min())
                Gm = pcs == pc
                G = np.nonzero(Gm)[0]
                is_all = len(G) == self.NW
                if is_all:
                    self.together = True
                    self._full = bool(self.active.all())
            steps += 1
            if steps > self.max_steps:
                ins = self.prog.instrs[pc]
                raise SimError(
                    ins.span,
                    f"step budget of {self.max_steps} exceeded (infinite loop or livelock?)",
                )
            op = code[pc]
            if (
                op.lanewise
                and checks is None
                and not (is_all and self._full)
                and 4 * len(G) >= self.NW
            ):
                # most warps execute: compute on whole register arrays and write
                # through a lane mask (cheaper than gathering and scattering lanes)
                mask = self.active if is_all else self.active & np.repeat(Gm, W)
                if op.guard is not None:
                    g = self.R[op.guard]
                    mask = mask & ~g if op.guard_neg else mask & g
                n = int(np.count_nonzero(mask))
                stats.warp_instructions += len(G)
                stats.lane_instructions += n
                if n:
                    self.wmask = mask
                    try:
                        op.fn(self, _ALL, self.all_tids)  # type: ignore[misc]
                    finally:
                        self.wmask = None
                self.advance(G, pc)
                continue
            # lanes
            if is_all and self._full:
                sel: Any = slice(None)
                tids = self.all_tids
            else:
                t = self.warp_threads(G)
                tids = t[self.active[t]]
                sel = tids
            stats.warp_instructions += len(G)
            if checks is not None and pc in at_pc:
                self.check_at(at_pc[pc], pc, tids)
            if op.guard is not None:
                g = self.R[op.guard][sel]
                if op.guard_neg:
                    g = ~g
                if not (isinstance(sel, slice) and g.all()):
                    tids = tids[g]
                    sel = tids
            n = len(tids)
            stats.lane_instructions += n
            kind = op.kind
            try:
                if kind == "alu":
                    if n:
                        op.fn(self, sel, tids)  # type: ignore[misc]
                    self.advance(G, pc)
                elif kind == "warp":
                    done = self.run_warp_op(op, G, tids, sel, pc)
                    self.advance(done, pc)
                else:
                    getattr(self, "op_" + kind)(op, G, tids, pc)
            except SimError:
                raise
            except (ValueError, TypeError, OverflowError, IndexError) as e:  # pragma: no cover
                raise SimError(
                    op.ins.span,
                    f"internal interpreter error in '{op.ins.name}': {type(e).__name__}: {e}",
                ) from e
        # unreachable

    def advance(self, G: np.ndarray, pc: int) -> None:
        nxt = pc + 1
        if self.together:
            self.pc[:] = nxt
        else:
            self.pc[G] = nxt
        if self.prog.is_reconv[nxt]:
            self.settle(G)

    # -- reconvergence -------------------------------------------------------------
    def settle(self, G: np.ndarray) -> None:
        """Pop stack entries of warps ``G`` that reached their reconvergence pc or
        have no active lanes left."""
        W_ = G
        while len(W_):
            W_ = W_[~self.done[W_]]
            if not len(W_):
                return
            top = self.sp[W_] - 1
            at_rpc = self.pc[W_] == self.stk_rpc[W_, top]
            act = self.active.reshape(self.NW, W)[W_]
            empty = ~act.any(1)
            pop = at_rpc | empty
            if not pop.any():
                return
            P = W_[pop]
            self.together = False
            self._full = False
            self.sp[P] -= 1
            fin = self.sp[P] == 0
            if fin.any():
                F = P[fin]
                self.done[F] = True
                self.active[self.warp_threads(F)] = False
                P = P[~fin]
            if len(P):
                top = self.sp[P] - 1
                self.pc[P] = self.stk_pc[P, top]
                m = unpack_mask(self.stk_mask[P, top]).ravel()
                tt = self.warp_threads(P)
                self.active[tt] = m & ~self.exited[tt]
                kinds = self.stk_kind[P, top]
                if (kinds == CALL).any():
                    C = P[kinds == CALL]
                    self.stk_kind[C, self.sp[C] - 1] = NORMAL
                    self.return_from_call(C)
            W_ = P

    def _all_lanes_mask(self, G: np.ndarray) -> np.ndarray:
        return self.active.reshape(self.NW, W)[G]

    # -- branches -----------------------------------------------------------------
    def op_bra(self, op: Op, G: np.ndarray, tids: np.ndarray, pc: int) -> None:
        target, rpc = op.data
        conditional = op.guard is not None
        # ``@p bra.uni`` promises all active lanes agree; a divergent one is undefined
        promise = op.ins.span if conditional and ".uni" in op.ins.mods else None
        self.branch(G, tids, pc, [target], None, rpc, conditional, promise)

    def op_brx(self, op: Op, G: np.ndarray, tids: np.ndarray, pc: int) -> None:
        reader, targets, rpc = op.data
        idx = _lanes(reader(self, tids), tids)
        if idx.size and (idx.min() < 0 or idx.max() >= len(targets)):
            bad = (idx < 0) | (idx >= len(targets))
            i = int(np.argmax(bad))
            raise SimError(
                op.ins.span,
                f"brx.idx index {int(idx[i])} out of range "
                f"(table has {len(targets)} entries) in {self.describe(int(tids[i]))}",
            )
        self.branch(G, tids, pc, targets, idx, rpc, True)

    def branch(
        self,
        G: np.ndarray,
        tids: np.ndarray,
        pc: int,
        targets: list[int],
        choice: np.ndarray | None,
        rpc: int,
        conditional: bool,
        uniform_promise: Span | None = None,
    ) -> None:
        if not conditional and choice is None:
            if self.together:
                self.pc[:] = targets[0]
            else:
                self.pc[G] = targets[0]
            if self.prog.is_reconv[targets[0]]:
                self.settle(G)
            return
        g = len(G)
        act = self._all_lanes_mask(G)
        # which target each executing lane goes to (-1: falls through)
        dest = np.full(g * W, -1, dtype=np.int64)
        pos = self.positions(G, tids)
        dest[pos] = 0 if choice is None else choice
        dest2 = dest.reshape(g, W)
        ntarg = len(targets)
        used = np.zeros((g, ntarg + 1), dtype=bool)
        for k in range(-1, ntarg):
            used[:, k + 1] = ((dest2 == k) & act).any(1)
        uni = used.sum(1) <= 1
        tpcs = np.array(targets + [pc + 1], dtype=np.int64)
        if uni.any():
            U = G[uni]
            k = np.argmax(used[uni], axis=1) - 1  # -1 -> last element, pc + 1
            dests = tpcs[k]
            self.pc[U] = dests
            if self.together and (dests != dests[0]).any():
                self.together = False
            if any(self.prog.is_reconv[int(t)] for t in tpcs):
                self.settle(U)
        div = ~uni
        if not div.any():
            return
        if uniform_promise is not None:
            w = int(G[div][0])
            raise SimError(
                uniform_promise,
                f"bra.uni is divergent: the active lanes of warp {w} of the batch disagree "
                "on the branch condition",
            )
        self.together = False
        self._full = False
        D_ = G[div]
        self.stats.divergent_branches += len(D_)
        self.ensure_depth(ntarg + 2)
        act_d = act[div]
        dest_d = dest2[div]
        top = self.sp[D_] - 1
        reuse = self.stk_rpc[D_, top] == rpc
        nr = ~reuse
        if nr.any():
            # the top entry becomes the reconvergence entry
            Wn = D_[nr]
            self.stk_pc[Wn, top[nr]] = rpc
            self.stk_mask[Wn, top[nr]] = pack_mask(act_d[nr])
            self.stk_kind[Wn, top[nr]] = NORMAL
        cur = np.where(reuse, top, top + 1)
        # fall-through side is pushed first (runs last); targets in reverse order
        sides = [(-1, pc + 1)] + [(k, targets[k]) for k in range(ntarg)][::-1]
        for k, tpc in sides:
            lanes = (dest_d == k) & act_d
            has = lanes.any(1)
            if not has.any():
                continue
            Wk = D_[has]
            s = cur[has]
            self.stk_pc[Wk, s] = tpc
            self.stk_rpc[Wk, s] = rpc
            self.stk_mask[Wk, s] = pack_mask(lanes[has])
            self.stk_kind[Wk, s] = NORMAL
            cur[has] += 1
        self.sp[D_] = cur
        top = cur - 1
        self.pc[D_] = self.stk_pc[D_, top]
        tt = self.warp_threads(D_)
        self.active[tt] = unpack_mask(self.stk_mask[D_, top]).ravel() & ~self.exited[tt]
        depth = int(cur.max())
        if depth > self.stats.max_divergence_depth:
            self.stats.max_divergence_depth = depth
        self.settle(D_)

    # -- exit / ret / trap -----------------------------------------------------------
    def _remove_lanes(self, G: np.ndarray, tids: np.ndarray, upto_call: bool) -> np.ndarray:
        """Clear lanes ``tids`` from stack entries of warps ``G``: every entry, or the
        entries above the nearest call entry.  Returns per-warp has-call flags."""
        gone = np.zeros(len(G) * W, dtype=bool)
        pos = self.positions(G, tids)
        gone[pos] = True
        bits = pack_mask(gone.reshape(-1, W))
        sp = self.sp[G]
        depth = int(sp.max())
        if upto_call:
            kinds = self.stk_kind[G, :depth]
            idx = np.arange(depth)[None, :]
            is_call = (kinds == CALL) & (idx < (sp - 1)[:, None])
            lowest = np.where(is_call.any(1), depth - 1 - np.argmax(is_call[:, ::-1], axis=1), -1)
        else:
            lowest = np.full(len(G), -1, dtype=np.int64)
        for d in range(depth):
            m = (d > lowest) & (d < sp)
            if m.any():
                self.stk_mask[G[m], d] &= ~bits[m]
        self.active[tids] = False
        return lowest >= 0

    def op_exit(self, op: Op, G: np.ndarray, tids: np.ndarray, pc: int) -> None:
        self._exit(G, tids, pc)

    def _exit(self, G: np.ndarray, tids: np.ndarray, pc: int) -> None:
        self._full = False
        self.together = False
        self.exited[tids] = True
        self._remove_lanes(G, tids, False)
        self.pc[G] = pc + 1
        self.settle(G)

    def op_trap(self, op: Op, G: np.ndarray, tids: np.ndarray, pc: int) -> None:
        if len(tids):
            raise SimError(op.ins.span, f"trap executed by {self.describe(int(tids[0]))}")
        self.advance(G, pc)

    def op_ret(self, op: Op, G: np.ndarray, tids: np.ndarray, pc: int) -> None:
        if self.prog.owner[pc].is_entry:
            self._exit(G, tids, pc)
            return
        self._full = False
        self.together = False
        has_call = self._remove_lanes(G, tids, True)
        if not has_call.all():  # pragma: no cover - entry functions handled above
            raise SimError(op.ins.span, "ret without a caller")
        self.pc[G] = pc + 1
        self.settle(G)

    # -- calls -----------------------------------------------------------------------
    def op_call(self, op: Op, G: np.ndarray, tids: np.ndarray, pc: int) -> None:
        site = op.data
        caller: FuncInfo = self.prog.owner[pc]
        self.stats.calls += len(tids)
        if site.builtin is not None:
            site.builtin(self, tids, pc)
            self.advance(G, pc)
            return
        self._full = False
        self.together = False
        act = self._all_lanes_mask(G)
        calling = np.zeros(len(G) * W, dtype=bool)
        pos = self.positions(G, tids)
        calling[pos] = True
        calling2 = calling.reshape(-1, W) & act
        has = calling2.any(1)
        partial = has & (calling2 != act).any(1)
        # targets
        if site.direct is not None:
            targets = [site.direct]
            tix = np.zeros(len(tids), dtype=np.int64)
        else:
            addr = _lanes(site.target_reader(self, tids), tids)
            fid = (addr - FUNC_BASE) // 16
            funcs = list(self.prog.funcs.values())
            bad = (fid < 0) | (fid >= len(funcs)) | ((addr - FUNC_BASE) % 16 != 0)
            if bad.any():
                i = int(np.argmax(bad))
                raise SimError(
                    op.ins.span,
                    f"indirect call to non-function address "
                    f"{int(addr[i]) & (2**64 - 1):#x} by {self.describe(int(tids[i]))}",
                )
            uniq, tix = np.unique(fid, return_inverse=True)
            targets = [funcs[int(f)] for f in uniq]
        for f in targets:
            if f.is_entry:
                raise SimError(op.ins.span, f"call to kernel entry {f.name}")
        # frames: copy arguments into the callee frame, save recursive registers
        new_fp = self.fp[tids] + caller.frame_size
        limit = self.mem.local_limit
        for j, f in enumerate(targets):
            m = tix == j
            if (new_fp[m] + f.frame_size > limit).any():
                i = int(np.argmax(m & (new_fp + f.frame_size > limit)))
                raise SimError(
                    op.ins.span,
                    f"call stack overflow calling {f.name} by "
                    f"{self.describe(int(tids[i]))} (local memory per thread is "
                    f"{limit} bytes; raise stack_bytes)",
                )
            self._copy_args(site, f, tids[m], self.fp[tids[m]], new_fp[m], op)
        for fname in site.saved:
            self._save_regs(fname, tids)
        self.cdepth[tids] += 1
        self.fp[tids] = new_fp
        # stacks
        self.ensure_depth(2 + len(targets))
        H = G[has]
        top = self.sp[H] - 1
        part = partial[has]
        full = ~part
        if full.any():
            Wf = H[full]
            self.stk_pc[Wf, top[full]] = pc + 1
            self.stk_kind[Wf, top[full]] = CALL
            self.stk_mask[Wf, top[full]] = pack_mask(calling2[has][full])
        if part.any():
            Wp = H[part]
            tp = top[part]
            self.stk_pc[Wp, tp] = pc + 1
            self.stk_mask[Wp, tp] = pack_mask(act[has][part])
            self.stk_pc[Wp, tp + 1] = pc + 1
            self.stk_rpc[Wp, tp + 1] = pc + 1
            self.stk_kind[Wp, tp + 1] = CALL
            self.stk_mask[Wp, tp + 1] = pack_mask(calling2[has][part])
            self.sp[Wp] += 1
        lanefunc = np.full(len(G) * W, -1, dtype=np.int64)
        lanefunc[pos] = tix
        lf = lanefunc.reshape(-1, W)[has]
        for j, f in enumerate(targets[::-1]):
            jj = len(targets) - 1 - j
            lanes = (lf == jj) & calling2[has]
            hw = lanes.any(1)
            if not hw.any():
                continue
            Wk = H[hw]
            s = self.sp[Wk]
            self.stk_pc[Wk, s] = f.start
            self.stk_rpc[Wk, s] = -1
            self.stk_kind[Wk, s] = NORMAL
            self.stk_mask[Wk, s] = pack_mask(lanes[hw])
            self.sp[Wk] += 1
        if len(H):
            t2 = self.sp[H] - 1
            self.pc[H] = self.stk_pc[H, t2]
            tt = self.warp_threads(H)
            self.active[tt] = unpack_mask(self.stk_mask[H, t2]).ravel() & ~self.exited[tt]
        nh = G[~has]
        if len(nh):
            self.pc[nh] = pc + 1
            self.settle(nh)
        depth = int(self.sp.max())
        if depth > self.stats.max_divergence_depth:
            self.stats.max_divergence_depth = depth

    def _copy_args(
        self,
        site: Any,
        f: FuncInfo,
        tids: np.ndarray,
        old_fp: np.ndarray,
        new_fp: np.ndarray,
        op: Op,
    ) -> None:
        if len(site.args) != len(f.params) or len(site.rets) > len(f.rets):
            raise SimError(
                op.ins.span,
                f"call to {f.name} with {len(site.args)} arguments "
                f"and {len(site.rets)} results; it takes {len(f.params)} and "
                f"returns {len(f.rets)}",
            )
        local = self.mem.local
        stride = self.mem.local_stride
        for a, p in zip(site.args, f.params, strict=True):
            size = min(a.size, p.size)
            src = tids * stride + old_fp + a.offset
            dst = tids * stride + new_fp + p.offset
            for b in range(size):
                local[dst + b] = local[src + b]

    def _save_regs(self, fname: str, tids: np.ndarray) -> None:
        info = self.prog.funcs[fname]
        depth = int(self.cdepth[tids].max()) + 1 if len(tids) else 1
        for r in info.regs:
            arr = self.R[r]
            sv = self.saves.get(r)
            if sv is None or sv.shape[0] < depth:
                new = np.zeros(
                    (max(depth, 2 * (0 if sv is None else sv.shape[0]), 4),) + arr.shape,
                    dtype=arr.dtype,
                )
                if sv is not None:
                    new[: sv.shape[0]] = sv
                self.saves[r] = sv = new
            sv[self.cdepth[tids], tids] = arr[tids]

    def return_from_call(self, C: np.ndarray) -> None:
        """Warps ``C`` uncovered their call entry: the active lanes return."""
        tt = self.warp_threads(C)
        tids = tt[self.active[tt]]
        if not len(tids):
            return
        callpcs = self.pc[C] - 1
        for cp in np.unique(callpcs):
            cpc = int(cp)
            sel = tids[np.repeat(callpcs == cp, W)[self.active[tt]]]
            site = self.code[cpc].data
            caller = self.prog.owner[cpc]
            callee_fp = self.fp[sel]
            caller_fp = callee_fp - caller.frame_size
            local = self.mem.local
            stride = self.mem.local_stride
            for r, off in zip(site.rets, site.ret_offsets, strict=True):
                src = sel * stride + callee_fp + off
                dst = sel * stride + caller_fp + r.offset
                for b in range(r.size):
                    local[dst + b] = local[src + b]
            self.fp[sel] = caller_fp
            self.cdepth[sel] -= 1
            for fname in site.saved:
                for reg in self.prog.funcs[fname].regs:
                    sv = self.saves.get(reg)
                    if sv is not None:
                        self.R[reg][sel] = sv[self.cdepth[sel], sel]

    # -- warp-level operations ---------------------------------------------------------
    def run_warp_op(self, op: Op, G: np.ndarray, tids: np.ndarray, sel: Any, pc: int) -> np.ndarray:
        """Run a warp-level op for warps ``G``; return the warps that executed it
        (warps that must first let other lanes of their membermask run are deferred,
        see :meth:`check_members`)."""
        assert op.fn is not None
        while True:
            lanes = np.zeros(len(G) * W, dtype=bool)
            if isinstance(sel, slice):
                lanes[:] = True
                lanes &= self.active[self.warp_threads(G)]
            else:
                lanes[self.positions(G, tids)] = True
            try:
                op.fn(self, G, lanes.reshape(-1, W), tids, pc)
                return G
            except _Deferred as e:
                self._defer(G[e.rows], pc)
                G = G[~e.rows]
                if not len(G):
                    return G
                t = self.warp_threads(G)
                tids = t[self.active[t]]
                if op.guard is not None:
                    g = self.R[op.guard][tids]
                    tids = tids[~g if op.guard_neg else g]
                sel = tids

    def check_members(self, op: Op, G: np.ndarray, lanes: np.ndarray, member: np.ndarray) -> None:
        """``member`` (g, 32) bool: lanes named by membermask.  Every executing lane
        must be named, and every named non-exited lane must be executing.

        A ``.sync`` instruction waits for the named lanes that have not exited (PTX
        ISA 9.0, section 9.7.13): when the missing lanes of a warp belong to the other
        side of a divergent branch that has not run yet (the stack entry below, with
        the same reconvergence point, not itself stopped at a warp-level op), the
        warp is deferred - that side runs first, and its lanes either exit or
        reconverge - instead of failing."""
        exited = np.asarray(self.exited[self.warp_threads(G)]).reshape(-1, W)
        missing = member & ~exited & ~lanes & np.asarray(np.any(lanes, axis=1))[:, None]
        notin = lanes & ~member
        if notin.any():
            w, ln = np.argwhere(notin)[0]
            raise SimError(
                op.ins.span,
                f"'{op.ins.name}': executing lane {int(ln)} of warp "
                f"{int(G[w]) % self.wpc} is not in membermask (undefined)",
            )
        rows = missing.any(1)
        if not rows.any():
            return
        can = self._can_defer(G, missing)
        stuck = rows & ~can
        if stuck.any():
            w, ln = (int(x) for x in np.argwhere(missing & stuck[:, None])[0])
            raise SimError(
                op.ins.span,
                f"'{op.ins.name}': membermask names lane {ln} of warp {int(G[w]) % self.wpc} "
                "which is not executing this instruction (divergent warp-synchronous op; the "
                "interpreter reconverges at post-dominators and does not wait for it)",
            )
        raise _Deferred(rows)

    def _can_defer(self, G: np.ndarray, missing: np.ndarray) -> np.ndarray:
        """Per warp of ``G``: the stack entry below the top is a sibling path (same
        reconvergence pc) holding some ``missing`` lane whose next instruction is not a
        warp-level op (two paths waiting for each other are an error)."""
        top = self.sp[G] - 1
        below = top - 1
        ok = below >= 0
        b = np.maximum(below, 0)
        ok &= self.stk_kind[G, b] == NORMAL
        ok &= self.stk_rpc[G, b] == self.stk_rpc[G, top]
        ok &= (pack_mask(missing) & self.stk_mask[G, b]) != 0
        nxt = self.stk_pc[G, b]
        ok &= np.array([self.code[int(p)].kind != "warp" for p in nxt], dtype=bool)
        return np.asarray(ok)

    def _defer(self, D: np.ndarray, pc: int) -> None:
        """Swap the top two stack entries of warps ``D`` (stopped at ``pc``)."""
        self.together = False
        self._full = False
        top = self.sp[D] - 1
        below = top - 1
        self.stk_pc[D, top] = pc
        for arr in (self.stk_pc, self.stk_rpc, self.stk_mask, self.stk_kind):
            a, b = arr[D, top].copy(), arr[D, below].copy()
            arr[D, top], arr[D, below] = b, a
        self.pc[D] = self.stk_pc[D, top]
        tt = self.warp_threads(D)
        self.active[tt] = unpack_mask(self.stk_mask[D, top]).ravel() & ~self.exited[tt]
        self.settle(D)

    # -- barriers ----------------------------------------------------------------------
    def op_bar(self, op: Op, G: np.ndarray, tids: np.ndarray, pc: int) -> None:
        info = op.data
        act = self._all_lanes_mask(G)
        lanes = np.zeros(len(G) * W, dtype=bool)
        lanes[self.positions(G, tids)] = True
        lanes2 = lanes.reshape(-1, W)
        exe = lanes2.any(1)
        live = ~self.exited[self.warp_threads(G)].reshape(-1, W)
        part = exe & (lanes2 != live).any(1)
        if part.any():
            w = int(np.argmax(part))
            raise SimError(
                op.ins.span,
                f"'{op.ins.name}' reached by part of warp "
                f"{int(G[w]) % self.wpc} of CTA {int(G[w]) // self.wpc} (lanes "
                f"{np.nonzero(lanes2[w])[0].tolist()} of "
                f"{np.nonzero(live[w])[0].tolist()}): divergent barrier",
            )
        del act
        E = G[exe]
        bid = _lanes(info.id_reader(self, tids), tids)
        bid_w = bid[np.r_[0, np.nonzero(np.diff(tids // W))[0] + 1]] if len(tids) else bid
        if len(bid_w) and (bid_w.min() < 0 or bid_w.max() > 15):
            raise SimError(op.ins.span, f"barrier id {int(bid_w.max())} out of range 0..15")
        if info.count_reader is not None:
            cnt = _lanes(info.count_reader(self, tids), tids)
            cnt_w = cnt[np.r_[0, np.nonzero(np.diff(tids // W))[0] + 1]]
            if (cnt_w % W != 0).any():
                raise SimError(op.ins.span, "barrier thread count must be a multiple of 32")
            exp_w = cnt_w // W
        else:
            exp_w = np.full(len(E), -1, dtype=np.int64)
        self.stats.barriers += len(E)
        if info.red is not None:
            vals = _lanes(info.red(self, tids), tids)
            self.bar_red[tids] = vals
        if info.arrive:
            np.add.at(self.bar_arrived, (E // self.wpc, bid_w), 1)
            self.advance(G, pc)
            return
        self.bar_id[E] = bid_w
        self.bar_pc[E] = pc
        self.bar_expect[E] = exp_w
        self.blocked[E] = True
        self.together = False
        ne = G[~exe]
        self.pc[G] = pc + 1
        if len(ne):
            self.settle(ne)
        # release immediately when possible
        self.release_barriers()

    # -- potentially blocking waits ---------------------------------------------------
    def op_wait(self, op: Op, G: np.ndarray, tids: np.ndarray, pc: int) -> None:
        """A wait that may suspend: ``op.fn(m, G, tids, pc)`` returns, per warp of G,
        whether every executing lane's condition holds (and then wrote the results);
        the other warps stay at ``pc`` until some synchronization object changes."""
        assert op.fn is not None
        ready = np.asarray(op.fn(self, G, tids, pc), dtype=bool)
        if ready.all():
            self.advance(G, pc)
            return
        self.together = False
        B = G[~ready]
        self.blocked[B] = True
        self.mb_waiting[B] = True
        self.mb_epoch[B] = self.async_epoch
        if ready.any():
            self.advance(G[ready], pc)

    def _wake_waiters(self) -> bool:
        wake = self.mb_waiting & (self.mb_epoch < self.async_epoch)
        if not wake.any():
            return False
        self.blocked[wake] = False
        self.mb_waiting[wake] = False
        return True

    def release_barriers(self) -> None:
        woke = bool(self.mb_waiting.any()) and self._wake_waiters()
        waiting = np.nonzero(self.blocked & ~self.mb_waiting)[0]
        if not len(waiting):
            if not woke and self.mb_waiting.any() and (self.done | self.blocked).all():
                w = int(np.argmax(self.mb_waiting))
                ins = self.prog.instrs[int(self.pc[w])]
                raise SimError(
                    ins.span,
                    f"deadlock: '{ins.name}' in warp {w % self.wpc} of batch CTA "
                    f"{w // self.wpc} waits for an mbarrier phase that can no longer "
                    "complete (no warp can run)",
                )
            return
        ctas = waiting // self.wpc
        ids = self.bar_id[waiting]
        key = ctas * 16 + ids
        nkeys = self.n_ctas * 16
        counts = np.bincount(key, minlength=nkeys) + self.bar_arrived.ravel()
        live_warps = np.bincount(np.nonzero(~self.done)[0] // self.wpc, minlength=self.n_ctas)
        exp_w = self.bar_expect[waiting]
        expected = np.where(exp_w >= 0, exp_w, live_warps[ctas])
        ok = counts[key] >= expected
        if not ok.any():
            if not woke and (self.done | self.blocked).all():
                w = int(waiting[0])
                ins = self.prog.instrs[int(self.bar_pc[w])]
                c = int(ctas[0])
                raise SimError(
                    ins.span,
                    f"deadlock: '{ins.name}' (barrier {int(ids[0])}) in "
                    f"batch CTA {c} waits for {int(expected[0])} warps, "
                    f"{int(counts[key[0]])} arrived and no warp can run",
                )
            return
        R_ = waiting[ok]
        rkeys = np.unique(key[ok])
        self.bar_arrived.ravel()[rkeys] = 0
        # bar.red results
        for bpc in np.unique(self.bar_pc[R_]):
            op = self.code[int(bpc)]
            if op.data.red is None:
                continue
            Wb = R_[self.bar_pc[R_] == bpc]
            tt = self.warp_threads(Wb)
            tt = tt[self.active[tt]]
            kb = (tt // (self.wpc * W)) * 16 + self.bar_id[tt // W]
            allw = np.nonzero(self.blocked & ~self.mb_waiting)[0]
            at = self.warp_threads(allw)
            at = at[self.active[at]]
            ak = (at // (self.wpc * W)) * 16 + self.bar_id[at // W]
            v = self.bar_red[at]
            mode = op.data.red_mode
            if mode == "popc":
                tot = np.bincount(ak, weights=v, minlength=nkeys).astype(np.int64)
                res = tot[kb].astype(np.uint32)
            elif mode == "and":
                notall = np.bincount(ak, weights=(v == 0), minlength=nkeys) > 0
                res = ~notall[kb]
            else:
                anyt = np.bincount(ak, weights=(v != 0), minlength=nkeys) > 0
                res = anyt[kb]
            op.data.red_write(self, tt, tt, res, int(bpc))
        self.blocked[R_] = False
        self.bar_id[R_] = -1
        self.settle(R_)
        if not self.blocked.any() and not self.done.any():
            pcs = self.pc
            if (pcs == pcs[0]).all() and (self.sp == self.sp[0]).all() and self.active.all():
                self.together = True
                self._full = True
