"""How scripts/ur_fidelity.py judges a SASS instruction: which writes count as "ptxas
wrote a UR at this line" and which are a class of their own (the membermask that
ptxas tests before a warp-synchronous instruction, a predicate-only R2UR, a branch
that reads a UR)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("ur_fidelity", ROOT / "scripts/ur_fidelity.py")
assert _spec is not None and _spec.loader is not None
uf = importlib.util.module_from_spec(_spec)
sys.modules["ur_fidelity"] = uf
_spec.loader.exec_module(uf)


def _plain(*texts: str) -> list[tuple[str, str]]:
    return [("", t) for t in texts]


def test_verdicts() -> None:
    assert uf.sass_verdict("UIADD3 UR4, UR5, 0x1, URZ") == "UR"
    assert uf.sass_verdict("S2UR UR6, SR_CTAID.X") == "UR"
    assert uf.sass_verdict("R2UR UR4, R2") == "UR"
    assert uf.sass_verdict("IADD3 R1, R1, UR4, RZ") == "R"
    assert uf.sass_verdict("ULDC.64 UR4, c[0x0][0x118]") == "ldc"
    # BRA.DIV reads the membermask register: nothing is written
    assert uf.sass_verdict("BRA.DIV UR6, `(.L_x_317)") == ""
    # R2UR with URZ as its uniform destination writes only the predicate
    assert uf.sass_verdict("R2UR P2, URZ, R5") == "R"


def test_mask_only_read_by_bra_div() -> None:
    # cub/radix_sort.sm80.ptx line 2156 at sm_90: the shfl.sync's mask, then its check
    insts = _plain(
        "UMOV UR6, 0xffffffff",
        "IADD3 R12, R12, R13, RZ",
        "BRA.DIV UR6, `(.L_x_317)",
        "SHFL.UP P1, R6, R12, 0x1, RZ",
    )
    assert uf.mask_writes(insts) == {0}
    # vote.sync with a register mask: REDUX.OR into UR, read only by the check
    vote = _plain("REDUX.OR UR4, R5", "R2UR P2, URZ, R5", "BRA.DIV UR4, `(.L_x_193)")
    assert uf.mask_writes(vote) == {0}


def test_mask_read_by_anything_else_is_a_value() -> None:
    insts = _plain("UMOV UR6, 0xffffffff", "BRA.DIV UR6, `(.L_x_1)", "IADD3 R1, R1, UR6, RZ")
    assert uf.mask_writes(insts) == set()
    # written again before the second reader: the first write is still only a mask
    again = _plain(
        "UMOV UR6, 0xffffffff",
        "BRA.DIV UR6, `(.L_x_1)",
        "UMOV UR6, 0x2",
        "IADD3 R1, R1, UR6, RZ",
    )
    assert uf.mask_writes(again) == {0}
    # ... unless that write is guarded: the reader may still see the first one
    guarded = [("", "UMOV UR6, 0xffffffff"), ("", "BRA.DIV UR6, `(.L_x_1)")]
    guarded += [("@P0", "UMOV UR6, 0x2"), ("", "IADD3 R1, R1, UR6, RZ")]
    assert uf.mask_writes(guarded) == set()
    # a 64-bit write's high half read elsewhere
    wide = _plain(
        "UIMAD.WIDE.U32 UR4, UR8, UR9, URZ",
        "BRA.DIV UR4, `(.L_x_1)",
        "IADD3 R1, R1, UR5, RZ",
    )
    assert uf.mask_writes(wide) == set()
    # a write nobody reads is no mask either
    assert uf.mask_writes(_plain("UMOV UR6, 0x1", "EXIT")) == set()


def test_descriptor_moves() -> None:
    # debug targets: the memory descriptor moved into UR before each access
    debug = _plain("R2UR UR4, R2", "R2UR UR5, R3", "LDG.E R0, desc[UR4][R6.64]")
    assert uf.instruction_verdicts(debug) == ["desc", "desc", "R"]
    # triton/attention_bwd_bf16.sm90a.ptx line 568 at sm_90: the wgmma's descriptors
    wgmma = _plain(
        "UMOV UR21, 0x40000040",
        "UMOV UR20, UR12",
        "UMOV UR8, UR12",
        "UIADD3 UR22, UR12, 0x2, URZ",
        "UMOV UR23, 0x40000040",
        "UMOV UR24, 0x1",
        "HGMMA.64x32x16.F32.BF16 R88, gdesc[UR20], RZ, !UPT, gsb0",
    )
    assert uf.instruction_verdicts(wgmma) == ["gdesc", "gdesc", "UR", "UR", "gdesc", "UR", "R"]
    # staging at the wgmma line; a value of any other line
    assert uf.line_truth({"gdesc", "R"}, "wgmma") is False
    assert uf.line_truth({"gdesc"}, "wgmma") is None
    assert uf.line_truth({"gdesc"}, "mov") is True
    assert uf.line_truth({"UR", "gdesc"}, "wgmma") is True
    assert uf.line_truth({"ldc", "mask", "desc"}, "add") is None
    assert uf.line_truth({"R", "mask"}, "add") is False


@pytest.mark.skipif(
    uf.find_ptxas() is None or uf.find_nvdisasm() is None, reason="needs ptxas and nvdisasm"
)
def test_kernel_rows_add_up_to_the_target_totals() -> None:
    """``--kernel-list``: one row per function, whose tp/fp/fn sum to the target's."""
    path = "cuda/atomics.O3.sm75.ptx"
    text = (ROOT / "tests/corpus" / path).read_text()
    stats = uf.new_stats()
    uf.measure_file(path, text, "sm_80", stats)
    rows = [r.split("\t") for r in stats["kernel_rows"]]
    names = [r[3] for r in rows]
    assert "sum_last_block" in names and "histogram" in names
    assert len(names) == len(set(names)) == text.count(".entry ")
    assert all(r[0] == "sm_80" and r[2] == path for r in rows)
    _, _, tp, fp, fn = uf.pr(stats["model"][("sm_80", "ALL")])
    assert tp > 0
    assert [sum(int(r[k]) for r in rows) for k in (4, 5, 6)] == [tp, fp, fn]


def test_shared_window_at_an_access_is_its_own_class() -> None:
    # cuda/reduce.O3.sm90.ptx line 84 at sm_90: ``ld.shared.u32 %r27, [buf]``
    insts = _plain(
        "S2UR UR5, SR_CgaCtaId",
        "UMOV UR4, 0x400",
        "ULEA UR4, UR5, UR4, 0x18",
        "LDS R5, [UR4]",
    )
    assert uf.instruction_verdicts(insts) == ["window", "window", "window", "R"]
    assert uf.line_truth({"window", "R"}, "ld") is False
    assert uf.line_truth({"window"}, "st") is None
    # at a ``mov`` of the symbol the window is the value the line defines
    assert uf.line_truth({"window"}, "mov") is True
    # the loaded value moved into UR is a value of the line (cub/radix_sort.sm80.ptx
    # line 9569: ``LDS R0, [UR4+0x7e00] ; R2UR UR7, R0``)
    loaded = [*insts, ("", "R2UR UR7, R5")]
    assert uf.instruction_verdicts(loaded)[-1] == "UR"
    # a ULEA of other sources, or a window source written again since, is a value
    other = _plain("S2UR UR5, SR_CTAID.X", "UMOV UR4, 0x400", "ULEA UR4, UR5, UR4, 0x18")
    assert uf.instruction_verdicts(other) == ["UR", "UR", "UR"]
    again = [*insts[:2], ("", "UIADD3 UR5, UR5, 0x1, URZ"), insts[2]]
    assert uf.instruction_verdicts(again) == ["UR", "UR", "UR", "UR"]
