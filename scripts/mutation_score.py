"""Mutation score per package, with mutmut 3 (configuration: ``[tool.mutmut]`` in
pyproject.toml).

Usage (from the repository root; ``pip install 'mutmut>=3.3,<4'``)::

    python scripts/mutation_score.py run PKG [--sample N] [--seed S] [--jobs J]
    python scripts/mutation_score.py recheck PKG
    python scripts/mutation_score.py score [PKG ...]

``run`` mutates one package (``ptx``, ``ir``, ``analysis``, ``sim``, ``transforms``) in
its own copy of the tracked tree (``build/mutation/PKG``), so packages can run side by
side.  Each mutant runs the tests of that package's fast subset (:data:`TESTS`) that
cover the mutated function, stopping at the first failure.  ``--sample N`` runs a
random sample of N mutants (seeded) instead of all of them: the score is then an
estimate, printed with its 95 % (Wilson) interval.

``recheck`` takes the survivors of a finished run, applies each mutant (``mutmut show``
gives its diff) to a copy of the *current* tree and runs the package's test subset:
it verifies that tests written after the run kill them (``build/mutation/PKG/
recheck.json``; ``score`` counts those as killed).

``score`` prints, per package, killed / (tested - equivalent): a mutant is killed when
a test fails or it times out; survivors and mutants no selected test reaches count
against the score; survivors judged equivalent (the behaviour cannot change) are listed
with the reason in ``scripts/mutation_equivalent.txt`` and left out.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "mutation"
EQUIVALENT = ROOT / "scripts" / "mutation_equivalent.txt"
PACKAGES = ("ptx", "ir", "analysis", "sim", "transforms")
# the fast test subset of each package: the tests that exercise it directly
TESTS = {
    "ptx": ["test_parser.py", "test_opcodes.py", "test_opcode_table.py", "test_golden.py",
            "test_printer_roundtrip.py"],
    "ir": ["test_ir_units.py", "test_cssa_units.py", "test_ssa.py", "test_ir_edit.py",
           "test_verifier.py", "test_random_programs.py", "test_golden.py", "test_cssa.py"],
    "analysis": ["test_analysis_units.py", "test_lane_bits_table.py", "test_analysis_manager.py",
                 "test_graph_analyses.py", "test_divergence.py", "test_uniformity_checker.py",
                 "test_lane_bits.py"],
    "sim": ["isa/test_edge_values.py", "test_sim.py", "test_sim_ext.py", "test_sim_cvt.py",
            "test_uniformity_checker.py", "test_sim_launch.py", "test_sim_stack.py",
            "test_sim_units.py", "test_isa_regressions.py"],
    "transforms": ["test_divergence.py", "test_knobs_phases.py", "test_pass_registry.py",
                   "test_ur_model.py", "test_report_passes.py", "test_mark_uniform_branches.py",
                   "test_fuzz_kernels.py"],
}  # fmt: skip
# mutmut's exit codes (mutmut.__main__.status_by_exit_code)
KILLED = {1, 3, 36, -24, 24, 152, 255}  # a test failed, or the mutant timed out
SURVIVED = {0}
NO_TESTS = {5, 33}


def _copy_tree(dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    for f in files:
        src = ROOT / f
        if f and src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)


def _configure(dest: Path, pkg: str) -> None:
    """Point ``[tool.mutmut]`` of the copy at one package and its test subset."""
    cfg = dest / "pyproject.toml"
    text = cfg.read_text()
    tests = ", ".join(f'"tests/{t}"' for t in TESTS[pkg] if (dest / "tests" / t).exists())
    text = re.sub(r"(?m)^only_mutate = .*$", f'only_mutate = ["ptxopt/{pkg}/*"]', text)
    text = re.sub(
        r"(?m)^pytest_add_cli_args_test_selection = .*$",
        f"pytest_add_cli_args_test_selection = [{tests}]",
        text,
    )
    cfg.write_text(text)


def _results(dest: Path) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for meta in sorted((dest / "mutants" / "ptxopt").rglob("*.meta")):
        out.update(json.loads(meta.read_text())["exit_code_by_key"])
    return out


def run(pkg: str, sample: int | None, seed: int, jobs: int) -> int:
    dest = WORK / pkg
    _copy_tree(dest)
    _configure(dest, pkg)
    mutmut = [sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs)]
    if sample is None:
        return subprocess.run(mutmut, cwd=dest).returncode
    # generate the mutants and the test coverage (selecting nothing runs nothing)
    subprocess.run([*mutmut, "no-such-mutant"], cwd=dest, capture_output=True)
    names = sorted(_results(dest))
    if not names:
        print(f"{pkg}: mutmut generated no mutants", file=sys.stderr)
        return 1
    chosen = sorted(random.Random(seed).sample(names, min(sample, len(names))))
    (dest / "sample.txt").write_text("\n".join(chosen) + "\n")
    print(f"{pkg}: {len(chosen)} of {len(names)} mutants", flush=True)
    return subprocess.run([*mutmut, *chosen], cwd=dest).returncode


def recheck(pkg: str, names: list[str] | None = None) -> int:
    """Apply each mutant of ``names`` (default: the survivors of the mutmut run) to a
    copy of the current tree and run the package's test subset against it."""
    dest = WORK / pkg
    if names is None:
        results = _results(dest)
        sample_file = dest / "sample.txt"
        pool = sample_file.read_text().split() if sample_file.exists() else sorted(results)
        done = (
            json.loads((dest / "recheck.json").read_text())
            if (dest / "recheck.json").exists()
            else {}
        )
        names = [
            n
            for n in pool
            if results.get(n) in SURVIVED | NO_TESTS or done.get(n) in ("survived", "unapplied")
        ]
        names = [n for n in names if n not in _equivalent()]
    scratch = WORK / f"{pkg}-recheck"
    _copy_tree(scratch)
    tests = [f"tests/{t}" for t in TESTS[pkg] if (scratch / "tests" / t).exists()]
    out = dest / "recheck.json"
    verdict: dict[str, str] = json.loads(out.read_text()) if out.exists() else {}
    for n in names:
        if verdict.get(n) == "killed":
            continue
        shown = subprocess.run(["mutmut", "show", n], cwd=dest, capture_output=True, text=True)
        diff = shown.stdout[shown.stdout.find("--- ") :]
        target = scratch / diff.split("\n", 1)[0][4:].strip()
        original = target.read_text()
        ok = False
        for text in (diff, _indent_hunks(diff)):  # methods are shown dedented
            applied = subprocess.run(
                ["patch", "-p0", "--forward", "--fuzz=3", "-s", "-r", "-"],
                cwd=scratch,
                input=text,
                capture_output=True,
                text=True,
            )
            ok = applied.returncode == 0 and target.read_text() != original
            if ok:
                break
            target.write_text(original)
        if not ok:
            verdict[n] = "unapplied"
        else:
            r = subprocess.run(
                [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                 "-m", "not slow", *tests],
                cwd=scratch,
                capture_output=True,
                env={**os.environ, "MUTANT_UNDER_TEST": "recheck"},
            )  # fmt: skip
            verdict[n] = "killed" if r.returncode != 0 else "survived"
        target.write_text(original)
        out.write_text(json.dumps(verdict, indent=1) + "\n")
        print(f"{verdict[n]:9} {n}", flush=True)
    return 0


def _indent_hunks(diff: str) -> str:
    """The diff of a method as it sits in its class (one level deeper)."""
    out = []
    for ln in diff.split("\n"):
        if ln[:1] in (" ", "-", "+") and not ln.startswith(("--- ", "+++ ")) and ln[1:].strip():
            ln = ln[0] + "    " + ln[1:]
        out.append(ln)
    return "\n".join(out)


def sample_apply(pkg: str, sample: int, seed: int) -> int:
    """Without a mutmut run: a seeded sample of the generated mutants, each applied and
    tested by :func:`recheck` (used where mutmut's coverage pass is too slow)."""
    dest = WORK / pkg
    names = sorted(_results(dest))
    chosen = sorted(random.Random(seed).sample(names, min(sample, len(names))))
    (dest / "sample.txt").write_text("\n".join(chosen) + "\n")
    return recheck(pkg, chosen)


def _equivalent() -> dict[str, str]:
    out = {}
    if EQUIVALENT.exists():
        for ln in EQUIVALENT.read_text().splitlines():
            if ln.strip() and not ln.startswith("#"):
                name, _, why = ln.partition("#")
                out[name.strip()] = why.strip()
    return out


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion k/n (sound at 0 and n, where
    the normal approximation collapses to a point)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def score(pkgs: list[str]) -> None:
    equivalent = _equivalent()
    print(f"{'package':12} {'killed':>7} {'surv.':>6} {'no test':>8} {'equiv.':>7} {'score':>7}")
    for pkg in pkgs:
        dest = WORK / pkg
        results = _results(dest) if dest.exists() else {}
        rc_file = dest / "recheck.json"
        rechecked = json.loads(rc_file.read_text()) if rc_file.exists() else {}
        sample_file = dest / "sample.txt"
        names = sample_file.read_text().split() if sample_file.exists() else sorted(results)
        c: Counter[str] = Counter()
        survivors = []
        for n in names:
            code = results.get(n)
            if n in equivalent:
                c["equivalent"] += 1
            elif code in KILLED or rechecked.get(n) == "killed":
                c["killed"] += 1
            elif code in SURVIVED or (code is None and rechecked.get(n) == "survived"):
                c["survived"] += 1
                survivors.append(n)
            elif code in NO_TESTS:
                c["no tests"] += 1
                survivors.append(n)
            elif code is not None:
                c["other"] += 1
        total = c["killed"] + c["survived"] + c["no tests"] + c["other"]
        p = c["killed"] / total if total else 0.0
        lo, hi = _wilson(c["killed"], total)
        est = (
            f"  ({total} checked of a sample of {len(names)}: "
            f"95 % interval {100 * lo:.0f}-{100 * hi:.0f} %)"
            if sample_file.exists()
            else ""
        )
        print(
            f"{pkg:12} {c['killed']:7d} {c['survived']:6d} {c['no tests']:8d} "
            f"{c['equivalent']:7d} {100 * p:6.1f}%{est}"
        )
        for n in survivors:
            print(f"    survived: {n}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="mutate one package")
    r.add_argument("package", choices=PACKAGES)
    r.add_argument("--sample", type=int, help="run a seeded random sample of N mutants")
    r.add_argument("--seed", type=int, default=14)
    r.add_argument("--jobs", type=int, default=2)
    rc = sub.add_parser("recheck", help="verify survivors against the current tests")
    rc.add_argument("package", choices=PACKAGES)
    ap_ = sub.add_parser("apply", help="apply and test a sample of generated mutants")
    ap_.add_argument("package", choices=PACKAGES)
    ap_.add_argument("--sample", type=int, default=40)
    ap_.add_argument("--seed", type=int, default=14)
    s = sub.add_parser("score", help="print the score per package")
    s.add_argument("packages", nargs="*", help=f"some of {', '.join(PACKAGES)} (default all)")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        return run(args.package, args.sample, args.seed, args.jobs)
    if args.cmd == "recheck":
        return recheck(args.package)
    if args.cmd == "apply":
        return sample_apply(args.package, args.sample, args.seed)
    unknown = set(args.packages) - set(PACKAGES)
    if unknown:
        ap.error(f"unknown package {sorted(unknown)[0]}")
    score(args.packages or list(PACKAGES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
