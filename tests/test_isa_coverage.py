"""The ISA coverage table: every PTX ISA 9.0 instruction is parsed, validated and
printed back, the interpreter runs exactly the rows planned to run and refuses the
others naming the instruction and its line, and the generated files (the facts, the
document, the README paragraph) are current."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from helpers import PTXAS

from ptxopt.cli import main
from ptxopt.ptx.isa import ISA, kernel_for
from ptxopt.report import isa_coverage as cov

ROOT = Path(__file__).resolve().parent.parent
ROWS = cov.coverage()
FACTS = cov.load_facts()


def test_every_instruction_parses_and_prints() -> None:
    assert [r.name for r in ROWS if not r.parsed] == []
    assert [r.name for r in ROWS if not r.printed] == []
    assert len({r.name for r in ROWS}) == len(ROWS) == len(FACTS)


def test_interpreter_runs_what_it_should_and_refuses_the_rest_by_name() -> None:
    assert [r.name for r in ROWS if r.plan == "run" and not r.interpreted] == []
    for r in ROWS:
        if r.plan == "run":
            continue
        assert not r.interpreted, r.name
        # file:line:col: error: '<the instruction>' ...
        m = re.match(r"<input>:(\d+):\d+: error: '([^']+)'", r.refusal)
        assert m, r.refusal
        assert m.group(2).split(".")[0] == r.name.split(".")[0]


def test_edge_column_matches_the_edge_tables() -> None:
    sys.path.insert(0, str(ROOT / "tests" / "isa"))
    from tables import all_cases

    rows = {cov.row_of(n) for c in all_cases() for n in c.opcodes()} - {None}
    assert rows == {name for name, f in FACTS.items() if f["edge"]}


def test_document_and_readme_are_current() -> None:
    doc = (ROOT / "docs" / "isa-coverage.md").read_text()
    assert doc == cov.format_markdown(ROWS), "run python scripts/isa_coverage.py"
    readme = (ROOT / "README.md").read_text()
    assert cov.format_unsupported(ROWS) in readme, "run python scripts/isa_coverage.py"


def test_row_of_maps_full_names_to_rows() -> None:
    assert cov.row_of("add.cc.u32") == "add.cc"
    assert cov.row_of("addc.cc.u32") == "addc"
    assert cov.row_of("mad.lo.cc.u32") == "mad.cc"
    assert cov.row_of("rcp.approx.ftz.f64") == "rcp.approx.ftz.f64"
    assert cov.row_of("rcp.rn.f32") == "rcp"
    assert cov.row_of("mbarrier.try_wait.parity.b64") is None


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["isa", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"] == cov.totals(ROWS)
    assert len(data["instructions"]) == len(ISA)
    assert main(["isa"]) == 0
    assert "instructions: parsed" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("name", [i.name for i in ISA])
def test_ptxas_accepts_each_sample_at_its_recorded_version_and_target(name: str) -> None:
    if PTXAS is None:
        pytest.skip("ptxas is not on PATH (install the CUDA 13.0 toolkit to run oracle tests)")
    sys.path.insert(0, str(ROOT / "scripts"))
    import isa_coverage as script

    instr = next(i for i in ISA if i.name == name)
    fact = FACTS[name]
    assert script.ptxas_ok(
        script._kernel(instr.samples[0], fact["version"], fact["target"]), fact["target"]
    )
    assert script.printed_ok(instr)
    assert kernel_for(instr.samples[0])
