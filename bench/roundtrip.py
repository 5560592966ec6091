"""Round-trip speed: ptxopt (parse, lift to SSA, verify, lower, print) next to
``ptxas -O3`` on the same PTX (plain ``ptxas`` for ``debug`` targets, which refuse
``-O3``), measured side by side in one run.

Prints one row per corpus file, the ratio ptxopt / ptxas, and how ptxopt's time
grows with size: a log-log slope over the corpus and over synthetic functions of
10^3 .. 10^5 instructions (slope 1.0 is linear).

``--process`` adds the whole-process figure (``python -m ptxopt.cli opt -p none IN
-o OUT``, start to exit, interpreter start-up and imports included) next to
``ptxas -O3`` on the same file, for the Triton fp32 matmul, for a 40k-line file
made of it and renamed copies of the other Triton sm_90a kernels (debug lines
stripped from the copies) and for the largest corpus file (a 43,736-line Triton
attention kernel), with the in-process phase times and lines/s.

    python bench/roundtrip.py [--quick] [--files GLOB] [--no-ptxas] [--process]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # this checkout's ptxopt, not an installed one

from ptxopt.driver import optimize  # noqa: E402
from ptxopt.ptx.parser import parse  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"


def time_ptxopt(text: str, name: str, repeat: int) -> tuple[float, str]:
    best = math.inf
    out = ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = optimize(text, name, []).text
        best = min(best, time.perf_counter() - t0)
    return best, out


def time_ptxas(path: Path, arch: str, repeat: int, debug: bool = False) -> float | None:
    """Best wall time of ``ptxas -O3`` (debug targets: ptxas's default, since it refuses
    optimized debugging)."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return None
    opt = [] if debug else ["-O3"]
    best = math.inf
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            t0 = time.perf_counter()
            r = subprocess.run(
                [ptxas, *opt, f"-arch={arch}", str(path), "-o", f"{tmp}/o.cubin"],
                capture_output=True,
            )
            best = min(best, time.perf_counter() - t0)
            if r.returncode != 0:
                return None
    return best


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of log(time) against log(size)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx = sum(xs) / len(xs)
    my = sum(ys) / len(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    den = sum((x - mx) ** 2 for x in xs) or 1.0
    return num / den


def synthetic(n_blocks: int) -> str:
    """A kernel of ``n_blocks`` loop nests (about 12 instructions each)."""
    lines = [
        ".version 8.0",
        ".target sm_80",
        ".address_size 64",
        "",
        ".visible .entry synth(.param .u64 p0, .param .u32 p1)",
        "{",
        "\t.reg .pred %p<4>;",
        "\t.reg .b32 %r<16>;",
        "\t.reg .b64 %rd<8>;",
        "\tld.param.u64 %rd1, [p0];",
        "\tcvta.to.global.u64 %rd2, %rd1;",
        "\tld.param.u32 %r1, [p1];",
        "\tmov.u32 %r2, %tid.x;",
        "\tmul.wide.u32 %rd3, %r2, 4;",
        "\tadd.s64 %rd4, %rd2, %rd3;",
        "\tmov.u32 %r3, 0;",
    ]
    for k in range(n_blocks):
        lines += [
            "\tmov.u32 %r4, 0;",
            f"$L_h{k}:",
            "\tadd.s32 %r3, %r3, %r4;",
            "\txor.b32 %r5, %r3, %r2;",
            "\tsetp.eq.s32 %p2, %r5, 17;",
            f"\t@%p2 bra $L_x{k};",
            "\tadd.s32 %r3, %r3, 1;",
            f"$L_x{k}:",
            "\tadd.s32 %r4, %r4, 1;",
            "\tsetp.lt.u32 %p1, %r4, %r1;",
            f"\t@%p1 bra $L_h{k};",
        ]
    lines += ["\tst.global.u32 [%rd4], %r3;", "\tret;", "}", ""]
    return "\n".join(lines)


def large_file(target_lines: int = 40_000) -> str:
    """The largest corpus file plus renamed copies of the other Triton sm_90a kernels
    until the text has ``target_lines`` lines (one module, one ``.target``)."""
    big = (CORPUS / "triton" / "matmul_fp32_ieee.sm90.ptx").read_text()
    cut = big.index("\n}\n", big.index(".entry")) + 3
    head, tail = big[:cut], big[cut:]
    donors = [
        (CORPUS / "triton" / name).read_text()
        for name in ("matmul_fp16.sm90a.ptx", "row_softmax.sm90.ptx", "vector_add.sm90.ptx")
    ]
    parts = [head]
    lines = head.count("\n") + tail.count("\n")
    k = 0
    while lines < target_lines:
        text = donors[k % len(donors)]
        start = text.index(".visible .entry")
        end = text.index("\n}\n", start) + 3
        fn = text[start:end]
        name = re.search(r"\.entry\s+(\w+)", fn).group(1)  # type: ignore[union-attr]
        fn = re.sub(rf"\b{name}\b", f"{name}_copy{k}", fn)
        fn = "\n".join(ln for ln in fn.split("\n") if not ln.lstrip().startswith(".loc"))
        parts.append("\n" + fn)
        lines += fn.count("\n") + 1
        k += 1
    return "".join(parts) + tail


def whole_process(text: str, name: str, arch: str, repeat: int, no_ptxas: bool) -> None:
    """``ptxopt opt -p none`` as a process next to ``ptxas -O3``, both on ``text``."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in.ptx"
        src.write_text(text)
        cmd = [sys.executable, "-m", "ptxopt.cli", "opt", "-p", "none", str(src)]
        # as installed: byte code cached (a first, untimed run writes it)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([*cmd, "-o", f"{tmp}/out.ptx"], check=True, cwd=ROOT, env=env)
        best = math.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            subprocess.run([*cmd, "-o", f"{tmp}/out.ptx"], check=True, cwd=ROOT, env=env)
            best = min(best, time.perf_counter() - t0)
        t_as = None if no_ptxas else time_ptxas(src, arch, 1)
        n = text.count("\n")
        res = optimize(text, name, [])
        phases = ", ".join(f"{k} {v:.2f}" for k, v in res.report.times)
        ratio = f"{best / t_as:.3f}" if t_as else "-"
        as_s = f"{t_as:.2f} s" if t_as else "-"
        print(
            f"{name}: {n} lines; ptxopt process {best:.2f} s ({n / best / 1000:.1f} klines/s), "
            f"ptxas -O3 {as_s}, ratio {ratio} (goal <= 0.15)"
        )
        print(f"  in-process phases (s): {phases}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repetition, smaller synthetic sizes")
    ap.add_argument("--files", default="*/*.ptx", help="glob under tests/corpus")
    ap.add_argument("--no-ptxas", action="store_true")
    ap.add_argument("--process", action="store_true", help="only the whole-process figures")
    args = ap.parse_args()
    if args.process:
        big = (CORPUS / "triton" / "matmul_fp32_ieee.sm90.ptx").read_text()
        whole_process(big, "matmul_fp32_ieee.sm90.ptx", "sm_90a", 3, args.no_ptxas)
        whole_process(large_file(), "40k-line module", "sm_90a", 3, args.no_ptxas)
        real = (CORPUS / "triton" / "attention_fwd_fp32_ieee.sm80.ptx").read_text()
        whole_process(real, "attention_fwd_fp32_ieee.sm80.ptx", "sm_80", 3, args.no_ptxas)
        return 0
    repeat = 1 if args.quick else 3
    files = sorted(CORPUS.glob(args.files))
    print(f"{'file':44} {'lines':>7} {'ptxopt s':>9} {'ptxas s':>9} {'ratio':>7} {'klines/s':>9}")
    points: list[tuple[float, float]] = []
    tot_opt = tot_as = 0.0
    big: tuple[str, float, float] | None = None
    for path in files:
        text = path.read_text()
        n = text.count("\n")
        t_opt, _ = time_ptxopt(text, str(path), repeat)
        mod = parse(text, str(path))
        arch = mod.arch or "sm_80"
        rep = 1 if n > 10_000 else repeat
        t_as = None if args.no_ptxas else time_ptxas(path, arch, rep, "debug" in mod.target)
        points.append((n, t_opt))
        ratio = f"{t_opt / t_as:7.3f}" if t_as else "      -"
        as_s = f"{t_as:9.3f}" if t_as else "        -"
        print(
            f"{str(path.relative_to(CORPUS)):44} {n:7d} {t_opt:9.3f} {as_s} {ratio} "
            f"{n / t_opt / 1000:9.1f}"
        )
        tot_opt += t_opt
        if t_as:
            tot_as += t_as
        if big is None or n > int(big[0].split(":")[1]):
            big = (f"{path.name}:{n}", t_opt, t_as or math.nan)
    print()
    if tot_as:
        print(
            f"corpus total: ptxopt {tot_opt:.2f} s, ptxas {tot_as:.2f} s, "
            f"ratio {tot_opt / tot_as:.3f}"
        )
    if big:
        print(
            f"largest file {big[0].split(':')[0]} ({big[0].split(':')[1]} lines): "
            f"ptxopt {big[1]:.2f} s vs ptxas {big[2]:.2f} s -> ratio {big[1] / big[2]:.3f} "
            f"(goal <= 0.2)"
        )
    print(f"growth over the corpus: time ~ lines^{slope(points):.2f}")
    sizes = [100, 1000, 4000] if args.quick else [100, 1000, 4000, 10000]
    syn: list[tuple[float, float]] = []
    print()
    print(f"{'synthetic instructions':>24} {'ptxopt s':>9} {'us/instr':>9}")
    for nb in sizes:
        text = synthetic(nb)
        ninstr = 12 + 9 * nb
        t, _ = time_ptxopt(text, "synthetic", 1)
        syn.append((ninstr, t))
        print(f"{ninstr:24d} {t:9.3f} {1e6 * t / ninstr:9.2f}")
    print(f"growth on synthetic kernels: time ~ instructions^{slope(syn):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
