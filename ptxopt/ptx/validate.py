"""Validation of a parsed module: reject what ptxas 13.0 rejects, accept what it accepts.

One walk over the module, after parsing, raising :class:`PtxError` at the first
problem (``file:line:col: error: ...``).  Checked, each with a test in
``tests/test_validate.py`` and its rule in ``docs/validation.md``:

* header: ``.version`` first and supported, ``.target`` next and known, the version
  new enough for the target (the table ``_TARGET_MIN_VERSION`` was read off ptxas),
  ``.address_size`` 32 or 64;
* declarations: duplicate functions, registers (ranges included, without expanding
  them), labels and parameters; symbols used but never declared;
* instructions: modifiers, types and operands against the forms of
  :mod:`ptxopt.ptx.forms` (modifiers as a set, types in order, as ptxas reads them);
  registers against their declared types with the ISA's size-matched compatibility
  rules, the relaxed rules of ``ld``/``st``/``cvt`` included; immediates against the
  instruction type (integer literals for integer and bit types, floating-point
  literals for floating-point types, ``0f``/``0d`` bit patterns for either);
  ``cvt``'s rounding rules; instructions newer than the target.

Matching a form is cached per spelling (``ld.global.v4.f32``), so the cost per
instruction is a dictionary probe plus one check per operand.
"""

from __future__ import annotations

import functools
import re

from ptxopt.ptx.ast import (
    Addr,
    BranchTargets,
    DebugLoc,
    Directive,
    Expr,
    Function,
    Imm,
    Instr,
    Label,
    Module,
    Not,
    Operand,
    Pair,
    Param,
    ParenList,
    PtxError,
    RawStmt,
    Reg,
    RegDecl,
    RegImm,
    Scope,
    Sink,
    Span,
    Stmt,
    Sym,
    VarDecl,
    Vec,
)
from ptxopt.ptx.forms import (
    EXTRA_MODIFIERS,
    FORMS,
    GROUPS,
    IGNORED_MODIFIERS,
    ISA_MODIFIERS,
)
from ptxopt.ptx.initializer import count_error, parse_init, plain_ints, shape_error
from ptxopt.ptx.opcodes import STATE_SPACES, is_special_register, lookup, supported_opcodes
from ptxopt.ptx.parser import deep_recursion, parse_number, range_lookup
from ptxopt.ptx.types import TYPE_MODIFIERS, bit_width, is_bits, is_int, is_type
from ptxopt.record import Record, set_field

__all__ = ["validate", "register_compatible"]

# Lowest .version each target needs (read off ptxas 13.0.88).
_TARGET_MIN_VERSION: dict[str, tuple[int, int]] = {
    "sm_10": (1, 0), "sm_11": (1, 0), "sm_12": (1, 2), "sm_13": (1, 2),
    "sm_20": (2, 0), "sm_21": (2, 0), "sm_30": (3, 0), "sm_32": (4, 0), "sm_35": (3, 1),
    "sm_37": (4, 1), "sm_50": (4, 0), "sm_52": (4, 1), "sm_53": (4, 2), "sm_60": (5, 0),
    "sm_61": (5, 0), "sm_62": (5, 0), "sm_70": (5, 1), "sm_72": (6, 1), "sm_75": (6, 3),
    "sm_80": (7, 0), "sm_86": (7, 1), "sm_87": (7, 4), "sm_88": (7, 3), "sm_89": (7, 8),
    "sm_90": (7, 8), "sm_90a": (8, 0), "sm_100": (8, 6), "sm_100a": (8, 6),
    "sm_100f": (8, 8), "sm_101": (8, 6), "sm_101a": (8, 6), "sm_103": (8, 8),
    "sm_103a": (8, 8), "sm_103f": (8, 8), "sm_110": (9, 0), "sm_110a": (9, 0),
    "sm_110f": (9, 0), "sm_120": (8, 7), "sm_120a": (8, 7), "sm_120f": (8, 8),
    "sm_121": (8, 8), "sm_121a": (8, 8), "sm_121f": (8, 8),
}  # fmt: skip
_TARGET_OPTIONS = frozenset({"texmode_unified", "texmode_independent", "debug", "map_f64_to_f32"})
_MAX_VERSION = (9, 0)
_SUPPORTED_VERSIONS = frozenset(
    {(1, k) for k in range(6)}
    | {(2, k) for k in range(4)}
    | {(3, k) for k in range(3)}
    | {(4, k) for k in range(4)}
    | {(5, k) for k in range(2)}
    | {(6, k) for k in range(6)}
    | {(7, k) for k in range(9)}
    | {(8, k) for k in range(9)}
    | {(9, 0)}
)

# Instructions (head or head.first-modifier) that need a newer target: (sm, name).
_MIN_SM: dict[str, int] = {
    "redux": 80,
    "cp.async": 80,
    "mbarrier": 80,
    "ldmatrix": 75,
    "stmatrix": 90,
    "elect": 90,
    "wgmma": 90,
    "setmaxnreg": 90,
    "griddepcontrol": 90,
    "mapa": 90,
    "getctarank": 90,
    "barrier.cluster": 90,
    "tcgen05": 100,
}
_SUFFIXED_ONLY = frozenset({"wgmma", "setmaxnreg"})  # need the "a" feature set


def _sm(arch: str) -> tuple[int, str]:
    m = re.fullmatch(r"sm_(\d+)([af]?)", arch)
    return (int(m.group(1)), m.group(2)) if m else (0, "")


# ---------------------------------------------------------------------------
# Type compatibility (PTX ISA "Operand Type Information"; checked against ptxas)

_KIND_OF: dict[str, str] = {}
for _t in TYPE_MODIFIERS:
    _KIND_OF[_t] = (
        "pred" if _t == ".pred" else "bits" if is_bits(_t) else "int" if is_int(_t) else "float"
    )
# A register declared .f16x2 behaves like a .b32 one in every check ptxas makes.
_REG_KIND = dict(_KIND_OF)
_REG_KIND[".f16x2"] = "bits"


_COMPATIBLE: dict[tuple[str, str, bool], bool] = {}


def _compatible(itype: str, rtype: str, relaxed: bool) -> bool:
    """:func:`register_compatible`, memoized (a few dozen type pairs occur)."""
    key = (itype, rtype, relaxed)
    hit = _COMPATIBLE.get(key)
    if hit is None:
        hit = _COMPATIBLE[key] = register_compatible(itype, rtype, relaxed)
    return hit


def register_compatible(itype: str, rtype: str, relaxed: bool) -> bool:
    """May a register declared ``rtype`` be an operand of an instruction of type
    ``itype``?  The standard rule wants equal sizes (and no ``.f`` register for an
    integer type, no ``.u``/``.s`` register for a float type); the relaxed rule of
    ``ld``, ``st`` and ``cvt`` lets a bit or integer register be wider, and any
    register for a ``.bN`` type."""
    if itype == ".pred" or rtype == ".pred":
        return itype == rtype
    ik = _KIND_OF.get(itype)
    rk = _REG_KIND.get(rtype)
    if ik is None or rk is None:
        return True
    iw, rw = bit_width(itype), bit_width(rtype)
    # measured: ld/st.b16 and .b8 with an .f32 or .f64 register, ld/st.b32 with an
    # .f64 one pass; .u16/.s16 with a float register do not
    if relaxed and (rk != "float" or ik == "bits"):
        size_ok = rw >= iw
    else:
        size_ok = rw == iw
    if not size_ok:
        return False
    if ik == "bits":
        return True
    if ik == "int":
        return rk in ("bits", "int")
    return rk in ("bits", "float")


def immediate_compatible(itype: str, imm: Imm) -> bool:
    """Integer literals go with integer, bit and predicate types; decimal
    floating-point literals with float types; ``0f``/``0d`` with float and bit types."""
    kind = _KIND_OF.get(itype)
    if kind is None:
        return True
    if imm.kind == "int":
        return kind != "float"
    prefix = imm.text.lstrip("-")[:2].lower()
    if prefix in ("0f", "0d"):
        # measured: f32/f64 take both spellings, .b32 only 0f, .b64 only 0d, and no
        # 16-bit type either (mov.b16 %rs1, 0f3f800000 is refused)
        w = bit_width(itype)
        if kind == "float":
            return w >= 32
        return kind == "bits" and w == (32 if prefix == "0f" else 64)
    return kind == "float" or itype == ".b64"  # a double literal fills .b64 (measured)


# ---------------------------------------------------------------------------
# Forms


class _Form(Record):
    __slots__ = ("slots", "types", "operands", "optional_from")
    slots: tuple[tuple[frozenset[str], bool], ...]  # (alternatives, required)
    types: tuple[frozenset[str], ...]
    operands: tuple[str, ...]
    optional_from: int  # operands from this index on are optional

    def __init__(
        self,
        slots: tuple[tuple[frozenset[str], bool], ...],
        types: tuple[frozenset[str], ...],
        operands: tuple[str, ...],
        optional_from: int,
    ) -> None:
        set_field(self, "slots", slots)
        set_field(self, "types", types)
        set_field(self, "operands", operands)
        set_field(self, "optional_from", optional_from)


def _alternatives(text: str) -> frozenset[str]:
    out: set[str] = set()
    for alt in text.split("|"):
        if alt.startswith("<") and alt.endswith(">"):
            out.update(GROUPS[alt[1:-1]].split())
        else:
            out.add(alt)
    return frozenset(out)


_SEPARATOR = re.compile(r"(?<=\s):(?=\s)")


def _compile(text: str) -> _Form:
    mods_s, types_s, ops_s = (p.strip() for p in _SEPARATOR.split(f" {text} ", 2))
    slots: list[tuple[frozenset[str], bool]] = []
    for slot in mods_s.split():
        if slot.startswith("["):
            slots.append((_alternatives(slot[1:-1]), False))
        else:
            slots.append((_alternatives(slot), True))
    types = tuple(
        frozenset(t if t.startswith(".") else "." + t for t in _alternatives(ts))
        for ts in types_s.split()
    )
    ops = ops_s.split()
    opt = next((k for k, o in enumerate(ops) if o.endswith("?")), len(ops))
    return _Form(tuple(slots), types, tuple(o.rstrip("?") for o in ops), opt)


_FORMS: dict[str, list[_Form]] = {}  # compiled on first use: most runs see few heads


def forms_of(head: str) -> list[_Form] | None:
    """The compiled forms of ``head`` (a key of ``FORMS``), ``None`` if it has none."""
    forms = _FORMS.get(head)
    if forms is None:
        texts = FORMS.get(head)
        if texts is None:
            return None
        forms = _FORMS[head] = [_compile(f) for f in texts]
    return forms


def _known_modifiers() -> frozenset[str]:
    known: set[str] = set(TYPE_MODIFIERS) | set(STATE_SPACES) | set(EXTRA_MODIFIERS.split())
    known.update(ISA_MODIFIERS.split())
    for g in GROUPS.values():
        known.update(g.split())
    for head in FORMS:
        for f in forms_of(head) or ():
            for alts, _req in f.slots:
                for a in alts:
                    known.update("." + p for p in a.split(".") if p)
    for key in supported_opcodes():
        known.update("." + p for p in key.split(".")[1:])
    return frozenset(known)


@functools.cache
def _near_modifiers(head: str) -> frozenset[str]:
    """A part of :func:`known_modifiers` enough for most instructions of ``head``:
    types, state spaces and the modifiers its own forms name (the whole vocabulary
    needs every form compiled, which a small kernel's run does not)."""
    near: set[str] = set(TYPE_MODIFIERS) | set(STATE_SPACES)
    for f in forms_of(head) or ():
        for alts, _req in f.slots:
            for a in alts:
                near.update("." + p for p in a.split(".") if p)
    return frozenset(near)


@functools.cache
def known_modifiers() -> frozenset[str]:
    """Every modifier ptxopt knows (of any instruction), built on first use."""
    return _known_modifiers()


def _split_compound(mods: tuple[str, ...], form: _Form) -> list[str]:
    """Modifiers of ``mods`` joined where a form slot names a compound (``.xorsign.abs``)."""
    out = list(mods)
    for alts, _req in form.slots:
        for a in alts:
            parts = ["." + p for p in a.split(".") if p]
            if len(parts) > 1 and all(p in out for p in parts):
                for p in parts:
                    out.remove(p)
                out.append(a)
    return out


_INT_MODES = frozenset({".lo", ".hi", ".wide"})


@functools.cache
def ignored_modifiers(opcode: str) -> frozenset[str]:
    """The :data:`IGNORED_MODIFIERS` that mean nothing on ``opcode`` (none of its
    forms names them).  An opcode without forms keeps them all."""
    named: set[str] = set()
    for head in FORMS:
        if head == opcode or head.startswith(opcode + "."):
            for f in forms_of(head) or ():
                named.update(*f.types, *(alts for alts, _ in f.slots))
    if not named:
        return frozenset()
    return IGNORED_MODIFIERS - named


def drop_ignored_modifiers(opcode: str, mods: tuple[str, ...]) -> tuple[str, ...] | str:
    """``mods`` without the modifiers ptxas ignores on ``opcode``, or why ptxas
    refuses them (between mul/mad and .lo/.hi/.wide)."""
    drop = ignored_modifiers(opcode)
    if not drop:
        return mods
    if (
        opcode in ("mul", "mad", "mul24", "mad24")
        and mods[0] in drop
        and any(m in _INT_MODES for m in mods[1:])
    ):
        return f"unexpected types for '{opcode}{''.join(mods)}'"
    return tuple(m for m in mods if m not in drop)


def _match(form: _Form, mods: tuple[str, ...]) -> str | None:
    """``None`` if the modifiers fit ``form``, else what is wrong."""
    types = [m for m in mods if is_type(m)]
    if ".pred" in types and len(types) > len(form.types):
        types.remove(".pred")  # ptxas ignores a .pred beside another type (add.pred.s64)
    others = _split_compound(tuple(m for m in mods if not is_type(m)), form)
    if len(types) != len(form.types):
        return "types"
    for t, allowed in zip(types, form.types, strict=True):
        if t not in allowed:
            return "types"
    used = [False] * len(form.slots)
    for m in dict.fromkeys(others):  # a repeated modifier counts once
        for k, (alts, _req) in enumerate(form.slots):
            if not used[k] and m in alts:
                used[k] = True
                break
        else:
            return f"modifier '{m}'"
    for k, (alts, req) in enumerate(form.slots):
        if req and not used[k]:
            return "missing " + "|".join(sorted(alts))
    return None


def _head_and_mods(ins: Instr) -> tuple[str, tuple[str, ...]]:
    """The key of ``FORMS`` for ``ins`` and the modifiers left after it."""
    if ins.opcode == "cvt" and ".pack" in ins.mods:
        return "cvt.pack", ins.mods
    if ins.mods:
        two = f"{ins.opcode}{ins.mods[0]}"
        if two in FORMS:
            rest = ins.mods[1:]
            while rest[:1] == ins.mods[:1]:  # bar.sync.sync (measured: accepted)
                rest = rest[1:]
            return two, rest
        if ins.opcode == "bar" and ins.mods[:2] == (".warp", ".sync"):
            return "bar.warp.sync", ins.mods[2:]
    return ins.opcode, ins.mods


# ---------------------------------------------------------------------------
# The walk


class _Scope:
    __slots__ = ("names", "ranges", "vars", "parent")

    def __init__(self, parent: _Scope | None) -> None:
        self.names: dict[str, str] = {}
        self.vars: set[str] = set()
        self.ranges: dict[str, tuple[int, str]] = {}
        self.parent = parent

    def lookup(self, name: str) -> str | None:
        s: _Scope | None = self
        while s is not None:
            t = s.names.get(name)
            if t is not None:
                return t
            if s.ranges:
                t = range_lookup(s.ranges, name)
                if t is not None:
                    s.names[name] = t
                    return t
            s = s.parent
        return None


_SPECIAL_64 = frozenset({"%clock64", "%globaltimer", "%gridid"})


def special_register_type(name: str) -> str:
    """The type a special register is read as (``%clock64``: .u64, most: .u32)."""
    base = name.split(".")[0]
    if base in _SPECIAL_64 or (base.startswith("%pm") and base.endswith("_64")):
        return ".u64"
    return ".u32"


_WORD = re.compile(r"[\w$]+")
# What the checks of one instruction found, kept for the whole process: a long-lived
# one (the Triton hook, the drop-in's server) validates many modules that share most
# shapes.  The modifier match depends on the opcode and modifiers alone; whether a
# shape (see Validator.shape) is valid, on the target and the address size besides.
_MATCH_CACHE: dict[tuple[str, tuple[str, ...]], _Form | str] = {}
_SHAPES: dict[tuple[tuple[int, str], int], set[tuple[object, ...]]] = {}
_CACHE_LIMIT = 200_000


def _valid_shapes(arch: tuple[int, str], address_size: int) -> set[tuple[object, ...]]:
    """The process-wide set of shapes found valid under ``arch`` and ``address_size``
    (emptied, with the modifier matches, when the caches grow past a bound)."""
    if len(_MATCH_CACHE) > _CACHE_LIMIT:
        _MATCH_CACHE.clear()
    shapes = _SHAPES.get((arch, address_size))
    if shapes is None or len(shapes) > _CACHE_LIMIT:
        shapes = _SHAPES[(arch, address_size)] = set()
    return shapes


class Validator:
    def __init__(self, mod: Module) -> None:
        self.mod = mod
        self.arch: tuple[int, str] = (0, "")
        self.symbols: dict[str, str] = {}  # module symbol -> state space or "function"
        self.locals: dict[str, str] = {}
        self.address_size = 64
        self.seen_locs: set[tuple[int, int, int]] = set()
        self.functions: dict[str, Function] = {}
        self.match_cache = _MATCH_CACHE
        # shapes of instructions found valid (see :meth:`shape`), set by :meth:`header`
        self.valid_shapes: set[tuple[object, ...]] = set()
        self.checked: list[str] = []  # the opcodes checked in full, in order

    def error(self, span: Span | None, message: str) -> PtxError:
        return PtxError(span, message)

    # -- module ------------------------------------------------------------------

    def run(self) -> None:
        mod = self.mod
        self.header()
        defined: set[str] = set()
        for it in mod.items:
            if isinstance(it, VarDecl):
                if it.name in self.symbols:
                    raise self.error(it.span, f"duplicate definition of '{it.name}'")
                if it.space in _PARAM or it.space == ".local":
                    # measured: "Parameter variables may not be declared at module
                    # scope"; .local there is refused under the ABI (ptxas's default)
                    raise self.error(it.span, f"a {it.space} variable at module scope")
                self.variable(it)
                self.symbols[it.name] = it.space
            elif isinstance(it, Function):
                if it.body is not None:
                    if it.name in defined:
                        raise self.error(it.span, f"duplicate definition of function '{it.name}'")
                    defined.add(it.name)
                self.symbols[it.name] = "function"
                self.functions.setdefault(it.name, it)
                for p in it.params + it.rets:
                    self.parameter(p)
            elif isinstance(it, Directive) and it.name == ".section" and ":" in it.text:
                # (no colon, no label: a debug section is tens of kilobytes of data)
                for label in _SECTION_LABEL.findall(_SECTION_COMMENT.sub(" ", it.text)):
                    if label in self.symbols:
                        raise self.error(it.span, f"duplicate definition of label '{label}'")
                    self.symbols[label] = "label"
        for it in mod.items:
            if isinstance(it, VarDecl) and it.init is not None and not plain_ints(it.init):
                for name in _INIT_SYMBOL.findall(it.init):
                    if name not in ("generic", "WARP_SZ") and name not in self.symbols:
                        # measured: "Invalid initial value symbol 'WRP_SZ'"
                        raise self.error(it.span, f"unknown symbol '{name}' in an initializer")
        for it in mod.items:
            if isinstance(it, Function) and it.body is not None:
                self.function(it)

    def header(self) -> None:
        items = self.mod.items
        first_span = items[0].span if items else Span(self.mod.filename, 1, 1)
        heads = [it for it in items if isinstance(it, Directive) and it.name != ".file"]
        if not heads or heads[0].name != ".version" or items[0] is not heads[0]:
            raise self.error(first_span, "missing .version directive at the start of the file")
        ver = heads[0]
        major, minor = (int(x) for x in ver.text.split()[1].split("."))
        if (major, minor) not in _SUPPORTED_VERSIONS:
            raise self.error(ver.span, f"unsupported .version {major}.{minor} (at most 9.0)")
        if (
            len(heads) < 2
            or heads[1].name != ".target"
            or len(items) < 2
            or items[1] is not heads[1]
        ):
            # measured: not even a .file may come between them
            raise self.error(ver.span, "missing .target directive after .version")
        # .target lines in a row add up; the last architecture named is the one
        # (measured: ".target sm_90, sm_80" and two lines sm_90 / sm_80 are sm_80)
        n_targets = 1
        while n_targets + 1 < len(items):
            nxt = items[n_targets + 1]
            if not isinstance(nxt, Directive) or nxt.name != ".target":
                break
            n_targets += 1
        arch = ""
        for tgt in items[1 : n_targets + 1]:
            assert isinstance(tgt, Directive)
            names = [t.strip() for t in tgt.text.split(None, 1)[1].split(",")]
            for k, name in enumerate(names):
                lead = re.match(r"sm_\d+", name)
                if name not in _TARGET_MIN_VERSION and lead and lead.group() in _TARGET_MIN_VERSION:
                    name = lead.group()  # ptxas reads sm_75foo as sm_75 (measured)
                if name in _TARGET_MIN_VERSION:
                    arch = name
                    if (major, minor) < _TARGET_MIN_VERSION[arch]:
                        raise self.error(
                            tgt.span, f"PTX .version {major}.{minor} does not support {arch}"
                        )
                elif k == 0 and not arch or name not in _TARGET_OPTIONS:
                    what = "" if k == 0 and not arch else "option "
                    raise self.error(tgt.span, f"unsupported .target {what}'{name}'")
        self.arch = _sm(arch)
        for k, it in enumerate(items):
            if isinstance(it, Directive) and it.name == ".address_size":
                if k != n_targets + 1:
                    raise self.error(it.span, ".address_size must follow .target")
                if it.text.split()[1] not in ("32", "64"):
                    raise self.error(it.span, "address size must be 32 or 64")
                self.address_size = int(it.text.split()[1])
                if self.address_size == 32:
                    raise self.error(it.span, "32-bit addressing is not supported by ptxas 13")
            if isinstance(it, Directive) and it.name == ".version" and it is not ver:
                raise self.error(it.span, "duplicate .version directive")
            if isinstance(it, Directive) and it.name == ".target" and k > n_targets:
                raise self.error(it.span, ".target after the module header")
        self.valid_shapes = _valid_shapes(self.arch, self.address_size)

    def variable(self, v: VarDecl) -> None:
        if v.type not in _STORAGE_TYPES or v.type == ".pred" and v.space != ".reg":
            raise self.error(v.span, f"variable '{v.name}' needs a type")
        if "." in v.name:
            raise self.error(v.span, f"'{v.name}' is not a variable name")
        if v.align is not None and (v.align <= 0 or v.align & (v.align - 1)):
            raise self.error(v.span, f"alignment {v.align} is not a power of two")
        if v.vector and bit_width(v.type) * int(v.vector[2:]) > 128:
            raise self.error(v.span, "a vector of more than 128 bits")
        if ".extern" not in v.linkage and v.init is None and (0 in v.dims or None in v.dims):
            # measured: "Non-external variable 'x' has incomplete type" (x[], x[0]);
            # with an initializer x[0] passes (a size of 2^64 wraps to it)
            raise self.error(v.span, f"'{v.name}' has an incomplete type")
        self.initializer(v)

    def initializer(self, v: VarDecl) -> None:
        """Literals of an initializer: in range, and no floating-point literal for an
        integer variable."""
        if v.init is None:
            return
        if v.space not in (".global", ".const"):
            # measured for .param, .local, .shared and .reg: "No initial value is
            # allowed for 'y' in this state space"
            raise self.error(v.span, f"no initial value is allowed for '{v.name}' in {v.space}")
        why = self.initializer_shape(v)
        if why is not None:
            raise self.error(v.span, f"initializer of '{v.name}' does not fit it: {why}")
        if _KIND_OF.get(v.type) != "float" and plain_ints(v.init):
            return  # decimal integers, each in range (the parser checked): no symbols
        for lit in _LITERAL.findall(v.init):
            try:
                imm = parse_number(lit)
            except ValueError as e:
                raise self.error(v.span, f"{e} in the initializer of '{v.name}'") from None
            if imm.kind != "int" and _KIND_OF.get(v.type) == "int":
                raise self.error(v.span, f"'{lit}' does not fit the type {v.type} of '{v.name}'")
            if imm.kind == "int" and _KIND_OF.get(v.type) == "float":
                # measured: .f32 c = 0 and {1.0, 2} are refused ("type mismatch")
                raise self.error(v.span, f"integer '{lit}' in the initializer of '{v.name}'")
        if v.type != ".pred" and bit_width(v.type) < 32:
            # measured: an address in a .b8 array is refused, in a .u32 one it passes
            for name in _INIT_SYMBOL.findall(v.init):
                if name not in ("generic", "WARP_SZ"):
                    raise self.error(
                        v.span, f"the address of '{name}' does not fit {v.type} ('{v.name}')"
                    )

    @staticmethod
    def initializer_shape(v: VarDecl) -> str | None:
        """The nesting of ``v``'s initializer against its dimensions and vector
        (see :mod:`ptxopt.ptx.initializer`); a flat table of integers for a 1-D array
        is counted, not split."""
        assert v.init is not None
        vector = int(v.vector[2:]) if v.vector else 0
        if len(v.dims) == 1 and not vector and plain_ints(v.init):
            n = v.init.count(",") + 1 if v.init != "{}" else 0
            return count_error(n, v.dims[0], True)
        return shape_error(parse_init(v.init), v.dims, vector)

    def parameter(self, p: Param) -> None:
        if p.type not in _STORAGE_TYPES or p.type == ".pred" and p.space != ".reg":
            raise self.error(p.span, f"parameter '{p.name}' needs a type")
        if "." in p.name:
            raise self.error(p.span, f"'{p.name}' is not a parameter name")
        if p.align is not None and (p.align <= 0 or p.align & (p.align - 1)):
            raise self.error(p.span, f"alignment {p.align} is not a power of two")
        for a in p.attrs:  # .ptr .global .align N: the pointee's alignment
            if a.startswith(".align"):
                n = int(a.split()[1], 0)
                if n <= 0 or n & (n - 1):
                    raise self.error(p.span, f"alignment {n} is not a power of two")

    # -- functions ---------------------------------------------------------------

    def function(self, fn: Function) -> None:
        assert fn.body is not None
        top = _Scope(None)
        self.locals = {}
        for p in fn.params + fn.rets:
            if p.name in top.names or p.name in self.locals:
                raise self.error(p.span, f"duplicate definition of parameter '{p.name}'")
            if p.space == ".reg":
                top.names[p.name] = p.type
            else:
                self.locals[p.name] = ".param::entry" if fn.is_entry else ".param::func"
        labels: dict[str, Span | None] = {}
        self.collect_labels(fn.body, labels)
        self.labels = labels
        self.body(fn.body, top)

    def collect_labels(self, body: list[Stmt], labels: dict[str, Span | None]) -> None:
        """Every label of the function (a label is scoped to its block: the same name
        in sibling blocks is two labels, in one block an error)."""
        here: set[str] = set()
        for st in body:
            t = type(st)
            if t is Label or t is BranchTargets:
                name = st.name  # type: ignore[union-attr]
                if name in here:
                    raise self.error(st.span, f"duplicate definition of label '{name}'")
                here.add(name)
                labels.setdefault(name, st.span)
            elif t is RawStmt:
                m = re.match(r"([\w$]+)\s*:", st.text)  # type: ignore[union-attr]
                if m:
                    labels[m.group(1)] = st.span
            elif t is Scope:
                self.collect_labels(st.body, labels)  # type: ignore[union-attr]

    def declare(self, scope: _Scope, name: str, rtype: str, span: Span | None) -> None:
        if name in scope.names or (scope.ranges and range_lookup(scope.ranges, name)):
            raise self.error(span, f"duplicate definition of register '{name}'")
        if name in self.labels:
            raise self.error(self.labels[name], f"duplicate definition of label '{name}'")

    def body(self, body: list[Stmt], scope: _Scope) -> None:
        for st in body:
            t = type(st)
            if t is Instr:
                self.instr(st, scope)  # type: ignore[arg-type]
            elif t is RegDecl:
                d: RegDecl = st  # type: ignore[assignment]
                for name, count in d.names:
                    if count is None:
                        self.declare(scope, name, d.type, d.span)
                        scope.names[name] = d.type
                    else:
                        if name in scope.ranges:
                            raise self.error(d.span, f"duplicate definition of '{name}<{count}>'")
                        for n in scope.names:
                            if range_lookup({name: (count, "")}, n):
                                raise self.error(d.span, f"duplicate definition of register '{n}'")
                        scope.ranges[name] = (count, d.type)
                if d.type not in _STORAGE_TYPES:
                    raise self.error(d.span, f"'{d.type}' is not a register type")
            elif t is VarDecl:
                v: VarDecl = st  # type: ignore[assignment]
                self.variable(v)
                if v.name in scope.names or v.name in scope.vars:
                    raise self.error(v.span, f"duplicate definition of '{v.name}'")
                scope.vars.add(v.name)
                self.locals[v.name] = v.space
            elif t is Scope:
                self.body(st.body, _Scope(scope))  # type: ignore[union-attr]
            elif t is DebugLoc:
                self.loc(st)  # type: ignore[arg-type]

    def loc(self, loc: DebugLoc) -> None:
        """An ``inlined_at`` must name a location of an earlier ``.loc``."""
        m = _INLINED_AT.search(loc.extra)
        if m is not None:
            where = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            if where not in self.seen_locs:
                raise self.error(
                    loc.span,
                    f"source location {where[0]} {where[1]} {where[2]} of inlined_at "
                    "is not used by a preceding .loc",
                )
        f = _FUNCTION_NAME.search(loc.extra)
        if f is not None and self.symbols.get(f.group(1)) != "label":
            # measured: "Unresolved label used in function_name attribute"
            raise self.error(loc.span, f"function_name '{f.group(1)}' is no label of a section")
        self.seen_locs.add((loc.file, loc.line, loc.col))

    # -- instructions --------------------------------------------------------------

    def form_of(self, ins: Instr) -> _Form | str | None:
        head, mods = _head_and_mods(ins)
        key = (head, mods)
        hit = self.match_cache.get(key)
        if hit is not None:
            return hit
        forms = forms_of(head)
        near = _near_modifiers(head)
        seen: set[str] = set()
        for m in mods:
            if m not in near and m not in known_modifiers():
                res: _Form | str = f"unknown modifier '{m}' in '{ins.name}'"
                self.match_cache[key] = res
                return res
            if m in seen and m not in _TWICE_OK and not is_type(m):
                res = f"modifier '{m}' given twice in '{ins.name}'"
                self.match_cache[key] = res
                return res
            seen.add(m)
        if forms is None:
            return None
        if (
            ".pred" in mods
            and sum(1 for m in mods if is_type(m)) > 1
            and (
                ins.opcode in _PRED_TYPE_REFUSED
                or ins.opcode == "mul"
                and not _INT_MODES.isdisjoint(mods)
            )
        ):
            res = f"unexpected types for '{ins.name}'"
            self.match_cache[key] = res
            return res
        problems = []
        for f in forms:
            why = _match(f, mods)
            if why is None:
                self.match_cache[key] = f
                return f
            problems.append(why)
        if all(p == "types" for p in problems):
            res = f"unexpected types for '{ins.name}'"
        else:
            res = f"illegal modifiers for '{ins.name}'"
        self.match_cache[key] = res
        return res

    def shape(self, ins: Instr, scope: _Scope) -> tuple[object, ...] | None:
        """What the checks of :meth:`instr` depend on: opcode, modifiers, and for each
        operand what the checks read of it -- a register's declared type (a special
        register's name), an immediate as written, a symbol's state space in the
        function and in the module and whether it is a label, and the same for the
        base of an address without extra terms and the elements of a vector.  ``None``
        where an operand is something else (a call's lists, an expression...).  An
        instruction of a shape already found valid under the same target and address
        size is valid: nothing else enters the checks."""
        sig: list[object] = [ins.opcode, ins.mods, None]
        append = sig.append
        names = scope.names  # the innermost scope first: most names are found there
        for op in ins.operands:
            t = type(op)
            if t is Reg:
                name = op.name  # type: ignore[union-attr]
                rt = names.get(name) or scope.lookup(name)
                append(rt if rt is not None else name)
            elif t is Imm:
                append(op.text)  # type: ignore[union-attr]  # its spelling gives its value
            else:
                key = self.operand_key(op, scope)
                if key is None:
                    return None
                append(key)
        if ins.pred is not None:
            pname = ins.pred.name
            sig[2] = names.get(pname) or scope.lookup(pname) or pname
        return tuple(sig)

    def operand_key(self, op: Operand, scope: _Scope) -> tuple[object, ...] | None:
        """The part of :meth:`shape` for an operand other than a register or an
        immediate (a tuple, so never equal to theirs), or ``None``."""
        t = type(op)
        if t is Sym:
            name: str = op.name  # type: ignore[union-attr]
            if _WORD.fullmatch(name) is None:
                return None  # the checks read a part of the name
            return ("sym", self.locals.get(name), self.symbols.get(name), name in self.labels)
        if t is Addr:
            a: Addr = op  # type: ignore[assignment]
            if a.extra:
                return None
            base = a.base
            if base is None:
                return ("[",)
            inner = (
                (scope.lookup(base.name) or base.name,)
                if type(base) is Reg
                else self.operand_key(base, scope)
            )
            return None if inner is None else ("[", *inner)
        if t is Vec:
            elems: list[object] = ["{"]
            for e in op.elems:  # type: ignore[union-attr]
                te = type(e)
                if te is Reg:
                    elems.append(scope.lookup(e.name) or e.name)  # type: ignore[union-attr]
                elif te is Imm:
                    elems.append(e.text)  # type: ignore[union-attr]
                elif te is Sink:
                    elems.append(("_",))
                else:
                    return None
            return tuple(elems)
        if t is Sink:
            return ("_",)
        if t is Not and type(op.operand) is Reg:  # type: ignore[union-attr]
            name = op.operand.name  # type: ignore[union-attr]
            return ("!", scope.lookup(name) or name)
        return None

    def instr(self, ins: Instr, scope: _Scope) -> None:
        shape = self.shape(ins, scope)
        if shape is not None:
            if shape in self.valid_shapes:
                return
            self.checked.append(ins.opcode)
            self.checked_instr(ins, scope)
            self.valid_shapes.add(shape)
            return
        self.checked.append(ins.opcode)
        self.checked_instr(ins, scope)

    def checked_instr(self, ins: Instr, scope: _Scope) -> None:
        if ins.pred is not None:
            self.pred_reg(ins.pred, scope, ins.span)
        lookup(ins)  # an unknown instruction or a wrong operand count, as the IR sees it
        form = self.form_of(ins)
        if isinstance(form, str):
            raise self.error(ins.span, form)
        self.target_check(ins)
        if ins.opcode in ("bar", "barrier") and ".warp" not in ins.mods:
            self.barrier_number(ins)
        elif ins.opcode == "cvta" and ".u32" in ins.mods and self.address_size == 64:
            # measured: "Program uses 32-bit address ... conflicting with .address_size
            # 64", then "32-Bit compilation is no longer supported"
            raise self.error(ins.span, f"32-bit '{ins.name}' under .address_size 64")
        elif ins.opcode == "ld" and ".nc" in ins.mods and ".global" not in ins.mods:
            raise self.error(ins.span, f"'.nc' needs the .global state space: '{ins.name}'")
        elif ins.opcode == "wgmma" and ins.mods[:2] == (".mma_async", ".sync"):
            self.wgmma_immediates(ins)
        elif ins.opcode in ("ldmatrix", "stmatrix"):
            self.matrix_load(ins)
        elif ins.opcode == "cp" and ins.mods[:1] == (".async",) and len(ins.operands) >= 3:
            self.cp_async_size(ins)
        if ins.opcode in _PLAIN_ADDRESS_OPS:
            for op in ins.operands:
                if type(op) is Addr and op.extra:
                    raise self.error(ins.span, f"'{ins.name}' takes a single address")
        for op in ins.operands:
            if type(op) is Vec:
                self.vector_elements(ins, op, scope)
        if ins.opcode == "cvt":
            self.cvt(ins)
        elif ins.opcode == "call":
            self.call(ins, scope)
        if form is None:
            self.formless_operands(ins, scope)
            return
        self.operands(ins, form, scope)

    def formless_operands(self, ins: Instr, scope: _Scope) -> None:
        """The operands of an instruction without forms: declared registers, and the
        address rules that instructions with forms check slot by slot (measured on
        cp.async, stmatrix, prefetch, tex and isspacep): no absolute address outside
        .local ("Immediate addresses allowed only for .local state space"), no
        function or label as an address, nor as a value of the instructions that
        refuse it (dp4a and fns take it)."""
        values_too = ins.opcode in _FUNCTION_VALUE_REFUSED
        for op in ins.operands:
            if type(op) is Addr:
                if op.base is None and ".local" not in ins.mods:
                    raise self.error(ins.span, f"an absolute address needs .local: '{ins.name}'")
                base = op.base
            else:
                base = op if values_too else None
            if type(base) is Sym and self.symbols.get(base.name) in ("function", "label"):
                raise self.error(ins.span, f"'{base.name}' is not a variable")
            self.registers_declared(op, scope, ins)

    def slot_value(
        self, ins: Instr, op: Operand, ty: str, scope: _Scope, c: str, relaxed: bool
    ) -> None:
        """The operand of a slot typed by the instruction's own type: ``d``/``D`` a
        destination, ``s``/``S`` a source (``r`` neither: a read-write operand)."""
        source = c in "sS"
        self.value(
            ins,
            op,
            ty,
            scope,
            relaxed=relaxed,
            imm_ok=source,
            dest=c in "dD",
            func_ok=source,
        )

    def function_value_ok(self, ins: Instr) -> bool:
        """Whether ptxas takes a function's name in the slots of ``ins`` typed by its
        own type (see :data:`_FUNCTION_VALUE_REFUSED`)."""
        if ins.opcode in _FUNCTION_VALUE_REFUSED:
            return False
        # below sm_90 shfl and match are library calls, whose arguments refuse it
        return ins.opcode not in ("shfl", "match") or self.arch[0] >= 90

    def vector_elements(self, ins: Instr, vec: Vec, scope: _Scope) -> None:
        """The registers of a vector operand share one width (a .pred one aside) and
        no element names a variable (measured: ``{%r1, %rd2}``, ``{%r1, %h1}`` and
        ``{%r1, param}`` are refused, ``{%r1, %f1}`` and ``{%r1, %p1}`` pass)."""
        width = 0
        for e in vec.elems:
            t = type(e)
            if t is Sym or t is Expr:
                raise self.error(ins.span, f"'{e}' cannot be a vector element in '{ins.name}'")
            if t is not Reg:
                continue
            rt = scope.lookup(e.name)  # type: ignore[union-attr]
            if rt is None:
                if not is_special_register(e.name):  # type: ignore[union-attr]
                    continue  # reported as undeclared with the operand
                rt = special_register_type(e.name)  # type: ignore[union-attr]
            if rt == ".pred":
                continue
            w = bit_width(rt)
            if width and w != width:
                raise self.error(ins.span, f"vector elements of different widths in '{ins.name}'")
            width = w

    def matrix_load(self, ins: Instr) -> None:
        """ldmatrix/stmatrix: .sync, .aligned, a count and bit types only (measured)."""
        for need in (".sync", ".aligned"):
            if need not in ins.mods:
                raise self.error(ins.span, f"'{ins.name}' needs {need}")
        if not _MATRIX_NUM.intersection(ins.mods):
            raise self.error(ins.span, f"'{ins.name}' needs .x1, .x2 or .x4")
        for m in ins.mods:
            if is_type(m) and not m.startswith(".b"):
                raise self.error(ins.span, f"unexpected types for '{ins.name}'")

    def cp_async_size(self, ins: Instr) -> None:
        """cp.async copies 16 bytes with .cg, 4, 8 or 16 with .ca (a literal size)."""
        op = ins.operands[2]
        if type(op) is not Imm or op.kind != "int":
            return
        sizes = (16,) if ".cg" in ins.mods else (4, 8, 16) if ".ca" in ins.mods else ()
        n = int(op.value)
        if sizes and n not in sizes:
            want = " or ".join(str(x) for x in sizes)
            raise self.error(ins.span, f"'{ins.name}' copies {want} bytes, not {n}")

    def wgmma_immediates(self, ins: Instr) -> None:
        """wgmma.mma_async's literal scale-d and transposes are 0 or 1, its input
        scales 1 or -1 (measured on every position of the f16 form)."""
        for k, op in enumerate(ins.operands[3:8], start=3):
            if type(op) is not Imm or op.kind != "int":  # type: ignore[union-attr]
                continue
            v = int(op.value) & 0xFFFFFFFFFFFFFFFF  # type: ignore[union-attr]
            v = v - (1 << 64) if v >> 63 else v
            allowed = (1, -1) if k in (4, 5) else (0, 1)
            if v not in allowed:
                want = " or ".join(str(a) for a in allowed)
                raise self.error(ins.span, f"operand {k} of '{ins.name}' is {v}, not {want}")

    def barrier_number(self, ins: Instr) -> None:
        """A literal barrier number is 0..15 (bar.red: the second operand), judged on
        its low 32 bits (measured: 2^40 and 2^63 pass, -1 does not)."""
        k = 1 if ".red" in ins.mods else 0
        op = ins.operands[k] if k < len(ins.operands) else None
        if type(op) is Imm and op.kind == "int":  # type: ignore[union-attr]
            n = int(op.value) & 0xFFFFFFFF  # type: ignore[union-attr]
            if n > 15:
                raise self.error(ins.span, f"barrier number {n} out of range [0..15]")

    def target_check(self, ins: Instr) -> None:
        sm, suffix = self.arch
        if not sm:
            return
        for key in (ins.opcode, f"{ins.opcode}{ins.mods[0]}" if ins.mods else ""):
            need = _MIN_SM.get(key)
            if need is not None and sm < need:
                raise self.error(ins.span, f"'{ins.name}' requires sm_{need} or higher")
            if key in _SUFFIXED_ONLY and suffix != "a":
                raise self.error(ins.span, f"'{ins.name}' requires an sm_90a-class target")

    def call(self, ins: Instr, scope: _Scope) -> None:
        """A direct call passes as many arguments and takes as many results as the
        callee declares."""
        if any(is_type(m) for m in ins.mods):
            raise self.error(ins.span, f"'{ins.name}' takes no type")
        if any(m != ".uni" and m not in IGNORED_MODIFIERS for m in ins.mods):
            raise self.error(ins.span, f"'{ins.name}': call takes only .uni")
        ops = ins.operands
        rets = ops[0] if ops and type(ops[0]) is ParenList else None
        rest = ops[1:] if rets is not None else ops
        if not rest or type(rest[0]) is not Sym:
            return
        callee = self.functions.get(rest[0].name)
        if callee is None:
            if rest[0].name not in self.symbols and rest[0].name not in self.locals:
                raise self.error(ins.span, f"call to unknown function '{rest[0].name}'")
            return
        args = rest[1] if len(rest) > 1 and type(rest[1]) is ParenList else None
        nargs = len(args.items) if args is not None else 0
        nrets = len(rets.items) if rets is not None else 0
        if nargs != len(callee.params) or nrets != len(callee.rets):
            raise self.error(
                ins.span, f"call of '{callee.name}' with the wrong number of arguments"
            )
        # a register passed to a .reg parameter has the parameter's type (measured:
        # %f4 for a .u32, %rd6 for a .u32 and %p3 for a .u32 are refused)
        pairs = list(zip(rets.items if rets else (), callee.rets, strict=False))
        pairs += zip(args.items if args else (), callee.params, strict=False)
        for op, prm in pairs:
            if type(op) is Sym and self.symbols.get(op.name) == "function":
                # measured: ptxas refuses a function as an argument ("illegal state space")
                raise self.error(ins.span, f"function '{op.name}' passed as an argument")
            if type(op) is Reg and prm.space == ".reg" and prm.type:
                rt = scope.lookup(op.name)
                if rt is not None and not _compatible(prm.type, rt, False):
                    raise self.error(
                        ins.span,
                        f"'{op.name}' ({rt}) passed for parameter '{prm.name}' ({prm.type})",
                    )

    def cvt(self, ins: Instr) -> None:
        types = [m for m in ins.mods if is_type(m)]
        if len(types) != 2 or ins.mods.count(".pack"):
            return
        d, a = types
        if d not in _CVT_SCALAR or a not in _CVT_SCALAR:
            return  # packed and narrow formats: their forms say which rounding they take
        rnd = {m for m in ins.mods if m in _FRND or m in _IRND}
        dk, ak = _KIND_OF.get(d), _KIND_OF.get(a)
        if dk == "pred" or ak == "pred":
            raise self.error(ins.span, f"unexpected types for '{ins.name}'")
        if dk != "float" and ak != "float":
            if rnd:
                raise self.error(ins.span, f"illegal rounding modifier for '{ins.name}'")
            return
        if dk == "float" and ak == "float":
            dw, aw = bit_width(d), bit_width(a)
            if d == a or dw > aw:
                if rnd & _FRND:
                    raise self.error(ins.span, f"illegal rounding modifier for '{ins.name}'")
            elif not rnd & _FRND and d in (".f32", ".f64", ".f16", ".bf16"):
                raise self.error(ins.span, f"rounding modifier required for '{ins.name}'")
            return
        if dk == "float":  # integer to float
            if rnd & _IRND:
                raise self.error(ins.span, f"illegal rounding modifier for '{ins.name}'")
            if not rnd & _FRND:
                raise self.error(ins.span, f"rounding modifier required for '{ins.name}'")
            return
        if rnd & _FRND:  # float to integer
            raise self.error(ins.span, f"illegal rounding modifier for '{ins.name}'")
        if not rnd & _IRND:
            raise self.error(ins.span, f"rounding modifier required for '{ins.name}'")

    def operands(self, ins: Instr, form: _Form, scope: _Scope) -> None:
        ops = ins.operands
        n, need, opt = len(ops), len(form.operands), form.optional_from
        if not opt <= n <= need:
            count = f"{need}" if opt == need else f"{opt} to {need}"
            raise self.error(ins.span, f"'{ins.name}' expects {count} operands, got {n}")
        types = [m for m in ins.mods if is_type(m)]
        if ".pred" in types and len(types) > len(form.types):
            types.remove(".pred")
        vec = next((int(m[2:]) for m in ins.mods if m in (".v2", ".v4", ".v8")), 0)
        for k, op in enumerate(ops):
            self.operand(ins, form.operands[k], op, types, vec, scope)

    def operand(
        self, ins: Instr, code: str, op: Operand, types: list[str], vec: int, scope: _Scope
    ) -> None:
        c = code[0]
        if code == "*":
            if ins.opcode == "cvta" and type(op) in (Sym, Expr):
                self.cvta_symbol(ins, op)
                return
            self.registers_declared(op, scope, ins)
            return
        if code.startswith(":") or code.startswith("R:"):
            ty = "." + code.split(":", 1)[1]
            dest = code.startswith("R:")
            if type(op) is Imm:
                # integer literals only; shfl's lane and clamp also take an 0f bit
                # pattern (measured: 0f3f800000 passes there, and nowhere else of
                # bfe/bfi/shl/shr/shf/lop3/vote/redux/match/bar.warp.sync)
                if op.kind != "int" and not (ins.opcode == "shfl" and op.kind == "f32"):  # type: ignore[union-attr]
                    raise self.error(ins.span, f"immediate '{op}' does not fit the type {ty}")
                return
            self.value(ins, op, ty, scope, relaxed=False, imm_ok=not dest, dest=dest)
            return
        if code == "dq":
            if type(op) is Pair:
                self.value(ins, op.first, types[0], scope, relaxed=False, imm_ok=False, dest=True)
                self.pred_operand(ins, op.second, scope, dest=True)
            else:
                self.value(ins, op, types[0], scope, relaxed=False, imm_ok=False, dest=True)
            return
        if c in "dsr":
            slot = int(code[1:]) if len(code) > 1 else 0
            ty = types[slot] if slot < len(types) else ""
            self.slot_value(ins, op, ty, scope, c, relaxed=False)
            return
        if c in "DS":
            slot = int(code[1:]) if len(code) > 1 else 0
            ty = types[slot] if slot < len(types) else ""
            if vec:
                if type(op) is not Vec or len(op.elems) != vec:
                    raise self.error(ins.span, f"'{ins.name}' needs a {vec}-element vector")
                for e in op.elems:
                    if type(e) is Sink and c == "D":
                        continue
                    # ptxas checks no element type of a vector operand (a .pred one passes)
                    # and allows special registers there
                    self.registers_declared(e, scope, ins)
                return
            self.slot_value(ins, op, ty, scope, c, relaxed=True)
            return
        if code == "pp":
            if type(op) is Pair:
                self.pred_operand(ins, op.first, scope, dest=True)
                self.pred_operand(ins, op.second, scope, dest=True)
            else:
                self.pred_operand(ins, op, scope, dest=True)
            return
        if c in "pP":
            if type(op) is Not and c == "P":
                self.pred_reg(op.operand, scope, ins.span)
                return
            if types and types[0] != ".pred" and ins.opcode in ("and", "or", "xor", "not"):
                self.value(
                    ins, op, types[0], scope, relaxed=False, imm_ok=True, dest=False, func_ok=True
                )
                return
            if (
                c == "P"
                and type(op) is Sym
                and ins.opcode in ("and", "or", "xor", "not")
                and self.symbols.get(op.name) == "function"
            ):
                return  # measured: not.pred %p1, f and and.pred are accepted
            self.pred_operand(ins, op, scope, dest=c == "p")
            return
        if c == "a":
            if type(op) is not Addr:
                raise self.error(ins.span, f"'{ins.name}' needs an address operand")
            self.address(ins, op, scope)
            return
        if c == "l":
            if type(op) is not Sym:
                raise self.error(ins.span, f"'{ins.name}' needs a label")
            if op.name not in self.labels:
                raise self.error(ins.span, f"unknown label '{op.name}'")
            return
        self.registers_declared(op, scope, ins)

    def address(self, ins: Instr, addr: Addr, scope: _Scope) -> None:
        """An address operand: a register of an integer or bit type (64 bits for a
        generic or global access under ``.address_size 64``), or a variable whose
        state space the instruction's allows."""
        space = next((m for m in ins.mods if m in STATE_SPACES), "")
        base = addr.base
        t = type(base)
        if t is Reg:
            rt = self.reg_type(base, scope, ins.span)  # type: ignore[arg-type]
            if is_special_register(base.name) and scope.lookup(base.name) is None:  # type: ignore[union-attr]
                raise self.error(ins.span, f"special register '{base}' as an address")
            kind = _KIND_OF.get(rt)
            if kind not in ("bits", "int"):
                raise self.error(ins.span, f"register '{base}' of type {rt} used as an address")
            # ptxas refuses exactly 32-bit addresses here (16-bit ones only draw a warning)
            if bit_width(rt) == 32 and space in ("", ".global") and self.address_size == 64:
                raise self.error(ins.span, f"32-bit address '{base}' under .address_size 64")
        elif base is None and space != ".local":
            # measured: ld/st/atom/prefetch [8] are refused in every other space
            raise self.error(ins.span, f"an absolute address needs .local: '{ins.name}'")
        elif t is Sym:
            name = base.name  # type: ignore[union-attr]
            where = self.locals.get(name) or self.symbols.get(name)
            if where is None:
                raise self.error(ins.span, f"unknown symbol '{name}'")
            if where in ("function", "label"):
                raise self.error(ins.span, f"'{name}' is not a variable")
            if not _space_allows(space, where):
                raise self.error(
                    ins.span, f"'{name}' ({where}) is not in the {space or 'generic'} space"
                )
        for e in addr.extra:
            self.registers_declared(e, scope, ins)

    def pred_operand(self, ins: Instr, op: Operand, scope: _Scope, dest: bool) -> None:
        t = type(op)
        if t is Sink and dest:
            return
        if t is Imm and not dest and op.kind == "int":  # type: ignore[union-attr]
            return
        if t is not Reg:
            raise self.error(ins.span, f"'{ins.name}' needs a predicate operand")
        self.pred_reg(op, scope, ins.span)  # type: ignore[arg-type]

    def pred_reg(self, reg: Reg, scope: _Scope, span: Span | None) -> None:
        rt = scope.lookup(reg.name)
        if rt is None and is_special_register(reg.name):
            rt = special_register_type(reg.name)
        if rt is None:
            raise self.error(span, f"undeclared register '{reg.name}'")
        if rt != ".pred":
            raise self.error(span, f"'{reg.name}' is not a predicate register")

    def reg_type(self, reg: Reg, scope: _Scope, span: Span | None) -> str:
        rt = scope.lookup(reg.name)
        if rt is None:
            if is_special_register(reg.name):
                return special_register_type(reg.name)
            raise self.error(span, f"undeclared register '{reg.name}'")
        return rt

    def value(
        self,
        ins: Instr,
        op: Operand,
        ty: str,
        scope: _Scope,
        *,
        relaxed: bool,
        imm_ok: bool,
        dest: bool,
        func_ok: bool = False,
    ) -> None:
        t = type(op)
        if t is Reg or t is RegImm:
            reg = op if t is Reg else op.reg  # type: ignore[union-attr]
            if dest and t is RegImm:
                raise self.error(ins.span, f"'{ins.name}' needs a register destination")
            name = reg.name  # type: ignore[union-attr]
            rt = scope.lookup(name)
            if rt is None:  # not declared: a special register or nothing
                if not is_special_register(name):
                    raise self.error(ins.span, f"undeclared register '{name}'")
                if name in _VECTOR_SREGS:
                    raise self.error(ins.span, f"'{name}' needs a component (.x, .y or .z)")
                if dest:
                    raise self.error(ins.span, f"cannot write to special register '{name}'")
                if ins.opcode not in ("mov", "cvt"):
                    raise self.error(
                        ins.span, f"special register '{name}' is not allowed in '{ins.name}'"
                    )
                rt = special_register_type(name)
            if ty and t is Reg and not _compatible(ty, rt, relaxed):  # reg+imm: any width
                raise self.error(
                    ins.span,
                    f"register '{reg.name}' ({rt}) does not match the type {ty} of '{ins.name}'",  # type: ignore[union-attr]
                )
            return
        if type(op) is Vec and ins.opcode == "mov" and len(op.elems) > 1:
            if any(is_type(m) and not m.startswith(".b") for m in ins.mods):
                # measured: mov.u64/.s64/.f64 %rd1, {%r1, %r2} are refused
                raise self.error(ins.span, f"'{ins.name}' packs only with a .b type")
        if type(op) is Vec and (ins.opcode == "mov" or len(op.elems) == 1):
            # mov packs and unpacks vectors; {%r1} is a scalar, where ptxas allows a
            # special register as in any vector (measured)
            for e in op.elems:
                if type(e) is Reg and scope.lookup(e.name) is None and is_special_register(e.name):
                    continue
                if type(e) is not Sink:
                    self.value(
                        ins,
                        e,
                        "" if len(op.elems) > 1 else ty,
                        scope,
                        relaxed=relaxed,
                        imm_ok=imm_ok,
                        dest=dest,
                    )  # type: ignore[union-attr]
            return
        if dest:
            if t is Sink:
                return
            raise self.error(ins.span, f"'{ins.name}' needs a register destination")
        if t is Imm:
            if not imm_ok:
                raise self.error(ins.span, f"'{ins.name}' takes no immediate here")
            if ty and not immediate_compatible(ty, op):  # type: ignore[arg-type]
                raise self.error(ins.span, f"immediate '{op}' does not fit the type {ty}")
            return
        if t is Sym or t is Expr:
            if ins.opcode == "cvta" and ".to" in ins.mods:
                # measured: "Argument 1 of instruction 'cvta.to': must be register"
                raise self.error(ins.span, f"'{ins.name}' converts a register, not '{op}'")
            if ins.opcode in ("mov", "cvta", "st"):
                self.symbol(ins, op)
                return
            if (
                func_ok
                and t is Sym
                and self.symbols.get(op.name) == "function"  # type: ignore[union-attr]
                and self.function_value_ok(ins)
            ):
                return  # see _FUNCTION_VALUE_REFUSED
            raise self.error(ins.span, f"'{ins.name}' cannot take the symbol '{op}'")
        raise self.error(ins.span, f"unexpected operand '{op}' for '{ins.name}'")

    def cvta_symbol(self, ins: Instr, op: Operand) -> None:
        """``cvta.space d, var[+n]``: a variable of that state space (measured: a
        label is "Arguments mismatch", a function or a variable of another space
        "State space mismatch")."""
        text = op.name if type(op) is Sym else op.text  # type: ignore[union-attr]
        m = re.match(r"[\w$]+", text)
        name = m.group(0) if m else text
        where = self.locals.get(name) or self.symbols.get(name)
        if where in (None, "label") and (name in self.labels or where == "label"):
            raise self.error(ins.span, f"'{name}' is a label: '{ins.name}' needs a variable")
        if where is None:
            raise self.error(ins.span, f"unknown symbol '{name}'")
        space = next((m for m in ins.mods if m in STATE_SPACES), "")
        if where == "function" or not _space_allows(space, where):
            raise self.error(ins.span, f"'{name}' ({where}) is not in the {space} space")

    def symbol(self, ins: Instr, op: Operand) -> None:
        text = op.name if type(op) is Sym else op.text  # type: ignore[union-attr]
        m = re.match(r"(?:generic\s*\(\s*)?([\w$]+)", text)
        name = m.group(1) if m else text
        where = self.locals.get(name) or self.symbols.get(name)
        if where in (None, "label") and (name in self.labels or where == "label"):
            # measured: mov/st/cvta of any label (of the body, a section, defined
            # later) is "Arguments mismatch"
            raise self.error(ins.span, f"'{name}' is a label: '{ins.name}' needs a variable")
        if where is None:
            raise self.error(ins.span, f"unknown symbol '{name}'")
        types = [m for m in ins.mods if is_type(m)]
        narrow = types and bit_width(types[-1]) < 64
        if narrow and self.address_size == 64 and where in (".global", ".const", ".local"):
            raise self.error(ins.span, f"32-bit address of '{name}' under .address_size 64")

    def registers_declared(self, op: Operand, scope: _Scope, ins: Instr) -> None:
        t = type(op)
        if t is Reg:
            self.reg_type(op, scope, ins.span)  # type: ignore[arg-type]
        elif t is RegImm:
            self.reg_type(op.reg, scope, ins.span)  # type: ignore[union-attr]
        elif t is Not:
            self.reg_type(op.operand, scope, ins.span)  # type: ignore[union-attr]
        elif t is Vec:
            for e in op.elems:  # type: ignore[union-attr]
                self.registers_declared(e, scope, ins)
        elif t is Pair:
            self.registers_declared(op.first, scope, ins)  # type: ignore[union-attr]
            self.registers_declared(op.second, scope, ins)  # type: ignore[union-attr]
        elif t is Addr:
            if op.base is not None:  # type: ignore[union-attr]
                self.registers_declared(op.base, scope, ins)  # type: ignore[union-attr]
            for e in op.extra:  # type: ignore[union-attr]
                self.registers_declared(e, scope, ins)
        elif t is ParenList:
            for e in op.items:  # type: ignore[union-attr]
                self.registers_declared(e, scope, ins)


_MATRIX_NUM = frozenset({".x1", ".x2", ".x4"})
# A function's name as a source operand: ptxas accepts it in the slots typed by the
# instruction's own type (add, setp, mad, add.f32, selp's values, st/atom data,
# mov.pred, and.pred/not.pred) and reads it as 0 outside mov/cvta, which give the
# address. It refuses it in fixed-type slots (shl's shift, selp's predicate), in
# these instructions' typed slots (measured on sm_75..sm_120), and in call arguments
# (Validator.call).
_FUNCTION_VALUE_REFUSED = frozenset({"cvt", "vote", "redux", "bar", "barrier", "isspacep", "tex"})
# instructions whose address is one base and offset: no texture-style [a, b] form
_PLAIN_ADDRESS_OPS = frozenset({"ld", "ldu", "st", "atom", "red", "prefetch", "prefetchu"})
# ptxas ignores a .pred beside another type in add, sub, min, max, fma, setp, set,
# cvt, neg, abs, atom, red, float mul, sqrt, rcp, ex2; it refuses one in these
# (measured; instructions not probed keep the lenient reading)
_PRED_TYPE_REFUSED = frozenset(
    {
        "mad", "mov", "and", "or", "xor", "not", "cnot", "shl", "shr", "selp", "slct",
        "ld", "st", "vote", "popc", "div", "rem", "mul24", "sad", "bfe", "addc",
        "testp", "copysign", "cvta", "shfl",
    }
)  # fmt: skip
# the modifiers ptxas accepts twice (measured: bra.uni.uni, shfl.sync.sync,
# cvt.relu.relu, add.cc.cc, rsqrt.approx.approx, mul.sat.sat, bfind.shiftamt.shiftamt,
# min.NaN.NaN); every other one given twice it refuses ("Multiple rounding modifiers",
# "Duplicate .ftz modifier", "Multiple comparisons set", ...: 50 forms probed)
_TWICE_OK = frozenset(
    {".sync", ".uni", ".relu", ".satfinite", ".cc", ".approx", ".sat", ".shiftamt", ".NaN"}
)
# types a register, parameter or variable may be declared with (no .bf16, .u4 ...)
_STORAGE_TYPES = frozenset(
    ".pred .b8 .b16 .b32 .b64 .b128 .u8 .u16 .u32 .u64 .s8 .s16 .s32 .s64 .f16 .f16x2 "
    ".f32 .f64 .texref .surfref .samplerref".split()
)
_VECTOR_SREGS = frozenset(
    {"%tid", "%ntid", "%ctaid", "%nctaid", "%clusterid", "%nclusterid", "%cluster_ctaid",
     "%cluster_nctaid"}
)  # fmt: skip
_SHARED = frozenset({".shared", ".shared::cta", ".shared::cluster"})
_PARAM = frozenset({".param", ".param::entry", ".param::func"})


def _space_allows(ins_space: str, var_space: str) -> bool:
    """May an instruction of state space ``ins_space`` ("" = generic) address a
    variable declared in ``var_space``?  Only the mismatches ptxas reports are
    refused: parameters and .const variables need their own space."""
    if var_space == ".param::entry":
        return ins_space in (".param", ".param::entry")
    # measured on sm_75/80/90: a .const variable only through .const, a function's
    # .param only through .param (generic, .global ... are refused)
    if var_space == ".const":
        return ins_space == ".const"
    if var_space in (".param", ".param::func"):
        return ins_space in (".param", ".param::func")
    if var_space in (".global", ".shared", ".local"):
        if ins_space == "":
            return True
        if var_space == ".shared":
            return ins_space in _SHARED
        return ins_space == var_space
    return True


_INIT_SYMBOL = re.compile(r"(?<![\w.$%])[A-Za-z_$][\w$]*")
_LITERAL = re.compile(
    r"(?<![\w$.])(0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|0[xX][0-9a-fA-F]+U?|0[bB][01]+U?"
    r"|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+U?)(?![\w$.])"
)
_INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
# a label in section data: a name and ':' (one starting with '$' may follow a number:
# ".b8 0$L__info_string1:"); comments are removed first
_SECTION_LABEL = re.compile(r"((?<![\w$])[A-Za-z_$][\w$]*|(?<=[0-9])\$[\w$]*)\s*:")
_SECTION_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_FUNCTION_NAME = re.compile(r"function_name\s+([\w$]+)")
_CVT_SCALAR = frozenset(
    ".u8 .u16 .u32 .u64 .s8 .s16 .s32 .s64 .f16 .bf16 .f32 .f64 .b8 .b16 .b32 .b64".split()
)
_FRND = frozenset({".rn", ".rz", ".rm", ".rp", ".rna", ".rs"})
_IRND = frozenset({".rni", ".rzi", ".rmi", ".rpi"})


def validate(mod: Module) -> None:
    """Raise :class:`PtxError` at the first construct ptxas would reject."""
    with deep_recursion():
        Validator(mod).run()
