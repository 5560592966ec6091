"""IV demotion judged by ptxas: per loop, demoted or not and why; SASS loop bodies,
total SASS and registers before/after on sm_75, sm_80, sm_90.

    python bench/iv_demotion.py [--only SUBSTR] [--skip-large] [--no-corpus]

1. Every corpus file goes through ``iv-demotion`` at ``remat-iv=4`` and ``=5``
   (versioning); each 64-bit header phi's decision is
   tallied by reason and the demoted / near-miss loops are listed.
2. Files where something changed are measured with :func:`bench.effect.measure_file`
   (ptxas -O3, nvdisasm; runnable kernels also executed before/after).
3. The boundary kernels of ``tests/test_iv_demotion.py`` (provable loops, which the
   corpus lacks) are measured the same way, once per profitability setting.

The SASS loop body of a function is the sum, over backward branches, of the
instructions between the branch target and the branch.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from effect import CORPUS, corpus_entries, measure_file  # noqa: E402

from ptxopt.driver import optimize  # noqa: E402
from ptxopt.oracle import assemble, targets_for  # noqa: E402

TARGETS = ("sm_75", "sm_80", "sm_90")
_BRA = re.compile(r"^BRA(?:\.\S+)?\s+`?\(?(\.L_x_\d+)\)?")


def loop_body_sass(ptx: str, arch: str) -> dict[str, int]:
    """Per function: SASS instructions inside loops (backward-branch spans)."""
    a = assemble(ptx, arch)
    out: dict[str, int] = {}
    if not a.ok or a.sass is None:
        return out
    for name, sf in a.sass.items():
        total = 0
        for i in sf.insts:
            m = _BRA.match(i.text)
            if m is None:
                continue
            tgt = sf.labels.get(m.group(1), 1 << 40)
            if tgt < i.addr:
                total += sum(1 for j in sf.insts if tgt <= j.addr <= i.addr and j.op != "NOP")
        out[name] = total
    return out


def decisions(text: str, path: str, knobs: dict[str, object]) -> tuple[list[str], str]:
    """The pass's decisions (the lines of ``ptxopt opt --explain``) and its output."""
    res = optimize(text, path, ["iv-demotion"], knobs=knobs)
    lines = sorted(set(res.report.notes.get("iv-demotion", [])))
    return lines, res.text


def _reason(line: str) -> str:
    tail = line.split(": ", 2)[-1]
    return re.sub(r"\d+", "N", tail)


def _sass_rows(
    name: str, before: str, after: str, targets: list[str], retarget: bool = False
) -> list[str]:
    rows = []
    for arch in targets:
        if retarget:
            before = re.sub(r"\.target sm_\w+", f".target {arch}", before)
            after = re.sub(r"\.target sm_\w+", f".target {arch}", after)
        a, b = assemble(before, arch), assemble(after, arch)
        if not (a.ok and b.ok):
            verdict = f"{'ok' if a.ok else 'FAIL'}/{'ok' if b.ok else 'FAIL'}"
            rows.append(f"| {name} | {arch} | ptxas: {verdict} |")
            continue
        la, lb = loop_body_sass(before, arch), loop_body_sass(after, arch)
        for fn, fa in sorted(a.functions.items()):
            fb = b.functions.get(fn)
            if fb is None:
                continue
            rows.append(
                f"| {name}:{fn[:40]} | {arch} | {la.get(fn, 0)} -> {lb.get(fn, 0)} | "
                f"{fa.sass_instructions} -> {fb.sass_instructions} | "
                f"{fa.registers} -> {fb.registers} |"
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--no-corpus", action="store_true")
    args = ap.parse_args(argv)
    head = "| kernel | target | SASS loop body | SASS total | registers |"
    sep = "|---|---|---|---|---|"
    if not args.no_corpus:
        for level in (4, 5):
            knobs: dict[str, object] = {"remat-iv": level}
            tally: Counter[str] = Counter()
            listed: list[str] = []
            changed: list[tuple[dict[str, object], str]] = []
            for e in corpus_entries(args.only, args.skip_large):
                text = (CORPUS / e["path"]).read_text()
                lines, out = decisions(text, e["path"], knobs)
                for ln in lines:
                    if "versioned behind" in ln:
                        tally["(loops versioned)"] += 1
                        continue
                    tally[_reason(ln)] += 1
                    if "demoted" in ln or "window" in ln or "rewrite" in ln:
                        listed.append(f"{e['path']}: {ln[:160]}")
                if any(": demoted" in ln for ln in lines):
                    changed.append((e, out))
            print(f"\n## remat-iv={level}: decisions on 64-bit header phis\n")
            for reason, n in tally.most_common():
                print(f"{n:5d}  {reason[:150]}")
            print("\nloops demoted or near misses:")
            for ln in listed:
                print("  " + ln)
            print(f"\n### remat-iv={level}: ptxas -O3, before -> after\n")
            print(head)
            print(sep)
            for e, out in changed:
                text = (CORPUS / e["path"]).read_text()
                tg = [t for t in targets_for(e["target"]) if t in TARGETS or t.endswith("a")]
                for row in _sass_rows(e["path"], text, out, tg):
                    print(row)
                r = measure_file(e, ["iv-demotion"], knobs, execute=True, targets=tg[:1])
                runs = f"{r.exec_runs} launches, {len(r.exec_mismatches)} mismatches"
                print(f"| {e['path']} | exec | {runs} | ptxas rejected: {len(r.rejected)} | |")
    import test_iv_demotion as t

    kernels = {"unsigned": t.UNSIGNED, "masked": t.MASKED, "signed": t.SIGNED, "grid": t.GRID}
    settings: list[dict[str, object]] = [
        {"remat-iv": 4},
        {"remat-iv": 5},
        {"remat-iv": 4, "remat-iv-max-clones": 0},
    ]
    for knobs in settings:
        label = ", ".join(f"{k}={v}" for k, v in knobs.items())
        print(f"\n### boundary kernels ({label})\n")
        print(head)
        print(sep)
        for name, text in kernels.items():
            out = optimize(text, name, ["iv-demotion"], knobs=knobs).text
            if out == optimize(text, name, []).text:
                print(f"| {name} | - | unchanged | | |")
                continue
            for row in _sass_rows(name, text, out, list(TARGETS), retarget=True):
                print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
