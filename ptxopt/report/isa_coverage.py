"""The ISA coverage table (``ptxopt isa``, ``docs/isa-coverage.md``): for every
instruction of the PTX ISA 9.0 (:data:`ptxopt.ptx.isa.ISA`) whether ptxopt parses and
validates it, prints it back, interprets it, and tests it at edge values, with the
first PTX version and target ptxas 13.0.88 accepts it at.

Three columns are measured here, on every call, from the instruction's samples:

``parsed``       every sample parses and each instruction validates against the
                 opcode table (operand count, roles)
``printed``      lifting to SSA and printing gives the same instructions again (and,
                 in the recorded facts, ptxas accepts the printed module)
``interpreted``  the interpreter decodes every instruction of every sample into an
                 executable op (``planned``/``refused`` rows must not: they have to be
                 refused with an error naming the instruction and its line)

The others come from ``ptxopt/report/isa_facts.json``, which
``scripts/isa_coverage.py`` writes with ptxas and the edge-value tables of
``tests/isa`` (the tests check that it is current): ``version``/``target`` (the
smallest ``.version`` and ``.target`` ptxas accepts the first sample at),
``ptxas_printed`` and ``edge`` (an edge-value table executes the instruction).

JSON schema (``ptxopt isa --json``; fields are only ever added)::

    {"isa": "9.0", "ptxas": "13.0.88",
     "totals": {"instructions": int, "parsed": int, "printed": int,
                "interpreted": int, "edge_tested": int, "planned": int,
                "refused": int},
     "instructions": [{"name": str, "family": str, "plan": str, "version": str,
                       "target": str, "parsed": bool, "printed": bool,
                       "interpreted": bool, "edge_tested": bool,
                       "refusal": str}, ...]}
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

from ptxopt.ptx.ast import Function, Instr, PtxError, Scope, Stmt
from ptxopt.ptx.isa import ISA, IsaInstr, kernel_for

FACTS_FILE = "isa_facts.json"


@dataclass(slots=True)
class Row:
    name: str
    family: str
    plan: str
    version: str
    target: str
    parsed: bool
    printed: bool
    interpreted: bool
    edge_tested: bool
    refusal: str = ""  # the interpreter's error for a row it does not run


def row_of(name: str) -> str | None:
    """The ISA row of a full instruction name: the row with the same head opcode whose
    dotted suffix has the most modifiers all present (``add.cc.u32`` -> ``add.cc``,
    ``rcp.approx.ftz.f64`` -> its own row, ``rcp.rn.f32`` -> ``rcp``)."""
    head, *mods = name.split(".")
    best, score = None, -1
    for row in ISA:
        rhead, *rmods = row.name.split(".")
        if rhead == head and set(rmods) <= set(mods) and len(rmods) > score:
            best, score = row.name, len(rmods)
    return best


def load_facts() -> dict[str, dict[str, Any]]:
    path = resources.files("ptxopt.report") / FACTS_FILE
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text())["instructions"])


def _instrs(stmts: list[Stmt]) -> list[Instr]:
    out: list[Instr] = []
    for st in stmts:
        if isinstance(st, Instr):
            out.append(st)
        elif isinstance(st, Scope):
            out.extend(_instrs(st.body))
    return out


def _kernel_instrs(text: str) -> list[str]:
    from ptxopt.ptx.parser import parse
    from ptxopt.ptx.printer import format_instr

    mod = parse(text)
    fn = next(f for f in mod.functions if isinstance(f, Function) and f.name == "k")
    return [format_instr(i) for i in _instrs(fn.body or [])]


def parses(sample: str) -> bool:
    from ptxopt.ptx.opcodes import lookup
    from ptxopt.ptx.parser import parse

    try:
        mod = parse(kernel_for(sample))
        for fn in mod.functions:
            for ins in _instrs(fn.body or []):
                lookup(ins)
    except PtxError:
        return False
    return True


def prints(sample: str) -> bool:
    """Lift, lower and print; the instructions come back (the module's ``ret`` and
    the sample's own instructions, in order, modulo register renaming being none)."""
    from ptxopt.driver import optimize

    text = kernel_for(sample)
    try:
        out = optimize(text).text
        return _kernel_instrs(out) == _kernel_instrs(text)
    except PtxError:
        return False


def decodes(sample: str) -> str:
    """'' when the interpreter decodes every instruction of the sample, else the
    first error (which names the instruction and its line)."""
    from ptxopt.sim.errors import SimError
    from ptxopt.sim.launch import compile_module

    try:
        comp = compile_module(kernel_for(sample))
    except SimError as e:
        return str(e)
    except PtxError as e:
        return str(e)
    dec = comp.dec
    for pc, ins in enumerate(comp.prog.instrs):
        dec.func = comp.prog.owner[pc]
        try:
            dec.decode(ins, pc)
        except SimError as e:
            return str(e)
    return ""


def measure(instr: IsaInstr, facts: dict[str, dict[str, Any]]) -> Row:
    fact = facts.get(instr.name, {})
    errors = [decodes(s) for s in instr.samples]
    refusal = next((e for e in errors if e), "")
    return Row(
        name=instr.name,
        family=instr.family,
        plan=instr.plan,
        version=str(fact.get("version", "?")),
        target=str(fact.get("target", "?")),
        parsed=all(parses(s) for s in instr.samples),
        printed=all(prints(s) for s in instr.samples) and bool(fact.get("ptxas_printed")),
        interpreted=not refusal,
        edge_tested=bool(fact.get("edge")),
        refusal=refusal,
    )


def coverage() -> list[Row]:
    facts = load_facts()
    return [measure(i, facts) for i in ISA]


def totals(rows: list[Row]) -> dict[str, int]:
    return {
        "instructions": len(rows),
        "parsed": sum(r.parsed for r in rows),
        "printed": sum(r.printed for r in rows),
        "interpreted": sum(r.interpreted for r in rows),
        "edge_tested": sum(r.edge_tested for r in rows),
        "planned": sum(r.plan == "planned" for r in rows),
        "refused": sum(r.plan == "refused" for r in rows),
    }


def to_json(rows: list[Row]) -> dict[str, Any]:
    return {
        "isa": "9.0",
        "ptxas": "13.0.88",
        "totals": totals(rows),
        "instructions": [asdict(r) for r in rows],
    }


def _mark(ok: bool) -> str:
    return "yes" if ok else "-"


def format_markdown(rows: list[Row]) -> str:
    """The whole ``docs/isa-coverage.md``."""
    t = totals(rows)
    runnable = t["instructions"] - t["planned"] - t["refused"]
    lines = [
        "# PTX ISA 9.0 coverage",
        "",
        "Generated by `python scripts/isa_coverage.py` (also `ptxopt isa [--json]`) from",
        "the instruction list `ptxopt/ptx/isa.py`; `tests/test_isa_coverage.py` checks that",
        "this file is current.  One row per instruction page of the PTX ISA 9.0, the",
        "version ptxas 13.0.88 accepts.",
        "",
        "* **parsed**: every sample parses and validates against the opcode table.",
        "* **printed**: lifting to SSA and printing gives the instructions back, and",
        "  ptxas accepts the printed module.",
        "* **interpreted**: the SIMT interpreter executes it.  *planned* rows (the",
        "  asynchronous-copy and tensor-core family) and *refused* rows (texture and",
        "  surface) stop a launch that reaches them with an error naming the",
        "  instruction and its line.",
        "* **edge**: an edge-value table in `tests/isa` executes it and checks every",
        "  lane against a reference written from the ISA text.",
        "* **PTX**, **target**: the smallest `.version` and `.target` at which ptxas",
        "  13.0.88 accepts the first sample (`scripts/isa_coverage.py --probe`).",
        "",
        f"Totals: {t['instructions']} instructions; parsed {t['parsed']}, printed "
        f"{t['printed']}, interpreted {t['interpreted']} (of {runnable} to interpret; "
        f"{t['planned']} planned, {t['refused']} refused), edge-tested {t['edge_tested']}.",
        "",
    ]
    family = None
    for r in rows:
        if r.family != family:
            family = r.family
            lines += [
                f"## {family}",
                "",
                "| instruction | parsed | printed | interpreted | edge | PTX | target |",
                "|---|---|---|---|---|---|---|",
            ]
        interp = _mark(r.interpreted) if r.plan == "run" else r.plan
        lines.append(
            f"| `{r.name}` | {_mark(r.parsed)} | {_mark(r.printed)} | {interp} | "
            f"{_mark(r.edge_tested)} | {r.version} | {r.target} |"
        )
        nxt = rows.index(r) + 1
        if nxt == len(rows) or rows[nxt].family != family:
            lines.append("")
    return "\n".join(lines)


def format_unsupported(rows: list[Row]) -> str:
    """The README's list of what the interpreter does not run (one paragraph)."""
    planned = [r.name for r in rows if r.plan == "planned"]
    refused = [r.name for r in rows if r.plan == "refused"]
    missing = [r.name for r in rows if r.plan == "run" and not r.interpreted]
    text = (
        "Not interpreted (a launch that reaches one stops with an error naming the "
        "instruction and its line): the texture and surface instructions ("
        + ", ".join(f"`{n}`" for n in refused)
        + "), and, planned, the asynchronous-copy and tensor-core family ("
        + ", ".join(f"`{n}`" for n in planned)
        + ")."
    )
    if missing:
        text += " Also not yet: " + ", ".join(f"`{n}`" for n in missing) + "."
    return text


def format_text(rows: list[Row]) -> str:
    """The terminal table of ``ptxopt isa``."""
    head = (
        f"{'instruction':34} {'parsed':7} {'printed':8} {'interpreted':12} {'edge':5} PTX  target"
    )
    out = [head]
    for r in rows:
        interp = _mark(r.interpreted) if r.plan == "run" else r.plan
        out.append(
            f"{r.name:34} {_mark(r.parsed):7} {_mark(r.printed):8} {interp:12} "
            f"{_mark(r.edge_tested):5} {r.version:4} {r.target}"
        )
    t = totals(rows)
    out.append(
        f"{t['instructions']} instructions: parsed {t['parsed']}, printed {t['printed']}, "
        f"interpreted {t['interpreted']} ({t['planned']} planned, {t['refused']} refused), "
        f"edge-tested {t['edge_tested']}"
    )
    return "\n".join(out) + "\n"
