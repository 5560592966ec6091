"""Command-line interface.  Every command is a thin wrapper over a library call.

Exit status: 0 success, 1 bad input (a ``file:line:col: error: …`` message on
stderr), 2 usage error, 3 internal error.  Output files are written atomically:
on any error the output path is neither created nor overwritten.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Sequence

from ptxopt import __version__
from ptxopt.ptx.ast import PtxError

EXAMPLE_PREFIX = "example:"


def example_path(name: str) -> str:
    """Path of a PTX example shipped with the package (``example:reduce.ptx``)."""
    from importlib import resources

    base = resources.files("ptxopt") / "examples"
    stem = name if name.endswith(".ptx") else name + ".ptx"
    path = base / stem
    if not path.is_file():
        known = sorted(p.name for p in base.iterdir() if p.name.endswith(".ptx"))
        raise PtxError(None, f"no example '{name}' (shipped: {', '.join(known)})")
    return str(path)


def read_input(path: str) -> tuple[str, str]:
    """Read PTX from ``path`` (``-``: standard input; ``example:NAME``: a PTX file
    shipped with the package); return (text, display name)."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    if path.startswith(EXAMPLE_PREFIX):
        path = example_path(path[len(EXAMPLE_PREFIX) :])
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except OSError as e:
        raise PtxError(None, f"cannot read '{path}': {e.strerror}") from None
    except UnicodeDecodeError:
        raise PtxError(None, f"'{path}' is not UTF-8 text") from None


def write_output(path: str | None, text: str) -> None:
    """Write ``text`` to ``path`` atomically (``-`` or ``None``: standard output)."""
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ptxopt-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def cmd_opt(args: argparse.Namespace) -> int:
    from ptxopt.driver import optimize
    from ptxopt.pipeline import parse_pipeline

    try:
        passes = parse_pipeline(args.passes)
    except ValueError as e:
        print(f"ptxopt: error: {e}", file=sys.stderr)
        return 2
    if args.arch is not None and not re.fullmatch(
        r"sm_(7[5-9]|[89][0-9]|1[0-2][0-9])[af]?", args.arch
    ):
        print(f"ptxopt: error: unsupported --arch '{args.arch}' (sm_75 .. sm_120)", file=sys.stderr)
        return 2
    known = set(passes) | {"all"}
    for flag, names in (("--dump-before", args.dump_before), ("--dump-after", args.dump_after)):
        for n in names:
            if n not in known:
                print(f"ptxopt: error: {flag} {n}: not a pass of this pipeline", file=sys.stderr)
                return 2
    text, name = read_input(args.input)
    result = optimize(
        text,
        name,
        passes,
        verify_each=args.verify_each,
        arch=args.arch,
        dump_ssa=args.dump_ssa,
        dump_before=frozenset(args.dump_before),
        dump_after=frozenset(args.dump_after),
        dump=lambda s: print(s, file=sys.stderr),
    )
    write_output(args.output, result.text)
    if args.time_passes:
        print(result.report.format_times(), file=sys.stderr)
    return 0


def cmd_passes(args: argparse.Namespace) -> int:
    from ptxopt.pipeline import DEFAULT_PIPELINE, available_passes

    for name, cls in available_passes().items():
        phase = f"phase {cls.phase}" if cls.phase is not None else "-"
        default = "default" if name in DEFAULT_PIPELINE else "off by default"
        print(f"{name:28} {phase:10} {default:15} {cls.description}")
        for knob, value in cls.knobs.items():
            print(f"{'':28}   knob {knob} = {value!r}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptxopt",
        description="A warp-aware PTX middle-end: parse, lift to SSA, analyze, optimize, print.",
    )
    parser.add_argument("--version", action="version", version=f"ptxopt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("opt", help="optimize PTX and print PTX that ptxas accepts")
    p.add_argument(
        "input",
        metavar="IN",
        help="PTX file ('-': standard input; 'example:reduce': an example shipped with ptxopt)",
    )
    p.add_argument("-o", "--output", metavar="OUT", help="output file ('-' or omitted: stdout)")
    p.add_argument(
        "-p",
        "--passes",
        metavar="PASSES",
        help="comma-separated passes; 'none' lifts and lowers only (see 'ptxopt passes')",
    )
    p.add_argument("--arch", metavar="sm_XX", help="target for arch-dependent decisions")
    p.add_argument("--verify-each", action="store_true", help="verify the IR after every pass")
    p.add_argument("--time-passes", action="store_true", help="print per-phase times to stderr")
    p.add_argument("--dump-ssa", action="store_true", help="print the SSA IR after lifting")
    p.add_argument(
        "--dump-before",
        metavar="PASS",
        action="append",
        default=[],
        help="print the SSA IR before PASS ('all': every pass); repeatable",
    )
    p.add_argument(
        "--dump-after",
        metavar="PASS",
        action="append",
        default=[],
        help="print the SSA IR after PASS ('all': every pass); repeatable",
    )
    p.set_defaults(func=cmd_opt)

    p = sub.add_parser("passes", help="list the available passes and their knobs")
    p.set_defaults(func=cmd_passes)

    for module in ("ptxopt.sim.cli", "ptxopt.report.analyze_cli"):
        try:
            mod = __import__(module, fromlist=["add_parser"])
        except ImportError:
            continue
        mod.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PtxError as e:
        print(str(e), file=sys.stderr)
        return 1
    except RecursionError:
        print("ptxopt: error: input nests too deeply", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # an internal error: report it without a wall of traceback
        if os.environ.get("PTXOPT_TRACEBACK"):
            raise
        print(
            f"ptxopt: internal error: {type(e).__name__}: {e} "
            "(set PTXOPT_TRACEBACK=1 for the traceback)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
