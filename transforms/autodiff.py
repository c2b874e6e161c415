"""The differentiation API: `jvp`, `linearize`, `vjp`, `grad`, `value_and_grad`, `jacfwd`, `jacrev`,
`hessian`, with JAX's names, signatures, pytree handling and error messages.

Forward mode is the JVP interpreter; reverse mode is linearize followed by transposition.
"""

import functools

import numpy as np

from ..core import dtypes
from ..core import pytree as tree
from ..core.ad_util import Zero, tangent_dtype
from ..core.trace import get_aval_of
from ..lax.ad import instantiate
from ..lax.conversions import convert_element_type
from ..lax.shapes import full, reshape
from .jvp import instantiate_tangent, jvp_flat
from .linearize import LinearFunction, linearize_flat


# --- flattening user functions ------------------------------------------------------------------------
def _flat_function(fun, in_tree, has_aux, kwargs=None):
    """`fun` over flat leaves; records the output tree (and aux tree) on the returned function."""
    kwargs = kwargs or {}

    def flat(*leaves):
        out = fun(*tree.tree_unflatten(in_tree, leaves), **kwargs)
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError("has_aux=True requires the function to return a pair (output, auxiliary data), "
                                f"got {type(out).__name__}")
            out, aux = out
            aux_leaves, flat.aux_tree = tree.tree_flatten(aux)
        else:
            aux_leaves = []
        out_leaves, flat.out_tree = tree.tree_flatten(out)
        for leaf in out_leaves:
            get_aval_of(leaf)  # outputs must be arrays
        flat.num_aux = len(aux_leaves)
        return list(out_leaves) + list(aux_leaves)

    return flat


def _check_arrays(name, leaves):
    for leaf in leaves:
        try:
            get_aval_of(leaf)
        except TypeError:
            raise TypeError(f"{name}: argument of type {type(leaf).__name__} is not a valid array type") from None


# --- forward mode ----------------------------------------------------------------------------------------
def jvp(fun, primals, tangents, has_aux=False):
    """`(fun(*primals), d fun(primals) . tangents)`: the Jacobian-vector product, computed forward."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to numax.jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise TypeError(f"numax.jvp got {len(primals)} primals and {len(tangents)} tangents; they must match")
    primal_leaves, in_tree = tree.tree_flatten(tuple(primals))
    tangent_leaves, tangent_tree = tree.tree_flatten(tuple(tangents))
    if in_tree != tangent_tree:
        raise TypeError(f"primal and tangent arguments to numax.jvp must have the same tree structure; primals "
                        f"have structure {in_tree} and tangents have structure {tangent_tree}")
    _check_arrays("jvp", primal_leaves)
    tangent_values = [_checked_tangent(p, t) for p, t in zip(primal_leaves, tangent_leaves)]
    flat = _flat_function(fun, in_tree, has_aux)
    primal_out, tangent_out = jvp_flat(flat, primal_leaves, tangent_values)
    n = len(primal_out) - flat.num_aux
    out_primals = tree.tree_unflatten(flat.out_tree, primal_out[:n])
    out_tangents = tree.tree_unflatten(flat.out_tree, [_materialize(t) for t in tangent_out[:n]])
    if has_aux:
        return out_primals, out_tangents, tree.tree_unflatten(flat.aux_tree, primal_out[n:])
    return out_primals, out_tangents


def _checked_tangent(primal, tangent):
    p_aval = get_aval_of(primal)
    expected = tangent_dtype(p_aval.dtype)
    t_dtype = np.dtype(getattr(tangent, "dtype", None) or dtypes.dtype(tangent))
    if expected == dtypes.float0:
        if t_dtype != dtypes.float0:
            raise TypeError(f"primal and tangent arguments to numax.jvp do not match; dtypes must be equal, or "
                            f"in case of int/bool primal dtype the tangent dtype must be float0. Got primal "
                            f"dtype {p_aval.dtype} and so expected tangent dtype float0, but got tangent dtype "
                            f"{t_dtype} instead.")
        return Zero(p_aval.update(dtype=dtypes.float0, weak_type=False))
    t_aval = get_aval_of(tangent)
    if t_aval.dtype != expected:
        raise TypeError(f"primal and tangent arguments to numax.jvp do not match; dtypes must be equal, or in "
                        f"case of int/bool primal dtype the tangent dtype must be float0. Got primal dtype "
                        f"{p_aval.dtype} and so expected tangent dtype {expected}, but got tangent dtype "
                        f"{t_aval.dtype} instead.")
    if t_aval.shape != p_aval.shape:
        raise ValueError(f"numax.jvp called with different primal and tangent shapes; got primal shape "
                         f"{p_aval.shape} and tangent shape as {t_aval.shape}")
    return tangent


def _materialize(tangent):
    return instantiate_tangent(tangent)


def _not_yet(function, option, value, default):
    """JAX 0.11's newer autodiff options: accepted at their defaults, else a NotImplementedError naming them."""
    if value is not default:
        raise NotImplementedError(f"numax.{function}: the `{option}` option (new in JAX 0.11) is not supported yet")


def linearize(fun, *primals, has_aux=False, in_nzs=None):
    """`(fun(*primals), f_jvp)` where `f_jvp(*tangents)` evaluates the linearized function (its program
    holds only tangent work; the primal computation is done once, here). With `has_aux`, `fun` returns
    `(output, aux)` and linearize returns `(output, f_jvp, aux)`."""
    _not_yet("linearize", "in_nzs", in_nzs, None)
    primal_leaves, in_tree = tree.tree_flatten(primals)
    _check_arrays("linearize", primal_leaves)
    flat = _flat_function(fun, in_tree, has_aux)
    primal_out, linear = linearize_flat(flat, primal_leaves)
    n = len(primal_out) - flat.num_aux
    out_tree = flat.out_tree

    def f_jvp(*tangents):
        tangent_leaves, tangent_tree = tree.tree_flatten(tangents)
        if tangent_tree != in_tree:
            raise TypeError(f"linearized function called with tangents structured as {tangent_tree}, expected "
                            f"{in_tree}")
        values = [_checked_tangent(p, t) for p, t in zip(primal_leaves, tangent_leaves)]
        return tree.tree_unflatten(out_tree, [_materialize(t) for t in linear.apply(values)[:n]])

    f_jvp.linear = linear
    out = tree.tree_unflatten(out_tree, primal_out[:n])
    if has_aux:
        return out, f_jvp, tree.tree_unflatten(flat.aux_tree, primal_out[n:])
    return out, f_jvp


# --- reverse mode ----------------------------------------------------------------------------------------
def vjp(fun, *primals, has_aux=False, reduce_axes=(), saveable_args=True, in_nzs=None):
    """`(fun(*primals), vjp_fun)`: `vjp_fun(cotangent)` is the tuple of cotangents of the primals.
    (`reduce_axes` is JAX's removed option: accepted empty only, as in JAX.)"""
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to vjp is deprecated")
    _not_yet("vjp", "saveable_args", saveable_args, True)
    _not_yet("vjp", "in_nzs", in_nzs, None)
    primal_leaves, in_tree = tree.tree_flatten(primals)
    _check_arrays("vjp", primal_leaves)
    flat = _flat_function(fun, in_tree, has_aux)
    primal_out, linear = linearize_flat(flat, primal_leaves)
    n = len(primal_out) - flat.num_aux
    out_tree = flat.out_tree
    # A Partial over the residuals, as jax's: a pytree whose leaves are the residual arrays, so the pullback can
    # be returned from make_jaxpr or jit and passed into jit as an argument.
    vjp_fun = tree.Partial(_VJPFunction(linear, in_tree, out_tree, primal_leaves), linear.residuals)
    out = tree.tree_unflatten(out_tree, primal_out[:n])
    if has_aux:
        return out, vjp_fun, tree.tree_unflatten(flat.aux_tree, primal_out[n:])
    return out, vjp_fun


class _VJPFunction:
    """The static part of the pullback `vjp` returns: (residuals, output cotangents) -> tuple of input
    cotangents. Its residuals come in as an argument (the leaves of the Partial wrapping it), so that they can
    be tracers of another transformation than the one that computed them. It keeps no residuals itself: as
    part of a treedef it may live in jit's caches."""

    def __init__(self, linear, in_tree, out_tree, primal_leaves):
        self.linear = LinearFunction(linear.program, [], linear.in_avals, linear.out_avals, linear.in_linear,
                                     linear.out_nonzero)
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.in_avals = [get_aval_of(p) for p in primal_leaves]

    def __call__(self, residuals, cotangent):
        ct_leaves, ct_tree = tree.tree_flatten(cotangent)
        if ct_tree != self.out_tree:
            raise TypeError(f"Tree structure of cotangent input {ct_tree}, does not match structure of primal "
                            f"output {self.out_tree}.")
        cts = [_checked_cotangent(ct, aval) for ct, aval in zip(ct_leaves, self.linear.out_avals)]
        static = self.linear
        linear = LinearFunction(static.program, list(residuals), static.in_avals, static.out_avals,
                                static.in_linear, static.out_nonzero)
        cts_in = linear.transpose(cts)
        leaves = [_input_cotangent(ct, aval) for ct, aval in zip(cts_in, self.in_avals)]
        return tuple(tree.tree_unflatten(self.in_tree, leaves))


def _checked_cotangent(ct, aval):
    ct_aval = get_aval_of(ct)
    expected = tangent_dtype(aval.dtype)
    if expected == dtypes.float0:
        return Zero(aval.update(dtype=dtypes.float0, weak_type=False))
    if ct_aval.dtype != expected:
        if ct_aval.weak_type and not ct_aval.shape:
            return full((), ct, expected)
        raise TypeError(f"Type of cotangent input to vjp pullback function ({ct_aval.dtype}) is not the expected "
                        f"tangent type ({expected}) of corresponding primal output with dtype {aval.dtype}.")
    if ct_aval.shape != aval.shape:
        raise ValueError(f"Shape of cotangent input to vjp pullback function {ct_aval.shape} must be the same as "
                         f"the shape of corresponding primal input {aval.shape}.")
    return ct


def _input_cotangent(ct, aval):
    """An input's cotangent as the user sees it: materialized, float0 for integer inputs, and typed like
    the primal (weakly typed for a Python scalar input, as in JAX)."""
    if ct is None:
        return np.zeros(aval.shape, dtypes.float0)
    ct = instantiate(ct)
    if get_aval_of(ct).weak_type != aval.weak_type and dtypes.is_inexact(aval.dtype):
        ct = convert_element_type(ct, aval.dtype, aval.weak_type)
    return ct


def _normalize_argnums(argnums, num_args, name):
    multiple = not isinstance(argnums, int)
    nums = tuple(argnums) if multiple else (argnums,)
    for i in nums:
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"{name}: argnums must be an int or a tuple of ints, got {argnums!r}")
        if not -num_args <= i < num_args:
            raise TypeError(f"differentiating with respect to argnums={argnums} requires at least {max(nums) + 1} "
                            f"positional arguments to be passed by the caller, but got only {num_args} positional "
                            "arguments.")
    return tuple(int(i) % num_args for i in nums), multiple


def _check_input_dtype(name, leaf, holomorphic, allow_int):
    dtype = get_aval_of(leaf).dtype
    if holomorphic:
        if not dtypes.is_complex(dtype):
            raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, but got {dtype}.")
        return
    if dtypes.is_inexact(dtype):
        return
    if dtype == dtypes.float0 or allow_int:
        return
    raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
                    f"np.inexact), but got {dtype}. If you want to use Boolean- or integer-valued inputs, use vjp "
                    "or set allow_int to True.")


def _check_input_dtypes(name, leaves, in_tree, holomorphic, allow_int):
    """The Jacobians' input check. As jax's, it maps over the input tree, building it again with None leaves: a
    custom node whose unflatten cannot take None fails here, as under jax."""
    tree.tree_unflatten(in_tree, [_check_input_dtype(name, leaf, holomorphic, allow_int) for leaf in leaves])


def _check_scalar_output(name, out, holomorphic):
    aval = get_aval_of(out)
    if aval.shape:
        raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: {aval.shape}.")
    if holomorphic:
        if not dtypes.is_complex(aval.dtype):
            raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, but got "
                            f"{aval.dtype}.")
    elif not dtypes.is_float(aval.dtype):
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
                        f"but got {aval.dtype}. For holomorphic differentiation, pass holomorphic=True. For "
                        "differentiation of non-holomorphic functions involving complex outputs, use numax.vjp "
                        "directly.")
    return aval


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """`(fun(*args), grad(fun)(*args))` in one pass."""
    name = getattr(fun, "__name__", "function")

    @functools.wraps(fun)
    def value_and_grad_fun(*args, **kwargs):
        nums, multiple = _normalize_argnums(argnums, len(args), "value_and_grad")
        dyn = tuple(args[i] for i in nums)
        for leaf in tree.tree_leaves(dyn):
            _check_input_dtype("grad", leaf, holomorphic, allow_int)

        def partial(*dyn_args):
            full_args = list(args)
            for i, value in zip(nums, dyn_args):
                full_args[i] = value
            return fun(*full_args, **kwargs)

        result = vjp(partial, *dyn, has_aux=has_aux)
        out, pullback = result[0], result[1]
        aval = _check_scalar_output("grad", out, holomorphic)
        grads = pullback(full((), 1, aval.dtype))
        grads = grads if multiple else grads[0]
        if has_aux:
            return (out, result[2]), grads
        return out, grads

    value_and_grad_fun.__name__ = f"value_and_grad({name})"
    return value_and_grad_fun


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """The gradient of a scalar function with respect to the arguments at `argnums`."""
    value_and_grad_fun = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

    @functools.wraps(fun)
    def grad_fun(*args, **kwargs):
        (_, aux), g = value_and_grad_fun(*args, **kwargs) if has_aux else (
            (None, None), value_and_grad_fun(*args, **kwargs)[1])
        return (g, aux) if has_aux else g

    grad_fun.__name__ = f"grad({getattr(fun, '__name__', 'function')})"
    return grad_fun


# --- Jacobians ------------------------------------------------------------------------------------------
# A Jacobian is one linearization pushed forward (or pulled back) along every basis vector at once: the
# linear map is vmapped over the standard basis, so no Python loop runs per element.
def _standard_basis(avals):
    """The N basis vectors of the flattened space of `avals`, as one (N, *shape) array per leaf."""
    sizes = [int(np.prod(a.shape, dtype=np.int64)) for a in avals]
    total, offset, basis = sum(sizes), 0, []
    for aval, size in zip(avals, sizes):
        block = np.zeros((total, size), tangent_dtype(aval.dtype))
        block[offset:offset + size] = np.eye(size, dtype=block.dtype)
        basis.append(block.reshape((total,) + tuple(aval.shape)))
        offset += size
    return basis, sizes


def _along_basis(linear_map, avals):
    """`linear_map` applied to every basis vector of `avals`: one (N, *shape) array per output."""
    from .vmap import vmap

    basis, sizes = _standard_basis(avals)
    if sum(sizes) == 0:
        return None, sizes
    return vmap(lambda *vectors: linear_map(list(vectors)))(*basis), sizes


def _block(rows, offset, size, leading_shape, trailing_shape, rows_lead):
    """Rows [offset, offset + size) of a stacked map as a leading_shape + trailing_shape Jacobian block;
    `rows_lead` says whether the stacked axis belongs to the leading (output) side."""
    from ..lax.shapes import transpose
    from ..lax.slicing import slice_in_dim

    part = slice_in_dim(rows, offset, offset + size, axis=0)
    if rows_lead:
        return reshape(part, tuple(leading_shape) + tuple(trailing_shape))
    part = reshape(part, (size,) + tuple(leading_shape))
    rank = len(leading_shape)
    part = transpose(part, tuple(range(1, rank + 1)) + (0,))
    return reshape(part, tuple(leading_shape) + tuple(trailing_shape))


def _argnums_partial(fun, args, kwargs, argnums, name):
    nums, multiple = _normalize_argnums(argnums, len(args), name)

    def partial(*dyn_args):
        full_args = list(args)
        for i, value in zip(nums, dyn_args):
            full_args[i] = value
        return fun(*full_args, **kwargs)

    return partial, tuple(args[i] for i in nums), multiple


def _structured(blocks, out_tree, dyn_tree, multiple):
    """blocks[j][i] (output leaf j, input leaf i) arranged as the output tree of input trees."""
    rows = []
    for row in blocks:
        structured = tree.tree_unflatten(dyn_tree, row)
        rows.append(structured if multiple else structured[0])
    return tree.tree_unflatten(out_tree, rows)


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian by forward mode. Each output leaf gets the shape of each input appended."""

    def jacobian(*args, **kwargs):
        partial, dyn, multiple = _argnums_partial(fun, args, kwargs, argnums, "jacfwd")
        dyn_leaves, dyn_tree = tree.tree_flatten(dyn)
        _check_input_dtypes("jacfwd", dyn_leaves, dyn_tree, holomorphic, False)
        flat = _flat_function(partial, dyn_tree, has_aux)
        primal_out, linear = linearize_flat(flat, dyn_leaves)
        n = len(primal_out) - flat.num_aux
        in_avals, out_avals = linear.in_avals, linear.out_avals
        columns, sizes = _along_basis(lambda ts: [_materialize(t) for t in linear.apply(ts)], in_avals)
        blocks = []
        for j, out_aval in enumerate(out_avals):
            row, offset = [], 0
            for aval, size in zip(in_avals, sizes):
                shape = out_aval.shape + aval.shape
                row.append(full(shape, 0, out_aval.dtype) if columns is None else
                           _block(columns[j], offset, size, out_aval.shape, aval.shape, rows_lead=False))
                offset += size
            blocks.append(row)
        jac = _structured(blocks, flat.out_tree, dyn_tree, multiple)
        if has_aux:
            return jac, tree.tree_unflatten(flat.aux_tree, primal_out[n:])
        return jac

    return jacobian


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """The Jacobian by reverse mode. Each output leaf gets the shape of each input appended."""

    def jacobian(*args, **kwargs):
        partial, dyn, multiple = _argnums_partial(fun, args, kwargs, argnums, "jacrev")
        dyn_leaves, dyn_tree = tree.tree_flatten(dyn)
        _check_input_dtypes("jacrev", dyn_leaves, dyn_tree, holomorphic, allow_int)
        flat = _flat_function(partial, dyn_tree, has_aux)
        primal_out, linear = linearize_flat(flat, dyn_leaves)
        n = len(primal_out) - flat.num_aux
        out_avals, in_avals = linear.out_avals, linear.in_avals
        linear_inputs = [i for i, is_linear in enumerate(linear.in_linear) if is_linear]

        def pull_back(cts):
            cts_in = linear.transpose(cts)
            return [_input_cotangent(cts_in[i], in_avals[i]) for i in linear_inputs]

        rows, sizes = _along_basis(pull_back, out_avals)
        blocks = []
        offset = 0
        for out_aval, size in zip(out_avals, sizes):
            row = []
            for i, aval in enumerate(in_avals):
                shape = out_aval.shape + aval.shape
                if i not in linear_inputs:
                    row.append(np.zeros(shape, dtypes.float0))
                elif rows is None:
                    row.append(full(shape, 0, out_aval.dtype))
                else:
                    row.append(_block(rows[linear_inputs.index(i)], offset, size, out_aval.shape, aval.shape,
                                      rows_lead=True))
            blocks.append(row)
            offset += size
        jac = _structured(blocks, flat.out_tree, dyn_tree, multiple)
        if has_aux:
            return jac, tree.tree_unflatten(flat.aux_tree, primal_out[n:])
        return jac

    return jacobian


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Hessian: forward-over-reverse, `jacfwd(jacrev(fun))`."""
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)
