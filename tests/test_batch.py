"""``ptxopt batch``: many files, per-file JSON, a summary, failure isolation, Ray."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ptxopt
from ptxopt.tools.batch import collect

ROOT = Path(__file__).resolve().parent.parent
SMALL = sorted((ROOT / "tests" / "corpus" / "cuda").glob("*.O3.sm90.ptx"))


def run_batch(
    *args: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if not os.environ.get("PTXOPT_TEST_INSTALLED"):
        env["PYTHONPATH"] = str(ROOT)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "ptxopt.cli", "batch", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    for p in SMALL:
        shutil.copy(p, d / p.name)
    shutil.copy(SMALL[0], d / "sub" / SMALL[0].name)  # same name in another folder
    (d / "bad.ptx").write_text(".version 8.0\n.target sm_80\n.address_size 64\n.entry k( {\n")
    crash = SMALL[1].read_text() + "\n// PTXOPT-CRASH-WORKER\n"
    (d / "crash.ptx").write_text(crash)
    (d / "notes.txt").write_text("not PTX")
    return d


def test_collect_names(inputs: Path) -> None:
    files = collect([str(inputs), str(inputs / "bad.ptx")])
    names = [rel for _, rel in files]
    assert len(files) == len(SMALL) + 3  # bad.ptx once, notes.txt never
    assert "in/bad.ptx" in names and f"in/sub/{SMALL[0].name}" in names
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("jobs", ["1", "3"])
def test_batch_isolates_failures(tmp_path: Path, inputs: Path, jobs: str) -> None:
    out = tmp_path / "out"
    done = run_batch(
        str(inputs),
        "-O",
        "--jobs",
        jobs,
        "--out",
        str(out),
        env_extra={"PTXOPT_BATCH_TESTING": "1"},
    )
    assert done.returncode == 1, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["files"] == len(SMALL) + 3 and summary["failed"] == 2
    errors = {Path(f["file"]).name: f["error"] for f in summary["failures"]}
    assert errors["crash.ptx"] == "worker died"
    assert "bad.ptx" in errors and "error" in errors["bad.ptx"].lower()
    # every good file: its JSON and its optimized PTX, identical to the API's
    for p in SMALL:
        res = json.loads((out / "in" / f"{p.name}.json").read_text())
        assert res["ok"] and res["lines"] == p.read_text().count("\n")
        got = (out / "in" / f"{p.name}.opt.ptx").read_text()
        assert got == ptxopt.optimize(p.read_text(), filename=str(p))
    assert "2 failed" in done.stdout and "files/s" in done.stdout


def test_batch_analyze_json(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_batch(*map(str, SMALL), "--mode", "analyze", "--json", "--out", str(out), "-j", "2")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["summary"]["ok"] == len(SMALL)
    for p in SMALL:
        report = json.loads((out / f"{p.name}.analyze.json").read_text())
        assert report == ptxopt.analyze(p.read_text(), filename=str(p))


def test_batch_usage_errors(tmp_path: Path) -> None:
    assert run_batch(str(SMALL[0]), "-O", "-p", "none").returncode == 2
    done = run_batch(str(SMALL[0]), "-p", "no-such-pass")
    assert done.returncode == 2 and "unknown pass" in done.stderr
    (tmp_path / "empty").mkdir()
    assert run_batch(str(tmp_path / "empty")).returncode == 2


@pytest.mark.slow
def test_batch_on_local_ray(tmp_path: Path, inputs: Path) -> None:
    pytest.importorskip("ray")
    out = tmp_path / "out"
    os.unlink(inputs / "crash.ptx")
    done = run_batch(
        str(inputs),
        "-p",
        "none",
        "--ray",
        "--out",
        str(out),
        env_extra={"RAY_ADDRESS": "", "RAY_num_cpus": "2"},
    )
    assert done.returncode == 1, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["files"] == len(SMALL) + 2 and summary["failed"] == 1
    p = SMALL[0]
    got = (out / "in" / f"{p.name}.opt.ptx").read_text()
    assert got == ptxopt.optimize(p.read_text(), passes="none", filename=str(p))
