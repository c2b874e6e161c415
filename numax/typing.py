"""`numax.typing`, as `jax.typing`: the annotations of what numax functions accept, `ArrayLike` (an array, a
numpy array or scalar, or a Python scalar) and `DTypeLike` (anything `numax.numpy.dtype` reads as a dtype)."""

from typing import Any, Protocol

import numpy as np

from numax.core.array_type import Array


class SupportsDType(Protocol):
    """An object with a `dtype` attribute (an array, a ShapeDtypeStruct)."""

    @property
    def dtype(self) -> Any: ...


ArrayLike = Array | np.ndarray | np.bool_ | np.number | bool | int | float | complex
DTypeLike = str | type[Any] | np.dtype | SupportsDType

__all__ = ["ArrayLike", "DTypeLike"]
