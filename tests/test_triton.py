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
    out.mkdir(parents=True, exist_ok=True)
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


# -- the in-process hook (ptxopt.triton) ------------------------------------------


def test_triton_hook_rewrites_ptx_stage(tmp_path: Path) -> None:
    from ptxopt.triton import optimize_ptx

    env = env_for(tmp_path)
    plain_dir = tmp_path / "plain"
    plain = compile_kernels(plain_dir, env)
    assert log_lines(tmp_path) == []
    hooked = compile_kernels(tmp_path, env, "--hook", "default")
    lines = log_lines(tmp_path)
    assert sorted(lines) == sorted(f"optimized {k}_kernel" for k in KERNELS for _ in (80, 90))
    for cap in ("80", "90"):
        for k in KERNELS:
            original = (plain_dir / "out" / f"{k}.sm{cap}.ptx").read_text()
            got = (tmp_path / "out" / f"{k}.sm{cap}.ptx").read_text()
            arch = "sm_80" if cap == "80" else "sm_90a"
            # the PTX Triton assembled is exactly ptxopt's output for Triton's PTX
            assert got == optimize_ptx(original, "default", [], arch)
            assert hooked[cap][k]["ptx_sha"] != plain[cap][k]["ptx_sha"]
    # Triton 3.9's own ptxas for sm_90 emits a newer PTX than ptxopt reads: kept as is
    assert ".version 9.4" in (tmp_path / "out" / "matmul.sm90.ptx").read_text()


def test_triton_hook_in_process_fallback_and_cache_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    sys.path.insert(0, str(HERE))
    try:
        import triton_kernels as tk
    finally:
        sys.path.remove(str(HERE))
    from triton import knobs

    import ptxopt.triton as pt

    def broken(*_: object) -> str:
        raise RuntimeError("planted failure")

    before = knobs.runtime.add_stages_inspection_hook
    with pytest.raises(ValueError, match="unknown pass"):
        pt.enable(passes="no-such-pass")
    assert pt.enabled() is None
    pt.enable(passes="none", log=str(tmp_path / "hook.log"))
    try:
        key_none = knobs.runtime.add_stages_inspection_hook()[0]
        assert "ptxopt" in key_none and ":none:" in key_none
        monkeypatch.setattr(pt, "optimize_ptx", broken)
        tk.KERNELS = {"add": tk.KERNELS["add"], "softmax": tk.KERNELS["softmax"]}
        res = tk.compile_all([80], None, {})
        assert res["80"]["add"]["elf"] and res["80"]["softmax"]["elf"]
        err = capsys.readouterr().err
        assert err.count("ptxopt.triton: warning") == 1 and "planted failure" in err
        assert pt.enabled() == {"optimized": 0, "fallback": 2}
        pt.enable(passes="default")
        assert knobs.runtime.add_stages_inspection_hook()[0] != key_none
    finally:
        pt.disable()
    assert knobs.runtime.add_stages_inspection_hook is before and pt.enabled() is None
    assert (tmp_path / "hook.log").read_text().count("fallback ") == 2
