"""Smaller contracts of leaving SSA through conventional SSA: knob parsing, the
statistics, the verbosity levels of the coalescer's log."""

from __future__ import annotations

from test_cssa import LOST_COPY, SWAP, lowered, movs

from ptxopt.ir.cssa import CssaOptions


def test_do_cssa_knob_turns_it_off() -> None:
    assert CssaOptions.from_knobs({"do-cssa": False}).enabled is False
    assert CssaOptions.from_knobs(None).enabled is True
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
