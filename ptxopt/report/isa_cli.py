"""``ptxopt isa [--json]``: the PTX ISA 9.0 coverage table (see
:mod:`ptxopt.report.isa_coverage`)."""

from __future__ import annotations

import argparse
import json
import sys


def cmd_isa(args: argparse.Namespace) -> int:
    from ptxopt.report.isa_coverage import coverage, format_text, to_json

    rows = coverage()
    if args.json:
        sys.stdout.write(json.dumps(to_json(rows), indent=1) + "\n")
    else:
        sys.stdout.write(format_text(rows))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "isa",
        help="PTX ISA 9.0 coverage: parsed, printed, interpreted, edge-tested, version, target",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_isa)
