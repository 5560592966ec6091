"""optimize-uniform-atomic (spec 02, phase 44): atomics on a warp-uniform address become
one atomic per warp, and every lane still receives the value it would have seen with
lanes applied in lane order.  Checked by execution, bit for bit, on launch shapes with
partial warps and with a data-dependent (divergent) set of lanes reaching the atomics."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import ptxas_check

from ptxopt.driver import optimize
from ptxopt.sim import differential, launch

PASS = "optimize-uniform-atomic"
SRC = (Path(__file__).parent / "ptx" / "uniform" / "atomics_agg.ptx").read_text()
SHAPES = [(1, 32), (1, 7), (3, 45), (2, 96), (1, 1), (5, 33)]


def _args(seed: int, grid: Any, block: Any) -> list[Any]:
    rng = np.random.default_rng(seed)
    g = grid if isinstance(grid, int) else grid[0]
    b = block if isinstance(block, int) else block[0]
    ctr = rng.integers(0, 2**32, size=32, dtype=np.uint64).astype(np.uint32)
    ctr[1], ctr[5], ctr[10] = 0x7FFFFFFF, 0xFFFFFFFF, 5
    inp = rng.integers(0, 2**32, size=g * b, dtype=np.uint64).astype(np.uint32)
    return [ctr, np.zeros(g * b, dtype=np.uint32), inp, int(rng.integers(0, 1000))]


def _opt(arch: str | None = None, **knobs: object) -> Any:
    return optimize(SRC, "agg.ptx", [PASS], verify_each=True, arch=arch, knobs=knobs)


@pytest.mark.parametrize("arch", ["sm_80", "sm_75", "sm_90"])
def test_aggregated_atomics_are_bit_identical(arch: str, tmp_path: Path) -> None:
    res = _opt(arch)
    stats = res.report.stats[PASS]
    # redux only where the target has it; the shuffle scan everywhere else
    assert stats["aggregated (redux.sync)"] == (2 if arch != "sm_75" else 0)
    assert stats["aggregated (uniform operand)"] == 5
    assert stats["skipped: cas/exch/dec"] == 1 and stats["skipped: varying address"] == 1
    text = res.text
    assert ("redux.sync" in text) == (arch != "sm_75")
    diff = differential(SRC, text, "agg", SHAPES, None, _args, trials=2)
    assert diff.ok and diff.both_failed == 0, diff.message
    ptxas_check(text.replace(".target sm_80", f".target {arch}"), arch, tmp_path)


def test_one_atomic_per_warp() -> None:
    text = _opt().text
    a = launch(SRC, "agg", 2, 64, _args(0, 2, 64))
    b = launch(text, "agg", 2, 64, _args(0, 2, 64))
    # 16 aggregated atomics: at most one lane-op per warp each; cas and the
    # varying-address atomic stay per lane
    lanes = a.atomics // 18
    assert b.atomics <= 16 * 4 + 2 * lanes
    assert b.atomics < a.atomics / 5


def test_a_planted_prefix_bug_is_caught() -> None:
    text = _opt().text
    bad = re.sub(r"\bsub\.s32\b", "add.s32", text, count=1)
    assert bad != text
    diff = differential(SRC, bad, "agg", SHAPES[:2], None, _args, trials=1)
    assert not diff.ok


def test_mode_0_is_off() -> None:
    res = _opt(OptimizeUniformAtomicMode=0)
    assert res.report.changed.get(PASS, 0) == 0
    assert "activemask" not in res.text


FLOAT = """.version 8.0
.target sm_80
.address_size 64
.visible .entry f(.param .u64 f_p, .param .u64 f_o)
{
  .reg .b32 %r<3>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [f_p];
  ld.param.u64 %rd2, [f_o];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  cvt.rn.f32.u32 %f1, %r1;
  atom.global.add.f32 %f2, [%rd1], %f1;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.f32 [%rd4], %f2;
  ret;
}
"""


def test_float_add_needs_mode_2() -> None:
    plain = optimize(FLOAT, "f.ptx", [PASS])
    assert plain.report.stats[PASS]["skipped: float"] == 1 and "activemask" not in plain.text
    res = optimize(FLOAT, "f.ptx", [PASS], knobs={"OptimizeUniformAtomicMode": 2})
    assert res.report.stats[PASS]["aggregated (shuffle scan)"] == 1
    # small integers: every partial sum is exact, so the results agree bit for bit
    diff = differential(
        FLOAT,
        res.text,
        "f",
        [(1, 32), (2, 40)],
        None,
        lambda s, g, b: [np.zeros(1, np.float32), np.zeros(g * b, np.float32)],
        trials=1,
    )
    assert diff.ok, diff.message


def test_guarded_and_ordered_atomics_are_left_alone() -> None:
    src = SRC.replace(
        "atom.global.add.u32 %r7, [%rd1], %r5;", "atom.acq_rel.gpu.global.add.u32 %r7, [%rd1], %r5;"
    ).replace("red.global.or.b32 [%rd1+68], %r5;", "@%p1 red.global.or.b32 [%rd1+68], %r5;")
    res = optimize(src, "agg.ptx", [PASS])
    stats = res.report.stats[PASS]
    assert stats["skipped: ordering semantics"] == 1 and stats["skipped: guarded"] == 1
    assert "atom.acq_rel.gpu.global.add.u32" in res.text


def test_o0_wrappers_whose_results_no_caller_reads() -> None:
    """nvcc -O0 calls atomicAdd/atomicMin wrappers that return the old value; when no
    caller reads it (dead-return analysis across the module) the wrapper's atomic is
    aggregated without per-lane results: redux.sync / one red per warp."""
    corpus = Path(__file__).parent / "corpus" / "cuda" / "atomics.O0.sm90.ptx"
    res = optimize(corpus.read_text(), str(corpus), [PASS], verify_each=True)
    stats = res.report.stats[PASS]
    assert stats["aggregated (redux.sync)"] == 1 and stats["aggregated (uniform operand)"] == 1
    assert "redux.sync.min.s32" in res.text and re.search(r"@%ua\d+ red\.add\.u32", res.text)
    assert "shfl.sync" not in res.text


def test_explain_gives_each_atomic_its_line_and_outcome() -> None:
    src = SRC.replace("red.global.or.b32 [%rd1+68], %r5;", "@%p1 red.global.or.b32 [%rd1+68], %r5;")
    res = optimize(src, "agg.ptx", [PASS])
    notes = res.report.notes[PASS]
    stats = res.report.stats[PASS]
    assert len(notes) == sum(stats.values())
    line = next(i + 1 for i, t in enumerate(src.splitlines()) if "@%p1 red.global.or" in t)
    lines = [n.split(": ", 1)[1] for n in notes]
    assert f"line {line}: red.global.or.b32: skipped: guarded" in lines
    assert sum("aggregated (" in n for n in notes) == sum(
        v for k, v in stats.items() if k.startswith("aggregated")
    )
