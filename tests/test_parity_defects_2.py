"""Smaller parity defects with jax found by running JAX's documentation (issue 29, second list): the error for a
deleted (donated) argument, ... Each case runs under numax and jax (the oracle) and compares."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import JAX_LIBS, NUMAX_LIBS, raised, same_outcome

import numax
import numax.numpy as xnp
from numax import lax


# --- 1. a deleted (donated) argument --------------------------------------------------------------------------
def _add(a, b):
    return a + b


def _donated_then(use):
    """Donates y to a jitted add (called once before, so that its signature is cached), then `use(np, lax, api, x,
    y, add)` on the donated y."""
    def call(np_, lax_, api):
        x, y = api.device_put(np.ones((2, 3), np.float32)), api.device_put(np.ones((2, 3), np.float32))
        add = api.jit(_add, donate_argnums=(1,))
        add(x, api.device_put(np.ones((2, 3), np.float32)))
        add(x, y)
        assert y.is_deleted()
        return use(np_, lax_, api, x, y, add)
    return call


@pytest.mark.filterwarnings("ignore:Some donated buffers were not usable")
@pytest.mark.parametrize("use, error", [
    # a cached call: the runtime's ValueError in jax (the buffer-protocol path of the doc page's cell)
    (lambda np_, lax_, api, x, y, add: add(x, y), ValueError),
    (lambda np_, lax_, api, x, y, add: api.jit(_add, donate_argnums=(1,))(x, y), ValueError),
    # the first call of a signature, and eager ops: the array's own RuntimeError
    (lambda np_, lax_, api, x, y, add: api.jit(lambda a, b: a * b)(x, y), RuntimeError),
    (lambda np_, lax_, api, x, y, add: y + 1, RuntimeError),
    (lambda np_, lax_, api, x, y, add: np_.sin(y), RuntimeError),
    (lambda np_, lax_, api, x, y, add: lax_.add(x, y), RuntimeError),
    (lambda np_, lax_, api, x, y, add: y[0], RuntimeError),
    (lambda np_, lax_, api, x, y, add: np.asarray(y), RuntimeError),
    (lambda np_, lax_, api, x, y, add: api.grad(lambda a: (a * a).sum())(y), RuntimeError),
])
def test_a_donated_argument_raises_as_in_jax(use, error):
    if error is RuntimeError:
        # jax's outcome depends on whether its eager operation (jnp.sin of a float32[2,3], say) already ran in this
        # process, in an earlier test: a cached one gives the runtime's ValueError. The first call is the case here.
        jax.clear_caches()
    ours, theirs = same_outcome(_donated_then(use))
    assert type(ours) is error
    if error is ValueError:
        assert "deleted or donated" in str(ours) and "deleted or donated" in str(theirs)
    else:
        assert str(ours) == str(theirs) == "Array has been deleted with shape=float32[2,3]."


@pytest.mark.parametrize("use", [
    lambda api, add, x, y: add(x, y),  # a cached call on an array deleted explicitly: jax's RuntimeError too
    lambda api, add, x, y: y * 2,
])
def test_an_explicitly_deleted_argument_raises_the_arrays_runtime_error(use):
    def call(np_, lax_, api):
        add = api.jit(_add)
        x, y = np_.ones(3), np_.ones(3)
        add(x, y)
        y.delete()
        return use(api, add, x, y)
    ours, theirs = same_outcome(call)
    assert type(ours) is RuntimeError and str(ours) == str(theirs) == "Array has been deleted with shape=float32[3]."


# --- 2. a custom node that cannot hold None, under jacfwd / jacrev ----------------------------------------------
class _NeedsArray:
    """A pytree node whose constructor makes an array of its child (the custom_pytrees page's MyTree)."""

    def __init__(self, np_, a):
        self.a = np_.asarray(a)


def _register(tree_util, np_):
    class Node(_NeedsArray):
        pass
    tree_util.register_pytree_node(Node, lambda node: ((node.a,), None), lambda _, children: Node(np_, *children))
    return Node


@pytest.mark.parametrize("transform", ["jacobian", "jacfwd", "jacrev", "hessian"])
def test_jacobian_of_a_node_that_cannot_hold_none_raises_as_in_jax(transform):
    """jax's Jacobians check their inputs' dtypes by mapping over the input tree, which rebuilds the node with None
    leaves: the node's own `asarray(None)` raises jax's ValueError."""
    def call(np_, lax_, api):
        node = _register(api.tree_util, np_)
        return getattr(api, transform)(lambda t: t.a * 2.0)(node(np_, np_.arange(3.0)))
    ours, theirs = same_outcome(call)
    assert type(ours) is ValueError and "None is not a valid value" in str(theirs)
    assert "None is not a valid value for numax.numpy.array" in str(ours)


def test_grad_of_such_a_node_works_as_in_jax():
    """grad checks its inputs leaf by leaf (no node is rebuilt), under jax as here."""
    def call(np_, lax_, api):
        node = _register(api.tree_util, np_)
        return api.grad(lambda t: (t.a * t.a).sum())(node(np_, np_.arange(3.0))).a
    np.testing.assert_allclose(call(*NUMAX_LIBS), call(*JAX_LIBS))


@pytest.mark.parametrize("value", [None, [None], [1.0, None], [[1.0], [None]]])
def test_an_array_of_none_is_a_value_error(value):
    ours, theirs = same_outcome(lambda np_, lax_, api: np_.asarray(value))
    assert type(ours) is ValueError and "None is not a valid value" in str(ours)


# --- 4. jit's caches hold the promotion options a trace depends on ----------------------------------------------
def _jitted_calls(api, f, args, call=None):
    """Calls `f` jitted under 'standard', the context managers' modes, then 'standard' again: each outcome's class
    (or the result's dtype and shape), the later calls hitting the caches filled by the earlier ones."""
    call = call or (lambda g, *a: g(*a))
    g = api.jit(f)
    outcomes = []

    def run():
        try:
            out = call(g, *args)
            outcomes.append((str(out.dtype), out.shape))
        except Exception as error:  # noqa: BLE001  (the class is what is compared)
            outcomes.append(type(error).__name__)

    for _ in range(2):  # (the second call of a signature is the native path's)
        run()
    with api.numpy_dtype_promotion("strict"):
        run()
    with api.numpy_rank_promotion("raise"):
        run()
    with api.enable_x64(True):
        run()
    run()
    return outcomes


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("case", ["mixed_dtypes", "mixed_ranks", "scalar", "under_vmap"])
def test_a_jitted_function_traces_again_under_other_promotion_rules(case, native):
    def both(np_):
        i32, f32 = np_.ones(3, np.int32), np_.ones(3, np.float32)
        return {
            "mixed_dtypes": (lambda a, b: a + b, (f32, i32), None),
            "mixed_ranks": (lambda a, b: a * b, (f32, np_.ones((2, 3), np.float32)), None),
            "scalar": (lambda a: a + 1.5, (np.float32(2.0),), None),
            "under_vmap": (lambda a, b: a - b, (f32, i32), lambda g, a, b: api_of[np_].vmap(g)(a, b)),
        }[case]
    api_of = {xnp: numax, jnp: jax}
    previous = numax.config.read("numax_native_dispatch")
    numax.config.update("numax_native_dispatch", native)
    try:
        ours = _jitted_calls(numax, *both(xnp))
    finally:
        numax.config.update("numax_native_dispatch", previous)
    assert ours == _jitted_calls(jax, *both(jnp))


def test_rank_promotion_warns_on_a_cached_function_as_in_jax():
    for api, np_ in ((numax, xnp), (jax, jnp)):
        f = api.jit(lambda a, b: a + b)
        x, y = np_.ones(3), np_.ones((2, 3))
        f(x, y)
        with api.numpy_rank_promotion("warn"), pytest.warns(UserWarning, match="rank promotion"):
            f(x, y)


# --- 5. io_callback under vmap of cond / while_loop -----------------------------------------------------------
def _io(api, x, ordered=False):
    io_callback = numax.experimental.io_callback if api is numax else jax.experimental.io_callback
    return io_callback(np.asarray, api.ShapeDtypeStruct(x.shape, x.dtype), x, ordered=ordered)


_VMAPPED_CONTROL_FLOW = {
    "cond_batched_index": lambda api, lax_, x: lax_.cond(x > 1, lambda v: _io(api, v), lambda v: v, x),
    "cond_ordered": lambda api, lax_, x: lax_.cond(x > 1, lambda v: _io(api, v, True), lambda v: v, x),
    "cond_unbatched_index": lambda api, lax_, x: lax_.cond(True, lambda v: _io(api, v), lambda v: v, x),
    "switch": lambda api, lax_, x: lax_.switch((x > 1).astype(np.int32), [lambda v: _io(api, v), lambda v: v], x),
    "cond_nested_jit": lambda api, lax_, x: lax_.cond(x > 1, api.jit(lambda v: _io(api, v)), lambda v: v, x),
    "cond_with_debug_callback": lambda api, lax_, x: lax_.cond(
        x > 1, lambda v: (api.debug.callback(lambda a: None, v), v)[1], lambda v: v, x),
    "while_batched_predicate": lambda api, lax_, x: lax_.while_loop(lambda v: v < 3, lambda v: _io(api, v) + 1, x),
    "while_callback_in_predicate": lambda api, lax_, x: lax_.while_loop(
        lambda v: _io(api, v) < 3, lambda v: v + 1, x),
    "while_unbatched_predicate": lambda api, lax_, x: lax_.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, _io(api, c[1])), (0, x))[1],
    "while_ordered": lambda api, lax_, x: lax_.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, _io(api, c[1], True)), (0, x))[1],
    "fori_loop": lambda api, lax_, x: lax_.fori_loop(0, 2, lambda i, v: _io(api, v) + 1, x),
}


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("case", sorted(_VMAPPED_CONTROL_FLOW))
def test_io_callback_in_vmapped_control_flow_as_in_jax(case, jit):
    def call(np_, lax_, api):
        f = api.vmap(lambda x: _VMAPPED_CONTROL_FLOW[case](api, lax_, x))
        return (api.jit(f) if jit else f)(np_.arange(3.0))
    ours, theirs = same_outcome(call)
    if ours is None:
        np.testing.assert_allclose(call(*NUMAX_LIBS), call(*JAX_LIBS))
    else:
        assert str(ours) == str(theirs)


# --- 3. lax's n-ary ops take a Python scalar at its own default dtype -------------------------------------------
def _arrays(np_):
    return {"f16": np_.ones(3, np.float16), "f32": np_.ones(3, np.float32), "i32": np_.ones(3, np.int32),
            "u8": np_.ones(3, np.uint8), "c64": np_.ones(3, np.complex64), "bool": np_.ones(3, bool)}


_SCALAR_OPERANDS = [
    ("add", "i32", 1.5), ("add", "f32", 1), ("add", "f32", 1.0), ("add", "f32", 1j), ("mul", "f16", 2.0),
    ("mul", "f16", 2), ("add", "i32", 1), ("add", "i32", 1.0), ("add", "u8", 1), ("add", "u8", 300),
    ("add", "i32", True), ("add", "c64", 1j), ("add", "c64", 1.0), ("add", "bool", 1), ("bitwise_and", "bool", True),
    ("bitwise_and", "i32", True), ("max", "i32", 0.0), ("max", "f32", 0), ("lt", "i32", 0.5), ("eq", "i32", 1),
    ("atan2", "f16", 1.0), ("atan2", "f32", 1.0), ("rem", "f32", 2), ("shift_left", "u8", 1),
    ("nextafter", "f32", 1.0), ("complex", "f32", 1.0), ("pow", "f16", 2.0), ("pow", "f16", 2), ("pow", "f32", 2.0),
    ("sub", "f32", 2.0),
]


def _scalar_case_outcome(libs, op, array, scalar, scalar_first, x64):
    """The dtype and weak type of `op` on an array and a Python scalar, or the class of the error it raises."""
    np_, lax_, api = libs

    def call(*_):
        with api.enable_x64(x64):
            x = _arrays(np_)[array]
            if op == "pad":
                out = lax_.pad(x, scalar, [(1, 2, 1)])
            elif op == "betainc":
                out = lax_.betainc(scalar, x, x) if scalar_first else lax_.betainc(x, x, scalar)
            else:
                fn = getattr(lax_, op)
                out = fn(scalar, x) if scalar_first else fn(x, scalar)
            return str(out.dtype), bool(out.aval.weak_type) if api is numax else bool(out.weak_type)
    error = raised(call, libs)
    return type(error) if error is not None else call()


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("op, array, scalar", _SCALAR_OPERANDS)
def test_a_python_scalar_operand_has_its_default_dtype_as_in_jax(op, array, scalar, x64):
    for scalar_first in (False, True):
        ours = _scalar_case_outcome(NUMAX_LIBS, op, array, scalar, scalar_first, x64)
        assert ours == _scalar_case_outcome(JAX_LIBS, op, array, scalar, scalar_first, x64), (scalar_first, ours)


@pytest.mark.parametrize("cases", [(True, "f16", 1.0), (True, "f32", 1.0), (True, 1, 2.0), (True, 1.0, 2.0)])
def test_select_n_with_python_scalar_cases_as_in_jax(cases):
    def call(np_, lax_, api):
        which, *rest = cases
        rest = [np_.ones((), getattr(np, {"f16": "float16", "f32": "float32"}[c])) if isinstance(c, str) else c
                for c in rest]
        return str(lax_.select_n(which, *rest).dtype)
    ours, _ = same_outcome(call)
    if ours is None:
        assert call(*NUMAX_LIBS) == call(*JAX_LIBS)


def test_under_jit_and_vmap_the_scalar_check_is_the_same():
    x16 = xnp.ones(3, np.float16)
    for f in (numax.jit(lambda x: lax.mul(x, 2.0)), numax.vmap(lambda x: lax.mul(x, 2.0))):
        with pytest.raises(TypeError, match="same dtype"):
            f(x16)


@pytest.mark.parametrize("name, args", [
    ("deg2rad", (np.float16([30.0, 90.0]),)), ("sinc", (np.float16([0.0, 0.5]),)), ("trunc", (np.float16([-1.5]),)),
    ("hypot", (np.float16([3.0]), np.float16([4.0]))), ("floor_divide", (np.int8([-7, 7]), np.int8([2, -2]))),
    ("sign", (np.uint8([0, 3]),)), ("isposinf", (np.float16([np.inf, 1.0]),)), ("signbit", (np.float16([-1.0]),)),
])
def test_numax_numpy_functions_over_lax_keep_working(name, args):
    """numax.numpy functions written over lax keep jax's dtypes for every input dtype, x64 off and on."""
    for x64 in (False, True):
        with numax.enable_x64(x64), jax.enable_x64(x64):
            ours, theirs = getattr(xnp, name)(*args), getattr(jnp, name)(*args)
            assert ours.dtype == theirs.dtype
            np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(theirs, np.float64), rtol=1e-3)


@pytest.mark.parametrize("transform", ["checkpoint", "pmap", "shard_map"])
def test_other_traced_caches_trace_again_under_other_promotion_rules(transform):
    """checkpoint, pmap and shard_map keep traced programs too: called under 'strict' promotion after 'standard',
    a mixed-dtype body raises as jax's does, and works again after."""
    def outcomes(api, np_):
        body = lambda a, b: a + b  # noqa: E731
        if transform == "checkpoint":
            f = api.checkpoint(body)
        elif transform == "pmap":
            f = api.pmap(body)
        else:
            mesh = api.sharding.Mesh(np.array(api.devices()[:2]), ("i",))
            f = api.shard_map(body, mesh=mesh, in_specs=api.P("i"), out_specs=api.P("i"))
        a, b = np_.ones((2, 3), np.float32), np_.ones((2, 3), np.int32)
        results = [np.asarray(f(a, b)).dtype.name]
        with api.numpy_dtype_promotion("strict"):
            try:
                results.append(np.asarray(f(a, b)).dtype.name)
            except Exception as error:  # noqa: BLE001  (the class is compared)
                results.append(type(error).__name__)
        results.append(np.asarray(f(a, b)).dtype.name)
        return results

    assert outcomes(numax, xnp) == outcomes(jax, jnp)


# --- 6. lax.pad and lax's special functions check a Python scalar's default dtype as jax does ------------------
_PAD_AND_SPECIAL_OPERANDS = [
    ("pad", "f16", 0.0), ("pad", "f16", 0), ("pad", "f32", 0.0), ("pad", "f32", 0), ("pad", "i32", 0),
    ("pad", "i32", 0.0), ("pad", "c64", 0.0), ("pad", "bool", False), ("igamma", "f16", 1.0), ("igamma", "f32", 1.0),
    ("igamma", "f32", 1), ("igammac", "f16", 1.0), ("zeta", "f16", 2.0), ("zeta", "f32", 2.0),
    ("igamma_grad_a", "f16", 1.0), ("igamma_grad_a", "f32", 1), ("betainc", "f16", 1.0), ("betainc", "f32", 1.0),
]


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("op, array, scalar", _PAD_AND_SPECIAL_OPERANDS)
def test_pad_and_special_functions_take_a_python_scalar_at_its_default_dtype(op, array, scalar, x64):
    for scalar_first in (False, True) if op != "pad" else (False,):
        ours = _scalar_case_outcome(NUMAX_LIBS, op, array, scalar, scalar_first, x64)
        assert ours == _scalar_case_outcome(JAX_LIBS, op, array, scalar, scalar_first, x64), (scalar_first, ours)


def test_pad_and_igamma_refuse_a_scalar_of_another_dtype_under_jit_and_vmap_too():
    x16 = xnp.ones(3, np.float16)
    for transform in (lambda f: f, numax.jit, numax.vmap):
        with pytest.raises(TypeError, match="pad"):
            transform(lambda x: lax.pad(x, 0.0, [(1, 1, 0)] * x.ndim))(x16)
        with pytest.raises(TypeError, match="igamma"):
            transform(lambda x: lax.igamma(x, 1.0))(x16)


@pytest.mark.parametrize("name, call", [
    ("i0", lambda np_, api: np_.i0(np.float16([0.5, 2.0]))),
    ("unique_counts", lambda np_, api: np_.unique(np.int8([3, 1, 3]), return_counts=True)[1]),
    ("roll_traced_shift", lambda np_, api: api.jit(np_.roll)(np.arange(5, dtype=np.int8), 2)),
])
def test_numax_numpy_writes_its_constants_in_the_operands_dtype(name, call):
    """numax.numpy passes lax constants of its operands' dtypes (a bare Python scalar would be refused by lax beside
    a float16 array, or an int32 one in 64-bit mode)."""
    for x64 in (False, True):
        with numax.enable_x64(x64), jax.enable_x64(x64):
            ours, theirs = call(xnp, numax), call(jnp, jax)
            assert ours.dtype == theirs.dtype
            np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(theirs, np.float64), rtol=1e-3)
