"""Compile-time overhead ptxopt adds to a compile, next to ``ptxas -O3`` (#19).

For every corpus file of at least 1,000 lines, side by side in one run (best of
``--repeat`` each, wall time):

* ``ptxas``: ``ptxas -O3 -arch=TARGET FILE`` as a process (debug targets: without
  ``-O3``, which they refuse);
* ``cli``: ``ptxopt opt -p PASSES FILE -o OUT`` as a process (all of it is added time:
  the user runs ptxas afterwards);
* ``drop-in``: ``ptxopt-ptxas`` with the same arguments as ptxas, as a process, with
  the server off (``PTXOPT_SERVER=0``), less the time its real ptxas ran in that same
  run (``PTXOPT_TIMES``; until 2026-12-02 less the ``ptxas`` column's time, which
  brought ptxas's run-to-run variation into the difference);
* ``resident``: ``ptxopt-ptxas`` as installed, with the resident server already
  running: with ``--venv`` (a compiled build) the native client that ``pip install``
  puts there since 2026-12-03, else (and before) the Python client;
* ``py-client``: the Python client (``ptxopt-ptxas-py``, :mod:`ptxopt.thin_client`)
  with the same server (since 2026-12-02 it hands the server its whole command line,
  as the native client does; before, it imported the drop-in and sent the PTX);
* ``native``: the native client built by ``ptxopt-ptxas --ptxopt-make-client`` (no
  Python start-up) with the same server; left out when no C compiler builds it;
* ``hook``: the in-process Triton hook's work (:func:`ptxopt.triton.optimize_ptx`) on
  the file in one long-lived process of the interpreter the other columns use (with
  ``--venv`` the installed package, compiled front end included): no start-up.  Each
  timed run follows a ptxas run on the same file, as in a Triton build, where the
  previous kernel's ptxas (and Triton's own lowering) ran in between and left the
  caches cold; best of ``--repeat``;
* ``hook-warm``: the same work run back to back, caches warm (how ``hook`` was
  measured before 2026-12-02).

Each column is the added time divided by ptxas's time; the summary gives the
geometric mean, the maximum, and the maximum over files where ptxas needs >= 0.1 s.
The processes of one file run in rounds (ptxas, cli, drop-in, resident, py-client,
native, then again), the fastest of each counts (for a drop-in: the smallest added time).  A cell
whose added time is not above zero would be "-" and left out of the summary, which
says how many were.
It also prints start-up (``ptxopt opt -p none`` on a 100-line file against a bare
``python -c pass``) and ``-p none`` throughput in lines/s over the same files (in the
process of the hook's columns, best of ``--repeat`` a file, the IR taken apart as the
hook does; until 2026-12-02 one run a file whose IR was left to the collector: see
docs/tools.md).

``--passes`` picks the pipeline every column runs (``default``, the default, or
``none``: parse, lift, lower and print only -- the floor every pass adds to).

    python bench/overhead.py [--repeat N] [--files GLOB] [--min-lines N] [--passes P] [--venv]
"""

from __future__ import annotations

import argparse
import compileall
import json
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

CORPUS = ROOT / "tests" / "corpus"
PTXAS = shutil.which("ptxas")
# the interpreter of the process columns (``--venv``: one with ptxopt installed)
PYTHON = sys.executable


def run_added(cmd: list[str], env: dict[str, str], times: Path) -> float:
    """A drop-in run's wall time less the time its real ptxas ran in that same run
    (``PTXOPT_TIMES``): what the drop-in added, free of ptxas's run-to-run variation."""
    times.unlink(missing_ok=True)
    wall = run_time(cmd, dict(env, PTXOPT_TIMES=str(times)), 1)
    lines = times.read_text().splitlines() if times.exists() else []
    if len(lines) != 1:
        raise RuntimeError(f"{' '.join(cmd)}: {len(lines)} lines of PTXOPT_TIMES, not 1")
    return wall - float(lines[0].split()[1])


def run_time(cmd: list[str], env: dict[str, str], repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.decode()[-500:]}")
        best = min(best, dt)
    return best


def target_of(text: str) -> tuple[str, bool]:
    m = re.search(r"^\s*\.target\s+([^\n]+)", text, re.M)
    parts = [p.strip() for p in (m.group(1) if m else "sm_80").split(",")]
    return parts[0], "debug" in parts


# the in-process columns (hook, -p none throughput) run by the interpreter the
# processes use: with --venv, the installed (compiled) package, not this checkout
_IN_PROCESS = """
import json, subprocess, sys, time
from ptxopt.driver import optimize
from ptxopt.triton import optimize_ptx
from ptxopt.accel import build_name
passes, repeat, runs = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
out = {"build": build_name(), "hook": {}, "warm": {}, "none": {}}
for path, (arch, ptxas) in runs.items():
    text = open(path, encoding="latin-1").read()
    after = warm = float("inf")
    for _ in range(repeat):
        subprocess.run(ptxas, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t = time.perf_counter()
        optimize_ptx(text, passes, [], arch)
        after = min(after, time.perf_counter() - t)
    for _ in range(repeat):
        t = time.perf_counter()
        optimize_ptx(text, passes, [], arch)
        warm = min(warm, time.perf_counter() - t)
    out["hook"][path] = after
    out["warm"][path] = warm
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        optimize(text, path, [], release=True)
        best = min(best, time.perf_counter() - t)
    out["none"][path] = best
print(json.dumps(out))
"""


def ptxas_args(path: Path, text: str, out: Path) -> list[str]:
    """ptxas's arguments for ``path``: its target, ``-O3`` (debug targets refuse it)."""
    arch, debug = target_of(text)
    return [f"-arch={arch}", *([] if debug else ["-O3"]), str(path), "-o", str(out)]


def in_process(
    files: list[tuple[Path, str]], passes: str, repeat: int, env: dict[str, str], tmp: Path
) -> dict[str, object]:
    """Per file: the hook's best time after a ptxas run and back to back, and one
    ``-p none`` round trip, measured in one process of :data:`PYTHON` (see
    :data:`_IN_PROCESS`)."""
    runs = {
        str(p): (target_of(text)[0], [str(PTXAS), *ptxas_args(p, text, tmp / "h.cubin")])
        for p, text in files
    }
    cmd = [PYTHON, "-c", _IN_PROCESS, passes, str(repeat), json.dumps(runs)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def write_launcher(directory: Path) -> Path:
    path = directory / "ptxopt-ptxas"
    path.write_text(f"#!{PYTHON}\nfrom ptxopt.thin_client import entry\nentry()\n")
    path.chmod(0o755)
    return path


def startup(env: dict[str, str], repeat: int, tmp: Path) -> tuple[float, float]:
    """(ptxopt opt -p none on a 100-line file, python -c pass), whole processes."""
    src = (ROOT / "ptxopt" / "examples" / "reduce.ptx").read_text().splitlines()
    # the first kernel of the example, cut to about 100 lines
    end = next(i for i, ln in enumerate(src) if ln.startswith("}") and i > 20)
    small = tmp / "small.ptx"
    small.write_text("\n".join(src[: end + 1]) + "\n")
    cli = [PYTHON, "-m", "ptxopt.cli", "opt", "-p", "none", str(small)]
    t_opt = run_time([*cli, "-o", str(tmp / "s.out")], env, repeat)
    t_py = run_time([PYTHON, "-c", "pass"], env, repeat)
    return t_opt, t_py


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--files", default="*/*.ptx", help="glob under tests/corpus")
    ap.add_argument("--min-lines", type=int, default=1000)
    ap.add_argument("--passes", default="default", help="pipeline: default, none, or a list")
    ap.add_argument(
        "--venv",
        action="store_true",
        help="run the processes with ptxopt installed from this checkout into a fresh "
        "virtual environment, as a user installs it (no editable install's import hook "
        "nor the .pth files of the development environment)",
    )
    args = ap.parse_args()
    if PTXAS is None:
        print("ptxas is not on PATH", file=sys.stderr)
        return 1
    # an installed package has its bytecode compiled; do the same for this checkout
    compileall.compile_dir(str(ROOT / "ptxopt"), quiet=1)
    from ptxopt import server

    files = []
    for p in sorted(CORPUS.glob(args.files)):
        text = p.read_text(encoding="latin-1")
        if text.count("\n") >= args.min_lines:
            files.append((p, text))
    tmp = Path(tempfile.mkdtemp(prefix="ptxopt-overhead-"))
    env = dict(os.environ)
    if args.venv:
        global PYTHON
        venv = tmp / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        PYTHON = str(venv / "bin" / "python")
        install = [PYTHON, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(ROOT)]
        subprocess.run(install, check=True)
        print(f"processes: {PYTHON} (ptxopt installed from {ROOT})")
        # `python -m`/`-c` would put the working directory (often this checkout) first
        env["PYTHONSAFEPATH"] = "1"
    else:
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for k in ("PTXOPT_DISABLE", "PTXOPT_PASSES", "PTXOPT_KNOBS", "PTXOPT_LOG"):
        env.pop(k, None)
    env["PTXOPT_PTXAS"] = PTXAS
    env["PTXOPT_SERVER_DIR"] = str(tmp / "srv")
    env["PTXOPT_SERVER_IDLE"] = "600"
    env["PTXOPT_QUIET"] = "1"
    env["PTXOPT_PASSES"] = args.passes
    cold = dict(env, PTXOPT_SERVER="0")
    dropin = write_launcher(tmp)
    installed = Path(PYTHON).parent / "ptxopt-ptxas"
    try:
        return measure(args, files, tmp, env, cold, dropin, installed if args.venv else dropin)
    finally:
        pid = server.ping(
            os.path.join(env["PTXOPT_SERVER_DIR"], os.path.basename(server.socket_path()))
        )
        if pid is not None:
            os.kill(pid, 15)
        shutil.rmtree(tmp, ignore_errors=True)


def measure(
    args: argparse.Namespace,
    files: list[tuple[Path, str]],
    tmp: Path,
    env: dict[str, str],
    cold: dict[str, str],
    dropin: Path,
    installed: Path,
) -> int:
    print(f"pipeline: -p {args.passes}")
    inproc = in_process(files, args.passes, args.repeat, env, tmp)
    hook_of: dict[str, float] = inproc["hook"]  # type: ignore[assignment]
    warm_of: dict[str, float] = inproc["warm"]  # type: ignore[assignment]
    none_of: dict[str, float] = inproc["none"]  # type: ignore[assignment]
    print(f"in-process columns: {PYTHON} ({inproc['build']})")
    t_opt, t_py = startup(env, max(args.repeat, 5), tmp)
    print(
        f"start-up: ptxopt opt -p none on a 100-line file {t_opt:.3f} s "
        f"(python -c pass {t_py:.3f} s; ptxopt's own {t_opt - t_py:.3f} s)"
    )

    # warm the resident server
    subprocess.run([str(dropin), "--version"], env=env, stdout=subprocess.DEVNULL)
    subprocess.run(
        [str(dropin), "-arch=sm_90", str(tmp / "small.ptx"), "-o", str(tmp / "w.cubin")],
        env=env,
        check=True,
    )

    # built by the interpreter the processes use: the client names its server's socket
    # (interpreter, package location, version) and falls back to that interpreter,
    # so one built here would miss the server of a --venv install
    made = subprocess.run(
        [PYTHON, "-m", "ptxopt.dropin", "--ptxopt-make-client", str(tmp / "native")],
        env=env,
        capture_output=True,
        text=True,
    )
    native: Path | None = Path(made.stdout.strip()) if made.returncode == 0 else None
    if native is None:
        print(f"(no native client: {made.stderr.strip()})")
    kind = "native" if installed.read_bytes()[:4] == b"\x7fELF" else "Python"
    print(f"resident: {installed} (the {kind} client)")
    cols = ("cli", "drop-in", "resident", "py-client", "native", "hook", "hook-warm")
    ratios: dict[str, list[tuple[float, float]]] = {c: [] for c in cols}
    lost = dict.fromkeys(cols, 0)
    lines_total = 0
    none_time = 0.0
    print(
        f"{'file':46} {'lines':>6} {'ptxas s':>8} "
        + " ".join(f"{c:>9}" for c in cols)
        + "   (added time / ptxas time)"
    )
    for p, text in files:
        as_args = ptxas_args(p, text, tmp / "out.cubin")
        runs: dict[str, tuple[list[str], dict[str, str]]] = {
            "ptxas": ([PTXAS, *as_args], env),
            "cli": (
                [PYTHON, "-m", "ptxopt.cli", "opt", "-p", args.passes, str(p)]
                + ["-o", str(tmp / "o.ptx")],
                env,
            ),
            "drop-in": ([str(dropin), *as_args], cold),
            "resident": ([str(installed), *as_args], env),
            "py-client": ([str(dropin), *as_args], env),
        }
        if native:
            runs["native"] = ([str(native), *as_args], env)
        # rounds of one run each, in turn: a change of load hits every column alike;
        # a drop-in's own ptxas is timed in the same run and taken off its time
        fastest = {k: math.inf for k in runs}
        for _ in range(args.repeat):
            for k, (cmd, e) in runs.items():
                if k in ("ptxas", "cli"):
                    fastest[k] = min(fastest[k], run_time(cmd, e, 1))
                else:
                    fastest[k] = min(fastest[k], run_added(cmd, e, tmp / "times"))
        t_as = fastest["ptxas"]
        t_cli = fastest["cli"]
        best = hook_of[str(p)]
        none_time += none_of[str(p)]
        lines_total += text.count("\n")
        # an added time at or below zero (not expected since the drop-ins time their
        # own ptxas) is left out of the summary (as "-"), not counted as 0
        added = {
            "cli": t_cli,
            "drop-in": fastest["drop-in"],
            "resident": fastest["resident"],
            "py-client": fastest["py-client"],
            "native": fastest.get("native", math.nan),
            "hook": best,
            "hook-warm": warm_of[str(p)],
        }
        for c in cols:
            if added[c] > 0:
                ratios[c].append((added[c] / t_as, t_as))
            elif not math.isnan(added[c]):
                lost[c] += 1
        name = str(p.relative_to(CORPUS))
        print(
            f"{name:46} {text.count(chr(10)):6d} {t_as:8.3f} "
            + " ".join(f"{added[c] / t_as:9.2f}" if added[c] > 0 else f"{'-':>9}" for c in cols)
        )
    print()
    print(f"{'summary':32} " + " ".join(f"{c:>9}" for c in cols))
    print(
        f"{'geometric mean':32} "
        + " ".join(f"{geomean([r for r, _ in ratios[c]]):9.2f}" for c in cols)
    )
    print(
        f"{'max':32} "
        + " ".join(f"{max([r for r, _ in ratios[c]], default=math.nan):9.2f}" for c in cols)
    )
    print(
        f"{'max where ptxas >= 0.1 s':32} "
        + " ".join(
            f"{max([r for r, t in ratios[c] if t >= 0.1], default=float('nan')):9.2f}" for c in cols
        )
    )
    left_out = 'files left out ("-")'
    print(f"{left_out:32} " + " ".join(f"{lost[c]:9d}" for c in cols))
    print(
        f"-p none in process: {lines_total} lines in {none_time:.2f} s "
        f"= {lines_total / none_time:,.0f} lines/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
