"""``ptxopt batch PATHS... [-p PASSES|-O] [--mode opt|analyze] [--jobs N] [--out DIR]
[--ray [ADDRESS]]``: one job per PTX file, many files at once.

Directories are searched for ``*.ptx``.  Each file is handled by
:func:`process_file` in a worker (a process pool on this machine, or Ray tasks on a
cluster with ``--ray``); the result is one JSON object per file (``--out DIR`` keeps
them, with the optimized PTX or the divergence report beside them, and a
``summary.json``).  One bad file never stops a run: an error in ptxopt is that file's
result, and a worker that dies (a crash, running out of memory) fails only the file
it was working on, which is retried alone once to tell it from its neighbours.

A progress bar goes to stderr on a terminal; a summary table to stdout at the end.
Exit status: 0 if every file succeeded, 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODES = ("opt", "analyze")


@dataclass(frozen=True)
class Job:
    path: str
    rel: str  # output name under --out
    mode: str
    passes: str
    knobs: tuple[str, ...]
    arch: str | None
    out_dir: str | None


def process_file(job: Job) -> dict[str, Any]:
    """Run one job; never raises (the error is part of the result)."""
    t0 = time.perf_counter()
    result: dict[str, Any] = {"file": job.path, "mode": job.mode, "ok": False}
    try:
        with open(job.path, encoding="latin-1", newline="") as f:
            text = f.read()
        result["lines"] = text.count("\n")
        if os.environ.get("PTXOPT_BATCH_TESTING") == "1" and "PTXOPT-CRASH-WORKER" in text:
            os._exit(9)  # tests: a worker that dies
        if job.mode == "opt":
            result.update(_opt(job, text))
        else:
            result.update(_analyze(job, text))
        result["ok"] = True
    except RecursionError:
        result["error"] = "input nests too deeply"
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {e}"
    result["seconds"] = round(time.perf_counter() - t0, 6)
    if job.out_dir:
        _write(os.path.join(job.out_dir, job.rel + ".json"), json.dumps(result, indent=1) + "\n")
    return result


def _opt(job: Job, text: str) -> dict[str, Any]:
    from ptxopt.driver import optimize
    from ptxopt.knobs import parse_assignments
    from ptxopt.pipeline import parse_pipeline

    res = optimize(
        text,
        job.path,
        parse_pipeline(job.passes),
        arch=job.arch,
        knobs=parse_assignments(job.knobs),
    )
    out: dict[str, Any] = {
        "functions": len(res.module.funcs),
        "out_lines": res.text.count("\n"),
        "stats": {label: dict(c) for label, c in res.report.stats.items()},
        "changed": dict(res.report.changed),
        "times": {name: round(t, 6) for name, t in res.report.times},
    }
    if job.out_dir:
        dest = os.path.join(job.out_dir, job.rel + ".opt.ptx")
        _write(dest, res.text)
        out["output"] = dest
    return out


def _analyze(job: Job, text: str) -> dict[str, Any]:
    from ptxopt.report.analyze_cli import analyze_text

    _, _, report = analyze_text(text, job.path)
    summary: Counter[str] = Counter()
    for fr in report["functions"]:
        summary.update(fr["summary"])
    out: dict[str, Any] = {"functions": len(report["functions"]), "summary": dict(summary)}
    if job.out_dir:
        dest = os.path.join(job.out_dir, job.rel + ".analyze.json")
        _write(dest, json.dumps(report, indent=1) + "\n")
        out["output"] = dest
    return out


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="latin-1", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def collect(paths: Iterable[str]) -> list[tuple[str, str]]:
    """(file, name under --out) for every PTX file named or found under a directory."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = [(f, f.relative_to(path)) for f in sorted(path.rglob("*.ptx")) if f.is_file()]
            base = path.resolve().name or "root"
            items = [(str(f), str(Path(base) / rel)) for f, rel in found]
        else:
            items = [(str(path), path.name)]
        for f, rel in items:
            key = os.path.realpath(f)
            if key not in seen:
                seen.add(key)
                out.append((f, rel))
    # two inputs with one output name: keep both apart
    names = Counter(rel for _, rel in out)
    return [(f, f"{rel}.{i}" if names[rel] > 1 else rel) for i, (f, rel) in enumerate(out)]


# -- runners ---------------------------------------------------------------------


def run_local(jobs: list[Job], workers: int) -> Iterator[dict[str, Any]]:
    """Results as they complete; a dead worker fails only its own file."""
    pending = list(jobs)
    retry: list[Job] = []
    while pending:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures: dict[Future[dict[str, Any]], Job] = {}
            it = iter(pending)
            pending = []
            # keep a bounded number in flight so a broken pool loses little
            for job in it:
                futures[pool.submit(process_file, job)] = job
                if len(futures) >= 2 * workers:
                    break
            broken = False
            while futures:
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                for fut in done:
                    job = futures.pop(fut)
                    try:
                        yield fut.result()
                    except BrokenProcessPool:
                        broken = True
                        retry.append(job)
                if broken:
                    for job in futures.values():
                        retry.append(job)
                    futures.clear()
                    pending = list(it)
                    break
                for job in it:
                    futures[pool.submit(process_file, job)] = job
                    if len(futures) >= 2 * workers:
                        break
    for job in retry:  # alone, so a crash names its own file
        yield _isolated(job)


def _isolated(job: Job) -> dict[str, Any]:
    with ProcessPoolExecutor(max_workers=1) as pool:
        try:
            return pool.submit(process_file, job).result()
        except BrokenProcessPool:
            return {"file": job.path, "mode": job.mode, "ok": False, "error": "worker died"}


def run_ray(jobs: list[Job], address: str | None) -> Iterator[dict[str, Any]]:
    try:
        import ray
    except ImportError:
        raise SystemExit("ptxopt: error: --ray needs Ray (pip install 'ptxopt[ray]')") from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(max_retries=0)(process_file)
    try:
        refs = {remote.remote(job): job for job in jobs}
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1)
            for ref in done:
                job = refs.pop(ref)
                try:
                    yield ray.get(ref)
                except Exception as e:  # the task's worker died
                    yield {
                        "file": job.path,
                        "mode": job.mode,
                        "ok": False,
                        "error": f"{type(e).__name__}: worker died",
                    }
    finally:
        if started:
            ray.shutdown()


# -- the command -----------------------------------------------------------------


class Progress:
    def __init__(self, total: int, stream: Any) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()

    def update(self, result: dict[str, Any]) -> None:
        self.done += 1
        self.failed += not result.get("ok")
        if not self.tty:
            return
        width = 30
        fill = int(width * self.done / max(self.total, 1))
        rate = self.done / max(time.perf_counter() - self.t0, 1e-9)
        name = os.path.basename(result["file"])[-30:]
        self.stream.write(
            f"\r[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} "
            f"{self.failed} failed {rate:.1f} files/s {name:30}"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def summarize(results: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    ok = [r for r in results if r.get("ok")]
    stats: Counter[str] = Counter()
    for r in ok:
        for label, counts in r.get("stats", {}).items():
            for what, n in counts.items():
                stats[f"{label}: {what}"] += n
    lines = sum(r.get("lines", 0) for r in results)
    return {
        "files": len(results),
        "ok": len(ok),
        "failed": len(results) - len(ok),
        "lines": lines,
        "seconds": round(seconds, 3),
        "files_per_second": round(len(results) / seconds, 2) if seconds > 0 else None,
        "lines_per_second": round(lines / seconds) if seconds > 0 else None,
        "stats": dict(sorted(stats.items())),
        "failures": [
            {"file": r["file"], "error": r.get("error", "")} for r in results if not r.get("ok")
        ],
    }


def format_summary(results: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    rows = [f"{'file':56} {'lines':>7} {'seconds':>8}  result"]
    for r in sorted(results, key=lambda r: r["file"]):
        state = "ok" if r.get("ok") else f"FAILED {r.get('error', '')}"[:80]
        rows.append(
            f"{r['file'][-56:]:56} {r.get('lines', 0):7d} {r.get('seconds', 0):8.3f}  {state}"
        )
    s = summary
    rows.append("")
    rows.append(
        f"{s['files']} files, {s['ok']} ok, {s['failed']} failed; {s['lines']} lines in "
        f"{s['seconds']:.2f} s ({s['files_per_second']} files/s, {s['lines_per_second']} lines/s)"
    )
    for what, n in s["stats"].items():
        rows.append(f"{n:10d}  {what}")
    return "\n".join(rows) + "\n"


def cmd_batch(args: argparse.Namespace) -> int:
    from ptxopt.knobs import parse_assignments
    from ptxopt.pipeline import parse_pipeline

    if args.passes and args.O:
        print("ptxopt: error: -p and -O are exclusive", file=sys.stderr)
        return 2
    passes = "default" if args.O else (args.passes or "default")
    try:
        parse_pipeline(passes)
        parse_assignments(args.knob)
    except ValueError as e:
        print(f"ptxopt: error: {e}", file=sys.stderr)
        return 2
    files = collect(args.paths)
    if not files:
        print("ptxopt: error: no PTX files found", file=sys.stderr)
        return 2
    out_dir = os.path.abspath(args.out) if args.out else None
    jobs = [
        Job(f, rel, args.mode, passes, tuple(args.knob), args.arch, out_dir) for f, rel in files
    ]
    runner: Callable[[], Iterator[dict[str, Any]]]
    if args.ray is not None:
        runner = lambda: run_ray(jobs, args.ray or None)  # noqa: E731
    else:
        n = args.jobs or os.cpu_count() or 1
        runner = lambda: run_local(jobs, max(1, min(n, len(jobs))))  # noqa: E731
    progress = Progress(len(jobs), sys.stderr)
    t0 = time.perf_counter()
    results = []
    for r in runner():
        results.append(r)
        progress.update(r)
    progress.close()
    summary = summarize(results, time.perf_counter() - t0)
    if out_dir:
        _write(os.path.join(out_dir, "summary.json"), json.dumps(summary, indent=1) + "\n")
    if args.json:
        sys.stdout.write(json.dumps({"summary": summary, "results": results}, indent=1) + "\n")
    else:
        sys.stdout.write(format_summary(results, summary))
    return 0 if summary["failed"] == 0 else 1


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "batch",
        help="optimize or analyze many PTX files in parallel (or on a Ray cluster)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="PTX files or directories")
    p.add_argument("--mode", choices=MODES, default="opt", help="what to run (default: opt)")
    p.add_argument("-p", "--passes", metavar="PASSES", help="passes, as for 'ptxopt opt -p'")
    p.add_argument("-O", action="store_true", help="the default pipeline")
    p.add_argument("--knob", metavar="Name=Value", action="append", default=[])
    p.add_argument("--arch", metavar="sm_XX", help="target for arch-dependent decisions")
    p.add_argument("-j", "--jobs", type=int, default=0, help="worker processes (default: CPUs)")
    p.add_argument("--out", metavar="DIR", help="write per-file JSON and outputs here")
    p.add_argument("--json", action="store_true", help="print all results as JSON")
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run on a Ray cluster (no ADDRESS: a local Ray); needs ptxopt[ray]",
    )
    p.set_defaults(func=cmd_batch)
