"""The ptxas drop-in (``ptxopt-ptxas``): command-line parsing, the real ptxas's output
and status passed through, fallback to the original PTX, nvcc end to end."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ptxopt.dropin import ARCH_RE, _is_self, knob_items, make_nvcc_dir, parse_ptxas_args

ROOT = Path(__file__).resolve().parent.parent
PTXAS = shutil.which("ptxas")
NVCC = shutil.which("nvcc")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas is not on PATH")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")

KERNEL_CU = """
__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a + 1.0f;
}
"""


def write_dropin(directory: Path, name: str = "ptxopt-ptxas") -> Path:
    """A launcher for the drop-in running this interpreter on the ptxopt under test
    (the installed console script when testing the installed package)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!{sys.executable}\nfrom ptxopt.dropin import entry\nentry()\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for k in ("PTXOPT_DISABLE", "PTXOPT_PASSES", "PTXOPT_KNOBS", "PTXOPT_QUIET", "PTXOPT_PTXAS"):
        env.pop(k, None)
    env["PTXOPT_LOG"] = str(tmp_path / "dropin.log")
    env["PTXOPT_SERVER"] = "0"
    if "PYTHONPATH" not in env and not os.environ.get("PTXOPT_TEST_INSTALLED"):
        env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def log_lines(tmp_path: Path) -> list[str]:
    p = tmp_path / "dropin.log"
    return p.read_text().splitlines() if p.exists() else []


@pytest.fixture(scope="module")
def kernel_ptx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if NVCC is None:
        pytest.skip("nvcc is not on PATH")
    d = tmp_path_factory.mktemp("cu")
    (d / "k.cu").write_text(KERNEL_CU)
    subprocess.run(
        [NVCC, "-arch=sm_80", "-ptx", str(d / "k.cu"), "-o", str(d / "k.ptx")], check=True
    )
    return d / "k.ptx"


def test_parse_ptxas_command_lines() -> None:
    a = parse_ptxas_args(["-arch=sm_80", "-m64", "-O3", "-v", "k.ptx", "-o", "k.cubin"])
    assert [a.argv[i] for i in a.inputs] == ["k.ptx"] and a.arch == "sm_80"
    assert a.passthrough is None
    # separate values are not mistaken for inputs; the last -arch wins
    a = parse_ptxas_args(
        ["--gpu-name", "sm_90a", "-lineinfo", "--regAllocOptLevel=2", "-o", "x.o", "in.ptx"]
    )
    assert [a.argv[i] for i in a.inputs] == ["in.ptx"] and a.arch == "sm_90a"
    a = parse_ptxas_args(["-maxrregcount", "32", "-knob", "X=1", "--entry", "k", "a.ptx", "b.ptx"])
    assert [a.argv[i] for i in a.inputs] == ["a.ptx", "b.ptx"]
    assert parse_ptxas_args(["--version"]).passthrough == "option --version"
    assert parse_ptxas_args(["-g", "k.ptx"]).passthrough == "option -g"
    assert parse_ptxas_args(["-arch=sm_80"]).passthrough == "no input file"
    assert parse_ptxas_args(["-ias", ".version 8.0", "-arch", "sm_80"]).passthrough
    assert ARCH_RE.fullmatch("sm_90a") and not ARCH_RE.fullmatch("compute_90")
    assert knob_items("A=1, B=2 C=3") == ["A=1", "B=2", "C=3"]


def test_console_script_declared() -> None:
    # ptxopt-ptxas itself is the native client or this script (setup.py)
    with open(ROOT / "pyproject.toml", "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    assert scripts["ptxopt-ptxas-py"] == "ptxopt.thin_client:entry"
    assert "ptxopt-ptxas" not in scripts
    script = (ROOT / "ptxopt" / "native" / "ptxopt-ptxas").read_text()
    assert script.startswith("#!python\n") and "from ptxopt.thin_client import entry" in script
    if os.environ.get("PTXOPT_TEST_INSTALLED"):
        assert shutil.which("ptxopt-ptxas"), "the installed package has no ptxopt-ptxas"
        assert shutil.which("ptxopt-ptxas-py"), "the installed package has no ptxopt-ptxas-py"


def test_launcher_is_recognised_as_self(tmp_path: Path) -> None:
    me = write_dropin(tmp_path)
    assert _is_self(str(me))
    # the console script's own launcher (the thin client first)
    thin = tmp_path / "thin"
    thin.write_text(f"#!{sys.executable}\nfrom ptxopt.thin_client import entry\nentry()\n")
    assert _is_self(str(thin))
    if PTXAS is not None:
        assert not _is_self(PTXAS)
        # nor the binary behind a wrapper of it (an ELF ptxopt did not write)
        small = Path(PTXAS).stat().st_size < 4096
        real = small and re.search(r"exec (\S+/ptxas)", Path(PTXAS).read_text(errors="replace"))
        if real:
            assert not _is_self(real.group(1))


def test_the_answer_of_is_self_follows_the_file(tmp_path: Path) -> None:
    """A server worker keeps _is_self's answers; one for a file that changed since, or
    that another file replaced under the same name, is not reused."""
    me = write_dropin(tmp_path)
    text = me.read_text()
    assert _is_self(str(me))
    other = text.replace("ptxopt.dropin", "ptxopt.elsewh")  # same size
    assert len(other) == len(text)
    me.write_text(other)
    assert not _is_self(str(me))
    me.write_text(text)
    assert _is_self(str(me))
    replaced = tmp_path / "new"
    replaced.write_text("#!/bin/sh\nexit 0\n")
    replaced.chmod(0o755)
    os.replace(replaced, me)
    assert not _is_self(str(me))
    assert not _is_self(str(tmp_path / "missing"))


@needs_ptxas
def test_dropin_optimizes_and_matches_ptxas(tmp_path: Path, kernel_ptx: Path) -> None:
    dropin = write_dropin(tmp_path / "bin")
    args = ["-arch=sm_80", "-O3", "-v", str(kernel_ptx), "-o"]
    got = subprocess.run(
        [str(dropin), *args, str(tmp_path / "a.cubin")],
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
    )
    want = subprocess.run([PTXAS, *args, str(tmp_path / "b.cubin")], capture_output=True, text=True)
    assert got.returncode == want.returncode == 0, got.stderr
    assert (tmp_path / "a.cubin").stat().st_size > 0
    assert log_lines(tmp_path) == [f"optimized {kernel_ptx}"]

    # -v output has the same shape as ptxas's own (times aside)
    def shape(s: str) -> list[str]:
        return [ln for ln in s.splitlines() if "Compile time" not in ln]

    assert shape(got.stderr) == shape(want.stderr)
    assert "warning" not in got.stderr


@needs_ptxas
def test_version_and_errors_pass_through(tmp_path: Path) -> None:
    dropin = write_dropin(tmp_path / "bin")
    env = env_for(tmp_path)
    got = subprocess.run([str(dropin), "--version"], env=env, capture_output=True, text=True)
    want = subprocess.run([PTXAS, "--version"], capture_output=True, text=True)
    assert (got.returncode, got.stdout) == (want.returncode, want.stdout)
    # ptxas's own error and exit status for a file it rejects (ptxopt falls back first)
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.0\n.target sm_80\n.address_size 64\n.entry k() { bogus; }\n")
    got = subprocess.run(
        [str(dropin), "-arch=sm_80", str(bad), "-o", str(tmp_path / "x.cubin")],
        env=env,
        capture_output=True,
        text=True,
    )
    want = subprocess.run(
        [PTXAS, "-arch=sm_80", str(bad), "-o", str(tmp_path / "y.cubin")],
        capture_output=True,
        text=True,
    )
    assert got.returncode == want.returncode != 0
    assert want.stderr in got.stderr
    assert got.stderr.count("ptxopt-ptxas: warning") == 1
    assert log_lines(tmp_path)[0].startswith(f"fallback {bad}")


@needs_ptxas
def test_fallback_when_ptxopt_fails(tmp_path: Path, kernel_ptx: Path) -> None:
    dropin = write_dropin(tmp_path / "bin")
    out = tmp_path / "k.cubin"
    got = subprocess.run(
        [str(dropin), "-arch=sm_80", str(kernel_ptx), "-o", str(out)],
        env=env_for(tmp_path, PTXOPT_PASSES="no-such-pass"),
        capture_output=True,
        text=True,
    )
    assert got.returncode == 0 and out.stat().st_size > 0
    assert got.stderr.count("warning") == 1 and "no-such-pass" in got.stderr
    assert log_lines(tmp_path)[0].startswith("fallback")
    # PTXOPT_QUIET silences the warning, not the fallback
    got = subprocess.run(
        [str(dropin), "-arch=sm_80", str(kernel_ptx), "-o", str(out)],
        env=env_for(tmp_path, PTXOPT_PASSES="no-such-pass", PTXOPT_QUIET="1"),
        capture_output=True,
        text=True,
    )
    assert got.returncode == 0 and got.stderr == ""


@needs_ptxas
def test_fallback_when_ptxas_rejects_output(tmp_path: Path, kernel_ptx: Path) -> None:
    # a "real ptxas" that refuses anything ptxopt wrote (its temporary directory)
    fake = tmp_path / "fake" / "ptxas"
    fake.parent.mkdir()
    fake.write_text(
        '#!/bin/sh\ncase "$*" in *ptxopt-ptxas-*) echo "error: no" >&2; exit 7;; esac\n'
        f'exec {PTXAS} "$@"\n'
    )
    fake.chmod(0o755)
    dropin = write_dropin(tmp_path / "bin")
    out = tmp_path / "k.cubin"
    got = subprocess.run(
        [str(dropin), "-arch=sm_80", str(kernel_ptx), "-o", str(out)],
        env=env_for(tmp_path, PTXOPT_PTXAS=str(fake)),
        capture_output=True,
        text=True,
    )
    assert got.returncode == 0 and out.stat().st_size > 0
    assert "ptxas rejected ptxopt's output (error: no)" in got.stderr
    assert log_lines(tmp_path) == [
        f"optimized {kernel_ptx}",
        "fallback ptxas rejected output: error: no",
    ]


def fake_ptxas(directory: Path, copy: Path, status: int = 0) -> Path:
    """A "real ptxas" that copies each ``.ptx`` file it is given to ``copy``, notes
    where it was, and exits with ``status``."""
    fake = directory / "ptxas"
    directory.mkdir(parents=True, exist_ok=True)
    fake.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in *.ptx) cat "$a" > ' + f"{copy}; "
        'echo "$a" >> ' + f"{copy}.where;; esac; done\nexit {status}\n"
    )
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize("status", [0, 3])
def test_temporary_copies_are_removed_and_the_ir_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    """In process (as in a server worker): ptxas gets ptxopt's output in a temporary
    file, which is gone afterwards, whether ptxas took it or not (3: the fallback runs
    it again on the original); the IR is taken apart (while ptxas runs), so with the
    collector off nothing of the module is left for a collection to find."""
    import gc

    from ptxopt import dropin

    example = ROOT / "ptxopt" / "examples" / "reduce.ptx"
    temp = tmp_path / "tmp"
    temp.mkdir()
    copy = tmp_path / "seen.ptx"
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    monkeypatch.setenv("PTXOPT_PTXAS", str(fake_ptxas(tmp_path / "fake", copy, status)))
    monkeypatch.setenv("PTXOPT_SERVER", "0")
    monkeypatch.setenv("PTXOPT_PASSES", "none")
    monkeypatch.setenv("PTXOPT_QUIET", "1")
    argv = ["-arch=sm_80", str(example), "-o", str(tmp_path / "k.cubin")]
    dropin.run(argv)  # warm-up: caches filled once
    gc.collect()
    gc.disable()
    try:
        code = dropin.run(argv)
        left = gc.collect()
    finally:
        gc.enable()
    assert code == status
    assert left == 0
    assert list(temp.iterdir()) == []
    where = Path(f"{copy}.where").read_text().splitlines()
    assert Path(where[-2 if status else -1]).parent == temp  # ptxopt's copy was used
    if status:  # then the original
        assert where[-1] == str(example) and copy.read_text() == example.read_text()
    else:
        assert copy.read_text() != example.read_text()  # the round trip's text


@pytest.mark.parametrize("mode", ["optimized", "fallback", "disabled"])
def test_times_split_a_run_into_ptxopt_and_ptxas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """PTXOPT_TIMES: one line per run, the seconds before the real ptxas started and
    the seconds it ran (both runs after a fallback), which add up to no more than the
    whole run.  ptxopt's work is stretched by 0.15 s and each ptxas run takes 0.2 s."""
    import time

    from ptxopt import dropin

    example = ROOT / "ptxopt" / "examples" / "reduce.ptx"
    fake = tmp_path / "fake" / "ptxas"
    fake.parent.mkdir()
    status = 3 if mode == "fallback" else 0
    fake.write_text(f"#!/bin/sh\nsleep 0.2\nexit {status}\n")
    fake.chmod(0o755)
    work = dropin._optimize_inputs

    def slow(*a: object, **k: object) -> object:
        time.sleep(0.15)
        return work(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(dropin, "_optimize_inputs", slow)
    times = tmp_path / "times"
    monkeypatch.setenv("PTXOPT_TIMES", str(times))
    monkeypatch.setenv("PTXOPT_PTXAS", str(fake))
    monkeypatch.setenv("PTXOPT_SERVER", "0")
    monkeypatch.setenv("PTXOPT_PASSES", "none")
    monkeypatch.setenv("PTXOPT_QUIET", "1")
    monkeypatch.setenv("PTXOPT_DISABLE", "1" if mode == "disabled" else "0")
    t = time.perf_counter()
    code = dropin.run(["-arch=sm_80", str(example), "-o", str(tmp_path / "k.cubin")])
    whole = time.perf_counter() - t
    assert code == status
    (line,) = times.read_text().splitlines()
    before, ptxas, name = line.split(" ", 2)
    assert name == str(example)
    runs = 2 if mode == "fallback" else 1
    assert 0.2 * runs <= float(ptxas) < 0.2 * runs + 5
    assert (float(before) >= 0.15) == (mode != "disabled")
    assert float(before) + float(ptxas) <= whole


@needs_ptxas
def test_disable_and_never_runs_itself(tmp_path: Path, kernel_ptx: Path) -> None:
    # the drop-in installed as "ptxas" first on PATH still finds the real one
    bindir = tmp_path / "bin"
    dropin = write_dropin(bindir, "ptxas")
    env = env_for(tmp_path, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "k.cubin"
    got = subprocess.run(
        [str(dropin), "-arch=sm_80", str(kernel_ptx), "-o", str(out)], env=env, timeout=60
    )
    assert got.returncode == 0 and log_lines(tmp_path) == [f"optimized {kernel_ptx}"]
    env["PTXOPT_DISABLE"] = "1"
    got = subprocess.run([str(dropin), "-arch=sm_80", str(kernel_ptx), "-o", str(out)], env=env)
    assert got.returncode == 0 and len(log_lines(tmp_path)) == 1
    # nothing else named ptxas: a clear error, not a loop
    env["PATH"] = str(bindir)
    got = subprocess.run(
        [str(dropin), "-arch=sm_80", str(kernel_ptx)], env=env, capture_output=True, text=True
    )
    assert got.returncode == 127 and "cannot find the real ptxas" in got.stderr


@needs_ptxas
def test_knobs_and_passes_from_environment(tmp_path: Path, kernel_ptx: Path) -> None:
    dropin = write_dropin(tmp_path / "bin")
    got = subprocess.run(
        [str(dropin), "-arch=sm_80", str(kernel_ptx), "-o", str(tmp_path / "k.cubin")],
        env=env_for(tmp_path, PTXOPT_PASSES="none", PTXOPT_KNOBS="NoSuchKnob=1"),
        capture_output=True,
        text=True,
    )
    assert got.returncode == 0 and "unknown knob 'NoSuchKnob'" in got.stderr


@needs_nvcc
@needs_ptxas
def test_nvcc_ptx_then_dropin_and_nvcc_through_dropin(tmp_path: Path) -> None:
    dropin = write_dropin(tmp_path / "bin")
    cu = tmp_path / "k.cu"
    cu.write_text(KERNEL_CU)
    env = env_for(tmp_path, PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    # 1. nvcc -ptx, then the drop-in as the assembler
    subprocess.run(
        [NVCC, "-arch=sm_90a", "-ptx", str(cu), "-o", str(tmp_path / "k.ptx")], check=True
    )
    subprocess.run(
        [str(dropin), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
        env=env,
        check=True,
    )
    assert (tmp_path / "k.cubin").stat().st_size > 0
    # 2. nvcc itself running the drop-in as its ptxas (a private nvcc.profile)
    nvcc = make_nvcc_dir(str(tmp_path / "nvcc"))
    os.unlink(tmp_path / "nvcc" / "shim" / "ptxas")
    os.symlink(dropin, tmp_path / "nvcc" / "shim" / "ptxas")
    subprocess.run(
        [nvcc, "-arch=sm_80", "-cubin", str(cu), "-o", str(tmp_path / "n.cubin")],
        env=env,
        check=True,
    )
    assert (tmp_path / "n.cubin").stat().st_size > 0
    lines = log_lines(tmp_path)
    assert len(lines) == 2 and all(ln.startswith("optimized") for ln in lines), lines
