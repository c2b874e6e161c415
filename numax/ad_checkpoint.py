"""`numax.ad_checkpoint`: rematerialization in differentiation, as `jax.ad_checkpoint`.

`checkpoint` (alias `remat`) recomputes a function's intermediates in the backward pass instead of saving
them; `checkpoint_name` tags a value for the name-based `checkpoint_policies`; `print_saved_residuals` shows
what differentiating a function saves for its backward pass.

A policy answers, for each intermediate, True or `Saveable` (save it), False or `Recompute` (recompute it), or
`Offloadable(src, dst)` (jax moves it to another memory kind, host memory say, until the backward pass; numax
keeps it where it is, which saves the same value).
"""

from typing import NamedTuple

from numax.transforms.checkpoint import (  # noqa: F401
    checkpoint,
    checkpoint_name,
    checkpoint_policies,
    print_saved_residuals,
    remat,
)

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name", "checkpoint_policies",
           "print_saved_residuals", "remat"]


class _SaveableType:
    """The type of `Saveable`, a policy's answer to save an intermediate (true, as True is)."""


class _RecomputeType:
    """The type of `Recompute`, a policy's answer to recompute an intermediate (false, as False is)."""

    def __bool__(self):
        return False


Saveable, Recompute = _SaveableType(), _RecomputeType()


class Offloadable(NamedTuple):
    """A policy's answer to save an intermediate in memory kind `dst` (moved from `src`) until the backward pass."""

    src: str
    dst: str
