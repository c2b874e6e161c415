"""Lowering: Programs to StableHLO, and the XLA runtime that compiles and runs them.

Only `lowering.xla` imports jaxlib; everything else speaks through it.
"""
