"""Per-SM capabilities of the uniform datapath, as data, with the evidence for each row.

Two questions are answered here for every SASS instruction class the Ori view knows:

1. Does the class have a uniform form (``IADD3`` -> ``UIADD3``) on a given SM family,
   i.e. can the value it computes live in UR/UP?  :func:`uniform_form`.
2. May a per-thread instance of the class read one of its sources from UR (the slot
   that can also hold a constant-bank operand)?  :func:`accepts_ur_source`.
3. May a per-thread instance read a uniform predicate (UP) as a source?
   :func:`accepts_up_source`.

Families: ``75`` (sm_75 .. sm_89), ``90`` (sm_90 / sm_90a), ``100`` (sm_100 and later).
Below sm_75 there is no UR file at all.

Evidence keys (``EVIDENCE``) name where a row comes from: the spec's table of uniform
mnemonics (spec 02, "UR Hardware ISA" and "SM Architecture Availability") or a probe
kernel assembled by ptxas 13.0.88 (``tests/ori/capability_probe.ptx``, disassembled at
sm_75, sm_80, sm_90 and sm_100; the mnemonics seen are recorded in the row).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "CAPABILITIES",
    "EVIDENCE",
    "Capability",
    "UR_BUDGET",
    "UP_BUDGET",
    "UR_SOURCE_CLASSES",
    "accepts_up_source",
    "accepts_ur_source",
    "family",
    "has_uniform_file",
    "uniform_form",
    "uniform_forms",
]

#: Usable uniform registers (UR0..UR62; UR63 is URZ) and predicates (UP0..UP6; UP7 = UPT).
UR_BUDGET: Final = 63
UP_BUDGET: Final = 7

EVIDENCE = {
    "spec-isa": "spec 02, table of uniform SASS mnemonics (UIADD3, UIMAD, ULOP3, UISETP, "
    "USGXT, UPRMT, UPOPC, UBREV, UP2UR, UPLOP3, VOTEU)",
    "spec-sm": "spec 02, SM availability table: sm_75-89 integer uniform ALU, sm_90 full "
    "integer uniform ALU, sm_100+ adds UFADD/UFFMA/UFSEL/UFSETP",
    "probe": "probe kernel (tests/ori/capability_probe.ptx) through ptxas 13.0.88 at "
    "sm_75/80/90/100: the uniform mnemonic appears in the SASS",
    "probe-no": "probe kernel: ptxas 13.0.88 kept the class per-thread at every target "
    "even with all sources uniform (the source was read from UR instead)",
    "probe-src": "probe kernel: a per-thread instance reads a UR source "
    "(e.g. 'IMNMX.U32 R2, R0, UR5', 'I2F R0, UR5', 'LDS R13, [UR4]')",
    "probe-s2ur": "probe kernel: 'S2UR UR4, SR_CTAID.X' for %ctaid, 'S2R' for %tid",
    "syncs": "cutlass/hopper_fp8_gemm.sm90a.ptx line 3016 at sm_90: mbarrier.arrive on a "
    "uniform shared::cluster address is 'SYNCS.ARRIVE.TRANS64.RED.A1T0 RZ, [UR16], RZ'",
    "up-source": "the SASS of the whole corpus (sm_75, sm_80, sm_90, ptxas 13.0.88): the "
    "only per-thread instructions that name a UP are 'PLOP3.LUT P0, PT, PT, PT, UP0, "
    "0x80, 0x0' (313, the copy of a UP into P) and HGMMA's scale-d operand "
    "('HGMMA.64x128x16.F32.BF16 R88, gdesc[UR20], RZ, !UPT, gsb0'); a SEL reads P",
    "probe-ldc": "probe kernel: parameters and %ntid/%nctaid are constant-bank reads "
    "(ULDC into UR, or a c[0x0][...] operand of a per-thread instruction)",
}


@dataclass(frozen=True, slots=True)
class Capability:
    """One SASS class.  ``uniform``: SM family -> uniform mnemonic (absent: none);
    ``ur_source``: a per-thread instance may read one source from UR; ``evidence``:
    keys of :data:`EVIDENCE`."""

    cls: str
    uniform: dict[int, str]
    ur_source: bool
    evidence: tuple[str, ...]


def _all(m: str) -> dict[int, str]:
    return {75: m, 90: m, 100: m}


def _from100(m: str) -> dict[int, str]:
    return {100: m}


_ROWS = [
    Capability("IADD3", _all("UIADD3"), True, ("spec-isa", "probe")),
    Capability("IMAD", _all("UIMAD"), True, ("spec-isa", "probe")),
    Capability("LOP3", _all("ULOP3"), True, ("spec-isa", "probe")),
    Capability("PLOP3", _all("UPLOP3"), False, ("spec-isa",)),
    Capability("ISETP", _all("UISETP"), True, ("spec-isa", "probe")),
    Capability("SGXT", _all("USGXT"), True, ("spec-isa", "probe")),
    Capability("PRMT", _all("UPRMT"), True, ("spec-isa", "probe")),
    Capability("POPC", _all("UPOPC"), True, ("spec-isa", "probe")),
    Capability("BREV", _all("UBREV"), True, ("spec-isa", "probe")),
    Capability("SHF", _all("USHF"), True, ("probe",)),
    Capability("SEL", _all("USEL"), True, ("probe",)),
    Capability("FLO", _all("UFLO"), True, ("probe",)),
    Capability("MOV", _all("UMOV"), True, ("probe",)),
    Capability("S2R", _all("S2UR"), False, ("probe-s2ur",)),
    Capability("LDC", _all("ULDC"), True, ("probe-ldc",)),
    Capability("VOTE", _all("VOTEU"), False, ("spec-isa",)),
    Capability("IMNMX", _all("UISETP+USEL"), True, ("probe", "probe-src")),
    Capability("IABS", {}, True, ("probe-no",)),
    Capability("I2F", {}, True, ("probe-no", "probe-src")),
    Capability("F2I", {}, True, ("probe-no",)),
    Capability("F2F", {}, True, ("probe-no",)),
    Capability("FADD", _from100("UFADD"), True, ("spec-sm", "probe-src")),
    Capability("FMUL", _from100("UFMUL"), True, ("spec-sm",)),
    Capability("FFMA", _from100("UFFMA"), True, ("spec-sm",)),
    Capability("FSEL", _from100("UFSEL"), True, ("spec-sm",)),
    Capability("FSETP", _from100("UFSETP"), True, ("spec-sm",)),
    Capability("FMNMX", {}, True, ("probe-no",)),
    Capability("MUFU", {}, False, ("probe-no",)),
    Capability("DFMA", {}, False, ("spec-sm",)),
    # memory: the shared-window address takes a UR ('LDS R, [R+UR]'), a global or
    # generic one is a per-thread 64-bit register pair ('LDG R, desc[UR][R.64]')
    Capability("LDS", {}, True, ("probe-src",)),
    Capability("STS", {}, True, ("probe-src",)),
    Capability("ATOMS", {}, True, ("probe-src",)),
    Capability("SYNCS", {}, True, ("syncs",)),
    Capability("LDG", {}, False, ("probe",)),
    Capability("STG", {}, False, ("probe",)),
    Capability("ATOMG", {}, False, ("probe",)),
    Capability("LDL", {}, False, ("probe",)),
    Capability("STL", {}, False, ("probe",)),
    Capability("LD", {}, False, ("probe",)),
    Capability("ST", {}, False, ("probe",)),
    Capability("SHFL", {}, False, ("probe",)),
    Capability("MMA", {}, False, ("probe",)),
    Capability("BAR", {}, False, ("probe",)),
    Capability("BRA", {}, False, ("probe",)),
    Capability("CALL", {}, False, ("probe",)),
    Capability("OTHER", {}, False, ("probe",)),
]

#: Class name -> :class:`Capability`.
CAPABILITIES: dict[str, Capability] = {c.cls: c for c in _ROWS}

# family -> class -> uniform mnemonic: one lookup per question (the model asks it
# for every candidate web)
_FORMS: Final[dict[int, dict[str, str]]] = {
    fam: {c.cls: c.uniform[fam] for c in _ROWS if fam in c.uniform} for fam in (75, 90, 100)
}


def family(sm: int) -> int | None:
    """SM number -> capability family (75, 90, 100), ``None`` below sm_75."""
    if sm < 75:
        return None
    if sm < 90:
        return 75
    if sm < 100:
        return 90
    return 100


def has_uniform_file(sm: int) -> bool:
    return sm >= 75


def uniform_form(cls: str, sm: int) -> str | None:
    """The uniform mnemonic of ``cls`` on ``sm`` (``None``: no uniform form)."""
    return uniform_forms(sm).get(cls)


_NO_FORMS: Final[dict[str, str]] = {}


def uniform_forms(sm: int) -> dict[str, str]:
    """Class -> uniform mnemonic on ``sm`` (read-only; empty below sm_75): for a
    caller that asks :func:`uniform_form` of many classes at one target."""
    fam = family(sm)
    return _NO_FORMS if fam is None else _FORMS[fam]


def accepts_up_source(cls: str, opcode: str) -> bool:
    """A per-thread instruction of ``cls`` (PTX ``opcode``) may read a uniform predicate
    as a source operand (evidence ``up-source``): only a warpgroup MMA, whose scale-d
    predicate is a UP.  Every other per-thread reader needs the predicate copied to P
    (``PLOP3.LUT``)."""
    return cls == "MMA" and opcode.startswith("wgmma")


#: The classes whose per-thread instructions may read one source operand from UR.
UR_SOURCE_CLASSES: Final[frozenset[str]] = frozenset(c.cls for c in _ROWS if c.ur_source)


def accepts_ur_source(cls: str) -> bool:
    """A per-thread instruction of ``cls`` may read one source operand from UR."""
    return cls in UR_SOURCE_CLASSES
