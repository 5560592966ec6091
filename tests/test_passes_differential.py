"""Every registered pass is checked on the corpus, and every case asserts something:

* a pass that changes a runnable file must keep its behaviour: the output is accepted
  by ptxas and runs bit-identically to the input in the SIMT interpreter (which also
  rejects a ``bra.uni`` that turns out divergent), on at least one launch;
* a pass that leaves a file unchanged must say so (it reports no changed function),
  and where the pass has a known effect (:data:`EXPECT`), the effect is checked;
* on files the interpreter cannot run (tensor cores), a changed output goes through
  ptxas.

ptxas takes 5-13 s on each heavy file (the 10,000-line and larger production kernels):
there, each pass's output is run in the interpreter, and ptxas checks one output per
file: every pass run as one pipeline
(``test_heavy_file_passes_together_are_accepted_by_ptxas``).  Set
``PTXOPT_PTXAS_EVERY_PASS=1`` to assemble every pass's output of heavy files too.

New passes are picked up automatically."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, corpus_param, is_heavy, ptxas_check

from ptxopt.analysis.divergence import Divergence, bind_module, is_conditional_branch
from ptxopt.analysis.manager import AnalysisManager
from ptxopt.driver import OptResult, optimize
from ptxopt.ir.lift import lift_module
from ptxopt.pipeline import available_passes
from ptxopt.ptx.parser import no_gc, parse
from ptxopt.sim import differential

_spec = importlib.util.spec_from_file_location("corpus_refs_passes", CORPUS / "references.py")
assert _spec is not None and _spec.loader is not None
references = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(references)

MANIFEST = json.loads((CORPUS / "manifest.json").read_text())["files"]
RUNNABLE = [f for f in MANIFEST if f["launches"]]
NOT_RUNNABLE = [f for f in MANIFEST if not f["launches"]]
# heavy files are marked slow and run where CI is set (helpers.corpus_param)
RUNNABLE_PARAMS = [corpus_param(CORPUS / f["path"], f, id=f["path"]) for f in RUNNABLE]
NOT_RUNNABLE_PARAMS = [corpus_param(CORPUS / f["path"], f, id=f["path"]) for f in NOT_RUNNABLE]
PASSES = sorted(available_passes())


def _uniform_unmarked_branches(text: str, path: str) -> int:
    """Conditional ``bra`` without ``.uni`` whose guard the analysis calls uniform."""
    with no_gc():  # (the IR is dismantled before the collector resumes, as optimize does)
        mod = lift_module(parse(text, path))
        bind_module(mod)
        am = AnalysisManager()
        n = 0
        for fn in mod.funcs:
            div = am.get(Divergence, fn)
            for b in fn.blocks:
                t = b.terminator
                if not is_conditional_branch(t) or t is None or t.opcode != "bra":
                    continue
                if ".uni" not in t.ast.mods and t.pred is not None and div.is_uniform(t.pred):
                    n += 1
        mod.release()
    return n


def _expect_marks(text: str, path: str, base: str, res: OptResult) -> None:
    added = len(re.findall(r"\bbra\.uni\b", res.text)) - len(re.findall(r"\bbra\.uni\b", base))
    assert added == _uniform_unmarked_branches(text, path)


def _expect_nothing(text: str, path: str, base: str, res: OptResult) -> None:
    assert res.text == base, "an analysis-only pass changed the code"


# What each pass must have done, checked on every file (passes not listed: behaviour only)
EXPECT: dict[str, Callable[[str, str, str, OptResult], None]] = {
    "mark-uniform-branches": _expect_marks,
    "propagate-varying-first": _expect_nothing,
    "analyze-uniforms-for-speculation": _expect_nothing,
    "propagate-varying-second": _expect_nothing,
    # the register-file model of phases 74/86 reports; it never rewrites PTX
    "convert-to-uniform-reg": _expect_nothing,
    "insert-pseudo-use-def-conv-ur": _expect_nothing,
}


def _maker(launch: dict[str, Any]) -> Callable[[int], list[Any]]:
    def make(seed: int) -> list[Any]:
        ln = copy.deepcopy(launch)
        for a in ln["args"]:
            if a.get("kind") == "array" and "seed" in a:
                a["seed"] += 1000 * seed
        return list(references.make_args(ln))

    return make


# The input lifted and lowered with no pass, once per file (and per test process).
_BASE: dict[str, tuple[str, str]] = {}


def _base(entry: dict[str, Any]) -> tuple[str, str]:
    path = CORPUS / entry["path"]
    if entry["path"] not in _BASE:
        text = path.read_text()
        _BASE[entry["path"]] = (text, optimize(text, str(path), [], release=True).text)
    return _BASE[entry["path"]]


def _run(entry: dict[str, Any], name: str) -> tuple[str, str, str, OptResult]:
    path = CORPUS / entry["path"]
    text, base = _base(entry)
    res = optimize(text, str(path), [name], verify_each=True, release=True)
    if res.text == base:
        assert res.report.changed.get(name, 0) == 0, f"{name} reports a change it did not make"
    if name in EXPECT:
        EXPECT[name](text, str(path), base, res)
    return text, str(path), base, res


# The input's own runs, shared by every pass's case of a file (one per launch).
_REFERENCE: dict[tuple[str, int], dict[Any, Any]] = {}


@pytest.mark.parametrize("name", PASSES)
@pytest.mark.parametrize("entry", RUNNABLE_PARAMS)
def test_pass_preserves_behaviour(name: str, entry: dict[str, Any], tmp_path: Path) -> None:
    text, _, base, res = _run(entry, name)
    if res.text == base:
        return  # identical text: nothing to execute; the report and EXPECT were checked
    if EVERY_PASS_PTXAS or not is_heavy(CORPUS / entry["path"]):
        ptxas_check(res.text, entry["target"], tmp_path)
    _same_behaviour(entry, text, res.text, name)


def _same_behaviour(entry: dict[str, Any], text: str, out: str, what: str) -> None:
    for k, launch in enumerate(entry["launches"]):
        diff = differential(
            text,
            out,
            launch["kernel"],
            launch["grid"],
            launch["block"],
            _maker(launch),
            trials=1,
            shared_bytes=launch.get("shared_bytes", 0),
            reference=_REFERENCE.setdefault((entry["path"], k), {}),
        )
        assert diff.ok and diff.both_failed == 0 and diff.trials == 1, (
            f"{what} on {entry['path']}: {diff.message}"
        )


EVERY_PASS_PTXAS = bool(os.environ.get("PTXOPT_PTXAS_EVERY_PASS"))
HEAVY_RUNNABLE = [e for e in RUNNABLE if is_heavy(CORPUS / e["path"])]


@pytest.mark.slow
@pytest.mark.parametrize("entry", HEAVY_RUNNABLE, ids=[e["path"] for e in HEAVY_RUNNABLE])
def test_heavy_file_passes_together_are_accepted_by_ptxas(
    entry: dict[str, Any], tmp_path: Path
) -> None:
    """Every pass that may change code, run as one pipeline on a heavy file: ptxas
    accepts the output and it runs like the input (each pass alone is run and verified
    above; the analysis-only passes are checked there to change nothing)."""
    if not os.environ.get("CI"):
        pytest.skip("heavy corpus file; runs in CI")
    text, base = _base(entry)
    path = str(CORPUS / entry["path"])
    passes = [n for n in PASSES if EXPECT.get(n) is not _expect_nothing]
    out = optimize(text, path, passes, release=True).text
    assert out != base
    ptxas_check(out, entry["target"], tmp_path)
    _same_behaviour(entry, text, out, "every pass")


@pytest.mark.parametrize("name", PASSES)
@pytest.mark.parametrize("entry", NOT_RUNNABLE_PARAMS)
def test_pass_output_is_accepted_by_ptxas(name: str, entry: dict[str, Any], tmp_path: Path) -> None:
    """Files with no launches (tensor cores, TMA) cannot run in the interpreter;
    ptxas still checks every pass's output (runnable files are covered above)."""
    _, _, base, res = _run(entry, name)
    if res.text != base:
        ptxas_check(res.text, entry["target"], tmp_path)


def test_every_pass_changes_something_somewhere() -> None:
    """A pass that never changes any corpus file is not exercised by the cases above:
    each pass that may change code must change at least one file."""
    idle = []
    for name in PASSES:
        if EXPECT.get(name) is _expect_nothing or name in EXERCISED_ELSEWHERE:
            continue
        light = [e for e in RUNNABLE if not is_heavy(CORPUS / e["path"])]
        if not any(_run(e, name)[3].report.changed.get(name, 0) for e in light):
            idle.append(name)
    assert not idle, f"{idle} change no corpus file: add a case that exercises them"


# Passes that rightly change no corpus file, and where they are exercised instead.
EXERCISED_ELSEWHERE = {
    # no 64-bit counter of the corpus is provably narrow at the default level
    # (docs/iv-demotion.md); tests/test_iv_demotion.py runs demotable loops at every
    # level, and the fuzz generator's wide-iv-loop feature makes them at random
    "iv-demotion": "tests/test_iv_demotion.py",
}
