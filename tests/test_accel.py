"""The compiled front end (``ptxopt/accel.py``, ``setup.py``): the build is the one
expected, never a mix, and compiled and pure Python give the same output and the same
errors.  ``.ci/run`` runs the suite on a compiled install (``PTXOPT_EXPECT_BUILD=
compiled``) and the front-end tests again on a pure one (``PTXOPT_EXPECT_BUILD=pure``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptxopt.accel import COMPILED, build_name, compiled_modules
from ptxopt.driver import optimize
from ptxopt.ptx.ast import PtxError

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

# one file per producer (nvcc -O3 and -G, CUTLASS, CUB, Triton, numba, LLVM)
FILES = [
    "cuda/control.O3.sm90.ptx",
    "cuda/reduce.G.sm90.ptx",
    "cutlass/ampere_tf32_gemm.sm80.ptx",
    "cub/scan.sm80.ptx",
    "triton/attention_fwd_fp16.sm90a.ptx",
    "numba/clamp_count.sm80.ptx",
    "llvm/saxpy_i64.sm75.ptx",
]
_HEAD = ".version 9.0\n.target sm_90\n.address_size 64\n"
# inputs each stage rejects: the lexer (a malformed number), the parser (a missing
# ';'), the validator (a register of the wrong type; an unknown label), the lifter's
# scope resolution (a branch into a nested block)
BAD = [
    _HEAD + ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tadd.s32 %r1, %r2, 0x;\n\tret;\n}\n",
    _HEAD + ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tadd.s32 %r1, %r2\n}\n",
    _HEAD + ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tadd.s64 %r1, %r2, 1;\n\tret;\n}\n",
    _HEAD + ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tbra L9;\n\tret;\n}\n",
    _HEAD + ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\t{\n\tL1:\n\t}\n\tbra L1;\n\tret;\n}\n",
]


def test_the_build_is_the_one_expected() -> None:
    got = compiled_modules()
    want = os.environ.get("PTXOPT_EXPECT_BUILD")
    if want == "compiled":
        assert got == list(COMPILED), got
        assert build_name() == "front end compiled with mypyc"
    elif want == "pure":
        assert got == [] and build_name() == "pure Python"
    else:  # unset (a development checkout): either, but never a mix
        assert got in ([], list(COMPILED)), got


def test_the_list_names_modules_that_exist() -> None:
    for name in COMPILED:
        assert (ROOT / Path(*name.split("."))).with_suffix(".py").is_file(), name


def _results() -> list[list[str]]:
    """Per corpus file: the round trip's text, the default pipeline's, and the
    uniform-register model's report (``analyze --regfiles --json``) at sm_80 and
    sm_90; per bad input: the error.  Run by this process and by a pure-Python one."""
    from ptxopt.analysis.divergence import analyze_module
    from ptxopt.ori.report import regfiles_report
    from ptxopt.pipeline import parse_pipeline
    from ptxopt.report.analyze_cli import lift_text

    steps = parse_pipeline("default")
    out: list[list[str]] = []
    for rel in FILES:
        text = (CORPUS / rel).read_text()
        row = [optimize(text, rel, []).text, optimize(text, rel, steps).text]
        mod = lift_text(text, rel)
        md = analyze_module(mod)
        for arch in ("sm_80", "sm_90"):
            row.append(json.dumps(regfiles_report(mod, md, arch), sort_keys=True))
        out.append(row)
    for k, text in enumerate(BAD):
        try:
            optimize(text, f"bad{k}.ptx", [])
            out.append(["accepted"])
        except PtxError as e:
            out.append([str(e)])
    return out


_PURE = f"""
import json, sys
sys.path.insert(0, {str(ROOT)!r})
sys.path.insert(1, {str(ROOT / "tests")!r})
import ptxopt.accel
assert ptxopt.accel.compiled_modules() == [], "the source tree is not pure Python"
import test_accel
print(json.dumps(test_accel._results()))
"""


def test_compiled_and_pure_python_agree() -> None:
    """The installed package (compiled in .ci/run) against the source tree run as
    Python: the same PTX out, the same uniform-register reports, the same errors,
    byte for byte."""
    done = subprocess.run(
        [sys.executable, "-c", _PURE],
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    pure = json.loads(done.stdout)
    mine = _results()
    assert len(mine) == len(FILES) + len(BAD)
    assert all(r[0] != "accepted" for r in mine[len(FILES) :])
    for k, (a, b) in enumerate(zip(mine, pure, strict=True)):
        assert a == b, (FILES + [f"bad{j}" for j in range(len(BAD))])[k]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_each_bad_input_is_an_error(k: int) -> None:
    with pytest.raises(PtxError, match=r"bad\d\.ptx:\d+:\d+: error: ") as e:
        optimize(BAD[k], f"bad{k}.ptx", [])
    assert str(e.value).startswith(f"bad{k}.ptx:")
