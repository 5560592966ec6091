"""Every runnable launch of the corpus, run by the interpreter and checked against the
numpy reference written for it (tests/corpus/references.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import corpus_param

from ptxopt.sim import launch
from ptxopt.sim.checker import buffers, copy_args

CORPUS = Path(__file__).parent / "corpus"


def _references() -> Any:
    spec = importlib.util.spec_from_file_location("corpus_references", CORPUS / "references.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _launches() -> list[Any]:
    path = CORPUS / "manifest.json"
    if not path.exists():
        return []
    man = json.loads(path.read_text())
    out = []
    for f in man["files"]:
        for i, ln in enumerate(f.get("launches", [])):
            tag = f"{f['path']}:{ln['kernel'][:40]}:{i}"
            out.append(corpus_param(CORPUS / f["path"], f["path"], ln, id=tag))
    return out


def _shared_bytes(path: str, text: str, ln: dict[str, Any]) -> int:
    """Dynamic shared memory of a launch, as recorded in the manifest (for Triton
    kernels, the size Triton computed for ``.extern .shared global_smem[]``)."""
    return int(ln.get("shared_bytes", 0))


def _unused() -> list[Any]:
    out: list[Any] = []
    return out


REFS = _references() if (CORPUS / "references.py").exists() else None


def _compare(name: str, got: Any, exp: Any, tol: tuple[float, float] | None, what: str) -> None:
    if isinstance(exp, np.ndarray):
        assert got.shape == exp.shape, what
        if tol is None:
            bad = got.view(np.uint8).reshape(got.size, -1) != exp.astype(got.dtype).view(
                np.uint8
            ).reshape(exp.size, -1)
            if bad.any():
                j = int(np.argmax(bad.any(1)))
                raise AssertionError(
                    f"{what}: first difference at element {j}: got "
                    f"{got.reshape(-1)[j]!r}, expected {exp.reshape(-1)[j]!r}"
                    f" ({int(bad.any(1).sum())} elements differ)"
                )
        else:
            np.testing.assert_allclose(got, exp, rtol=tol[0], atol=tol[1], err_msg=what)


@pytest.mark.parametrize("path,ln", _launches())
def test_corpus_launch(path: str, ln: dict[str, Any]) -> None:
    assert REFS is not None
    text = (CORPUS / path).read_text()
    args = REFS.make_args(ln)
    before = buffers(copy_args(args))
    launch(
        text,
        ln["kernel"],
        ln["grid"],
        ln["block"],
        args,
        shared_bytes=_shared_bytes(path, text, ln),
        filename=path,
    )
    args = buffers(args)  # a by-value Params struct: the arrays it points to
    ref = getattr(REFS, ln["reference"])
    expected = ref(before, ln)
    tol = REFS.TOLERANCE.get(ln["reference"])
    if ln["reference"] in getattr(REFS, "BF16_VALUES", ()):
        bf = [a["dtype"] == "bfloat16" for a in ln["args"]]
        args = [REFS.bf16_bits_to_f32(g) if f else g for g, f in zip(args, bf, strict=True)]
        expected = [REFS.bf16_bits_to_f32(e) if f else e for e, f in zip(expected, bf, strict=True)]
    for i, (g, e) in enumerate(zip(args, expected, strict=True)):
        _compare(ln["reference"], g, e, tol, f"{path} {ln['kernel']} argument {i}")
