"""Helpers shared by the tests: the corpus and the ptxas oracle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ptxopt.ir.core import Func, Inst, Value

TESTS = Path(__file__).parent
CORPUS = TESTS / "corpus"


def corpus_files() -> list[Path]:
    return sorted(CORPUS.glob("*/*.ptx"))


# Corpus files this large (the production kernels: CUTLASS, the unrolled Triton ones)
# take ptxopt and ptxas tens of seconds each; their tests are marked slow and run
# only where CI is set, so the local suite stays within minutes.
HEAVY_LINES = 10_000
HEAVY_BYTES = 1_000_000


def is_heavy(path: Path) -> bool:
    if path.stat().st_size > HEAVY_BYTES:
        return True
    with open(path, "rb") as f:
        return sum(1 for _ in f) > HEAVY_LINES


def corpus_param(path: Path, *values: object, id: str | None = None) -> object:
    """``pytest.param(*values)`` for a test on corpus file ``path``, marked slow (and
    skipped unless CI is set) when the file is heavy."""
    marks = []
    if is_heavy(path):
        marks = [
            pytest.mark.slow,
            pytest.mark.skipif(not os.environ.get("CI"), reason="heavy corpus file; runs in CI"),
        ]
    return pytest.param(*values, marks=marks, id=id)


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


def propagate_copies(fn: Func) -> int:
    """Copy propagation for tests: forward every unguarded register-to-register
    ``mov`` to its uses and drop it, creating the interferences (swap, lost copy)
    that leaving SSA must handle."""
    n = 0
    for b in fn.blocks:
        keep: list[Inst] = []
        for inst in b.insts:
            src = inst.uses[0] if inst.uses else None
            if (
                inst.opcode == "mov"
                and inst.ast.pred is None
                and len(inst.defs) == 1
                and isinstance(src, Value)
                and src.kind in ("inst", "phi")
                and src.type == inst.defs[0].type
            ):
                replace_uses(fn, inst.defs[0], src)
                n += 1
                continue
            keep.append(inst)
        b.insts = keep
    return n


def replace_uses(fn: Func, old: Value, new: Value) -> None:
    for b in fn.blocks:
        for phi in b.phis:
            phi.incoming = [new if v is old else v for v in phi.incoming]
        for inst in b.insts:
            inst.uses = [new if v is old else v for v in inst.uses]
            if inst.pred is old:
                inst.pred = new
            if inst.olds:
                inst.olds = [new if v is old else v for v in inst.olds]
