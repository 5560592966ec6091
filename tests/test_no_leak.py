"""A module optimized and dropped is freed: nothing the pipeline, its analyses or its
report passes keep between runs (caches, bindings) holds on to a module's IR.  A long-
lived process -- the Triton hook in the user's program, a server worker -- would
otherwise grow with every kernel, and every garbage collection would walk all of it."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import pytest

import ptxopt
from ptxopt.driver import optimize
from ptxopt.ir.core import Func, IRModule
from ptxopt.pipeline import default_pipeline

CORPUS = Path(__file__).parent / "corpus"
PROBE = (Path(__file__).parent / "ori" / "capability_probe.ptx").read_text()


@pytest.mark.parametrize("reports", [False, True])
@pytest.mark.parametrize("rel", ["cuda/control.O3.sm90.ptx", "cub/scan.sm80.ptx"])
def test_an_optimized_module_is_freed(rel: str, reports: bool) -> None:
    text = (CORPUS / rel).read_text()
    gc.collect()
    modules, funcs = live(IRModule), live(Func)
    res = optimize(text, rel, default_pipeline(), reports=reports)
    assert res.module.funcs
    assert (live(IRModule), live(Func)) == (modules + 1, funcs + len(res.module.funcs))
    del res
    if reports:
        # the report passes keep the plans of the last module they planned: another
        # module's plans replace them
        optimize(PROBE, "other.ptx", ["convert-to-uniform-reg", "insert-pseudo-use-def-conv-ur"])
    gc.collect()
    assert (live(IRModule), live(Func)) == (modules, funcs)


def live(cls: type) -> int:
    """How many objects of ``cls`` exist (counted, not referred to: the compiled IR
    classes take no weak references)."""
    return sum(1 for o in gc.get_objects() if type(o) is cls)


def test_the_api_leaves_nothing_behind() -> None:
    text = (CORPUS / "cub/scan.sm80.ptx").read_text()
    ptxopt.optimize(text)  # warm-up: caches filled once are not growth
    gc.collect()
    before = len(gc.get_objects())
    held = optimize(text, "scan", default_pipeline(), reports=False)
    one_module = len(gc.get_objects()) - before
    del held
    for _ in range(3):
        ptxopt.optimize(text)
    gc.collect()
    # three more runs leave less than a tenth of one module's objects behind
    assert one_module > 10_000
    assert len(gc.get_objects()) - before < one_module // 10


@pytest.mark.parametrize("rel", ["cuda/control.O3.sm90.ptx", "cub/scan.sm80.ptx"])
def test_a_released_round_trip_leaves_no_cycles(rel: str) -> None:
    """``release=True`` (the API, the Triton hook) takes the IR apart before the
    collector resumes: reference counting alone frees a ``-p none`` round trip, so no
    collection has to walk the module afterwards."""
    text = (CORPUS / rel).read_text()
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        res = optimize(text, rel, None, release=True)
        assert res.text and not res.module.funcs
        del res
        gc.set_debug(gc.DEBUG_SAVEALL)
        found = gc.collect()
        names = {type(o).__name__ for o in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert found == 0, sorted(names)


@pytest.mark.parametrize("passes", ["none", "default"])
def test_the_dropin_releases_its_ir(passes: str) -> None:
    """The drop-in's work (in a server worker, or in process) releases its IR, so the
    collection a worker runs after each request has little to free: nothing after a
    round trip; after the default pipeline only what its passes cut out of the IR
    (removed instructions and their values), under a fifth of an unreleased run's."""
    from ptxopt.dropin import optimize_text
    from ptxopt.pipeline import parse_pipeline

    text = (CORPUS / "cub/scan.sm80.ptx").read_text()
    steps = parse_pipeline(passes)

    def garbage(run: Callable[[], object]) -> int:
        run()  # warm-up: caches filled once
        gc.collect()
        gc.disable()
        try:
            run()
            return gc.collect()
        finally:
            gc.enable()

    kept = garbage(lambda: optimize(text, "scan", steps, arch="sm_80", reports=False))
    left = garbage(lambda: optimize_text(text, "scan", "sm_80", passes, []))
    assert kept > 1000
    assert left == 0 if passes == "none" else left * 5 < kept, (left, kept)


def test_without_release_the_round_trip_holds_cycles() -> None:
    """The other side of the test above: the IR does form cycles, so a release that
    did nothing would be seen."""
    text = (CORPUS / "cub/scan.sm80.ptx").read_text()
    gc.collect()
    gc.disable()
    try:
        res = optimize(text, "scan", None)
        del res
        found = gc.collect()
    finally:
        gc.enable()
    assert found > 1000
