"""``ptxopt analyze IN [--json] [--explain REG]``: the divergence report of a PTX file."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def lift_text(text: str, filename: str) -> Any:
    """Parse, validate (input ptxas would reject is refused here, as by ``opt``) and
    lift ``text`` to the SSA IR."""
    from ptxopt.ir.lift import lift_module
    from ptxopt.ptx.parser import parse
    from ptxopt.ptx.validate import validate

    ast = parse(text, filename)
    validate(ast)
    return lift_module(ast)


def analyze_text(text: str, filename: str) -> tuple[Any, Any, dict[str, Any]]:
    """Parse, validate, lift and analyse ``text``; returns (IR module,
    ModuleDivergence, report)."""
    from ptxopt.analysis.divergence import analyze_module
    from ptxopt.report.divergence_report import module_report

    mod = lift_text(text, filename)
    md = analyze_module(mod)
    return mod, md, module_report(mod, md)


def cmd_analyze(args: argparse.Namespace) -> int:
    from ptxopt.cli import read_input
    from ptxopt.report.divergence_report import explain, format_text

    text, name = read_input(args.input)
    if args.regfiles or args.emit == "ori":
        from ptxopt.analysis.divergence import analyze_module
        from ptxopt.ptx.parser import no_gc

        with no_gc():  # as for ``opt``: the IR and the model allocate many linked objects
            mod = lift_text(text, name)
            return _regfiles(args, mod, analyze_module(mod))
    mod, md, report = analyze_text(text, name)
    if args.explain:
        sys.stdout.write(explain(mod, md, args.explain))
    elif args.json:
        sys.stdout.write(json.dumps(report, indent=1, sort_keys=False) + "\n")
    else:
        sys.stdout.write(format_text(report))
    return 0


def _regfiles(args: argparse.Namespace, mod: Any, md: Any) -> int:
    import re

    from ptxopt.ori.report import format_ori, format_regfiles, regfiles_report

    arch = args.arch or mod.arch or "sm_75"
    if not re.fullmatch(r"sm_\d+[af]?", arch):
        print(f"ptxopt: error: unsupported --arch '{arch}'", file=sys.stderr)
        return 2
    if args.emit == "ori":
        sys.stdout.write(format_ori(mod, md, arch))
        return 0
    rep = regfiles_report(mod, md, arch)
    if args.json:
        sys.stdout.write(json.dumps(rep, indent=1) + "\n")
    else:
        sys.stdout.write(format_regfiles(rep))
    return 0


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "analyze",
        help="divergence report: uniform/varying registers and branches",
        description="For every register and conditional branch of every function, say "
        "whether it is warp-uniform or varying, and why.",
    )
    p.add_argument("input", help="PTX file ('-' for standard input)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--explain", metavar="REG", help="root-cause chain of REG (or FUNC:REG)")
    p.add_argument(
        "--regfiles",
        action="store_true",
        help="uniform register model (ptxas phases 74/86): the file (R/P/UR/UP) of every "
        "value, bridges, predicted UR/UP counts; why each uniform value stays per-thread "
        "and the bridges keeping it in UR would take",
    )
    p.add_argument("--arch", metavar="sm_XX", help="target of --regfiles (default: .target)")
    p.add_argument(
        "--emit", choices=["ori"], help="ori: the listing annotated with SASS classes and files"
    )
    p.set_defaults(func=cmd_analyze)
