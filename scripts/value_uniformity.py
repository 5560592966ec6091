"""Value-level precision of the divergence analysis against ptxas 13.0.88.

Run ``python scripts/value_uniformity.py [--skip-large] [--only SUBSTRING] [--arch A,B]``.

For each corpus file (``tests/corpus/manifest.json``) and target (the file's own
``.target``, plus ``sm_80`` where the file allows it), ``ptxas -lineinfo`` then
``nvdisasm -gp`` maps every SASS instruction to the PTX line it came from.  Every SASS
instruction that *writes* a uniform register (``UR``/``UP`` destination: ``U*`` ALU ops,
``S2UR``, ``R2UR``, ``ULDC``/``ULDC.64`` constant-bank loads, ``VOTEU``, ``UMOV`` of
descriptors) says: ptxas keeps the value of that PTX line in a uniform register, so it
knows that value is warp-uniform.  For each such line that defines PTX registers, is the
value uniform in ptxopt too?

* ``agree``: every register the line defines is uniform in ptxopt;
* ``disagree``: ptxopt calls one varying — a precision miss, classified by the root of
  ptxopt's chain (``special register %tid.x``, ``merges lanes``, ...) and the PTX opcode.

The opposite direction (ptxopt uniform, ptxas R) is not a disagreement: ptxas chooses R
for uniform values whenever the uniform datapath lacks the instruction or the cost model
says so (that is the register-file model's business, ``convert-to-uniform-reg``).
Soundness (ptxopt never calls a varying value uniform) is checked by execution elsewhere.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
import tempfile
from collections import Counter
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from ptxas_uniformity import find_nvdisasm, parse_sass, target_of  # noqa: E402

_UDEST = re.compile(r"^(?:\S+)\s+(U?R[0-9Z]+|U?P[0-9T]+)")
LARGE_LINES = 10_000


_NO_DEST = frozenset(
    "ST STG STS STL RED BRA BAR EXIT BSSY BSYNC RET CALL WARPSYNC NOP MEMBAR FENCE SYNCS "
    "UTMA UBLKCP ERRBAR CCTL DEPBAR ARRIVES BPT YIELD JMP BRX UTMALDG UTMASTG".split()
)


def _dest(text: str) -> str | None:
    """The register an instruction writes first (``None``: writes none)."""
    body = text[1:].partition(" ")[2].strip() if text.startswith("@") else text
    op = body.split(" ", 1)[0]
    if op.split(".")[0] in _NO_DEST:
        return None
    m = _UDEST.match(body)
    if not m or m.group(1) in ("URZ", "UPT", "RZ", "PT"):
        return None
    return m.group(1)


def _line_defs(mod: Any, md: Any) -> dict[int, list[tuple[str, bool, str, str]]]:
    """PTX line -> (register, uniform?, root of the chain, opcode) per defined value."""
    out: dict[int, list[tuple[str, bool, str, str]]] = {}
    for fn in mod.funcs:
        res = md.funcs[fn.name]
        for b in fn.blocks:
            for inst in b.insts:
                span = inst.ast.span
                if span is None:
                    continue
                for d in inst.defs:
                    varying = res.is_varying(d)
                    root = ""
                    if varying:
                        chain = res.explain(d)
                        root = chain[-1][1] if chain else "?"
                    out.setdefault(span.line, []).append(
                        (d.var, not varying, root, inst.ast.opcode)
                    )
    return out


def _root_class(root: str) -> str:
    root = re.sub(r"%\w+\.\d+", "%r", root)
    root = re.sub(r"block \d+", "block N", root)
    root = re.sub(r"\d+", "N", root)
    return root[:70]


def study(path: pathlib.Path, arch: str, nvdisasm: str) -> dict[str, Any]:
    import subprocess

    from ptxopt.report.analyze_cli import analyze_text

    text = path.read_text()
    if arch != target_of(text):
        text = re.sub(r"^(\s*\.target\s+)sm_\w+", rf"\g<1>{arch}", text, count=1, flags=re.M)
    mod, md, _rep = analyze_text(text, str(path))
    defs = _line_defs(mod, md)
    with tempfile.TemporaryDirectory() as d:
        src = pathlib.Path(d) / "x.ptx"
        src.write_text(text)
        subprocess.run(
            ["ptxas", f"-arch={arch}", "-lineinfo", "-o", f"{d}/x.cubin", str(src)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        sass = subprocess.run(
            [nvdisasm, "-gp", "-c", f"{d}/x.cubin"], capture_output=True, text=True, check=True
        ).stdout
    # a line counts when every SASS instruction made of it that writes a register
    # writes a uniform one: ptxas computed the whole value on the uniform datapath
    uni: set[int] = set()
    vec: set[int] = set()
    for f in parse_sass(sass).values():
        for i in f.insts:
            if not i.line:
                continue
            w = _dest(i.text)
            if w is None:
                continue
            if w.startswith(("UR", "UP")):
                uni.add(i.line)
            else:
                vec.add(i.line)
    lines = uni - vec
    agree = disagree = novalue = 0
    classes: Counter[str] = Counter()
    for ln in sorted(lines):
        vals = defs.get(ln, [])
        if not vals:
            novalue += 1
            continue
        miss = [v for v in vals if not v[1]]
        if miss:
            disagree += 1
            classes[f"{miss[0][3]}: {_root_class(miss[0][2])}"] += 1
        else:
            agree += 1
    return {
        "file": str(path.relative_to(ROOT)),
        "arch": arch,
        "ur_lines": len(lines),
        "agree": agree,
        "disagree": disagree,
        "no_value": novalue,
        "classes": dict(classes),
    }


def _archs(text: str, wanted: list[str]) -> list[str]:
    own = target_of(text)
    out = [own]
    num = int(re.sub(r"\D", "", own) or 0)
    for a in wanted:
        if a != own and int(re.sub(r"\D", "", a)) <= num and not own.endswith("a"):
            out.append(a)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--arch", default="sm_80", help="extra targets (comma list)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        raise SystemExit("nvdisasm not found: pip install 'ptxopt[oracle]'")
    manifest = json.loads((ROOT / "tests/corpus/manifest.json").read_text())["files"]
    rows: list[dict[str, Any]] = []
    for f in manifest:
        path = ROOT / "tests/corpus" / f["path"]
        if args.only not in str(path):
            continue
        text = path.read_text()
        if args.skip_large and text.count("\n") > LARGE_LINES:
            continue
        for arch in _archs(text, [a for a in args.arch.split(",") if a]):
            try:
                rows.append(study(path, arch, nvdisasm))
            except Exception as e:  # a file ptxas refuses at that target
                print(f"# {f['path']} {arch}: skipped ({type(e).__name__})", file=sys.stderr)
    total: Counter[str] = Counter()
    classes: Counter[str] = Counter()
    print("| file | target | lines computed in UR/UP | ptxopt uniform | ptxopt varying "
          "| no value |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['file']} | {r['arch']} | {r['ur_lines']} | {r['agree']} | "
            f"{r['disagree']} | {r['no_value']} |"
        )
        for k in ("ur_lines", "agree", "disagree", "no_value"):
            total[k] += r[k]
        classes.update(r["classes"])
    print(
        f"| **total** | | {total['ur_lines']} | {total['agree']} | {total['disagree']} | "
        f"{total['no_value']} |"
    )
    print()
    print("| disagreement class (PTX opcode: root of ptxopt's chain) | lines |")
    print("|---|---:|")
    for k, n in classes.most_common():
        print(f"| {k} | {n} |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
