"""`jax._src.dispatch`: `wait_for_tokens`, which waits for the side effects of the programs launched so far (host
callbacks), as libraries call at exit."""

from numax.lowering import xla as _xla


def wait_for_tokens():
    """Waits until every program with host callbacks launched so far has finished (`numax.effects_barrier`)."""
    _xla.wait_for_effects()
