"""Lane bits: warp-index arithmetic is uniform when the block shape says which bits of
``%tid.x`` differ within a warp, and a ``shfl.sync.idx`` broadcast is uniform.  Every
verdict is checked by execution (the interpreter's uniform-claims checker), and the
shapes where the rule would be wrong are shown to be refuted by execution."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ptxopt.analysis.lane_bits import block_shape, special_mask
from ptxopt.report.analyze_cli import analyze_text
from ptxopt.sim import launch

WARP_ID = (Path(__file__).parent / "divergence" / "warp_id.ptx").read_text()


def _verdicts(text: str) -> dict[str, str]:
    _mod, _md, rep = analyze_text(text, "<input>")
    regs: dict[str, str] = rep["functions"][0]["registers"]
    return regs


def test_warp_index_verdicts_follow_the_comments() -> None:
    regs = _verdicts(WARP_ID)
    for line in WARP_ID.splitlines():
        if "//" not in line or "%" not in line.split("//")[0]:
            continue
        code, note = line.split("//", 1)
        dest = code.split()[1].rstrip(",")
        want = "uniform" if note.strip().startswith("uniform") else None
        want = want or ("varying" if "varying" in note.split(":")[0] else None)
        if note.strip().startswith(("0 on", "broadcast", "clamp", "uniform source")):
            want = "uniform"
        if want is not None:
            assert regs[dest] == want, (dest, note)


@pytest.mark.parametrize("block", [32, 37, 128, 100])
def test_uniform_verdicts_hold_by_execution_on_one_dimensional_blocks(block: int) -> None:
    regs = _verdicts(WARP_ID)
    uniform = sorted(r for r, s in regs.items() if s == "uniform")
    assert {"%r2", "%r3", "%r4", "%r5", "%r8", "%r14", "%r15", "%r19", "%rd4"} <= set(uniform)
    out = np.zeros(256, np.uint32)
    res = launch(WARP_ID, "warp_id", 2, block, [out, 3], uniform_claims={"warp_id": uniform})
    assert not res.violations, [str(v) for v in res.violations[:3]]


TWO_D = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
DIRECTIVE
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %tid.y;
	shr.u32 %r3, %r1, 5;
	mov.u32 %r4, %ntid.x;
	mad.lo.s32 %r5, %r2, %r4, %r1;
	add.s32 %r6, %r3, %r2;
	mul.wide.u32 %rd2, %r5, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r6;
	ret;
}
"""


def test_exact_width_multiple_of_32_keeps_each_warp_in_one_row() -> None:
    text = TWO_D.replace("DIRECTIVE", ".reqntid 64, 2, 1")
    regs = _verdicts(text)
    assert regs["%r2"] == regs["%r3"] == regs["%r6"] == "uniform"
    assert regs["%r1"] == regs["%r5"] == "varying"
    out = np.zeros(128, np.uint32)
    claims = {"k": sorted(r for r, s in regs.items() if s == "uniform")}
    res = launch(text, "k", 1, (64, 2), [out], uniform_claims=claims)
    assert not res.violations


def test_an_upper_bound_on_a_two_dimensional_block_proves_nothing() -> None:
    """``.maxntid 64, 2, 1`` admits a 48x2 block, whose second warp spans two rows:
    %tid.x >> 5 and %tid.y then differ within it, and execution refutes the claim."""
    text = TWO_D.replace("DIRECTIVE", ".maxntid 64, 2, 1")
    regs = _verdicts(text)
    assert regs["%r2"] == regs["%r3"] == regs["%r6"] == "varying"
    out = np.zeros(128, np.uint32)
    res = launch(text, "k", 1, (48, 2), [out], uniform_claims={"k": ["%r3", "%r2"]})
    assert {v.register for v in res.violations} == {"%r2", "%r3"}


def test_without_a_directive_nothing_changes() -> None:
    text = TWO_D.replace("DIRECTIVE", "")
    regs = _verdicts(text)
    assert regs["%r3"] == regs["%r2"] == "varying"


def test_block_shape_and_special_masks() -> None:
    assert block_shape([".maxntid 256, 1, 1"]).one_dimensional
    assert block_shape([".reqntid 256"]).one_dimensional
    assert not block_shape([".maxntid 64, 2, 1"]).warps_split_tid_x
    assert block_shape([".reqntid 96, 4, 1"]).rows_hold_warps
    assert not block_shape([".reqntid 48, 4, 1"]).warps_split_tid_x
    assert not block_shape([".maxntid 96, 4, 1"]).warps_split_tid_x
    one_d = block_shape([".maxntid 128, 1, 1"])
    assert special_mask("%tid.x", one_d) == 31
    assert special_mask("%tid.y", one_d) == 0
    assert special_mask("%laneid", block_shape([])) == 31
    assert special_mask("%tid.x", block_shape([])) is None


def test_negative_shift_immediates_shift_by_at_least_the_width() -> None:
    """A shift amount is a .u32: ``-6`` shifts by 2^32-6, every bit out (fuzz seed
    35741 once crashed the analysis with it)."""
    text = TWO_D.replace("DIRECTIVE", ".reqntid 64, 1, 1").replace(
        "shr.u32 %r3, %r1, 5;", "shr.s32 %r3, %r1, -6;\n\tshl.b32 %r7, %r1, -1;"
    )
    text = text.replace("add.s32 %r6, %r3, %r2;", "add.s32 %r6, %r3, %r7;")
    regs = _verdicts(text)
    assert regs["%r3"] == regs["%r7"] == regs["%r6"] == "uniform"
    out = np.zeros(64, np.uint32)
    res = launch(text, "k", 1, 64, [out], uniform_claims={"k": ["%r3", "%r6", "%r7"]})
    assert not res.violations and not out.any()
