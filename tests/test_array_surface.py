"""Every numax.Array has jax's array surface, one-device arrays included (issue 29): `addressable_shards`,
`addressable_data(i)`, `global_shards`, `sharding`, `is_fully_replicated`, `is_fully_addressable`, `committed`,
and Shard objects with `device`, `index`, `replica_id` and `data`, compared with jax's for the same arrays."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numax
import numax.numpy as mnp
from numax.sharding import Mesh, NamedSharding, P

js = jax.sharding
JP = js.PartitionSpec

MESH = Mesh(np.array(numax.devices()).reshape(2, 4), ("x", "y"))
JMESH = js.Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
VALUE = np.arange(64, dtype=np.float32).reshape(8, 8)

ARRAYS = {
    "arange": (lambda: mnp.arange(8), lambda: jnp.arange(8)),
    "scalar": (lambda: mnp.float32(3.5) * 2, lambda: jnp.float32(3.5) * 2),
    "asarray": (lambda: mnp.asarray(VALUE), lambda: jnp.asarray(VALUE)),
    "committed_3": (lambda: numax.device_put(VALUE, numax.devices()[3]),
                    lambda: jax.device_put(VALUE, jax.devices()[3])),
    "computed_from_committed": (lambda: numax.device_put(VALUE, numax.devices()[2]) + 1,
                                lambda: jax.device_put(VALUE, jax.devices()[2]) + 1),
    "device_put_uncommitted": (lambda: numax.device_put(VALUE), lambda: jax.device_put(VALUE)),
    "to_device": (lambda: mnp.asarray(VALUE).to_device(numax.devices()[4]),
                  lambda: jnp.asarray(VALUE).to_device(jax.devices()[4])),
    "sharded_put_on_one_device": (
        lambda: numax.device_put(numax.device_put(VALUE, NamedSharding(MESH, P("x"))), numax.devices()[6]),
        lambda: jax.device_put(jax.device_put(VALUE, js.NamedSharding(JMESH, JP("x"))), jax.devices()[6])),
    **{f"sharded_{spec}": (lambda spec=spec: numax.device_put(VALUE, NamedSharding(MESH, P(*spec))),
                           lambda spec=spec: jax.device_put(VALUE, js.NamedSharding(JMESH, JP(*spec))))
       for spec in [(), ("x",), ("y",), ("x", "y"), (None, "y"), (("x", "y"),), (("y", "x"),)]},
}


def _index(index, shape):
    return tuple(slice(s.start, s.stop).indices(n)[:2] for s, n in zip(index, shape))


def _shards(array):
    """What the Shard objects say, comparably between numax and jax."""
    return [(shard.device.id, _index(shard.index, array.shape), shard.replica_id, shard.data.shape,
             shard.data.committed, np.asarray(shard.data).tolist(), next(iter(shard.data.devices())).id)
            for shard in array.addressable_shards]


@pytest.mark.parametrize("name", ARRAYS)
def test_array_surface_matches_jax(name):
    make_ours, make_theirs = ARRAYS[name]
    ours, theirs = make_ours(), make_theirs()
    assert _shards(ours) == _shards(theirs)
    assert [(s.device.id, _index(s.index, ours.shape), s.replica_id) for s in ours.global_shards] == [
        (s.device.id, _index(s.index, theirs.shape), s.replica_id) for s in theirs.global_shards]
    for attribute in ("is_fully_replicated", "is_fully_addressable", "committed", "shape", "dtype"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
    assert type(ours.sharding).__name__ == type(theirs.sharding).__name__
    assert sorted(d.id for d in ours.sharding.device_set) == sorted(d.id for d in theirs.sharding.device_set)
    for k in range(len(theirs.addressable_shards)):
        mine, jaxs = ours.addressable_data(k), theirs.addressable_data(k)
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(jaxs))
        assert next(iter(mine.devices())).id == next(iter(jaxs.devices())).id


def test_shard_repr_names_its_fields():
    shard = mnp.arange(3).addressable_shards[0]
    text = repr(shard)
    assert text.startswith("Shard(device=") and "index=" in text and "replica_id=0" in text and "data=" in text


@pytest.mark.parametrize("make", [lambda: mnp.arange(8),
                                  lambda: numax.device_put(VALUE, NamedSharding(MESH, P("x")))])
def test_the_surface_of_a_deleted_array_raises_runtime_error_as_jax(make):
    for array in (make(), jnp.arange(8)):
        array.delete()
        with pytest.raises(RuntimeError):
            _ = array.addressable_shards
        with pytest.raises(RuntimeError):
            array.addressable_data(0)
