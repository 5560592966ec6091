"""Differential execution: run two versions of a kernel on identical inputs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ptxopt.ptx.ast import Module
from ptxopt.sim.launch import Dim, ParamBlob, launch
from ptxopt.sim.tma import TensorMap


@dataclass(slots=True)
class DiffResult:
    ok: bool
    trials: int = 0
    message: str = ""
    shape: tuple[Any, Any] | None = None
    seed: int | None = None
    arg: int | None = None
    index: int | None = None
    a_value: Any = None
    b_value: Any = None
    runs: list[tuple[Any, Any, int]] = field(default_factory=list)
    # runs in which both sides raised the same error (agreement, but nothing ran)
    both_failed: int = 0

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return self.message


def _shapes(grid: Dim, block: Dim) -> list[tuple[Dim, Dim]]:
    return [(grid, block)]


def differential(
    ptx_a: str | Module,
    ptx_b: str | Module,
    kernel: str,
    grid: Dim | Sequence[tuple[Dim, Dim]],
    block: Dim | None = None,
    make_args: Callable[..., list[Any]] | None = None,
    trials: int = 3,
    shared_bytes: int = 0,
    kernel_b: str | None = None,
    reference: dict[tuple[str, str, int], tuple[list[Any], Exception | None]] | None = None,
    **launch_kw: Any,
) -> DiffResult:
    """Run ``kernel`` of both modules on identical arguments and compare them.

    ``make_args(seed, grid, block)`` (or ``make_args(seed)``; or ``make_args()``)
    returns the argument list; it is called once per trial and the result is deep-copied
    for each side.  ``grid``/``block`` give one launch shape, or pass a list of
    ``(grid, block)`` pairs as ``grid`` (``block=None``) to try several shapes, such as
    partial warps and partial CTAs.  Each shape runs ``trials`` seeds.  The first
    differing element of any buffer (or scalar) is reported, as is an error raised by
    one side only; the same error on both sides counts as agreement.

    ``reference`` memoizes side A: a dict the caller keeps for one ``ptx_a``,
    ``kernel`` and ``make_args`` (for instance to check many transformations of one
    file); A's outcome of each shape and seed is recorded there on its first run and
    reused afterwards instead of running A again.
    """
    if make_args is None:
        raise ValueError("make_args is required")
    shapes: list[tuple[Any, Any]]
    if block is None:
        shapes = list(grid)  # type: ignore[arg-type]
    else:
        shapes = [(grid, block)]  # type: ignore[list-item]
    n = 0
    both_failed = 0
    runs: list[tuple[Any, Any, int]] = []
    for g, b in shapes:
        for seed in range(trials):
            args = _call_make(make_args, seed, g, b)
            b_args = copy_args(args)
            ea = eb = None
            key = (repr(g), repr(b), seed)
            if reference is not None and key in reference:
                a_args = copy_args(reference[key][0])
                ea = reference[key][1]
            else:
                a_args = copy_args(args)
                try:
                    launch(ptx_a, kernel, g, b, a_args, shared_bytes, **launch_kw)
                except Exception as e:  # noqa: BLE001 - report either side's failure
                    ea = e
                if reference is not None:
                    reference[key] = (copy_args(a_args), ea)
            try:
                launch(ptx_b, kernel_b or kernel, g, b, b_args, shared_bytes, **launch_kw)
            except Exception as e:  # noqa: BLE001
                eb = e
            n += 1
            runs.append((g, b, seed))
            if ea is not None or eb is not None:
                if (
                    ea is not None
                    and eb is not None
                    and str(ea).split("error: ")[-1] == str(eb).split("error: ")[-1]
                ):
                    both_failed += 1
                    continue
                msg = (
                    f"grid={g} block={b} seed={seed}: A {'failed: ' + str(ea) if ea else 'ran'}"
                    f"; B {'failed: ' + str(eb) if eb else 'ran'}"
                )
                return DiffResult(False, n, msg, (g, b), seed, runs=runs)
            for i, (x, y) in enumerate(zip(buffers(a_args), buffers(b_args), strict=True)):
                if isinstance(x, np.ndarray):
                    xb = np.ascontiguousarray(x).view(np.uint8).reshape(-1)
                    yb = np.ascontiguousarray(y).view(np.uint8).reshape(-1)
                    if not np.array_equal(xb, yb):
                        flat_x = np.ascontiguousarray(x).reshape(-1)
                        flat_y = np.ascontiguousarray(y).reshape(-1)
                        ne = flat_x.view(np.uint8).reshape(flat_x.size, -1) != flat_y.view(
                            np.uint8
                        ).reshape(flat_y.size, -1)
                        j = int(np.argmax(ne.any(1)))
                        msg = (
                            f"grid={g} block={b} seed={seed}: argument {i} differs first at "
                            f"element {j}: A={flat_x[j]!r} B={flat_y[j]!r}"
                        )
                        return DiffResult(
                            False, n, msg, (g, b), seed, i, j, flat_x[j], flat_y[j], runs
                        )
    msg = f"identical on {n} runs"
    if both_failed:
        msg += f" ({both_failed} of them failed the same way on both sides)"
    return DiffResult(True, n, msg, runs=runs, both_failed=both_failed)


def copy_args(args: list[Any]) -> list[Any]:
    """Copies of the arrays of a launch's arguments (also those a :class:`ParamBlob`
    points to; an array named twice stays one array)."""
    memo: dict[int, np.ndarray] = {}

    def cp(x: np.ndarray) -> np.ndarray:
        if id(x) not in memo:
            memo[id(x)] = np.copy(x)
        return memo[id(x)]

    out: list[Any] = []
    for x in args:
        if isinstance(x, np.ndarray):
            out.append(cp(x))
        elif isinstance(x, ParamBlob):
            out.append(ParamBlob(x.data, {k: cp(v) for k, v in x.pointers.items()}))
        elif isinstance(x, TensorMap):
            out.append(dataclasses.replace(x, array=cp(x.array)))
        else:
            out.append(x)
    return out


def buffers(args: list[Any]) -> list[Any]:
    """The arguments with each :class:`ParamBlob` replaced by its arrays (by offset) and
    each :class:`TensorMap` by its array."""
    out: list[Any] = []
    for x in args:
        if isinstance(x, ParamBlob):
            out += [x.pointers[k] for k in sorted(x.pointers)]
        elif isinstance(x, TensorMap):
            out.append(x.array)
        else:
            out.append(x)
    return out


def _call_make(make_args: Callable[..., list[Any]], seed: int, g: Any, b: Any) -> list[Any]:
    import inspect

    try:
        nparams = len(inspect.signature(make_args).parameters)
    except (TypeError, ValueError):
        nparams = 1
    if nparams >= 3:
        return list(make_args(seed, g, b))
    if nparams == 1:
        return list(make_args(seed))
    return list(make_args())
