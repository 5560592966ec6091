"""ptxopt: a warp-aware PTX middle-end."""

__version__ = "0.1.0"

