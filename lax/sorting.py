"""(in progress) sorting primitives."""

__all__ = []
