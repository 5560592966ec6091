"""Triton end to end, without a GPU: real kernels compiled for sm_80 and sm_90a with
ptxopt in the path, through the drop-in (``TRITON_PTXAS_PATH``) and through the
in-process hook (:mod:`ptxopt.triton`).  Needs the ``triton`` extra."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_dropin import env_for, log_lines, write_dropin

pytest.importorskip("triton")

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "triton_kernels.py"
PTXAS = shutil.which("ptxas")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(PTXAS is None, reason="no ptxas on PATH")]
KERNELS = ("add", "softmax", "matmul")


def compile_kernels(tmp_path: Path, env: dict[str, str], *extra: str) -> dict:
    env = dict(env)
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "80", "90", "--out", str(out), *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict = json.loads(done.stdout)
    for cap in ("80", "90"):
        for k in KERNELS:
            assert result[cap][k]["elf"] and result[cap][k]["cubin_bytes"] > 1000
    return result


def test_triton_through_dropin(tmp_path: Path) -> None:
    dropin = write_dropin(tmp_path / "bin")
    env = env_for(
        tmp_path,
        TRITON_PTXAS_PATH=str(dropin),  # sm_80
        TRITON_PTXAS_BLACKWELL_PATH=str(dropin),  # Triton's ptxas for sm_90 and later
    )
    compile_kernels(tmp_path, env)
    lines = log_lines(tmp_path)
    # every kernel of both targets went through ptxopt and was assembled from its output
    assert len(lines) == 2 * len(KERNELS) and all(ln.startswith("optimized ") for ln in lines)
    sm90 = (tmp_path / "out" / "matmul.sm90.ptx").read_text()
    assert ".target sm_90a" in sm90


def test_triton_dropin_falls_back(tmp_path: Path) -> None:
    dropin = write_dropin(tmp_path / "bin")
    env = env_for(
        tmp_path,
        TRITON_PTXAS_PATH=str(dropin),
        TRITON_PTXAS_BLACKWELL_PATH=str(dropin),
        PTXOPT_PASSES="no-such-pass",
    )
    compile_kernels(tmp_path, env)
    lines = log_lines(tmp_path)
    assert len(lines) == 2 * len(KERNELS) and all(ln.startswith("fallback ") for ln in lines)
