"""(in progress) convolution primitives."""

__all__ = []
