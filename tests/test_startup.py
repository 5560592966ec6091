"""Start-up cost (#19): the commands that optimize import neither numpy nor the
interpreter, and the parser's fast paths agree with the exact ones."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptxopt.ptx.parser import _U64, _accumulate
from tests.helpers import PTXAS

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "ptxopt.sim")


def imported_modules(*args: str) -> set[str]:
    """Modules a fresh ``python -X importtime ARGS`` imports."""
    env = dict(os.environ)
    if not os.environ.get("PTXOPT_TEST_INSTALLED"):
        env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", done.stderr, re.M)
    assert names, "no -X importtime output"
    return set(names)


def heavy(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_opt_imports_no_numpy_nor_interpreter(tmp_path: Path) -> None:
    out = tmp_path / "o.ptx"
    mods = imported_modules(
        "-m", "ptxopt.cli", "opt", "-p", "none", "example:reduce", "-o", str(out)
    )
    assert out.stat().st_size > 0
    assert "ptxopt.driver" in mods  # the measurement saw the real work
    assert heavy(mods) == []
    # no pass runs, so neither the pass machinery nor any pass (nor the oracle some
    # of them import) is loaded
    assert not [m for m in mods if m.startswith("ptxopt.transforms")]
    assert "ptxopt.pipeline" not in mods and "ptxopt.ir.cssa" not in mods
    assert "ptxopt.oracle" not in mods
    # -O: general-optimize folds constants by running the interpreter's own handlers,
    # imported on first use; nothing else may bring numpy or the interpreter in
    mods = imported_modules(
        "-m", "ptxopt.cli", "opt", "-O", "--disable", "general-optimize", "example:reduce",
        "-o", str(out),
    )  # fmt: skip
    assert heavy(mods) == []
    # the example only asks about activemask, which is never folded
    mods = imported_modules("-m", "ptxopt.cli", "opt", "-O", "example:reduce", "-o", str(out))
    assert "ptxopt.ir.int_fold" in mods and heavy(mods) == []
    # the CUTLASS Hopper GEMM folds eight plain integer instructions (setp.ne.b32 of
    # constants): ptxopt.ir.int_fold computes them without the interpreter
    ws = ROOT / "tests" / "corpus" / "cutlass" / "hopper_ws_gemm.sm90a.ptx"
    mods = imported_modules("-m", "ptxopt.cli", "opt", "-O", str(ws), "-o", str(out))
    assert "ptxopt.ir.int_fold" in mods and heavy(mods) == []
    # a half-precision cvt of a constant is the interpreter's (CUTLASS FMHA)
    fmha = ROOT / "tests" / "corpus" / "cutlass" / "ampere_fmha.sm80.ptx"
    mods = imported_modules("-m", "ptxopt.cli", "opt", "-O", str(fmha), "-o", str(out))
    assert "ptxopt.ir.fold" in mods and "numpy" in mods
    # reading and writing immediates needs no interpreter: a kernel with constants
    # but nothing to fold (as most are) runs the whole pipeline without numpy
    kernel = ROOT / "tests" / "corpus" / "triton" / "matmul_fp16.sm80.ptx"
    mods = imported_modules("-m", "ptxopt.cli", "opt", "-O", str(kernel), "-o", str(out))
    assert "ptxopt.ir.immediates" in mods and "ptxopt.transforms.general_optimize" in mods
    assert heavy(mods) == []


# standard modules that cost start-up and that the round trip does without (typing
# alone took 5-8 ms, dataclasses with inspect 7-14 ms, tempfile 5-10 ms)
STDLIB_HEAVY = ("typing", "dataclasses", "inspect", "tempfile", "shutil")


def test_round_trip_imports_no_heavy_standard_module(tmp_path: Path) -> None:
    # without site (``-S``): a .pth file of the environment may import any of them
    # before ptxopt runs; ptxopt is found where this test imported it from
    import ptxopt

    home = str(Path(ptxopt.__file__).resolve().parent.parent)

    def bare(*args: str) -> set[str]:
        done = subprocess.run(
            [sys.executable, "-S", "-X", "importtime", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": home},
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", done.stderr, re.M))

    out = tmp_path / "o.ptx"
    ran = bare("-m", "ptxopt.cli", "opt", "-p", "none", "example:reduce", "-o", str(out))
    assert "ptxopt.driver" in ran and out.stat().st_size > 0
    assert sorted(m for m in STDLIB_HEAVY if m in ran) == []
    assert sorted(m for m in STDLIB_HEAVY if m in bare("-m", "ptxopt.cli", "--version")) == []
    # the check sees such an import when one happens
    assert "dataclasses" in bare("-c", "import ptxopt.analysis.manager")


@pytest.mark.skipif(PTXAS is None, reason="needs ptxas")
def test_dropin_round_trip_imports_no_pass_machinery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PTXOPT_PASSES=none: the drop-in parses, lifts, lowers and runs ptxas, and
    # imports no pass (nor the divergence analysis the pipeline brings)
    src = tmp_path / "k.ptx"
    src.write_text(
        ".version 9.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n"
    )
    cubin = tmp_path / "k.cubin"
    argv = ["ptxopt-ptxas", "-arch=sm_80", str(src), "-o", str(cubin)]
    code = f"import sys; sys.argv = {argv!r}; from ptxopt.dropin import entry; entry()"
    monkeypatch.setenv("PTXOPT_PASSES", "none")
    monkeypatch.setenv("PTXOPT_SERVER", "0")
    monkeypatch.setenv("PTXOPT_LOG", str(tmp_path / "log"))
    mods = imported_modules("-c", code)
    assert cubin.stat().st_size > 0 and "optimized" in (tmp_path / "log").read_text()
    assert "ptxopt.driver" in mods and "ptxopt.pipeline" not in mods
    assert "ptxopt.analysis.divergence" not in mods and heavy(mods) == []


def test_version_is_light() -> None:
    mods = imported_modules("-m", "ptxopt.cli", "--version")
    assert heavy(mods) == [] and "ptxopt.driver" not in mods


def test_api_and_dropin_import_light() -> None:
    code = "import ptxopt, ptxopt.dropin; ptxopt.optimize; print(ptxopt.__version__)"
    mods = imported_modules("-c", code)
    assert heavy(mods) == [] and "ptxopt.driver" not in mods


def test_the_thin_client_imports_almost_nothing() -> None:
    """``ptxopt-ptxas`` served by the server costs Python's start-up and a request:
    naming the socket and building the request import no module beyond its own and
    the C modules of sockets and SHA-256 (socket, hashlib, subprocess or the drop-in
    would triple the start-up)."""
    code = (
        "import ptxopt.thin_client as t, _socket; t.socket_path(); "
        "t.client_request(['-v'], '/', {b'A': b'1'})"
    )
    extra = imported_modules("-c", code) - imported_modules("-c", "pass")
    allowed = {"ptxopt", "ptxopt.thin_client", "__future__", "_socket", "_sha256", "_sha2"}
    assert extra <= allowed, sorted(extra - allowed)


def test_planted_heavy_import_is_caught() -> None:
    # the check itself sees an import of the interpreter when one happens
    mods = imported_modules("-c", "import ptxopt.sim")
    assert "ptxopt.sim" in heavy(mods)


def slow_accumulate(digits: str, base: int) -> int:
    value = 0
    for k, ch in enumerate(digits):
        if k and value >> 63:
            raise ValueError("overflow")
        value = (value * base + int(ch, base)) & _U64
    return value


def outcome(f: object, digits: str, base: int) -> object:
    try:
        return f(digits, base)  # type: ignore[operator]
    except ValueError:
        return "error"


ALPHABET = {10: "0123456789", 16: "0123456789abcdefABCDEF", 8: "01234567", 2: "01"}


@pytest.mark.parametrize("base", sorted(ALPHABET))
@given(data=st.data())
def test_integer_fast_path_matches_exact(base: int, data: st.DataObject) -> None:
    digits = data.draw(st.text(alphabet=ALPHABET[base] + "_ 9g+", min_size=0, max_size=70))
    assert outcome(_accumulate, digits, base) == outcome(slow_accumulate, digits, base)


@pytest.mark.parametrize("base", sorted(ALPHABET))
def test_integer_fast_path_boundaries(base: int) -> None:
    top = ALPHABET[base][base - 1] if base != 16 else "f"
    for n in range(1, 70):
        for digits in (top * n, "1" + "0" * (n - 1)):
            assert outcome(_accumulate, digits, base) == outcome(slow_accumulate, digits, base)


def test_opt_exits_at_once_with_its_output_and_status(tmp_path: Path) -> None:
    # the program ends opt without the interpreter's teardown: stdout is still flushed
    # when it is a pipe, and an error still gives its message and status
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = str(ROOT)
    small = tmp_path / "small.ptx"  # its output stays in the stream's buffer
    small.write_text(
        ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"
    )
    cmd = [sys.executable, "-m", "ptxopt.cli", "opt", "-p", "none", str(small)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.rstrip().endswith("}")
    assert ".entry k" in done.stdout
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 9.0\n.target sm_90\n.address_size 64\nadd.u32;\n")
    out = tmp_path / "o.ptx"
    done = subprocess.run(
        [*cmd[:-1], str(bad), "-o", str(out)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 1 and done.stderr.startswith(f"{bad}:4:")
    assert not out.exists()
