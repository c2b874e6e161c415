"""The tracing helpers that libraries built on jax's internals call (flax's `nn.scan` and lazy init), on numax against
jax: `jax.extend.linear_util` (wrapped functions and their transformations), `jax.api_util` (`flatten_fun`,
`debug_info`, ...), `jax.interpreters.partial_eval` (running a function on partly known inputs), and
`jax.extend.core.get_opaque_trace_state`. The same code, written once against a library's modules, runs on both.
Also the small surface flax reads elsewhere: einsum's `_dot_general`, `ShapedArray(sharding=...)`,
`NamedSharding.update`, `dtypes.ExtendedDType`."""

import types
import warnings

import jax
import jax._src.dtypes
import jax.api_util
import jax.extend.core
import jax.extend.linear_util
import jax.extend.source_info_util
import jax.interpreters.partial_eval
import jax.numpy as jnp
import numpy as np
import pytest

import numax
import numax.api_util
import numax.extend.core
import numax.extend.linear_util
import numax.extend.source_info_util
import numax.interpreters.partial_eval
import numax.numpy as xnp
from numax._src import core as numax_src_core

JAX = types.SimpleNamespace(lib=jax, jnp=jnp, lu=jax.extend.linear_util, api_util=jax.api_util,
                            pe=jax.interpreters.partial_eval, core=jax.extend.core, src_core=jax.core,
                            siu=jax.extend.source_info_util)
NUMAX = types.SimpleNamespace(lib=numax, jnp=xnp, lu=numax.extend.linear_util, api_util=numax.api_util,
                              pe=numax.interpreters.partial_eval, core=numax.extend.core, src_core=numax_src_core,
                              siu=numax.extend.source_info_util)
BOTH = pytest.mark.parametrize("L", [JAX, NUMAX], ids=["jax", "numax"])


def _both(run):
    return run(JAX), run(NUMAX)


def _assert_same(expected, actual):
    expected_leaves, actual_leaves = jax.tree.leaves(expected), numax.tree.leaves(actual)
    assert len(expected_leaves) == len(actual_leaves)
    for e, a in zip(expected_leaves, actual_leaves):
        e, a = np.asarray(e), np.asarray(a)
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-6)


# --- linear_util ----------------------------------------------------------------------------------------------------
def _transformations(L):
    """A WrappedFun under a scaling transformation, an auxiliary-output one and both generator forms."""
    @L.lu.transformation2
    def scaled(f, factor, *args):
        return [factor * y for y in f(*args)]

    @L.lu.transformation_with_aux2
    def counted(f, store, *args):
        out = f(*args)
        store.store(len(out))
        return out

    @L.lu.transformation
    def shifted(*args):
        outs = yield args, {}
        yield [y + 1 for y in outs]

    @L.lu.transformation_with_aux
    def summed(*args):
        outs = yield args, {}
        yield outs, sum(outs)

    def f(x, y, power):
        return [x ** power, x * y]

    wrapped = L.lu.wrap_init(f, {"power": 2}, debug_info=L.api_util.debug_info("test", f, (1, 2), {}))
    wrapped, total = summed(shifted(wrapped))
    wrapped, count = counted(scaled(wrapped, 3.0))
    return wrapped.call_wrapped(2.0, 5.0), count(), total()


def test_linear_util_transformations_run_as_jax_s():
    expected, actual = _both(_transformations)
    assert actual == expected == ([15.0, 33.0], 2, 16.0)


@BOTH
def test_a_store_is_written_once_and_read_after(L):
    @L.lu.transformation_with_aux2
    def aux(f, store, x):
        store.store(x)
        return f(x)

    wrapped, thunk = aux(L.lu.wrap_init(lambda x: x, debug_info=L.api_util.debug_info("t", abs, (1,), {})))
    with pytest.raises(L.lu.StoreException):
        thunk()
    assert wrapped.call_wrapped(4) == 4 and thunk() == 4
    with pytest.raises(L.lu.StoreException):
        wrapped.call_wrapped(5)


def test_linear_util_cache_reuses_a_result_and_its_auxiliary_output():
    calls = []

    @NUMAX.lu.cache
    def traced(fun, n):
        calls.append(n)
        return fun.call_wrapped(n)

    def body(n):
        return n * 10

    def flat(n):
        fun = NUMAX.lu.wrap_init(body, debug_info=NUMAX.api_util.debug_info("t", body, (n,), {}))
        return NUMAX.api_util.flatten_fun_nokwargs(fun, numax.tree.structure((n,)))

    fun, out_tree = flat(3)
    assert traced(fun, 3) == [30] and out_tree().num_leaves == 1
    fun, out_tree = flat(3)
    assert traced(fun, 3) == [30] and out_tree().num_leaves == 1  # the store was filled from the cache
    assert calls == [3]


# --- api_util ---------------------------------------------------------------------------------------------------------
def test_flatten_fun_and_debug_info_as_jax_s():
    def f(x, config, *, scale):
        return {"out": x["a"] * scale, "config": config}

    def run(L):
        args, kwargs = ({"a": 2.0, "b": 1.0}, (3, 4)), {"scale": 0.5}
        leaves, in_tree = L.lib.tree_util.tree_flatten((args, kwargs))
        info = L.api_util.debug_info("flatten test", f, args, kwargs)
        flat, out_tree = L.api_util.flatten_fun(L.lu.wrap_init(f, debug_info=info), in_tree)
        out = flat.call_wrapped(*leaves)
        return (out, L.lib.tree_util.tree_unflatten(out_tree(), out), info.traced_for, info.arg_names,
                info.func_src_info.split(" ")[0])

    expected, actual = _both(run)
    assert actual == expected


def test_api_util_argument_helpers_as_jax_s():
    def run(L):
        def f(a, b, c):
            return a * 100 + b * 10 + c

        fun = L.lu.wrap_init(f, debug_info=L.api_util.debug_info("t", f, (1, 2, 3), {}))
        partial_fun, dyn = L.api_util.argnums_partial(fun, (0, 2), (1, 2, 3))
        tree = L.lib.tree_util.tree_structure(((1, {"k": 2, "j": (3, 4)}), {"w": 5}))
        return (partial_fun.call_wrapped(*dyn), dyn, L.api_util.rebase_donate_argnums((3, 4), (0, 1)),
                L.api_util.flatten_axes("in_axes", L.lib.tree_util.tree_structure((1, {"k": 2, "j": (3, 4)})),
                                        (0, {"k": None, "j": 1})),
                L.api_util.donation_vector((1,), ("w",), tree))

    expected, actual = _both(run)
    assert actual == expected


# --- partial_eval -----------------------------------------------------------------------------------------------------
def _partial(L, instantiate=False):
    """Runs a function on a known array and an unknown one: Python control flow reads the known value; the known
    output and the unknown output's type come back, and the staged jaxpr computes the unknown one."""
    def f(known, unknown):
        scale = L.jnp.sum(known)
        if scale > 0:  # Python control flow on a known value
            scale = scale * 2.0
        return [L.jnp.sin(known) * scale, L.jnp.cos(unknown) * scale + known, scale]

    known = L.jnp.asarray(np.array([0.5, 1.0, 1.5], np.float32))
    unknown = np.array([0.1, 0.2, 0.3], np.float32)
    info = L.api_util.debug_info("pe", f, (known, unknown), {})
    pvals = [L.pe.PartialVal.known(known), L.pe.PartialVal.unknown(L.src_core.ShapedArray((3,), np.float32))]
    jaxpr, out_pvals, consts = L.pe.trace_to_jaxpr_nounits(L.lu.wrap_init(f, debug_info=info), pvals,
                                                            instantiate=instantiate)
    knowns = [pv.get_known() for pv in out_pvals]
    unknown_types = [(pv[0].shape, pv[0].dtype) for pv in out_pvals if not pv.is_known()]
    staged = L.jax_core_eval(jaxpr, consts, unknown)
    return knowns, unknown_types, staged


JAX.jax_core_eval = jax.core.eval_jaxpr
NUMAX.jax_core_eval = numax_src_core.eval_jaxpr


@pytest.mark.parametrize("instantiate", [False, True])
def test_partial_eval_runs_known_work_and_stages_the_rest_as_jax(instantiate):
    (jax_knowns, jax_types, jax_staged), (knowns, unknown_types, staged) = _both(
        lambda L: _partial(L, instantiate))
    assert [k is None for k in knowns] == [k is None for k in jax_knowns]
    _assert_same([k for k in jax_knowns if k is not None], [k for k in knowns if k is not None])
    assert unknown_types == jax_types
    _assert_same(jax_staged, staged)


def test_partial_eval_inside_jit_gives_jax_s_values():
    def run(L):
        def outer(known):
            def f(k, u):
                return [k * 3.0, u * k]

            info = L.api_util.debug_info("pe", f, (known, known), {})
            pvals = [L.pe.PartialVal.known(known), L.pe.PartialVal.unknown(L.src_core.ShapedArray((2,), np.float32))]
            _, out_pvals, consts = L.pe.trace_to_jaxpr_nounits(L.lu.wrap_init(f, debug_info=info), pvals)
            assert out_pvals[0].is_known() and not out_pvals[1].is_known()
            return out_pvals[0].get_known(), consts

        return L.lib.jit(outer)(L.jnp.asarray(np.array([1.0, 2.0], np.float32)))

    expected, actual = _both(run)
    _assert_same(expected[0], actual[0])
    assert len(actual[1]) >= 1


def test_trace_to_jaxpr_dynamic_and_dce_jaxpr():
    pe = NUMAX.pe

    def f(x, y):
        return [xnp.sin(x), y * 2.0]

    fun = NUMAX.lu.wrap_init(f, debug_info=NUMAX.api_util.debug_info("t", f, (1.0, 1.0), {}))
    avals = [numax_src_core.ShapedArray((3,), np.float32)] * 2
    jaxpr, out_avals, consts = pe.trace_to_jaxpr_dynamic(fun, avals)
    assert [a.shape for a in out_avals] == [(3,), (3,)] and consts == []
    pruned, used_inputs = pe.dce_jaxpr(jaxpr, [False, True])
    assert used_inputs == [False, True] and len(pruned.invars) == 1 and len(pruned.eqns) == 1
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_allclose(numax_src_core.eval_jaxpr(pruned, [], x)[0], x * 2)


# --- get_opaque_trace_state -------------------------------------------------------------------------------------------
def _trace_state_pattern(L):
    """Which points of a program see the same innermost transformation, as a tuple of equalities."""
    get = L.core.get_opaque_trace_state
    seen = {"outside": get(convention="flax")}

    def inner(x):
        seen["jit_a"] = get(convention="flax")
        y = x * 2
        seen["jit_b"] = get()
        return y

    L.lib.jit(inner)(1.0)

    def differentiated(x):
        seen["grad"] = get()
        return x * x

    L.lib.grad(differentiated)(1.0)

    def batched(x):
        seen["vmap"] = get()
        return x

    L.lib.vmap(batched)(L.jnp.ones(2))
    seen["after"] = get()
    names = list(seen)
    return tuple((a, b, seen[a] == seen[b]) for i, a in enumerate(names) for b in names[i + 1:])


def test_opaque_trace_state_tells_transformations_apart_as_jax_s():
    expected, actual = _both(_trace_state_pattern)
    assert actual == expected


# --- the surface flax reads elsewhere ---------------------------------------------------------------------------------
def test_einsum_takes_a_dot_general():
    def run(L):
        calls = []

        def dot_general(x, y, dimension_numbers, precision=None, preferred_element_type=None):
            calls.append(dimension_numbers)
            return L.lib.lax.dot_general(x, y, dimension_numbers, precision,
                                         preferred_element_type=preferred_element_type) * 2.0

        x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        y = np.arange(20, dtype=np.float32).reshape(4, 5)
        return L.jnp.einsum("bij,jk->bik", x, y, _dot_general=dot_general), len(calls)

    (expected, jax_calls), (actual, calls) = _both(run)
    assert calls == jax_calls == 1
    _assert_same(expected, actual)


def test_shaped_array_takes_a_sharding_and_named_sharding_updates():
    aval = numax_src_core.ShapedArray((2, 3), np.float32, sharding=None, weak_type=True)
    assert aval.shape == (2, 3) and aval.weak_type
    aval = numax_src_core.ShapedArray((2, 3), np.float32, sharding=aval.sharding)
    mesh = numax.make_mesh((1,), ("x",))
    sharding = numax.sharding.NamedSharding(mesh, numax.sharding.PartitionSpec("x", None))
    updated = sharding.update(spec=(None, "x"))
    assert updated.spec == numax.sharding.PartitionSpec(None, "x") and updated.mesh is mesh
    assert sharding.update().spec == sharding.spec


def test_key_dtypes_are_extended_dtypes_as_jax_s():
    # `jax._src.dtypes` (where flax reads ExtendedDType) is numax.dtypes under the switch.
    def run(L, src_dtypes):
        dtype = L.lib.random.key(0).dtype
        return isinstance(dtype, src_dtypes.ExtendedDType), L.lib.dtypes.issubdtype(dtype, L.lib.dtypes.extended)

    expected, actual = run(JAX, jax._src.dtypes), run(NUMAX, numax.dtypes)
    assert actual == expected == (True, True)


def test_numax_own_jitted_functions_give_no_recompile_warning():
    numax.config.update("numax_recompile_limit", 2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", numax.RecompileWarning)
            key = numax.random.key(0)
            for n in range(1, 5):  # the sampler compiles per shape: numax's own cache, not the user's code
                numax.random.normal(key, (n,))
    finally:
        numax.config.update("numax_recompile_limit", 8)


def test_source_info_name_stack_prints_as_jax_s():
    def run(L):
        siu = L.siu
        printed = []
        with siu.extend_name_stack("a"):
            with siu.extend_name_stack("b"):
                printed.append(str(siu.current_name_stack()))
            with siu.transform_name_stack("jvp"):
                printed.append(str(siu.current_name_stack()))
                with siu.extend_name_stack("c"):
                    printed.append(str(siu.current_name_stack()))
        with siu.set_name_stack(siu.new_name_stack("top")):
            printed.append(str(siu.current_name_stack()))
        printed.append((str(siu.current_name_stack()), len(siu.current_name_stack())))
        siu.register_exclusion("/nonexistent/library/")
        return printed

    expected, actual = _both(run)
    assert actual == expected == ["a/b", "a/jvp()", "a/jvp(c)", "top", ("", 0)]


def test_lowered_cost_analysis_is_xla_s_as_jax_s():
    # flax's `tabulate(compute_flops=True)` reads it.
    def run(L):
        lowered = L.lib.jit(lambda x, w: L.jnp.tanh(x @ w)).lower(np.ones((2, 4), np.float32),
                                                                 np.ones((4, 3), np.float32))
        cost = lowered.cost_analysis()
        return cost["flops"], cost["transcendentals"], cost["bytes accessed"]

    expected, actual = _both(run)
    assert actual == expected
