"""Primitives defined only through jax's public extension API, as equinox and other libraries define theirs:
`jax.extend.core.Primitive` with `def_impl` / `def_abstract_eval`, JVP rules in `jax.interpreters.ad.primitive_jvps`,
transpose rules in `primitive_transposes` (called with `UndefinedPrimal`s and symbolic `Zero` cotangents), batching
rules in `batching.primitive_batchers` and in the tables that pass the vmap's axis (`fancy_primitive_batchers`,
`axis_primitive_batchers`), and lowerings through `mlir.register_lowering(p, mlir.lower_fun(...))`.

Every primitive is written once, as a function of the library's modules, and built twice: through jax's API and
through numax's (`numax.extend.core`, `numax.interpreters.*`, no switch). Both must give the same values under eager
application, jit, grad, jvp, vjp, vmap and their compositions, and call the rules with the same kinds of arguments
(which tangents are symbolic zeros, which inputs are undefined in a transpose, which batch axes a rule sees, and
that rules get their operands as tuples, as jax passes them)."""

import types

import jax
import jax.extend.core
import jax.interpreters.ad
import jax.interpreters.batching
import jax.interpreters.mlir
import jax.numpy as jnp
import numpy as np
import pytest

import numax
import numax.extend.core
import numax.interpreters.ad
import numax.interpreters.batching
import numax.interpreters.mlir
import numax.numpy as xnp


def _api(lib, numpy, core, ad, batching, mlir):
    return types.SimpleNamespace(lib=lib, jnp=numpy, lax=lib.lax, core=core, ad=ad, batching=batching, mlir=mlir)


JAX = _api(jax, jnp, jax.extend.core, jax.interpreters.ad, jax.interpreters.batching, jax.interpreters.mlir)
NUMAX = _api(numax, xnp, numax.extend.core, numax.interpreters.ad, numax.interpreters.batching,
             numax.interpreters.mlir)


def assert_same(jax_value, numax_value, rtol=1e-6):
    jax_leaves, numax_leaves = jax.tree.leaves(jax_value), numax.tree.leaves(numax_value)
    assert len(jax_leaves) == len(numax_leaves) > 0
    for expected, actual in zip(jax_leaves, numax_leaves):
        expected, actual = np.asarray(expected), np.asarray(actual)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual, expected)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-6)


def _zero_pattern(L, values):
    return tuple(type(v) is L.ad.Zero for v in values)


def _axis_name(name):
    """A vmap's axis name as recorded: a given name, or None for an unnamed axis (which jax names by an object)."""
    return name if isinstance(name, str) else None


def _undefined_pattern(L, values):
    return tuple(L.ad.is_undefined_primal(v) for v in values)


# --- the primitives, each written once against a library `L` -----------------------------------------------------
def axpy_primitive(L, seen):
    """`a * x + y`, linear in (x, y) for a fixed `a`: a JVP over symbolic-zero tangents whose tangent is the
    primitive itself applied to the tangents of (x, y), so reverse mode needs its transpose rule (written directly
    into `primitive_transposes`); a batching rule that moves batch axes to the front; a `lower_fun` lowering."""
    axpy_p = L.core.Primitive("axpy")
    axpy_p.def_impl(lambda a, x, y: a * x + y)
    axpy_p.def_abstract_eval(lambda a, x, y: y)

    def jvp(primals, tangents):
        a, x, y = primals
        ta, tx, ty = tangents
        seen.add(("jvp", type(primals).__name__, type(tangents).__name__, _zero_pattern(L, tangents)))
        out = axpy_p.bind(a, x, y)
        if type(tx) is L.ad.Zero and type(ty) is L.ad.Zero:
            tangent = L.ad.Zero(tx.aval)
        else:
            tangent = axpy_p.bind(a, L.ad.instantiate_zeros(tx), L.ad.instantiate_zeros(ty))
        if type(ta) is not L.ad.Zero:
            tangent = ta * x if type(tangent) is L.ad.Zero else tangent + ta * x
        return out, tangent

    def transpose(ct, a, x, y):
        assert not L.ad.is_undefined_primal(a), "a is never linear"
        seen.add(("transpose", type(ct) is L.ad.Zero, _undefined_pattern(L, (a, x, y))))
        if type(ct) is L.ad.Zero:
            return [None, L.ad.Zero(x.aval) if L.ad.is_undefined_primal(x) else None,
                    L.ad.Zero(y.aval) if L.ad.is_undefined_primal(y) else None]
        return [None, a * ct if L.ad.is_undefined_primal(x) else None, ct if L.ad.is_undefined_primal(y) else None]

    def batch(values, dims):
        seen.add(("batch", type(values).__name__, type(dims).__name__, tuple(dims)))
        size = next(v.shape[d] for v, d in zip(values, dims) if d is not None)
        moved = [L.jnp.moveaxis(v, d, 0) if d is not None else L.jnp.broadcast_to(v, (size,) + L.jnp.shape(v))
                 for v, d in zip(values, dims)]
        return axpy_p.bind(*moved), 0

    L.ad.primitive_jvps[axpy_p] = jvp
    L.ad.primitive_transposes[axpy_p] = transpose
    L.batching.primitive_batchers[axpy_p] = batch
    assert L.ad.primitive_jvps[axpy_p] is jvp and L.ad.primitive_transposes[axpy_p] is transpose
    L.mlir.register_lowering(axpy_p, L.mlir.lower_fun(lambda a, x, y: a * x + y, multiple_results=False))
    return axpy_p


def sincos_primitive(L, seen):
    """`(sin x, cos x)`, a primitive of several results: lists of tangents, a batching rule giving one batch axis
    per result, a `lower_fun(multiple_results=True)` lowering."""
    sincos_p = L.core.Primitive("sincos")
    sincos_p.multiple_results = True
    sincos_p.def_impl(lambda x: [L.jnp.sin(x), L.jnp.cos(x)])
    sincos_p.def_abstract_eval(lambda x: [x, x])

    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        seen.add(("jvp", _zero_pattern(L, tangents)))
        sin, cos = sincos_p.bind(x)
        return [sin, cos], [cos * t, -sin * t]

    def batch(values, dims):
        seen.add(("batch", tuple(dims)))
        return sincos_p.bind(*values), [dims[0], dims[0]]

    L.ad.primitive_jvps[sincos_p] = jvp
    L.batching.primitive_batchers[sincos_p] = batch
    L.mlir.register_lowering(sincos_p, L.mlir.lower_fun(lambda x: [L.jnp.sin(x), L.jnp.cos(x)]))
    return sincos_p


def fork_primitive(L, seen):
    """`x -> (x * 2, x * -3)`, linear with several results: its transpose sees a list of cotangents, a symbolic
    `Zero` for a result that does not reach the output."""
    fork_p = L.core.Primitive("fork")
    fork_p.multiple_results = True
    fork_p.def_impl(lambda x: [x * 2.0, x * -3.0])
    fork_p.def_abstract_eval(lambda x: [x, x])

    def jvp(primals, tangents):
        return fork_p.bind(*primals), fork_p.bind(L.ad.instantiate_zeros(tangents[0]))

    def transpose(cts, x):
        seen.add(("transpose", _zero_pattern(L, cts), _undefined_pattern(L, (x,))))
        total = L.ad.Zero(x.aval)
        for ct, factor in zip(cts, (2.0, -3.0)):
            if type(ct) is not L.ad.Zero:
                total = ct * factor if type(total) is L.ad.Zero else total + ct * factor
        return [total]

    L.ad.primitive_jvps[fork_p] = jvp
    L.ad.primitive_transposes[fork_p] = transpose
    L.batching.primitive_batchers[fork_p] = lambda values, dims: (fork_p.bind(*values), [dims[0], dims[0]])
    L.mlir.register_lowering(fork_p, L.mlir.lower_fun(lambda x: [x * 2.0, x * -3.0], multiple_results=True))
    return fork_p


def batch_mean_primitive(L, seen):
    """The identity outside vmap; under vmap every example sees the mean over the batch (an unbatched result).
    Its rule reads the vmap's axis from `fancy_primitive_batchers`' `axis_data`."""
    batch_mean_p = L.core.Primitive("batch_mean")
    batch_mean_p.def_impl(lambda x: x)
    batch_mean_p.def_abstract_eval(lambda x: x)

    def batch(axis_data, values, dims):
        (x,), (d,) = values, dims
        seen.add(("fancy", axis_data.size, _axis_name(axis_data.name), type(dims).__name__, d))
        if d is None:
            return batch_mean_p.bind(x), None
        return L.jnp.sum(x, axis=d) / axis_data.size, None

    L.batching.fancy_primitive_batchers[batch_mean_p] = batch
    L.mlir.register_lowering(batch_mean_p, L.mlir.lower_fun(lambda x: x, multiple_results=False))
    return batch_mean_p


def scaled_by_axis_primitive(L, seen):
    """`x * factor`, whose batching rule (jax's older `axis_primitive_batchers` form) also scales by the vmap's
    axis size: the axis size and name reach the rule; the lowering takes the primitive's parameter."""
    scaled_p = L.core.Primitive("scaled_by_axis")
    scaled_p.def_impl(lambda x, *, factor: x * factor)
    scaled_p.def_abstract_eval(lambda x, *, factor: x)

    def batch(axis_size, axis_name, trace_type, values, dims, *, factor):
        seen.add(("axis", axis_size, _axis_name(axis_name), tuple(dims)))
        return scaled_p.bind(values[0], factor=factor * axis_size), dims[0]

    L.batching.axis_primitive_batchers[scaled_p] = batch
    L.mlir.register_lowering(scaled_p, L.mlir.lower_fun(lambda x, *, factor: x * factor, multiple_results=False))
    return scaled_p


# --- the same programs on both -------------------------------------------------------------------------------------
A = np.array([1.5, -2.0, 0.5], np.float32)
X = np.array([[1.0, 2.0, -3.0], [0.5, 4.0, 2.0]], np.float32)
Y = np.array([[2.0, -1.0, 0.5], [1.0, 3.0, -2.0]], np.float32)


def axpy_programs(L, seen):
    axpy_p = axpy_primitive(L, seen)

    def loss(a, x, y):
        return L.jnp.sum(L.jnp.tanh(axpy_p.bind(a, x, y)) ** 2)

    return {
        "eager": lambda: axpy_p.bind(A, X[0], Y[0]),
        "jit": lambda: L.lib.jit(axpy_p.bind)(A, X[0], Y[0]),
        "grad_all": lambda: L.lib.grad(loss, argnums=(0, 1, 2))(A, X[0], Y[0]),
        "grad_x": lambda: L.lib.grad(loss, argnums=1)(A, X[0], Y[0]),
        "grad_y_jit": lambda: L.lib.jit(L.lib.grad(loss, argnums=2))(A, X[0], Y[0]),
        "jvp": lambda: L.lib.jvp(loss, (A, X[0], Y[0]), (A, Y[0], X[0])),
        "jvp_a_only": lambda: L.lib.jvp(lambda a: axpy_p.bind(a, X[0], Y[0]), (A,), (A * 2,)),
        "vjp": lambda: L.lib.vjp(lambda x, y: axpy_p.bind(A, x, y), X[0], Y[0])[1](A),
        "linearize": lambda: L.lib.linearize(lambda x: axpy_p.bind(A, x, Y[0]), X[0])[1](Y[1]),
        "vmap": lambda: L.lib.vmap(axpy_p.bind, in_axes=(None, 0, 0))(A, X, Y),
        "vmap_axes": lambda: L.lib.jit(L.lib.vmap(axpy_p.bind, in_axes=(None, 1, 0)))(A, X.T, Y),
        "vmap_grad": lambda: L.lib.vmap(L.lib.grad(loss, argnums=(0, 1)), in_axes=(None, 0, 0))(A, X, Y),
        "grad_vmap": lambda: L.lib.grad(lambda x: L.jnp.sum(L.lib.vmap(axpy_p.bind, (None, 0, 0))(A, x, Y)))(X),
        "jit_vmap_jvp": lambda: L.lib.jit(L.lib.vmap(lambda x, t: L.lib.jvp(lambda x: loss(A, x, Y[0]), (x,), (t,))))(
            X, Y),
        "hessian": lambda: L.lib.hessian(loss, argnums=1)(A, X[0], Y[0]),
    }


def sincos_programs(L, seen):
    sincos_p = sincos_primitive(L, seen)

    def f(x):
        sin, cos = sincos_p.bind(x)
        return L.jnp.sum(sin * 2.0 + cos ** 2)

    return {
        "eager": lambda: sincos_p.bind(X),
        "jit": lambda: L.lib.jit(sincos_p.bind)(X),
        "grad": lambda: L.lib.grad(f)(X),
        "jit_grad": lambda: L.lib.jit(L.lib.grad(f))(X),
        "grad_of_one_result": lambda: L.lib.grad(lambda x: L.jnp.sum(sincos_p.bind(x)[1]))(X),
        "jvp": lambda: L.lib.jvp(sincos_p.bind, (X,), (Y,)),
        "vmap": lambda: L.lib.vmap(sincos_p.bind, in_axes=1)(X),
        "vmap_grad": lambda: L.lib.jit(L.lib.vmap(L.lib.grad(f)))(X),
    }


def fork_programs(L, seen):
    fork_p = fork_primitive(L, seen)
    weights = np.array([0.5, -1.0, 2.0], np.float32)
    first = lambda x: L.jnp.sum(fork_p.bind(x)[0] * weights)  # noqa: E731
    both = lambda x: L.jnp.sum(fork_p.bind(x)[0] * fork_p.bind(x)[1])  # noqa: E731
    return {
        "eager": lambda: fork_p.bind(X[0]),
        "grad_first_result": lambda: L.lib.grad(first)(X[0]),
        "jit_grad_first_result": lambda: L.lib.jit(L.lib.grad(first))(X[0]),
        "grad_both": lambda: L.lib.grad(both)(X[0]),
        "vjp": lambda: L.lib.vjp(fork_p.bind, X[0])[1]([Y[0], Y[1]]),
        "vmap_grad": lambda: L.lib.vmap(L.lib.grad(first))(X),
        "transpose": lambda: L.lib.linear_transpose(fork_p.bind, X[0])([Y[0], Y[1]]),
    }


def batch_axis_programs(L, seen):
    batch_mean_p, scaled_p = batch_mean_primitive(L, seen), scaled_by_axis_primitive(L, seen)
    return {
        "eager": lambda: (batch_mean_p.bind(X), scaled_p.bind(X, factor=2.0)),
        "jit": lambda: L.lib.jit(lambda x: (batch_mean_p.bind(x), scaled_p.bind(x, factor=2.0)))(X),
        "vmap_mean": lambda: L.lib.vmap(lambda x: batch_mean_p.bind(x) - x)(X),
        "vmap_mean_axis1": lambda: L.lib.jit(L.lib.vmap(lambda x: batch_mean_p.bind(x) * x, in_axes=1))(X),
        "nested_vmap_mean": lambda: L.lib.vmap(L.lib.vmap(batch_mean_p.bind), axis_name="rows")(X),
        "vmap_scaled": lambda: L.lib.vmap(lambda x: scaled_p.bind(x, factor=2.0), axis_name="batch")(X),
        "nested_vmap_scaled": lambda: L.lib.jit(L.lib.vmap(L.lib.vmap(lambda x: scaled_p.bind(x, factor=0.5)),
                                                           axis_name="outer"))(X),
    }


PROGRAMS = {"axpy": axpy_programs, "sincos": sincos_programs, "fork": fork_programs,
            "batch_axis": batch_axis_programs}
CASES = [(family, name) for family, make in PROGRAMS.items() for name in make(JAX, set())]


@pytest.mark.parametrize("family, name", CASES, ids=[f"{family}-{name}" for family, name in CASES])
def test_primitive_defined_through_the_api_gives_jaxs_results(family, name):
    results, seen = [], []
    for L in (JAX, NUMAX):
        calls = set()
        results.append(PROGRAMS[family](L, calls)[name]())
        seen.append(calls)
    assert_same(*results, rtol=1e-5)
    assert seen[0] == seen[1], f"the rules were called differently: jax {sorted(map(str, seen[0]))}, numax " \
                               f"{sorted(map(str, seen[1]))}"


# --- the names around the tables -----------------------------------------------------------------------------------
def test_make_jaxpr_shows_the_primitive_with_its_params():
    for L in (JAX, NUMAX):
        scaled_p = scaled_by_axis_primitive(L, set())
        closed = L.lib.make_jaxpr(lambda x: scaled_p.bind(x, factor=3.0))(X)
        (eqn,) = closed.jaxpr.eqns
        assert eqn.primitive is scaled_p and eqn.params == {"factor": 3.0}
        assert "scaled_by_axis" in str(closed)


def test_symbolic_zeros_and_tangent_types():
    for L in (JAX, NUMAX):
        aval = L.lib.typeof(np.arange(3, dtype=np.int32))
        tangent_aval = aval.to_tangent_aval()
        assert tangent_aval.shape == (3,) and tangent_aval.dtype == L.lib.dtypes.float0
        float_aval = L.lib.typeof(X)
        assert float_aval.to_tangent_aval() == float_aval
        zero = L.ad.Zero(float_aval)
        assert zero.aval == float_aval and type(zero) is L.ad.Zero
        np.testing.assert_array_equal(np.asarray(L.ad.instantiate_zeros(zero)), np.zeros_like(X))
        assert L.ad.instantiate_zeros(X) is X
        assert L.ad.is_undefined_primal(L.ad.UndefinedPrimal(float_aval))
        assert not L.ad.is_undefined_primal(X)


def test_mapped_and_unmapped_avals():
    for L in (JAX, NUMAX):
        aval = L.lib.typeof(X)  # f32[2, 3]
        assert L.core.mapped_aval(3, 1, aval).shape == (2,)
        assert L.core.unmapped_aval(4, 0, aval).shape == (4, 2, 3)
        assert L.core.unmapped_aval(4, 2, aval).shape == (2, 3, 4)
        assert L.core.mapped_aval(2, None, aval) == aval and L.core.unmapped_aval(2, None, aval) == aval
        assert L.core.mapped_aval(2, 0, aval).dtype == np.float32


def test_jaxprs_held_in_params_are_found():
    for L in (JAX, NUMAX):
        closed = L.lib.make_jaxpr(lambda x: L.lib.jit(lambda y: y * 2.0)(x) + 1.0)(X)
        inner = [jaxpr for eqn in closed.jaxpr.eqns for jaxpr in L.core.jaxprs_in_params(eqn.params)]
        assert len(inner) == 1 and [e.primitive.name for e in inner[0].eqns] == ["mul"]
        assert len(list(L.core.subjaxprs(closed.jaxpr))) == 1


def test_deflinear_and_defbilinear_take_jaxs_rule_forms():
    results = []
    for L in (JAX, NUMAX):
        double_p = L.core.Primitive("double")
        double_p.def_impl(lambda x: x * 2.0)
        double_p.def_abstract_eval(lambda x: x)
        L.ad.deflinear(double_p, lambda ct: [ct * 2.0])  # jax's form: the rule does not see the inputs
        L.mlir.register_lowering(double_p, L.mlir.lower_fun(lambda x: x * 2.0, multiple_results=False))

        outer_p = L.core.Primitive("outer")
        outer_p.def_impl(lambda x, y: x[:, None] * y[None, :])
        outer_p.def_abstract_eval(lambda x, y: x.update(shape=(x.shape[0], y.shape[0])))
        # jax's form: the undefined input arrives as an UndefinedPrimal
        L.ad.defbilinear(outer_p, lambda ct, x, y: ct @ y, lambda ct, x, y: x @ ct)
        L.mlir.register_lowering(outer_p, L.mlir.lower_fun(lambda x, y: x[:, None] * y[None, :], False))
        assert L.ad.get_primitive_transpose(double_p) is L.ad.primitive_transposes[double_p]
        with pytest.raises(NotImplementedError, match="outer_never_transposed"):
            L.ad.get_primitive_transpose(L.core.Primitive("outer_never_transposed"))

        def f(x, y):
            return L.jnp.sum(L.jnp.sin(outer_p.bind(double_p.bind(x), y)))

        results.append((L.lib.grad(f, argnums=(0, 1))(X[0], Y[0]), L.lib.jit(L.lib.grad(f))(X[0], Y[1]),
                        L.lib.jvp(f, (X[0], Y[0]), (Y[0], X[0]))))
    assert_same(*results, rtol=1e-5)


def test_a_primitive_without_a_transpose_rule_cannot_be_reverse_differentiated():
    results = []
    for L in (JAX, NUMAX):
        half_p = L.core.Primitive("half_without_transpose")
        half_p.def_impl(lambda x: x * 0.5)
        half_p.def_abstract_eval(lambda x: x)
        L.ad.primitive_jvps[half_p] = lambda primals, tangents: (half_p.bind(*primals), half_p.bind(*tangents))
        L.mlir.register_lowering(half_p, L.mlir.lower_fun(lambda x: x * 0.5, multiple_results=False))
        results.append(L.lib.jvp(half_p.bind, (X,), (Y,)))  # forward mode needs no transpose
        with pytest.raises(NotImplementedError, match="half_without_transpose"):
            L.lib.grad(lambda x: L.jnp.sum(half_p.bind(x)))(X[0])
    assert_same(*results)
