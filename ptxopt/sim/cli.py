"""``ptxopt run``: execute a kernel with the SIMT interpreter from the command line.

Arrays are described as ``DTYPE:SIZE[:FILL[:SEED]]`` with FILL one of ``zeros``,
``ones``, ``iota``, ``random`` (floats uniform in [0, 1), integers in [0, 1000)) or a
constant number; scalars as ``DTYPE=VALUE``.  Example::

    ptxopt run k.ptx --kernel vecadd --grid 4 --block 256 \\
        --arg f32:1024:random:1 --arg f32:1024:iota --arg f32:1024 --arg s32=1024
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from ptxopt.ptx.ast import PtxError

_DTYPES = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "s8": np.int8,
    "u8": np.uint8,
    "s16": np.int16,
    "u16": np.uint16,
    "s32": np.int32,
    "u32": np.uint32,
    "s64": np.int64,
    "u64": np.uint64,
    "i32": np.int32,
    "i64": np.int64,
    "float32": np.float32,
    "float64": np.float64,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "float16": np.float16,
}


def parse_dim(text: str) -> tuple[int, ...]:
    parts = [p for p in text.replace("x", ",").split(",") if p]
    try:
        return tuple(int(p, 0) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad dimension {text!r}") from None


def parse_arg(text: str) -> Any:
    if "=" in text:
        dt, val = text.split("=", 1)
        t = _dtype(dt)
        return t.type(float(val) if t.kind == "f" else int(val, 0))
    parts = text.split(":")
    t = _dtype(parts[0])
    if len(parts) < 2:
        raise ValueError(f"array argument {text!r} needs a size (DTYPE:SIZE[:FILL[:SEED]])")
    size = int(parts[1], 0)
    fill = parts[2] if len(parts) > 2 else "zeros"
    seed = int(parts[3]) if len(parts) > 3 else 0
    rng = np.random.default_rng(seed)
    if fill == "zeros":
        return np.zeros(size, dtype=t)
    if fill == "ones":
        return np.ones(size, dtype=t)
    if fill == "iota":
        return np.arange(size).astype(t)
    if fill == "random":
        if t.kind == "f":
            return rng.random(size).astype(t)
        return rng.integers(0, 1000, size).astype(t)
    try:
        return np.full(size, float(fill) if t.kind == "f" else int(fill, 0), dtype=t)
    except ValueError:
        raise ValueError(f"unknown fill {fill!r} (zeros, ones, iota, random or a number)") from None


def _dtype(name: str) -> np.dtype[Any]:
    t = _DTYPES.get(name.lower())
    if t is None:
        raise ValueError(f"unknown dtype {name!r}")
    return np.dtype(t)


def _show(a: np.ndarray, limit: int) -> str:
    flat = a.reshape(-1)
    head = np.array2string(flat[:limit], separator=", ", threshold=limit + 1)
    more = f" ... ({flat.size} elements)" if flat.size > limit else ""
    return head + more


def run_command(ns: argparse.Namespace) -> int:
    from ptxopt.cli import read_input
    from ptxopt.sim import launch

    try:
        text, filename = read_input(ns.file)
    except PtxError as e:
        print(str(e), file=sys.stderr)
        return 1
    try:
        args = [parse_arg(a) for a in ns.arg]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    claims = None
    if ns.uniform:
        claims = {}
        for c in ns.uniform:
            fn, _, regs = c.partition(":")
            claims[fn] = [r for r in regs.split(",") if r]
    try:
        res = launch(
            text,
            ns.kernel,
            ns.grid,
            ns.block,
            args,
            shared_bytes=ns.shared,
            uniform_claims=claims,
            filename=filename,
        )
    except PtxError as e:
        print(str(e), file=sys.stderr)
        return 1
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            print(f"arg {i} ({a.dtype}[{a.size}]): {_show(a, ns.show)}")
    print(res.summary())
    if claims is not None:
        print(f"uniformity violations: {len(res.violations)}")
        for v in res.violations[:20]:
            print(f"  {v}")
    return 0


def add_parser(subparsers: Any) -> None:
    """Register ``run`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "run",
        help="run a kernel with the SIMT interpreter",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="PTX file")
    p.add_argument("--kernel", "-k", required=True, help="entry name")
    p.add_argument("--grid", "-g", type=parse_dim, default=(1,), help="grid, e.g. 4 or 4,2")
    p.add_argument("--block", "-b", type=parse_dim, default=(32,), help="block, e.g. 256")
    p.add_argument(
        "--arg",
        "-a",
        action="append",
        default=[],
        help="DTYPE:SIZE[:FILL[:SEED]] array or DTYPE=VALUE scalar, in order",
    )
    p.add_argument("--shared", type=int, default=0, help="dynamic shared memory bytes")
    p.add_argument("--show", type=int, default=8, help="elements of each array to print")
    p.add_argument(
        "--uniform",
        action="append",
        default=[],
        help="FUNC:%%r1,%%r2 registers claimed warp-uniform (checked)",
    )
    p.set_defaults(func=run_command)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="ptxopt")
    sub = ap.add_subparsers(dest="command", required=True)
    add_parser(sub)
    ns = ap.parse_args(argv)
    return int(ns.func(ns))


if __name__ == "__main__":
    raise SystemExit(main())
