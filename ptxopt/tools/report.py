"""``ptxopt report IN -o report.html``: one self-contained HTML page about a PTX file.

For each function: its control-flow graph drawn as SVG (blocks coloured by
divergence: reached only under a divergent branch, or by the whole warp; branches
marked uniform or divergent; loop headers and back edges marked), every register
uniform or varying with the chain back to its divergence root shown on click; then
per-pass statistics and times of the pipeline, the before/after PTX diff and, when
ptxas (and nvdisasm) are present, SASS statistics before and after (instructions,
R/UR/P/UP registers used, BSSY regions, spills).

The page needs nothing from the network: CSS, script and data are inline.  The
layout of each graph comes from grandalf's Sugiyama layout (the ``report`` extra);
without it, or for graphs too large for it, a simple layering by depth is used.
"""

from __future__ import annotations

import argparse
import difflib
import html
import json
import sys
from dataclasses import dataclass, field
from typing import Any

MAX_LAYOUT_BLOCKS = 300  # larger graphs: the simple layering (grandalf is quadratic-ish)
MAX_DRAWN_BLOCKS = 2000  # larger graphs are not drawn
MAX_LINES_PER_BLOCK = 14
MAX_DIFF_LINES = 4000
MAX_EXPLAINED = 400  # varying registers with a why-chain, per function
BOX_W = 300
LINE_H = 13
CHAR_W = 6.7  # 11px monospace


@dataclass
class BlockView:
    index: int
    label: str
    lines: list[str]
    kind: str  # "uniform-branch", "divergent-branch", "plain", "exit"
    partial: bool  # reached under a divergent branch before reconvergence
    loop_header: bool
    loop_depth: int
    w: float = BOX_W
    h: float = 0.0
    x: float = 0.0
    y: float = 0.0


@dataclass
class FuncView:
    name: str
    kind: str
    blocks: list[BlockView]
    edges: list[tuple[int, int, bool]]  # (from, to, back edge)
    summary: dict[str, int]
    registers: dict[str, str]
    why: dict[str, str] = field(default_factory=dict)
    width: float = 0.0
    height: float = 0.0


# -- analysis --------------------------------------------------------------------


def _partial_blocks(func: Any, md: Any, am: Any) -> list[bool]:
    """Blocks a divergent branch leads to before its immediate post-dominator."""
    from ptxopt.analysis.postdominators import PostDomTree

    n = len(func.blocks)
    out = [False] * n
    if not any(md.branch_divergent(b) for b in range(n)):
        return out
    ipdom = am.get(PostDomTree, func).ipdom
    for b in range(n):
        if not md.branch_divergent(b):
            continue
        stop = ipdom[b] if 0 <= ipdom[b] < n else -1
        stack = [s.index for s in func.blocks[b].succs]
        seen: set[int] = set()
        while stack:
            x = stack.pop()
            if x == stop or x in seen:
                continue
            seen.add(x)
            out[x] = True
            stack.extend(s.index for s in func.blocks[x].succs)
    return out


def function_view(func: Any, res: Any, fr: dict[str, Any], mod: Any, md: Any) -> FuncView:
    from ptxopt.analysis.divergence import is_conditional_branch
    from ptxopt.analysis.loops import LoopForest
    from ptxopt.analysis.manager import AnalysisManager
    from ptxopt.ptx.printer import format_instr
    from ptxopt.report.divergence_report import explain

    am = AnalysisManager()
    loops = am.get(LoopForest, func)
    headers = {lp.header for lp in loops.loops}
    latches = {(lt, lp.header) for lp in loops.loops for lt in lp.latches}
    partial = _partial_blocks(func, res, am)
    blocks = []
    for b in func.blocks:
        lines = [format_instr(i.ast) for i in b.insts]
        if len(lines) > MAX_LINES_PER_BLOCK:
            keep = MAX_LINES_PER_BLOCK - 1
            lines = lines[: keep - 2] + [f"... {len(lines) - keep + 1} more ..."] + lines[-2:]
        t = b.terminator
        if is_conditional_branch(t):
            kind = "divergent-branch" if res.branch_divergent(b.index) else "uniform-branch"
        elif not b.succs:
            kind = "exit"
        else:
            kind = "plain"
        label = b.labels[0] if b.labels else ("entry" if b.index == 0 else f"B{b.index}")
        bv = BlockView(
            b.index,
            label,
            lines,
            kind,
            partial[b.index],
            b.index in headers,
            loops.depth_of(b.index),
        )
        bv.h = LINE_H * (len(lines) + 1) + 8
        widest = max([len(ln) for ln in lines] + [len(label) + 30])
        bv.w = max(BOX_W, min(CHAR_W * widest + 14, 900))
        blocks.append(bv)
    edges = [
        (b.index, s.index, (b.index, s.index) in latches) for b in func.blocks for s in b.succs
    ]
    view = FuncView(func.name, fr["kind"], blocks, edges, fr["summary"], fr["registers"])
    varying = [r for r, s in fr["registers"].items() if s == "varying"][:MAX_EXPLAINED]
    for reg in varying:
        view.why[reg] = explain(mod, md, f"{func.name}:{reg}")
    return view


# -- layout ----------------------------------------------------------------------


def layout(view: FuncView) -> None:
    n = len(view.blocks)
    if n == 0:
        return
    done = False
    if n <= MAX_LAYOUT_BLOCKS:
        try:
            _layout_grandalf(view)
            done = True
        except ImportError:
            pass
    if not done:
        _layout_layers(view)
    xs = [b.x - b.w / 2 for b in view.blocks]
    ys = [b.y - b.h / 2 for b in view.blocks]
    dx, dy = 20 - min(xs), 20 - min(ys)
    for b in view.blocks:
        b.x += dx
        b.y += dy
    view.width = max(b.x + b.w / 2 for b in view.blocks) + 20
    view.height = max(b.y + b.h / 2 for b in view.blocks) + 20


def _layout_grandalf(view: FuncView) -> None:
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    class Box:
        def __init__(self, w: float, h: float) -> None:
            self.w, self.h = w, h
            self.xy = (0.0, 0.0)

    verts = [Vertex(b.index) for b in view.blocks]
    for v, b in zip(verts, view.blocks, strict=True):
        v.view = Box(b.w, b.h)
    es = [Edge(verts[a], verts[c]) for a, c, _ in view.edges if a != c]
    g = Graph(verts, es)
    x_off = 0.0
    for comp in g.C:
        sug = SugiyamaLayout(comp)
        sug.xspace, sug.yspace = 40, 40
        roots = [verts[0]] if verts[0] in comp.sV else None
        sug.init_all(roots=roots)
        sug.draw()
        cx = [v.view.xy[0] for v in comp.sV]
        left = min(x - view.blocks[v.data].w / 2 for x, v in zip(cx, comp.sV, strict=True))
        shift = x_off - left
        for v in comp.sV:
            b = view.blocks[v.data]
            b.x, b.y = v.view.xy[0] + shift, v.view.xy[1]
        x_off = max(view.blocks[v.data].x + view.blocks[v.data].w / 2 for v in comp.sV) + 40


def _layout_layers(view: FuncView) -> None:
    """Layer = longest path from the entry over forward edges; order within a layer
    as first reached."""
    n = len(view.blocks)
    succs: list[list[int]] = [[] for _ in range(n)]
    for a, c, back in view.edges:
        if not back and a != c:
            succs[a].append(c)
    layer = [0] * n
    indeg = [0] * n
    for a in range(n):
        for c in succs[a]:
            indeg[c] += 1
    order = [b for b in range(n) if indeg[b] == 0]
    i = 0
    while i < len(order):
        a = order[i]
        i += 1
        for c in succs[a]:
            layer[c] = max(layer[c], layer[a] + 1)
            indeg[c] -= 1
            if indeg[c] == 0:
                order.append(c)
    rows: dict[int, list[int]] = {}
    for b in order + [b for b in range(n) if b not in set(order)]:
        rows.setdefault(layer[b], []).append(b)
    y = 0.0
    for lvl in sorted(rows):
        members = rows[lvl]
        h = max(view.blocks[b].h for b in members)
        x = 0.0
        for b in members:
            blk = view.blocks[b]
            blk.x = x + blk.w / 2
            blk.y = y + h / 2
            x += blk.w + 30
        y += h + 40


# -- rendering -------------------------------------------------------------------

_REG = None


def _reg_spans(line: str, registers: dict[str, str]) -> str:
    import re

    global _REG
    if _REG is None:
        _REG = re.compile(r"%[A-Za-z_$][\w$]*")
    out = []
    pos = 0
    for m in _REG.finditer(line):
        out.append(html.escape(line[pos : m.start()]))
        reg = m.group(0)
        state = registers.get(reg)
        if state is None:
            out.append(html.escape(reg))
        else:
            out.append(
                f'<tspan class="reg {state}" data-reg="{html.escape(reg)}">'
                f"{html.escape(reg)}</tspan>"
            )
        pos = m.end()
    out.append(html.escape(line[pos:]))
    return "".join(out)


def render_svg(view: FuncView) -> str:
    parts = [
        f'<svg class="cfg" xmlns="http://www.w3.org/2000/svg" width="{view.width:.0f}" '
        f'height="{view.height:.0f}" viewBox="0 0 {view.width:.0f} {view.height:.0f}" '
        f'data-func="{html.escape(view.name)}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z"/></marker></defs>',
    ]
    by = {b.index: b for b in view.blocks}
    for a, c, back in view.edges:
        s, t = by[a], by[c]
        x1, y1 = s.x, s.y + s.h / 2
        x2, y2 = t.x, t.y - t.h / 2
        cls = "edge back" if back or y2 <= y1 else "edge"
        if a == c or y2 <= y1:  # loop back: go round the right side
            xr = max(s.x + s.w / 2, t.x + t.w / 2) + 30
            d = (
                f"M{s.x + s.w / 2:.0f},{s.y:.0f} C{xr:.0f},{s.y:.0f} "
                f"{xr:.0f},{t.y:.0f} {t.x + t.w / 2:.0f},{t.y:.0f}"
            )
        else:
            my = (y1 + y2) / 2
            d = f"M{x1:.0f},{y1:.0f} C{x1:.0f},{my:.0f} {x2:.0f},{my:.0f} {x2:.0f},{y2:.0f}"
        parts.append(f'<path class="{cls}" d="{d}" marker-end="url(#arrow)"/>')
    for b in view.blocks:
        classes = ["block", b.kind, "partial" if b.partial else "full"]
        if b.loop_header:
            classes.append("loop-header")
        x0, y0 = b.x - b.w / 2, b.y - b.h / 2
        title = (
            f"{b.label}: {'reached under a divergent branch' if b.partial else 'whole warp'}"
            f"{', loop header' if b.loop_header else ''}"
            f"{f', loop depth {b.loop_depth}' if b.loop_depth else ''}"
        )
        parts.append(
            f'<g class="{" ".join(classes)}" data-block="{b.index}" '
            f'data-label="{html.escape(b.label)}">'
            f"<title>{html.escape(title)}</title>"
            f'<rect x="{x0:.0f}" y="{y0:.0f}" width="{b.w:.0f}" height="{b.h:.0f}" rx="4"/>'
        )
        head = b.label + ("  [loop header]" if b.loop_header else "")
        if b.kind in ("uniform-branch", "divergent-branch"):
            head += "  " + ("uniform branch" if b.kind == "uniform-branch" else "DIVERGENT branch")
        parts.append(
            f'<text class="head" x="{x0 + 6:.0f}" y="{y0 + LINE_H:.0f}">{html.escape(head)}</text>'
        )
        for k, ln in enumerate(b.lines):
            parts.append(
                f'<text x="{x0 + 6:.0f}" y="{y0 + LINE_H * (k + 2):.0f}">'
                f"{_reg_spans(ln, view.registers)}</text>"
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)


CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em} h2{font-size:1.2em;margin-top:1.6em} h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 8px;font-size:13px}
th{background:#f0f0f0} td.num{text-align:right;font-variant-numeric:tabular-nums}
.cfgbox{overflow:auto;max-height:80vh;border:1px solid #ddd;margin:.5em 0}
svg.cfg text{font-family:ui-monospace,monospace;font-size:11px;fill:#222}
svg.cfg text.head{font-weight:bold}
.block rect{stroke:#555;stroke-width:1}
.block.full rect{fill:#e8f4e8} .block.partial rect{fill:#fde8e0}
.block.divergent-branch rect{stroke:#c0392b;stroke-width:2.5}
.block.uniform-branch rect{stroke:#1e7b34;stroke-width:2.5}
.block.loop-header rect{stroke-dasharray:6 3}
.edge{fill:none;stroke:#777;stroke-width:1.2} .edge.back{stroke:#2c5aa0;stroke-dasharray:5 3}
marker path{fill:#777}
tspan.reg{cursor:pointer} tspan.reg.varying{fill:#b03a2e;font-weight:bold}
tspan.reg.uniform{fill:#1e6b34}
tspan.reg.selected{text-decoration:underline}
#why{position:fixed;right:1em;bottom:1em;width:38em;max-height:45vh;overflow:auto;background:#fffbe6;
 border:1px solid #c9b458;padding:.6em;font-family:ui-monospace,monospace;font-size:12px;
 white-space:pre;display:none}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #555;
 font-size:12px}
pre.diff{font-size:12px;background:#fafafa;border:1px solid #ddd;padding:.5em;overflow:auto;
 max-height:70vh}
.diff .add{background:#e6ffec} .diff .del{background:#ffebe9} .diff .hunk{color:#6a737d}
.regs{font-family:ui-monospace,monospace;font-size:12px;columns:6}
.regs span{cursor:pointer}
"""

SCRIPT = """
(function(){
  var why = JSON.parse(document.getElementById('why-data').textContent);
  var box = document.getElementById('why');
  function show(func, reg){
    var text = (why[func] || {})[reg];
    document.querySelectorAll('.reg.selected').forEach(function(e){e.classList.remove('selected');});
    document.querySelectorAll('[data-func="'+func+'"] [data-reg="'+reg+'"]').forEach(
      function(e){e.classList.add('selected');});
    box.textContent = text ? text : (func + ': ' + reg + ' is uniform');
    box.style.display = 'block';
  }
  document.addEventListener('click', function(ev){
    var t = ev.target.closest ? ev.target.closest('[data-reg]') : null;
    if (!t) { return; }
    var f = t.closest('[data-func]');
    show(f.getAttribute('data-func'), t.getAttribute('data-reg'));
  });
  box.addEventListener('dblclick', function(){ box.style.display = 'none'; });
})();
"""


def _diff_html(before: str, after: str) -> tuple[str, int, int]:
    lines = list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), "before.ptx", "after.ptx", lineterm="", n=2
        )
    )
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    shown = lines[:MAX_DIFF_LINES]
    out = []
    for ln in shown:
        cls = ""
        if ln.startswith("@@"):
            cls = "hunk"
        elif ln.startswith("+") and not ln.startswith("+++"):
            cls = "add"
        elif ln.startswith("-") and not ln.startswith("---"):
            cls = "del"
        out.append(f'<span class="{cls}">{html.escape(ln)}</span>' if cls else html.escape(ln))
    if len(lines) > len(shown):
        out.append(f"... {len(lines) - len(shown)} more diff lines")
    if not lines:
        out.append("(no textual difference)")
    return "\n".join(out), added, removed


def sass_table(before: str, after: str, arch: str) -> tuple[str, str]:
    """(HTML table, note) of SASS statistics before/after; empty table without ptxas."""
    from ptxopt.oracle import assemble, find_nvdisasm, find_ptxas

    if find_ptxas() is None:
        return "", "ptxas is not available: no SASS statistics."
    rows = []
    results = {}
    for tag, text in (("before", before), ("after", after)):
        r = assemble(text, arch)
        if not r.ok:
            return "", f"ptxas rejected the {tag} PTX for {arch}: {html.escape(r.error[:300])}"
        results[tag] = r
    names = sorted(set(results["before"].functions) | set(results["after"].functions))
    have_sass = find_nvdisasm() is not None
    head = ["function", "registers"]
    if have_sass:
        head += ["SASS instrs", "R", "UR", "P", "UP", "BSSY"]
    head += ["stack", "spills"]
    rows.append("<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>")

    def cell(b: object, a: object) -> str:
        mark = "" if b == a else ' style="background:#fff3c4"'
        return f'<td class="num"{mark}>{b} &rarr; {a}</td>'

    for n in names:
        fb = results["before"].functions.get(n)
        fa = results["after"].functions.get(n)
        if fb is None or fa is None:
            continue
        cells = [f"<td>{html.escape(n)}</td>", cell(fb.registers, fa.registers)]
        if have_sass:
            sb = results["before"].sass.get(n)
            sa = results["after"].sass.get(n)
            if sb is not None and sa is not None:
                cells.append(cell(sb.instructions, sa.instructions))
                for k in ("R", "UR", "P", "UP"):
                    cells.append(cell(len(sb.registers(k)), len(sa.registers(k))))
                cells.append(cell(sb.count("BSSY"), sa.count("BSSY")))
            else:
                cells += ["<td></td>"] * 6
        cells.append(cell(fb.stack_frame, fa.stack_frame))
        cells.append(cell(fb.spill_stores + fb.spill_loads, fa.spill_stores + fa.spill_loads))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    note = f"ptxas -O3 -arch={arch}" + ("" if have_sass else " (nvdisasm missing: no SASS counts)")
    return '<table class="sass">' + "\n".join(rows) + "</table>", note


def build_report(
    text: str,
    name: str,
    passes: str = "default",
    knobs: list[str] | None = None,
    arch: str | None = None,
    sass: bool = True,
) -> str:
    """The HTML page for PTX ``text``."""
    from ptxopt.driver import optimize
    from ptxopt.knobs import parse_assignments
    from ptxopt.pipeline import parse_pipeline
    from ptxopt.report.analyze_cli import analyze_text

    mod, md, report = analyze_text(text, name)
    res = optimize(
        text, name, parse_pipeline(passes), arch=arch, knobs=parse_assignments(knobs or [])
    )
    after = res.text
    views = []
    for func, fr in zip(mod.funcs, report["functions"], strict=True):
        v = function_view(func, md.funcs[func.name], fr, mod, md)
        if len(v.blocks) <= MAX_DRAWN_BLOCKS:
            layout(v)
        views.append(v)
    target = arch or mod.ast.arch
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>ptxopt report: {html.escape(name)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>ptxopt report: {html.escape(name)}</h1>",
        f"<p>{text.count(chr(10))} lines, {len(views)} functions; "
        f"pipeline <code>{html.escape(passes)}</code>"
        + (f", target {html.escape(target)}" if target else "")
        + "</p>",
        '<p class="legend">Blocks: <span style="background:#e8f4e8">whole warp</span>'
        '<span style="background:#fde8e0">under a divergent branch</span>'
        '<span style="border:2.5px solid #1e7b34">uniform branch</span>'
        '<span style="border:2.5px solid #c0392b">divergent branch</span>'
        '<span style="border-style:dashed">loop header</span> '
        "blue dashed edges: loop back edges. Click a register for why it is varying.</p>",
        '<h2 id="functions">Functions</h2>',
        "<table><tr><th>function</th><th>kind</th><th>blocks</th><th>registers uniform</th>"
        "<th>branches uniform</th><th>divergent branches</th></tr>",
    ]
    for v in views:
        s = v.summary
        out.append(
            f'<tr><td><a href="#fn-{html.escape(v.name)}">{html.escape(v.name)}</a></td>'
            f'<td>{html.escape(v.kind)}</td><td class="num">{len(v.blocks)}</td>'
            f'<td class="num">{s["uniform_registers"]}/{s["registers"]}</td>'
            f'<td class="num">{s["uniform_branches"]}/{s["branches"]}</td>'
            f'<td class="num">{s["divergent_branches"]}</td></tr>'
        )
    out.append("</table>")
    for v in views:
        out.append(
            f'<section class="function" id="fn-{html.escape(v.name)}" '
            f'data-func="{html.escape(v.name)}">'
        )
        out.append(f"<h3>{html.escape(v.kind)} {html.escape(v.name)}</h3>")
        if v.width:
            out.append(f'<div class="cfgbox">{render_svg(v)}</div>')
        else:
            out.append(f"<p>{len(v.blocks)} blocks: too many to draw.</p>")
        regs = " ".join(
            f'<span class="reg {st}" data-reg="{html.escape(r)}">'
            f"{html.escape(r)} {st[0]}</span><br>"
            for r, st in v.registers.items()
        )
        out.append(f'<details><summary>registers</summary><div class="regs">{regs}</div></details>')
        out.append("</section>")
    out.append('<h2 id="passes">Passes</h2>')
    out.append(
        "<table><tr><th>step</th><th>seconds</th><th>functions changed</th><th>counts</th></tr>"
    )
    for label, secs in res.report.times:
        counts: dict[str, int] = dict(res.report.stats.get(label, {}))
        shown = ", ".join(f"{k}: {n}" for k, n in sorted(counts.items())) or ""
        changed = res.report.changed.get(label, "")
        out.append(
            f'<tr><td>{html.escape(label)}</td><td class="num">{secs:.4f}</td>'
            f'<td class="num">{changed}</td><td>{html.escape(shown)}</td></tr>'
        )
    out.append("</table>")
    diff, added, removed = _diff_html(text, after)
    out.append(f'<h2 id="diff">PTX before/after (+{added} -{removed} lines)</h2>')
    out.append(f'<pre class="diff">{diff}</pre>')
    out.append('<h2 id="sass">SASS before/after</h2>')
    if sass and target:
        table, note = sass_table(text, after, target)
        out.append(f"<p>{note}</p>{table}")
    else:
        out.append("<p>not requested</p>")
    why = {v.name: v.why for v in views}
    data = json.dumps(why).replace("</", "<\\/")
    out.append(f'<script type="application/json" id="why-data">{data}</script>')
    out.append('<div id="why" title="double-click to close"></div>')
    out.append(f"<script>{SCRIPT}</script>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def cmd_report(args: argparse.Namespace) -> int:
    from ptxopt.cli import read_input, write_output
    from ptxopt.knobs import KnobError

    text, name = read_input(args.input)
    passes = "default" if args.O else (args.passes or "default")
    try:
        page = build_report(text, name, passes, args.knob, args.arch, sass=not args.no_sass)
    except (ValueError, KnobError) as e:
        print(f"ptxopt: error: {e}", file=sys.stderr)
        return 2
    write_output(args.output, page)
    return 0


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report",
        help="a self-contained HTML report: CFGs by divergence, pass statistics, diff, SASS",
    )
    p.add_argument("input", metavar="IN", help="PTX file ('-': standard input)")
    p.add_argument("-o", "--output", metavar="OUT", default="report.html", help="HTML file")
    p.add_argument(
        "-p", "--passes", metavar="PASSES", help="passes (default: the default pipeline)"
    )
    p.add_argument("-O", action="store_true", help="the default pipeline")
    p.add_argument("--knob", metavar="Name=Value", action="append", default=[])
    p.add_argument("--arch", metavar="sm_XX", help="target (default: the file's)")
    p.add_argument("--no-sass", action="store_true", help="skip ptxas/nvdisasm statistics")
    p.set_defaults(func=cmd_report)
