"""Benchmark of the divergence analysis (``python bench/divergence.py``).

Synthetic kernels of 10^3 .. 10^6 PTX instructions (many blocks: divergent and uniform
if/else diamonds, loops with uniform and divergent exits, calls to small ``.func``s) are
generated as text, parsed and lifted (timed separately), then only the analysis is timed.
Each size runs in a child process (its own peak RSS); the log-log slope of time against
instructions is fitted over the sizes that finished (1.0 = linear).  Then the largest corpus
file is analysed next to ``ptxas`` on the same file, in the same run.  The load average is
printed at the start and the end (the machine may be shared).
``--quick`` stops at 10^5; ``--max N`` at N; ``--timeout S`` per size.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ptxopt.analysis.divergence import analyze_module  # noqa: E402
from ptxopt.ir.core import IRModule  # noqa: E402
from ptxopt.ir.lift import lift_module  # noqa: E402
from ptxopt.ptx.parser import parse  # noqa: E402

CALLEES = """
.func (.param .b32 func_retval0) f{k}(.param .b32 f{k}_param_0)
{{
\t.reg .b32 %r<4>;
\tld.param.u32 %r1, [f{k}_param_0];
\tadd.u32 %r2, %r1, {k};
\tst.param.b32 [func_retval0+0], %r2;
\tret;
}}
"""


def synth(n_inst: int, n_funcs: int = 8) -> str:
    out = [".version 8.0", ".target sm_90", ".address_size 64"]
    for k in range(n_funcs):
        out.append(CALLEES.format(k=k))
    body: list[str] = []
    i = 0
    lab = 0
    count = 0  # instructions so far (labels, braces and .param declarations excluded)
    while count < n_inst:
        start = len(body)
        kind = i % 4
        lab += 1
        if kind == 0:  # divergent diamond
            body += [
                f"\tsetp.lt.u32 %p1, %r1, {i % 32};",
                f"\t@%p1 bra T{lab};",
                "\tadd.u32 %r3, %r3, %r2;",
                f"\tbra J{lab};",
                f"T{lab}:",
                "\txor.b32 %r3, %r3, %r1;",
                f"J{lab}:",
            ]
        elif kind == 1:  # uniform loop
            body += [
                "\tmov.u32 %r4, 0;",
                f"L{lab}:",
                "\tadd.u32 %r4, %r4, 1;",
                "\tadd.u32 %r5, %r5, %r4;",
                "\tsetp.lt.u32 %p2, %r4, %r2;",
                f"\t@%p2 bra L{lab};",
            ]
        elif kind == 2:  # loop with a divergent exit
            body += [
                "\tmov.u32 %r6, 0;",
                f"D{lab}:",
                "\tadd.u32 %r6, %r6, 1;",
                "\tsetp.lt.u32 %p3, %r6, %r1;",
                f"\t@%p3 bra D{lab};",
                "\tadd.u32 %r7, %r7, %r6;",
            ]
        else:  # a call with a uniform argument
            k = i % n_funcs
            body += [
                "\t{",
                "\t.param .b32 param0;",
                "\tst.param.b32 [param0+0], %r5;",
                "\t.param .b32 retval0;",
                f"\tcall.uni (retval0), f{k}, (param0);",
                "\tld.param.b32 %r8, [retval0+0];",
                "\t}",
                "\tadd.u32 %r5, %r5, %r8;",
            ]
        count += sum(1 for x in body[start:] if x.endswith(";") and not x.startswith("\t.param"))
        i += 1
    out.append(".visible .entry big(.param .u64 out, .param .u32 n)\n{")
    out += ["\t.reg .pred %p<4>;", "\t.reg .b32 %r<10>;", "\t.reg .b64 %rd<4>;"]
    out += ["\tmov.u32 %r1, %tid.x;", "\tld.param.u32 %r2, [n];"]
    out += [f"\tmov.u32 %r{r}, 0;" for r in (3, 5, 7, 8)]
    out += body
    out += ["\tld.param.u64 %rd1, [out];", "\tst.global.u32 [%rd1], %r3;", "\tret;", "}"]
    return "\n".join(out) + "\n"


def count_insts(mod: IRModule) -> int:
    return sum(len(b.insts) for f in mod.funcs for b in f.blocks)


def count_blocks(mod: IRModule) -> int:
    return sum(len(f.blocks) for f in mod.funcs)


def measure(text: str, name: str) -> dict[str, float]:
    """Parse, lift and analyse ``text``; seconds of each step, sizes, peak RSS."""
    t0 = time.perf_counter()
    ast = parse(text, name)
    t1 = time.perf_counter()
    mod = lift_module(ast)
    t2 = time.perf_counter()
    md = analyze_module(mod)
    t3 = time.perf_counter()
    assert not md.stats.budget_hit
    return {
        "insts": count_insts(mod),
        "blocks": count_blocks(mod),
        "parse": t1 - t0,
        "lift": t2 - t1,
        "analysis": t3 - t2,
        "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "divergent": md.stats.divergent_branches,
    }


def one(n: int) -> None:
    """Child process: one synthetic size (so each size's peak memory is its own)."""
    print(json.dumps(measure(synth(n), "synth.ptx")))


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) against log(x)."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / den if den else 0.0


def largest_corpus_file() -> pathlib.Path:
    files = sorted(ROOT.glob("tests/corpus/**/*.ptx"), key=lambda p: p.stat().st_size)
    return files[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="stop at 10^5 instructions")
    ap.add_argument("--max", type=int, default=10**6, help="largest synthetic size")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per size")
    ap.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(args.one)
        return
    sizes = [n for n in (10**3, 10**4, 10**5, 10**6) if n <= (10**5 if args.quick else args.max)]
    print(f"load average at start: {os.getloadavg()}  ({os.cpu_count()} CPUs)")
    print(
        f"{'insts':>9} {'blocks':>8} {'parse s':>8} {'lift s':>8} {'analysis s':>11} "
        f"{'p+l us/i':>9} {'an. us/i':>9} {'peak GB':>8}"
    )
    rows: list[dict[str, float]] = []
    for n in sizes:
        try:
            r = subprocess.run(
                [sys.executable, __file__, "--one", str(n)],
                capture_output=True, text=True, timeout=args.timeout, check=True,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            print(f"{n:>9} did not finish in {args.timeout:.0f} s")
            break
        m = json.loads(r.stdout)
        rows.append(m)
        ni = m["insts"]
        pl = m["parse"] + m["lift"]
        print(
            f"{ni:>9} {m['blocks']:>8} {m['parse']:8.2f} {m['lift']:8.2f} "
            f"{m['analysis']:11.3f} {1e6 * pl / ni:9.2f} {1e6 * m['analysis'] / ni:9.2f} "
            f"{m['rss_gb']:8.2f}"
        )
    if len(rows) >= 2:
        xs = [r["insts"] for r in rows]
        print(
            "log-log slope (time ~ insts^k): "
            f"parse+lift k={slope(xs, [r['parse'] + r['lift'] for r in rows]):.2f}, "
            f"analysis k={slope(xs, [r['analysis'] for r in rows]):.2f}"
        )
    path = largest_corpus_file()
    text = path.read_text()
    m = measure(text, str(path))
    line = (
        f"{path.relative_to(ROOT)}: {m['insts']} insts, parse {m['parse']:.2f} s, "
        f"lift {m['lift']:.2f} s, analysis {m['analysis']:.3f} s"
    )
    ptxas = shutil.which("ptxas")
    if ptxas:
        arch = re.search(r"^\s*\.target\s+(sm_\w+)", text, re.M)
        a = arch.group(1) if arch else "sm_90"
        with tempfile.TemporaryDirectory() as d:
            t3 = time.perf_counter()
            subprocess.run([ptxas, f"-arch={a}", "-o", f"{d}/x.cubin", str(path)], check=True)
            t4 = time.perf_counter()
        line += f"; ptxas -arch={a} {t4 - t3:.2f} s"
    else:
        line += "; ptxas not on PATH"
    print(line)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
