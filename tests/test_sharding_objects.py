"""numax.sharding (meshes, partition specs, shardings) and its text drawing against jax.sharding's objects built on
the same devices (matched by id: numax's devices come from its own client). Nothing here compiles but one pmap."""

import contextlib
import io
import pickle

import numpy as np
import pytest
from harness import jax
from hypothesis import given
from hypothesis import strategies as st
from numax.core import sharding as core_sharding

import numax
from numax import _sharding_text
from numax import sharding as ns

js = jax.sharding
JP = js.PartitionSpec
AXIS_TYPES = [(ns.AxisType.Auto, js.AxisType.Auto), (ns.AxisType.Explicit, js.AxisType.Explicit),
              (ns.AxisType.Manual, js.AxisType.Manual)]


def jax_devices(ids):
    by_id = {device.id: device for device in jax.devices()}
    return [by_id[i] for i in ids]


def numax_devices(ids):
    by_id = {device.id: device for device in numax.devices()}
    return [by_id[i] for i in ids]


def both_meshes(mesh_shape, axis_names, device_ids, type_index=None):
    """The same mesh in numax and in jax: devices in the order of `device_ids`, one axis type for all axes."""
    ours_types = theirs_types = None
    if type_index is not None:
        ours_types = (AXIS_TYPES[type_index][0],) * len(axis_names)
        theirs_types = (AXIS_TYPES[type_index][1],) * len(axis_names)
    ours = ns.Mesh(np.array(numax_devices(device_ids), dtype=object).reshape(mesh_shape), axis_names, ours_types)
    theirs = js.Mesh(np.array(jax_devices(device_ids)).reshape(mesh_shape), axis_names, theirs_types)
    return ours, theirs


def by_id(indices_map):
    return {device.id: index for device, index in indices_map.items()}


def raised(f):
    try:
        return f()
    except Exception as error:  # the outcome under comparison is the exception's type
        return type(error)


@st.composite
def meshes_specs_shapes(draw):
    """A 1-D or 2-D mesh over the 8 devices (in a drawn order), a spec over its axes and a global shape: mostly
    divisible by the blocks the spec asks for, sometimes not."""
    mesh_shape = draw(st.sampled_from([(8,), (4, 2), (2, 4), (8, 1), (1, 8)]))
    axis_names = ("x", "y")[:len(mesh_shape)]
    device_ids = draw(st.permutations(range(8)))
    ndim = draw(st.integers(1, 3))
    dims_of_axes = [draw(st.integers(-1, ndim - 1)) for _ in axis_names]  # -1: the axis splits no dimension
    order = draw(st.permutations(axis_names))
    entries = []
    for dim in range(ndim):
        axes = tuple(axis for axis in order if dims_of_axes[axis_names.index(axis)] == dim)
        entries.append(None if not axes else axes[0] if len(axes) == 1 and draw(st.booleans()) else axes)
    spec_length = draw(st.integers(max([i + 1 for i, e in enumerate(entries) if e is not None], default=0), ndim))
    sizes = dict(zip(axis_names, mesh_shape))
    shape = []
    for entry in entries:
        blocks = int(np.prod([sizes[a] for a in core_sharding._entry_axes(entry)], dtype=int))
        shape.append(blocks * draw(st.integers(1, 3)) + draw(st.sampled_from([0, 0, 0, 0, 1])))
    # Auto or Explicit: jax asserts (internally) when a spec names a Manual axis, which only shard_map bodies see.
    return mesh_shape, axis_names, device_ids, tuple(entries[:spec_length]), tuple(shape), draw(st.integers(0, 1))


@given(meshes_specs_shapes())
def test_named_sharding_blocks_match_jax(case):
    mesh_shape, axis_names, device_ids, entries, shape, type_index = case
    ours_mesh, their_mesh = both_meshes(mesh_shape, axis_names, device_ids, type_index)
    ours, theirs = ns.NamedSharding(ours_mesh, ns.P(*entries)), js.NamedSharding(their_mesh, JP(*entries))
    assert repr(ours) == repr(theirs)
    assert ours.is_fully_replicated == theirs.is_fully_replicated
    assert ours.num_devices == theirs.num_devices
    assert {d.id for d in ours.device_set} == {d.id for d in theirs.device_set}
    assert {d.id for d in ours.addressable_devices} == {d.id for d in theirs.addressable_devices}
    assert ours.is_fully_addressable == theirs.is_fully_addressable
    expected_shape = raised(lambda: theirs.shard_shape(shape))
    if isinstance(expected_shape, type):  # jax raises its IndivisibleError, a ValueError
        assert expected_shape.__name__ == "IndivisibleError" and issubclass(expected_shape, ValueError)
        for method in (ours.shard_shape, ours.devices_indices_map, ours.addressable_devices_indices_map):
            with pytest.raises(ns.IndivisibleError, match="is not divisible"):
                method(shape)
        return
    assert ours.shard_shape(shape) == expected_shape
    expected_map = by_id(theirs.devices_indices_map(shape))
    ours_map = ours.devices_indices_map(shape)
    assert by_id(ours_map) == expected_map
    assert list(by_id(ours_map)) == list(expected_map)  # the mesh's device order
    assert by_id(ours.addressable_devices_indices_map(shape)) == by_id(theirs.addressable_devices_indices_map(shape))


def test_sharded_dims_and_replication_by_hand():
    """P(None, ('y', 'x')) on a 4x2 mesh: dimension 1 in 8 blocks numbered y-major; dimension 0 whole."""
    mesh = ns.make_mesh((4, 2), ("x", "y"))
    indices = by_id(ns.NamedSharding(mesh, ns.P(None, ("y", "x"))).devices_indices_map((3, 16)))
    for (x, y), device_id in np.ndenumerate(mesh.device_ids):
        block = y * 4 + x
        assert indices[device_id] == (slice(None), slice(2 * block, 2 * block + 2))


def test_rank_errors():
    mesh = ns.make_mesh((4, 2), ("x", "y"))
    with pytest.raises(ValueError, match="rank at least 2"):
        ns.NamedSharding(mesh, ns.P("x", "y")).shard_shape((8,))
    with pytest.raises(ValueError, match="P()"):
        ns.NamedSharding(mesh, ns.P("x")).devices_indices_map(())
    assert ns.NamedSharding(mesh, ns.P()).devices_indices_map(()) == {d: () for d in mesh.devices.flat}


SPECS = [(), (None,), ("x",), ("x", None), (("x", "y"),), (["x", "y"],), (("x",),), ([],), (None, "y"),
         ("x", ("y", "z")), (1,)]


@pytest.mark.parametrize("entries", SPECS, ids=repr)
def test_partition_spec_repr_and_sequence_behaviour(entries):
    ours, theirs = ns.P(*entries), JP(*entries)
    assert repr(ours) == repr(theirs)
    assert len(ours) == len(theirs) and list(ours) == list(theirs) and ours.partitions == theirs.partitions
    assert [ours[i] for i in range(len(ours))] == [theirs[i] for i in range(len(theirs))]
    assert not isinstance(ours, tuple) and not isinstance(theirs, tuple)
    assert (ours == tuple(ours)) == (theirs == tuple(theirs)) == False  # noqa: E712
    assert pickle.loads(pickle.dumps(ours)) == ours


def test_partition_spec_equality_and_arithmetic():
    pairs = [(("x",), ("x", None)), (("x",), (("x",),)), ((None,), ()), (("x", "y"), ("x", "y")), ((["a"],), ("a",))]
    for left, right in pairs:
        assert (ns.P(*left) == ns.P(*right)) == (JP(*left) == JP(*right))
        if ns.P(*left) == ns.P(*right):
            assert hash(ns.P(*left)) == hash(ns.P(*right))
    assert repr(ns.P("x") + ns.P("y")) == repr(JP("x") + JP("y"))
    assert repr(ns.P("x") + ("y",)) == repr(JP("x") + ("y",))
    assert repr(("y",) + ns.P("x")) == repr(("y",) + JP("x"))
    spec, theirs = ns.P("x", None, ("a", "b"), None), JP("x", None, ("a", "b"), None)
    assert spec.index(None) == theirs.index(None) and spec.count(None) == theirs.count(None)
    assert spec.index(["a", "b"]) == theirs.index(["a", "b"])
    assert repr(ns.P("x", ns.P.UNCONSTRAINED)) == repr(JP("x", JP.UNCONSTRAINED))
    assert pickle.loads(pickle.dumps(ns.P.UNCONSTRAINED)) is ns.P.UNCONSTRAINED
    with pytest.raises(AttributeError):
        spec._partitions = ()


@pytest.mark.parametrize("axis_shapes", [(8,), (4, 2), (2, 4), (2, 2, 2), (3,), (2, 3), (1, 8)])
def test_make_mesh_matches_jax(axis_shapes):
    names = ("a", "b", "c")[:len(axis_shapes)]
    ours, theirs = ns.make_mesh(axis_shapes, names), jax.make_mesh(axis_shapes, names)
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    assert ours.axis_types == tuple(ns.AxisType[t.name] for t in theirs.axis_types)  # Explicit by default
    assert ours.shape == theirs.shape and type(ours.shape) is type(theirs.shape)
    assert ours.axis_sizes == theirs.axis_sizes and ours.size == theirs.size and ours.axis_names == theirs.axis_names
    np.testing.assert_array_equal(ours.device_ids, theirs.device_ids)
    assert ours.empty == theirs.empty == False  # noqa: E712
    assert [d.id for d in ours.local_devices] == [d.id for d in theirs.local_devices]
    assert not ours.devices.flags.writeable


def test_make_mesh_devices_and_errors():
    ours = ns.make_mesh((2, 2), ("a", "b"), devices=numax.devices()[::-1])
    theirs = jax.make_mesh((2, 2), ("a", "b"), devices=jax.devices()[::-1])
    np.testing.assert_array_equal(ours.device_ids, theirs.device_ids)
    auto = (ns.AxisType.Auto, ns.AxisType.Manual)
    assert ns.make_mesh((4, 2), ("a", "b"), auto).axis_types == auto
    for args in [((16,), ("a",)), (("a",), ("a",)), ((4, 2), ("a",))]:
        expected = raised(lambda: jax.make_mesh(*args))
        assert expected is ValueError
        with pytest.raises(ValueError):
            ns.make_mesh(*args)
    with pytest.raises(ValueError, match=r"\(16,\).*8 devices"):  # names the mesh size and the device count
        ns.make_mesh((16,), ("a",))


def test_mesh_errors_equality_and_empty():
    devices, their_devices = np.array(numax.devices(), dtype=object), np.array(jax.devices())
    bad = [((devices.reshape(4, 2), ("x",)), (their_devices.reshape(4, 2), ("x",))),
           ((devices.reshape(4, 2), ("x", None)), (their_devices.reshape(4, 2), ("x", None))),
           ((devices.reshape(4, 2), ("x", "y"), (ns.AxisType.Auto,)),
            (their_devices.reshape(4, 2), ("x", "y"), (js.AxisType.Auto,))),
           ((devices.reshape(4, 2), ("x", "y"), ("Auto", "Auto")), (their_devices.reshape(4, 2), ("x", "y"),
                                                                    ("Auto", "Auto")))]
    for ours, theirs in bad:
        expected = raised(lambda: js.Mesh(*theirs))
        assert expected in (ValueError, TypeError)
        with pytest.raises(expected):
            ns.Mesh(*ours)
    mesh = ns.Mesh(devices.reshape(4, 2), ("x", "y"))
    assert repr(mesh) == repr(js.Mesh(their_devices.reshape(4, 2), ("x", "y")))
    assert mesh == ns.Mesh(list(devices.reshape(4, 2)), ["x", "y"]) and hash(mesh) == hash(ns.Mesh(devices.reshape(
        4, 2), ("x", "y")))
    assert mesh != ns.Mesh(devices.reshape(4, 2), ("x", "y"), (ns.AxisType.Explicit,) * 2)
    assert mesh != ns.Mesh(devices[::-1].reshape(4, 2), ("x", "y")) and mesh != ns.Mesh(devices.reshape(2, 4),
                                                                                           ("x", "y"))
    assert str(ns.Mesh(devices, "i", ns.AxisType.Manual)) == str(js.Mesh(their_devices, "i", js.AxisType.Manual))
    empty, their_empty = ns.Mesh(np.empty((), dtype=object), ()), js.Mesh(np.empty((), dtype=object), ())
    assert (repr(empty), str(empty), empty.empty, empty.size, empty.shape) == (
        repr(their_empty), str(their_empty), their_empty.empty, their_empty.size, their_empty.shape)
    assert [repr(t) for t in ns.AxisType] == [repr(t) for t in js.AxisType]
    assert [str(t) for t in ns.AxisType] == [str(t) for t in js.AxisType]


def test_named_sharding_errors_match_jax():
    ours_mesh, their_mesh = both_meshes((4, 2), ("x", "y"), range(8), type_index=1)
    for entries in [("z",), ("x", "x"), (("x", "y"), "y"), (JP.UNCONSTRAINED,)]:
        ours_entries = tuple(ns.P.UNCONSTRAINED if e is JP.UNCONSTRAINED else e for e in entries)
        expected = raised(lambda: js.NamedSharding(their_mesh, JP(*entries)))
        assert expected.__name__ in ("ValueError", "DuplicateSpecError")
        error = raised(lambda: ns.NamedSharding(ours_mesh, ns.P(*ours_entries)))
        assert error.__name__ == expected.__name__ and error.__mro__[1].__name__ == expected.__mro__[1].__name__
    auto_mesh, their_auto_mesh = both_meshes((4, 2), ("x", "y"), range(8))
    ours = ns.NamedSharding(auto_mesh, ns.P(ns.P.UNCONSTRAINED, "y"))
    theirs = js.NamedSharding(their_auto_mesh, JP(JP.UNCONSTRAINED, "y"))
    assert repr(ours) == repr(theirs)
    assert by_id(ours.devices_indices_map((4, 4))) == by_id(theirs.devices_indices_map((4, 4)))
    with pytest.raises(TypeError, match="PartitionSpec"):
        ns.NamedSharding(auto_mesh, ("x",))
    for kind in ("pinned_host", "bogus"):
        expected = raised(lambda: repr(js.NamedSharding(their_mesh, JP("x"), memory_kind=kind)))
        outcome = raised(lambda: repr(ns.NamedSharding(ours_mesh, ns.P("x"), memory_kind=kind)))
        assert outcome == expected  # the same repr, or the same exception type


def test_named_sharding_equality_and_memory_kind():
    ours_mesh, their_mesh = both_meshes((4, 2), ("x", "y"), range(8))
    pairs = [(("x",), ("x",)), (("x",), ("x", None)), ((), ()), (("x", "y"), ("x", "y"))]
    for left, right in pairs:
        ours = ns.NamedSharding(ours_mesh, ns.P(*left)) == ns.NamedSharding(ours_mesh, ns.P(*right))
        assert ours == (js.NamedSharding(their_mesh, JP(*left)) == js.NamedSharding(their_mesh, JP(*right)))
        if ours:
            assert hash(ns.NamedSharding(ours_mesh, ns.P(*left))) == hash(ns.NamedSharding(ours_mesh, ns.P(*right)))
    sharding = ns.NamedSharding(ours_mesh, ns.P("x"))
    assert sharding.memory_kind == js.NamedSharding(their_mesh, JP("x")).memory_kind
    host = sharding.with_memory_kind("pinned_host")
    assert host.memory_kind == "pinned_host" and host != sharding and host.spec == sharding.spec
    assert sharding.is_equivalent_to(ns.NamedSharding(ours_mesh, ns.P("x", None)), 2)
    assert not sharding.is_equivalent_to(ns.NamedSharding(ours_mesh, ns.P("y")), 2)


def test_single_device_sharding_matches_jax():
    ours, theirs = ns.SingleDeviceSharding(numax.devices()[3]), js.SingleDeviceSharding(jax.devices()[3])
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    for shape in [(), (5,), (2, 3)]:
        assert by_id(ours.devices_indices_map(shape)) == by_id(theirs.devices_indices_map(shape))
        assert by_id(ours.addressable_devices_indices_map(shape)) == by_id(theirs.addressable_devices_indices_map(
            shape))
        assert ours.shard_shape(shape) == theirs.shard_shape(shape)
    assert (ours.num_devices, ours.is_fully_replicated, ours.is_fully_addressable, ours.memory_kind) == (
        theirs.num_devices, theirs.is_fully_replicated, theirs.is_fully_addressable, theirs.memory_kind)
    assert ours == ns.SingleDeviceSharding(numax.devices()[3]) and hash(ours) == hash(
        ns.SingleDeviceSharding(numax.devices()[3]))
    assert ours != ns.SingleDeviceSharding(numax.devices()[2]) and ours != ours.with_memory_kind("pinned_host")
    assert raised(lambda: ns.SingleDeviceSharding(numax.devices()[0], memory_kind="bogus")) is raised(
        lambda: js.SingleDeviceSharding(jax.devices()[0], memory_kind="bogus")) is ValueError
    one_device = ns.NamedSharding(ns.make_mesh((1,), ("x",), devices=numax.devices()[3:4]), ns.P())
    assert ours != one_device and ours.is_equivalent_to(one_device, 2)


def test_pmap_sharding_matches_jax_pmap_outputs():
    """One jax.pmap over 4 of the 8 devices: outputs stacked along axis 0, axis 1, and not stacked."""
    f = jax.pmap(lambda v: (v, v[None], v.sum()), out_axes=(0, 1, None), devices=jax.devices()[2:6])
    outputs = f(np.zeros((4, 3), np.float32))
    ours = [ns.pmap_sharding(numax.devices()[2:6], out_axis) for out_axis in (0, 1, None)]
    for output, sharding in zip(outputs, ours):
        assert repr(sharding) == repr(output.sharding)
        assert by_id(sharding.devices_indices_map(output.shape)) == by_id(output.sharding.devices_indices_map(
            output.shape))
        assert sharding.shard_shape(output.shape) == output.sharding.shard_shape(output.shape)
    named = ns.pmap_sharding(numax.devices()[:2], axis_name="i")
    assert named.mesh.axis_names == ("i",) and named.spec == ns.P("i")


# -- the text drawing ------------------------------------------------------------------------------------------------

DRAWN = [((4, 2), ("x", "y"), (8, 8)), ((4, 2), ("x",), (8,)), ((4, 2), (("x", "y"),), (16,)),
         ((4, 2), (None, "y"), (4, 16)), ((4, 2), (), (5, 3)), ((4, 2), ("y", "x"), (4, 8)), ((4, 2), ("x",), (16, 2)),
         ((4, 2), ("y",), (2, 64)), ((2, 4), (None, ("y", "x")), (3, 8)), ((8,), ("x",), (24,)), ((8,), (), (7,))]


def jax_drawing(shape, sharding, **options):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        jax.debug.visualize_sharding(shape, sharding, **options)
    return out.getvalue()


def blocks_in_drawing(text):
    """(row, column) -> the device ids written in that box of a box-drawing table."""
    blocks = {}
    rows = text.split("├")
    for row, part in enumerate(rows):
        for line in part.splitlines():
            if line.startswith("│"):
                for col, cell in enumerate(line.strip("│").split("│")):
                    if cell.strip():
                        ids = cell.split()[1]
                        blocks[row, col] = sorted(int(i) for i in ids.split(","))
    return blocks


def expected_blocks(shape, sharding):
    blocks = {}
    for device, index in sharding.devices_indices_map(shape).items():
        place = tuple(0 if s.start is None else s.start // (s.stop - s.start) for s in index)
        blocks.setdefault(place if len(shape) == 2 else (0, *place), []).append(device.id)
    return {place: sorted(ids) for place, ids in blocks.items()}


@pytest.mark.parametrize("mesh_shape,entries,shape", DRAWN, ids=str)
def test_render_sharding_draws_jax_layout(mesh_shape, entries, shape):
    names = ("x", "y")[:len(mesh_shape)]
    ours_mesh, their_mesh = both_meshes(mesh_shape, names, range(8))
    ours, theirs = ns.NamedSharding(ours_mesh, ns.P(*entries)), js.NamedSharding(their_mesh, JP(*entries))
    text = _sharding_text.render_sharding(shape, ours)
    assert blocks_in_drawing(text) == expected_blocks(shape, ours)  # every device id in the block it holds
    assert all(line.startswith(("│", "┌", "├", "└")) and len(line) <= 80 for line in text.splitlines())
    expected = jax_drawing(shape, theirs)
    if "…" not in expected:  # where rich's table fits in 80 columns; past it, rich cuts labels and numax does not
        assert text + "\n" == expected
    assert jax_drawing(shape, theirs) == expected  # through rich, as jax: the same output, cut labels included
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        _sharding_text.visualize_sharding(shape, ours)
    assert printed.getvalue() == expected


def test_visualize_sharding_with_colors_and_without_rich(monkeypatch):
    ours_mesh, their_mesh = both_meshes((4, 2), ("x", "y"), range(8))
    ours, theirs = ns.NamedSharding(ours_mesh, ns.P("x", "y")), js.NamedSharding(their_mesh, JP("x", "y"))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        _sharding_text.visualize_sharding((8, 2), ns.SingleDeviceSharding(numax.devices()[5]))
    assert printed.getvalue() == jax_drawing((8, 2), js.SingleDeviceSharding(jax.devices()[5]))
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich colours its output as in a terminal
    color_map = lambda value: (value, 0.25, 1 - value, 1.0)
    expected = jax_drawing((8, 2), theirs, color_map=color_map, scale=0.5)
    assert "\x1b[" in expected
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        _sharding_text.visualize_sharding((8, 2), ours, color_map=color_map, scale=0.5)
    assert printed.getvalue() == expected
    monkeypatch.setattr(_sharding_text, "_rich_is_installed", lambda: False)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        _sharding_text.visualize_sharding((8, 2), ours, use_color=False, min_width=12)
    assert printed.getvalue() == _sharding_text.render_sharding((8, 2), ours, min_width=12) + "\n"
    with pytest.raises(ValueError, match="1-D and 2-D"):
        _sharding_text.render_sharding((2, 2, 2), ours)
