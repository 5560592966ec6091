"""``ptxopt-ptxas``: a drop-in for ptxas that optimizes the PTX first.

It takes ptxas's own command line, runs ptxopt's default pipeline over each input
PTX file, hands the result to the real ptxas with the user's other arguments
unchanged, and returns the real ptxas's exit status; its output goes through as is.
A build never breaks because of ptxopt: if ptxopt fails on an input, or the real
ptxas rejects what ptxopt produced, one warning goes to stderr and the original PTX
is assembled instead.

Environment:

``PTXOPT_PTXAS``
    the real ptxas (default: the first ``ptxas`` on ``PATH`` that is not this program)
``PTXOPT_DISABLE=1``
    pass everything straight to the real ptxas
``PTXOPT_PASSES``
    the pipeline, as ``ptxopt opt -p`` takes it (default: ``default``)
``PTXOPT_KNOBS``
    knob settings, ``Name=Value`` separated by commas or spaces
``PTXOPT_QUIET=1``
    no warning on fallback
``PTXOPT_LOG``
    append one line per input (``optimized``/``fallback``/``skipped`` and why) to
    this file, for checking that a build really went through ptxopt
``PTXOPT_SERVER``
    ``0`` turns off the resident server (:mod:`ptxopt.server`); on by default
``PTXOPT_TIMES``
    append one line per run to this file: the seconds before the real ptxas started
    (ptxopt's work), the seconds the real ptxas took (both runs of it after a
    fallback), and the inputs -- what the drop-in added to a build, measured in the
    same run as ptxas's own time

This module imports nothing heavy at start: a run that only forwards (``--version``,
``PTXOPT_DISABLE=1``) costs the interpreter's start-up and the real ptxas.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

PROG = "ptxopt-ptxas"

# ptxas options that take their value as the next argument (long and short spellings);
# ``--name=value`` and ``-O3`` forms are single arguments anyway.
VALUE_OPTIONS = frozenset(
    {
        "--Ofast-compile",
        "-Ofc",
        "--allow-expensive-optimizations",
        "-allow-expensive-optimizations",
        "--def-load-cache",
        "-dlcm",
        "--def-store-cache",
        "-dscm",
        "--device-function-maxrregcount",
        "-func-maxrregcount",
        "--device-stack-protector",
        "-device-stack-protector",
        "--entry",
        "-e",
        "--fmad",
        "-fmad",
        "--force-load-cache",
        "-flcm",
        "--force-store-cache",
        "-fscm",
        "--gpu-name",
        "-arch",
        "--input-as-string",
        "-ias",
        "--machine",
        "-m",
        "--maxntid",
        "-maxntid",
        "--maxrregcount",
        "-maxrregcount",
        "--minnctapersm",
        "-minnctapersm",
        "--opt-level",
        "-O",
        "--options-file",
        "-optf",
        "--output-file",
        "-o",
        "--position-independent-code",
        "-pic",
        "--register-usage-level",
        "-regUsageLevel",
        "--sanitize",
        "-sanitize",
        "--split-compile",
        "-split-compile",
        "-knob",
        "--knob",
    }
)
# with these ptxas does no compiling of the input (or must see it untouched)
PASSTHROUGH_FLAGS = frozenset(
    {"--version", "-V", "--help", "-h", "--list-version", "-version-ls", "--device-debug", "-g"}
)
PASSTHROUGH_VALUED = frozenset({"--input-as-string", "-ias", "--options-file", "-optf"})
ARCH_RE = re.compile(r"sm_(7[5-9]|[89][0-9]|1[0-2][0-9])[af]?")


class PtxasArgs:
    """What the drop-in needs from a ptxas command line (a plain class: the drop-in
    client avoids importing dataclasses)."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.inputs: list[int] = []  # indices into argv
        self.arch: str | None = None
        self.passthrough: str | None = None  # why the input must go to ptxas untouched


def _split(arg: str) -> tuple[str, str | None]:
    if arg.startswith("-") and "=" in arg:
        name, _, value = arg.partition("=")
        return name, value
    return arg, None


def parse_ptxas_args(argv: Sequence[str]) -> PtxasArgs:
    """Find the input files, the target and anything that means "do not touch"."""
    out = PtxasArgs(list(argv))
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-" or not arg.startswith("-"):
            out.inputs.append(i)
            i += 1
            continue
        name, value = _split(arg)
        if value is None and name in VALUE_OPTIONS:
            value = argv[i + 1] if i + 1 < len(argv) else None
            i += 1
        if name in ("--gpu-name", "-arch") and value is not None:
            out.arch = value
        if name in PASSTHROUGH_FLAGS or name in PASSTHROUGH_VALUED:
            out.passthrough = out.passthrough or f"option {name}"
        i += 1
    if not out.inputs and out.passthrough is None:
        out.passthrough = "no input file"
    return out


# _is_self's answers (a server worker asks for every request): by the path, the file it
# names (device, inode, size, change time) and who is asking
_self_answers: dict[tuple[object, ...], bool] = {}


def _is_self(path: str) -> bool:
    """Is ``path`` this program (the console script, a link to it, the native
    client that handed this run over: ``PTXOPT_CLIENT_EXE``, or any native client,
    known by the name it gives itself there)?"""
    try:
        st = os.stat(path)
    except OSError:
        return False
    key = (
        path,
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        sys.argv[0] if sys.argv else "",
        os.environ.get("PTXOPT_CLIENT_EXE"),
    )
    known = _self_answers.get(key)
    if known is None:
        known = _self_answers[key] = _is_self_uncached(path)
    return known


def _is_self_uncached(path: str) -> bool:
    real = os.path.realpath(path)
    me = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if real == me:
        return True
    client = os.environ.get("PTXOPT_CLIENT_EXE")
    if client and real == os.path.realpath(client):
        return True
    try:
        with open(real, "rb") as f:
            head = f.read(2048)
            if head.startswith(b"\x7fELF") and os.fstat(f.fileno()).st_size < _NATIVE_MAX:
                # ptxopt/native/client.c (a few dozen kilobytes; ptxas is megabytes)
                return _NATIVE_MARK in head + f.read()
    except OSError:
        return False
    return head.startswith(b"#!") and (b"ptxopt.dropin" in head or b"ptxopt.thin_client" in head)


# a string only the native client's program holds, and the most bytes it has
_NATIVE_MARK = b"PTXOPT_CLIENT_EXE=%s"
_NATIVE_MAX = 1 << 20


def find_real_ptxas() -> str | None:
    """``PTXOPT_PTXAS``, else the first ``ptxas`` on ``PATH`` that is not ptxopt."""
    given = os.environ.get("PTXOPT_PTXAS")
    if given:
        found = shutil.which(given)
        return found if found and not _is_self(found) else None
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cand = os.path.join(d or ".", "ptxas")
        if os.path.isfile(cand) and os.access(cand, os.X_OK) and not _is_self(cand):
            return cand
    return None


_warned = False


def reset_warnings() -> None:
    """A new run in a long-lived process (a server worker) may warn again."""
    global _warned
    _warned = False


def warn(message: str) -> None:
    """One warning per process (a build log should not fill up with them)."""
    global _warned
    if _warned or os.environ.get("PTXOPT_QUIET") == "1":
        return
    _warned = True
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def log(entry: str) -> None:
    path = os.environ.get("PTXOPT_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(entry + "\n")


def knob_items(text: str | None) -> list[str]:
    return [k for k in re.split(r"[,\s]+", text or "") if k]


def optimize_text(
    text: str,
    name: str,
    arch: str | None,
    passes: str | None,
    knobs: Sequence[str],
    later: list[Callable[[], None]] | None = None,
) -> str:
    """Run the pipeline on one PTX text; exceptions propagate (the caller falls back).
    The IR is taken apart before the text is returned, or, given ``later``, by the
    function this appends to it: a caller with the collector off takes it apart while
    ptxas runs (see :func:`run`) instead of before ptxas starts."""
    from ptxopt.driver import optimize
    from ptxopt.knobs import parse_assignments

    if passes is not None and passes.strip() == "none":
        steps = []  # the round trip alone: the pass machinery stays unimported
    else:
        from ptxopt.pipeline import parse_pipeline

        steps = parse_pipeline(passes or "default")
    values = parse_assignments(knobs)
    arch = arch if arch and ARCH_RE.fullmatch(arch) else None
    # release: the IR is taken apart instead of being left to a collection (a server
    # worker collects after every request: 1-5 ms a module otherwise)
    result = optimize(
        text, name, steps, arch=arch, knobs=values, reports=False, release=later is None
    )
    if later is not None:
        later.append(result.module.release)
    return result.text


def _optimize_inputs(
    args: PtxasArgs, made: list[str], later: list[Callable[[], None]]
) -> list[str] | None:
    """argv with each input replaced by its optimized copy, a temporary file whose
    path this appends to ``made`` (``None``: nothing changed).  What is left to do
    once ptxas runs goes to ``later``."""
    passes = os.environ.get("PTXOPT_PASSES")
    knobs = knob_items(os.environ.get("PTXOPT_KNOBS"))
    new = list(args.argv)
    changed = False
    for n, idx in enumerate(args.inputs):
        path = args.argv[idx]
        try:
            if path == "-":
                raise OSError("standard input is passed through")
            with open(path, encoding="latin-1", newline="") as f:
                text = f.read()
            out = optimize_with_server_or_here(text, path, args.arch, passes, knobs, later)
        except Exception as e:  # never break the build: fall back to the original
            what = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e) else ''}"
            warn(f"ptxopt could not optimize {path} ({what}); assembling the original PTX")
            log(f"fallback {path} {what}")
            continue
        # a file of its own, not a directory: one file system call less each way,
        # 0.2 ms of a resident run; the input's name stays at the end of it
        fd, dest = tempfile.mkstemp(
            prefix=f"ptxopt-ptxas-{n}-", suffix=f"-{os.path.basename(path)}"
        )
        made.append(dest)
        with open(fd, "w", encoding="latin-1", newline="") as f:
            f.write(out)
        new[idx] = dest
        changed = True
        log(f"optimized {path}")
    return new if changed else None


def optimize_with_server_or_here(
    text: str,
    name: str,
    arch: str | None,
    passes: str | None,
    knobs: Sequence[str],
    later: list[Callable[[], None]] | None = None,
) -> str:
    """Ask the resident server when there is one (see :mod:`ptxopt.server`), else work
    in this process (``later``: as :func:`optimize_text`).  ``PTXOPT_SERVER=0`` turns
    the server off."""
    if os.environ.get("PTXOPT_SERVER", "1") != "0":
        from ptxopt import server

        try:
            result = server.request(text, name, arch, passes, list(knobs))
        except server.RemoteError as e:
            raise RuntimeError(str(e)) from None
        if result is not None:
            return result
    return optimize_text(text, name, arch, passes, knobs, later)


def run(argv: Sequence[str], after: list[Callable[[], None]] | None = None) -> int:
    """Optimize the inputs of a ptxas command line and run the real ptxas on the
    result; its exit status.  The temporary files go before this returns, or, given
    ``after``, in the functions this appends to it (a server worker answers its client
    first)."""
    started = time.perf_counter()
    real = find_real_ptxas()
    if real is None:
        print(
            f"{PROG}: error: cannot find the real ptxas (set PTXOPT_PTXAS or put ptxas on PATH)",
            file=sys.stderr,
        )
        return 127
    args = parse_ptxas_args(argv)
    cmd = [real, *args.argv]
    clock = _Clock(started, [args.argv[i] for i in args.inputs])
    made: list[str] = []
    later: list[Callable[[], None]] = []
    try:
        if os.environ.get("PTXOPT_DISABLE") == "1" or args.passthrough is not None:
            if args.passthrough is not None and args.inputs:
                log(f"skipped {' '.join(args.argv[i] for i in args.inputs)} ({args.passthrough})")
            return clock.call(cmd)
        new = _optimize_inputs(args, made, later)
        if new is None:
            return clock.call(cmd)
        # ptxas starts before the IR is taken apart: a second core does both at once
        clock.ptxas_starts()
        with subprocess.Popen(
            [real, *new], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as ptxas:
            for step in later:
                step()
            later.clear()
            stdout, stderr = ptxas.communicate()
        clock.ptxas_ended()
        if ptxas.returncode == 0:
            sys.stdout.buffer.write(stdout)
            sys.stdout.flush()
            sys.stderr.buffer.write(stderr)
            sys.stderr.flush()
            return 0
        first = (stderr or stdout).decode("latin-1").strip().splitlines()
        warn(
            "ptxas rejected ptxopt's output"
            + (f" ({first[0]})" if first else "")
            + "; assembling the original PTX"
        )
        log(f"fallback ptxas rejected output: {first[0] if first else ptxas.returncode}")
        return clock.call(cmd)
    finally:
        clock.write()
        for step in later:  # an exception before ptxas ran
            step()
        if after is None:
            _remove(made)
        else:
            after.append(lambda: _remove(made))


class _Clock:
    """The times of one run for ``PTXOPT_TIMES``: from the start of :func:`run` to
    the real ptxas's first start, and the real ptxas's runs (wall time each, from
    before its start to after its end)."""

    def __init__(self, started: float, inputs: list[str]) -> None:
        self.started = started
        self.inputs = inputs
        self.first: float | None = None  # when the real ptxas first started
        self.ptxas = 0.0
        self._since = 0.0

    def ptxas_starts(self) -> None:
        self._since = time.perf_counter()
        if self.first is None:
            self.first = self._since

    def ptxas_ended(self) -> None:
        self.ptxas += time.perf_counter() - self._since

    def call(self, cmd: list[str]) -> int:
        """The real ptxas run to its end, timed; its exit status."""
        self.ptxas_starts()
        try:
            return subprocess.call(cmd)
        finally:
            self.ptxas_ended()

    def write(self) -> None:
        path = os.environ.get("PTXOPT_TIMES")
        if not path:
            return
        before = (self.first if self.first is not None else time.perf_counter()) - self.started
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{before:.6f} {self.ptxas:.6f} {' '.join(self.inputs)}\n")


def _remove(paths: list[str]) -> None:
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


NVCC_DIR_OPTION = "--ptxopt-make-nvcc"


def _nvcc_home(nvcc: str) -> str:
    """The directory of the real nvcc binary (``nvcc`` on PATH may be a wrapper);
    nvcc names it itself in a dry run."""
    real = os.path.realpath(nvcc)
    if os.path.isfile(os.path.join(os.path.dirname(real), "nvcc.profile")):
        return os.path.dirname(real)
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "e.cu")
        open(src, "w").close()
        done = subprocess.run([nvcc, "-dryrun", "-ptx", src], capture_output=True, text=True)
    m = re.search(r"_HERE_=(\S+)", done.stdout + done.stderr)
    if m is None:
        raise FileNotFoundError(f"cannot find the nvcc.profile of {nvcc}")
    return m.group(1)


CLIENT_OPTION = "--ptxopt-make-client"


def make_client(dest_dir: str, name: str = "ptxas", *, discover: bool = False) -> str:
    """Compile the native client (``ptxopt/native/client.c``) into ``dest_dir/name``
    with ``$CC`` (default ``cc``) and return its path.  It hands each run to this
    installation's resident server and becomes this drop-in when there is none.
    ``discover``: the client as ``pip install`` builds it (``ptxopt-ptxas``), which
    knows neither this interpreter nor the socket's name and finds both through the
    Python client ``ptxopt-ptxas-py`` beside it.  Raises :class:`OSError` when there
    is no C compiler or it fails."""
    from importlib import resources

    from ptxopt import __version__
    from ptxopt.thin_client import socket_path

    source = resources.files("ptxopt").joinpath("native/client.c").read_bytes()
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise FileNotFoundError("no C compiler found (set CC)")
    os.makedirs(dest_dir, exist_ok=True)
    out = os.path.join(os.path.abspath(dest_dir), name)
    with tempfile.TemporaryDirectory(prefix="ptxopt-client-") as work:
        src = os.path.join(work, "client.c")
        with open(src, "wb") as f:
            f.write(source)
        built = os.path.join(work, name)
        if discover:
            defines = ["-DPTXOPT_DISCOVER", f"-DPTXOPT_VERSION={_c_string(__version__)}"]
        else:
            defines = [
                f"-DPTXOPT_PYTHON={_c_string(sys.executable)}",
                f"-DPTXOPT_SOCKET_NAME={_c_string(os.path.basename(socket_path()))}",
            ]
        cmd = [cc, "-O2", "-std=gnu11", *defines, src, "-o", built]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip().splitlines()
            raise OSError(f"{cc} failed: {detail[0] if detail else done.returncode}")
        shutil.copyfile(built, out + ".tmp")
    os.chmod(out + ".tmp", 0o755)
    os.replace(out + ".tmp", out)
    return out


def _c_string(text: str) -> str:
    """``text`` as a C string literal (bytes outside printable ASCII, quotes and
    backslashes as octal escapes)."""
    body = "".join(
        chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:03o}"
        for b in text.encode("utf-8", "surrogateescape")
    )
    return f'"{body}"'


def make_nvcc_dir(dest: str, nvcc: str | None = None, *, native: bool = True) -> str:
    """Make ``dest/nvcc``: the real nvcc reading a copy of its ``nvcc.profile`` that
    puts ``dest/shim`` (where ``ptxas`` is this drop-in) first on the ``PATH`` nvcc
    gives its tools.  With ``native``, the shim is the native client when a C compiler
    can build it (no Python start-up per ptxas run), else a link to this program.
    Returns the path of the new nvcc."""
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc is not on PATH")
    here = _nvcc_home(nvcc)
    nvcc = os.path.join(here, "nvcc")
    with open(os.path.join(here, "nvcc.profile"), encoding="utf-8") as f:
        profile = f.read()
    dest = os.path.abspath(dest)
    shim = os.path.join(dest, "shim")
    os.makedirs(shim, exist_ok=True)
    # the profile's own names are relative to the nvcc it came with
    profile = profile.replace("$(_HERE_)", here)
    profile = re.sub(r"(?m)^(PATH\s*\+=\s*)", lambda m: m.group(1) + shim + os.pathsep, profile)
    with open(os.path.join(dest, "nvcc.profile"), "w", encoding="utf-8") as f:
        f.write(profile)
    me = shutil.which(PROG) or os.path.realpath(sys.argv[0])
    links = [(os.path.join(dest, "nvcc"), nvcc)]
    shim_ptxas = os.path.join(shim, "ptxas")
    if os.path.lexists(shim_ptxas):
        os.unlink(shim_ptxas)
    try:
        if not native:
            raise OSError("native client not asked for")
        make_client(shim, "ptxas")
    except OSError:
        links.append((shim_ptxas, me))
    for link, target in links:
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(target, link)
    return os.path.join(dest, "nvcc")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # ptxopt's own set-up commands: each makes something in DIR and prints its path
    setup: dict[str, Callable[[str], str]] = {
        CLIENT_OPTION: make_client,
        NVCC_DIR_OPTION: make_nvcc_dir,
    }
    if argv and argv[0] in setup:
        if len(argv) != 2:
            print(f"usage: {PROG} {argv[0]} DIR", file=sys.stderr)
            return 2
        try:
            print(setup[argv[0]](argv[1]))
        except OSError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 1
        return 0
    try:
        return run(argv)
    except KeyboardInterrupt:
        return 130


def entry() -> None:
    """The ``ptxopt-ptxas`` program: :func:`main` with the cyclic garbage collector off
    (nothing the run allocates needs collecting before it ends) and an exit without
    the interpreter's teardown (freeing the module's objects one by one would cost a
    tenth of a large file's run).  Temporary files are gone by then: they live in
    ``with`` blocks inside :func:`main`."""
    gc.disable()
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    entry()
