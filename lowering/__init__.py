"""Lowering: Programs to StableHLO, and the XLA runtime that compiles and runs them.

Only the `lowering.xla` package imports jaxlib; everything else speaks through it.
"""
