"""Running time of the uniform-register model (phases 74 and 86) next to the round
trip it is measured against (#10: at most 10 % of the round trip on the 40k-line file).

On one file (default: the 43,736-line ``triton/attention_fwd_fp32_ieee.sm80.ptx``),
side by side in one run, in rounds (the fastest of each column counts):

* ``round trip (process)``: ``python -m ptxopt.cli opt -p none FILE -o OUT``, start
  to exit, as a user runs it;
* ``round trip (in process)``: parse, validate, lift, lower and print in this process;
* ``divergence``: the analysis the model reads (computed once per module, not part of
  the model);
* ``model sm_XX``: phase 74's decisions and the UR/UP counts
  (:func:`ptxopt.ori.report.module_plans`) and phase 86's markers on them
  (:func:`ptxopt.ori.conv_alloc.plan_conv_alloc`); separately, everything
  ``analyze --regfiles`` computes, the report's rows (one per PTX write) included
  (:func:`ptxopt.ori.report.regfiles_report`).

Each timed call's result is dropped after the clock stops, as a user's run holds its
plans until it has written them out.

The cyclic garbage collector is off in this process, as ``ptxopt opt`` and
``ptxopt analyze --regfiles`` run.  Prints each time and the model's share of the
process round trip.

``--module40k``: the 40,000-line module of ``bench/roundtrip.py`` instead (the Triton
fp32 matmul and renamed copies of the other Triton sm_90a kernels: 17 functions).

    python bench/ur_model.py [--file PATH | --module40k] [--rounds N] [--targets sm_80,sm_90]
        [--installed]   # the installed ptxopt (e.g. the compiled build) instead of this checkout
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# this checkout's ptxopt, unless --installed asks for the one the interpreter has (the
# compiled build of ``pip install .``, run from outside the checkout)
INSTALLED = "--installed" in sys.argv
if INSTALLED:
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT]
elif str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ptxopt.analysis.divergence import analyze_module  # noqa: E402
from ptxopt.driver import optimize  # noqa: E402
from ptxopt.ir.core import IRModule  # noqa: E402
from ptxopt.ori.conv_alloc import ConvAllocPlan, plan_conv_alloc  # noqa: E402
from ptxopt.ori.report import module_plans, regfiles_report  # noqa: E402
from ptxopt.ori.ur_alloc import FuncPlan  # noqa: E402
from ptxopt.report.analyze_cli import lift_text  # noqa: E402

DEFAULT = ROOT / "tests" / "corpus" / "triton" / "attention_fwd_fp32_ieee.sm80.ptx"


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    result = fn()
    dt = time.perf_counter() - t
    del result  # (freed outside the clock)
    return dt


def phases_74_86(mod: IRModule, md: object, arch: str) -> list[tuple[FuncPlan, ConvAllocPlan]]:
    plans = module_plans(mod, md, arch)
    return [(p, plan_conv_alloc(f, p)) for f, p in zip(mod.funcs, plans, strict=True)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(DEFAULT))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--targets", default="sm_80,sm_90")
    ap.add_argument("--module40k", action="store_true", help="bench/roundtrip.py's 40k-line module")
    ap.add_argument(
        "--installed", action="store_true", help="time the installed ptxopt, not this checkout's"
    )
    args = ap.parse_args()
    tmpdir = tempfile.TemporaryDirectory()
    if args.module40k:
        sys.path.insert(0, str(ROOT / "bench"))
        from roundtrip import large_file

        path = Path(tmpdir.name) / "module40k.ptx"
        path.write_text(large_file())
    else:
        path = Path(args.file)
    text = path.read_text()
    targets = args.targets.split(",")
    gc.disable()
    mod = lift_text(text, str(path))
    md = analyze_module(mod)
    best: dict[str, float] = {}

    def keep(col: str, dt: float) -> None:
        best[col] = min(best.get(col, math.inf), dt)

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if INSTALLED:
        env.pop("PYTHONPATH")
    import ptxopt
    from ptxopt.accel import compiled_modules

    print(f"ptxopt: {Path(ptxopt.__file__).parent} ({len(compiled_modules())} modules compiled)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.ptx"
        cmd = [sys.executable, "-m", "ptxopt.cli", "opt", "-p", "none", str(path), "-o", str(out)]
        for _ in range(args.rounds):
            t = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
            keep("round trip (process)", time.perf_counter() - t)
            keep("round trip (in process)", timed(lambda: optimize(text, str(path), [])))
            keep("divergence", timed(lambda: analyze_module(mod)))
            for arch in targets:
                keep(f"model {arch}", timed(lambda a=arch: phases_74_86(mod, md, a)))  # type: ignore[misc]
                keep(
                    f"model + report rows {arch}",
                    timed(lambda a=arch: regfiles_report(mod, md, a)),  # type: ignore[misc]
                )
    lines = text.count("\n")
    ninst = sum(len(b.insts) for f in mod.funcs for b in f.blocks)
    print(
        f"{path.name}: {lines:,} lines, {len(mod.funcs)} functions, {ninst:,} instructions, "
        f"best of {args.rounds} rounds"
    )
    rt = best["round trip (process)"]
    for col, dt in best.items():
        share = f"{dt / rt:6.2f}" if col.startswith("model") else "      "
        print(f"  {col:40} {dt:7.3f} s  {share}")
    print("  (last column: the model's time / the process round trip; goal <= 0.10)")
    tmpdir.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
