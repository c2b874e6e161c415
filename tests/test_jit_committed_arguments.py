"""`jit(f, in_shardings=s)` and committed arguments, against jax (issue 29): a committed argument laid out
otherwise than `s` asks is jax's ValueError ("Sharding passed to jit does not match ..."), an uncommitted one
is laid out as asked, and one with the same blocks (on whatever devices) is taken. Without in_shardings,
committed arguments on different devices are jax's "incompatible devices" ValueError."""

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
REVERSED = Mesh(np.array(numax.devices()[::-1]).reshape(2, 4), ("x", "y"))
JREVERSED = js.Mesh(np.array(jax.devices()[::-1]).reshape(2, 4), ("x", "y"))
VALUE = np.arange(64, dtype=np.float32).reshape(8, 8)


class Lib:
    """numax's or jax's way of making each kind of argument."""

    def __init__(self, lib, np_, mesh, reversed_mesh, named, spec):
        self.lib, self.np_, self.mesh, self.reversed_mesh, self.named, self.spec = (
            lib, np_, mesh, reversed_mesh, named, spec)

    def sharded(self, *entries, mesh=None):
        return self.lib.device_put(VALUE, self.named(mesh or self.mesh, self.spec(*entries)))

    def argument(self, kind):
        if kind == "numpy":
            return VALUE
        if kind == "uncommitted":
            return self.np_.asarray(VALUE)
        if kind.startswith("device_"):
            return self.lib.device_put(VALUE, self.lib.devices()[int(kind.split("_")[1])])
        if kind == "reversed_x":
            return self.sharded("x", mesh=self.reversed_mesh)
        return self.sharded(*{"replicated": (), "x": ("x",), "y": ("y",), "x_y": ("x", "y")}[kind])


NUMAX = Lib(numax, mnp, MESH, REVERSED, NamedSharding, P)
JAX = Lib(jax, jnp, JMESH, JREVERSED, js.NamedSharding, JP)


def _outcome(lib, asked, kind):
    """(value, {device id: block}, committed) of a jitted call, or the type of its error."""
    f = lib.lib.jit(lambda v: v * 2, in_shardings=lib.named(lib.mesh, lib.spec(*asked)))
    try:
        out = f(lib.argument(kind))
    except ValueError as error:
        return type(error)
    layout = {d.id: tuple(slice(s.start, s.stop).indices(8)[:2] for s in index)
              for d, index in out.sharding.devices_indices_map(out.shape).items()}
    return np.asarray(out).tolist(), layout, out.committed


@pytest.mark.parametrize("asked", [("x",), (), ("x", "y")], ids=str)
def test_committed_arguments_against_in_shardings_match_jax(asked):
    kinds = ["numpy", "uncommitted", "device_0", "device_3", "replicated", "x", "y", "x_y", "reversed_x"]
    assert {kind: _outcome(NUMAX, asked, kind) for kind in kinds} == {kind: _outcome(JAX, asked, kind)
                                                                    for kind in kinds}


def test_the_error_message_names_both_shardings_as_jax_does():
    for lib in (NUMAX, JAX):
        f = lib.lib.jit(lambda v: v + 1, in_shardings=lib.named(lib.mesh, lib.spec("x")))
        with pytest.raises(ValueError, match="Sharding passed to jit does not match the sharding on the respective"):
            f(lib.argument("y"))


def test_a_cached_call_still_checks_a_committed_argument():
    """The first call (uncommitted) compiles; a later committed argument of the same shape is still refused."""
    for lib in (NUMAX, JAX):
        f = lib.lib.jit(lambda v: v - 1, in_shardings=lib.named(lib.mesh, lib.spec("x")))
        f(lib.argument("uncommitted"))
        with pytest.raises(ValueError, match="Sharding passed to jit"):
            f(lib.argument("device_3"))


def test_committed_arguments_on_different_devices_are_refused_without_in_shardings():
    for lib in (NUMAX, JAX):
        f = lib.lib.jit(lambda u, v: u * v)
        with pytest.raises(ValueError, match="incompatible devices"):
            f(lib.argument("device_0"), lib.argument("x"))
        with pytest.raises(ValueError, match="incompatible devices"):
            f(lib.argument("x"), lib.argument("reversed_x"))
