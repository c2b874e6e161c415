"""(in progress) callbacks primitives."""

__all__ = []
