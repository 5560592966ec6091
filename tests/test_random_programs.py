"""Random kernels survive SSA and its destruction.

Kernels come from ``fuzz/kernels.py`` (structured and irreducible control flow,
divergent loops, guarded writes, carry chains, 8-64-bit integers, floats, shared
memory, warp operations, atomics, calls), seeds and launch shapes from hypothesis.
Each kernel is lifted, copy-propagated (which makes SSA values of one register
interfere: swaps, lost copies, copies feeding branches), lowered, and run against the
original in the SIMT interpreter on edge-biased inputs; a sample also goes through
ptxas.  Hypothesis searches new seeds on every run (derandomized when ``CI`` is set);
kernels that once failed are kept in ``tests/fuzz_cases`` and replayed by
``test_fuzz_kernels.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import propagate_copies, ptxas_check
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.kernelgen import SHAPES, generate_kernel, make_args
from ptxopt.ir.lift import lift_module
from ptxopt.ir.lower import print_ir_module
from ptxopt.ir.verify import verify_function
from ptxopt.ptx.parser import parse
from ptxopt.sim import differential


def _copy_propagated(text: str) -> tuple[str, int]:
    mod = lift_module(parse(text, "random.ptx"))
    n = 0
    for fn in mod.funcs:
        n += propagate_copies(fn)
        verify_function(fn)
    return print_ir_module(mod), n


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), shape=st.sampled_from(SHAPES), data=st.integers(0, 99))
def test_random_kernel_survives_copy_propagation_and_out_of_ssa(
    seed: int, shape: tuple[Any, Any], data: int
) -> None:
    k = generate_kernel(seed)
    lowered, _ = _copy_propagated(k.text)

    def make(trial: int, grid: Any, block: Any) -> list[Any]:
        return make_args(k.layout, data * 100 + trial, grid, block)

    res = differential(k.text, lowered, "fk", [shape], None, make, trials=2)
    assert res.ok and res.both_failed == 0, f"seed {seed}: {res.message}\n{lowered}"


def test_copy_propagation_creates_interference() -> None:
    """The generated kernels give copy propagation something to do."""
    assert sum(_copy_propagated(generate_kernel(s).text)[1] for s in range(10)) > 10


def test_random_kernels_sample_passes_ptxas(tmp_path: Path) -> None:
    """A fixed handful of generated kernels, after copy propagation, through ptxas."""
    for seed in range(5):
        lowered, _ = _copy_propagated(generate_kernel(seed).text)
        ptxas_check(lowered, "sm_80", tmp_path, f"r{seed}.ptx")
