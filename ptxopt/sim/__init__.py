"""SIMT interpreter: runs PTX kernels on the CPU with warp semantics.

``launch`` runs one kernel (see :mod:`ptxopt.sim.launch`); ``differential`` runs two
versions of a kernel on identical inputs and compares every buffer bit for bit (see
:mod:`ptxopt.sim.checker`).  The execution model is documented in
:mod:`ptxopt.sim.machine`, memory layout in :mod:`ptxopt.sim.memory`, instruction
semantics in :mod:`ptxopt.sim.ops` and :mod:`ptxopt.sim.floats`.
"""

from ptxopt.sim.checker import DiffResult, differential
from ptxopt.sim.errors import SimError
from ptxopt.sim.launch import LaunchResult, ParamBlob, launch
from ptxopt.sim.machine import Violation
from ptxopt.sim.tma import TensorMap

__all__ = [
    "launch",
    "LaunchResult",
    "ParamBlob",
    "TensorMap",
    "differential",
    "DiffResult",
    "SimError",
    "Violation",
]
