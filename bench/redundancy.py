"""Redundancy elimination on the corpus: general-optimize, predication, back-copy-prop.

    python bench/redundancy.py [--skip-large] [--only SUBSTR] [--jobs N] [--no-llvm]
                               [--passes general-optimize,predication,back-copy-prop]

1. For each pass, :func:`bench.effect.measure` on every corpus file: PTX
   instructions before/after, ``ptxas -O3`` SASS instructions and registers per
   target (sm_75/sm_80/sm_90 as the file allows), ptxas acceptance, interpreter runs.
2. The LLVM reference: each hand-written ``tests/corpus/llvm/*.ll`` is put through
   ``llc -O0`` (unoptimized PTX, as a ``-O0`` front end leaves it) and through ``opt
   -passes=mem2reg,early-cse,gvn,reassociate,instcombine,simplifycfg,dce`` then ``llc
   -O0``; ptxopt's general-optimize runs on the first.  Printed: PTX instructions of
   the three, i.e. how much of LLVM's PTX-level reduction ptxopt reaches.
3. Compile time: general-optimize on the largest corpus file against ``ptxas -O3`` on
   it, and the growth exponent of general-optimize's time over the corpus file sizes
   (least squares on log time vs log instructions).
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from effect import (  # noqa: E402
    CORPUS,
    corpus_entries,
    format_table,
    measure,
    ptx_instructions,
)

from ptxopt.driver import optimize  # noqa: E402
from ptxopt.oracle import assemble  # noqa: E402

LLVM_PASSES = "mem2reg,early-cse,gvn,reassociate,instcombine,simplifycfg,dce"


def _llc(ll: Path, out: Path, arch: str) -> str | None:
    r = subprocess.run(
        ["llc", "-O0", "-march=nvptx64", f"-mcpu={arch}", str(ll), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    return None if r.returncode else out.read_text()


def llvm_reference(arch: str = "sm_75") -> list[str]:
    """Rows comparing LLVM's scalar optimizations with ptxopt on llc -O0 output."""
    if shutil.which("llc") is None or shutil.which("opt") is None:
        return ["LLVM reference: llc/opt not found, skipped"]
    rows = [
        f"{'LLVM IR file':32} {'llc -O0':>8} {'LLVM opt':>9} {'ptxopt':>7}  "
        "LLVM red.  ptxopt red.  SASS(-O3) O0/LLVM/ptxopt"
    ]
    tot = [0, 0, 0]
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        for ll in sorted((CORPUS / "llvm").glob("*.ll")):
            base = _llc(ll, t / "base.ptx", arch)
            r = subprocess.run(
                ["opt", f"-passes={LLVM_PASSES}", str(ll), "-S", "-o", str(t / "opt.ll")],
                capture_output=True,
                text=True,
            )
            opt = _llc(t / "opt.ll", t / "opt.ptx", arch) if not r.returncode else None
            if base is None or opt is None:
                rows.append(f"{ll.name:32} llc/opt failed")
                continue
            ours = optimize(base, ll.name, ["general-optimize"]).text
            n = [ptx_instructions(x) for x in (base, opt, ours)]
            sass = []
            for x in (base, opt, ours):
                a = assemble(x, arch)
                sass.append(
                    str(sum(f.sass_instructions or 0 for f in a.functions.values()))
                    if a.ok
                    else "rej"
                )
            for i in range(3):
                tot[i] += n[i]
            rows.append(
                f"{ll.name:32} {n[0]:>8} {n[1]:>9} {n[2]:>7}  {_pct(n[0], n[1]):>9}  "
                f"{_pct(n[0], n[2]):>11}  {'/'.join(sass)}"
            )
    rows.append(
        f"{'total':32} {tot[0]:>8} {tot[1]:>9} {tot[2]:>7}  {_pct(tot[0], tot[1]):>9}  "
        f"{_pct(tot[0], tot[2]):>11}"
    )
    return rows


def _pct(a: int, b: int) -> str:
    return f"{100.0 * (b - a) / a:+.1f}%" if a else "n/a"


def timing(skip_large: bool) -> list[str]:
    """general-optimize vs ptxas -O3 on the largest file; growth exponent."""
    entries = corpus_entries("", skip_large)
    pts: list[tuple[float, float]] = []
    rows: list[str] = []
    big = max(entries, key=lambda e: e["lines"])
    for e in entries:
        text = (CORPUS / e["path"]).read_text()
        base = optimize(text, e["path"], [])  # parse + lift + lower, without the pass
        t0 = time.perf_counter()
        res = optimize(text, e["path"], ["general-optimize"])
        total = time.perf_counter() - t0
        pass_t = sum(t for name, t in res.report.times if "general-optimize" in name)
        n = ptx_instructions(text)
        if n >= 50 and pass_t > 0:
            pts.append((math.log(n), math.log(pass_t)))
        if e is big:
            a = assemble(text, e["target"])
            rows.append(
                f"largest file {e['path']} ({n} PTX instructions): general-optimize "
                f"{pass_t:.2f} s (whole ptxopt run {total:.2f} s) vs ptxas -O3 "
                f"{a.seconds:.2f} s"
            )
        del base
    if len(pts) >= 3:
        mx = sum(p[0] for p in pts) / len(pts)
        my = sum(p[1] for p in pts) / len(pts)
        sxx = sum((p[0] - mx) ** 2 for p in pts)
        sxy = sum((p[0] - mx) * (p[1] - my) for p in pts)
        rows.append(
            f"growth exponent of general-optimize time over {len(pts)} files: {sxy / sxx:.2f}"
        )
    return rows


def synthetic(n: int) -> str:
    """A kernel of about ``n`` instructions: copy chains, constants, address
    arithmetic and dead code in blocks of ten, every fourth block behind a branch."""
    lines = [
        ".version 8.0", ".target sm_80", ".address_size 64",
        ".visible .entry k(.param .u64 p)", "{",
        f"\t.reg .b32 %r<{n + 8}>;", f"\t.reg .b64 %rd<{n + 8}>;", f"\t.reg .pred %p<{n + 8}>;",
        "\tld.param.u64 %rd1, [p];", "\tmov.u32 %r1, %tid.x;",
    ]  # fmt: skip
    r = 2
    for blk in range(max(1, n // 10)):
        a = r
        lines += [
            f"\tmov.u32 %r{a}, %r{a - 1};",
            f"\tadd.s32 %r{a + 1}, %r{a}, 0;",
            f"\tmov.u32 %r{a + 2}, 7;",
            f"\tmul.lo.s32 %r{a + 3}, %r{a + 2}, 3;",
            f"\tadd.s32 %r{a + 4}, %r{a + 1}, %r{a + 3};",
            f"\tcvt.s64.s32 %rd{a}, %r{a + 4};",
            f"\tshl.b64 %rd{a + 1}, %rd{a}, 2;",
            f"\tadd.s64 %rd{a + 2}, %rd1, %rd{a + 1};",
            f"\tst.global.u32 [%rd{a + 2}+4], %r{a + 4};",
            f"\txor.b32 %r{a + 5}, %r{a + 4}, %r{a + 4};",
        ]
        if blk % 4 == 3:
            lines += [f"\tsetp.eq.s32 %p{a}, %r{a + 4}, 0;", f"\t@%p{a} bra $L__BB0_{blk};"]
            lines += [f"\tadd.s32 %r{a + 4}, %r{a + 4}, 1;", f"$L__BB0_{blk}:"]
        lines.append(f"\tmov.u32 %r{a + 6}, %r{a + 4};")
        r = a + 7
    lines += ["\tret;", "}"]
    return "\n".join(lines) + "\n"


def scaling(sizes: tuple[int, ...] = (1_000, 10_000, 100_000)) -> list[str]:
    """general-optimize time on synthetic kernels of growing size; growth exponent."""
    rows: list[str] = []
    pts: list[tuple[float, float]] = []
    for n in sizes:
        text = synthetic(n)
        res = optimize(text, f"synthetic{n}", ["general-optimize"])
        t = sum(s for name, s in res.report.times if "general-optimize" in name)
        m = ptx_instructions(text)
        pts.append((math.log(m), math.log(t)))
        rows.append(f"  {m:>8} instructions: general-optimize {t:.3f} s")
    if len(pts) >= 2:
        slope = (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])
        rows.append(f"  growth exponent {sizes[0]}..{sizes[-1]}: {slope:.2f}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-llvm", action="store_true")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--passes", default="general-optimize,predication,back-copy-prop")
    args = ap.parse_args(argv)
    bad = False
    for p in args.passes.split(","):
        res = measure([p], only=args.only, skip_large=args.skip_large, jobs=args.jobs)
        print(format_table(res, f"-p {p}"))
        print()
        bad |= any(r.error or r.rejected or r.exec_mismatches for r in res)
    if not args.no_llvm:
        print("== LLVM reference (llc -O0 PTX) ==")
        print("\n".join(llvm_reference()))
        print()
    if not args.no_timing:
        print("== compile time ==")
        print("\n".join(timing(args.skip_large)))
        print("synthetic kernels:")
        print("\n".join(scaling()))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
