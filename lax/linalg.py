"""(in progress) linalg primitives."""

__all__ = []
