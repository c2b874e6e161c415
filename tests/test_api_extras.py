"""Top-level API extras against jax: devices, jacobian, float0, typeof, disable_jit,
ensure_compile_time_eval, default_device, clear_caches, live_arrays, effects_barrier, named_scope /
named_call, linear_transpose and custom_gradient."""

import numpy as np
import pytest
from harness import assert_close, jax, jnp
from numax.lowering import dispatch
from numax.lowering.array import Array as ArrayImpl  # the concrete class of device arrays
from numax.transforms import transpose

import numax
import numax.numpy as xnp


# --- devices -------------------------------------------------------------------------------------------
def test_device_queries_match_jax():
    # The tests pin jax to the CPU; numax's default backend may be a GPU.
    assert numax.device_count() == numax.local_device_count() == len(numax.devices())
    assert numax.local_device_count("cpu") == jax.local_device_count("cpu")
    assert numax.local_devices() == numax.devices()
    assert numax.process_count() == jax.process_count() == 1
    assert numax.process_index() == jax.process_index() == 0
    assert numax.device_count("cpu") == jax.device_count("cpu")


def test_float0_and_jacobian():
    assert numax.float0 == jax.float0
    assert numax.grad(lambda x, n: x * n, argnums=1, allow_int=True)(1.0, 3).dtype == numax.float0
    x = np.array([0.5, -1.0, 2.0], np.float32)
    f, jf = (lambda x: xnp.sin(x) * x.sum()), (lambda x: jnp.sin(x) * x.sum())
    assert numax.jacobian is numax.jacrev
    assert_close(numax.jacobian(f)(x), jax.jacobian(jf)(x))


@pytest.mark.parametrize("value", [1.0, 3, True, np.float32(2), np.ones((2, 3), np.int8), 1j,
                                   np.zeros((), np.float16)])
def test_typeof_matches_jax(value):
    ours, theirs = numax.typeof(value), jax.typeof(value)
    assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype, theirs.weak_type)


def test_typeof_of_arrays_and_tracers():
    assert numax.typeof(xnp.ones((2, 3), xnp.bfloat16)) == numax.core.avals.ShapedArray((2, 3), xnp.bfloat16)
    seen = []
    numax.jit(lambda x: seen.append(numax.typeof(x)) or x)(xnp.ones(4, "int32"))
    assert str(seen[0]) == "i32[4]"


# --- disable_jit ----------------------------------------------------------------------------------------
@numax.jit
def _branchy(x):
    if x.sum() > 0:  # Python control flow on a value: only possible without jit
        return x * 2
    return -x


def test_disable_jit_runs_python_control_flow_on_values():
    with pytest.raises(numax.errors.TracerBoolConversionError):
        _branchy(xnp.ones(3))
    with numax.disable_jit():
        assert_close(_branchy(xnp.ones(3)), np.full(3, 2, np.float32))
        assert_close(_branchy(-xnp.ones(3)), np.ones(3, np.float32))
        assert_close(numax.grad(lambda x: _branchy(x).sum())(xnp.ones(3)), np.full(3, 2, np.float32))
        with numax.disable_jit(False):  # jit back on inside
            with pytest.raises(numax.errors.TracerBoolConversionError):
                _branchy(xnp.ones(3))
        seen = []
        numax.jit(lambda x: seen.append(type(x)) or x)(xnp.ones(2))
        assert seen == [ArrayImpl]  # the function saw the concrete array, not a tracer
    with pytest.raises(numax.errors.TracerBoolConversionError):
        _branchy(xnp.ones(3))
    f = numax.jit(lambda x: x + 1)
    assert_close(f(xnp.ones(2)), np.full(2, 2, np.float32))
    assert f._cache_size() == 1  # jit compiles again once the block is left


def test_disable_jit_matches_jax():
    def body(x):
        return x * 2 if float(x.sum()) > 0 else -x

    with jax.disable_jit(), numax.disable_jit():
        for value in (np.ones(3, np.float32), -np.ones(3, np.float32)):
            assert_close(numax.jit(body)(xnp.asarray(value)), jax.jit(body)(jnp.asarray(value)))


# --- ensure_compile_time_eval ----------------------------------------------------------------------------
def test_ensure_compile_time_eval_gives_concrete_values_inside_jit():
    seen = {}

    def f(x, backend):
        with backend.ensure_compile_time_eval():
            constant = backend.numpy.arange(4.0).sum()  # concrete: usable as a Python number
            seen[backend.__name__] = (type(constant), int(constant))
            scaled = x * 2  # an operation on a tracer is still traced
            tracer_type = numax.core.trace.Tracer if backend is numax else jax.core.Tracer
            seen[backend.__name__ + " traced"] = isinstance(scaled, tracer_type)
        return scaled * int(constant)

    ours = numax.jit(f, static_argnums=1)(xnp.ones(2), numax)
    theirs = jax.jit(f, static_argnums=1)(jnp.ones(2), jax)
    assert_close(ours, theirs)
    assert seen["numax"] == (ArrayImpl, 6) and seen["jax"][1] == 6
    assert seen["numax traced"] and seen["jax traced"]


def test_ensure_compile_time_eval_branches_and_leaves_program_clean():
    def f(x):
        with numax.ensure_compile_time_eval():
            table = xnp.array([1.0, 2.0, 3.0]) * 2
            if table[1] > 3:  # a concrete value: Python control flow works
                bias = table.sum()
            else:
                bias = -1.0
        return x + bias

    assert_close(numax.jit(f)(xnp.zeros(3)), np.full(3, 12, np.float32))
    program = numax.make_jaxpr(f)(xnp.zeros(3))
    assert len(program.program.equations) == 1  # only the add on x was traced; the rest ran at once
    with pytest.raises(numax.errors.TracerBoolConversionError):  # outside the block, tracing as usual
        numax.jit(lambda x: x if x[0] > 0 else -x)(xnp.ones(2))


# --- default_device ---------------------------------------------------------------------------------------
def test_computations_run_on_their_arguments_device():
    other = numax.devices("cpu")[1]
    x = numax.device_put(np.arange(3.0, dtype=np.float32), other)
    for result in (xnp.sin(x), x * 2.0, numax.jit(lambda a: a + 1)(x)):
        assert result.device == other
    assert_close(xnp.sin(x), np.sin(np.arange(3.0, dtype=np.float32)))


def test_default_device_places_new_arrays_and_computations():
    devices = numax.devices("cpu")
    assert len(devices) >= 2, "conftest asks XLA for several CPU devices"
    home, first, other = numax.devices()[0], devices[0], devices[1]
    make = numax.jit(lambda: xnp.arange(3.0) + 1)
    assert make().device == home
    with numax.default_device(other):
        x = xnp.ones(2)
        assert x.device == other
        assert (x + 1.0).device == other and (1.0 + x).device == other
        assert xnp.sin(x).device == other
        assert numax.device_put(np.ones(2)).device == other
        assert make().device == other
        assert_close(make(), np.array([1, 2, 3], np.float32))
        with numax.default_device(first):
            assert xnp.zeros(1).device == first and make().device == first
        assert xnp.zeros(1).device == other
        assert numax.jit(lambda a: a * 2)(x).device == other
    assert xnp.ones(2).device == home and make().device == home
    with numax.default_device(None):
        assert xnp.ones(2).device == home
    with numax.default_device("cpu"):
        assert xnp.ones(1).device == devices[0]


# --- caches, arrays, effects --------------------------------------------------------------------------------
def test_clear_caches_drops_executables():
    f = numax.jit(lambda x: x * 3)
    x = xnp.arange(3.0)
    assert_close(f(x), np.arange(3.0, dtype=np.float32) * 3)
    assert xnp.sin(x) is not None
    assert_close(numax.grad(lambda x: numax.jit(xnp.sin)(x))(1.0), np.cos(np.float32(1.0)))
    assert f._cache_size() == 1 and len(dispatch.primitive_cache.entries) > 0
    assert transpose._transpose_program.cache_size() > 0
    numax.clear_caches()
    assert f._cache_size() == 0 and len(dispatch.primitive_cache.entries) == 0
    assert transpose._transpose_program.cache_size() == 0
    assert_close(f(x), np.arange(3.0, dtype=np.float32) * 3)
    assert_close(numax.grad(lambda x: numax.jit(xnp.sin)(x))(1.0), np.cos(np.float32(1.0)))
    jax.clear_caches()  # the same name exists in jax


def test_live_arrays_and_copy_to_host_async():
    x = xnp.full((5, 7), 3.0)
    assert any(a is x for a in numax.live_arrays())
    elsewhere = "gpu" if x.platform == "cpu" else "cpu"
    assert any(a is x for a in numax.live_arrays(x.platform))
    assert not any(a is x for a in numax.live_arrays(elsewhere))
    tree = {"a": x, "b": [1, np.ones(2)]}
    assert numax.copy_to_host_async(tree) is tree
    x.delete()
    assert not any(a is x for a in numax.live_arrays())


def test_effects_barrier_waits_for_callbacks():
    seen = []

    @numax.jit
    def f(x):
        numax.debug.callback(lambda v: seen.append(np.asarray(v).copy()), x)
        return x + 1

    f(xnp.arange(3.0))
    numax.effects_barrier()
    assert len(seen) == 1 and np.array_equal(seen[0], np.arange(3.0))


# --- naming --------------------------------------------------------------------------------------------------
def test_named_scope_and_named_call():
    @numax.jit
    def layer(w, x):
        with numax.named_scope("dot_product"):
            logits = w @ x
        with numax.named_scope("activation"):
            return numax.nn.relu(logits)

    @numax.named_scope("scaled")
    def scaled(x):
        return x * 2

    w, x = np.eye(3, dtype=np.float32), np.array([1.0, -2.0, 3.0], np.float32)
    assert_close(layer(w, x), np.array([1, 0, 3], np.float32))
    assert_close(numax.jit(scaled)(x), x * 2)
    named = numax.named_call(lambda v: v + 1, name="increment")
    assert_close(numax.jit(named)(x), x + 1)

    def plain(v):
        return v - 1

    assert numax.named_call(plain).__name__ == "plain"
    for backend in (numax, jax):
        with pytest.raises(TypeError, match="named_scope name argument must be a string"):
            backend.named_scope(3)


# --- linear_transpose ------------------------------------------------------------------------------------------
_A = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)

_LINEAR = {
    "matvec": (lambda m: (lambda x: m.asarray(_A) @ x), [np.zeros(4, np.float32)]),
    "two_args": (lambda m: (lambda x, y: 0.5 * x - 2.0 * y), [np.zeros((), np.float32), np.zeros((), np.float32)]),
    "dict_out": (lambda m: (lambda x: {"s": x.sum(), "t": m.transpose(x) * 3}), [np.zeros((2, 3), np.float32)]),
    "tree_in": (lambda m: (lambda p: p["a"][:2] + m.cumsum(p["b"])), [{"a": np.zeros(3, np.float32),
                                                                        "b": np.zeros(2, np.float32)}]),
    "complex": (lambda m: (lambda z: 1j * z + m.conj(z)), [np.zeros(2, np.complex64)]),
    "constant_work": (lambda m: (lambda x: x * m.exp(m.float32(1.0))), [np.zeros(2, np.float32)]),
}


@pytest.mark.parametrize("name", sorted(_LINEAR))
def test_linear_transpose_matches_jax(rng, name):
    make, primals = _LINEAR[name]
    ours = numax.linear_transpose(make(xnp), *primals)
    theirs = jax.linear_transpose(make(jnp), *primals)
    out = jax.eval_shape(make(jnp), *primals)
    cotangent = jax.tree.map(lambda s: (rng.normal(size=s.shape) + (1j * rng.normal(size=s.shape)
                                        if np.issubdtype(s.dtype, np.complexfloating) else 0)).astype(s.dtype), out)
    expected = theirs(cotangent)
    for result in (ours(cotangent), numax.jit(lambda c: ours(c))(cotangent)):
        assert numax.tree.structure(result) == numax.tree.structure(expected) and isinstance(result, tuple)
        for a, b in zip(numax.tree.leaves(result), jax.tree.leaves(expected)):
            assert_close(a, b)


def test_linear_transpose_of_shape_dtype_structs():
    scalar = numax.ShapeDtypeStruct((), np.float32)
    cts = numax.linear_transpose(lambda x, y: 0.5 * x - 0.5 * y, scalar, scalar)(1.0)
    assert [float(c) for c in cts] == [0.5, -0.5] and all(c.dtype == np.float32 for c in cts)
    unused = numax.linear_transpose(lambda x, y: x * 2, scalar, numax.ShapeDtypeStruct((2,), np.float32))(1.0)
    assert_close(unused[1], np.zeros(2, np.float32))  # zero cotangents are materialized
    integer = np.zeros(3, np.int32)  # integer -> integer linear maps transpose too
    reverse_and_double = lambda m: lambda v: v * 2 + v[::-1]  # noqa: E731
    ct = np.arange(3, dtype=np.int32)
    assert_close(numax.linear_transpose(reverse_and_double(xnp), integer)(ct)[0],
                 jax.linear_transpose(reverse_and_double(jnp), integer)(ct)[0])


def test_linear_transpose_errors_match_jax():
    x = np.zeros(3, np.float32)
    for backend, m in ((numax, xnp), (jax, jnp)):
        transpose = backend.linear_transpose(lambda v: (v * 2, v.sum()), x)
        with pytest.raises(TypeError, match="cotangent tree does not match function output"):
            transpose([np.ones(3, np.float32), np.float32(1)])
        with pytest.raises(TypeError, match="cotangent type does not match function output"):
            transpose((np.ones(4, np.float32), np.float32(1)))
        with pytest.raises(TypeError, match=r"linear_transpose only supports \[float"):  # jax 0.11 adds float0
            backend.linear_transpose(lambda v: v.astype(m.int32), x)
        with pytest.raises(NotImplementedError, match="reduce_axes"):
            backend.linear_transpose(lambda v: v, x, reduce_axes=("i",))


# --- custom_gradient ------------------------------------------------------------------------------------------
def _clipped_gradient(m, backend):
    @backend.custom_gradient
    def f(x):
        return m.sin(x) * 2, lambda g: m.clip(g * m.cos(x), -0.5, 0.5) * 10

    return f


def _two_arguments(m, backend):
    @backend.custom_gradient
    def f(x, y):
        out = x * y
        return out, lambda g: (g * y * 3, g * x * 5)

    return f


def _tree_output(m, backend):
    @backend.custom_gradient
    def f(x):
        return {"a": x * 2, "b": m.exp(x)}, lambda g: g["a"] + 7 * g["b"]

    return f


@pytest.mark.parametrize("transform", ["eager", "jit", "vmap"])
def test_custom_gradient_matches_jax(transform):
    x = np.array([0.3, -1.2, 2.0], np.float32)
    y = np.array([1.5, 0.5, -2.0], np.float32)

    def losses(m, backend):
        clipped, two, tree = _clipped_gradient(m, backend), _two_arguments(m, backend), _tree_output(m, backend)
        return [
            (lambda x: clipped(x).sum(), (x,), 0),
            (lambda x, y: (two(x, y) ** 2).sum(), (x, y), (0, 1)),
            (lambda x: (tree(x)["a"] * tree(x)["b"]).sum(), (x,), 0),
        ]

    for (ours_loss, args, argnums), (theirs_loss, _, _) in zip(losses(xnp, numax), losses(jnp, jax)):
        ours_grad, theirs_grad = numax.grad(ours_loss, argnums), jax.grad(theirs_loss, argnums)
        if transform == "jit":
            ours_grad, theirs_grad = numax.jit(ours_grad), jax.jit(theirs_grad)
        if transform == "vmap":
            ours_grad, theirs_grad = numax.vmap(ours_grad), jax.vmap(theirs_grad)
            args = tuple(np.stack([a, a[::-1]]) for a in args)
        for a, b in zip(jax.tree.leaves(ours_grad(*args)), jax.tree.leaves(theirs_grad(*args))):
            assert_close(a, b)
        if transform != "vmap":
            assert_close(ours_loss(*args), theirs_loss(*args))
