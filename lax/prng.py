"""The threefry2x32 primitive: the Threefry-2x32 block cipher (20 rounds) that numax.random's keys hash with.

One equation in programs (as in JAX's jaxprs), lowered from its definition over lax bit operations (the
twenty rounds unrolled: a rolled loop compiles slower on XLA's CPU backend, measured). Integer-valued, so it
has no derivative; batching broadcasts its operands.
"""

import numpy as np

from ..core import caches
from ..core.avals import ShapedArray
from ..core.primitives import Primitive, batching_rules
from ..core.staging import trace_to_closed_program
from ..lowering.lower import register_lowering
from . import ad
from . import typing as T
from .batching import broadcast_batched
from .elementwise import add, bitwise_or, bitwise_xor, shift_left, shift_right_logical

__all__ = ["threefry2x32", "threefry2x32_p"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = np.uint32(0x1BD11BDA)
_UINT32 = np.dtype(np.uint32)

threefry2x32_p = Primitive("threefry2x32", multiple_results=True)


def _threefry_abstract_eval(key1, key2, x1, x2):
    avals = (key1, key2, x1, x2)
    if any(a.dtype != _UINT32 for a in avals):
        raise TypeError(f"threefry2x32 requires uint32 operands, got {T.describe(avals)}")
    shape = T.broadcast_shapes("threefry2x32", avals)
    return [ShapedArray(shape, _UINT32), ShapedArray(shape, _UINT32)]


def _rotate_left(x, distance):
    return bitwise_or(shift_left(x, np.uint32(distance)), shift_right_logical(x, np.uint32(32 - distance)))


def _rounds(key1, key2, x1, x2):
    schedule = [key1, key2, bitwise_xor(bitwise_xor(key1, key2), _KEY_PARITY)]
    x = [add(x1, key1), add(x2, key2)]
    for block in range(5):
        for distance in _ROTATIONS[block % 2]:
            x[0] = add(x[0], x[1])
            x[1] = bitwise_xor(x[0], _rotate_left(x[1], distance))
        # Key injection: the schedule rotates by one word per block, plus the block counter.
        x[0] = add(x[0], schedule[(block + 1) % 3])
        x[1] = add(add(x[1], schedule[(block + 2) % 3]), np.uint32(block + 1))
    return [x[0], x[1]]


@caches.lru(maxsize=256)
def _threefry_program(avals):
    return trace_to_closed_program(_rounds, list(avals))


def _lower_threefry(ctx, *operands):
    return ctx.lower_program(_threefry_program(tuple(ctx.avals_in)), list(operands))


def _threefry_batching(values, dims):
    operands, out_dim = broadcast_batched(values, dims)
    return threefry2x32_p.bind(*operands), [out_dim, out_dim]


threefry2x32_p.def_abstract_eval(_threefry_abstract_eval)
register_lowering(threefry2x32_p, _lower_threefry)
ad.defjvp_zero(threefry2x32_p)
batching_rules[threefry2x32_p] = _threefry_batching


def threefry2x32(key1, key2, x1, x2):
    """The Threefry-2x32 cipher of the counter words (x1, x2) under the key words (key1, key2), all uint32
    (shapes broadcast); returns the two output words."""
    return threefry2x32_p.bind(key1, key2, x1, x2)
