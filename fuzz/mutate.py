"""Mutation fuzzer for the front end, with ptxas 13.0 as the judge of valid PTX.

Each mutant is a seed PTX file (small corpus files, ``tests/ptx``, ``fuzz/seeds``) with
one to three random edits: on tokens (delete, duplicate, swap, replace, insert), on
the dotted parts of an opcode or directive (``st.global.f32`` -> ``st.global.f32.f32``),
on numbers (octal, huge, float forms), on registers (a register of another class),
on lines (delete, duplicate, swap, move) or on bytes (control characters included).
Mutant ``i`` of seed ``s`` depends only on ``(s, i)`` and the seed files, so a run is
reproducible.

Every mutant goes to ``ptxas -arch=<its .target>`` and to ``ptxopt opt -p none``
(in a worker process, with a time and memory limit), and is classified:

=============  =================================================================
CRASH          ptxopt raised an internal error (exit 3) or died
HANG           ptxopt ran past the time limit or the memory limit
CONTRACT       an error without ``file:line:col: error:``, a wrong exit status, or
               an output file touched by a failed run
FALSE-REJECT   ptxas accepts the input, ptxopt rejects it
FALSE-ACCEPT   ptxas rejects the input, ptxopt accepts it
BROKEN-OUTPUT  ptxas accepts the input and ptxopt's output is rejected by ptxas
ok             both agree (and the output assembles)
ORACLE-CRASH   ptxas itself crashed, timed out or ran out of memory: no verdict
=============  =================================================================

Reproducers go to ``fuzz/findings/<CLASS>/`` with a ``.txt`` beside each (both
verdicts); ``--minimize`` shrinks them (line then token delta debugging, keeping the
class).  ptxas verdicts are cached by content hash in ``fuzz/.cache`` so a re-run
after a fix only pays for ptxopt.

    nice python fuzz/mutate.py -n 100000 --seed 1 [-j 2] [--max-lines 1500] [--minimize]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import multiprocessing as mp
import os
import pickle
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # this checkout's ptxopt, not an installed one
FINDINGS = ROOT / "fuzz" / "findings"
CACHE = ROOT / "fuzz" / ".cache" / "ptxas-verdicts.pickle"
SEED_DIRS = ("tests/corpus", "tests/ptx", "fuzz/seeds")

CLASSES = (
    "CRASH",
    "HANG",
    "CONTRACT",
    "FALSE-REJECT",
    "FALSE-ACCEPT",
    "BROKEN-OUTPUT",
    "ok",
    "ORACLE-CRASH",
)
BAD = CLASSES[:6]

# ---------------------------------------------------------------------------
# Mutations

_TOKEN = re.compile(
    r"""//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|[ \t\r\n]+
      |[A-Za-z_$%.][\w$.:]*|\d[\w.]*|.""",
    re.X | re.S,
)
_NUMBERS = (
    "0",
    "1",
    "-1",
    "08",
    "09",
    "0x",
    "0xG",
    "00",
    "017",
    "0b102",
    "0b1",
    "1U",
    "0xffffffffU",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "0x1ffffffffffffffff",
    "-9223372036854775808",
    ".5",
    "1.",
    "1e400",
    "1e-400",
    "1.5e",
    "0f3f800000",
    "0f7fc00000",
    "0f3f8",
    "0d3ff0000000000000",
    "0d3ff",
    "0F00000000",
    "--1",
    "- 1",
    "(1)",
    "1+2",
    "2147483648",
    "0x80000000",
    "1<<40",
    "(1/0)",
    "(1%0)",
    "WARP_SZ",
    "!0",
    "~0",
    "0.0",
    "-0.0",
    "1E5",
    "0X1F",
)
_PUNCT = ("{", "}", "(", ")", "[", "]", ";", ",", ":", "+", "-", "!", "|", "@", "<", ">", "=")
_BYTES = "\x00\x01\x07\x08\x0b\x0c\x1b\x7f\t\r\n \"'\\#$%&*/?`^~.,;:{}[]()<>@!|0123456789aZ_"


def _tokens(text: str) -> list[str]:
    return [m.group() for m in _TOKEN.finditer(text)]


def _significant(toks: list[str]) -> list[int]:
    return [i for i, t in enumerate(toks) if not (t.isspace() or t.startswith(("//", "/*")))]


class Mutator:
    """The edit operators, drawing from one ``random.Random``."""

    def __init__(self, rng: random.Random, vocab: dict[str, list[str]]) -> None:
        self.rng = rng
        self.vocab = vocab

    def apply(self, text: str) -> tuple[str, str]:
        ops = [
            (self.tok_delete, 10),
            (self.tok_duplicate, 6),
            (self.tok_replace_same_file, 10),
            (self.tok_replace_vocab, 8),
            (self.tok_swap, 5),
            (self.tok_insert, 6),
            (self.part_edit, 16),
            (self.number, 8),
            (self.register, 8),
            (self.line_edit, 10),
            (self.byte_edit, 6),
        ]
        funcs = [f for f, _ in ops]
        weights = [w for _, w in ops]
        n = self.rng.choices((1, 2, 3), (80, 15, 5))[0]
        names = []
        for _ in range(n):
            f = self.rng.choices(funcs, weights)[0]
            text = f(text)
            names.append(f.__name__)
        return text, "+".join(names)

    # -- token level ---------------------------------------------------------------

    def _pick(self, toks: list[str]) -> int:
        sig = _significant(toks)
        return self.rng.choice(sig) if sig else 0

    def tok_delete(self, text: str) -> str:
        toks = _tokens(text)
        if toks:
            del toks[self._pick(toks)]
        return "".join(toks)

    def tok_duplicate(self, text: str) -> str:
        toks = _tokens(text)
        if toks:
            i = self._pick(toks)
            toks.insert(i, toks[i] + self.rng.choice(("", " ")))
        return "".join(toks)

    def tok_replace_same_file(self, text: str) -> str:
        toks = _tokens(text)
        sig = _significant(toks)
        if len(sig) > 1:
            toks[self.rng.choice(sig)] = toks[self.rng.choice(sig)]
        return "".join(toks)

    def tok_replace_vocab(self, text: str) -> str:
        toks = _tokens(text)
        if toks:
            kind = self.rng.choice(("opcodes", "directives", "punct", "words"))
            toks[self._pick(toks)] = self.rng.choice(self.vocab[kind])
        return "".join(toks)

    def tok_swap(self, text: str) -> str:
        toks = _tokens(text)
        sig = _significant(toks)
        if len(sig) > 1:
            k = self.rng.randrange(len(sig) - 1)
            a, b = sig[k], sig[k + 1]
            toks[a], toks[b] = toks[b], toks[a]
        return "".join(toks)

    def tok_insert(self, text: str) -> str:
        toks = _tokens(text)
        if toks:
            i = self._pick(toks)
            src = toks[self._pick(toks)]
            toks.insert(i, src + " ")
        return "".join(toks)

    def part_edit(self, text: str) -> str:
        """Edit one dotted part of an opcode or directive (``ld.global.u32``)."""
        toks = _tokens(text)
        cands = [i for i in _significant(toks) if "." in toks[i] and toks[i][0] not in "0123456789"]
        if not cands:
            return self.tok_delete(text)
        i = self.rng.choice(cands)
        tok = toks[i]
        lead = "." if tok.startswith(".") else ""
        parts = tok[len(lead) :].split(".")
        j = self.rng.randrange(len(parts))
        how = self.rng.choice(("delete", "duplicate", "replace", "insert", "replace"))
        if how == "delete" and len(parts) > 1:
            del parts[j]
        elif how == "duplicate":
            parts.insert(j, parts[j])
        elif how == "replace" and j > 0:
            parts[j] = self.rng.choice(self.vocab["parts"])
        else:
            parts.insert(max(j, 1), self.rng.choice(self.vocab["parts"]))
        toks[i] = lead + ".".join(parts)
        return "".join(toks)

    def number(self, text: str) -> str:
        toks = _tokens(text)
        nums = [i for i in _significant(toks) if toks[i][0].isdigit()]
        if not nums:
            return self.tok_replace_vocab(text)
        toks[self.rng.choice(nums)] = self.rng.choice(_NUMBERS)
        return "".join(toks)

    def register(self, text: str) -> str:
        """Replace a register by one of another name (often another class)."""
        toks = _tokens(text)
        regs = [i for i in _significant(toks) if toks[i].startswith("%")]
        if not regs or not self.vocab["registers"]:
            return self.tok_delete(text)
        toks[self.rng.choice(regs)] = self.rng.choice(self.vocab["registers"])
        return "".join(toks)

    # -- line and byte level ---------------------------------------------------------

    def line_edit(self, text: str) -> str:
        lines = text.split("\n")
        if len(lines) < 2:
            return text
        i = self.rng.randrange(len(lines))
        j = self.rng.randrange(len(lines))
        how = self.rng.choice(("delete", "duplicate", "swap", "move"))
        if how == "delete":
            del lines[i]
        elif how == "duplicate":
            lines.insert(j, lines[i])
        elif how == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines.insert(j, lines.pop(i))
        return "\n".join(lines)

    def byte_edit(self, text: str) -> str:
        if not text:
            return self.rng.choice(_BYTES)
        i = self.rng.randrange(len(text))
        c = self.rng.choice(_BYTES)
        how = self.rng.choice(("replace", "insert", "delete"))
        if how == "replace":
            return text[:i] + c + text[i + 1 :]
        if how == "insert":
            return text[:i] + c + text[i:]
        return text[:i] + text[i + 1 :]


def build_vocab(texts: list[str]) -> dict[str, list[str]]:
    """Opcodes, directives, modifier parts and registers seen in the seeds."""
    opcodes: set[str] = set()
    directives: set[str] = set()
    parts: set[str] = set()
    registers: set[str] = set()
    words: set[str] = set()
    for text in texts:
        for tok in _tokens(text):
            if tok.startswith("."):
                directives.add(tok)
                parts.update(p for p in tok[1:].split(".") if p)
            elif tok.startswith("%"):
                if not re.search(r"\.[xyz]$", tok):
                    registers.add(re.sub(r"\d+$", "", tok) + str(len(tok) % 7))
                else:
                    registers.add(tok)
            elif tok[:1].isalpha() or tok[:1] == "_":
                if "." in tok:
                    opcodes.add(tok)
                    parts.update(tok.split(".")[1:])
                else:
                    words.add(tok)
    return {
        "opcodes": sorted(opcodes),
        "directives": sorted(directives),
        "parts": sorted(parts),
        "registers": sorted(registers),
        "words": sorted(words),
        "punct": list(_PUNCT),
    }


# ---------------------------------------------------------------------------
# Oracle and system under test

_TARGET = re.compile(r"^[ \t]*\.target[ \t]+(sm_\d+[af]?)\b", re.M)
_KNOWN_ARCH = re.compile(r"sm_(75|80|86|87|88|89|90a?|1[0-2][0-9][af]?)$")
_ERROR_LINE = re.compile(r"^(.+?):(\d+):(\d+): error: \S")


def mutant_arch(text: str, fallback: str) -> str:
    m = _TARGET.search(text)
    if m and _KNOWN_ARCH.match(m.group(1)):
        return m.group(1)
    return fallback


def run_ptxas(text: str, arch: str, workdir: str, timeout: float = 60.0) -> tuple[str, str]:
    """ptxas's verdict: ``("accept"|"reject"|"crash", first error line)``."""
    src = os.path.join(workdir, "oracle.ptx")
    with open(src, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    try:
        r = subprocess.run(
            ["ptxas", f"-arch={arch}", src, "-o", os.path.join(workdir, "oracle.cubin")],
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return "crash", "ptxas timed out"
    log = (r.stdout + r.stderr).decode("utf-8", "replace").replace(src, "IN")
    if r.returncode == 0:
        return "accept", ""
    if r.returncode < 0 or r.returncode not in (1, 255):
        return "crash", f"ptxas exit status {r.returncode}"
    if "Memory allocation failure" in log:  # ptxas ran out of memory: no verdict
        return "crash", "ptxas: memory allocation failure"
    first = next((ln for ln in log.splitlines() if "error" in ln or "fatal" in ln), log[:200])
    return "reject", first.strip()


class _Timeout(BaseException):
    """Raised by the alarm: not an Exception, so ptxopt's handlers cannot catch it."""


def _alarm(_signum: int, _frame: object) -> None:
    raise _Timeout()


def run_ptxopt(src: str, out: str, timeout: int) -> tuple[str, int, str]:
    """ptxopt in this process: ``(status, exit code, stderr)``; status is
    ``"ran"``, ``"hang"`` or ``"crash"`` (an exception escaped ``main``)."""
    from ptxopt.cli import main

    err = io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["opt", "-p", "none", src, "-o", out])
        return "ran", code, err.getvalue()
    except _Timeout:
        return "hang", -1, "timed out"
    except MemoryError:
        return "hang", -1, "out of memory"
    except BaseException as e:  # noqa: BLE001 - anything escaping main is a crash
        return "crash", -1, f"{type(e).__name__}: {e}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------------------
# One mutant


@dataclass
class Seed:
    path: str
    text: str
    arch: str


@dataclass
class Outcome:
    index: int
    cls: str
    seed: str
    mutation: str
    arch: str
    ptxas: str
    ptxopt: str
    oracle: str = ""  # ptxas on the mutant: accept, reject, crash
    text: str | None = None  # kept for findings only
    verdicts: dict[str, tuple[str, str]] = field(default_factory=dict)


_SEEDS: list[Seed] = []
_VOCAB: dict[str, list[str]] = {}
_CACHE_IN: dict[str, tuple[str, str]] = {}
_WORKDIR = ""


def _init_worker(mem_mb: int) -> None:
    global _WORKDIR
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKDIR = tempfile.mkdtemp(prefix="ptxopt-fuzz-")
    if mem_mb:
        soft = mem_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (soft, resource.getrlimit(resource.RLIMIT_AS)[1]))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))


def make_mutant(seed: int, index: int) -> tuple[Seed, str, str]:
    rng = random.Random(f"{seed}:{index}")
    src = _SEEDS[rng.randrange(len(_SEEDS))]
    text, what = Mutator(rng, _VOCAB).apply(src.text)
    return src, text, what


def _key(text: str, arch: str) -> str:
    return hashlib.sha1(f"{arch}\0{text}".encode("utf-8", "surrogateescape")).hexdigest()


def _verdict(text: str, arch: str, new: dict[str, tuple[str, str]]) -> tuple[str, str]:
    key = _key(text, arch)
    v = _CACHE_IN.get(key) or new.get(key)
    if v is not None and "Memory allocation failure" in v[1]:
        v = ("crash", v[1])
    if v is None:
        v = new[key] = run_ptxas(text, arch, _WORKDIR)
    return v


def classify(text: str, arch: str, timeout: int) -> Outcome:
    """Run both sides on ``text`` and classify (the heart of the fuzzer)."""
    new: dict[str, tuple[str, str]] = {}
    oracle, why = _verdict(text, arch, new)
    src = os.path.join(_WORKDIR, "mutant.ptx")
    out = os.path.join(_WORKDIR, "mutant.out.ptx")
    with open(src, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    sentinel = "// untouched\n"
    with open(out, "w") as f:
        f.write(sentinel)
    before = os.stat(out).st_mtime_ns
    status, code, err = run_ptxopt(src, out, timeout)
    first = err.strip().splitlines()[0] if err.strip() else ""
    o = Outcome(-1, "ok", "", "", arch, why, first, oracle, verdicts=new)
    if oracle == "crash":
        o.cls = "ORACLE-CRASH"
        return o
    if status == "hang":
        o.cls = "HANG"
        return o
    if status == "crash" or code == 3:
        o.cls = "CRASH"
        o.ptxopt = err.strip().splitlines()[-1] if err.strip() else first
        return o
    with open(out, errors="replace", newline="") as f:  # a CR inside a comment stays
        produced = f.read()
    touched = os.stat(out).st_mtime_ns != before or produced != sentinel
    if code == 1:
        m = _ERROR_LINE.match(first)
        if m is None or m.group(1) != src or touched:
            o.cls = "CONTRACT"
            o.ptxopt = first + (" [output touched]" if touched else "")
            return o
        o.ptxopt = first.replace(src, "IN")
        o.cls = "FALSE-REJECT" if oracle == "accept" else "ok"
        return o
    if code != 0 or not touched:
        o.cls = "CONTRACT"
        o.ptxopt = f"exit {code}: {first}"
        return o
    if oracle == "reject":
        o.cls = "FALSE-ACCEPT"
        return o
    verdict, why2 = _verdict(produced, arch, new)
    if verdict == "reject":
        o.cls = "BROKEN-OUTPUT"
        o.ptxas = why2
    return o


def _job(args: tuple[int, int, int]) -> Outcome:
    seed, index, timeout = args
    src, text, what = make_mutant(seed, index)
    arch = mutant_arch(text, src.arch)
    o = classify(text, arch, timeout)
    o.index, o.seed, o.mutation = index, src.path, what
    if o.cls in BAD:
        o.text = text
    return o


# ---------------------------------------------------------------------------
# Driver


def load_seeds(max_lines: int, only: str | None) -> list[Seed]:
    seeds: list[Seed] = []
    for d in SEED_DIRS:
        for p in sorted((ROOT / d).rglob("*.ptx")):
            if ".expected" in p.name:
                continue
            rel = str(p.relative_to(ROOT))
            if only and only not in rel:
                continue
            text = p.read_text()
            if text.count("\n") > max_lines:
                continue
            m = _TARGET.search(text)
            seeds.append(Seed(rel, text, m.group(1) if m else "sm_75"))
    return seeds


def load_cache(path: Path) -> dict[str, tuple[str, str]]:
    try:
        with open(path, "rb") as f:
            data = pickle.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, pickle.UnpicklingError, EOFError):
        return {}


def save_cache(cache: dict[str, tuple[str, str]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        pickle.dump(cache, f)
    os.replace(tmp, path)


def _signature(o: Outcome) -> str:
    """Findings with the same signature are one bug: keep a few reproducers each."""
    msg = re.sub(r"^IN:\d+:\d+: ", "", o.ptxopt)
    msg = re.sub(r"'[^']*'", "'…'", msg)
    oracle = re.sub(r"line \d+", "line N", o.ptxas)
    oracle = re.sub(r"'[^']*'", "'…'", oracle)
    return f"{o.cls}|{msg[:80]}|{oracle[:80]}"


def write_finding(o: Outcome, seed: int) -> Path:
    d = FINDINGS / o.cls
    d.mkdir(parents=True, exist_ok=True)
    stem = f"s{seed}-{o.index}-{Path(o.seed).stem}"
    path = d / f"{stem}.ptx"
    assert o.text is not None
    path.write_text(o.text, encoding="utf-8", errors="surrogateescape")
    (d / f"{stem}.txt").write_text(
        f"seed file: {o.seed}\nmutation: {o.mutation}\narch: {o.arch}\n"
        f"ptxas: {o.ptxas or 'accepted'}\nptxopt: {o.ptxopt or 'accepted'}\n"
    )
    return path


def minimize(text: str, arch: str, cls: str, timeout: int, budget: int = 300) -> str:
    """Delta debugging (Zeller's ddmin) over lines, then over tokens, keeping ``cls``."""
    calls = 0

    def still(candidate: str) -> bool:
        nonlocal calls
        calls += 1
        return classify(candidate, arch, timeout).cls == cls

    for split in (lambda t: t.split("\n"), _tokens):
        joiner = "\n" if split is not _tokens else ""
        units = split(text)
        n = 2
        while len(units) >= 2 and calls < budget:
            chunk = max(1, len(units) // n)
            reduced = False
            for start in range(0, len(units), chunk):
                cand = units[:start] + units[start + chunk :]
                if calls < budget and still(joiner.join(cand)):
                    units = cand
                    n = max(n - 1, 2)
                    reduced = True
                    break
            if not reduced:
                if chunk == 1:
                    break
                n = min(len(units), n * 2)
        text = joiner.join(units)
    return text


def progress(done: int, total: int, counts: Counter[str], t0: float) -> None:
    width = 30
    frac = done / total if total else 1.0
    bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
    rate = done / max(time.time() - t0, 1e-9)
    eta = (total - done) / rate if rate else 0
    bad = " ".join(f"{c}={counts[c]}" for c in BAD if counts[c])
    status = bad or "no findings"
    line = f"[{bar}] {done}/{total} {rate:5.1f}/s eta {eta / 60:5.1f} min  {status}"
    sys.stderr.write(f"\r{line}\x1b[K")
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--count", type=int, default=1000, help="mutants to run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first mutant index")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--max-lines", type=int, default=1500, help="skip larger seed files")
    ap.add_argument("--only", help="use seed files whose path contains this")
    ap.add_argument("--timeout", type=int, default=20, help="seconds per ptxopt run")
    ap.add_argument("--mem-mb", type=int, default=4096, help="address-space limit per worker")
    ap.add_argument("--keep", type=int, default=3, help="reproducers kept per distinct finding")
    ap.add_argument("--minimize", action="store_true", help="shrink the kept reproducers")
    ap.add_argument("--no-findings", action="store_true", help="write no reproducers")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument("--json", metavar="FILE", help="write the summary as JSON")
    ap.add_argument("--cache", type=Path, default=CACHE, help="ptxas verdict cache file")
    args = ap.parse_args(argv)
    if shutil.which("ptxas") is None:
        print("mutate.py: ptxas is not on PATH", file=sys.stderr)
        return 2
    global _SEEDS, _VOCAB, _CACHE_IN
    _SEEDS = load_seeds(args.max_lines, args.only)
    if not _SEEDS:
        print("mutate.py: no seed files", file=sys.stderr)
        return 2
    _VOCAB = build_vocab([s.text for s in _SEEDS])
    _CACHE_IN = load_cache(args.cache)
    new_cache: dict[str, tuple[str, str]] = {}
    counts: Counter[str] = Counter()
    per_sig: Counter[str] = Counter()
    kept: list[tuple[Outcome, Path]] = []
    oracle_rejects = 0
    t0 = time.time()
    jobs = [(args.seed, i, args.timeout) for i in range(args.start, args.start + args.count)]
    ctx = mp.get_context("fork")
    with ctx.Pool(args.jobs, _init_worker, (args.mem_mb,), maxtasksperchild=2000) as pool:
        for done, o in enumerate(pool.imap_unordered(_job, jobs, chunksize=4), 1):
            counts[o.cls] += 1
            oracle_rejects += o.oracle == "reject"
            new_cache.update(o.verdicts)
            if o.cls in BAD:
                sig = _signature(o)
                per_sig[sig] += 1
                if per_sig[sig] <= args.keep and not args.no_findings:
                    kept.append((o, write_finding(o, args.seed)))
            if not args.quiet and (done % 10 == 0 or done == len(jobs)):
                progress(done, len(jobs), counts, t0)
            if args.json and done % 250 == 0:  # a long run can be read while it goes on
                partial = summarize(counts, done, oracle_rejects, time.time() - t0, per_sig)
                Path(args.json).write_text(json.dumps(partial["data"], indent=2) + "\n")
            if len(new_cache) >= 5000:
                _CACHE_IN.update(new_cache)
                save_cache(_CACHE_IN, args.cache)
                new_cache.clear()
    if not args.quiet:
        sys.stderr.write("\n")
    _CACHE_IN.update(new_cache)
    save_cache(_CACHE_IN, args.cache)
    if args.minimize and kept:
        _init_worker(0)
        for o, path in kept:
            assert o.text is not None
            small = minimize(o.text, o.arch, o.cls, args.timeout)
            path.with_suffix(".min.ptx").write_text(small, errors="surrogateescape")
    total = sum(counts.values())
    summary = summarize(counts, total, oracle_rejects, time.time() - t0, per_sig)
    print(summary["text"])
    if args.json:
        Path(args.json).write_text(json.dumps(summary["data"], indent=2, sort_keys=True) + "\n")
    return 1 if any(counts[c] for c in BAD if c != "FALSE-ACCEPT") else 0


def summarize(
    counts: Counter[str], total: int, rejects: int, seconds: float, per_sig: Counter[str]
) -> dict[str, object]:
    judged = total - counts["ORACLE-CRASH"]
    fa = counts["FALSE-ACCEPT"]
    lines = [f"{total} mutants in {seconds:.0f} s ({total / max(seconds, 1e-9):.1f}/s)"]
    for c in CLASSES:
        lines.append(f"  {c:14} {counts[c]:8d}")
    lines.append(f"ptxas rejected {rejects} mutants ({100 * rejects / max(judged, 1):.1f} %)")
    lines.append(
        f"false accepts: {fa} = {100 * fa / max(judged, 1):.3f} % of judged mutants, "
        f"{100 * fa / max(rejects, 1):.3f} % of those ptxas rejects; "
        f"{len(per_sig)} distinct findings"
    )
    top = per_sig.most_common(25)
    if top:
        lines.append("most frequent findings (class | ptxopt | ptxas):")
        lines.extend(f"  {n:6d}  {sig}" for sig, n in top)
    data = {
        "top_findings": [[sig, n] for sig, n in top],
        "total": total,
        "seconds": round(seconds, 1),
        "counts": dict(counts),
        "ptxas_rejected": rejects,
    }
    return {"text": "\n".join(lines), "data": data}


if __name__ == "__main__":
    sys.exit(main())
