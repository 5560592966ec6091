"""``ptxopt report``: the page's structure (self-contained, one CFG per function,
blocks coloured by divergence, why-chains, pass table, diff, SASS statistics)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from importlib.resources import files
from pathlib import Path

import pytest

import ptxopt
from ptxopt.tools import report as rep

ROOT = Path(__file__).resolve().parent.parent
PTX = (files("ptxopt") / "examples" / "reduce.ptx").read_text()


class Page(HTMLParser):
    """Collects tags with their attributes and the text of script elements."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: dict[str, str] = {}
        self._script: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag == "script":
            self._script = a.get("id", "code")
            self.scripts[self._script] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts[self._script] += data

    def find(self, tag: str, cls: str | None = None) -> list[dict[str, str]]:
        return [
            a
            for t, a in self.tags
            if t == tag and (cls is None or cls in a.get("class", "").split())
        ]


@pytest.fixture(scope="module")
def page() -> tuple[str, Page]:
    html = rep.build_report(PTX, "reduce.ptx", "default", sass=False)
    p = Page()
    p.feed(html)
    return html, p


def test_self_contained(page: tuple[str, Page]) -> None:
    html, p = page
    assert html.startswith("<!DOCTYPE html>")
    # nothing is fetched: no external scripts, styles, images or fonts
    for tag, a in p.tags:
        for attr in ("src", "href"):
            v = a.get(attr, "")
            assert not v or v.startswith("#"), (tag, attr, v)
    assert "@import" not in html and "url(http" not in html


def test_one_cfg_per_function_coloured_by_divergence(page: tuple[str, Page]) -> None:
    _, p = page
    report = ptxopt.analyze(PTX)
    names = [f["name"] for f in report["functions"]]
    svgs = p.find("svg", "cfg")
    assert [s["data-func"] for s in svgs] == names
    blocks = p.find("g", "block")
    # every block is either run by the whole warp or only under a divergent branch
    assert all(("partial" in b["class"]) != ("full" in b["class"]) for b in blocks)
    assert any("partial" in b["class"] for b in blocks)
    # branch colours agree with the analysis
    want = sum(f["summary"]["divergent_branches"] for f in report["functions"])
    assert len(p.find("g", "divergent-branch")) == want
    want = sum(f["summary"]["uniform_branches"] for f in report["functions"])
    assert len(p.find("g", "uniform-branch")) == want
    assert p.find("g", "loop-header") and p.find("path", "back")


def test_why_chains_on_click(page: tuple[str, Page]) -> None:
    _, p = page
    why = json.loads(p.scripts["why-data"])
    chain = why["block_reduce_sum"]["%r3"]
    assert "%tid.x" in chain and chain == ptxopt.explain(PTX, "block_reduce_sum:%r3")
    # clickable register spans, varying ones all with a chain
    regs = p.find("tspan", "reg")
    assert regs and {r["data-reg"] for r in regs if "varying" in r["class"]} <= set(
        k for f in why.values() for k in f
    )
    assert "addEventListener('click'" in p.scripts["code"]


def test_passes_diff_and_summary(page: tuple[str, Page]) -> None:
    html, p = page
    assert 'id="passes"' in html and "propagate-varying" in html
    assert re.search(r'<h2 id="diff">PTX before/after \(\+\d+ -\d+ lines\)</h2>', html)
    assert p.find("pre", "diff")
    assert "block_reduce_sum</a>" in html


def test_layout_without_grandalf(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rep, "MAX_LAYOUT_BLOCKS", 0)  # forces the simple layering
    html = rep.build_report(PTX, "reduce.ptx", "none", sass=False)
    p = Page()
    p.feed(html)
    rects = [a for t, a in p.tags if t == "rect"]
    assert rects and all(float(r["x"]) >= 0 and float(r["y"]) >= 0 for r in rects)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
def test_cli_with_sass(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    env = dict(os.environ)
    if not os.environ.get("PTXOPT_TEST_INSTALLED"):
        env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "ptxopt.cli", "report", "example:reduce", "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert '<table class="sass">' in html and "ptxas -O3 -arch=sm_90" in html
    if shutil.which("nvdisasm") or "nvdisasm missing" not in html:
        assert "SASS instrs" in html and "BSSY" in html
    done = subprocess.run(
        [sys.executable, "-m", "ptxopt.cli", "report", "example:reduce", "-p", "nope"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "unknown pass" in done.stderr
