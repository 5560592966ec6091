"""Slow, obviously-correct reference algorithms used as test oracles."""
