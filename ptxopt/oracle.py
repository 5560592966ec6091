"""ptxas and nvdisasm as oracles: what the real assembler accepts and what it decided.

One module for every test, benchmark and script that asks NVIDIA's tools a question:

* :func:`find_ptxas` / :func:`find_nvdisasm` locate the tools (``PTXOPT_PTXAS`` /
  ``PTXOPT_NVDISASM``, then ``PATH``, then the ``nvidia-cuda-nvdisasm`` wheel, Triton's
  bundled copy or a CUDA toolkit).  Neither is a dependency of the core: callers get
  ``None`` and decide what to do.
* :func:`assemble` runs ``ptxas -arch=… -O… -v`` on PTX text and returns the verdict,
  the log, per-function resource figures (registers, stack frame, spills) and, when
  nvdisasm is present, the disassembly parsed into :class:`SassFunc` objects with
  per-function statistics (instructions, R/UR/P/UP registers touched, BSSY regions).
* :func:`parse_sass` reads ``nvdisasm -c [-gp]`` text; with ``-lineinfo`` cubins each
  SASS instruction carries the PTX line it came from (``//## File …, line N``).
* :func:`targets_for` lists the measurement targets (sm_75, sm_80, sm_90) a PTX file
  can be assembled for, plus its own ``.target``.

Nothing here parses PTX or changes it; results are plain data, deterministic for a
given input and tool version.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field

# glob, shutil, subprocess, tempfile and pathlib are imported where they are used:
# the passes import this module for sm_number alone, on every command's start-up

__all__ = [
    "AssembleResult",
    "FunctionStats",
    "SassFunc",
    "SassInst",
    "assemble",
    "find_nvdisasm",
    "find_ptxas",
    "line_table",
    "parse_ptxas_log",
    "parse_sass",
    "sm_number",
    "targets_for",
]

#: The targets every pass is measured on (a file is measured on those at or above its own).
MEASURE_TARGETS = ("sm_75", "sm_80", "sm_90")


def find_ptxas() -> str | None:
    """``$PTXOPT_PTXAS`` or ``ptxas`` on PATH; ``None`` when there is none."""
    import shutil

    env = os.environ.get("PTXOPT_PTXAS")
    if env:
        return env if os.path.isfile(env) else None
    return shutil.which("ptxas")


def find_nvdisasm() -> str | None:
    """``$PTXOPT_NVDISASM``, ``nvdisasm`` on PATH, the ``nvidia-cuda-nvdisasm`` wheel
    (any ``cuNN``), Triton's bundled copy, or a CUDA toolkit; ``None`` when none."""
    import glob
    import shutil

    env = os.environ.get("PTXOPT_NVDISASM")
    if env:
        return env if os.path.isfile(env) else None
    cands = [shutil.which("nvdisasm") or ""]
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix]):
        site = prefix + "/lib/python*/site-packages"
        cands += sorted(glob.glob(site + "/nvidia/*/bin/nvdisasm"), reverse=True)
        cands += glob.glob(site + "/nvidia/cuda_nvdisasm/bin/nvdisasm")
        cands += glob.glob(site + "/triton/backends/nvidia/bin/nvdisasm")
    cands += sorted(glob.glob("/usr/local/cuda*/bin/nvdisasm"), reverse=True)
    for c in cands:
        if c and os.path.isfile(c):
            return c
    return None


def sm_number(arch: str) -> int:
    """``"sm_90a"`` -> 90; ``"compute_80"`` -> 80."""
    m = re.search(r"(\d+)", arch)
    if m is None:
        raise ValueError(f"not an architecture: {arch!r}")
    return int(m.group(1))


def targets_for(file_target: str) -> list[str]:
    """The measurement targets a PTX file whose ``.target`` is ``file_target`` can be
    assembled for: each of :data:`MEASURE_TARGETS` at or above it (an ``a``/``f``
    target only for itself), plus the file's own target, in ascending order."""
    own = sm_number(file_target)
    out = [] if file_target[-1] in "af" else [t for t in MEASURE_TARGETS if sm_number(t) >= own]
    if file_target not in out:
        out.append(file_target)
    return sorted(out, key=lambda t: (sm_number(t), t))


# ---------------------------------------------------------------------------
# SASS


@dataclass(slots=True)
class SassInst:
    addr: int
    text: str  # without the address comment and the trailing ';'
    line: int  # PTX line (0: unknown)
    guard: str  # '' or the predicate, e.g. '!P0', 'UP1'
    op: str  # opcode with modifiers, e.g. 'BRA', 'ISETP.NE.AND'


@dataclass(slots=True)
class SassFunc:
    name: str
    insts: list[SassInst] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)  # label -> address

    @property
    def instructions(self) -> int:
        """Instructions that do work: NOPs and the trailing ``BRA`` self-loop excluded."""
        n = 0
        for i in self.insts:
            if i.op == "NOP":
                continue
            if i.op.startswith("BRA") and not i.guard and _self_target(i):
                continue
            n += 1
        return n

    def registers(self, kind: str) -> set[int]:
        """Register numbers of file ``kind`` (``R``, ``UR``, ``P``, ``UP``) named
        anywhere in the function (``RZ``/``URZ``/``PT``/``UPT`` excluded)."""
        pat = _REG_PATTERNS[kind]
        out: set[int] = set()
        for i in self.insts:
            out.update(int(m) for m in pat.findall(i.text))
            if i.guard:
                out.update(int(m) for m in pat.findall(i.guard.lstrip("!")))
        return out

    def count(self, prefix: str) -> int:
        """Instructions whose opcode starts with ``prefix`` (``"BSSY"``, ``"R2UR"``)."""
        return sum(1 for i in self.insts if i.op.startswith(prefix))


_REG_PATTERNS = {
    "R": re.compile(r"(?<![A-Z_.])R(\d+)\b"),
    "UR": re.compile(r"(?<![A-Z_.])UR(\d+)\b"),
    "P": re.compile(r"(?<![A-Z_.])P(\d)\b"),
    "UP": re.compile(r"(?<![A-Z_.])UP(\d)\b"),
}
_FUNC = re.compile(r"^\s*\.text\.(\S+):")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_LINE = re.compile(r'//## File "[^"]*", line (\d+)')
_INST = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;?\s*(?:/\*.*)?$")
_HEX_TARGET = re.compile(r"^BRA\s+(?:0x)?([0-9a-f]+)$")


def _self_target(i: SassInst) -> bool:
    m = _HEX_TARGET.match(i.text)
    return m is not None and int(m.group(1), 16) == i.addr


def parse_sass(sass: str) -> dict[str, SassFunc]:
    """``nvdisasm -c [-gp]`` text -> functions with addressed (and, for ``-lineinfo``
    cubins disassembled with ``-gp``, PTX-line-annotated) instructions."""
    out: dict[str, SassFunc] = {}
    cur: SassFunc | None = None
    line = 0
    pending: list[str] = []
    for raw in sass.splitlines():
        m = _FUNC.match(raw)
        if m:
            cur = out[m.group(1)] = SassFunc(m.group(1))
            line = 0
            pending = []
            continue
        if cur is None:
            continue
        m = _LINE.search(raw)
        if m:
            line = int(m.group(1))
            continue
        m = _LABEL.match(raw.strip())
        if m:
            pending.append(m.group(1))
            continue
        m = _INST.match(raw)
        if not m:
            continue
        addr = int(m.group(1), 16)
        text = m.group(2).rstrip(";").strip()
        if not text:
            continue
        guard = ""
        if text.startswith("@"):
            guard, _, text = text.partition(" ")
            guard = guard[1:]
            text = text.strip()
        op = text.split(None, 1)[0]
        for lab in pending:
            cur.labels[lab] = addr
        pending = []
        cur.insts.append(SassInst(addr, text, line, guard, op))
    return out


_LOCATION = re.compile(r"^\s*//## (File .*)$")


def line_table(sass: str) -> dict[str, list[tuple[str, str]]]:
    """Per function, ``(opcode, source location)`` for every instruction of an
    ``nvdisasm -g -gi`` listing; the location is the listing's text (file, line and
    the ``inlined at`` chain)."""
    out: dict[str, list[tuple[str, str]]] = {}
    rows: list[tuple[str, str]] | None = None
    where = ""
    block: list[str] = []
    for raw in sass.splitlines():
        m = _FUNC.match(raw)
        if m:
            rows = out[m.group(1)] = []
            where, block = "", []
            continue
        if rows is None:
            continue
        m = _LOCATION.match(raw)
        if m:
            block.append(m.group(1))
            continue
        m = _INST.match(raw)
        if m and m.group(2).strip():
            if block:
                where, block = " | ".join(block), []
            rows.append((m.group(2).split(None, 1)[0], where))
    return out


# ---------------------------------------------------------------------------
# ptxas


@dataclass(slots=True)
class FunctionStats:
    """What ``ptxas -v`` and the disassembly say about one function."""

    name: str
    registers: int = 0
    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    sass_instructions: int | None = None  # None: no nvdisasm
    ur_registers: int | None = None
    bssy: int | None = None


@dataclass(slots=True)
class AssembleResult:
    ok: bool
    arch: str
    log: str
    seconds: float
    functions: dict[str, FunctionStats] = field(default_factory=dict)
    sass: dict[str, SassFunc] = field(default_factory=dict)
    sass_text: str = ""

    @property
    def error(self) -> str:
        """ptxas's error lines (empty when it accepted the input)."""
        return "\n".join(
            ln for ln in self.log.splitlines() if "error" in ln.lower() or "fatal" in ln.lower()
        )

    def total(self, attr: str) -> int:
        """Sum of one :class:`FunctionStats` attribute over the functions."""
        return sum(int(getattr(f, attr) or 0) for f in self.functions.values())


_DEBUG_TARGET = re.compile(r"^\s*\.target\b[^\n]*\bdebug\b", re.M)
_FN_HEAD = re.compile(r"Compiling entry function '([^']+)'|Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")


def parse_ptxas_log(log: str) -> dict[str, FunctionStats]:
    """Per-function registers, stack frame and spills from a ``ptxas -v`` log."""
    out: dict[str, FunctionStats] = {}
    cur: FunctionStats | None = None
    for ln in log.splitlines():
        m = _FN_HEAD.search(ln)
        if m:
            name = m.group(1) or m.group(2)
            cur = out.setdefault(name, FunctionStats(name))
            continue
        if cur is None:
            continue
        m = _FRAME.search(ln)
        if m:
            cur.stack_frame, cur.spill_stores, cur.spill_loads = (int(g) for g in m.groups())
            continue
        m = _USED.search(ln)
        if m:
            cur.registers = int(m.group(1))
    return out


def assemble(
    ptx: str,
    arch: str,
    *,
    opt_level: int = 3,
    lineinfo: bool = False,
    source_lines: bool = False,
    extra_args: tuple[str, ...] = (),
    disassemble: bool = True,
    timeout: float | None = 600,
) -> AssembleResult:
    """Assemble ``ptx`` with ptxas for ``arch``; disassemble when nvdisasm exists.

    A module whose ``.target`` says ``debug`` is assembled without ``-O`` (ptxas
    refuses optimized debugging), whatever ``opt_level`` says.  With ``lineinfo`` the
    disassembly maps instructions to PTX lines, or with ``source_lines`` to the source
    lines of the ``.loc`` directives (inlining chains included; see
    :func:`line_table`).  Raises
    :class:`FileNotFoundError` when ptxas is missing (callers that can do without it
    ask :func:`find_ptxas` first)."""
    import subprocess
    import tempfile
    import time
    from pathlib import Path

    ptxas = find_ptxas()
    if ptxas is None:
        raise FileNotFoundError("ptxas is not available (PATH or PTXOPT_PTXAS)")
    with tempfile.TemporaryDirectory(prefix="ptxopt-oracle-") as d:
        src = Path(d) / "in.ptx"
        cubin = Path(d) / "out.cubin"
        src.write_text(ptx)
        debug = _DEBUG_TARGET.search(ptx) is not None
        cmd = [ptxas, f"-arch={arch}", "-v", *extra_args]
        if not debug:
            cmd.insert(2, f"-O{opt_level}")
        if lineinfo:
            cmd.append("-lineinfo")
        cmd += ["-o", str(cubin), str(src)]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        seconds = time.perf_counter() - t0
        log = r.stdout + r.stderr
        res = AssembleResult(r.returncode == 0, arch, log, seconds)
        if not res.ok:
            return res
        res.functions = parse_ptxas_log(log)
        nvdisasm = find_nvdisasm() if disassemble else None
        if nvdisasm is not None:
            shown = ["-g", "-gi"] if source_lines else ["-gp"]
            args = [nvdisasm, "-c"] + (shown if lineinfo else []) + [str(cubin)]
            dis = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
            if dis.returncode == 0:
                res.sass_text = dis.stdout
                res.sass = parse_sass(dis.stdout)
                for name, sf in res.sass.items():
                    st = res.functions.setdefault(name, FunctionStats(name))
                    st.sass_instructions = sf.instructions
                    st.ur_registers = len(sf.registers("UR"))
                    st.bssy = sf.count("BSSY")
    return res
