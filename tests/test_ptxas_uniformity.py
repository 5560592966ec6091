"""The branch-by-branch comparison with ptxas (scripts/ptxas_uniformity.py): the SASS
classifier on hand-written nvdisasm text, and (when ptxas and nvdisasm are installed) one
small corpus file end to end."""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "ptxas_uniformity", ROOT / "scripts/ptxas_uniformity.py"
)
assert _spec is not None and _spec.loader is not None
pu = importlib.util.module_from_spec(_spec)
sys.modules["ptxas_uniformity"] = pu
_spec.loader.exec_module(pu)

SASS = """
	.text.k:
	//## File ".nv_debug_ptx_txt", line 10
        /*0000*/                   BSSY B0, `(.L_x_1) ;
	//## File ".nv_debug_ptx_txt", line 11
        /*0010*/               @P0 BRA `(.L_x_0) ;
	//## File ".nv_debug_ptx_txt", line 12
        /*0020*/              @!P1 BRA `(.L_x_0) ;
        /*0030*/                   IADD3 R0, R0, 0x1, RZ ;
.L_x_0:
        /*0040*/                   BSYNC B0 ;
.L_x_1:
	//## File ".nv_debug_ptx_txt", line 20
        /*0050*/              @UP0 BRA `(.L_x_2) ;
        /*0060*/                   IADD3 R0, R0, 0x1, RZ ;
.L_x_2:
	//## File ".nv_debug_ptx_txt", line 21
        /*0070*/               @P2 BRA `(.L_x_3) ;
        /*0080*/                   IADD3 R0, R0, 0x1, RZ ;
.L_x_3:
        /*0090*/                   IADD3 R1, R1, 0x1, RZ ;
	//## File ".nv_debug_ptx_txt", line 22
        /*00a0*/               @P3 BRA `(.L_x_3) ;
	//## File ".nv_debug_ptx_txt", line 23
        /*00b0*/               @P4 BRA `(.L_x_4) ;
        /*00c0*/                   STG.E desc[UR4][R2.64], R0 ;
.L_x_4:
        /*00d0*/                   EXIT ;
.L_x_5:
        /*00e0*/                   BRA `(.L_x_5);
"""


def test_classify_hand_written_sass() -> None:
    funcs = pu.parse_sass(SASS)
    assert list(funcs) == ["k"]
    got = [(b.addr, b.line, b.cls) for b in pu.classify(funcs["k"])]
    assert got == [
        (0x10, 11, "BSSY"),  # first branch after BSSY: ptxas opened a region for it
        (0x20, 12, "nested"),  # inside B0's region
        (0x50, 20, "UP"),  # uniform predicate
        (0x70, 21, "bare"),  # forward, no region, no loop, lanes meet again at .L_x_3
        (0xA0, 22, "back-edge"),
        (0xB0, 23, "to-EXIT"),  # both arms run straight into EXIT
    ]


def test_nvdisasm_lookup_says_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pu.shutil, "which", lambda name: None)
    monkeypatch.setattr(pu.glob, "glob", lambda pattern: [])
    assert pu.find_nvdisasm() is None


@pytest.mark.skipif(
    shutil.which("ptxas") is None or pu.find_nvdisasm() is None,
    reason="needs ptxas on PATH and nvdisasm (pip install nvidia-cuda-nvdisasm)",
)
def test_corpus_file_pairs() -> None:
    path = "cuda/reduce.O3.sm90.ptx"
    text = (ROOT / "tests/corpus" / path).read_text()
    r = pu.study_file(path, text, pu.find_nvdisasm(), [])
    assert r.arch == "sm_90" and r.pairs
    for p in r.pairs:
        assert p.ptx.text.lstrip().startswith("@")  # matched to a conditional bra line
        assert not pu.more_uniform(p), (p.ptx.line, p.sass.cls)
