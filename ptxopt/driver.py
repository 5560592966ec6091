"""Library entry points behind the CLI: parse, lift, run passes, lower, print."""

from __future__ import annotations

import time
from collections.abc import Callable

from ptxopt.ir.core import IRModule
from ptxopt.ir.dump import dump_module
from ptxopt.ir.lift import lift_module
from ptxopt.ir.lower import print_ir_module
from ptxopt.ir.out_of_ssa import keep_names
from ptxopt.ir.verify import verify_function
from ptxopt.phases import Step
from ptxopt.pipeline_report import PipelineReport
from ptxopt.ptx.parser import deep_recursion, no_gc, parse
from ptxopt.ptx.validate import validate
from ptxopt.record import Node


class OptResult(Node):
    __slots__ = ("text", "module", "report")
    text: str
    module: IRModule
    report: PipelineReport

    def __init__(
        self,
        text: str,
        module: IRModule,
        report: PipelineReport,
    ) -> None:
        self.text = text
        self.module = module
        self.report = report


def optimize(
    text: str,
    filename: str = "<input>",
    passes: list[str] | list[Step] | list[str | Step] | None = None,
    *,
    verify_each: bool = False,
    arch: str | None = None,
    knobs: dict[str, object] | None = None,
    dump_ssa: bool = False,
    dump_before: frozenset[str] = frozenset(),
    dump_after: frozenset[str] = frozenset(),
    dump: Callable[[str], None] | None = None,
    reports: bool = True,
    release: bool = False,
) -> OptResult:
    """Parse and validate ``text``, lift every function to SSA (verified with
    ``verify_each``, as after every pass), run ``passes`` (pass
    names, placements or steps; ``None``: none) with ``knobs`` (spec names to
    values), lower and print.  ``arch`` overrides the module's ``.target`` for
    decisions that depend on the architecture; the printed ``.target`` is unchanged.
    ``reports=False``: the caller reads only the text, so passes that only report
    are skipped (the report then lacks their counters and notes).  ``release=True``:
    the caller reads only the text and the report, so the IR is dismantled before
    the collector resumes (the result's module is then empty); its reference
    cycles would otherwise cost a full collection over the whole IR."""
    with no_gc(), deep_recursion():
        result = _optimize(
            text,
            filename,
            passes,
            verify_each=verify_each,
            arch=arch,
            knobs=knobs,
            dump_ssa=dump_ssa,
            dump_before=dump_before,
            dump_after=dump_after,
            dump=dump,
            reports=reports,
        )
        if release:
            result.module.release()
        return result


def _optimize(
    text: str,
    filename: str,
    passes: list[str] | list[Step] | list[str | Step] | None,
    *,
    verify_each: bool,
    arch: str | None,
    knobs: dict[str, object] | None = None,
    dump_ssa: bool = False,
    dump_before: frozenset[str] = frozenset(),
    dump_after: frozenset[str] = frozenset(),
    dump: Callable[[str], None] | None = None,
    reports: bool = True,
) -> OptResult:
    report = PipelineReport()
    t0 = time.perf_counter()
    ast = parse(text, filename)
    t_parsed = time.perf_counter()
    report.add_time("parse", t_parsed - t0)
    validate(ast)
    t1 = time.perf_counter()
    report.add_time("validate", t1 - t_parsed)
    mod = lift_module(ast)
    mod.arch = arch or ast.arch
    t2 = time.perf_counter()
    report.add_time("lift (CFG + SSA)", t2 - t1)
    if verify_each:  # the lifted IR too; the fuzzers and the tests ask for it
        for func in mod.funcs:
            verify_function(func)
        report.add_time("verify", time.perf_counter() - t2)
    if dump_ssa and dump is not None:
        dump(f"*** IR after lifting ***\n{dump_module(mod)}")
    if passes or knobs:  # the pass machinery is imported only when it runs
        from ptxopt.ir.cssa import CssaOptions, destructor_for
        from ptxopt.pipeline import run_pipeline

        run_pipeline(
            mod,
            passes or [],
            verify_each=verify_each,
            report=report,
            knobs=knobs,
            dump_before=dump_before,
            dump_after=dump_after,
            dump=dump,
            reports=reports,
        )
        t4 = time.perf_counter()
        destructor = destructor_for(mod, CssaOptions.from_knobs(knobs, dump))
    else:  # the IR is as lifted: its registers' own names are a valid assignment
        t4 = time.perf_counter()
        destructor = keep_names
    out = print_ir_module(mod, destructor)
    report.add_time("lower (out of SSA + print)", time.perf_counter() - t4)
    return OptResult(out, mod, report)
