"""What flax.nnx needs of jax beyond arrays, each compared with jax: typed PRNG keys are single pytree leaves to
users (while jit, vmap, grad and scan carry them), mutable array refs (`new_ref`, `freeze`, `numax.ref`; made inside
a traced function, or passed to jit), and the classes of `jax.experimental.hijax` / `jax._src.effects` that
libraries subclass when they are imported."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numax
import numax.numpy as xnp

LIBS = [pytest.param((numax, xnp), id="numax"), pytest.param((jax, jnp), id="jax")]


# --- typed keys are leaves ------------------------------------------------------------------------------------
@pytest.mark.parametrize("libs", LIBS)
def test_tree_functions_see_a_key_array_as_one_leaf(libs):
    lib, np_ = libs
    keys = lib.random.split(lib.random.key(0), 3)
    tree = {"keys": keys, "w": np_.ones(2), "nested": (keys[0], None)}
    leaves, treedef = lib.tree_util.tree_flatten(tree)
    assert [type(leaf) for leaf in leaves] == [type(keys), type(keys), type(np_.ones(2))]
    assert treedef.num_leaves == 3 and lib.tree_util.tree_structure(keys).num_leaves == 1
    assert lib.tree.map(lambda x: x.shape, tree) == {"keys": (3,), "w": (2,), "nested": ((), None)}
    paths = [lib.tree_util.keystr(path) for path, _ in lib.tree_util.tree_leaves_with_path(tree)]
    assert paths == ["['keys']", "['nested'][0]", "['w']"]
    assert lib.tree_util.tree_reduce(lambda n, leaf: n + leaf.ndim, tree, 0) == 2
    assert lib.tree_util.all_leaves([keys]) and not lib.tree_util.all_leaves([tree])
    assert lib.tree.map(lambda k: k, tree, is_leaf=lambda x: x is None)["nested"][1] is None
    with pytest.raises(ValueError):
        lib.tree_util.flatten_one_level(keys)
    # back through unflatten, keys stay keys
    rebuilt = treedef.unflatten(leaves)
    assert np.array_equal(lib.random.key_data(rebuilt["keys"]), lib.random.key_data(keys))


def _key_program(lib, np_):
    """Keys through jit, vmap, scan and grad (as a non-differentiated argument), returning keys and samples."""
    keys = lib.random.split(lib.random.key(7), 4)

    @lib.jit
    def step(state):
        def body(carry, key):
            new = lib.random.fold_in(carry["key"], 3)
            return {"key": new, "total": carry["total"] + lib.random.normal(key)}, lib.random.split(key)

        return lib.lax.scan(body, state, keys)

    carry, split = step({"key": lib.random.key(1), "total": np_.float32(0.0)})
    samples = lib.vmap(lambda k: lib.random.uniform(k, (2,)))(keys)
    grads = lib.grad(lambda w, k: np_.sum(w * lib.random.normal(k, (3,))))(np_.ones(3), keys[0])
    return {"carry_key": lib.random.key_data(carry["key"]), "total": carry["total"],
            "split": lib.random.key_data(split), "samples": samples, "grads": grads}


def test_keys_through_jit_scan_vmap_and_grad_as_in_jax():
    got, want = _key_program(numax, xnp), _key_program(jax, jnp)
    for name in want:
        np.testing.assert_allclose(np.asarray(got[name]), np.asarray(want[name]), rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("libs", LIBS)
def test_type_and_eval_shape_of_keys(libs):
    lib, _ = libs
    key = lib.random.key(0)
    assert str(lib.typeof(key)) == "key<fry>[]" and lib.typeof(key).shape == ()
    assert lib.dtypes.issubdtype(lib.typeof(key).dtype, lib.dtypes.prng_key)
    struct = lib.eval_shape(lambda: {"keys": lib.random.split(lib.random.key(0), 5), "x": lib.numpy.ones(2)})
    assert struct["keys"].shape == (5,) and lib.dtypes.issubdtype(struct["keys"].dtype, lib.dtypes.prng_key)
    assert struct["x"].shape == (2,) and len(lib.tree_util.tree_leaves(struct)) == 2


# --- refs --------------------------------------------------------------------------------------------------------
def _accumulate(lib, np_, x, swaps=True):
    acc = lib.new_ref(np_.zeros_like(x))
    for i in range(3):
        acc[...] += x * i
    acc[1:] = acc[1:] * 2
    if not swaps:
        return lib.freeze(acc).sum()
    lib.ref.addupdate(acc, (), x)
    old = lib.ref.swap(acc, 0, np_.float32(-1.0))
    return lib.freeze(acc).sum() + old


@pytest.mark.parametrize("transform", ["eager", "jit", "grad", "vmap"])
def test_refs_made_inside_a_function_as_in_jax(transform):
    x = np.arange(1.0, 4.0, dtype=np.float32)

    def run(lib, np_):
        # (jax 0.10.2's grad fails on `ref.addupdate` and `ref.swap` of a constant: AttributeError 'accum')
        f = lambda x: _accumulate(lib, np_, x, swaps=transform != "grad")  # noqa: E731
        if transform == "eager":
            return f(x)
        if transform == "vmap":
            return lib.vmap(f)(np.stack([x, 2 * x]))
        return getattr(lib, transform)(f)(x)

    np.testing.assert_allclose(np.asarray(run(numax, xnp)), np.asarray(run(jax, jnp)), rtol=1e-6)


@pytest.mark.parametrize("libs", LIBS)
def test_ref_types_reads_writes_and_freeze(libs):
    lib, np_ = libs
    ref = lib.new_ref(np_.zeros((2, 3), np.float32))
    assert isinstance(ref, lib.Ref) and not isinstance(np_.zeros(2), lib.Ref)
    aval = lib.typeof(ref)
    assert isinstance(aval, lib.ref.AbstractRef) and aval.inner_aval.shape == (2, 3)
    assert str(aval) == ("Ref{float32[2,3]}" if lib is jax else "Ref{f32[2,3]}")  # (numax's short dtype names)
    assert (ref.shape, ref.dtype, ref.ndim) == ((2, 3), np.float32, 2)
    ref[0, 1] = 5.0
    lib.ref.set(ref, (1,), np_.ones(3, np.float32))
    assert np.asarray(lib.ref.get(ref, ())).tolist() == [[0.0, 5.0, 0.0], [1.0, 1.0, 1.0]]
    keys = lib.new_ref(lib.random.key(3))  # a ref may hold typed keys (flax.nnx's ref Variables do)
    assert lib.dtypes.issubdtype(keys[...].dtype, lib.dtypes.prng_key)
    lib.freeze(ref)


def _refs_through_jit(lib, np_):
    """Refs (in a dict, beside a static and a keyword argument) written inside jit and read back after; a ref of
    typed keys advanced by each call."""
    count, total = lib.new_ref(np_.zeros((), np.int32)), lib.new_ref(np_.zeros(3, np.float32))

    def step(state, scale, *, x):
        state["count"][...] += 1
        state["total"][...] = state["total"][...] + scale * x
        return state["total"][...].sum()

    jitted = lib.jit(step, static_argnums=1)
    outs = [float(jitted({"count": count, "total": total}, 2.0, x=np_.full(3, float(i), np.float32)))
            for i in range(3)]
    assert outs == [0.0, 6.0, 18.0] and int(count[...]) == 3 and np.asarray(total[...]).tolist() == [6.0] * 3
    keys = lib.new_ref(lib.random.key(0))

    @lib.jit
    def draw(keys):
        keys[...], sub = lib.random.split(keys[...])
        return lib.random.normal(sub)

    return [draw(keys) for _ in range(2)], lib.random.key_data(keys[...])


def test_refs_passed_to_jit_are_written_back_as_in_jax():
    (got, got_key), (want, want_key) = _refs_through_jit(numax, xnp), _refs_through_jit(jax, jnp)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_array_equal(np.asarray(got_key), np.asarray(want_key))


def _jit_inside(lib, np_):
    """A jitted function taking a ref, called twice inside a function that makes the ref and is itself jitted,
    vmapped and differentiated."""
    bump = lib.jit(lambda ref, x: (ref.__setitem__(..., ref[...] + x), ref[...] * 2)[1])

    def outer(x):
        ref = lib.new_ref(np_.zeros(2, np.float32))
        first, second = bump(ref, x), bump(ref, x * 3)
        return lib.freeze(ref) + first + second

    x = np.array([1.0, 2.0], np.float32)
    return lib.jit(outer)(x), lib.vmap(outer)(np.stack([x, -x])), lib.grad(lambda x: outer(x).sum())(x)


def test_jit_taking_refs_inside_jit_vmap_and_grad_as_in_jax():
    for got, want in zip(_jit_inside(numax, xnp), _jit_inside(jax, jnp)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def _refs_in_loops_and_branches(lib, np_, x, n):
    """Refs of the caller's level read and written in loop bodies and branches: fori_loop with static and traced
    bounds (scan and while_loop), scan with outputs, cond and switch, nested loops, a weakly typed write, and a
    ref made inside a body (its own); run eagerly, jitted and differentiated by the callers."""
    lax = lib.lax
    totals = lib.new_ref(np_.zeros(3, np.float32))
    scale = lib.new_ref(x)

    def body(i, carry):
        totals[i % 3] = totals[i % 3] + carry * scale[0]
        return carry + 1.0

    first = lax.fori_loop(0, 4, body, 1.0)
    second = lax.fori_loop(0, n, body, first)  # traced bounds under jit: a while_loop

    def step(carry, xi):
        scale[...] = scale[...] * xi
        inner = lib.new_ref(xi)
        lax.fori_loop(0, 2, lambda j, c: (totals.__setitem__(j, totals[j] + 0.5), inner.__setitem__(
            ..., inner[...] * 2.0), c)[2], 0)
        return carry + inner[...], scale[...].sum()

    summed, ys = lax.scan(step, 0.0, np_.arange(1.0, 4.0, dtype=np.float32))
    lax.cond(x[0] > 0, lambda: scale.__setitem__(..., scale[...] + 1.0), lambda: None)
    lax.switch(n % 3, [lambda: None, lambda: totals.__setitem__(0, 7.0), lambda: totals.__setitem__(1, -1.0)])
    count = lax.while_loop(lambda c: c * scale[0] < 40.0, lambda c: (totals.__setitem__(2, totals[2] * 2.0 + 1.0),
                                                                    c + 1)[1], 0)
    return first, second, summed, ys, count, lib.freeze(totals), lib.freeze(scale)


def test_refs_in_loop_bodies_and_branches_as_in_jax():
    x = np.array([1.5, -0.5], np.float32)
    for n in (5, 7):
        want = _refs_in_loops_and_branches(jax, jnp, x, n)
        for got in (_refs_in_loops_and_branches(numax, xnp, x, n),
                    numax.jit(lambda x, n: _refs_in_loops_and_branches(numax, xnp, x, n))(x, n)):
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)

    def loss(lib, np_):  # reverse mode: the loops with static bounds (a scan each), the branches
        def value(x):
            scale = lib.new_ref(x)

            def step(carry, xi):
                scale[...] = scale[...] * xi
                lib.lax.fori_loop(0, 2, lambda j, c: (scale.__setitem__(j, scale[j] + c), c * 2.0)[1], xi)
                return carry + scale[0], scale[...].sum()

            summed, ys = lib.lax.scan(step, 0.0, np_.arange(1.0, 4.0, dtype=np.float32))
            lib.lax.cond(summed > 0, lambda: scale.__setitem__(1, scale[1] * summed), lambda: None)
            return summed + ys.sum() + lib.freeze(scale).sum()

        return value

    for point in (x, -x):
        np.testing.assert_allclose(np.asarray(numax.grad(loss(numax, xnp))(point)),
                                   np.asarray(jax.grad(loss(jax, jnp))(point)), rtol=1e-6)


def test_refs_of_another_transformation_stay_out_of_reach_of_a_loop_inside_it():
    # a loop inside vmap threads the refs made inside vmap, not one made outside (its value would leak a tracer)
    ref = numax.new_ref(xnp.zeros(3))
    with pytest.raises(NotImplementedError, match="made outside the transformation running now"):
        numax.vmap(lambda x: numax.lax.fori_loop(0, 2, lambda i, c: (ref.__setitem__(i, x), c)[1], x))(xnp.ones(2))
    assert np.asarray(ref[...]).tolist() == [0.0, 0.0, 0.0]


def test_a_ref_used_across_a_transformation_says_what_numax_lacks():
    ref = numax.new_ref(xnp.zeros(3))
    with pytest.raises(NotImplementedError, match="made outside the transformation running now"):
        numax.jit(lambda x: ref[...] + x)(1.0)
    with pytest.raises(NotImplementedError, match="made outside the transformation running now"):
        numax.grad(lambda x: (ref.__setitem__(..., ref[...] * x), x)[1])(1.0)
    numax.freeze(ref)
    with pytest.raises(RuntimeError, match="frozen"):
        ref[...]


# --- hijax and effects --------------------------------------------------------------------------------------------
class _Counter:
    """A hi value: a Python box holding an array."""

    def __init__(self, value):
        self.value = value

    def cur_qdd(self):
        return ("qdd", self.value.shape)


def test_hijax_primitives_run_eagerly_and_refuse_tracing():
    from numax.experimental import hijax

    class Bump(hijax.HiPrimitive):
        multiple_results = True

        def impl(self, box, amount):
            box.value = box.value + amount
            return []

    bump_p = Bump("bump")
    box = _Counter(xnp.zeros(2))
    hijax.register_hitype(_Counter, lambda box: hijax.ShapedArray(box.value.shape, box.value.dtype))
    assert bump_p.multiple_results and bump_p.bind(box, 2.0) == [] and box.value.tolist() == [2.0, 2.0]
    assert numax.typeof(box) == hijax.ShapedArray((2,), np.float32)
    assert numax.experimental.cur_qdd(box) == ("qdd", (2,))
    with pytest.raises(NotImplementedError, match="'bump' was applied inside a transformation"):
        numax.jit(lambda x: bump_p.bind(box, x))(1.0)
    assert issubclass(hijax.MutableHiType, hijax.AbstractValue) and isinstance(hijax.ShapedArray((), np.float32),
                                                                              hijax.AbstractValue)


def test_effect_type_sets_as_in_jax():
    import jax.extend.core
    from jax._src import effects as jax_effects

    import numax._src.effects as numax_effects

    for effects_module, effect_base in ((numax_effects, numax.extend.core.Effect),
                                        (jax_effects, jax.extend.core.Effect)):
        class Mine(effect_base):
            pass

        allowed = effects_module.EffectTypeSet()
        allowed.add_type(Mine)
        assert allowed.contains(Mine()) and not allowed.contains(effect_base())
        assert allowed.filter_in([Mine(), effect_base()])[0].__class__ is Mine
