"""Collectives within `axis_index_groups` (psum, pmean, pmax, pmin, all_gather, psum_scatter, all_to_all and
pswapaxes) over the axes of pmaps and shard_maps, against jax on the 8 forced CPU devices (tests/conftest.py);
under vmap, index groups are refused as jax refuses them."""

import functools

import numpy as np
import pytest
from harness import jax

import numax
from numax.sharding import Mesh, PartitionSpec

N = 8
UNEVEN = [[0, 1, 2], [3, 4, 5, 6, 7]]
INTERLEAVED = [[0, 2, 4, 6], [1, 3, 5, 7]]
PAIRS = [[1, 0], [2, 3], [5, 4], [6, 7]]  # out of order within a group: positions follow the group's order


def _same(ours, theirs):
    ours, theirs = numax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.shape, a.dtype) == (b.shape, b.dtype)
        np.testing.assert_allclose(a, b, rtol=1e-6)


PMAPPED = {  # name: (body over the lax module, the per-device input shape)
    "psum_uneven": (lambda L, x: L.psum(x, "i", axis_index_groups=UNEVEN), (3,)),
    "pmean_uneven": (lambda L, x: L.pmean(x, "i", axis_index_groups=UNEVEN), (3,)),  # jax: / len(groups[0])
    "pmax_interleaved": (lambda L, x: L.pmax(x, "i", axis_index_groups=INTERLEAVED), (3,)),
    "pmin_pairs": (lambda L, x: L.pmin(x, "i", axis_index_groups=PAIRS), (3,)),
    "psum_of_a_pytree": (lambda L, x: L.psum({"a": x, "b": (x > 0, 2 * x)}, "i", axis_index_groups=PAIRS), (2,)),
    "all_gather_pairs": (lambda L, x: L.all_gather(x, "i", axis_index_groups=PAIRS, axis=1), (3, 2)),
    "all_gather_tiled": (lambda L, x: L.all_gather(x, "i", axis_index_groups=INTERLEAVED, tiled=True), (3, 2)),
    "psum_scatter": (lambda L, x: L.psum_scatter(x, "i", axis_index_groups=PAIRS, scatter_dimension=1), (3, 2)),
    "psum_scatter_tiled": (lambda L, x: L.psum_scatter(x, "i", axis_index_groups=INTERLEAVED, tiled=True), (8, 2)),
    "all_to_all": (lambda L, x: L.all_to_all(x, "i", 0, 1, axis_index_groups=INTERLEAVED), (4, 3)),
    "pswapaxes": (lambda L, x: L.pswapaxes(x, "i", 1), (3, N, 2)),
    "pswapaxes_pairs": (lambda L, x: L.pswapaxes(x, "i", 0, axis_index_groups=PAIRS), (2, 5)),
}


@pytest.mark.parametrize("name", sorted(PMAPPED))
def test_pmapped_collectives_within_groups_match_jax(name):
    body, shape = PMAPPED[name]
    x = np.random.default_rng(0).standard_normal((N,) + shape).astype(np.float32)
    _same(numax.pmap(functools.partial(body, numax.lax), "i")(x), jax.pmap(functools.partial(body, jax.lax), "i")(x))


def _grads(api, groups):
    def loss(x):
        gathered = api.lax.all_gather(api.numpy.sin(x), "i", axis_index_groups=groups)
        scattered = api.lax.psum_scatter(gathered * gathered, "i", axis_index_groups=groups, tiled=True)
        return api.lax.psum(scattered.sum() * api.lax.axis_index("i"), "i", axis_index_groups=groups)

    f = api.pmap(lambda x: api.grad(loss)(x), "i")
    return f(np.linspace(-1, 1, 2 * N, dtype=np.float32).reshape(N, 2))


def test_gradients_through_grouped_collectives_match_jax():
    """The transposes stay within the groups: psum's is a psum, all_gather's a psum_scatter and back."""
    _same(_grads(numax, PAIRS), _grads(jax, PAIRS))


def _shard_mapped(api, mesh, body, x, in_spec, out_specs):
    return api.shard_map(body, mesh=mesh, in_specs=in_spec, out_specs=out_specs, check_vma=False)(x)


def test_shard_map_collectives_within_groups_match_jax():
    x = np.arange(N * 2, dtype=np.float32).reshape(N, 2)

    def body(L):
        return lambda v: (L.psum(v, "i", axis_index_groups=UNEVEN),
                          L.all_gather(v, "i", axis_index_groups=INTERLEAVED, tiled=True))

    specs = (PartitionSpec("i"), PartitionSpec("i"))
    ours = _shard_mapped(numax, Mesh(np.array(numax.devices()), ("i",)), body(numax.lax), x, PartitionSpec("i"), specs)
    theirs = _shard_mapped(jax, jax.sharding.Mesh(np.array(jax.devices()), ("i",)), body(jax.lax), x,
                           jax.sharding.PartitionSpec("i"), (jax.sharding.PartitionSpec("i"),) * 2)
    _same(ours, theirs)


def test_groups_over_two_mesh_axes_match_jax():
    """Positions along ('i', 'j') count with 'i' major; a group may span both axes."""
    groups = [[0, 5], [1, 4], [2, 7], [3, 6]]
    x = np.arange(N * 3, dtype=np.float32).reshape(N, 3)

    def body(L):
        return lambda v: L.psum(v, ("i", "j"), axis_index_groups=groups)

    spec = PartitionSpec(("i", "j"))
    ours = _shard_mapped(numax, Mesh(np.array(numax.devices()).reshape(2, 4), ("i", "j")), body(numax.lax), x, spec,
                         spec)
    theirs = _shard_mapped(jax, jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("i", "j")), body(jax.lax),
                           x, jax.sharding.PartitionSpec(("i", "j")), jax.sharding.PartitionSpec(("i", "j")))
    _same(ours, theirs)


def test_psum_within_groups_is_refused_with_check_vma_like_jax():
    x = np.arange(N * 2, dtype=np.float32).reshape(N, 2)
    for api, mesh, spec in ((numax, Mesh(np.array(numax.devices()), ("i",)), PartitionSpec("i")),
                            (jax, jax.sharding.Mesh(np.array(jax.devices()), ("i",)), jax.sharding.PartitionSpec("i"))):
        f = api.shard_map(lambda v: api.lax.psum(v, "i", axis_index_groups=UNEVEN), mesh=mesh, in_specs=spec,
                          out_specs=spec)
        with pytest.raises(NotImplementedError):
            f(x)


ERRORS = {  # name: (collective over the lax module, the error jax raises)
    "psum_under_vmap": (lambda L, x: L.psum(x, "i", axis_index_groups=[[0, 1], [2, 3]]), NotImplementedError),
    "pmean_under_vmap": (lambda L, x: L.pmean(x, "i", axis_index_groups=[[0, 1], [2, 3]]), NotImplementedError),
    "all_gather_under_vmap": (lambda L, x: L.all_gather(x, "i", axis_index_groups=[[0, 1], [2, 3]]),
                              NotImplementedError),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_groups_under_vmap_are_refused_like_jax(name):
    collective, error = ERRORS[name]
    x = np.arange(4.0, dtype=np.float32)
    with pytest.raises(error):
        jax.vmap(functools.partial(collective, jax.lax), axis_name="i")(x)
    with pytest.raises(error, match="axis_index_groups is not supported in vmap"):
        numax.vmap(functools.partial(collective, numax.lax), axis_name="i")(x)


@pytest.mark.parametrize("groups,error", [([[0, 1], [1, 2]], ValueError), ([list(range(N + 1))], IndexError)])
@pytest.mark.parametrize("op", ["psum", "pmean", "pmax", "pmin"])
def test_groups_that_do_not_cover_the_axis_are_refused_like_jax(groups, error, op):
    x = np.arange(float(N), dtype=np.float32)
    for api in (jax, numax):
        with pytest.raises(error):
            api.pmap(lambda v: getattr(api.lax, op)(v, "i", axis_index_groups=groups), "i")(x)


@pytest.mark.parametrize("collective", [
    lambda L, x: L.all_gather(x, "i", axis_index_groups=UNEVEN),
    lambda L, x: L.psum_scatter(x, "i", axis_index_groups=UNEVEN, tiled=True),
    lambda L, x: L.all_to_all(x, "i", 0, 0, axis_index_groups=UNEVEN, tiled=True)])
def test_uneven_groups_are_refused_where_every_group_must_have_one_size(collective):
    # (jax fails later, while lowering, with an XLA verifier error)
    with pytest.raises(ValueError, match="must all be the same size"):
        numax.pmap(functools.partial(collective, numax.lax), "i")(np.ones((N, 15), np.float32))
