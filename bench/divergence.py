"""Benchmark of the divergence analysis (``python bench/divergence.py``).

Synthetic kernels of 10^3 .. 10^6 PTX instructions (many blocks: divergent and uniform
if/else diamonds, loops with uniform and divergent exits, calls to small ``.func``s) are
generated as text, parsed and lifted (timed separately), then only the analysis is timed.
Then the largest corpus file is analysed next to ``ptxas`` on the same file.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from ptxopt.analysis.divergence import analyze_module  # noqa: E402
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
    while len(body) < n_inst:
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
        i += 1
    out.append(".visible .entry big(.param .u64 out, .param .u32 n)\n{")
    out += ["\t.reg .pred %p<4>;", "\t.reg .b32 %r<10>;", "\t.reg .b64 %rd<4>;"]
    out += ["\tmov.u32 %r1, %tid.x;", "\tld.param.u32 %r2, [n];"]
    out += [f"\tmov.u32 %r{r}, 0;" for r in (3, 5, 7, 8)]
    out += body
    out += ["\tld.param.u64 %rd1, [out];", "\tst.global.u32 [%rd1], %r3;", "\tret;", "}"]
    return "\n".join(out) + "\n"


def count_insts(mod: object) -> int:
    return sum(len(b.insts) for f in mod.funcs for b in f.blocks)  # type: ignore[attr-defined]


def main() -> None:
    sizes = [10**3, 10**4, 10**5, 10**6]
    if "--quick" in sys.argv:
        sizes = sizes[:3]
    print(f"{'insts':>9} {'lift s':>8} {'analysis s':>11} {'us/inst':>8}")
    for n in sizes:
        text = synth(n)
        t0 = time.perf_counter()
        mod = lift_module(parse(text, "synth.ptx"))
        t1 = time.perf_counter()
        md = analyze_module(mod)
        t2 = time.perf_counter()
        ni = count_insts(mod)
        assert not md.stats.budget_hit
        print(f"{ni:>9} {t1 - t0:8.2f} {t2 - t1:11.3f} {1e6 * (t2 - t1) / ni:8.2f}")
    path = (
        pathlib.Path(__file__).resolve().parents[1]
        / "tests/corpus/triton/matmul_fp32_ieee.sm90.ptx"
    )
    text = path.read_text()
    t0 = time.perf_counter()
    mod = lift_module(parse(text, str(path)))
    t1 = time.perf_counter()
    analyze_module(mod)
    t2 = time.perf_counter()
    line = f"{path.name}: {count_insts(mod)} insts, lift {t1 - t0:.2f} s, analysis {t2 - t1:.3f} s"
    ptxas = shutil.which("ptxas")
    if ptxas:
        with tempfile.TemporaryDirectory() as d:
            t3 = time.perf_counter()
            subprocess.run([ptxas, "-arch=sm_90a", "-o", f"{d}/x.cubin", str(path)], check=True)
            t4 = time.perf_counter()
        line += f", ptxas -arch=sm_90a {t4 - t3:.2f} s"
    else:
        line += ", ptxas not on PATH"
    print(line)


if __name__ == "__main__":
    main()
