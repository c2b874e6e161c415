"""`numax.triton`: call Triton kernels from numax code, with jax-triton's API (`import numax.triton as jt`).

`triton_call(*args, kernel=..., out_shape=..., grid=..., **metaparams)` launches a `@triton.jit` kernel on
the call's arrays: array arguments become pointers, followed by one pointer per output; Python scalars
become kernel scalars; keyword arguments are the kernel's constexpr metaparameters. It works eagerly and
inside `jit` (between other operations of one XLA program) and `vmap` (one launch per example); differentiate
through it with `custom_vjp` and a backward kernel. On an NVIDIA GPU the kernel is compiled by Triton and
launched by XLA; on the CPU it runs through Triton's interpreter, for development and tests.
"""

import numpy as np

from numax.core import dtypes
from numax.core import pytree as tree
from numax.core.avals import ShapedArray
from numax.core.trace import Tracer
from numax.lax.triton_call import triton_call_p
from numax.lowering.array import Array
from numax.lowering.triton_signature import check_call, resolve_grid, unwrap_kernel

__all__ = ["triton_call", "cdiv", "next_power_of_2", "strides_from_shape"]


def cdiv(a, b):
    """Ceiling division: the number of blocks of size `b` covering `a`."""
    return -(-a // b)


def next_power_of_2(n):
    """The smallest power of two at least `n` (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def strides_from_shape(shape):
    """Row-major strides, in elements, of an array of `shape`."""
    strides, size = [], 1
    for dim in reversed(tuple(shape)):
        strides.append(size)
        size *= int(dim)
    return tuple(reversed(strides))


def _out_aval(leaf):
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"triton_call: out_shape leaves must have .shape and .dtype (numax.ShapeDtypeStruct), "
                        f"got {leaf!r}")
    return ShapedArray(tuple(int(d) for d in shape), dtypes.canonicalize_dtype(np.dtype(dtype)))


def _is_array_argument(arg):
    return isinstance(arg, Array | Tracer | np.ndarray)


def _hashable_metaparam(name, value):
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"triton_call: metaparameter {name}={value!r} must be hashable (an int, float, bool, str "
                        f"or tuple)") from None
    return value


def triton_call(*args, kernel, out_shape=None, grid, input_output_aliases=None, zeroed_outputs=(), num_warps=None,
                num_stages=None, num_ctas=1, debug=False, name="", out_type=None, **metaparams):
    """Launches the Triton `kernel` over `grid` on `args`; returns arrays shaped like `out_shape`.

    As jax-triton's: `out_shape` (or `out_type`) is a ShapeDtypeStruct or a pytree of them; `grid` an int, a
    tuple of up to three ints, or a function of the metaparams; `input_output_aliases` maps the position of an
    array in `args` to an output index (that output starts as the input's values, and under jit with donation
    reuses its buffer); `zeroed_outputs` lists outputs (or is a function of the metaparams giving them) that
    start as zeros.
    """
    if out_shape is None and out_type is None:
        raise TypeError("triton_call: out_shape (or out_type) is required")
    if out_shape is not None and out_type is not None:
        raise TypeError("triton_call: pass out_shape or out_type, not both")
    jit_function, _ = unwrap_kernel(kernel)  # a TypeError for anything else
    out_leaves, out_tree = tree.tree_flatten(out_shape if out_shape is not None else out_type)
    out_avals = tuple(_out_aval(leaf) for leaf in out_leaves)
    operands, call_spec, operand_of_arg = [], [], {}
    for position, arg in enumerate(args):
        if _is_array_argument(arg):
            operand_of_arg[position] = len(operands)
            call_spec.append(("array", len(operands)))
            operands.append(arg)
        elif isinstance(arg, bool | int | float | np.generic):
            call_spec.append(("scalar", arg.item() if isinstance(arg, np.generic) else arg))
        else:
            raise TypeError(f"triton_call: argument {position} must be an array or a Python scalar, got "
                            f"{type(arg).__name__}")
    aliases = []
    for position, output in (input_output_aliases or {}).items():
        if position not in operand_of_arg:
            raise ValueError(f"triton_call: input_output_aliases names argument {position}, which is not an array "
                             f"argument")
        if not 0 <= output < len(out_avals):
            raise ValueError(f"triton_call: input_output_aliases names output {output}, but there are "
                             f"{len(out_avals)}")
        aliases.append((operand_of_arg[position], int(output)))
    kernel_name = name or jit_function.fn.__name__
    check_call(kernel, len(args), len(out_avals), metaparams, kernel_name)
    outs = triton_call_p.bind(
        *operands, kernel=kernel, out_avals=out_avals, grid=grid if callable(grid) else resolve_grid(grid, {}),
        call_spec=tuple(call_spec),
        metaparams=tuple(sorted((k, _hashable_metaparam(k, v)) for k, v in metaparams.items())),
        input_output_aliases=tuple(aliases),
        zeroed_outputs=zeroed_outputs if callable(zeroed_outputs) else tuple(int(i) for i in zeroed_outputs),
        num_warps=num_warps, num_stages=num_stages, num_ctas=num_ctas, debug=debug, name=kernel_name)
    return out_tree.unflatten(outs)
