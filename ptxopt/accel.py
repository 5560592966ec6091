"""The front end's compiled build: which modules ``pip install`` compiles with mypyc,
and which of them this installation runs compiled.

The modules below are plain, mypy-checked Python.  Building the package from source
(``pip install .``) compiles them into C extensions with mypyc when it can (mypy
from a wheel, a C compiler on the machine): the round trip runs 1.36-1.47x as fast
and executes 2.0x fewer instructions (docs/tools.md).  The classes made per line
of input -- the AST's ``Span``, ``Instr`` and common operands (``Reg``, ``Imm``,
``Sym``, ``Addr``, ``Vec``: ``ptxopt.ptx.nodes``) and
the IR's (``ptxopt.ir.core``) -- and the opcode
table's entries (``ptxopt.ptx.opinfo``) are compiled too, so the parser makes them
and the validator, the lifter, the lowering and the uniform-register model
(``ptxopt.ori``: its sweeps, phase 74's decisions, phase 86 and the report rows)
read them directly without calling into the interpreter; compiled, they are native
classes: no weak references to them, no attributes beyond those their ``__init__``
sets, and the type of each assignment checked at run time (``ptxopt.ir.regtypes``, a
``dict`` subclass, stays Python).  The graph analyses the lifter runs on every
function (``ptxopt.analysis``: ``graph``, ``rpo``, ``dominators``, ``liveness``) and
its operand walks (``ptxopt.ir.operands``) are compiled as well; their one exception
class lives in ``ptxopt.analysis.errors`` (a compiled module cannot subclass a
built-in exception).  Without a compiler, with ``PTXOPT_PURE=1``, and
for editable installs the same files run as Python.  Both builds give the same
results; the tests run on both (``.ci/run``).  This module imports nothing, so
``setup.py`` reads the list from it and ``ptxopt --version`` reports the build
without loading the front end.
"""

# module names, in the order mypyc is given them
COMPILED = (
    "ptxopt.ptx.nodes",
    "ptxopt.ptx.opinfo",
    "ptxopt.ptx.lexer",
    "ptxopt.ptx.parser",
    "ptxopt.ptx.printer",
    "ptxopt.ptx.validate",
    "ptxopt.ir.scopes",
    "ptxopt.ir.lift",
    "ptxopt.ir.lower",
    "ptxopt.ir.core",
    "ptxopt.ir.operands",
    "ptxopt.analysis.graph",
    "ptxopt.analysis.rpo",
    "ptxopt.analysis.dominators",
    "ptxopt.analysis.liveness",
    "ptxopt.ori.view",
    "ptxopt.ori.capability",
    "ptxopt.ori.ur_alloc",
    "ptxopt.ori.conv_alloc",
    "ptxopt.ori.report",
)


def compiled_modules() -> list[str]:
    """The modules of :data:`COMPILED` that this installation loads as C extensions
    (found, not imported)."""
    from importlib.machinery import EXTENSION_SUFFIXES
    from importlib.util import find_spec

    out = []
    for name in COMPILED:
        spec = find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is not None and origin.endswith(tuple(EXTENSION_SUFFIXES)):
            out.append(name)
    return out


def build_name() -> str:
    """What ``ptxopt --version`` says of the build: every module compiled, none
    (``pure Python``), or some (k of n: a broken install)."""
    got = compiled_modules()
    if len(got) == len(COMPILED):
        return "front end compiled with mypyc"
    if not got:
        return "pure Python"
    return f"partly compiled ({len(got)} of {len(COMPILED)} front-end modules)"
