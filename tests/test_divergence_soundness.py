"""Soundness by execution: every register ``ptxopt analyze`` calls uniform must hold the
same bits in all active lanes of a warp each time it is written and each time an
instruction reads it, on every runnable corpus launch, at several launch shapes (partial
warps included)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

import ptxopt.sim as sim
from ptxopt.ptx.ast import PtxError as SimError
from ptxopt.report.analyze_cli import analyze_text

ROOT = pathlib.Path(__file__).parent / "corpus"
MANIFEST = json.loads((ROOT / "manifest.json").read_text())

if not hasattr(sim, "launch"):
    pytest.skip(
        "ptxopt.sim has no launch() yet: the SIMT interpreter is not ready",
        allow_module_level=True,
    )


def _cases() -> list[Any]:
    out = []
    for f in MANIFEST["files"]:
        for i, la in enumerate(f.get("launches", [])):
            if la.get("heavy"):
                continue
            out.append(pytest.param(f["path"], i, id=f"{f['path']}#{i}:{la['kernel'][:24]}"))
    return out


def _shapes(block: Any, producer: str) -> list[Any]:
    """The manifest's block shape plus a partial warp and a warp-and-a-bit (not for
    Triton, CUB and CUTLASS, whose kernels are compiled for one block size)."""
    if not isinstance(block, int):  # a 3-D block (as given)
        return [block]
    shapes = [block]
    if producer not in ("triton", "cub", "cutlass"):
        shapes += [min(block, 7), min(block, 37)]
    return list(dict.fromkeys(shapes))


@pytest.mark.parametrize("path,index", _cases())
def test_uniform_claims_hold(path: str, index: int) -> None:
    import sys

    sys.path.insert(0, str(ROOT))
    import references  # type: ignore[import-not-found]

    text = (ROOT / path).read_text()
    _, _, rep = analyze_text(text, path)
    claims = {
        fr["name"]: sorted(r for r, s in fr["registers"].items() if s == "uniform")
        for fr in rep["functions"]
    }
    la = MANIFEST_BY_PATH[path]["launches"][index]
    for block in _shapes(la["block"], MANIFEST_BY_PATH[path]["producer"]):
        shape = dict(la, block=block)
        args = references.make_args(shape)
        try:
            res = sim.launch(
                text,
                la["kernel"],
                la["grid"],
                block,
                args,
                la.get("shared_bytes", 0),
                uniform_claims=claims,
                filename=path,
            )
        except SimError as e:  # every runnable launch must run: no silent holes
            pytest.fail(f"interpreter cannot run {path} {la['kernel']} block={block}: {e}")
        assert not res.violations, res.violations[:5]


MANIFEST_BY_PATH = {f["path"]: f for f in MANIFEST["files"]}
