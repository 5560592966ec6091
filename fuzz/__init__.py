"""Fuzzers: random kernels for differential testing of passes (``kernels.py``)."""
