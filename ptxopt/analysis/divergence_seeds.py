"""Divergence roots: which results are varying (or uniform) whatever their inputs.

This is the seeding step of the varying propagation (spec 01, "Divergence Roots — Seed
Table", and spec 02, "Sources of uniformity / divergence").  The opcode table
(:mod:`ptxopt.ptx.opcodes`) already carries a divergence class per instruction form; this
module turns a class plus the concrete instruction into a per-result seed:

``SEED_VARYING``   the result differs per lane no matter what (``%tid``, ``shfl``, ``atom``).
``SEED_UNIFORM``   the result is the same in every active lane whatever the per-lane inputs
                   (``vote`` - ``vote.ballot`` included -, ``redux.sync``, ``activemask``).
``SEED_OPERANDS``  the ordinary rule: varying iff something it reads is varying.
``SEED_ADDRESS``   loads: varying iff the address operand is varying.
``SEED_CALL``      decided by the inter-procedural step (callee return values).

Decisions where the spec table is silent (all on the safe side):

* ``%clock``, ``%clock_hi``, ``%clock64``, ``%globaltimer*``, ``%pm*``: varying (nothing
  guarantees two lanes sample the counter in the same cycle).
* ``%lanemask_{eq,le,lt,ge,gt}``: varying (per-lane by definition).
* ``%dynamic_smem_size``, ``%total_smem_size``, ``%aggr_smem_size``, ``%reserved_smem_*``,
  ``%envreg*``, ``%nwarpid``, ``%nsmid``, cluster ids/ranks, ``%current_graph_exec``:
  uniform (launch or CTA constants).
* Warp-collective results that the spec calls uniform (``vote.*``, ``redux.sync``,
  ``match.all``, the lane id written by ``elect.sync``) are uniform only when their
  ``membermask`` operand is uniform: lanes of one warp may execute the same ``*.sync``
  instruction with disjoint member masks, and then each group gets its own answer.
* ``match.any.sync``: varying (each lane gets the mask of lanes holding its value).
  ``match.all.sync``: both results uniform (with a uniform mask).
* ``elect.sync d|p``: ``d`` uniform (with a uniform mask), ``p`` varying (true in one lane).
* ``activemask``: uniform (the lanes executing it together read the same mask).
* ``shfl.sync d|p``: both results varying.
* ``bar.red``: uniform (a CTA-wide reduction broadcast to every thread).

These agree with the opcode table; the membermask refinement is this module's.
"""

from __future__ import annotations

from ptxopt.ir.core import Inst
from ptxopt.ptx.opcodes import special_register_divergence

SEED_OPERANDS = 0
SEED_VARYING = 1
SEED_UNIFORM = 2
SEED_ADDRESS = 3
SEED_CALL = 4

SEED_NAMES = {
    SEED_OPERANDS: "operands",
    SEED_VARYING: "varying",
    SEED_UNIFORM: "uniform",
    SEED_ADDRESS: "address",
    SEED_CALL: "call",
}

# Warp collectives whose membermask is their last operand.
_MASKED = frozenset({"vote", "match", "redux", "elect"})


def special_is_varying(name: str) -> bool:
    """Seed of a special register read (``%tid.x`` varying, ``%ctaid.x`` uniform ...)."""
    return special_register_divergence(name) == "varying"


def def_seeds(inst: Inst) -> list[int]:
    """One seed class per def slot of ``inst`` (see the module docstring)."""
    info = inst.info
    n = len(inst.defs)
    if info is None:
        return [SEED_OPERANDS] * n
    cls = info.divergence
    if cls == "varying":
        return [SEED_VARYING] * n
    if cls == "uniform":
        return [SEED_UNIFORM] * n
    if cls == "address":
        return [SEED_ADDRESS] * n
    if cls == "call":
        return [SEED_CALL] * n
    if cls == "elect":
        # elect.sync d|p, membermask: d is the elected lane id, p is true in one lane.
        return [SEED_UNIFORM] + [SEED_VARYING] * (n - 1) if n else []
    return [SEED_OPERANDS] * n


def membermask_slot(inst: Inst) -> int | None:
    """Index in ``inst.uses`` of the membermask of a ``*.sync`` warp collective (the last
    register slot, when the mask is a register), else ``None``."""
    info = inst.info
    if info is None or info.name.split(".")[0] not in _MASKED:
        return None
    if ".sync" not in inst.ast.mods:
        return None
    ops = inst.ast.operands
    if not ops:
        return None
    from ptxopt.ptx.ast import Reg

    if isinstance(ops[-1], Reg) and inst.uses:
        return len(inst.uses) - 1
    return None
