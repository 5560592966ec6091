"""Every registered pass is checked by execution: for each runnable corpus file the
output of ``-p PASS`` must be accepted by ptxas and run bit-identically to the input
in the SIMT interpreter (which also rejects a ``bra.uni`` that turns out divergent).
New passes are picked up automatically."""

from __future__ import annotations

import copy
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, ptxas_check

from ptxopt.driver import optimize
from ptxopt.pipeline import available_passes
from ptxopt.sim import differential

_spec = importlib.util.spec_from_file_location("corpus_refs_passes", CORPUS / "references.py")
assert _spec is not None and _spec.loader is not None
references = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(references)

FILES = [f for f in json.loads((CORPUS / "manifest.json").read_text())["files"] if f["launches"]]
PASSES = sorted(available_passes())


def _maker(launch: dict[str, Any]) -> Callable[[int], list[Any]]:
    def make(seed: int) -> list[Any]:
        ln = copy.deepcopy(launch)
        for a in ln["args"]:
            if a.get("kind") == "array" and "seed" in a:
                a["seed"] += 1000 * seed
        return list(references.make_args(ln))

    return make


@pytest.mark.parametrize("name", PASSES)
@pytest.mark.parametrize("entry", FILES, ids=[f["path"] for f in FILES])
def test_pass_preserves_behaviour(name: str, entry: dict[str, Any], tmp_path: Path) -> None:
    path = CORPUS / entry["path"]
    text = path.read_text()
    baseline = optimize(text, str(path), []).text
    result = optimize(text, str(path), [name], verify_each=True)
    if result.text == baseline:
        return  # the pass found nothing to change here
    ptxas_check(result.text, entry["target"], tmp_path)
    for launch in entry["launches"]:
        res = differential(
            text,
            result.text,
            launch["kernel"],
            launch["grid"],
            launch["block"],
            _maker(launch),
            trials=1,
            shared_bytes=launch.get("shared_bytes", 0),
        )
        assert res.ok and res.both_failed == 0, f"{name} on {entry['path']}: {res.message}"


ALL_FILES = json.loads((CORPUS / "manifest.json").read_text())["files"]


@pytest.mark.parametrize("name", PASSES)
@pytest.mark.parametrize("entry", ALL_FILES, ids=[f["path"] for f in ALL_FILES])
def test_pass_output_is_accepted_by_ptxas(name: str, entry: dict[str, Any], tmp_path: Path) -> None:
    """Tensor-core files cannot run in the interpreter; ptxas still checks them."""
    import os

    if entry["launches"]:
        return  # covered, with execution, above
    if entry["lines"] > 10_000 and not os.environ.get("CI"):
        pytest.skip("large file: ptxas takes long; checked in CI")
    path = CORPUS / entry["path"]
    text = path.read_text()
    result = optimize(text, str(path), [name], verify_each=True)
    if result.text != optimize(text, str(path), []).text:
        ptxas_check(result.text, entry["target"], tmp_path)
