"""Eager shard_map (a shard_map called outside jit runs its body per device, as jax 0.10.2 does), against jax on
8 forced CPU devices: what `print` shows inside the body, values known at trace time, collectives and control flow
run eagerly, one compile per operation, jax's errors for out_specs and for in_specs that do not match an argument's
layout on a mesh of Explicit axes. Cases from jax's shard_map tutorial (docs/notebooks/shard_map.md)."""

import functools
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_same_pytrees
from jax.sharding import PartitionSpec as JP

import numax
import numax.numpy as mnp
from numax import lax
from numax.sharding import AxisType, Mesh, P

OURS = SimpleNamespace(lax=lax, np=mnp, P=P, shard_map=numax.shard_map, typeof=numax.typeof,
                       device_put=numax.device_put, Mesh=Mesh, devices=numax.devices, Explicit=AxisType.Explicit,
                       grad=numax.grad)
THEIRS = SimpleNamespace(lax=jax.lax, np=jnp, P=JP, shard_map=jax.shard_map, typeof=jax.typeof,
                         device_put=jax.device_put, Mesh=jax.sharding.Mesh, devices=jax.devices,
                         Explicit=jax.sharding.AxisType.Explicit, grad=jax.grad)


def _mesh(lib, shape, names, explicit=False):
    return _cached_mesh(lib is THEIRS, shape, names, explicit)


@functools.cache
def _cached_mesh(theirs, shape, names, explicit):
    lib = THEIRS if theirs else OURS
    devices = np.array(lib.devices()[:int(np.prod(shape))]).reshape(shape)
    if explicit:
        return lib.Mesh(devices, names, axis_types=(lib.Explicit,) * len(shape))
    return lib.Mesh(devices, names)


def _run_both(make, capsys):
    """`make(lib)()` for numax and jax: (numax's result, what it printed, jax's result, what jax printed)."""
    ours = make(OURS)()
    ours_printed = capsys.readouterr().out
    theirs = make(THEIRS)()
    theirs_printed = capsys.readouterr().out
    return ours, ours_printed, theirs, theirs_printed


_same = functools.partial(assert_same_pytrees, rtol=1e-6, atol=0)


# --- print inside the body shows each device's block ----------------------------------------------------------
PRINT_CASES = {
    "varying": (((2,), ("i",)), lambda L: (L.P("i"), L.P("i")), lambda L, x: 2 * x, np.arange(6.0)),
    "invariant argument": (((2,), ("i",)), lambda L: (L.P(), L.P()), lambda L, x: 2 * x, np.arange(6.0)),
    "psum": (((2,), ("i",)), lambda L: (L.P("i"), L.P()), lambda L, x: L.lax.psum(x, "i"), np.arange(6.0)),
    "two axes": (((4, 2), ("i", "j")), lambda L: (L.P("i", "j"), L.P("i")), lambda L, x: L.lax.psum(x, "j"),
                 np.arange(32.0).reshape(8, 4)),
    "all_gather": (((4,), ("i",)), lambda L: (L.P("i"), L.P("i")), lambda L, x: L.lax.all_gather(x, "i", tiled=True),
                   np.arange(8, dtype=np.int32)),
    "ppermute": (((4,), ("i",)), lambda L: (L.P("i"), L.P("i")),
                 lambda L, x: L.lax.ppermute(x, "i", [(k, (k + 1) % 4) for k in range(4)]),
                 np.arange(8, dtype=np.int32)),
    "axis_index": (((2, 2), ("i", "j")), lambda L: (L.P("i", "j"), L.P("i", "j")),
                   lambda L, x: x * L.lax.axis_index("j") + L.lax.axis_index("i"), np.arange(16.0).reshape(4, 4)),
}


@pytest.mark.parametrize("case", list(PRINT_CASES))
def test_print_inside_the_body_shows_every_devices_block_as_jax_does(case, capsys):
    (shape, names), specs, body, host = PRINT_CASES[case]

    def make(L):
        in_spec, out_spec = specs(L)

        def f(x):
            print(x)
            y = body(L, x)
            print(y)
            print(L.typeof(y))
            return y

        mapped = L.shard_map(f, mesh=_mesh(L, shape, names), in_specs=in_spec, out_specs=out_spec)
        return lambda: mapped(host)

    ours, ours_printed, theirs, theirs_printed = _run_both(make, capsys)
    _same(ours, theirs)
    # The types print as jax's do but for the dtype's spelling (f32 for float32).
    assert ours_printed == theirs_printed.replace("float32", "f32").replace("int32", "i32")


def test_values_the_same_on_every_device_are_known_in_the_body(capsys):
    """As in jax, an invariant value (a psum's) is concrete in an eager body: Python control flow may read it; a
    varying one is not."""

    def make(L):
        def f(x):
            total = L.lax.psum(x, "i")
            print(bool(total[0] > 10), int(total.sum()))
            try:
                np.asarray(total)
            except Exception as error:  # noqa: BLE001  (jax's and numax's classes differ in module only)
                print(type(error).__name__)
            if total[1] > 0:
                x = x + 1
            return x

        mapped = L.shard_map(f, mesh=_mesh(L, (4,), ("i",)), in_specs=L.P("i"), out_specs=L.P("i"))
        return lambda: mapped(np.arange(8.0))

    ours, ours_printed, theirs, theirs_printed = _run_both(make, capsys)
    _same(ours, theirs)
    assert ours_printed == theirs_printed

    def varying_bool(L):
        def f(x):
            return x + 1 if x[0] > 0 else x

        return lambda: L.shard_map(f, mesh=_mesh(L, (4,), ("i",)), in_specs=L.P("i"), out_specs=L.P("i"))(
            np.arange(8.0))

    with pytest.raises(jax.errors.TracerBoolConversionError):
        varying_bool(THEIRS)()
    with pytest.raises(numax.errors.TracerBoolConversionError):
        varying_bool(OURS)()


# --- the body's operations run as they do compiled ------------------------------------------------------------
def _scan_and_collectives(L, check_vma):
    def f(x, w):
        def step(carry, row):
            carry = carry + L.lax.psum(row * w, "i")
            return carry, L.lax.pmax(carry, "i")

        carry, ys = L.lax.scan(step, L.np.zeros(x.shape[1:], x.dtype), x)
        gathered = L.lax.all_gather(carry, "i")
        moved = L.lax.all_to_all(ys.reshape(4, -1), "i", 0, 0, tiled=True)
        return gathered, moved, L.lax.pmean(x.sum(), "i")

    mapped = L.shard_map(f, mesh=_mesh(L, (4,), ("i",)), in_specs=(L.P("i"), L.P()),
                         out_specs=(L.P("i"), L.P("i"), L.P()), check_vma=check_vma)
    return lambda: mapped(np.arange(64.0).reshape(16, 4) / 7, np.float32(0.5))


@pytest.mark.parametrize("check_vma", [True, False])
def test_control_flow_and_collectives_in_an_eager_body_match_jax(check_vma, capsys):
    ours, _, theirs, _ = _run_both(lambda L: _scan_and_collectives(L, check_vma), capsys)
    _same(ours, theirs)


def test_eager_results_match_the_same_function_under_jit():
    mesh = _mesh(OURS, (4, 2), ("i", "j"))

    def f(x, y):
        z = mnp.dot(x, y)
        return lax.psum(z, "j"), lax.ppermute(x, "i", [(k, (k + 1) % 4) for k in range(4)]) * lax.axis_index("j")

    mapped = numax.shard_map(f, mesh=mesh, in_specs=(P("i", "j"), P("j", None)), out_specs=(P("i"), P("i", "j")))
    x, y = np.arange(128.0).reshape(8, 16) / 10, np.arange(64.0).reshape(16, 4) / 10
    _same(mapped(x, y), numax.jit(mapped)(x, y))


def test_gradients_of_an_eager_shard_map_match_jax(capsys):
    def make(L):
        def loss(w, x):
            return L.lax.psum(((x @ w) ** 2).sum(), "i")

        mapped = L.shard_map(loss, mesh=_mesh(L, (4,), ("i",)), in_specs=(L.P(), L.P("i")), out_specs=L.P())
        return lambda: L.grad(mapped)(np.ones((3, 2), np.float32), np.arange(24.0).reshape(8, 3))

    ours, _, theirs, _ = _run_both(make, capsys)
    _same(ours, theirs)


def test_a_second_eager_call_compiles_nothing(monkeypatch):
    from numax.lowering import dispatch

    def f(x):
        y = lax.psum(x * 2.0, "i")
        return lax.all_gather(mnp.sin(y) + lax.axis_index("i"), "i", tiled=True)

    mapped = numax.shard_map(f, mesh=_mesh(OURS, (4,), ("i",)), in_specs=P("i"), out_specs=P("i"))
    first = mapped(np.arange(8.0))
    compiles = []
    original = dispatch.compile_program
    monkeypatch.setattr(dispatch, "compile_program", lambda *a, **k: compiles.append(a) or original(*a, **k))
    again = mapped(np.arange(8.0))
    assert compiles == []
    _same(first, again)


# --- errors -------------------------------------------------------------------------------------------------
def test_an_out_spec_promising_replication_of_a_varying_value_is_jaxs_error():
    def run(L):
        return L.shard_map(lambda x: x, mesh=_mesh(L, (2,), ("i",)), in_specs=L.P("i"), out_specs=L.P())(
            np.arange(6.0))

    with pytest.raises(ValueError) as theirs:
        run(THEIRS)
    with pytest.raises(ValueError) as ours:
        run(OURS)
    assert "replicated across mesh axis 'i'" in str(theirs.value) and "replicated across mesh axis 'i'" in str(
        ours.value)


def test_in_specs_must_match_the_layout_of_arguments_on_an_explicit_mesh():
    """The tutorial's scan example: an unsplit argument given in_specs P('i') on a mesh of Explicit axes."""

    def run(L, laid_out):
        mesh = _mesh(L, (2,), ("i",), explicit=True)
        x = L.np.arange(6.0)
        if laid_out:
            x = L.device_put(x, jax.sharding.NamedSharding(mesh, L.P("i")) if L is THEIRS else
                             numax.sharding.NamedSharding(mesh, L.P("i")))
        return L.shard_map(lambda a, b: (a, b), mesh=mesh, in_specs=(L.P("i"), L.P()), out_specs=L.P("i"))(
            x, L.np.arange(3.0))

    with pytest.raises(ValueError) as theirs:
        run(THEIRS, False)
    with pytest.raises(ValueError) as ours:
        run(OURS, False)
    expected = "in_specs passed to shard_map: P('i',) does not match the specs of the input: P(None,)"
    assert str(theirs.value).startswith(expected) and str(ours.value).startswith(expected)
    _same(run(OURS, True), run(THEIRS, True))


# --- arrays laid out as partial sums (PartitionSpec unreduced=...) -----------------------------------------
# (jax 0.10.2 cannot put a host array as unreduced over every mesh axis: NotImplementedError.)
PARTIAL_SUM_CASES = [(source, target)
                     for source in [None, ("X", "Y"), (), ("X", None), (None, "Y"), ("Y", "X"), ("Y", None)]
                     for target in [(("X", None), {"Y"}), ((None, None), {"X", "Y"}), ((None, "Y"), {"X"}),
                                    (("Y", None), {"X"})]
                     if source is not None or any(target[0])]


@pytest.mark.parametrize("source, target", PARTIAL_SUM_CASES)
def test_partial_sum_blocks_are_jaxs_device_put_blocks(source, target):
    """Each device's partial sum when an array (laid out by `source`; None: from the host) is put as unreduced over
    mesh axes, as jax's device_put makes them (the docs' parallel.md example among them)."""
    from numax.core.partial_sums import partial_sum_blocks

    names = ("X", "Y")
    host = np.arange(8 * 4.0, dtype=np.float32).reshape(8, 4)
    their_mesh = jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(4, 2), names,
                                   axis_types=(jax.sharding.AxisType.Explicit,) * 2)
    our_mesh = Mesh(np.array(numax.devices()[:8]).reshape(4, 2), names, axis_types=(AxisType.Explicit,) * 2)
    partitions, unreduced = target
    value = jnp.asarray(host) if source is None else jax.device_put(
        host, jax.sharding.NamedSharding(their_mesh, JP(*source)))
    theirs = jax.device_put(value, jax.sharding.NamedSharding(their_mesh, JP(*partitions, unreduced=unreduced)))
    ours = partial_sum_blocks(numax.sharding.NamedSharding(our_mesh, P(*partitions, unreduced=unreduced)), host,
                              None if source is None else numax.sharding.NamedSharding(our_mesh, P(*source)))
    assert [d.id for d in ours] == [s.device.id for s in theirs.addressable_shards]
    for block, shard in zip(ours.values(), theirs.addressable_shards):
        np.testing.assert_array_equal(block, np.asarray(shard.data))


def test_device_put_as_partial_sums_gives_jaxs_shards_repr_and_errors():
    """parallel.md: an array put as unreduced holds jax's partial sums on each device, prints as jax's (no value),
    and an operation with a plain operand is jax's ShardingTypeError."""
    results = []
    for lib, spec in ((jax, JP), (numax, P)):
        lib.sharding.set_mesh(lib.make_mesh((4, 2), ("X", "Y"), axis_types=(lib.sharding.AxisType.Explicit,) * 2))
        try:
            x = lib.device_put(lib.numpy.arange(8 * 4.0).reshape(8, 4), spec("X", "Y"))
            y = lib.device_put(x, spec("X", None, unreduced={"Y"}))
            with pytest.raises(Exception) as error:
                y + 1
            results.append(([(s.device.id, np.asarray(s.data)) for s in y.addressable_shards], str(y), error))
        finally:
            lib.sharding.set_mesh(None)
    (theirs, their_text, their_error), (ours, our_text, our_error) = results
    assert [d for d, _ in ours] == [d for d, _ in theirs]
    for (_, mine), (_, expected) in zip(ours, theirs):
        np.testing.assert_array_equal(mine, expected)
    assert our_text == their_text
    assert type(our_error.value).__name__ == type(their_error.value).__name__ == "ShardingTypeError"
    assert str(our_error.value) == str(their_error.value)


# --- in_specs inferred inside jit from the arguments' layouts (Explicit axes) ---------------------------------
def test_in_specs_are_inferred_from_jit_arguments_layouts_as_jax():
    """shard_map.md's data-parallel loss: no in_specs, arguments laid out over an Explicit mesh, called under jit
    and under jit of grad; inside jit, typeof of an argument shows its split as jax's."""
    results = []
    for lib in (THEIRS, OURS):
        mesh = _mesh(lib, (8,), ("batch",), explicit=True)
        params = lib.device_put(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4),
                                _named(lib, mesh, lib.P()))
        batch = lib.device_put(np.arange(16 * 3, dtype=np.float32).reshape(16, 3) / 10,
                               _named(lib, mesh, lib.P("batch")))
        seen = []

        @functools.partial(lib.shard_map, mesh=mesh, out_specs=lib.P())
        def loss(w, x):
            return lib.lax.pmean(lib.np.mean(lib.np.tanh(x @ w) ** 2), "batch")

        def typed(w, x):
            seen.append(str(lib.typeof(x)))
            return loss(w, x)

        jit = numax.jit if lib is OURS else jax.jit
        results.append((jit(typed)(params, batch), jit(lib.grad(loss))(params, batch), seen))
    (their_loss, their_grad, their_types), (our_loss, our_grad, our_types) = results
    _same(our_loss, their_loss)
    _same(our_grad, their_grad)
    # (numax writes dtypes short in types, f32 for float32: the split is what this compares)
    assert [t.split("[", 1)[1] for t in our_types] == [t.split("[", 1)[1] for t in their_types] == ["16@batch,3]"]


def _named(lib, mesh, spec):
    return (jax.sharding.NamedSharding if lib is THEIRS else numax.sharding.NamedSharding)(mesh, spec)
