"""Command-line interface.  Every command is a thin wrapper over a library call.

Exit status: 0 success, 1 bad input (a ``file:line:col: error: …`` message on
stderr), 2 usage error, 3 internal error.  Output files are written atomically:
on any error the output path is neither created nor overwritten.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
from collections.abc import Sequence

from ptxopt import __version__
from ptxopt.ptx.ast import PtxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from ptxopt.phases import Step

EXAMPLE_PREFIX = "example:"


def example_path(name: str) -> str:
    """Path of a PTX example shipped with the package (``example:reduce.ptx``)."""
    # the package's own directory (importlib.resources would cost start-up: it
    # imports pathlib, tempfile and typing, and a file path is needed anyway)
    base = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples")
    stem = name if name.endswith(".ptx") else name + ".ptx"
    path = os.path.join(base, stem)
    if os.path.basename(stem) != stem or not os.path.isfile(path):
        known = sorted(n for n in os.listdir(base) if n.endswith(".ptx"))
        raise PtxError(None, f"no example '{name}' (shipped: {', '.join(known)})")
    return path


def read_input(path: str) -> tuple[str, str]:
    """Read PTX from ``path`` (``-``: standard input; ``example:NAME``: a PTX file
    shipped with the package); return (text, display name)."""
    # Bytes are read as they are (Latin-1, no newline translation: a carriage return
    # inside a comment stays in the comment, as ptxas reads it); PTX is ASCII, and
    # the lexer reports any other character where it stands.
    if path == "-":
        raw = getattr(sys.stdin, "buffer", None)
        return (raw.read().decode("latin-1") if raw else sys.stdin.read()), "<stdin>"
    if path.startswith(EXAMPLE_PREFIX):
        path = example_path(path[len(EXAMPLE_PREFIX) :])
    try:
        with open(path, encoding="latin-1", newline="") as f:
            return f.read(), path
    except OSError as e:
        raise PtxError(None, f"cannot read '{path}': {e.strerror}") from None


def write_output(path: str | None, text: str) -> None:
    """Write ``text`` to ``path`` atomically (``-`` or ``None``: standard output)."""
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    directory = os.path.dirname(os.path.abspath(path))
    # a fresh name beside the output (tempfile costs start-up and makes the file 0600)
    tmp = os.path.join(directory, f".ptxopt-{os.getpid()}-{os.urandom(6).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def select_steps(args: argparse.Namespace) -> list[Step]:
    """The steps ``-p``/``-O``/``--named-phases``/``--disable`` select (ValueError on
    an unknown name or a conflicting combination)."""
    if (args.passes or "").strip() == "none" and not (args.O or args.named_phases or args.disable):
        return []  # without importing the pipeline
    from ptxopt.phases import known_disable_names, resolve_named_phases
    from ptxopt.pipeline import available_passes, parse_pipeline

    given = (("-p", args.passes), ("-O", args.O), ("--named-phases", args.named_phases))
    chosen = [flag for flag, v in given if v]
    if len(chosen) > 1:
        raise ValueError(f"{chosen[0]} and {chosen[1]} are exclusive")
    if args.named_phases:
        steps = resolve_named_phases(args.named_phases.split(","), available_passes())
    else:
        steps = parse_pipeline("default" if args.O else args.passes)
    off = {d.strip() for item in args.disable for d in item.split(",") if d.strip()}
    bad = off and off - known_disable_names() - set(available_passes())
    if bad:
        raise ValueError(f"--disable {sorted(bad)[0]}: no such pass, placement or phase")
    return [s for s in steps if not off & {s.pass_name, s.label, str(s.phase)} - {"None"}]


def with_specialization(
    steps: list[Step], knobs: dict[str, object], params: list[str]
) -> list[Step]:
    """``--param``: hand the values to replace-uniforms-with-imm (run first when the
    pipeline lacks it)."""
    from ptxopt.phases import Step

    for item in params:
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise ValueError(f"--param expects NAME=VALUE, got '{item}'")
    old = str(knobs.get("SpecializeParams", ""))
    knobs["SpecializeParams"] = ";".join([old, *params] if old else params)
    name = "replace-uniforms-with-imm"
    if any(s.pass_name == name for s in steps):
        return steps
    return [Step(name, name, 11), *steps]


def cmd_opt(args: argparse.Namespace) -> int:
    from ptxopt.driver import optimize
    from ptxopt.knobs import KnobError, parse_assignments

    try:
        passes = select_steps(args)
        knobs = parse_assignments(args.knob)
        if args.param:
            passes = with_specialization(passes, knobs, args.param)
    except (ValueError, KnobError) as e:
        print(f"ptxopt: error: {e}", file=sys.stderr)
        return 2
    if args.arch is not None and not re.fullmatch(
        r"sm_(7[5-9]|[89][0-9]|1[0-2][0-9])[af]?", args.arch
    ):
        print(f"ptxopt: error: unsupported --arch '{args.arch}' (sm_75 .. sm_120)", file=sys.stderr)
        return 2
    known = {s.pass_name for s in passes} | {s.label for s in passes} | {"all"}
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
        knobs=knobs,
        dump_ssa=args.dump_ssa,
        dump_before=frozenset(args.dump_before),
        dump_after=frozenset(args.dump_after),
        dump=lambda s: print(s, file=sys.stderr),
        reports=bool(
            args.stats or args.explain or args.time_passes or args.dump_before or args.dump_after
        ),
    )
    write_output(args.output, result.text)
    if args.time_passes:
        print(result.report.format_times(), file=sys.stderr)
    if args.stats:
        print(result.report.format_stats(), file=sys.stderr)
    if args.explain:
        print(result.report.format_explain(), file=sys.stderr)
    return 0


def cmd_passes(args: argparse.Namespace) -> int:
    from ptxopt.knobs import GLOBAL_KNOBS
    from ptxopt.phases import PHASES
    from ptxopt.pipeline import available_passes

    classes = available_passes()
    print("Default pipeline (ptxas phase order; 'ptxopt opt -O'):")
    print(f"  {'phase':>5}  {'placement':34} {'ptxas name':34} status")
    for ph in PHASES:
        num = str(ph.number) if ph.number is not None else "-"
        if ph.pass_name not in classes:
            status = "not implemented"
        elif ph.report:
            status = "report" if ph.default else "report, off"
        else:
            status = "on" if ph.default else "off by default"
        note = f" ({ph.note})" if ph.note else ""
        print(f"  {num:>5}  {ph.placement:34} {ph.ptxas_name:34} {status}{note}")
    print()
    print("Passes (-p NAME) and their knobs (--knob Name=Value):")
    for name, cls in classes.items():
        phase = f"phase {cls.phase}" if cls.phase is not None else "-"
        print(f"  {name:32} {phase:10} {cls.description}")
        for k in cls.knobs:
            print(f"  {'':32}   {k.name} = {k.default!r}  ({k.describe_range()}) {k.help}")
    if GLOBAL_KNOBS:
        print()
        print("Driver knobs:")
        for k in GLOBAL_KNOBS:
            print(f"  {k.name} = {k.default!r}  ({k.describe_range()}) {k.help}")
    return 0


def _help_width() -> int:
    """The width argparse would take from ``shutil.get_terminal_size`` (``COLUMNS``,
    then the terminal, then 80), without importing shutil (start-up)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_help_width())


class _Parser(argparse.ArgumentParser):
    """An argument parser (and its subcommands') with :class:`_Formatter`."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


class _Version(argparse.Action):
    """``--version``: the version and whether the front end runs compiled."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from ptxopt.accel import build_name

        print(f"ptxopt {__version__} ({build_name()})")
        parser.exit()


def build_parser(extra_commands: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ptxopt",
        description="A warp-aware PTX middle-end: parse, lift to SSA, analyze, optimize, print.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and build")
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
        help="comma-separated passes or placements (PASS@NN); 'default': the phase table; "
        "'none' lifts and lowers only (see 'ptxopt passes'); default: the phase table",
    )
    p.add_argument("-O", action="store_true", help="run the default pipeline (same as -p default)")
    p.add_argument(
        "--named-phases",
        metavar="A,B",
        help="run these ptxas phases (GvnCse, GeneralOptimizeLate, OriCopyProp ...) in order",
    )
    p.add_argument(
        "--disable",
        metavar="NAME",
        action="append",
        default=[],
        help="drop a pass, a placement (PASS@NN) or a ptxas phase (name or number); repeatable",
    )
    p.add_argument(
        "--knob",
        metavar="Name=Value",
        action="append",
        default=[],
        help="set a knob by its spec name (see 'ptxopt passes'); repeatable",
    )
    p.add_argument(
        "--param",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="specialize the kernel parameter NAME (its PTX name, or KERNEL:NAME) to VALUE; "
        "repeatable (runs replace-uniforms-with-imm)",
    )
    p.add_argument("--stats", action="store_true", help="print what each pass did to stderr")
    p.add_argument(
        "--explain",
        action="store_true",
        help="print each decision a pass took and why (loops narrowed or kept, atomics "
        "aggregated or skipped, frames promoted or kept) to stderr",
    )
    p.add_argument("--arch", metavar="sm_XX", help="target for arch-dependent decisions")
    p.add_argument(
        "--verify-each", action="store_true", help="verify the IR after lifting and every pass"
    )
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

    for module in extra_commands:
        try:
            mod = __import__(module, fromlist=["add_parser"])
        except ImportError:
            continue
        mod.add_parser(sub)
    return parser


# Commands defined by other packages; importing them loads the interpreter (numpy),
# which 'opt' and 'passes' do not need, so they are left out of those runs.
EXTRA_COMMANDS = (
    "ptxopt.sim.cli",
    "ptxopt.report.analyze_cli",
    "ptxopt.report.isa_cli",
    "ptxopt.tools.batch",
    "ptxopt.tools.report",
)
_CORE_COMMANDS = frozenset({"opt", "passes"})


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    core = command in _CORE_COMMANDS or (command is None and "--version" in argv)
    parser = build_parser(() if core else EXTRA_COMMANDS)
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


# Commands whose process may end without the interpreter's teardown: they hold no
# pools, servers or temporary files, and their output is written and closed.
_FAST_EXIT_COMMANDS = frozenset({"opt", "analyze"})


def entry() -> None:
    """The ``ptxopt`` program.  After ``opt`` and ``analyze`` the process exits at once:
    freeing a large module's AST and IR object by object at interpreter shutdown
    costs about a tenth of the whole run on a 40k-line file, and nothing is left to
    do by then.  Those two run with the cyclic garbage collector off: it would only
    walk the module's objects, which all live until the end."""
    argv = sys.argv[1:]
    fast = next((a for a in argv if not a.startswith("-")), None) in _FAST_EXIT_COMMANDS
    if fast:
        gc.disable()
    code = main()
    if fast:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
