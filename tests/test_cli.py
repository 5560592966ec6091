"""The command line: errors as file:line:col, exit codes, atomic output."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from ptxopt.cli import main
from ptxopt.ptx.ast import PtxError

GOOD = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 k_param_0)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	add.s32 	%r2, %r1, 1;
	st.global.u32 	[%rd2], %r2;
	ret;
}
"""

MALFORMED = {
    "truncated": (
        GOOD[: GOOD.index("ret;")],
        "14:2: error: expected '}', found end of file (unterminated body)",
    ),
    "unknown_opcode": (
        GOOD.replace("add.s32", "frobnicate.s32"),
        "12:2: error: unsupported instruction 'frobnicate.s32'",
    ),
    "bad_operand": (
        GOOD.replace("%r2, %r1, 1;", "%r2, %r1, );"),
        "12:21: error: expected an operand, found ')'",
    ),
    "undeclared_register": (
        GOOD.replace("add.s32 \t%r2, %r1", "add.s32 \t%r2, %r9"),
        "12:16: error: undeclared register '%r9'",
    ),
    "wrong_arity": (
        GOOD.replace("%r2, %r1, 1;", "%r2, %r1;"),
        "12:2: error: 'add.s32' expects 3 operands, got 2",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, expected = MALFORMED[case]
    src = tmp_path / f"{case}.ptx"
    src.write_text(text)
    out = tmp_path / "out.ptx"
    assert main(["opt", str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"{src}:{expected}"
    assert "Traceback" not in err
    assert not out.exists()
    assert not list(tmp_path.glob(".ptxopt-*"))


def test_existing_output_is_not_overwritten_on_error(tmp_path: Path) -> None:
    src = tmp_path / "bad.ptx"
    src.write_text(MALFORMED["unknown_opcode"][0])
    out = tmp_path / "out.ptx"
    out.write_text("previous contents\n")
    assert main(["opt", str(src), "-o", str(out)]) == 1
    assert out.read_text() == "previous contents\n"


def test_missing_input_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["opt", str(tmp_path / "nope.ptx")]) == 1
    assert "error: cannot read" in capsys.readouterr().err


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["opt"])
    assert exc.value.code == 2


def test_unknown_pass_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "k.ptx"
    src.write_text(GOOD)
    assert main(["opt", str(src), "-p", "no-such-pass"]) == 2
    assert "unknown pass 'no-such-pass'" in capsys.readouterr().err


def test_writes_output_file(tmp_path: Path) -> None:
    src = tmp_path / "k.ptx"
    src.write_text(GOOD)
    out = tmp_path / "o.ptx"
    assert main(["opt", str(src), "-o", str(out), "-p", "none", "--verify-each"]) == 0
    text = out.read_text()
    assert "add.s32 \t%r2, %r1, 1;" in text and text.startswith(".version 8.0")


def test_stdin_to_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(GOOD))
    assert main(["opt", "-", "-o", "-", "--time-passes"]) == 0
    cap = capsys.readouterr()
    assert "st.global.u32 \t[%rd2], %r2;" in cap.out
    assert "pass timing" in cap.err and "parse" in cap.err


def test_stdin_error_names_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(MALFORMED["wrong_arity"][0]))
    assert main(["opt", "-"]) == 1
    assert capsys.readouterr().err.startswith("<stdin>:12:2: error:")


def test_console_script_runs() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "ptxopt.cli", "--version"], capture_output=True, text=True
    )
    assert r.returncode == 0 and r.stdout.startswith("ptxopt ")


def test_unsupported_arch_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["opt", "example:reduce", "--arch", "sm_70", "-o", "-"]) == 2
    assert "unsupported --arch 'sm_70'" in capsys.readouterr().err


def test_shipped_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["opt", "example:reduce", "--arch", "sm_90", "-o", "-"]) == 0
    assert ".visible .entry block_reduce_sum(" in capsys.readouterr().out


def test_dump_ssa_and_after_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    guarded = GOOD.replace(
        "\tst.global.u32",
        "\tsetp.eq.u32 \t%p1, %r1, 0;\n\t@%p1 add.s32 \t%r2, %r2, 1;\n\tst.global.u32",
    ).replace(".reg .b32 %r<3>;", ".reg .b32 %r<3>;\n\t.reg .pred %p1;")
    src = tmp_path / "k.ptx"
    src.write_text(guarded)
    argv = ["opt", str(src), "-o", "-", "-p", "mark-uniform-branches", "--dump-ssa"]
    rc = main([*argv, "--dump-after", "all"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "*** IR after lifting ***" in err and "*** IR after mark-uniform-branches ***" in err
    assert "function k (1 blocks)" in err
    assert "mov.u32 %r1.3, %tid.x;" in err
    # the guarded add shows the value it keeps in lanes where %p1 is false
    assert "@%p1.5 add.s32 %r2.6, %r2.4, 1;    // line 15; keeps %r2.4" in err


def test_dump_of_unknown_pass_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["opt", "example:reduce", "--dump-after", "nope"]) == 2
    assert "--dump-after nope" in capsys.readouterr().err


def test_explain_prints_decisions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_iv_demotion import GRID

    src = tmp_path / "grid.ptx"
    src.write_text(GRID)
    assert main(["opt", str(src), "-p", "iv-demotion", "--explain", "-o", "-"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "===  ptxopt decisions  ==="
    assert err[1].startswith("iv-demotion: k: loop LOOP phiNode %") and len(err) >= 2
    assert main(["opt", str(src), "-p", "none", "--explain", "-o", "-"]) == 0
    assert "(no pass explained a decision)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags, ran",
    [
        ([], False),
        (["--stats"], True),
        (["--time-passes"], True),
        (["--explain"], True),
        (["--dump-after", "general-optimize"], True),
    ],
)
def test_report_passes_run_only_when_their_output_is_shown(
    tmp_path: Path, flags: list[str], ran: bool
) -> None:
    from ptxopt.transforms.convert_to_uniform_reg import PLANS

    src = tmp_path / "k.ptx"
    src.write_text(GOOD)
    PLANS.clear()
    passes = "convert-to-uniform-reg,general-optimize"
    assert main(["opt", str(src), "-o", str(tmp_path / "o.ptx"), "-p", passes, *flags]) == 0
    assert bool(PLANS) is ran


@pytest.mark.parametrize("flags", [[], ["--json"], ["--regfiles"], ["--emit", "ori"]])
def test_analyze_refuses_what_ptxas_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    """analyze validates as opt does: an unknown modifier is an error at its place."""
    src = tmp_path / "bad.ptx"
    src.write_text(GOOD.replace("add.s32", "add.f99", 1))
    line = next(i for i, ln in enumerate(src.read_text().splitlines(), 1) if "add.f99" in ln)
    assert main(["analyze", str(src), *flags]) == 1
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.startswith(f"{src}:{line}:") and "unknown modifier '.f99'" in cap.err


def test_the_analyze_api_refuses_what_ptxas_refuses() -> None:
    import ptxopt

    with pytest.raises(PtxError, match="unknown modifier"):
        ptxopt.analyze(GOOD.replace("add.s32", "add.f99", 1))
