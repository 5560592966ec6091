"""Instruction semantics of the SIMT interpreter, one module per instruction family.

Each PTX instruction is decoded once into an :class:`~ptxopt.sim.machine.Op`: an
``alu`` op is a closure ``fn(machine, sel, tids)`` that reads its sources for the
selected lanes, computes with numpy and writes its destinations; a ``warp`` op gets the
executing lanes as a ``(warps, 32)`` mask; control flow, calls and barriers decode into
data that :mod:`ptxopt.sim.machine` interprets.

=================  ==========================================================
module             instructions
=================  ==========================================================
``decoder``        the :class:`Decoder`, the handler registry, shared helpers
``moves``          ``mov``
``integer``        integer arithmetic, carry chains, ``dp4a``/``dp2a``
``bits``           logic, shifts, funnel shifts, bit fields, ``prmt``
``floating``       float and half arithmetic, transcendental approximations
``compare``        ``setp``, ``set``, ``selp``, ``slct``
``convert``        ``cvt``
``memory``         ``ld``, ``ldu``, ``st``, ``cvta``, ``createpolicy``
``atomics``        ``atom``, ``red``
``control``        ``bra``, ``brx``, ``call``, ``ret``, ``exit``, ``trap``
``sync``           barriers, fences and other no-ops
``warp``           ``activemask``, ``shfl``, ``vote``, ``match``, ``redux``, ``elect``
``video``          ``vadd`` ... ``vset`` and the SIMD ``...2``/``...4`` forms
``stack``          ``alloca``, ``stacksave``, ``isspacep``, ``mapa``, ``getctarank``
``asynccopy``      ``cp.async*`` (incl. bulk and tensor), ``mbarrier``, ``tensormap``
``matrix``         ``ldmatrix``, ``stmatrix``, ``mma``, ``wgmma``
=================  ==========================================================

Adding a family (the extension point): write ``ptxopt/sim/ops/<family>.py`` whose
handlers are plain functions ``fn(d: Decoder, ins: Instr, pc: int) -> Op`` decorated
with ``@handles("opcode", ...)`` (head opcodes; the handler reads the modifiers), then
import the module in the list below.  Two handlers for one opcode are an error at
import time.  Handlers build readers/writers with ``d.rd``/``d.wr`` and most pure
per-lane instructions are one ``d.alu1(ins, pc, out_type, in_types, fn)``; raise
:class:`~ptxopt.sim.errors.SimError` at ``ins.span`` for a form the family cannot run
(the launch then fails only if a lane executes it).
"""

from ptxopt.sim.ops import (  # noqa: F401  (each import registers a family's handlers)
    asynccopy,
    atomics,
    bits,
    compare,
    control,
    convert,
    floating,
    integer,
    matrix,
    memory,
    moves,
    stack,
    sync,
    video,
    warp,
)
from ptxopt.sim.ops.control import CallSite
from ptxopt.sim.ops.decoder import HANDLERS, Decoder, handles
from ptxopt.sim.ops.sync import BarInfo

__all__ = ["Decoder", "HANDLERS", "handles", "CallSite", "BarInfo"]
