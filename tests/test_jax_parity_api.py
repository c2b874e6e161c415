"""API parity with jax found missing by running JAX's documentation (issue 29): broadcasting errors' exception types,
`vjp`'s pullback as a pytree (`tree_util.Partial`), `ShapeDtypeStruct.like`, and `numpy_dtype_promotion` /
`numpy_rank_promotion`. Each case runs under numax and jax and compares."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import JAX_LIBS, NUMAX_LIBS, raised, same_outcome

import numax
import numax.numpy as xnp


# --- broadcasting errors ------------------------------------------------------------------------------------
def _ones(np_, shape):
    return np_.ones(shape, np.float32)


_BROADCASTS = {
    # ranks differ: numpy-style broadcasting fails first (ValueError)
    "jnp op, ranks differ": lambda np_, lax_, api: np_.multiply(_ones(np_, 100), _ones(np_, (100, 10))),
    "operator, ranks differ": lambda np_, lax_, api: _ones(np_, 100) * _ones(np_, (100, 10)),
    "operator under jit": lambda np_, lax_, api: api.jit(lambda a, b: a * b)(_ones(np_, 100), _ones(np_, (100, 10))),
    "operator under vmap": lambda np_, lax_, api: api.vmap(lambda a, b: a * b)(_ones(np_, (2, 100)),
                                                                              _ones(np_, (2, 100, 10))),
    "where, ranks differ": lambda np_, lax_, api: np_.where(_ones(np_, 3) > 0, _ones(np_, 4), 0.0),
    "broadcast_shapes": lambda np_, lax_, api: np_.broadcast_shapes((3,), (4,)),
    "jnp op, (2, 3) and (4,)": lambda np_, lax_, api: np_.add(np.ones((2, 3)), np.ones(4)),
    # ranks equal: the lax operation rejects the shapes (TypeError)
    "jnp op, same rank": lambda np_, lax_, api: np_.add(_ones(np_, 3), _ones(np_, 4)),
    "operator, same rank": lambda np_, lax_, api: _ones(np_, (2, 3)) + _ones(np_, (3, 2)),
    "operator, same rank, jit": lambda np_, lax_, api: api.jit(lambda a, b: a + b)(_ones(np_, 3), _ones(np_, 4)),
    "operator, same rank, vmap": lambda np_, lax_, api: api.vmap(lambda a, b: a + b)(_ones(np_, (2, 3)),
                                                                                    _ones(np_, (2, 4))),
    "lax op": lambda np_, lax_, api: lax_.add(_ones(np_, 3), _ones(np_, 4)),
    "lax op, jit": lambda np_, lax_, api: api.jit(lax_.add)(_ones(np_, 3), _ones(np_, 4)),
    "lax op, vmap": lambda np_, lax_, api: api.vmap(lax_.add)(_ones(np_, (2, 3)), _ones(np_, (2, 4))),
    "lax op, ranks differ": lambda np_, lax_, api: lax_.add(_ones(np_, 3), _ones(np_, (3, 3))),
    "lax select": lambda np_, lax_, api: lax_.select(_ones(np_, 3) > 0, _ones(np_, 3), _ones(np_, 4)),
    "lax clamp": lambda np_, lax_, api: lax_.clamp(_ones(np_, 3), _ones(np_, 4), _ones(np_, 3)),
    # and what broadcasts
    "size-1 stretches": lambda np_, lax_, api: np_.add(_ones(np_, (2, 1)), _ones(np_, 3)),
    "scalar array": lambda np_, lax_, api: np_.add(_ones(np_, (2, 3)), _ones(np_, ())),
}


@pytest.mark.parametrize("name", list(_BROADCASTS))
def test_broadcasting_error_types_match_jax(name):
    error, _ = same_outcome(_BROADCASTS[name])
    if isinstance(error, ValueError):
        assert "Incompatible shapes for broadcasting" in str(error)
    elif error is not None and name.startswith(("jnp", "operator", "lax op")):
        assert "incompatible shapes for broadcasting" in str(error) or "equal rank" in str(error)


def test_vmapped_log_probs_tutorial_cell():
    """JAX's "Autobatching for Bayesian inference": calling the unbatched log-joint on a batch is caught as a
    ValueError."""
    rng = np.random.default_rng(10009)
    all_x = rng.standard_normal((100, 10)).astype(np.float32)
    y = (rng.random(100) < 0.5).astype(np.int32)

    def log_joint(np_, beta):
        return np_.sum(-np_.log(1 + np_.exp(-(2 * y - 1) * np_.dot(all_x, beta))))

    beta = rng.standard_normal((10, 10)).astype(np.float32)
    messages = []
    for np_ in (jnp, xnp):
        with pytest.raises(ValueError) as caught:
            log_joint(np_, beta)
        messages.append(str(caught.value))
    assert messages[0] == messages[1] == "Incompatible shapes for broadcasting: shapes=[(100,), (100, 10)]"
    np.testing.assert_allclose(log_joint(xnp, beta[0]), log_joint(jnp, beta[0]), rtol=1e-5)


# --- numpy_rank_promotion ---------------------------------------------------------------------------------------
_RANK_CASES = [
    lambda np_: np_.ones(3) + np_.ones((2, 3)),
    lambda np_: np_.where(np_.ones((2, 3)) > 0, np_.ones(3), 0.0),
    lambda np_: np_.ones(3) + np_.ones(()),  # rank-0 operands are not promoted
    lambda np_: np_.ones(3) * 2.0,
    lambda np_: np_.ones((2, 3)) + np_.ones((1, 3)),
]


def _rank_outcome(np_, api, mode, case):
    api.clear_caches()  # (jax warns when it traces: a jnp function traced before under this mode would not)
    with api.numpy_rank_promotion(mode), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            case(np_)
            error = None
        except ValueError as raised:
            error = str(raised)
    return error is not None, [w.category for w in caught if "rank promotion" in str(w.message)]


@pytest.mark.parametrize("mode", ["allow", "warn", "raise"])
def test_numpy_rank_promotion_matches_jax(mode):
    for case in _RANK_CASES:
        assert _rank_outcome(xnp, numax, mode, case) == _rank_outcome(jnp, jax, mode, case)
    with numax.numpy_rank_promotion("raise"), pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
        numax.jit(lambda a, b: a + b)(xnp.ones(3), xnp.ones((2, 3)))
    with pytest.raises(ValueError, match="new enum value must be in"):
        numax.numpy_rank_promotion("sometimes")


def test_numpy_rank_promotion_config_option():
    numax.config.update("jax_numpy_rank_promotion", "raise")
    try:
        assert numax.config.jax_numpy_rank_promotion == "raise"
        with pytest.raises(ValueError, match="Operands could not be broadcast together for add"):
            xnp.ones(3) + xnp.ones((2, 3))
        with numax.numpy_rank_promotion("allow"):  # the thread's context wins over the global value
            assert (xnp.ones(3) + xnp.ones((2, 3))).shape == (2, 3)
    finally:
        numax.config.update("jax_numpy_rank_promotion", "allow")
    assert (xnp.ones(3) + xnp.ones((2, 3))).shape == (2, 3)


# --- numpy_dtype_promotion --------------------------------------------------------------------------------------
_OPERANDS = {
    "bool": lambda np_: np_.ones(2, bool), "int8": lambda np_: np_.ones(2, np.int8),
    "int16": lambda np_: np_.ones(2, np.int16), "uint8": lambda np_: np_.ones(2, np.uint8),
    "int32": lambda np_: np_.ones(2, np.int32), "float16": lambda np_: np_.ones(2, np.float16),
    "bfloat16": lambda np_: np_.ones(2, jnp.bfloat16), "float32": lambda np_: np_.ones(2, np.float32),
    "complex64": lambda np_: np_.ones(2, np.complex64), "weak int32": lambda np_: np_.ones(2, np.int32) * 0 + 1,
    "int": lambda np_: 1, "float": lambda np_: 1.5, "complex": lambda np_: 1j,
}


def _promotions(np_, api, mode):
    """(dtype, weak type) or the error class of promoting each pair of operands, as binary operations do."""
    operands = {name: make(np_) for name, make in _OPERANDS.items()}
    names, out = list(operands), {}
    with api.numpy_dtype_promotion(mode):
        for i, a in enumerate(names):
            for b in names[i:]:
                try:
                    dtype, weak = api.dtypes.result_type(operands[a], operands[b], return_weak_type_flag=True)
                    out[a, b] = (str(dtype), weak)
                except ValueError as error:
                    out[a, b] = type(error).__name__
    return out


@pytest.mark.parametrize("mode", ["standard", "strict"])
def test_numpy_dtype_promotion_matches_jax(mode):
    assert _promotions(xnp, numax, mode) == _promotions(jnp, jax, mode)
    with numax.numpy_dtype_promotion(mode), jax.numpy_dtype_promotion(mode):  # and through an operation
        for a, b in (("int8", "int"), ("int8", "float"), ("float32", "bfloat16"), ("bool", "int")):
            ours = raised(lambda np_, lax_, api: np_.add(_OPERANDS[a](np_), _OPERANDS[b](np_)), NUMAX_LIBS)
            theirs = raised(lambda np_, lax_, api: np_.add(_OPERANDS[a](np_), _OPERANDS[b](np_)), JAX_LIBS)
            assert type(ours).__name__ == type(theirs).__name__


def test_strict_promotion_error_and_option():
    assert issubclass(numax.dtypes.TypePromotionError, ValueError)
    with numax.numpy_dtype_promotion("strict"):
        with pytest.raises(numax.dtypes.TypePromotionError, match=r"\('float32', 'int8'\).*strict"):
            xnp.ones(2, np.int8) + xnp.ones(2, np.float32)
        with pytest.raises(numax.dtypes.TypePromotionError):
            xnp.promote_types(np.int8, np.int16)
        assert xnp.result_type(np.float32, np.float32) == np.float32
    assert xnp.promote_types(np.int8, np.int16) == np.int16
    add = numax.jit(lambda a, b: a + b)
    assert add(xnp.ones(2, np.int8), xnp.ones(2, np.int16)).dtype == np.int16
    numax.config.update("jax_numpy_dtype_promotion", "strict")
    try:
        assert numax.config.jax_numpy_dtype_promotion == "strict"
        with pytest.raises(numax.dtypes.TypePromotionError):
            xnp.ones(2, np.int8) + xnp.ones(2, np.int16)
        with pytest.raises(numax.dtypes.TypePromotionError):  # traced again under the new option
            add(xnp.ones(2, np.int8), xnp.ones(2, np.int16))
    finally:
        numax.config.update("jax_numpy_dtype_promotion", "standard")
    assert (xnp.ones(2, np.int8) + xnp.ones(2, np.int16)).dtype == np.int16
    for bad in ("lenient", 3):
        assert type(raised(lambda np_, lax_, api: api.numpy_dtype_promotion(bad), NUMAX_LIBS)) is type(
            raised(lambda np_, lax_, api: api.numpy_dtype_promotion(bad), JAX_LIBS))


# --- vjp's pullback is a pytree ---------------------------------------------------------------------------------
def _f(np_, x):
    return np_.sin(x) * x


def test_vjp_function_is_a_partial_pytree():
    x = np.arange(3.0, dtype=np.float32)
    _, ours = numax.vjp(functools.partial(_f, xnp), x)
    _, theirs = jax.vjp(functools.partial(_f, jnp), x)
    assert isinstance(ours, numax.tree_util.Partial)
    leaves, treedef = numax.tree_util.tree_flatten(ours)
    their_leaves = jax.tree_util.tree_leaves(theirs)
    # (a numpy primal is a residual as it was given, as in jax)
    assert len(leaves) == len(their_leaves) and all(isinstance(leaf, (numax.Array, np.ndarray)) for leaf in leaves)
    # the leaves are the residuals: sorted values agree with jax's
    ours_sorted = sorted(np.asarray(leaf).tobytes() for leaf in leaves)
    assert ours_sorted == sorted(np.asarray(leaf).tobytes() for leaf in their_leaves)
    rebuilt = numax.tree_util.tree_unflatten(treedef, leaves)
    np.testing.assert_allclose(rebuilt(xnp.ones(3))[0], theirs(jnp.ones(3))[0], rtol=1e-6)


def test_make_jaxpr_of_a_function_returning_vjp():
    x = np.arange(3.0, dtype=np.float32)
    ours = numax.make_jaxpr(lambda x: numax.vjp(functools.partial(_f, xnp), x)[1])(x)
    theirs = jax.make_jaxpr(lambda x: jax.vjp(functools.partial(_f, jnp), x)[1])(x)
    assert len(ours.out_avals) == len(theirs.out_avals)
    assert sorted(a.shape for a in ours.out_avals) == sorted(a.shape for a in theirs.out_avals)


def test_vjp_function_through_jit():
    x, ct = np.arange(3.0, dtype=np.float32), np.ones(3, np.float32)
    results = []
    for np_, api in ((xnp, numax), (jnp, jax)):
        _, pullback = api.vjp(functools.partial(_f, np_), x)
        as_argument = api.jit(lambda g, c: g(c))(pullback, ct)
        returned = api.jit(lambda x: api.vjp(functools.partial(_f, np_), x)[1])(x)
        results.append((as_argument[0], returned(ct)[0]))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_partial_of_partial_keeps_inner_arguments_static():
    def add(a, b, c):
        return a + b + c

    for tree_util in (numax.tree_util, jax.tree_util):
        p = tree_util.Partial(functools.partial(add, 1.0), 2.0)
        assert tree_util.tree_leaves(p) == [2.0]
        assert p(3.0) == 6.0
    ours = numax.tree_util.Partial(functools.partial(add, 1.0), 2.0)
    np.testing.assert_allclose(numax.jit(lambda p, c: p(c))(ours, 3.0), 6.0)


# --- ShapeDtypeStruct.like --------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda np_: np_.ones((2, 3)), lambda np_: 1.0, lambda np_: 3, lambda np_: np.ones(3),
    lambda np_: np.int8(3), lambda np_: np_.ones(3, np.int8) + 1, lambda np_: np_.zeros((0, 2), np.bool_),
])
def test_shape_dtype_struct_like_matches_jax(make):
    ours, theirs = numax.ShapeDtypeStruct.like(make(xnp)), jax.ShapeDtypeStruct.like(make(jnp))
    assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype, theirs.weak_type)
    assert numax.ShapeDtypeStruct.like(ours) == ours
    assert numax.eval_shape(lambda x: x * 2, ours).shape == theirs.shape


def test_shape_dtype_struct_like_of_a_tracer():
    seen = []
    numax.jit(lambda x: seen.append(numax.ShapeDtypeStruct.like(x)) or x)(xnp.ones((4,), np.int16))
    assert seen == [numax.ShapeDtypeStruct((4,), np.int16)]


def test_device_is_the_class_of_numax_devices_as_jax_device_is_of_jax_devices():
    assert all(isinstance(device, numax.Device) for device in numax.devices())
    assert all(isinstance(device, jax.Device) for device in jax.devices())
    assert not isinstance(numax.devices()[0].platform, numax.Device)


def test_a_typed_key_is_a_pytree_leaf_as_in_jax():
    key = numax.random.key(0)
    assert numax.tree_util.tree_leaves(key) == [key]
    assert len(jax.tree_util.tree_leaves(jax.random.key(0))) == 1


@pytest.mark.parametrize("operation", [
    lambda lib, tree: lib.tree_util.tree_flatten(tree),
    lambda lib, tree: lib.tree.map(lambda x: x + 1, tree),
    lambda lib, tree: lib.jit(lambda t: t)(tree),
])
def test_dict_keys_that_cannot_be_sorted_raise_jaxs_value_error(operation):
    for lib in (jax, numax):
        with pytest.raises(ValueError, match="Comparator raised exception while sorting pytree dictionary keys"):
            operation(lib, {1: 7, "y": 42})


def test_registering_a_pytree_node_returns_none_as_in_jax():
    for lib in (jax, numax):
        node = type("Node", (), {})
        assert lib.tree_util.register_pytree_node(node, lambda n: ((), None), lambda aux, children: node()) is None
        keyed = type("Keyed", (), {})
        assert lib.tree_util.register_pytree_with_keys(keyed, lambda n: ((), None),
                                                       lambda aux, children: keyed()) is None


@pytest.mark.parametrize("make_args, expected", [
    (lambda lib: (0.0, 0.0), ZeroDivisionError),  # the de-optimized rerun is Python on the arguments as given
    (lambda lib: (lib.numpy.float32(0.0), lib.numpy.float32(0.0)), FloatingPointError),
])
def test_debug_nans_reruns_the_function_as_python_as_jax_does(make_args, expected):
    def divide(x, y):
        return x / y

    for lib in (jax, numax):
        lib.config.update("jax_debug_nans", True)
        try:
            with pytest.raises(expected):
                lib.jit(divide)(*make_args(lib))
        finally:
            lib.config.update("jax_debug_nans", False)


@pytest.mark.parametrize("name", ["debug_nans", "debug_infs", "log_compiles", "enable_checks", "check_tracer_leaks",
                                  "explain_cache_misses", "threefry_partitionable", "softmax_custom_jvp"])
def test_boolean_config_context_managers_set_their_option_for_the_block(name):
    option = "jax2tf_associative_scan_reductions" if name.startswith("jax2tf") else f"jax_{name}"
    for lib in (jax, numax):
        before = lib.config.read(option) if lib is numax else getattr(lib.config, option)
        with getattr(lib, name)():
            assert (lib.config.read(option) if lib is numax else getattr(lib.config, option)) is True
        with getattr(lib, name)(False):
            assert not (lib.config.read(option) if lib is numax else getattr(lib.config, option))
        assert (lib.config.read(option) if lib is numax else getattr(lib.config, option)) == before


def test_debug_nans_context_checks_jitted_results_as_in_jax():
    for lib in (jax, numax):
        with lib.debug_nans(True), pytest.raises(FloatingPointError):
            lib.jit(lambda x: lib.numpy.log(x))(lib.numpy.float32(-1.0))
        assert bool(lib.numpy.isnan(lib.jit(lambda x: lib.numpy.log(x))(lib.numpy.float32(-1.0))))


def test_enum_config_context_managers_need_a_value_as_in_jax():
    for lib in (jax, numax):
        with pytest.raises(TypeError, match="requires an argument"):
            with lib.default_matmul_precision():
                pass
        with lib.default_matmul_precision("float32"):
            pass


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "nancumsum", "nancumprod"])
def test_running_reductions_of_weak_values_are_strong_as_in_jax(name):
    for np_lib in (jnp, xnp):
        result = getattr(np_lib, name)(np_lib.asarray(np.int32([1, 2, 3])) + 0.5)
        assert not result.weak_type and result.dtype == np.float32
