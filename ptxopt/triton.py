"""In-process Triton integration: ptxopt rewrites the ``ptx`` stage of Triton's
compiler pipeline, in the same process, before ptxas sees it.

    import ptxopt.triton
    ptxopt.triton.enable()          # the default pipeline; or passes="a,b", knobs={...}

The hook goes through Triton's own mechanism, ``triton.knobs.runtime.
add_stages_inspection_hook``: Triton calls it with no arguments for a cache key (so
kernels compiled with and without ptxopt, or with different passes, do not share
cache entries), and with ``(backend, stages, options, language, capability)`` when it
builds a pipeline, where ptxopt wraps the ``ptx`` stage.  An earlier hook is kept and
called first.

Like the drop-in, the hook never breaks a compile: if ptxopt fails on a kernel, one
warning is printed and Triton goes on with its own PTX.  Triton's bundled ptxas may
be newer than the PTX ISA ptxopt knows (9.0); a kernel that declares a newer
``.version`` is read as 9.0 (anything it uses that 9.0 lacks is an error, so the
kernel falls back) and printed with its own ``.version`` line.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["disable", "enable", "enabled"]

_VERSION_RE = re.compile(r"^(\s*\.version\s+)(\d+)\.(\d+)", re.M)
MAX_PTX = (9, 0)


@dataclass
class _State:
    passes: str
    knobs: list[str]
    log: str | None
    quiet: bool
    previous: Any = None
    warned: bool = False
    counts: dict[str, int] = field(default_factory=lambda: {"optimized": 0, "fallback": 0})


_state: _State | None = None


def optimize_ptx(ptx: str, passes: str, knobs: Sequence[str], arch: str | None) -> str:
    """ptxopt on one kernel's PTX (a ``.version`` newer than ptxopt's is read as
    ptxopt's newest and restored in the output)."""
    from ptxopt.api import optimize

    m = _VERSION_RE.search(ptx)
    original = None
    if m is not None and (int(m.group(2)), int(m.group(3))) > MAX_PTX:
        original = m.group(0)
        ptx = ptx[: m.start()] + f"{m.group(1)}{MAX_PTX[0]}.{MAX_PTX[1]}" + ptx[m.end() :]
    out = optimize(ptx, passes, knobs=knobs, arch=arch, filename="<triton>")
    if original is not None:
        out = _VERSION_RE.sub(lambda _: original, out, count=1)
    return out


def _log(state: _State, line: str) -> None:
    if state.log:
        with open(state.log, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def _wrap(stage: Callable[[Any, dict], Any], arch: str | None) -> Callable[[Any, dict], Any]:
    def make_ptx(src: Any, metadata: dict) -> Any:
        ptx = stage(src, metadata)
        state = _state
        if state is None or not isinstance(ptx, str):
            return ptx
        name = metadata.get("name", "?") if isinstance(metadata, dict) else "?"
        try:
            out = optimize_ptx(ptx, state.passes, state.knobs, arch)
        except Exception as e:  # never break a compile
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            state.counts["fallback"] += 1
            _log(state, f"fallback {name} {type(e).__name__}: {first}")
            if not state.warned and not state.quiet:
                state.warned = True
                print(
                    f"ptxopt.triton: warning: ptxopt could not optimize kernel {name} "
                    f"({type(e).__name__}: {first}); using Triton's PTX",
                    file=sys.stderr,
                )
            return ptx
        state.counts["optimized"] += 1
        _log(state, f"optimized {name}")
        return out

    return make_ptx


def _hook(*args: Any) -> Any:
    state = _state
    previous = state.previous if state is not None else None
    if not args:  # Triton asks for a cache key
        key, digest = ("", "")
        if previous is not None:
            key, digest = previous()
        if state is not None:
            from ptxopt import __version__

            mine = f"ptxopt-{__version__}:{state.passes}:{','.join(state.knobs)}"
            key += mine
            digest = hashlib.sha256((digest + mine).encode()).hexdigest()
        return key, digest
    if previous is not None:
        previous(*args)
    if state is None:
        return None
    _backend, stages, _options, _language, capability = args[:5]
    if isinstance(stages, dict) and "ptx" in stages:
        arch = None
        if isinstance(capability, int):
            arch = f"sm_{capability}" + ("a" if capability >= 90 else "")
        stages["ptx"] = _wrap(stages["ptx"], arch)
    return None


def enable(
    passes: str | Sequence[str] = "default",
    *,
    knobs: Mapping[str, object] | Sequence[str] | None = None,
    log: str | None = None,
    quiet: bool = False,
) -> None:
    """Run ptxopt on every kernel Triton compiles from now on, in this process.

    ``passes``/``knobs`` as :func:`ptxopt.optimize` takes them (checked now: an unknown
    pass or knob is a ``ValueError`` here, not a fallback per kernel).  ``log``: a file
    that gets one line per kernel (``optimized NAME`` or ``fallback NAME why``).
    ``quiet``: no warning on fallback.  Calling it again replaces the settings."""
    global _state
    from triton import knobs as triton_knobs

    from ptxopt.api import _knob_items, _pass_spec
    from ptxopt.knobs import parse_assignments
    from ptxopt.pipeline import parse_pipeline

    spec = _pass_spec(passes)
    items = _knob_items(knobs)
    parse_pipeline(spec)
    parse_assignments(items)
    current = triton_knobs.runtime.add_stages_inspection_hook
    previous = _state.previous if _state is not None else current
    if current is not _hook and _state is not None:
        previous = current  # someone installed a hook over ours: keep theirs too
    _state = _State(spec, items, log, quiet, previous=previous)
    triton_knobs.runtime.add_stages_inspection_hook = _hook


def disable() -> None:
    """Remove the hook (and put back the one that was there before)."""
    global _state
    if _state is None:
        return
    from triton import knobs as triton_knobs

    if triton_knobs.runtime.add_stages_inspection_hook is _hook:
        triton_knobs.runtime.add_stages_inspection_hook = _state.previous
    _state = None


def enabled() -> dict[str, int] | None:
    """``None`` when off; else how many kernels were optimized and how many fell back."""
    return dict(_state.counts) if _state is not None else None
