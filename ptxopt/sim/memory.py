"""Memory spaces of the SIMT interpreter.

Address layout (64-bit generic addresses):

=====================  ===================================================
``0x0000_0001_0000_0000``  global space (argument arrays, module ``.global``
                           and ``.const`` variables), one flat byte array;
                           allocations are 256-byte aligned and separated by
                           unmapped guard gaps, so an access must fall inside
                           one allocation
``0x0000_1000_0000_0000``  shared window: ``generic = window + shared address``
``0x0000_2000_0000_0000``  local window: ``generic = window + local address``
``0x0000_3000_0000_0000``  kernel parameter window (read only)
``0x0000_4000_0000_0000``  function "addresses" (for indirect calls)
=====================  ===================================================

Global and constant state-space addresses equal their generic addresses
(``cvta.global``/``cvta.const`` are identities).  Shared addresses are offsets
``0 .. shared_bytes`` inside the executing thread's CTA; local addresses are offsets
``0 .. local_bytes`` inside the executing thread's private memory (module ``.local``
variables first, then the call stack of frames).  Every access is bounds- and
alignment-checked for all lanes at once; a violation raises :class:`SimError`
naming the instruction, the first offending lane and its address.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ptxopt.ptx.ast import Span
from ptxopt.sim.errors import SimError

GLOBAL_BASE = 1 << 32
SHARED_WINDOW = 1 << 44
LOCAL_WINDOW = 2 << 44
PARAM_WINDOW = 3 << 44
FUNC_BASE = 4 << 44
WINDOW_SIZE = 1 << 44

UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SHIFT = {1: 0, 2: 1, 4: 2, 8: 3}


@dataclass(slots=True)
class Allocation:
    name: str
    start: int
    size: int
    readonly: bool = False


class Memory:
    """All memory of one launch batch.  ``describe(thread_slot)`` names a lane."""

    def __init__(self) -> None:
        self.allocs: list[Allocation] = []
        self._top = GLOBAL_BASE
        self.gmem = np.zeros(0, dtype=np.uint8)
        self._starts = np.zeros(0, dtype=np.int64)
        self._ends = np.zeros(0, dtype=np.int64)
        self.shared = np.zeros(16, dtype=np.uint8)
        self.shared_stride = 0
        self.local = np.zeros(16, dtype=np.uint8)
        self.local_stride = 0
        self.alloca_floor = 0  # local offset below which alloca may not grow
        self.kparams = np.zeros(16, dtype=np.uint8)
        self.threads_per_cta = 1
        self.describe: Callable[[int], str] = str
        # bytes of shared memory that an asynchronous copy writes and whose completion
        # the program has not yet waited for (cp.async before cp.async.wait_group, a
        # bulk copy before its mbarrier phase completes): any access is reported
        self.pending: np.ndarray | None = None
        self.pending_n = 0

    # -- global allocation -------------------------------------------------
    def allocate(self, name: str, size: int, align: int = 256, readonly: bool = False) -> int:
        start = (self._top + max(align, 256) - 1) // max(align, 256) * max(align, 256)
        self.allocs.append(Allocation(name, start, size, readonly))
        self._top = start + size + 256  # guard gap
        return start

    def finalize_global(self) -> None:
        total = (self._top - GLOBAL_BASE + 15) // 16 * 16
        self.gmem = np.zeros(total, dtype=np.uint8)
        self._starts = np.array([a.start for a in self.allocs], dtype=np.int64)
        self._ends = np.array([a.start + a.size for a in self.allocs], dtype=np.int64)
        self._ro = np.array([a.readonly for a in self.allocs], dtype=bool)

    def write_bytes(self, addr: int, data: bytes | np.ndarray) -> None:
        b = np.frombuffer(bytes(data), dtype=np.uint8) if isinstance(data, bytes) else data
        b = np.ascontiguousarray(b).view(np.uint8).ravel()
        off = addr - GLOBAL_BASE
        self.gmem[off : off + b.size] = b

    def read_bytes(self, addr: int, size: int) -> np.ndarray:
        off = addr - GLOBAL_BASE
        return self.gmem[off : off + size]

    # -- per-batch spaces ----------------------------------------------------
    def setup_batch(
        self, n_ctas: int, threads_per_cta: int, shared_bytes: int, local_bytes: int
    ) -> None:
        self.threads_per_cta = threads_per_cta
        self.shared_limit = shared_bytes
        self.shared_stride = (shared_bytes + 15) // 16 * 16
        self.shared = np.zeros(max(n_ctas * self.shared_stride, 16), dtype=np.uint8)
        self.local_limit = local_bytes
        self.local_stride = (local_bytes + 15) // 16 * 16
        n_threads = n_ctas * threads_per_cta
        self.local = np.zeros(max(n_threads * self.local_stride, 16), dtype=np.uint8)
        self.pending = None
        self.pending_n = 0

    # -- asynchronous-copy destinations -----------------------------------------------
    def mark_pending(self, idx: np.ndarray, size: int, on: bool) -> None:
        """Mark (or clear) ``size`` bytes at each shared-buffer index ``idx``."""
        if self.pending is None:
            if not on:
                return
            self.pending = np.zeros(self.shared.size, dtype=bool)
        cells = (idx[:, None] + np.arange(size, dtype=np.int64)).ravel()
        self.pending[cells] = on
        self.pending_n = int(np.count_nonzero(self.pending))

    def check_pending(
        self,
        idx: np.ndarray,
        size: int,
        tids: np.ndarray,
        span: Span | None,
        write: bool,
        pos: np.ndarray | None = None,
    ) -> None:
        assert self.pending is not None
        hit = self.pending[(idx[:, None] + np.arange(size, dtype=np.int64))].any(1)
        if hit.any():
            i = int(np.argmax(hit))
            t = tids if pos is None else tids[pos]
            cta_off = int(idx[i]) % max(self.shared_stride, 1)
            what = "written" if write else "read"
            raise SimError(
                span,
                f"shared address {cta_off:#x} {what} by {self.describe(int(t[i]))} while an "
                "asynchronous copy into it is still in flight (no cp.async.wait_group/"
                "wait_all or completed mbarrier phase orders the access after the copy)",
            )

    # -- address translation -------------------------------------------------
    def _fail(
        self,
        span: Span | None,
        what: str,
        tids: np.ndarray,
        addr: np.ndarray,
        bad: np.ndarray,
        space: str,
    ) -> SimError:
        i = int(np.argmax(bad))
        a = int(addr[i]) & ((1 << 64) - 1)
        lane = self.describe(int(tids[i]))
        return SimError(span, f"{what} at {space} address {a:#x} by {lane}")

    def translate(
        self,
        space: str,
        addr: np.ndarray,
        tids: np.ndarray,
        size: int,
        span: Span | None,
        write: bool = False,
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
        """Map ``addr`` (int64 per lane) to ``(buffer, byte index, lane positions)``
        parts; ``lane positions`` is ``None`` when one part covers every lane."""
        if addr.size == 0:
            return []
        if size > 1:
            mis = (addr & (size - 1)) != 0
            if mis.any():
                raise self._fail(span, f"misaligned {size}-byte access", tids, addr, mis, space)
        if space in (".global", ".const"):
            return [(self.gmem, self._global_index(addr, tids, size, span, write, space), None)]
        if space == ".shared":
            return [(self.shared, self._shared_index(addr, tids, size, span), None)]
        if space == ".local":
            return [(self.local, self._local_index(addr, tids, size, span), None)]
        if space == ".param":
            return [(self.kparams, self._param_index(addr, tids, size, span, write), None)]
        # generic: split by window
        win = np.right_shift(addr, 44)
        w0 = int(win.min())
        if w0 == int(win.max()):
            return self.translate(
                _WINDOWS.get(w0, ".global"), addr - _BASES.get(w0, 0), tids, size, span, write
            )
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
        for w in np.unique(win):
            pos = np.nonzero(win == w)[0]
            sub = self.translate(
                _WINDOWS.get(int(w), ".global"),
                addr[pos] - _BASES.get(int(w), 0),
                tids[pos],
                size,
                span,
                write,
            )
            for buf, idx, p in sub:
                parts.append((buf, idx, pos if p is None else pos[p]))
        return parts

    def _global_index(
        self,
        addr: np.ndarray,
        tids: np.ndarray,
        size: int,
        span: Span | None,
        write: bool,
        space: str,
    ) -> np.ndarray:
        lo = int(addr.min())
        hi = int(addr.max()) + size
        k = int(np.searchsorted(self._starts, lo, "right")) - 1
        if k >= 0 and lo >= self._starts[k] and hi <= self._ends[k]:
            if write and self._ro[k]:
                raise self._fail(
                    span,
                    "store to read-only .const memory",
                    tids,
                    addr,
                    np.ones(addr.shape, bool),
                    space,
                )
            return addr - GLOBAL_BASE
        ks = np.searchsorted(self._starts, addr, "right") - 1
        kc = np.maximum(ks, 0)
        ok = (ks >= 0) & (addr >= self._starts[kc]) & (addr + size <= self._ends[kc])
        if not ok.all():
            raise self._fail(
                span,
                f"out-of-bounds {size}-byte access",
                tids,
                addr,
                ~ok,
                "global" if space == ".global" else space[1:],
            )
        if write and self._ro[kc].any():
            raise self._fail(
                span, "store to read-only .const memory", tids, addr, self._ro[kc], space
            )
        return addr - GLOBAL_BASE

    def _shared_index(
        self, addr: np.ndarray, tids: np.ndarray, size: int, span: Span | None
    ) -> np.ndarray:
        bad = (addr < 0) | (addr + size > self.shared_limit)
        if bad.any():
            raise self._fail(
                span,
                f"out-of-bounds {size}-byte access (shared size {self.shared_limit})",
                tids,
                addr,
                bad,
                "shared",
            )
        cta = tids // self.threads_per_cta
        return cta * self.shared_stride + addr

    def _local_index(
        self, addr: np.ndarray, tids: np.ndarray, size: int, span: Span | None
    ) -> np.ndarray:
        bad = (addr < 0) | (addr + size > self.local_limit)
        if bad.any():
            raise self._fail(
                span,
                f"out-of-bounds {size}-byte access (local size {self.local_limit})",
                tids,
                addr,
                bad,
                "local",
            )
        return tids * self.local_stride + addr

    def _param_index(
        self, addr: np.ndarray, tids: np.ndarray, size: int, span: Span | None, write: bool
    ) -> np.ndarray:
        bad = (addr < 0) | (addr + size > self.kparams.size)
        if write or bad.any():
            raise self._fail(
                span,
                "store to kernel parameter space"
                if write
                else "out-of-bounds kernel parameter access",
                tids,
                addr,
                bad | write,
                "param",
            )
        return addr

    # -- typed access ------------------------------------------------------------
    def load(
        self, space: str, addr: np.ndarray, tids: np.ndarray, size: int, span: Span | None
    ) -> np.ndarray:
        dt = UNSIGNED[size]
        parts = self.translate(space, addr, tids, size, span)
        sh = _SHIFT[size]
        if self.pending_n:
            for buf, idx, pos in parts:
                if buf is self.shared:
                    self.check_pending(idx, size, tids, span, False, pos)
        if len(parts) == 1 and parts[0][2] is None:
            buf, idx, _ = parts[0]
            return buf.view(dt)[idx >> sh]
        out = np.zeros(addr.shape, dtype=dt)
        for buf, idx, pos in parts:
            out[pos] = buf.view(dt)[idx >> sh]
        return out

    def store(
        self,
        space: str,
        addr: np.ndarray,
        tids: np.ndarray,
        size: int,
        values: np.ndarray,
        span: Span | None,
    ) -> None:
        dt = UNSIGNED[size]
        parts = self.translate(space, addr, tids, size, span, write=True)
        sh = _SHIFT[size]
        vals = np.broadcast_to(np.asarray(values).astype(dt, copy=False), addr.shape)
        if self.pending_n:
            for buf, idx, pos in parts:
                if buf is self.shared:
                    self.check_pending(idx, size, tids, span, True, pos)
        for buf, idx, pos in parts:
            buf.view(dt)[idx >> sh] = vals if pos is None else vals[pos]


_WINDOWS = {0: ".global", 1: ".shared", 2: ".local", 3: ".param"}
_BASES = {0: 0, 1: SHARED_WINDOW, 2: LOCAL_WINDOW, 3: PARAM_WINDOW}
