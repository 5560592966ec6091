"""Helpers shared by the tests: the corpus and the ptxas oracle."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
CORPUS = TESTS / "corpus"


def corpus_files() -> list[Path]:
    return sorted(CORPUS.glob("*/*.ptx"))


def corpus_manifest() -> dict:
    with open(CORPUS / "manifest.json") as f:
        return json.load(f)


PTXAS = shutil.which("ptxas")


def ptxas_check(text: str, arch: str, tmp_path: Path, name: str = "out.ptx") -> None:
    """Assemble ``text`` with ptxas for ``arch``; fail with ptxas's message if rejected."""
    if PTXAS is None:
        pytest.skip("ptxas is not on PATH (install the CUDA 13.0 toolkit to run oracle tests)")
    src = tmp_path / name
    src.write_text(text)
    r = subprocess.run(
        [PTXAS, f"-arch={arch}", str(src), "-o", str(tmp_path / (name + ".cubin"))],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, f"ptxas rejected the output for {arch}:\n{r.stderr}"
