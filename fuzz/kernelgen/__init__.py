"""Random PTX kernel generator (see :mod:`fuzz.kernelgen.kernel`; features live in
:mod:`~fuzz.kernelgen.arith`, :mod:`~fuzz.kernelgen.control`,
:mod:`~fuzz.kernelgen.memory`, :mod:`~fuzz.kernelgen.warp` and
:mod:`~fuzz.kernelgen.calls`; inputs and launch shapes in :mod:`~fuzz.kernelgen.inputs`)."""

from fuzz.kernelgen.core import FEATURES, MODIFIERS
from fuzz.kernelgen.inputs import SHAPES, make_args, shapes_for
from fuzz.kernelgen.kernel import ALL_FEATURES, Kernel, Layout, generate_kernel, layout_of

__all__ = [
    "ALL_FEATURES",
    "FEATURES",
    "MODIFIERS",
    "SHAPES",
    "Kernel",
    "Layout",
    "generate_kernel",
    "layout_of",
    "make_args",
    "shapes_for",
]
