"""The phase table: where each pass runs in the default pipeline, as data.

ptxas numbers its optimization phases (spec 01-03: GeneralOptimize at 13, 29, 37, 46,
58 and 65; GvnCse at 49; OriPropagateVarying at 53 and 70; ConvertToUniformReg at 74
...).  ptxopt's default pipeline (``-O`` / ``-p default``) runs the passes it
implements at those places and in that order; cicc's IV demotion runs first, since
cicc runs it before PTX is written.  Each row is a *placement*: a pass at one
position, addressable as ``PASS@NN`` (``general-optimize@29``) so that one placement
can be disabled on its own (``--disable general-optimize@58``).

``--named-phases A,B`` takes ptxas's phase names (``GeneralOptimizeLate``,
``GvnCse``) and the sub-pass names the spec lets one target (``OriCopyProp``), mapped
by :data:`ALIASES` to a pass plus knob values.

A row whose pass is not registered (not implemented yet) is skipped by the default
pipeline and listed as such by ``ptxopt passes``.
"""

from __future__ import annotations

from collections.abc import Iterable

from ptxopt.record import Record, set_field

__all__ = [
    "ALIASES",
    "PHASES",
    "Phase",
    "Step",
    "default_steps",
    "resolve_named_phases",
    "resolve_pass_list",
]


class Phase(Record):
    """One placement of a pass.  ``number`` is the ptxas phase number (``None`` for a
    pass that is no ptxas phase, e.g. cicc's IV demotion); ``default`` says whether
    ``-O`` runs it; ``report`` marks phases that only annotate (74/86: the register
    file decision happens inside ptxas, ptxopt reports it)."""

    __slots__ = ("number", "ptxas_name", "pass_name", "default", "report", "origin", "note")
    number: int | None
    ptxas_name: str
    pass_name: str
    default: bool
    report: bool
    origin: str
    note: str

    def __init__(
        self,
        number: int | None,
        ptxas_name: str,
        pass_name: str,
        default: bool = True,
        report: bool = False,
        origin: str = "ptxas",
        note: str = "",
    ) -> None:
        set_field(self, "number", number)
        set_field(self, "ptxas_name", ptxas_name)
        set_field(self, "pass_name", pass_name)
        set_field(self, "default", default)
        set_field(self, "report", report)
        set_field(self, "origin", origin)
        set_field(self, "note", note)

    @property
    def placement(self) -> str:
        return f"{self.pass_name}@{self.number}" if self.number is not None else self.pass_name


PHASES: tuple[Phase, ...] = (
    Phase(None, "IVDemotion", "iv-demotion", origin="cicc", note="inside nvvmrematerialize"),
    Phase(None, "ConvertMemoryToRegisterOrUniform", "promote-local", note="out of band"),
    Phase(11, "ReplaceUniformsWithImm", "replace-uniforms-with-imm"),
    Phase(13, "GeneralOptimizeEarly", "general-optimize"),
    Phase(27, "AnalyzeUniformsForSpeculation", "analyze-uniforms-for-speculation"),
    Phase(29, "GeneralOptimize", "general-optimize"),
    Phase(37, "GeneralOptimizeMid", "general-optimize"),
    # ptxas aggregates uniform atomics of optimized PTX itself: at PTX level the pass
    # only pays off on -O0 PTX (docs/uniform-passes.md), so -O leaves it to the user
    Phase(
        44,
        "OptimizeUniformAtomic",
        "optimize-uniform-atomic",
        default=False,
        note="off in -O: ptxas aggregates -O3 PTX itself",
    ),
    Phase(46, "GeneralOptimizeMid2", "general-optimize"),
    Phase(49, "GvnCse", "gvn-cse"),
    # ptxas reassociates again after us; at PTX level the rebuilt chains cost SASS
    # (+0.8 % on sm_80, docs/commoning.md), so -O leaves it to the user
    Phase(
        50,
        "OriReassociateAndCommon",
        "reassociate",
        default=False,
        note="off in -O: SASS +0.8 % on sm_80",
    ),
    Phase(53, "OriPropagateVaryingFirst", "propagate-varying-first"),
    Phase(56, "SpeculativeHoistComInsts", "speculative-hoist", default=False),
    Phase(58, "GeneralOptimizeLate", "general-optimize"),
    # ptxas if-converts again at its own phase 63 with its register pressure in view;
    # at PTX level the pass is mixed (docs/redundancy.md), so -O leaves it to the user
    Phase(
        63,
        "OriDoPredication",
        "predication",
        default=False,
        note="off in -O: SASS -2.1 % but registers +0.8 % on sm_90, SASS +0.5 % on sm_90a",
    ),
    Phase(64, "LateOriCommoning", "late-commoning"),
    Phase(65, "GeneralOptimizeLate2", "general-optimize"),
    Phase(70, "OriPropagateVaryingSecond", "propagate-varying-second"),
    Phase(74, "ConvertToUniformReg", "convert-to-uniform-reg", report=True),
    Phase(83, "OriBackCopyPropagate", "back-copy-prop", default=False, note="gated by phase 82"),
    Phase(86, "InsertPseudoUseDefForConvUR", "insert-pseudo-use-def-conv-ur", report=True),
)


class Step(Record):
    """One pass run of a pipeline: the pass, the placement it stands for (for dumps,
    timing and statistics) and knob values that apply to this run only."""

    __slots__ = ("pass_name", "label", "phase", "knobs")
    pass_name: str
    label: str
    phase: int | None
    knobs: dict[str, object]

    def __init__(
        self,
        pass_name: str,
        label: str,
        phase: int | None = None,
        knobs: dict[str, object] | None = None,
    ) -> None:
        set_field(self, "pass_name", pass_name)
        set_field(self, "label", label)
        set_field(self, "phase", phase)
        set_field(self, "knobs", {} if knobs is None else knobs)


#: ptxas names that select a pass with particular knob values (``--named-phases``).
ALIASES: dict[str, tuple[str, dict[str, object]]] = {
    "OriCopyProp": ("general-optimize", {"GeneralOptimizeSubPasses": "copy-prop"}),
    "AdvancedPhaseBackPropVReg": ("back-copy-prop", {}),
}


def _step(ph: Phase) -> Step:
    return Step(ph.pass_name, ph.placement, ph.number)


def default_steps(available: Iterable[str], disabled: Iterable[str] = ()) -> list[Step]:
    """The default pipeline: every default placement whose pass exists, minus those
    named in ``disabled`` (a pass name disables all its placements, ``PASS@NN`` one,
    a ptxas phase name or number its row)."""
    have = set(available)
    off = set(disabled)
    out: list[Step] = []
    for ph in PHASES:
        if not ph.default or ph.pass_name not in have:
            continue
        if off & {ph.pass_name, ph.placement, ph.ptxas_name, str(ph.number)}:
            continue
        out.append(_step(ph))
    return out


def known_disable_names() -> set[str]:
    names: set[str] = set()
    for ph in PHASES:
        names |= {ph.pass_name, ph.placement, ph.ptxas_name}
        if ph.number is not None:
            names.add(str(ph.number))
    return names


def resolve_named_phases(names: Iterable[str], available: Iterable[str]) -> list[Step]:
    """``--named-phases``: ptxas phase names (or numbers), or aliases, in order."""
    have = set(available)
    by_name = {ph.ptxas_name: ph for ph in PHASES}
    by_number = {str(ph.number): ph for ph in PHASES if ph.number is not None}
    out: list[Step] = []
    for raw in names:
        n = raw.strip()
        if not n:
            continue
        ph = by_name.get(n) or by_number.get(n)
        if ph is not None:
            if ph.pass_name not in have:
                raise ValueError(f"phase {n} ({ph.pass_name}) is not implemented")
            out.append(_step(ph))
            continue
        alias = ALIASES.get(n)
        if alias is not None and alias[0] in have:
            out.append(Step(alias[0], n, None, dict(alias[1])))
            continue
        known = sorted(set(by_name) | set(ALIASES))
        raise ValueError(f"unknown phase '{n}' (known: {', '.join(known)})")
    return out


def resolve_pass_list(spec: str | None, available: Iterable[str]) -> list[Step]:
    """``-p`` syntax: ``None``/``"default"`` -> the default pipeline; ``"none"`` -> no
    passes; otherwise a comma list of pass names or placements (``general-optimize@29``)."""
    have = set(available)
    if spec is None or spec.strip() == "default":
        return default_steps(have)
    if spec.strip() in ("none", ""):
        return []
    placements = {ph.placement: ph for ph in PHASES}
    out: list[Step] = []
    for raw in spec.split(","):
        n = raw.strip()
        if not n:
            continue
        if n == "default":
            out.extend(default_steps(have))
        elif n in placements and placements[n].pass_name in have:
            out.append(_step(placements[n]))
        elif n in have:
            phase = next((ph.number for ph in PHASES if ph.pass_name == n), None)
            out.append(Step(n, n, phase))
        else:
            raise ValueError(f"unknown pass '{n}' (known: {', '.join(sorted(have)) or 'none'})")
    return out
