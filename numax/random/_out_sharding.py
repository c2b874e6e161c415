"""The `out_sharding=` keyword of JAX's samplers: the sample laid out by a Sharding or a PartitionSpec over the
mesh in context. The numbers drawn do not depend on the layout (as in JAX, whose threefry is partitionable)."""

import functools


def takes_out_sharding(sampler):
    """`sampler` with an `out_sharding=None` keyword: its result is resharded to it when one is given."""
    @functools.wraps(sampler)
    def sample(*args, out_sharding=None, **kwargs):
        out = sampler(*args, **kwargs)
        if out_sharding is None:
            return out
        from numax.lax.sharding_constraint import reshard  # (the sharding machinery only when asked for)

        return reshard(out, out_sharding)
    return sample
