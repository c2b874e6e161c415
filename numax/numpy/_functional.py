"""Functions that build arrays by applying user functions or assembling pieces: vectorize, apply_along_axis,
apply_over_axes, piecewise, fromfunction, choose and block.

As in JAX, the "loops" of numpy's versions are numax.vmap: the user function sees one element (or one core
slice, for vectorize with a signature), and is traced once rather than called per element.
"""

import functools
import operator
import re

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.trace import concrete_or_error
from numax.transforms.jit import jit

from ._util import aval, canonicalize_axis, check_arraylike, to_array

__all__ = ["vectorize", "apply_along_axis", "apply_over_axes", "piecewise", "fromfunction", "choose", "block"]


def _vmap(fun, in_axes, out_axes=0):
    from numax.transforms.vmap import vmap

    return vmap(fun, in_axes=in_axes, out_axes=out_axes)


# --- vectorize ---------------------------------------------------------------------------------------------------
# The generalized-ufunc signature grammar, e.g. "(m,n),(n)->(m)"; see numpy's "generalized universal functions".
_dimension = r"\w+"
_argument = rf"\((?:{_dimension}(?:,{_dimension})*)?\)"
_argument_list = rf"{_argument}(?:,{_argument})*"
_signature = rf"^{_argument_list}->{_argument_list}$"


def _parse_signature(signature):
    """The core dimension names of each input and each output of a gufunc signature."""
    if not re.match(_signature, signature):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    return [[tuple(re.findall(_dimension, argument)) for argument in re.findall(_argument, side)]
            for side in signature.split("->")]


def _record_core_sizes(sizes, shape, core_dims, context, is_input):
    """Checks `shape`'s trailing core dimensions against the sizes seen so far, and records new ones."""
    if is_input and len(shape) < len(core_dims):
        raise ValueError(f"input with shape {shape!r} does not have enough dimensions for all core dimensions "
                         f"{core_dims!r} {context}")
    if not is_input and len(shape) != len(core_dims):
        raise ValueError(f"output shape {shape!r} does not match core dimensions {core_dims!r} {context}")
    core_shape = shape[len(shape) - len(core_dims):]
    for name, size in zip(core_dims, core_shape):
        if sizes.setdefault(name, size) != size:
            raise ValueError(f"inconsistent size for core dimension {name!r}: {size!r} vs {sizes[name]!r} {context}")


def _bind_excluded(fun, excluded, args, kwargs):
    """`fun` with the excluded positional and keyword arguments bound, and the arguments left to vectorize."""
    if not excluded:
        return fun, list(args), kwargs
    fixed_args = [(i, args[i]) for i in sorted(e for e in excluded if isinstance(e, int)) if i < len(args)]
    fixed_kwargs = {key: value for key, value in kwargs.items() if key in excluded}

    def bound(*free_args, **free_kwargs):
        full_args = list(free_args)
        for i, value in fixed_args:
            full_args.insert(i, value)
        return fun(*full_args, **free_kwargs, **fixed_kwargs)

    free_args = [arg for i, arg in enumerate(args) if i not in excluded]
    free_kwargs = {key: value for key, value in kwargs.items() if key not in excluded}
    return bound, free_args, free_kwargs


def _checking_outputs(fun, core_sizes, output_core_dims, context):
    def checked(*args):
        out = fun(*args)
        outs = out if isinstance(out, tuple) else [out]
        if len(output_core_dims) > 1 and not isinstance(out, tuple):
            raise TypeError(f"output must be a tuple when multiple outputs are expected, got: {out!r}\n{context}")
        if len(outs) != len(output_core_dims):
            raise TypeError(f"wrong number of output arguments: expected {len(output_core_dims)}, got {len(outs)} "
                            f"{context}")
        sizes = dict(core_sizes)
        for value, core_dims in zip(outs, output_core_dims):
            _record_core_sizes(sizes, tuple(np.shape(value)), core_dims, context, is_input=False)
        return out

    return checked


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """`pyfunc` made to broadcast over leading ("loop") dimensions, like numpy.vectorize, but through numax.vmap:
    `pyfunc` is traced once on one element, or with `signature` (e.g. "(m,n),(n)->(m)") on one set of core
    dimensions. `excluded` names positional indices or keywords passed through unvectorized. Other keyword
    arguments are also passed through unvectorized."""
    if any(not isinstance(e, (str, int)) for e in excluded):
        raise TypeError("numax.numpy.vectorize can only exclude integer or string arguments, but "
                        f"excluded={excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")
    from ._creation import asarray
    from ._shape import expand_dims, squeeze

    @functools.wraps(pyfunc)
    def vectorized(*args, **kwargs):
        context = f"on vectorized function with excluded={excluded!r} and signature={signature!r}"
        fun, args, kwargs = _bind_excluded(pyfunc, excluded, args, kwargs)
        if kwargs:
            fun = functools.partial(fun, **kwargs)
        if signature is not None:
            input_core_dims, output_core_dims = _parse_signature(signature)
        else:
            input_core_dims, output_core_dims = [()] * len(args), None
        none_positions = {i for i, arg in enumerate(args) if arg is None}
        if none_positions:
            if any(input_core_dims[i] != () for i in none_positions if i < len(input_core_dims)):
                raise ValueError(f"Cannot pass None at locations {none_positions} with signature={signature!r}")
            fun, args, _ = _bind_excluded(fun, none_positions, args, {})
            input_core_dims = [dims for i, dims in enumerate(input_core_dims) if i not in none_positions]
        args = [asarray(arg) for arg in args]
        if len(args) != len(input_core_dims):
            raise TypeError(f"wrong number of positional arguments: expected {len(input_core_dims)}, got "
                            f"{len(args)} {context}")
        core_sizes, loop_shapes = {}, []
        for arg, core_dims in zip(args, input_core_dims):
            arg_shape = aval(arg).shape
            _record_core_sizes(core_sizes, arg_shape, core_dims, context, is_input=True)
            loop_shapes.append(arg_shape[:len(arg_shape) - len(core_dims)])
        try:
            loop_shape = np.broadcast_shapes(*loop_shapes)
        except ValueError:
            raise ValueError(f"vectorize: cannot broadcast the loop dimensions {loop_shapes} {context}") from None
        if output_core_dims is not None:
            fun = _checking_outputs(fun, core_sizes, output_core_dims, context)
        # One vmap per loop dimension, innermost first; an argument of size 1 (or missing) there is not mapped,
        # so broadcasting happens inside vmap instead of materializing broadcast copies.
        squeezed, padded_shapes = [], []
        for arg, own_loop_shape in zip(args, loop_shapes):
            padded_shapes.append((1,) * (len(loop_shape) - len(own_loop_shape)) + own_loop_shape)
            squeezed.append(squeeze(arg, tuple(i for i, size in enumerate(own_loop_shape) if size == 1)))
        unmapped_dims = []
        for dim in reversed(range(len(loop_shape))):
            in_axes = tuple(None if shape[dim] == 1 else 0 for shape in padded_shapes)
            if all(axis is None for axis in in_axes):
                unmapped_dims.append(dim)
            else:
                fun = _vmap(fun, in_axes)
        result = fun(*squeezed)
        if not unmapped_dims:
            return result
        unmapped_dims = tuple(sorted(unmapped_dims))
        if isinstance(result, tuple):
            return tuple(expand_dims(r, unmapped_dims) for r in result)
        return expand_dims(result, unmapped_dims)

    return vectorized


# --- applying functions over axes ---------------------------------------------------------------------------------
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """`func1d(slice, *args, **kwargs)` for every 1-d slice of `arr` along `axis`, through vmap; the function's
    output dimensions replace `axis`."""
    check_arraylike("apply_along_axis", arr)
    rank = len(aval(arr).shape)
    axis = canonicalize_axis(axis, rank)

    def fun(x):
        return func1d(x, *args, **kwargs)

    for i in range(1, rank - axis):
        fun = _vmap(fun, in_axes=i, out_axes=-1)
    for _ in range(axis):
        fun = _vmap(fun, in_axes=0, out_axes=0)
    return fun(to_array(arr))


def apply_over_axes(func, a, axes):
    """`func(a, axis)` applied for each axis in turn; a result that lost `axis` gets it back as size 1."""
    from ._shape import expand_dims

    check_arraylike("apply_over_axes", a)
    result = to_array(a)
    for axis in axes:
        out = func(result, axis)
        rank = len(aval(result).shape)
        if len(aval(out).shape) == rank:
            result = out
        elif len(aval(out).shape) == rank - 1:
            result = expand_dims(out, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return result


# --- piecewise ----------------------------------------------------------------------------------------------------
def piecewise(x, condlist, funclist, *args, **kw):
    """`funclist[i](x, *args, **kw)` (or the constant `funclist[i]`) where `condlist[i]` holds (a later condition
    wins); an extra last entry of `funclist` is the default, otherwise 0. Each element picks its function with
    lax.switch under vectorize, so the functions see scalars and results take `x`'s dtype."""
    check_arraylike("piecewise", x)
    x = to_array(x)
    n_conditions, n_functions = len(condlist), len(funclist)
    if n_functions == n_conditions + 1:
        funclist = [funclist[-1]] + list(funclist[:-1])
    elif n_functions == n_conditions:
        funclist = [0] + list(funclist)
    else:
        raise ValueError(f"with {n_conditions} condition(s), either {n_conditions} or {n_conditions + 1} "
                         f"functions are expected; got {n_functions}")
    from ._creation import asarray

    conditions = asarray(condlist, dtype=dtypes.bool_)
    # The functions are static (compiled in), the constants traced: as JAX, one compile per set of functions.
    functions = tuple(f if callable(f) else None for f in funclist)
    constants = tuple(None if callable(f) else f for f in funclist)
    return _piecewise(x, conditions, constants, args, kw, functions=functions)


@functools.partial(jit, static_argnames=("functions",))
def _piecewise(x, conditions, constants, args, kw, *, functions):
    from ._reductions import argmax

    # Branch 0 is the default; the last true condition wins, which is where the running count first peaks.
    running = lax.cumsum(lax.convert_element_type(conditions, dtypes.int32), axis=0)
    running = lax.concatenate([lax.full((1,) + aval(running).shape[1:], 0, dtypes.int32), running], 0)
    branch = argmax(running, axis=0)
    dtype = aval(x).dtype

    def as_branch(f, constant):
        if f is not None:
            return lambda value: lax.convert_element_type(to_array(f(value, *args, **kw)), dtype)
        return lambda value: lax.convert_element_type(constant, dtype)

    branches = [as_branch(f, constant) for f, constant in zip(functions, constants)]
    return vectorize(lambda index, value: lax.switch(index, branches, value))(branch, x)


# --- constructing arrays ------------------------------------------------------------------------------------------
def fromfunction(function, shape, *, dtype=float, **kwargs):
    """`function(i, j, ...)` at every index of `shape`, through vmap: `function` sees scalar indices (of `dtype`),
    unlike numpy's whole index grids. Keyword arguments are passed to it unchanged."""
    from ._creation import arange

    dims = [concrete_or_error(d, "fromfunction's shape must be static") for d in
            (shape if np.iterable(shape) else (shape,))]
    try:
        shape = tuple(operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"shape argument of fromfunction must be a sequence of integers, got {shape!r}") from None
    function = functools.partial(function, **kwargs)
    for i in range(len(shape)):
        in_axes = tuple(0 if i == j else None for j in range(len(shape)))
        function = _vmap(function, in_axes=in_axes[::-1])
    return function(*(arange(size, dtype=dtype) for size in shape))


def choose(a, choices, out=None, mode="raise"):
    """`choices[a[idx]][idx]` at each index of the broadcast shape of `a` and the choices. `mode` handles indices
    outside [0, len(choices)): 'raise' (needs concrete `a`, so not under numax.jit), 'wrap' or 'clip'."""
    from ._creation import asarray

    if out is not None:
        raise NotImplementedError("The 'out' argument to choose is not supported: numax arrays are immutable")
    choices = list(choices)
    check_arraylike("choose", a, *choices)
    a = to_array(a)
    if not dtypes.issubdtype(aval(a).dtype, np.integer):
        raise ValueError("`a` array must be integer typed")
    count = len(choices)
    if mode == "raise":
        concrete = np.asarray(concrete_or_error(
            a, "choose with mode='raise' checks the indices, which needs their values; under numax.jit use "
               "mode='wrap' or mode='clip' instead"))
        if np.any((concrete < 0) | (concrete >= count)):
            raise ValueError("invalid entry in choice array")
    elif mode not in ("wrap", "clip"):
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    return _choose(a, [asarray(c) for c in choices], mode=mode)


@functools.partial(jit, static_argnames=("mode",))
def _choose(index, choices, *, mode):
    from ._logic import clip
    from ._shape import broadcast_arrays, stack
    from ._take import take_along_axis
    from ._ufuncs import remainder

    if mode == "wrap":
        index = remainder(index, len(choices))
    elif mode == "clip":
        index = clip(index, 0, len(choices) - 1)
    index, *choices = broadcast_arrays(index, *choices)
    index = lax.expand_dims(lax.convert_element_type(index, dtypes.int32), (0,))
    return lax.reshape(take_along_axis(stack(choices), index, axis=0), aval(index).shape[1:])


def block(arrays):
    """An array assembled from nested lists of blocks: the innermost lists are joined along the last axis, the
    next ones out along the one before, and so on (blocks are first given leading size-1 dimensions)."""
    result, _ = _block(arrays)
    return result


def _block(blocks):
    """The array assembled from `blocks`, and the list nesting depth below it."""
    from ._creation import asarray
    from ._shape import concatenate

    if isinstance(blocks, tuple):
        raise ValueError(f"numax.numpy.block does not allow tuples, got {blocks}")
    if not isinstance(blocks, list):
        return asarray(blocks), 1
    if not blocks:
        raise ValueError("numax.numpy.block does not allow empty list arguments")
    parts, depths = zip(*(_block(b) for b in blocks))
    if any(d != depths[0] for d in depths):
        raise ValueError("Mismatched list depths in numax.numpy.block")
    rank = max(depths[0], max(len(aval(p).shape) for p in parts))
    parts = [lax.reshape(p, (1,) * (rank - len(aval(p).shape)) + aval(p).shape) for p in parts]
    return concatenate(parts, axis=-depths[0]), depths[0] + 1
