"""Smaller contracts of leaving SSA through conventional SSA: knob parsing, the
statistics, the verbosity levels of the coalescer's log."""

from __future__ import annotations

from test_cssa import LOST_COPY, SWAP, lowered, movs, run
from test_ssa import kernel

from ptxopt.ir.cssa import CssaOptions


def test_do_cssa_knob_turns_it_off() -> None:
    assert CssaOptions.from_knobs({"do-cssa": False}).enabled is False
    assert CssaOptions.from_knobs(None).enabled is True
    assert CssaOptions.from_knobs({"do-cssa": True}).enabled is True
    opts = CssaOptions.from_knobs({"cssa-coalesce": 2, "cssa-verbosity": 1})
    assert (opts.level, opts.verbosity, opts.dump_before) == (2, 1, False)


def test_copies_left_after_coalescing() -> None:
    """The swap keeps both phi copies (three moves with the temporary); the lost-copy
    loop keeps one."""
    for text, left, moves in ((SWAP, 2, 3), (LOST_COPY, 1, 1)):
        opts = CssaOptions(level=2)
        out, _ = lowered(text, opts)
        ((name, st),) = opts.stats
        assert name == "k" and st.copies_left == left and movs(out) == moves
        assert st.line("k").endswith(f"; {left} copies left")


def test_interference_is_logged_from_verbosity_2() -> None:
    for verbosity, want in ((1, False), (2, True)):
        logs: list[str] = []
        lowered(SWAP, CssaOptions(level=2, verbosity=verbosity, log=logs.append))
        assert any("keep apart (interference)" in ln for ln in logs) is want


COPY_THEN_UNARY = kernel(
    """\tadd.u32 %r1, %r21, 3;
\tmov.b32 %r2, %r1;
\tsetp.lt.u32 %p1, %r21, 5;
\t@%p1 bra $L_a;
\tneg.s32 %r3, %r2;
\tbra $L_j;
$L_a:
\tnot.b32 %r3, %r2;
$L_j:
\tst.global.u32 [%rd4], %r3;
\tret;"""
)


def test_level_3_deletes_a_plain_copy_and_keeps_unary_operations() -> None:
    """The copy ``mov %r2, %r1`` joins its source and disappears; ``neg`` and ``not``
    read a register their result does not share, so they stay."""
    opts = CssaOptions(level=3)
    out, _ = lowered(COPY_THEN_UNARY, opts, fold=False)
    ((_, st),) = opts.stats
    assert st.movs_deleted == 1 and "mov.b32" not in out
    assert "neg.s32" in out and "not.b32" in out
    assert run(out) == run(COPY_THEN_UNARY)
