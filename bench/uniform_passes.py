"""What the PTX-level uniform passes of spec 02 do to the corpus, judged by ptxas.

    python bench/uniform_passes.py [--skip-large] [--jobs N] [--only SUBSTR]
                                   [--section passes,anchor,specialize]

* ``passes``: for each pass (replace-uniforms-with-imm, optimize-uniform-atomic,
  promote-local, analyze-uniforms-for-speculation + speculative-hoist) the
  :mod:`bench.effect` table over the files it changes: PTX instructions, ``ptxas -O3``
  SASS instructions, registers and stack frame bytes before -> after for sm_75 / sm_80 /
  sm_90, ptxas acceptance, and bit-identical execution of the runnable kernels;
* ``anchor``: the atomics of ``cuda/atomics`` as nvcc wrote them at -O3 and at
  ``-Xcicc -O0``: how many VOTEU / REDUX / ATOM / RED instructions ptxas emits per kernel
  for the -O3 PTX, the -O0 PTX, and the -O0 PTX after optimize-uniform-atomic;
* ``specialize``: every runnable launch with scalar arguments, specialized to those
  values (``--param``), run against the original and measured.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from effect import (  # noqa: E402
    CORPUS,
    _maker,
    _references,
    corpus_entries,
    format_table,
    measure,
)

from ptxopt.driver import optimize  # noqa: E402
from ptxopt.oracle import assemble, find_ptxas, targets_for  # noqa: E402
from ptxopt.ptx.parser import parse  # noqa: E402

PIPELINES = {
    "replace-uniforms-with-imm": ["replace-uniforms-with-imm"],
    "optimize-uniform-atomic": ["optimize-uniform-atomic"],
    "promote-local": ["promote-local"],
    "speculative-hoist": ["analyze-uniforms-for-speculation", "speculative-hoist"],
}

ATOMIC_OPS = ("VOTEU", "REDUX", "ATOM", "RED", "SHFL", "POPC", "FLO")


def _changes(entry: dict[str, Any], passes: list[str]) -> bool:
    text = (CORPUS / entry["path"]).read_text()
    return optimize(text, entry["path"], passes).text != optimize(text, entry["path"], []).text


def section_passes(args: argparse.Namespace) -> bool:
    """Measure each pipeline on the files it changes (found without ptxas first)."""
    ok = True
    entries = corpus_entries(args.only, args.skip_large)
    for title, passes in PIPELINES.items():
        changed = [e for e in entries if _changes(e, passes)]
        results = measure(passes, {}, jobs=args.jobs, entries=changed)
        for r in results:  # functions ptxas lists without SASS (inlined callees) drop out
            for arch, per in r.targets.items():
                r.targets[arch] = {
                    k: v
                    for k, v in per.items()
                    if v.sass_before is not None and v.sass_after is not None
                }
        print(format_table(results, f"{title}: {len(changed)} of {len(entries)} files changed"))
        print(flush=True)
        ok = ok and not any(r.error or r.rejected or r.exec_mismatches for r in results)
    return ok


def _atomic_counts(text: str, arch: str) -> dict[str, dict[str, int]]:
    res = assemble(text, arch)
    if not res.ok:
        raise SystemExit(f"ptxas rejected: {res.log[:300]}")
    out: dict[str, dict[str, int]] = {}
    for name, fn in res.sass.items():
        c = {k: 0 for k in ATOMIC_OPS}
        for i in fn.insts:
            head = i.op.split(".")[0]
            for k in ATOMIC_OPS:  # ATOMG/ATOMS count as ATOM, REDG as RED, REDUX apart
                if head == k or (k in ("ATOM", "RED") and head[:-1] == k):
                    c[k] += 1
                    break
        c["SASS"] = len(fn.insts)
        out[name] = c
    return out


def section_anchor(args: argparse.Namespace) -> bool:
    o3 = (CORPUS / "cuda" / "atomics.O3.sm90.ptx").read_text()
    o0 = (CORPUS / "cuda" / "atomics.O0.sm90.ptx").read_text()
    after = optimize(o0, "atomics.O0", ["optimize-uniform-atomic"]).text
    print("== -O0 atomics anchor (cuda/atomics, sm_90, ptxas -O3 on each PTX) ==")
    print("   counts: VOTEU REDUX ATOM RED SHFL POPC FLO / SASS instructions")
    a, b, c = (_atomic_counts(t, "sm_90") for t in (o3, o0, after))
    kernels = [f.name for f in parse(o3).functions if f.is_entry]
    fmt = " ".join(f"{{:>{len(k)}}}" for k in ATOMIC_OPS)
    print(f"  {'kernel':18} {'PTX':12} " + " ".join(ATOMIC_OPS) + "   SASS")
    for k in kernels:
        for label, table in (("nvcc -O3", a), ("nvcc -O0", b), ("-O0 + pass", c)):
            row = table.get(k)
            if row is None:
                continue
            vals = fmt.format(*(row[x] for x in ATOMIC_OPS))
            print(f"  {k:18} {label:12} {vals}   {row['SASS']}")
    diff_ok = True
    refs = _references()
    entry = next(e for e in corpus_entries("cuda/atomics.O0") if e["launches"])
    from ptxopt.sim import differential

    for launch in entry["launches"]:
        d = differential(
            o0,
            after,
            launch["kernel"],
            launch["grid"],
            launch["block"],
            _maker(refs, launch),
            trials=1,
            shared_bytes=launch.get("shared_bytes", 0),
        )
        diff_ok = diff_ok and d.ok and not d.both_failed
        print(f"  exec {launch['kernel']}: {d.message}")
    print()
    return diff_ok


def _specialized(entry: dict[str, Any], launch: dict[str, Any]) -> tuple[str, list[str]]:
    text = (CORPUS / entry["path"]).read_text()
    fn = parse(text).function(launch["kernel"])
    items = []
    for p, a in zip(fn.params, launch["args"], strict=False):
        if a.get("kind") == "scalar":
            items.append(f"{launch['kernel']}:{p.name}={a['value']!r}")
    return text, items


def section_specialize(args: argparse.Namespace) -> bool:
    from ptxopt.sim import differential

    refs = _references()
    print("== specialization: every runnable launch, scalar parameters fixed (--param) ==")
    print(f"  {'file':34} {'kernel':22} {'target':7} {'SASS':>11} {'regs':>9}  exec")
    ok = True
    totals: dict[str, list[int]] = {}
    for entry in corpus_entries(args.only, args.skip_large):
        for launch in entry["launches"]:
            text, items = _specialized(entry, launch)
            if not items:
                continue
            knobs: dict[str, object] = {"SpecializeParams": ";".join(items)}
            out = optimize(text, entry["path"], ["replace-uniforms-with-imm"], knobs=knobs).text
            d = differential(
                text,
                out,
                launch["kernel"],
                launch["grid"],
                launch["block"],
                _maker(refs, launch),
                trials=1,
                shared_bytes=launch.get("shared_bytes", 0),
            )
            good = d.ok and not d.both_failed
            ok = ok and good
            for arch in targets_for(entry["target"]):
                fa = assemble(text, arch).functions.get(launch["kernel"])
                rb = assemble(out, arch)
                if not rb.ok:
                    ok = False
                    print(f"  REJECTED {entry['path']} {arch}: {rb.log[:200]}")
                    continue
                fb = rb.functions.get(launch["kernel"])
                if fa is None or fb is None:
                    continue
                name = launch["kernel"][:22]
                sass = f"{fa.sass_instructions}->{fb.sass_instructions}"
                regs = f"{fa.registers}->{fb.registers}"
                verdict = "identical" if good else d.message
                print(f"  {entry['path']:34} {name:22} {arch:7} {sass:>11} {regs:>9}  {verdict}")
                t = totals.setdefault(arch, [0, 0, 0, 0])
                for i, v in enumerate(
                    (
                        fa.sass_instructions or 0,
                        fb.sass_instructions or 0,
                        fa.registers,
                        fb.registers,
                    )
                ):
                    t[i] += v
    for arch, t in sorted(totals.items()):
        print(f"  total {arch}: SASS {t[0]}->{t[1]}, regs {t[2]}->{t[3]}")
    print()
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="only corpus paths containing this")
    ap.add_argument("--skip-large", action="store_true", help="skip files > 10000 lines")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--section", default="passes,anchor,specialize")
    args = ap.parse_args(argv)
    if find_ptxas() is None:
        raise SystemExit("needs ptxas")
    ok = True
    sections = {s.strip() for s in args.section.split(",")}
    if "anchor" in sections:
        ok = section_anchor(args) and ok
    if "specialize" in sections:
        ok = section_specialize(args) and ok
    if "passes" in sections:
        ok = section_passes(args) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
