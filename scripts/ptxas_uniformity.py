"""What ptxas treated as uniform, branch by branch, next to what ptxopt proves.

Run ``python scripts/ptxas_uniformity.py [--bra-uni] [--skip-large] [--only SUBSTRING]
[--markdown]``; ``--markdown`` prints the whole of docs/divergence-precision.md's tables.

For each corpus file (``tests/corpus/manifest.json``; the architecture is the file's
``.target``, ``sm_90a`` included): ``ptxas -arch=<target> -lineinfo`` to a cubin, then
``nvdisasm -gp -c``, whose ``//## File ".nv_debug_ptx_txt", line N`` comments give the PTX
line each SASS instruction came from.  Every SASS conditional branch (``@P BRA``,
``@UP BRA``, ``BRX``) is mapped to its PTX line; when that line of the input is a
conditional ``bra`` (or ``brx.idx``) the two form a *pair*, and the pair gets

* ptxas's verdict (:func:`classify`): ``UP`` (uniform predicate: ptxas proved it uniform),
  ``BSSY`` (the first branch after a ``BSSY``: ptxas opened a reconvergence region, so it
  treats the branch as divergent), ``BREAK`` (a loop exit paired with ``BREAK Bn``: a
  divergent exit of a loop that has a reconvergence barrier), ``BRA.U`` (a loop ptxas made
  itself, e.g. the atomic-aggregation loop, where the branch condition is its own
  ``VOTEU`` result), or one of the *bare* classes: ``back-edge`` (target at or before the
  branch), ``to-EXIT`` (target is an ``EXIT``), ``loop-exit`` (leaves the span of a back
  edge that encloses it), ``nested`` (inside another branch's ``BSSY``..``BSYNC`` region)
  and ``bare`` (a forward branch in none of those);
* ptxopt's verdict: uniform or divergent (``Divergence.branch_divergent`` of the block
  whose terminator sits on that line), and for a divergent one the root of the chain.

PTX conditional branches that no SASS branch maps to are listed as ``no SASS branch``
(predicated, if-converted, turned into ``@P EXIT``, or unrolled away).  The per-kernel count
table of the earlier version is kept (UR registers, VOTEU/S2UR/R2UR).  ``--bra-uni`` also
runs the mark-uniform-branches pass and reports SASS instruction counts and registers
before/after.
"""

from __future__ import annotations

import argparse
import glob
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LARGE_LINES = 10_000  # --skip-large skips corpus files longer than this

#: ptxas verdict classes, in the order of the tables.
CLASSES = [
    "UP",
    "BSSY",
    "BREAK",
    "BRA.U",
    "back-edge",
    "to-EXIT",
    "to-WARPSYNC",
    "loop-exit",
    "nested",
    "bare",
]
#: Classes where ptxas treats (or may treat) the branch as uniform or needs no reconvergence.
BARE = ("back-edge", "to-EXIT", "to-WARPSYNC", "loop-exit", "nested", "bare")


def find_nvdisasm() -> str | None:
    """``nvdisasm`` from PATH, the ``nvidia-cuda-nvdisasm`` pip package (any ``cuNN``),
    triton's bundled copy, or a CUDA toolkit; ``None`` when there is none."""
    cands = [shutil.which("nvdisasm") or ""]
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix]):
        site = prefix + "/lib/python*/site-packages"
        cands += sorted(glob.glob(site + "/nvidia/*/bin/nvdisasm"), reverse=True)
        cands += glob.glob(site + "/nvidia/cuda_nvdisasm/bin/nvdisasm")
        cands += glob.glob(site + "/triton/backends/nvidia/bin/nvdisasm")
    cands += glob.glob("/usr/local/cuda*/bin/nvdisasm")
    for c in cands:
        if c and pathlib.Path(c).is_file():
            return c
    return None


# ---------------------------------------------------------------------------
# SASS


@dataclass(slots=True)
class SassInst:
    addr: int
    text: str  # without the address comment and the trailing ';'
    line: int  # PTX line (0: none seen yet in this function)
    guard: str  # '' or the predicate, e.g. '!P0', 'UP1'
    op: str  # opcode with modifiers, e.g. 'BRA', 'BSSY', 'ISETP.NE.AND'


@dataclass(slots=True)
class SassFunc:
    name: str
    insts: list[SassInst] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)  # label -> address


_FUNC = re.compile(r"^\s*\.text\.(\S+):")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_LINE = re.compile(r'//## File "[^"]*", line (\d+)')
_INST = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;?\s*(?:/\*.*)?$")
_TARGET = re.compile(r"`\((\.L_x_\d+)\)")
_UR = re.compile(r"\bUR(\d+)\b")


def parse_sass(sass: str) -> dict[str, SassFunc]:
    """nvdisasm ``-gp -c`` output -> functions with addressed, line-annotated insts."""
    out: dict[str, SassFunc] = {}
    cur: SassFunc | None = None
    line = 0
    for raw in sass.splitlines():
        m = _FUNC.match(raw)
        if m:
            cur = out[m.group(1)] = SassFunc(m.group(1))
            line = 0
            continue
        if cur is None:
            continue
        m = _LINE.search(raw)
        if m:
            line = int(m.group(1))
            continue
        m = _LABEL.match(raw.strip())
        if m:
            cur.labels[m.group(1)] = -1  # fixed up by the next instruction
            continue
        m = _INST.match(raw)
        if not m:
            continue
        addr = int(m.group(1), 16)
        text = m.group(2).rstrip(";").strip()
        if not text:
            continue
        for k, v in cur.labels.items():
            if v < 0:
                cur.labels[k] = addr
        guard = ""
        body = text
        if body.startswith("@"):
            guard, _, body = body[1:].partition(" ")
            body = body.strip()
        cur.insts.append(SassInst(addr, text, line, guard, body.split(" ", 1)[0]))
    return out


def kernel_counts(f: SassFunc) -> dict[str, int]:
    """Per-kernel SASS counts of the summary table."""
    ur: set[str] = set()
    c: Counter[str] = Counter()
    for i in f.insts:
        ur.update(_UR.findall(i.text))
        for k in ("VOTEU", "S2UR", "R2UR"):
            if i.op.startswith(k):
                c[k] += 1
    return {"ur": len(ur), "voteu": c["VOTEU"], "s2ur": c["S2UR"], "r2ur": c["R2UR"]}


@dataclass(slots=True)
class SassBranch:
    func: str
    addr: int
    line: int
    guard: str
    op: str
    target: int  # -1: unknown (BRX)
    cls: str


def _is_cond_branch(i: SassInst) -> bool:
    return (i.op.startswith("BRA") and i.guard != "") or i.op.startswith("BRX")


def classify(f: SassFunc) -> list[SassBranch]:
    """ptxas's verdict on each conditional branch of ``f`` (see the module docstring).

    The first control instruction after a ``BSSY`` (``BRA``/``BRX``/``BREAK``/``CALL``/
    ``EXIT``/``RET``/``BSSY``/``BSYNC``) is the one that region was opened for; when it is a
    conditional branch, ptxas treats that branch as divergent.  Everything else is judged
    from addresses: back edges (target <= address) delimit loops ``[target, address]``."""
    insts = f.insts
    opened: set[int] = set()
    regions: list[tuple[int, int]] = []  # (BSSY address, reconvergence address)
    control = ("BRA", "BRX", "BREAK", "CALL", "EXIT", "RET", "BSSY", "BSYNC")
    for k, i in enumerate(insts):
        if i.op.startswith("BSSY"):
            m = _TARGET.search(i.text)
            end = f.labels.get(m.group(1), -1) if m else -1
            regions.append((i.addr, end))
            for j in insts[k + 1 :]:
                if j.op.startswith(control):
                    if _is_cond_branch(j):
                        opened.add(j.addr)
                    break
    at = {i.addr: k for k, i in enumerate(insts)}
    loops: list[tuple[int, int]] = []
    targets: dict[int, int] = {}
    for i in insts:
        if i.op.startswith("BRA"):
            m = _TARGET.search(i.text)
            t = f.labels.get(m.group(1), -1) if m else -1
            targets[i.addr] = t
            if 0 <= t <= i.addr:
                loops.append((t, i.addr))
    out: list[SassBranch] = []
    for k, i in enumerate(insts):
        if not _is_cond_branch(i):
            continue
        t = targets.get(i.addr, -1)
        prev = insts[k - 1] if k else None
        if i.guard.lstrip("!").startswith("UP"):
            cls = "UP"
        elif i.addr in opened:
            cls = "BSSY"
        elif prev is not None and prev.op.startswith("BREAK") and prev.guard == i.guard:
            cls = "BREAK"
        elif i.op.startswith("BRA.U"):
            cls = "BRA.U"
        elif 0 <= t <= i.addr:
            cls = "back-edge"
        elif w := _walk_target(insts, at, targets, t) or _walk_target(
            insts, at, targets, insts[k + 1].addr if k + 1 < len(insts) else -1
        ):
            cls = "to-" + w
        elif any(lo <= i.addr <= hi and not lo <= t <= hi for lo, hi in loops):
            cls = "loop-exit"
        elif any(a < i.addr < e for a, e in regions):
            cls = "nested"
        else:
            cls = "bare"
        out.append(SassBranch(f.name, i.addr, i.line, i.guard, i.op, t, cls))
    return out


_STOP = ("BRX", "BSYNC", "BSSY", "BREAK", "BAR", "VOTE", "SHFL", "MATCH")


def _walk_target(insts: list[SassInst], at: dict[int, int], targets: dict[int, int], t: int) -> str:
    """What the lanes that jump to address ``t`` run into, following unconditional
    ``BRA``s through at most 64 straight-line instructions: ``"EXIT"`` (an ``EXIT``/``RET``:
    they never meet the other lanes again, no reconvergence region is needed),
    ``"WARPSYNC"`` (ptxas reconverges the whole warp there, before a ``bar.sync`` or a
    ``*.sync`` collective, instead of with ``BSSY``/``BSYNC``) or ``""``."""
    k = at.get(t, -1)
    for _ in range(64):
        if not 0 <= k < len(insts):
            return ""
        i = insts[k]
        if i.op.startswith(("EXIT", "RET")) and not i.guard:
            return "EXIT"
        if i.op.startswith("WARPSYNC"):
            return "WARPSYNC"
        if i.op.startswith("BRA") and not i.guard:
            k = at.get(targets.get(i.addr, -1), -1)
            continue
        if i.op.startswith(_STOP) or (i.op.startswith(("BRA", "EXIT", "RET")) and i.guard):
            return ""
        k += 1
    return ""


def assemble(ptx_path: pathlib.Path | None, ptx: str, arch: str, nvdisasm: str) -> tuple[str, str]:
    """(nvdisasm -gp -c output, ptxas -v log) of ``ptx`` at ``arch``."""
    with tempfile.TemporaryDirectory() as d:
        src = pathlib.Path(d) / "x.ptx"
        src.write_text(ptx)
        r = subprocess.run(
            ["ptxas", f"-arch={arch}", "-v", "-lineinfo", "-o", f"{d}/x.cubin", str(src)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        sass = subprocess.run(
            [nvdisasm, "-gp", "-c", f"{d}/x.cubin"], capture_output=True, text=True, check=True
        ).stdout
    return sass, r.stderr


def regs_used(ptxas_v: str) -> dict[str, int]:
    out: dict[str, int] = {}
    fn = None
    for line in ptxas_v.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'|Function properties for (\S+)", line)
        if m:
            fn = m.group(1) or m.group(2)
        m = re.search(r"Used (\d+) registers", line)
        if m and fn:
            out[fn] = int(m.group(1))
    return out


def target_of(text: str) -> str:
    m = re.search(r"^\s*\.target\s+(sm_\w+)", text, re.M)
    if not m:
        raise SystemExit("no .target directive")
    return m.group(1)


# ---------------------------------------------------------------------------
# PTX side


_PTX_CBRA = re.compile(r"^\s*@!?%\w+\s+bra(\.uni)?\s|^\s*brx\.idx\b")


@dataclass(slots=True)
class PtxBranch:
    line: int
    func: str
    text: str
    uniform: bool
    root: str  # for a divergent branch: the end of the explain chain


def ptx_branches(mod: Any, md: Any) -> dict[int, PtxBranch]:
    """PTX line -> ptxopt's verdict on the conditional branch there."""
    from ptxopt.analysis.divergence import branch_condition, is_conditional_branch

    out: dict[int, PtxBranch] = {}
    for fn in mod.funcs:
        res = md.funcs[fn.name]
        for b in fn.blocks:
            t = b.terminator
            if not is_conditional_branch(t) or t.ast.span is None:
                continue
            line = t.ast.span.line
            div = res.branch_divergent(b.index)
            root = ""
            if div:
                c = branch_condition(t)
                chain = res.explain(c) if c is not None else []
                root = chain[-1][1] if chain else "?"
            out[line] = PtxBranch(line, fn.name, "", not div, root)
    return out


# ---------------------------------------------------------------------------
# the study


@dataclass(slots=True)
class Pair:
    file: str
    sass: SassBranch
    ptx: PtxBranch


@dataclass(slots=True)
class FileResult:
    path: str
    arch: str
    ptxas_s: float
    pairs: list[Pair]
    unmatched_sass: list[tuple[SassBranch, str]]  # SASS branch, text of its PTX line
    no_sass: list[tuple[PtxBranch, str]]  # PTX branch, what ptxas made of its line
    kernels: list[str]


def study_file(path: str, text: str, nvdisasm: str, summary: list[str]) -> FileResult:
    from ptxopt.report.analyze_cli import analyze_text

    arch = target_of(text)
    t0 = time.perf_counter()
    sass, _ = assemble(None, text, arch, nvdisasm)
    ptxas_s = time.perf_counter() - t0
    funcs = parse_sass(sass)
    mod, md, rep = analyze_text(text, path)
    lines = text.splitlines()
    pb = ptx_branches(mod, md)
    for line, b in pb.items():
        b.text = lines[line - 1].strip()
    pairs: list[Pair] = []
    unmatched: list[tuple[SassBranch, str]] = []
    hit: set[int] = set()
    for f in funcs.values():
        for sb in classify(f):
            src = lines[sb.line - 1] if 0 < sb.line <= len(lines) else ""
            src = src.split("//", 1)[0]
            if sb.line in pb and _PTX_CBRA.match(src):
                pairs.append(Pair(path, sb, pb[sb.line]))
                hit.add(sb.line)
            else:
                unmatched.append((sb, src.strip()))
    no_sass: list[tuple[PtxBranch, str]] = []
    for line in sorted(pb):
        if line in hit:
            continue
        fate = []
        for f in funcs.values():
            for i in f.insts:
                if i.line == line and i.op not in ("NOP",):
                    fate.append(("@" + i.guard + " " if i.guard else "") + i.op)
        no_sass.append((pb[line], ", ".join(dict.fromkeys(fate)) or "no SASS at that line"))
    # the per-kernel count table
    cls_by_func: dict[str, Counter[str]] = {}
    for p in pairs:
        cls_by_func.setdefault(p.sass.func, Counter())[p.sass.cls] += 1
    all_by_func: dict[str, Counter[str]] = {}
    for f in funcs.values():
        all_by_func[f.name] = Counter(b.cls for b in classify(f))
    kernels = []
    for fr in rep["functions"]:
        if fr["kind"] != ".entry":
            continue
        name = fr["name"]
        kernels.append(name)
        sf = funcs.get(name)
        c = all_by_func.get(name, Counter())
        k = kernel_counts(sf) if sf else {}
        sm = fr["summary"]
        n = sum(c.values())
        summary.append(
            f"| {path} | {name[:28]} | {n} | {c['BSSY']} | {n - c['BSSY'] - c['UP']} "
            f"| {c['UP']} | {k.get('ur', '?')} | {k.get('voteu', '?')} | {k.get('s2ur', '?')} "
            f"| {k.get('r2ur', '?')} | {sm['branches']} | {sm['uniform_branches']} "
            f"| {sm['uniform_values']}/{sm['values']} |"
        )
    return FileResult(path, arch, ptxas_s, pairs, unmatched, no_sass, kernels)


def more_uniform(p: Pair) -> bool:
    """ptxas treats the branch as uniform (``@UP``) or needed nothing for it (a genuinely
    bare forward branch) while ptxopt calls it divergent."""
    return p.sass.cls in ("UP", "bare") and not p.ptx.uniform


def less_uniform(p: Pair) -> bool:
    """ptxopt proves the branch uniform but ptxas opened a reconvergence region."""
    return p.sass.cls in ("BSSY", "BREAK") and p.ptx.uniform


# Hand-checked explanations of the "ptxas more uniform than ptxopt" pairs, keyed by
# (file, PTX line); the script prints "UNEXPLAINED" for a pair missing here.
EXPLAIN: dict[tuple[str, int], str] = {}
_DEBUG = (
    "; the file's `.target sm_90, debug` makes ptxas compile it unoptimised (the SASS "
    "is full of `MOV Rn, Rn`, calls are not inlined), and then ptxas does not prove it"
)
LESS: dict[tuple[str, int], str] = {
    ("cuda/atomics.G.sm90.ptx", 814): "`%p12` tests the `__shared__` flag `is_last`, read "
    "by a generic `ld.u8` after `bar.sync` from `cvta.shared` of the symbol: one address for "
    "the warp, so one value (ptxopt: uniform address => uniform load)" + _DEBUG,
    ("cuda/reduce.G.sm90.ptx", 1312): "`%p9` tests `%r5`, the return value of the "
    "`__all_sync` wrapper `.func` (`vote.sync.all` under the uniform `activemask` mask); "
    "ptxopt's inter-procedural step proves the return uniform" + _DEBUG,
    ("cuda/reduce.G.sm90.ptx", 1340): "`%p11` tests `%r6`, the return value of the "
    "`__any_sync` wrapper `.func` (`vote.sync.any`, uniform mask); inter-procedural "
    "uniform return, as above" + _DEBUG,
}


def bra_uni_rows(path: str, text: str, arch: str, nvdisasm: str) -> list[str]:
    from ptxopt.analysis.divergence import bind_module
    from ptxopt.analysis.manager import AnalysisManager
    from ptxopt.ir.lift import lift_module
    from ptxopt.ir.lower import print_ir_module
    from ptxopt.ptx.parser import parse
    from ptxopt.transforms.mark_uniform_branches import run as mark

    mod = lift_module(parse(text, path))
    bind_module(mod)
    am = AnalysisManager()
    if not any([mark(fn, am) for fn in mod.funcs]):
        return []
    base = print_ir_module(lift_module(parse(text, path)))
    sass0, log0 = assemble(None, base, arch, nvdisasm)
    sass1, log1 = assemble(None, print_ir_module(mod), arch, nvdisasm)
    a, b = parse_sass(sass0), parse_sass(sass1)
    r0, r1 = regs_used(log0), regs_used(log1)
    rows = []
    for k in sorted(a):
        if k not in r0:
            continue  # only kernels (ptxas -v reports registers per entry)
        n0, n1 = len(a[k].insts), len(b[k].insts) if k in b else -1
        if (n0, r0.get(k)) != (n1, r1.get(k)):
            rows.append(f"| {path} | {k[:28]} | {n0} -> {n1} | {r0.get(k)} -> {r1.get(k)} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bra-uni", action="store_true", help="measure mark-uniform-branches")
    ap.add_argument("--only", default="", help="substring filter on corpus paths")
    ap.add_argument(
        "--skip-large", action="store_true", help=f"skip files over {LARGE_LINES} lines"
    )
    ap.add_argument("--json", default="", help="also write every pair to this JSON file")
    args = ap.parse_args()
    nvdisasm = find_nvdisasm()
    if shutil.which("ptxas") is None:
        raise SystemExit("ptxas is not on PATH: this study needs ptxas 13.0.88")
    if nvdisasm is None:
        raise SystemExit(
            "no nvdisasm: not on PATH, not in the nvidia-cuda-nvdisasm pip package, not in "
            "triton's bundled copy (pip install nvidia-cuda-nvdisasm)"
        )
    manifest = json.loads((ROOT / "tests/corpus/manifest.json").read_text())
    ver = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout
    print(f"ptxas: {ver.strip().splitlines()[-1]}\nnvdisasm: {nvdisasm}\n")
    summary: list[str] = []
    results: list[FileResult] = []
    bra_rows: list[str] = []
    skipped: list[str] = []
    for f in manifest["files"]:
        path = f["path"]
        if args.only not in path:
            continue
        text = (ROOT / "tests/corpus" / path).read_text()
        if args.skip_large and text.count("\n") > LARGE_LINES:
            skipped.append(path)
            continue
        r = study_file(path, text, nvdisasm, summary)
        results.append(r)
        print(f"# {path}: -arch={r.arch}, ptxas {r.ptxas_s:.1f} s", file=sys.stderr)
        if args.bra_uni:
            bra_rows += bra_uni_rows(path, text, r.arch, nvdisasm)
    report(results, summary, bra_rows, skipped, args.bra_uni)
    if args.json:
        data = [
            {
                "file": p.file, "func": p.sass.func, "addr": p.sass.addr, "line": p.ptx.line,
                "ptx": p.ptx.text, "ptxas": p.sass.cls, "ptxopt_uniform": p.ptx.uniform,
                "root": p.ptx.root,
            }
            for r in results for p in r.pairs
        ]  # fmt: skip
        pathlib.Path(args.json).write_text(json.dumps(data, indent=1) + "\n")


def report(
    results: list[FileResult],
    summary: list[str],
    bra_rows: list[str],
    skipped: list[str],
    bra_uni: bool,
) -> None:
    pairs = [p for r in results for p in r.pairs]
    if skipped:
        print(f"skipped (--skip-large): {', '.join(skipped)}\n")
    # 1. category x verdict
    print("## Matched branches: ptxas class x ptxopt verdict\n")
    print("| ptxas class | pairs | ptxopt uniform | ptxopt divergent |\n|---|---|---|---|")
    tot = Counter[str]()
    for c in CLASSES:
        ps = [p for p in pairs if p.sass.cls == c]
        u = sum(p.ptx.uniform for p in ps)
        tot["n"] += len(ps)
        tot["u"] += u
        print(f"| {c} | {len(ps)} | {u} | {len(ps) - u} |")
    print(f"| **total** | {tot['n']} | {tot['u']} | {tot['n'] - tot['u']} |")
    nu = sum(len(r.unmatched_sass) for r in results)
    nn = sum(len(r.no_sass) for r in results)
    nptx = len({(p.file, p.ptx.line) for p in pairs})
    print(
        f"\n{tot['n']} SASS conditional branches matched to {nptx} distinct PTX conditional "
        f"branches; {nu} SASS conditional branches come from a PTX line that is not a "
        f"conditional branch (made by ptxas); {nn} PTX conditional branches have no SASS "
        "branch.\n"
    )
    # 2. per file
    print("## Per file\n")
    print(
        "| file | arch | ptxas s | pairs | " + " | ".join(CLASSES)
        + " | ptxopt uniform | ptxas-made | PTX bra without SASS bra |"
    )  # fmt: skip
    print("|---" * (len(CLASSES) + 7) + "|")
    for r in results:
        cc = Counter(p.sass.cls for p in r.pairs)
        print(
            f"| {r.path} | {r.arch} | {r.ptxas_s:.1f} | {len(r.pairs)} | "
            + " | ".join(str(cc[k]) for k in CLASSES)
            + f" | {sum(p.ptx.uniform for p in r.pairs)} | {len(r.unmatched_sass)} "
            f"| {len(r.no_sass)} |"
        )
    # 3. the differences
    print("\n## ptxas more uniform than ptxopt (`UP` or `bare`, ptxopt divergent)\n")
    print("| file | kernel | SASS addr | PTX line | PTX | ptxas | ptxopt root | why |")
    print("|---|---|---|---|---|---|---|---|")
    for p in pairs:
        if more_uniform(p):
            why = EXPLAIN.get((p.file, p.ptx.line), "UNEXPLAINED")
            print(_row(p, why))
    print("\n## ptxopt uniform, ptxas opened a reconvergence region (`BSSY`/`BREAK`)\n")
    print("| file | kernel | SASS addr | PTX line | PTX | ptxas | ptxopt root | why |")
    print("|---|---|---|---|---|---|---|---|")
    for p in pairs:
        if less_uniform(p):
            print(_row(p, LESS.get((p.file, p.ptx.line), "UNEXPLAINED")))
    print("\n## PTX conditional branches without a SASS branch\n")
    print("| file | function | PTX line | PTX | ptxopt | SASS at that line |\n" + "|---" * 6 + "|")
    for r in results:
        for b, fate in r.no_sass:
            v = "uniform" if b.uniform else "divergent"
            print(f"| {r.path} | {b.func[:28]} | {b.line} | `{b.text}` | {v} | {fate} |")
    print("\n## SASS conditional branches made by ptxas (PTX line is not a branch)\n")
    c2 = Counter(
        (r.path, sb.cls, src.split(" ")[0] if src else "-")
        for r in results
        for sb, src in r.unmatched_sass
    )
    print("| file | ptxas class | opcode at the PTX line | count |\n|---|---|---|---|")
    for (path, cls, op), n in sorted(c2.items()):
        print(f"| {path} | {cls} | `{op}` | {n} |")
    # 4. all pairs
    print("\n## Every matched pair\n")
    print("| file | kernel | SASS addr | PTX line | PTX | ptxas | ptxopt |\n" + "|---" * 7 + "|")
    for p in pairs:
        v = "uniform" if p.ptx.uniform else "divergent"
        print(
            f"| {p.file} | {p.sass.func[:24]} | {p.sass.addr:#06x} | {p.ptx.line} "
            f"| `{p.ptx.text[:40]}` | {p.sass.cls} | {v} |"
        )
    print("\n## Per kernel counts\n")
    print(
        "| file | kernel | ptxas cond BRA | opened by BSSY | not opened by BSSY | @UP BRA "
        "| UR regs | VOTEU | S2UR | R2UR | ptxopt cond bra | ptxopt uniform bra "
        "| ptxopt uniform values |"
    )
    print("|---" * 13 + "|")
    print("\n".join(summary))
    if bra_uni:
        print("\n## mark-uniform-branches (kernels whose SASS changed)\n")
        print("| file | kernel | SASS instructions | registers |\n|---|---|---|---|")
        print("\n".join(bra_rows) if bra_rows else "| (none) | | | |")


def _row(p: Pair, why: str) -> str:
    return (
        f"| {p.file} | {p.sass.func[:24]} | {p.sass.addr:#06x} | {p.ptx.line} "
        f"| `{p.ptx.text[:40]}` | {p.sass.cls} | {p.ptx.root[:60]} | {why} |"
    )


if __name__ == "__main__":
    main()
