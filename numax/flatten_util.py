"""`numax.flatten_util`, as `jax.flatten_util`: `ravel_pytree`, one flat vector for a whole pytree of arrays."""

import numpy as np

from numax.core import dtypes
from numax.core.pytree import tree_flatten, tree_unflatten


def ravel_pytree(pytree):
    """`(flat, unravel)`: the leaves of `pytree`, each raveled, concatenated into one 1-D array of their common
    dtype (`result_type` of the leaves), and the function that maps such a vector back to a pytree of the same
    structure, shapes and dtypes. Works under every transformation (unravel too)."""
    import numax.numpy as xnp

    leaves, treedef = tree_flatten(pytree)
    leaves = [xnp.asarray(leaf) for leaf in leaves]
    shapes = [leaf.shape for leaf in leaves]
    leaf_dtypes = [leaf.dtype for leaf in leaves]
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
    flat_dtype = dtypes.result_type(*leaf_dtypes) if leaves else dtypes.canonicalize_dtype(np.float32)
    flat = (xnp.concatenate([xnp.ravel(leaf).astype(flat_dtype) for leaf in leaves]) if leaves
            else xnp.zeros((0,), flat_dtype))
    offsets = np.cumsum([0, *sizes])

    def unravel(vector):
        vector = xnp.asarray(vector)
        if vector.shape != flat.shape:
            raise ValueError("The unravel function expected an array of shape "
                             f"{flat.shape}, got shape {vector.shape}.")
        if vector.dtype != flat_dtype:
            raise TypeError("The unravel function expected an array of dtype "
                            f"{flat_dtype}, got dtype {vector.dtype}.")
        parts = [xnp.reshape(vector[int(start):int(stop)], shape).astype(dtype)
                 for start, stop, shape, dtype in zip(offsets[:-1], offsets[1:], shapes, leaf_dtypes)]
        return tree_unflatten(treedef, parts)

    return flat, unravel
