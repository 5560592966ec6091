"""The plain-operand key (:func:`ptxopt.ir.value_key._plain_key`) partitions the
instructions of real kernels exactly as the general key does: two instructions share
a plain key exactly when they share the general one, before and after copy
propagation (which puts immediates into register slots)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ptxopt.ir.value_key as vk
from ptxopt.driver import optimize
from ptxopt.ir.core import Func, Inst

CORPUS = Path(__file__).parent / "corpus"


def partition(func: Func, key: object) -> set[frozenset[int]]:
    groups: dict[object, set[int]] = {}
    for b in func.blocks:
        for inst in b.insts:
            k = key(inst)  # type: ignore[operator]
            if k is not None:
                groups.setdefault(k, set()).add(id(inst))
    return {frozenset(g) for g in groups.values()}


def general(inst: Inst) -> tuple[object, ...] | None:
    info = inst.info
    saved = vk._plain_key
    vk._plain_key = lambda _i, _n: None  # type: ignore[assignment]
    try:
        return vk.expr_key(inst) if info is not None else None
    finally:
        vk._plain_key = saved


@pytest.mark.parametrize(
    "rel",
    [
        "cuda/reduce.O3.sm90.ptx",
        "cub/scan.sm80.ptx",
        "triton/matmul_fp16.sm80.ptx",
        "cutlass/hopper_ws_gemm.sm90a.ptx",
        "cuda/atomics.G.sm90.ptx",
    ],
)
@pytest.mark.parametrize("passes", [[], ["general-optimize"]])
def test_plain_keys_partition_like_general_keys(rel: str, passes: list[str]) -> None:
    text = (CORPUS / rel).read_text()
    mod = optimize(text, rel, passes).module
    plain = 0
    for func in mod.funcs:
        assert partition(func, vk.expr_key) == partition(func, general)
        for b in func.blocks:
            for inst in b.insts:
                if inst.info is not None and vk._plain_key(inst, inst.info) is not None:
                    plain += 1
    assert plain > 0


SWAPPED = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u32 a, .param .u32 b)
{
\t.reg .b32 %r<12>;
\tld.param.u32 %r1, [a];
\tld.param.u32 %r2, [b];
\tadd.s32 %r3, %r1, %r2;
\tadd.s32 %r4, %r2, %r1;
\tsub.s32 %r5, %r1, %r2;
\tsub.s32 %r6, %r2, %r1;
\tmul.lo.s32 %r7, %r1, 5;
\tmul.lo.s32 %r8, 5, %r1;
\tadd.s32 %r9, %r1, 5;
\tadd.s32 %r10, %r1, 0x5;
\tret;
}
"""


def test_plain_keys_of_swapped_and_immediate_sources() -> None:
    (func,) = optimize(SWAPPED, "k.ptx", []).module.funcs
    insts = {
        i.ast.operands[0].name: i  # type: ignore[union-attr]
        for b in func.blocks
        for i in b.insts
        if i.opcode in ("add", "sub", "mul")
    }
    key = vk.expr_key
    assert all(vk._plain_key(i, i.info) is not None for i in insts.values())  # type: ignore[arg-type]
    assert key(insts["%r3"]) == key(insts["%r4"])  # commutative
    assert key(insts["%r5"]) != key(insts["%r6"])
    assert key(insts["%r7"]) == key(insts["%r8"])
    assert key(insts["%r9"]) != key(insts["%r10"])  # (spelled differently: kept apart)
    assert partition(func, key) == partition(func, general)
