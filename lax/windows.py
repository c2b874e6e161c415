"""(in progress) windows primitives."""

__all__ = []
