"""Random kernels survive SSA and its destruction: each generated program (guarded
writes, forward branches, bounded loops, register shuffles through ``mov``) is
lifted, copy-propagated (which makes SSA values of one register interfere: swaps,
lost copies, copies feeding branches), lowered, and run against the original in the
SIMT interpreter; a sample also goes through ptxas."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from helpers import propagate_copies, ptxas_check
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptxopt.ir.lift import lift_module
from ptxopt.ir.lower import print_ir_module
from ptxopt.ir.verify import verify_function
from ptxopt.ptx.parser import parse
from ptxopt.sim import differential

NREG = 6
NPRED = 3


@st.composite
def programs(draw: st.DrawFn) -> str:
    nblocks = draw(st.integers(1, 6))
    lines = []
    for b in range(nblocks):
        lines.append(f"$B{b}:")
        for _ in range(draw(st.integers(1, 6))):
            kind = draw(st.sampled_from(["alu", "mov", "setp", "selp", "guarded"]))
            d = draw(st.integers(1, NREG))
            a = draw(st.integers(1, NREG))
            c = draw(st.integers(1, NREG))
            p = draw(st.integers(1, NPRED))
            op = draw(st.sampled_from(["add.s32", "sub.s32", "xor.b32", "mul.lo.s32"]))
            if kind == "alu":
                lines.append(f"\t{op} %r{d}, %r{a}, %r{c};")
            elif kind == "mov":
                lines.append(f"\tmov.u32 %r{d}, %r{a};")
            elif kind == "setp":
                cmp = draw(st.sampled_from(["lt.s32", "eq.u32", "gt.u32"]))
                lines.append(f"\tsetp.{cmp} %p{p}, %r{a}, %r{c};")
            elif kind == "selp":
                lines.append(f"\tselp.b32 %r{d}, %r{a}, %r{c}, %p{p};")
            else:
                neg = draw(st.sampled_from(["", "!"]))
                lines.append(f"\t@{neg}%p{p} {op} %r{d}, %r{a}, %r{c};")
        # terminator: a forward branch, a bounded backward branch, or fall through
        choice = draw(st.integers(0, 2))
        p = draw(st.integers(1, NPRED))
        if choice == 0 and b + 1 < nblocks:
            tgt = draw(st.integers(b + 1, nblocks))
            lines.append(f"\t@%p{p} bra $B{tgt};")
        elif choice == 1:
            tgt = draw(st.integers(0, b))
            lines.append("\tadd.s32 %r20, %r20, 1;")
            lines.append("\tsetp.lt.u32 %p7, %r20, 3;")
            lines.append("\tand.pred %p7, %p7, %p" + str(p) + ";")
            lines.append(f"\t@%p7 bra $B{tgt};")
    lines.append(f"$B{nblocks}:")
    stores = [f"\tst.global.u32 [%rd4+{4 * (k - 1)}], %r{k};" for k in range(1, NREG + 1)]
    body = "\n".join(lines + stores)
    init = "\n".join(f"\tadd.s32 %r{k}, %r21, {k * 7};" for k in range(1, NREG + 1))
    preds = "\n".join(f"\tsetp.lt.u32 %p{k}, %r21, {5 * k};" for k in range(1, NPRED + 1))
    return f""".version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 k_param_0)
{{
\t.reg .pred %p<8>;
\t.reg .b32 %r<24>;
\t.reg .b64 %rd<5>;
\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r21, %tid.x;
\tmul.wide.u32 %rd3, %r21, {4 * NREG};
\tadd.s64 %rd4, %rd2, %rd3;
\tmov.u32 %r20, 0;
{init}
{preds}
{body}
\tret;
}}
"""


def _args(seed: int) -> list[np.ndarray]:
    return [np.zeros(37 * NREG, dtype=np.uint32)]


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(programs())
def test_random_program_survives_copy_propagation_and_out_of_ssa(text: str) -> None:
    mod = lift_module(parse(text, "random.ptx"))
    fn = mod.funcs[0]
    propagate_copies(fn)
    verify_function(fn)
    lowered = print_ir_module(mod)
    res = differential(text, lowered, "k", 1, 37, _args, trials=1)
    assert res.ok and res.both_failed == 0, res.message + "\n" + lowered


def test_random_programs_sample_passes_ptxas(tmp_path: Path) -> None:
    """A fixed handful of generated programs, after copy propagation, through ptxas."""
    from hypothesis import find

    seen: list[str] = []

    def keep(text: str) -> bool:
        seen.append(text)
        return len(seen) >= 5

    find(programs(), keep, settings=settings(database=None, derandomize=True))
    for i, text in enumerate(seen):
        mod = lift_module(parse(text, "random.ptx"))
        propagate_copies(mod.funcs[0])
        ptxas_check(print_ir_module(mod), "sm_80", tmp_path, f"r{i}.ptx")
