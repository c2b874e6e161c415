"""(in progress) cumulative primitives."""

__all__ = []
