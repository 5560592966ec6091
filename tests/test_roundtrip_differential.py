"""The front end's round trip preserves meaning: every runnable corpus kernel runs
bit-identically before and after parse -> lift -> SSA -> out of SSA -> print, in
the SIMT interpreter, on several input seeds."""

from __future__ import annotations

import copy
import importlib.util
import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import CORPUS, corpus_param

from ptxopt.driver import optimize
from ptxopt.sim import differential

_spec = importlib.util.spec_from_file_location("corpus_references", CORPUS / "references.py")
assert _spec is not None and _spec.loader is not None
references = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(references)

MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
FILES = [
    corpus_param(CORPUS / f["path"], f, id=f["path"])
    for f in MANIFEST["files"]
    if f.get("launches")
]


def _seeded(launch: dict[str, Any], seed: int) -> dict[str, Any]:
    """The launch with every random array's seed shifted by ``seed``."""
    out = copy.deepcopy(launch)
    for a in out["args"]:
        if a.get("kind") == "array" and "seed" in a:
            a["seed"] = a["seed"] + 1000 * seed
    return out


def _args_maker(launch: dict[str, Any]) -> Callable[[int], list[Any]]:
    def make_args(seed: int) -> list[Any]:
        return list(references.make_args(_seeded(launch, seed)))

    return make_args


@pytest.mark.parametrize("entry", FILES)
def test_roundtrip_runs_identically(entry: dict[str, Any]) -> None:
    path = CORPUS / entry["path"]
    original = path.read_text()
    lowered = optimize(original, str(path), [], release=True).text
    for launch in entry["launches"]:
        res = differential(
            original,
            lowered,
            launch["kernel"],
            launch["grid"],
            launch["block"],
            _args_maker(launch),
            trials=2,
            shared_bytes=launch.get("shared_bytes", 0),
        )
        assert res.ok, f"{entry['path']} {launch['kernel']}: {res}"
        assert res.both_failed == 0, f"{entry['path']} {launch['kernel']}: {res.message}"
