"""The `numax.vmap` API against `jax.vmap`: in_axes/out_axes specifications, kwargs, axis_size, nesting,
errors, closures over tracers of outer transformations, weak types and Python scalars."""

import numpy as np
import pytest
from harness import assert_close, jax, jnp
from hypothesis import given, settings
from hypothesis import strategies as st

import numax
import numax.numpy as mnp


def check(f_numax, f_jax, *args, jit=True, **vmap_kwargs):
    """numax.vmap(f_numax)(*args) equals jax.vmap(f_jax)(*args): values, dtypes, weak types and tree."""
    expected = jax.vmap(f_jax, **vmap_kwargs)(*args)
    ours = numax.vmap(f_numax, **vmap_kwargs)
    for result in [ours(*args)] + ([numax.jit(ours)(*args)] if jit else []):
        assert jax.tree_util.tree_structure(result) == jax.tree_util.tree_structure(expected)
        for a, b in zip(jax.tree_util.tree_leaves(result), jax.tree_util.tree_leaves(expected)):
            assert_close(a, b)
            assert getattr(a, "weak_type", False) == getattr(b, "weak_type", False)
    return expected


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("in_axes", [0, 1, -1, -2, (0, 1), [1, 0], (None, 0), (-1, None)])
def test_in_axes_ints_tuples_lists(rng, in_axes):
    x, y = f32(rng, 3, 3), f32(rng, 3, 3)
    check(lambda a, b: a * 2.0 + b, lambda a, b: a * 2.0 + b, x, y, in_axes=in_axes)


def test_in_axes_dict_and_nested_prefix(rng):
    params = {"w": f32(rng, 4, 3), "b": f32(rng, 3)}
    xs = (f32(rng, 4, 2), [f32(rng, 2, 4)])

    def model(p, inputs):
        first, (second,) = inputs
        return {"out": p["w"].sum() * first + second.T.sum(), "bias": p["b"]}

    check(model, model, params, xs, in_axes=({"w": 0, "b": None}, (0, [1])), out_axes={"out": 0, "bias": None})
    # a None in a prefix position covers a whole subtree
    check(model, model, params, xs, in_axes=(None, (0, [1])), out_axes={"out": 1, "bias": None})


def test_in_axes_none_leaves_argument_unbatched(rng):
    x, w = f32(rng, 5, 2), f32(rng, 2)
    check(lambda a, b: a @ b, lambda a, b: a @ b, x, w, in_axes=(0, None))


@pytest.mark.parametrize("out_axes", [0, 1, -1, 2, -3])
def test_out_axes_positions(rng, out_axes):
    x = f32(rng, 4, 2, 3)
    check(lambda a: mnp.sin(a), lambda a: jnp.sin(a), x, out_axes=out_axes)


def test_out_axes_pytree_and_none_for_unbatched_outputs(rng):
    x, w = f32(rng, 4, 3), f32(rng, 3)

    def f(a, b):
        return {"per_example": a * b, "shared": b * 2.0}, (a.sum(), b)

    check(f, f, x, w, in_axes=(0, None), out_axes=({"per_example": 1, "shared": None}, (0, None)))


def test_kwargs_are_mapped_at_axis_zero(rng):
    x, y = f32(rng, 4, 3), f32(rng, 4, 3)
    expected = jax.vmap(lambda a, b=None: a - b, in_axes=(1,))(x.T, b=y)
    assert_close(numax.vmap(lambda a, b=None: a - b, in_axes=(1,))(x.T, b=y), expected)
    expected = jax.vmap(lambda a, scale: a * scale["s"])(x, scale={"s": y})
    assert_close(numax.vmap(lambda a, scale: a * scale["s"])(x, scale={"s": y}), expected)


def test_axis_size_with_all_none_in_axes(rng):
    w = f32(rng, 3)
    check(lambda a: a * 2.0, lambda a: a * 2.0, w, in_axes=None, axis_size=5)
    check(lambda a: a + 1.0, lambda a: a + 1.0, w, in_axes=(None,), axis_size=2, out_axes=1)
    # constant outputs are broadcast to the axis size
    check(lambda: mnp.float32(1.0), lambda: jnp.float32(1.0), in_axes=(), axis_size=3)


def test_axis_size_agreeing_and_disagreeing(rng):
    x = f32(rng, 4, 2)
    check(lambda a: a * 3.0, lambda a: a * 3.0, x, axis_size=4)
    with pytest.raises(ValueError, match="axis_size=5"):
        numax.vmap(lambda a: a, axis_size=5)(x)


@pytest.mark.parametrize("outer,inner", [(0, 0), (0, 1), (1, 0), (-1, 1), (2, 0)])
def test_nested_vmap_with_different_axes(rng, outer, inner):
    x = f32(rng, 2, 3, 4)
    y = f32(rng, 4)

    def nest(vmap, sin):
        return vmap(vmap(lambda a, b: sin(a) * b.sum(), in_axes=(inner, None)), in_axes=(outer, None), out_axes=1)

    assert_close(nest(numax.vmap, mnp.sin)(x, y), nest(jax.vmap, jnp.sin)(x, y))
    assert_close(numax.jit(nest(numax.vmap, mnp.sin))(x, y), nest(jax.vmap, jnp.sin)(x, y))


def test_inconsistent_sizes_name_each_argument():
    def f(alpha, beta, gamma, delta):
        return alpha

    args = (np.ones(3, np.float32), np.ones(3, np.float32), np.ones((2, 4), np.float32), np.ones(5, np.float32))
    with pytest.raises(ValueError) as info:
        numax.vmap(f, in_axes=(0, 0, 1, 0))(*args)
    message = str(info.value)
    assert message.startswith("vmap got inconsistent sizes for array axes to be mapped:")
    assert "most axes (2 of them) had size 3, e.g. axis 0 of argument alpha of type f32[3]" in message
    assert "one axis had size 4: axis 1 of argument gamma of type f32[2,4]" in message
    assert "one axis had size 5: axis 0 of argument delta of type f32[5]" in message
    with pytest.raises(ValueError, match=r"size 3: axis 0 of argument a of type f32\[3\];\n.*size 2: axis 0 of "
                                         r"argument b\['w'\] of type f32\[2\]"):
        numax.vmap(lambda a, **k: a)(np.ones(3, np.float32), b={"w": np.ones(2, np.float32)})


@pytest.mark.parametrize("in_axes,shape", [(2, (3, 2)), (-3, (3, 2)), (0, ())])
def test_in_axes_out_of_range(in_axes, shape):
    with pytest.raises(ValueError, match=f"vmap was requested to map its argument along axis {in_axes}, which "
                                         r"implies that its rank should be at least \d, but is only"):
        numax.vmap(lambda a: a, in_axes=in_axes)(np.ones(shape, np.float32))


@pytest.mark.parametrize("out_axes", [2, -3])
def test_out_axes_out_of_range(out_axes):
    with pytest.raises(ValueError, match=f"axis {out_axes} is out of bounds"):
        numax.vmap(lambda a: a, out_axes=out_axes)(np.ones((3, 2), np.float32))


def test_mapped_output_with_out_axes_none():
    with pytest.raises(ValueError, match="vmap has mapped output.* but out_axes is None"):
        numax.vmap(lambda a: a, out_axes=None)(np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="vmap has mapped output.* but out_axes is None"):
        numax.vmap(lambda a, b: (b, a), in_axes=(0, None), out_axes=(None, None))(np.ones(3), 1.0)


def test_specification_errors():
    x = np.ones((3, 2), np.float32)
    with pytest.raises(ValueError, match="at least one non-None value in in_axes or axis_size must be specified"):
        numax.vmap(lambda a: a, in_axes=None)(x)
    with pytest.raises(ValueError, match=r"len\(in_axes\)=2, len\(args\)=1"):
        numax.vmap(lambda a: a, in_axes=(0, 0))(x)
    with pytest.raises(TypeError, match="vmap in_axes must be an int, None, or"):
        numax.vmap(lambda a: a, in_axes=1.5)(x)
    with pytest.raises(ValueError, match="tree prefix"):
        numax.vmap(lambda a: a, in_axes=({"w": 0},))(x)


def test_python_scalars_with_in_axes_none(rng):
    x = f32(rng, 4)
    check(lambda a, s: a * s, lambda a, s: a * s, x, 2.5, in_axes=(0, None))
    check(lambda a, s: a + s, lambda a, s: a + s, np.arange(4, dtype=np.int32), 3, in_axes=(0, None))
    check(lambda s, a: s * a, lambda s, a: s * a, 2, x, in_axes=(None, 0))


def test_weak_types_preserved(rng):
    # unbatched weak outputs stay weak, batched strong ones stay strong
    check(lambda a: (a * 2, mnp.asarray(2.0)), lambda a: (a * 2, jnp.asarray(2.0)), f32(rng, 3), out_axes=(0, None))
    # an unbatched Python scalar output comes back as it was returned, as in JAX
    out = numax.vmap(lambda a: (a, 2.0), out_axes=(0, None))(f32(rng, 3))[1]
    assert out == jax.vmap(lambda a: (a, 2.0), out_axes=(0, None))(f32(rng, 3))[1] and type(out) is float
    check(lambda a, s: s + 1.0, lambda a, s: s + 1.0, f32(rng, 3), 2.0, in_axes=(0, None))
    check(lambda a, s: a + s, lambda a, s: a + s, f32(rng, 3), 2.0, in_axes=(0, None))
    expected = jax.vmap(lambda s: s * 2.0, in_axes=None, axis_size=3)(1.0)
    result = numax.vmap(lambda s: s * 2.0, in_axes=None, axis_size=3)(1.0)
    assert_close(result, expected)
    assert result.weak_type == expected.weak_type


def test_spmd_axis_name_is_accepted(rng):
    x = f32(rng, 4, 2)
    check(lambda a: a * 2.0, lambda a: a * 2.0, x, spmd_axis_name="data")
    check(lambda a: a * 2.0, lambda a: a * 2.0, x, axis_name="i", spmd_axis_name=("data",))


# --- closures over tracers of outer transformations ------------------------------------------------------
def test_vmap_inside_grad_closing_over_the_differentiated_value(rng):
    xs = f32(rng, 4, 3)

    def loss(vmap, sin):
        def f(w):
            return vmap(lambda x: (sin(x * w) * w).sum())(xs).sum()
        return f

    w = f32(rng, 3)
    assert_close(numax.grad(loss(numax.vmap, mnp.sin))(w), jax.grad(loss(jax.vmap, jnp.sin))(w))
    assert_close(numax.jit(numax.grad(loss(numax.vmap, mnp.sin)))(w), jax.grad(loss(jax.vmap, jnp.sin))(w))


def test_grad_inside_vmap_per_example_gradients(rng):
    xs, w = f32(rng, 5, 3), f32(rng, 3)

    def per_example(grad, sin):
        return lambda x: grad(lambda weights: (sin(weights * x) ** 2).sum())(w)

    check(per_example(numax.grad, mnp.sin), per_example(jax.grad, jnp.sin), xs)
    # and the weights closed over inside the grad are themselves batched
    check(lambda x: numax.grad(lambda v: (v * x).sum())(x), lambda x: jax.grad(lambda v: (v * x).sum())(x), xs,
          in_axes=1)


def test_vmap_inside_jit_closing_over_jit_tracers(rng):
    xs, w = f32(rng, 4, 3), f32(rng, 3)

    def outer(vmap, sin):
        return lambda weights, data: vmap(lambda x: sin(x) * weights)(data) + weights.sum()

    assert_close(numax.jit(outer(numax.vmap, mnp.sin))(w, xs), jax.jit(outer(jax.vmap, jnp.sin))(w, xs))


def test_jit_inside_vmap(rng):
    xs, w = f32(rng, 4, 3), f32(rng, 3)
    inner = numax.jit(lambda x, weights: mnp.sin(x) * weights)
    assert_close(numax.vmap(inner, in_axes=(0, None))(xs, w), jax.vmap(jax.jit(lambda x, v: jnp.sin(x) * v),
                                                                      in_axes=(0, None))(xs, w))
    # the jitted function closes over a batch tracer of the enclosing vmap
    def closing(jit, sin):
        return lambda x: jit(lambda v: sin(v) + x)(w)

    check(closing(numax.jit, mnp.sin), closing(jax.jit, jnp.sin), xs)


# --- random shapes and axes, against jax and against a loop over examples ------------------------------
@st.composite
def _mapped_problem(draw):
    rank = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
    size = draw(st.integers(1, 4))
    in_x = draw(st.integers(-(rank + 1), rank))
    in_y = draw(st.one_of(st.none(), st.integers(-(rank + 1), rank)))
    out = draw(st.integers(-(rank + 1), rank))
    return shape, size, in_x, in_y, out


@given(_mapped_problem())
@settings(max_examples=15)
def test_random_axes_against_jax_and_a_loop(problem):
    shape, size, in_x, in_y, out_axis = problem
    rng = np.random.default_rng(len(shape) * 7 + size)

    def batched_shape(axis):
        full = list(shape)
        full.insert(axis % (len(shape) + 1), size)
        return tuple(full)

    x = rng.standard_normal(batched_shape(in_x)).astype(np.float32)
    y = rng.standard_normal(shape if in_y is None else batched_shape(in_y)).astype(np.float32)
    result = numax.vmap(lambda a, b: mnp.sin(a) * b + 1.0, in_axes=(in_x, in_y), out_axes=out_axis)(x, y)
    expected = jax.vmap(lambda a, b: jnp.sin(a) * b + 1.0, in_axes=(in_x, in_y), out_axes=out_axis)(x, y)
    assert_close(result, expected)
    examples = [np.asarray(mnp.sin(np.take(x, i, in_x)) * (y if in_y is None else np.take(y, i, in_y)) + 1.0)
                for i in range(size)]
    assert_close(result, np.stack(examples, axis=out_axis))
