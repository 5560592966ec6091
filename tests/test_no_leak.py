"""A module optimized and dropped is freed: nothing the pipeline, its analyses or its
report passes keep between runs (caches, bindings) holds on to a module's IR.  A long-
lived process -- the Triton hook in the user's program, a server worker -- would
otherwise grow with every kernel, and every garbage collection would walk all of it."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

import ptxopt
from ptxopt.driver import optimize
from ptxopt.pipeline import default_pipeline

CORPUS = Path(__file__).parent / "corpus"
PROBE = (Path(__file__).parent / "ori" / "capability_probe.ptx").read_text()


@pytest.mark.parametrize("reports", [False, True])
@pytest.mark.parametrize("rel", ["cuda/control.O3.sm90.ptx", "cub/scan.sm80.ptx"])
def test_an_optimized_module_is_freed(rel: str, reports: bool) -> None:
    text = (CORPUS / rel).read_text()
    res = optimize(text, rel, default_pipeline(), reports=reports)
    assert res.module.funcs
    mod = weakref.ref(res.module)
    funcs = [weakref.ref(f) for f in res.module.funcs]
    del res
    if reports:
        # the report passes keep the plans of the last module they planned: another
        # module's plans replace them
        optimize(PROBE, "other.ptx", ["convert-to-uniform-reg", "insert-pseudo-use-def-conv-ur"])
    gc.collect()
    assert mod() is None
    assert all(f() is None for f in funcs)


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
