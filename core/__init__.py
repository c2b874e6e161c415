"""numax's engine core: avals and dtypes, pytrees, tracers and the trace stack, the IR, primitives.

The core knows nothing of XLA, StableHLO or any particular primitive; the other engine packages
(`lax`, `transforms`, `lowering`) build on it.
"""
