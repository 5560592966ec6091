"""How well the uniform register model (ptxopt.ori, spec 02 phase 74) predicts ptxas.

Run ``python scripts/ur_fidelity.py [--only SUBSTRING] [--skip-large] [--targets sm_80,sm_90]
[--misses N] [--cache DIR] [--tolerate-bridges] [--miss-list FILE] [--count-list FILE]
[--kernel-list FILE]
[--count-oracle]``
(``--cache`` keeps ptxas/nvdisasm results between runs: the large files take minutes to
assemble).

For every corpus file and each target among ``--targets`` it can be assembled for (an
``sm_90a`` file counts as sm_90): ``ptxas -lineinfo`` then ``nvdisasm -gp`` through
:mod:`ptxopt.oracle`, so every SASS instruction carries the PTX line it came from.  A
PTX line that writes a register is then judged by what ptxas wrote at that line:

* ``UR``: a SASS instruction there writes a UR/UP (a computed ``U*`` op, ``S2UR``,
  ``R2UR``, ``VOTEU`` ...);
* ``ldc``: only ``ULDC``/``LDCU`` (constant-bank reads: their own class, not scored);
* ``desc``: only ``R2UR`` into the register pair a ``desc[URx]`` memory operand names
  (the 64-bit memory descriptor moved into UR before each access, which debug
  targets do: their own class, not scored);
* at a ``wgmma`` line, a ``UMOV`` into the four registers of its ``gdesc[URx]``
  operand stages its matrix descriptors, an operand (the line's own values are the R
  accumulators): not scored as UR there; at any other line such a move is the line's
  value;
* ``window``: at a memory access (``ld``, ``st``, ``atom`` ...), the CTA's shared
  window computed into UR for a symbolic shared address (``S2UR UR5, SR_CgaCtaId ;
  UMOV UR4, 0x400 ; ULEA UR4, UR5, UR4, 0x18 ; LDS R5, [UR4]`` at sm_90): an address
  constant of the CTA, like a constant-bank read, not the value the line defines (its
  own class, not scored); at a ``mov`` of the symbol the window is the line's value;
* ``mask``: only a uniform register that nothing but ``BRA.DIV`` reads (the
  membermask ptxas tests before a warp-synchronous instruction, e.g. ``UMOV UR6,
  0xffffffff`` for a ``shfl.sync``: its own class, not scored); an ``R2UR P2, URZ,
  R5`` writes only a predicate;
* ``R``: only per-thread registers;
* nothing: the line was folded into another (not scored).

The model predicts UR when any web the line writes is in UR/UP.  Printed: precision and
recall per target and per kernel family (producer; debug targets are their own family),
the baseline "uniform => UR" on the same lines, predicted vs ptxas UR counts per
function (ptxas: distinct UR numbers in the SASS), the miss classes, and the model's
time against the ptxas round trip on the largest file measured.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import pickle
import re
import sys
import time
from collections import Counter, defaultdict

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ptxopt.oracle import assemble, find_nvdisasm, find_ptxas, targets_for  # noqa: E402
from ptxopt.report.analyze_cli import analyze_text  # noqa: E402

LARGE = 10_000
_UREG = re.compile(r"^U[RP]\d+$")
_RREG = re.compile(r"^(R\d+|P\d)$")
_DESC = re.compile(r"desc\[UR(\d+)\]")
_GDESC = re.compile(r"\bgdesc\[UR(\d+)\]")  # the A and B descriptors: 4 registers
_UR_NUM = re.compile(r"\bUR(\d+)\b")


def _dest_ur(text: str) -> int:
    m = re.match(r"^\S+\s+UR(\d+)", text)
    return int(m.group(1)) if m else -1


def sass_verdict(text: str) -> str:
    """'UR', 'ldc', 'R' or '' for one SASS instruction (what its destination is)."""
    op = text.split(None, 1)[0]
    args = text[len(op) :].strip()
    operands = [a.strip() for a in args.split(",")] if args else []
    dest = operands[0] if operands else ""
    if op.startswith(("ULDC", "LDCU")):
        return "ldc"
    if op.startswith("BRA"):
        return ""  # ``BRA.DIV UR6``: the uniform register is read, not written
    if op.startswith("R2UR") and len(operands) > 1 and operands[1] == "URZ":
        # ``R2UR P2, URZ, R5``: only the predicate (whether R5 is the same in every
        # lane) is written, no uniform register
        return "R" if _RREG.match(dest) else ""
    if _UREG.match(dest) or op.startswith(("R2UR", "S2UR")):
        return "UR"
    if _RREG.match(dest):
        return "R"
    return ""


def mask_writes(insts: list[tuple[str, str]]) -> set[int]:
    """Indices (into ``insts``: one function's SASS in order, each as (guard, text)) of
    the instructions whose uniform register only ``BRA.DIV`` reads before it is written
    again: the membermask that ptxas tests before a warp-synchronous instruction
    (``UMOV UR6, 0xffffffff ; ... ; BRA.DIV UR6`` for a ``shfl.sync``, or ``REDUX.OR
    UR4, R5`` of a ``vote.sync``'s mask register), not a value of the PTX line the
    check is attributed to.  A guarded write adds to the writes a read may see."""
    writers: dict[int, list[int]] = {}  # UR number -> the writes a read there may see
    by_div: set[int] = set()  # writes BRA.DIV reads
    other: set[int] = set()  # writes something else reads
    for i, (guard, text) in enumerate(insts):
        op, _, args = text.partition(" ")
        div = op == "BRA.DIV"
        k = -1 if div else _dest_ur(text)  # the UR written, if any
        body = args.partition(",")[2] if k >= 0 else args
        for m in _UR_NUM.finditer(body):
            (by_div if div else other).update(writers.get(int(m.group(1)), ()))
        if k >= 0:
            for r in (k, k + 1) if ".64" in op or ".WIDE" in op else (k,):
                writers[r] = [*writers.get(r, ()), i] if guard else [i]
    return by_div - other


def window_writes(insts: list[tuple[str, str]]) -> set[int]:
    """Indices of the instructions that compute the CTA's shared window into a UR:
    ``ULEA URz, URx, URy, 0x18`` whose sources were last written by ``S2UR URx,
    SR_CgaCtaId`` and ``UMOV URy, 0x400``, the three of them."""
    last: dict[int, tuple[int, str]] = {}  # UR number -> (its last write, that text)
    out: set[int] = set()
    for n, (_, text) in enumerate(insts):
        m = _WINDOW_LEA.match(text)
        if m:
            a = last.get(int(m.group(2)))
            b = last.get(int(m.group(3)))
            if (
                a is not None
                and b is not None
                and a[1].startswith("S2UR") and a[1].endswith("SR_CgaCtaId")
                and b[1].startswith("UMOV") and b[1].endswith(", 0x400")
            ):  # fmt: skip
                out.update((a[0], b[0], n))
        k = _dest_ur(text)
        if k >= 0:
            last[k] = (n, text)
    return out


_WINDOW_LEA = re.compile(r"^ULEA UR(\d+), UR(\d+), UR(\d+), 0x18$")


def instruction_verdicts(insts: list[tuple[str, str]]) -> list[str]:
    """The verdict of every SASS instruction of one function ((guard, text) in order):
    :func:`sass_verdict`, with the UR writes that are no value of their PTX line told
    apart -- ``desc`` (an R2UR into a ``desc[URx]`` memory descriptor), ``gdesc`` (a
    UMOV into the four registers of a ``gdesc[URx]`` wgmma operand) and ``window`` (the
    shared window, :func:`window_writes`), both judged by the line (:func:`line_truth`),
    and ``mask`` (:func:`mask_writes`)."""
    desc = {int(m) + k for _, t in insts for m in _DESC.findall(t) for k in (0, 1)}
    gdesc = {int(m) + k for _, t in insts for m in _GDESC.findall(t) for k in range(4)}
    masks = mask_writes(insts)
    window = window_writes(insts)
    out = []
    for n, (_, text) in enumerate(insts):
        v = sass_verdict(text)
        if v == "UR" and n in window:
            v = "window"
        elif v == "UR" and text.startswith("R2UR") and _dest_ur(text) in desc:
            v = "desc"  # a memory descriptor moved into UR: not a value of the line
        elif v == "UR" and text.startswith("UMOV ") and _dest_ur(text) in gdesc:
            v = "gdesc"
        elif v == "UR" and n in masks:
            v = "mask"  # a warp-synchronous instruction's membermask check
        out.append(v)
    return out


_ACCESSES = frozenset(("ld", "ldu", "st", "atom", "red", "cp", "mbarrier", "ldmatrix", "stmatrix"))


def line_truth(got: set[str], opcode: str) -> bool | None:
    """Whether ptxas wrote a UR at a PTX line whose SASS verdicts are ``got`` (None: the
    line is not scored).  Moves into a wgmma's descriptor registers at the ``wgmma``
    line itself stage its operands (``UMOV UR21, 0x40000040 ; UMOV UR20, UR12 ;
    HGMMA.64x32x16.F32.BF16 R88, gdesc[UR20], RZ, !UPT``: the values the line defines
    are the R accumulators); at any other line such a move is that line's value.  The
    shared window at a memory access is the access's address, not the value the line
    defines; at any other line (a ``mov`` of the symbol) it is the line's value."""
    if "gdesc" in got:
        got = got - {"gdesc"} | (set() if opcode == "wgmma" else {"UR"})
    if "window" in got:
        got = got - {"window"} | (set() if opcode in _ACCESSES else {"UR"})
    if "UR" in got:
        return True
    if "R" in got:
        return False
    return None


def family(path: str, text: str) -> str:
    if re.search(r"^\s*\.target\b[^\n]*\bdebug\b", text, re.M):
        return "debug"
    return path.split("/")[0]


def assembled(text: str, arch: str, cache: str) -> tuple[dict | None, float]:  # type: ignore[type-arg]
    """SASS per function of ``text`` at ``arch`` (None: ptxas rejected it) and ptxas's
    seconds; with ``cache`` a directory keeps the result per (text, arch, ptxas)."""
    key = ""
    if cache:
        h = hashlib.sha256(f"{arch}\0{find_ptxas()}\0{text}".encode()).hexdigest()[:24]
        key = os.path.join(cache, h + ".pickle")
        if os.path.exists(key):
            with open(key, "rb") as fh:
                return pickle.load(fh)  # type: ignore[no-any-return]
    r = assemble(text, arch, lineinfo=True)
    out = (r.sass if r.ok else None, r.seconds)
    if key:
        os.makedirs(cache, exist_ok=True)
        with open(key, "wb") as fh:
            pickle.dump(out, fh)
    return out


def measure_file(  # type: ignore[type-arg]
    path: str,
    text: str,
    arch: str,
    stats: dict,
    cache: str = "",
    tolerate: bool = False,
    count_oracle: bool = False,
) -> None:
    """Score one file at one target into ``stats`` (every miss also goes to
    ``stats["miss_rows"]``: target, file, line, kind, reason, PTX text, SASS there).
    ``count_oracle``: also count the UR registers of the webs ptxas put in UR (the
    lines with a UR write), to separate the count's error from the set's."""
    from ptxopt.ori.report import module_plans

    sass, ptxas_s = assembled(text, arch, cache)
    if sass is None:
        stats["failed"].append((path, arch))
        return
    verdict: dict[int, set[str]] = defaultdict(set)
    at_line: dict[int, list[str]] = defaultdict(list)
    for sf in sass.values():
        verdicts = instruction_verdicts([(i.guard, i.text) for i in sf.insts])
        for i, v in zip(sf.insts, verdicts, strict=True):
            if v:
                verdict[i.line].add(v)
            at_line[i.line].append(i.text)
    t0 = time.perf_counter()
    mod, md, _ = analyze_text(text, path)
    t1 = time.perf_counter()
    plans = module_plans(mod, md, arch, tolerate_bridges=tolerate)
    model_s = time.perf_counter() - t1
    if count_oracle:
        ur_lines = {line for line, v in verdict.items() if v & {"UR", "gdesc", "window"}}
        given = module_plans(mod, md, arch, tolerate_bridges=tolerate, ur_lines=ur_lines)
        for p, g in zip(plans, given, strict=True):
            p.ur_count_of_lines = g.ur_count_of_lines
    stats["timing"].append((path, arch, text.count("\n"), model_s, t1 - t0, ptxas_s))
    fam = family(path, text)
    tgt = "sm_90" if arch.startswith("sm_90") else arch
    lines = text.splitlines()
    for f, p in zip(mod.funcs, plans, strict=True):
        div = md.funcs[f.name]
        own: Counter = Counter()  # type: ignore[type-arg]
        for b in f.blocks:
            for ins in b.insts:
                if not ins.defs or ins.ast.span is None:
                    continue
                line = ins.ast.span.line
                truth = line_truth(verdict.get(line, set()), ins.ast.opcode)
                if truth is None:
                    continue
                files = {p.webs[d.var].file for d in ins.defs if d.var in p.webs}
                pred = bool(files & {"UR", "UP"})
                base = all(div.is_uniform(d) for d in ins.defs)
                own[(pred, truth)] += 1
                for key in ((tgt, fam), (tgt, "ALL")):
                    stats["model"][key][(pred, truth)] += 1
                    stats["base"][key][(base, truth)] += 1
                if pred != truth:
                    w = p.webs.get(ins.defs[0].var)
                    why = (w.why if w else "") or "converted"
                    why = re.sub(r"\(cost \d+\)", "", re.sub(r"sm_\d+a?", "sm_N", why)).strip()
                    cls = "false UR" if pred else "missed UR"
                    stats["miss"][(cls, ins.ast.opcode, why)] += 1
                    stats["miss_rows"].append(
                        f"{tgt}\t{path}:{line}\t{cls}\t{why}\t{' '.join(lines[line - 1].split())}"
                        f"\t{' ; '.join(at_line.get(line, []))}"
                    )
                    if len(stats["examples"][(cls, ins.ast.opcode, why)]) < 2:
                        stats["examples"][(cls, ins.ast.opcode, why)].append(
                            f"{path}:{line} {lines[line - 1].strip()[:60]}"
                        )
        _, _, tp, fp, fn = pr(own)
        stats["kernel_rows"].append(f"{tgt}\t{fam}\t{path}\t{f.name}\t{tp}\t{fp}\t{fn}")
        sf = sass.get(f.name)
        if sf is not None and f.ast.kind == ".entry":
            urs = sf.registers("UR")
            stats["counts"][(tgt, fam)].append((path, f.name, p.ur_count, len(urs)))
            stats["count_rows"].append(
                f"{tgt}\t{fam}\t{path}\t{f.name}\t{p.ur_count}\t{len(urs)}"
                f"\t{p.ur_count - len(urs)}\t{max(urs, default=-1) + 1}"
                f"\t{p.ur_count_of_lines}"
            )
            if count_oracle:
                stats["oracle_counts"][(tgt, fam)].append((p.ur_count_of_lines, len(urs)))


def new_stats() -> dict:  # type: ignore[type-arg]
    """The tallies :func:`measure_file` adds to."""
    return {
        "model": defaultdict(Counter), "base": defaultdict(Counter), "miss": Counter(),
        "examples": defaultdict(list), "counts": defaultdict(list), "timing": [], "failed": [],
        "miss_rows": [], "count_rows": [], "oracle_counts": defaultdict(list),
        "kernel_rows": [],
    }  # fmt: skip


def pr(c: Counter) -> tuple[float, float, int, int, int]:  # type: ignore[type-arg]
    tp, fp, fn = c[(True, True)], c[(True, False)], c[(False, True)]
    return tp / max(1, tp + fp), tp / max(1, tp + fn), tp, fp, fn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--targets", default="sm_80,sm_90")
    ap.add_argument("--misses", type=int, default=30, help="miss classes printed")
    ap.add_argument(
        "--miss-list",
        default="",
        help="write every missed line (target, file:line, kind, reason, PTX, SASS) to this file",
    )
    ap.add_argument(
        "--count-list",
        default="",
        help="write per kernel: target, family, file, function, predicted UR count, "
        "ptxas's (distinct UR names), predicted - ptxas, ptxas's highest UR + 1, the count "
        "of ptxas's UR set (with --count-oracle; -1 otherwise)",
    )
    ap.add_argument(
        "--kernel-list",
        default="",
        help="write per function: target, family, file, function, tp, fp, fn",
    )
    ap.add_argument(
        "--count-oracle",
        action="store_true",
        help="also count the webs ptxas put in UR (its UR lines) with the model's count: "
        "the count's own error, apart from the set's",
    )
    ap.add_argument("--cache", default="", help="directory caching ptxas+nvdisasm results")
    ap.add_argument(
        "--tolerate-bridges",
        action="store_true",
        help="the model variant that keeps a web "
        "in UR when its uniform readers outnumber its bridges",
    )
    args = ap.parse_args()
    if find_ptxas() is None or find_nvdisasm() is None:
        raise SystemExit("this study needs ptxas 13.0.88 and nvdisasm")
    manifest = json.loads((ROOT / "tests/corpus/manifest.json").read_text())
    want = args.targets.split(",")
    stats = new_stats()
    for f in manifest["files"]:
        path = f["path"]
        if args.only not in path or (args.skip_large and f["lines"] > LARGE):
            continue
        text = (ROOT / "tests/corpus" / path).read_text()
        for arch in targets_for(f["target"]):
            if not any(arch.startswith(t) for t in want):
                continue
            measure_file(
                path, text, arch, stats, args.cache, args.tolerate_bridges, args.count_oracle
            )
            print(f"# {path} {arch}", file=sys.stderr)
    print("## Precision and recall per target and family (model | baseline uniform => UR)\n")
    print("| target | family | lines | model P | model R | tp | fp | fn | base P | base R |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(stats["model"], key=lambda k: (k[0], k[1] == "ALL", k[1])):
        c = stats["model"][key]
        p, r, tp, fp, fn = pr(c)
        bp, br, *_ = pr(stats["base"][key])
        n = sum(c.values())
        print(
            f"| {key[0]} | {key[1]} | {n} | {p:.2f} | {r:.2f} | {tp} | {fp} | {fn} "
            f"| {bp:.2f} | {br:.2f} |"
        )
    print("\n## UR registers per kernel: predicted vs ptxas\n")
    oracle = stats["oracle_counts"]
    head = "| target | family | kernels | within ±2 | mean abs error |"
    print(head + (" ±2 on ptxas's UR set | its MAE |" if oracle else ""))
    print("|---|---|---|---|---|" + ("---|---|" if oracle else ""))
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for key in sorted(stats["counts"]):
        rows = stats["counts"][key]
        ok = sum(abs(a - b) <= 2 for *_, a, b in rows)
        mae = sum(abs(a - b) for *_, a, b in rows) / max(1, len(rows))
        line = f"| {key[0]} | {key[1]} | {len(rows)} | {ok} | {mae:.1f} |"
        t = totals[key[0]]
        t[0] += len(rows)
        t[1] += ok
        if oracle:
            orows = oracle[key]
            ook = sum(abs(a - b) <= 2 for a, b in orows)
            omae = sum(abs(a - b) for a, b in orows) / max(1, len(orows))
            line += f" {ook} | {omae:.1f} |"
            t[2] += ook
        print(line)
    for tgt, (n, ok, ook) in sorted(totals.items()):
        print(f"| {tgt} | **ALL** | {n} | {ok} | |" + (f" {ook} | |" if oracle else ""))
    print("\n## Miss classes\n")
    print("| kind | PTX opcode | model's reason | lines | example |\n|---|---|---|---|---|")
    for (cls, op, why), n in stats["miss"].most_common(args.misses):
        ex = stats["examples"][(cls, op, why)][0]
        print(f"| {cls} | `{op}` | {why} | {n} | `{ex}` |")
    print("\n## Model time vs ptxas round trip\n")
    print(
        "| file | target | lines | model s | parse+lift+divergence s | ptxas s "
        "| model / ptxas |\n|---|---|---|---|---|---|---|"
    )
    for path, arch, n, ms, ans, ps in sorted(stats["timing"], key=lambda t: -t[2])[:5]:
        print(
            f"| {path} | {arch} | {n} | {ms:.2f} | {ans:.2f} | {ps:.2f} "
            f"| {ms / max(ps, 1e-9):.2f} |"
        )
    if args.miss_list:
        pathlib.Path(args.miss_list).write_text("".join(r + "\n" for r in stats["miss_rows"]))
    if args.count_list:
        pathlib.Path(args.count_list).write_text(
            "target\tfamily\tfile\tfunction\tpredicted\tptxas\tdiff\tptxas_top\n"
            + "".join(r + "\n" for r in stats["count_rows"])
        )
    if args.kernel_list:
        pathlib.Path(args.kernel_list).write_text(
            "target\tfamily\tfile\tfunction\ttp\tfp\tfn\n"
            + "".join(r + "\n" for r in stats["kernel_rows"])
        )
    if stats["failed"]:
        print("\nptxas rejected:", stats["failed"])


if __name__ == "__main__":
    main()
