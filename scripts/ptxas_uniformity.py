"""What ptxas treated as uniform, next to what ptxopt proves.

Run ``python scripts/ptxas_uniformity.py [--bra-uni] [--only PATH-SUBSTRING]``.

For each corpus file: ``ptxas -arch=<target>`` to a cubin, ``nvdisasm`` of the SASS, and per
kernel: conditional branches, those inside a ``BSSY``/``BSYNC`` reconvergence region
(divergent to ptxas) and bare ones (uniform to ptxas), ``@UPn BRA`` uniform-predicate
branches, distinct UR registers, VOTEU / S2UR / R2UR counts; beside them ptxopt's uniform
conditional branches and uniform SSA values.  ``--bra-uni`` also runs the
mark-uniform-branches pass and reports SASS instruction counts and registers before/after.
Prints a Markdown table (the one in docs/divergence-precision.md).
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
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def find_nvdisasm() -> str | None:
    cands = [shutil.which("nvdisasm") or ""]
    cands += glob.glob(sys.prefix + "/lib/python*/site-packages/nvidia/*/bin/nvdisasm")
    cands += glob.glob("/usr/local/cuda*/bin/nvdisasm")
    for c in cands:
        if c and pathlib.Path(c).is_file():
            return c
    return None


_FUNC = re.compile(r"^\s*\.text\.(\S+):")
_BRA = re.compile(r"@(!?U?P[T0-9]+)\s+BRA")
_UR = re.compile(r"\bUR(\d+)\b")


def sass_stats(sass: str) -> dict[str, dict[str, Any]]:
    """Per kernel: counts from nvdisasm output."""
    out: dict[str, dict[str, Any]] = {}
    cur: dict[str, Any] | None = None
    pending_bssy = 0
    for line in sass.splitlines():
        m = _FUNC.match(line)
        if m:
            cur = out[m.group(1)] = {
                "insts": 0, "cond_bra": 0, "bssy_bra": 0, "bare_bra": 0, "up_bra": 0,
                "ur": set(), "voteu": 0, "s2ur": 0, "r2ur": 0,
            }  # fmt: skip
            pending_bssy = 0
            continue
        if cur is None or not line.lstrip().startswith("/*"):
            continue
        text = line.split("*/", 1)[1].strip().rstrip(";").strip()
        if not text or text.startswith("."):
            continue
        cur["insts"] += 1
        if text.startswith("BSSY"):
            pending_bssy = 1  # the next conditional branch opens a reconvergence region
        b = _BRA.search(text)
        if b:
            cur["cond_bra"] += 1
            if b.group(1).lstrip("!").startswith("UP"):
                cur["up_bra"] += 1
            elif pending_bssy:
                cur["bssy_bra"] += 1
            else:
                cur["bare_bra"] += 1
            pending_bssy = 0
        cur["ur"].update(_UR.findall(text))
        op = text.split()[0] if not text.startswith("@") else text.split()[1]
        if op.startswith("VOTEU"):
            cur["voteu"] += 1
        elif op.startswith("S2UR"):
            cur["s2ur"] += 1
        elif op.startswith("R2UR"):
            cur["r2ur"] += 1
    for v in out.values():
        v["ur"] = len(v["ur"])
    return out


def assemble(ptx: str, arch: str, nvdisasm: str) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as d:
        src = pathlib.Path(d) / "x.ptx"
        src.write_text(ptx)
        r = subprocess.run(
            ["ptxas", f"-arch={arch}", "-v", "-o", f"{d}/x.cubin", str(src)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        sass = subprocess.run(
            [nvdisasm, "-c", f"{d}/x.cubin"], capture_output=True, text=True, check=True
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


def main() -> None:
    from ptxopt.analysis.divergence import bind_module
    from ptxopt.analysis.manager import AnalysisManager
    from ptxopt.ir.lower import print_ir_module
    from ptxopt.report.analyze_cli import analyze_text
    from ptxopt.transforms.mark_uniform_branches import run as mark

    ap = argparse.ArgumentParser()
    ap.add_argument("--bra-uni", action="store_true", help="measure mark-uniform-branches")
    ap.add_argument("--only", default="", help="substring filter on corpus paths")
    args = ap.parse_args()
    nvdisasm = find_nvdisasm()
    if shutil.which("ptxas") is None or nvdisasm is None:
        print("needs ptxas on PATH and nvdisasm (pip install nvidia-cuda-nvdisasm)")
        sys.exit(1)
    manifest = json.loads((ROOT / "tests/corpus/manifest.json").read_text())
    print(f"nvdisasm: {nvdisasm}\n")
    print(
        "| file | kernel | ptxas cond BRA | in BSSY (divergent) | bare (uniform) | @UP BRA "
        "| UR regs | VOTEU | S2UR | R2UR | ptxopt cond bra | ptxopt uniform bra "
        "| ptxopt uniform values |"
    )
    print("|---" * 13 + "|")
    extra: list[str] = []
    for f in manifest["files"]:
        path = f["path"]
        if args.only not in path:
            continue
        text = (ROOT / "tests/corpus" / path).read_text()
        arch = f["target"]
        sass, log = assemble(text, arch, nvdisasm)
        st = sass_stats(sass)
        mod, md, rep = analyze_text(text, path)
        for fr in rep["functions"]:
            if fr["kind"] != ".entry":
                continue
            s = st.get(fr["name"], {})
            sm = fr["summary"]
            print(
                f"| {path} | {fr['name'][:28]} | {s.get('cond_bra', '?')} "
                f"| {s.get('bssy_bra', '?')} "
                f"| {s.get('bare_bra', '?')} | {s.get('up_bra', '?')} | {s.get('ur', '?')} "
                f"| {s.get('voteu', '?')} | {s.get('s2ur', '?')} | {s.get('r2ur', '?')} "
                f"| {sm['branches']} | {sm['uniform_branches']} "
                f"| {sm['uniform_values']}/{sm['values']} |"
            )
        if args.bra_uni:
            bind_module(mod)
            am = AnalysisManager()
            changed = [mark(fn, am) for fn in mod.funcs]
            if any(changed):
                from ptxopt.ir.lift import lift_module
                from ptxopt.ptx.parser import parse

                base = print_ir_module(lift_module(parse(text, path)))
                sass0, log0 = assemble(base, arch, nvdisasm)
                sass1, log1 = assemble(print_ir_module(mod), arch, nvdisasm)
                a, b = sass_stats(sass0), sass_stats(sass1)
                r0, r1 = regs_used(log0), regs_used(log1)
                for k in sorted(a):
                    extra.append(
                        f"| {path} | {k[:28]} | {a[k]['insts']} -> {b.get(k, {}).get('insts')} "
                        f"| {r0.get(k)} -> {r1.get(k)} |"
                    )
    if extra:
        print("\nmark-uniform-branches (ptxopt round trip without / with the pass):\n")
        print("| file | function | SASS instructions | registers |\n|---|---|---|---|")
        print("\n".join(extra))


if __name__ == "__main__":
    main()
