"""Random kernels through every pass: run before and after in the interpreter, bit for bit.

Usage (from the repository root)::

    python fuzz/kernels.py [-p PIPELINE] [--count N] [--seed S] [--jobs J]
                           [--ptxas-rate R] [--features F,G] [--uniformity]
    python fuzz/kernels.py --replay fuzz/findings/NAME.ptx -p PASS

Without ``-p`` each registered pass runs on its own; with ``-p`` the given pipeline
(a comma list, as for ``ptxopt opt -p``) runs as one.  Each kernel
(:mod:`fuzz.kernelgen`, deterministic for its seed) is optimized with
``--verify-each``, then original and output run in the SIMT interpreter on the same
edge-biased inputs at several launch shapes and must agree bit for bit; a sampled
fraction of the outputs also goes through ptxas.  ``--uniformity`` also checks the
divergence analysis on each kernel: every value it calls uniform must hold one value
per warp wherever it is written or read.  Failures are kept in ``fuzz/findings/``
(the kernel, the output, and a note with the command that reproduces it).

The library side (:func:`generate`, :func:`check_pipeline`, :func:`check_uniformity`)
is what tests use to run a few hundred kernels in the suite.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``fuzz`` and ``ptxopt`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse  # noqa: E402
import multiprocessing  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Iterable, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

from fuzz.kernelgen import (  # noqa: E402
    ALL_FEATURES,
    generate_kernel,
    layout_of,
    make_args,
    shapes_for,
)

FINDINGS = Path(__file__).resolve().parent / "findings"
KERNEL = "fk"


def generate(seed: int, features: Iterable[str] | None = None) -> str:
    """The PTX text of the random kernel of ``seed`` (all features unless given)."""
    return generate_kernel(seed, features).text


@dataclass(slots=True)
class CheckResult:
    """``kind``: ``""`` (agreement), ``crash`` (the pipeline raised), ``mismatch``
    (different results or one side failed), ``rejected`` (ptxas refused the output),
    ``unsound`` (a value called uniform was not), ``invalid-kernel`` (the generated
    kernel itself does not run or assemble: a generator bug)."""

    kind: str = ""
    message: str = ""
    output: str = ""
    runs: int = 0

    @property
    def ok(self) -> bool:
        return not self.kind


def _tail(e: BaseException) -> str:
    return "".join(traceback.format_exception(e)[-6:])


# The original kernel's outcomes per (kernel text, seed): checking many pipelines on one
# generated kernel runs the original once per launch shape and trial, not once per
# pipeline (the arguments are a function of the seed, the trial and the shape, which
# the interpreter's reference keys name).  Emptied when it grows past a bound.
_REFERENCES: dict[tuple[str, int], dict[Any, Any]] = {}
_REFERENCE_LIMIT = 512


def check_pipeline(
    ptx: str,
    passes: Sequence[str],
    *,
    shapes: Sequence[tuple[Any, Any]] | None = None,
    trials: int = 1,
    seed: int = 0,
    ptxas: bool = False,
    arch: str = "sm_80",
    knobs: dict[str, object] | None = None,
) -> CheckResult:
    """Optimize a generated kernel with ``passes`` and compare it with the original in
    the interpreter (``trials`` input sets per launch shape; shapes default to three
    chosen by ``seed``); with ``ptxas``, assemble the output too."""
    from ptxopt.driver import optimize
    from ptxopt.sim import differential

    layout = layout_of(ptx)
    if "replace-uniforms-with-imm" in passes and not (knobs or {}).get("SpecializeParams"):
        # specialize the scalar parameters to the values every launch below passes
        knobs = {**(knobs or {}), "SpecializeParams": _specialization(layout, seed)}
        trials = 1
    try:
        out = optimize(
            ptx, "<fuzz>", list(passes), verify_each=True, knobs=knobs, release=True
        ).text
    except Exception as e:  # noqa: BLE001 - any exception of the pipeline is a finding
        return CheckResult("crash", _tail(e))
    chosen = list(shapes) if shapes is not None else shapes_for(seed)
    if len(_REFERENCES) > _REFERENCE_LIMIT:
        _REFERENCES.clear()

    def make(trial: int, grid: Any, block: Any) -> list[Any]:
        return make_args(layout, seed * 7919 + trial, grid, block)

    ref = _REFERENCES.setdefault((ptx, seed), {})
    res = differential(ptx, out, KERNEL, chosen, None, make, trials=trials, reference=ref)
    if res.both_failed or (not res.ok and " A failed" in res.message):
        return CheckResult("invalid-kernel", res.message, out, res.trials)
    if not res.ok:
        return CheckResult("mismatch", res.message, out, res.trials)
    if ptxas:
        verdict = _assemble(out, arch)
        if verdict:
            if _assemble(ptx, arch):
                return CheckResult("invalid-kernel", "ptxas rejects the kernel: " + verdict)
            return CheckResult("rejected", verdict, out, res.trials)
    return CheckResult("", res.message, out, res.trials)


def _specialization(layout: Any, seed: int) -> str:
    """``SpecializeParams`` for the scalar arguments of trial 0 (the same for every
    launch shape): integers as they are, floats by their bit patterns."""
    import numpy as np

    a, b, c, d = make_args(layout, seed * 7919, 1, 1)[4:]
    fc = int(np.float32(c).view(np.uint32))
    fd = int(np.float64(d).view(np.uint64))
    return f"fk_a={a};fk_b={b};fk_c=0f{fc:08X};fk_d=0d{fd:016X}"


def _assemble(ptx: str, arch: str) -> str:
    """ptxas's complaint about ``ptx`` (empty when accepted)."""
    from ptxopt.oracle import assemble

    r = assemble(ptx, arch, disassemble=False)
    return "" if r.ok else (r.error or r.log)


def check_uniformity(ptx: str, *, seed: int = 0, trials: int = 1) -> CheckResult:
    """Run the kernel with every register the divergence analysis calls uniform as a
    claim: a write or read that sees two values in one warp is a finding."""
    from ptxopt.report.analyze_cli import analyze_text
    from ptxopt.sim import launch

    layout = layout_of(ptx)
    try:
        mod, _, rep = analyze_text(ptx, "<fuzz>")
    except Exception as e:  # noqa: BLE001
        return CheckResult("crash", _tail(e))
    mod.release()  # only the report is read: no cycles left for the collector
    claims = {
        fr["name"]: sorted(r for r, s in fr["registers"].items() if s == "uniform")
        for fr in rep["functions"]
    }
    runs = 0
    for grid, block in shapes_for(seed):
        for t in range(trials):
            args = make_args(layout, seed * 7919 + t, grid, block)
            res = launch(ptx, KERNEL, grid, block, args, uniform_claims=claims)
            runs += 1
            if res.violations:
                msg = f"grid={grid} block={block}: " + "; ".join(map(str, res.violations[:3]))
                return CheckResult("unsound", msg, runs=runs)
    return CheckResult("", f"{runs} runs", runs=runs)


# -- the driver -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Task:
    seed: int
    pipeline: tuple[str, ...]  # () with uniformity: the analysis check
    features: frozenset[str] | None
    ptxas: bool
    uniformity: bool
    knobs: tuple[tuple[str, object], ...] = ()


def _run_task(task: Task) -> tuple[Task, CheckResult, str]:
    text = generate(task.seed, task.features)
    if task.uniformity:
        return task, check_uniformity(text, seed=task.seed), text
    res = check_pipeline(
        text, task.pipeline, seed=task.seed, ptxas=task.ptxas, knobs=dict(task.knobs) or None
    )
    return task, res, text


def _save(task: Task, res: CheckResult, text: str, findings: Path) -> Path:
    findings.mkdir(parents=True, exist_ok=True)
    label = "uniformity" if task.uniformity else "+".join(task.pipeline) or "none"
    stem = f"{res.kind}-{label}-{task.seed}"
    (findings / f"{stem}.ptx").write_text(text)
    if res.output:
        (findings / f"{stem}.out.ptx").write_text(res.output)
    how = "--uniformity" if task.uniformity else f"-p {','.join(task.pipeline) or 'none'}"
    how += "".join(f" --knob {k}={v}" for k, v in task.knobs)
    (findings / f"{stem}.txt").write_text(
        f"kind: {res.kind}\nseed: {task.seed}\npipeline: {label}\n"
        f"reproduce: python fuzz/kernels.py --replay {findings / stem}.ptx {how}\n\n"
        f"{res.message}\n"
    )
    return findings / f"{stem}.ptx"


def _tasks(args: argparse.Namespace) -> list[Task]:
    from ptxopt.pipeline import available_passes

    feats = frozenset(args.features.split(",")) if args.features else None
    if args.pipeline:
        pipelines = [tuple(p for p in args.pipeline.split(",") if p)]
    else:
        pipelines = [(name,) for name in sorted(available_passes())]
    rng = random.Random(args.seed)
    knobs: tuple[tuple[str, object], ...] = ()
    if args.knob:
        from ptxopt.knobs import parse_assignments

        knobs = tuple(sorted(parse_assignments(args.knob).items()))
    out = []
    for seed in range(args.seed, args.seed + args.count):
        if args.uniformity:
            out.append(Task(seed, (), feats, False, True))
        for p in pipelines:
            out.append(Task(seed, p, feats, rng.random() < args.ptxas_rate, False, knobs))
    return out


def _progress(done: int, total: int, counts: Counter[str], t0: float) -> None:
    rate = done / max(time.perf_counter() - t0, 1e-9)
    bad = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "ok")
    sys.stderr.write(
        f"\r[{done}/{total}] {counts['ok']} ok{', ' + bad if bad else ''}  {rate:.1f}/s   "
    )
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    tasks = _tasks(args)
    counts: Counter[str] = Counter()
    per_pass: Counter[str] = Counter()
    findings = Path(args.findings)
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(args.jobs) as pool:
        it = pool.imap_unordered(_run_task, tasks, chunksize=4)
        for n, (task, res, text) in enumerate(it, 1):
            counts[res.kind or "ok"] += 1
            label = "uniformity" if task.uniformity else "+".join(task.pipeline)
            per_pass[label] += 1
            if not res.ok:
                path = _save(task, res, text, findings)
                sys.stderr.write(f"\n{res.kind}: {label} seed {task.seed} -> {path}\n")
            if n % 10 == 0 or n == len(tasks):
                _progress(n, len(tasks), counts, t0)
    sys.stderr.write("\n")
    for label, n in sorted(per_pass.items()):
        print(f"{n:8d} kernels  {label}")
    print(f"{sum(counts.values())} checks in {time.perf_counter() - t0:.0f} s: " + ", ".join(
        f"{k} {v}" for k, v in sorted(counts.items())))  # fmt: skip
    return 0 if set(counts) <= {"ok"} else 1


def replay(args: argparse.Namespace) -> int:
    text = Path(args.replay).read_text()
    seed = int(text.split("seed=", 1)[1].split()[0]) if "seed=" in text else 0
    if args.uniformity:
        res = check_uniformity(text, seed=seed)
    else:
        passes = [p for p in (args.pipeline or "").split(",") if p]
        from ptxopt.knobs import parse_assignments

        knobs = parse_assignments(args.knob) if args.knob else None
        res = check_pipeline(text, passes, seed=seed, ptxas=args.ptxas_rate > 0, knobs=knobs)
    print(f"{res.kind or 'ok'}: {res.message}")
    return 0 if res.ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-p", "--pipeline", help="comma list of passes run as one pipeline")
    ap.add_argument("--count", type=int, default=100, help="kernels (default 100)")
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: random)")
    ap.add_argument("--jobs", type=int, default=max(1, (multiprocessing.cpu_count() or 2) - 1))
    ap.add_argument("--ptxas-rate", type=float, default=0.05, help="share of outputs assembled")
    every = ",".join(sorted(ALL_FEATURES))
    ap.add_argument("--features", help=f"comma list (default all: {every})")
    ap.add_argument("--uniformity", action="store_true", help="also check the divergence analysis")
    ap.add_argument("--findings", default=str(FINDINGS), help="where failures are kept")
    ap.add_argument("--replay", help="re-check one kept kernel")
    ap.add_argument(
        "--knob", action="append", default=[], help="Name=Value for the passes (repeatable)"
    )
    args = ap.parse_args(argv)
    if args.replay:
        return replay(args)
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
        sys.stderr.write(f"seed {args.seed}\n")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
