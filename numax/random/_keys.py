"""PRNG keys and the threefry2x32 counter-based hash behind them.

Owns the key representations (raw `uint32[2]` keys from `PRNGKey`, typed keys from `key`), seeding,
`split`, `fold_in` and the raw bit streams the samplers draw from. The streams follow JAX's default
implementation (threefry2x32 with `jax_threefry_partitionable=True`), so the same seed gives the same
bits as `jax.random`.
"""

import math

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax._api_extras import typeof_handlers
from numax.core import array_type, dtypes
from numax.core.avals import ShapedArray
from numax.core.config import config
from numax.core.errors import ConcretizationTypeError
from numax.core.pytree import register_pytree_node
from numax.core.pytree_user import register_user_leaf
from numax.core.trace import Tracer, get_aval_of
from numax.lax.prng import threefry2x32
from numax.lowering.array import Array
from numax.transforms.aot import ShapeDtypeStruct
from numax.transforms.jit import named_jit

uint32 = np.dtype(np.uint32)
UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: uint32, 64: np.dtype(np.uint64)}


# --- the threefry2x32 hash (the primitive lives in numax.lax.prng) ----------------------------------
def _key_words(key_data):
    return (lax.reshape(lax.slice(key_data, (0,), (1,)), ()),
            lax.reshape(lax.slice(key_data, (1,), (2,)), ()))


def _threefry_2x32(key_data, count):
    """Hashes a flat uint32 `count` array: its halves are the two counter words (padded to even)."""
    size = get_aval_of(count).shape[0]
    if size % 2:
        count = lax.concatenate([count, lax.full((1,), np.uint32(0))], 0)
    half = (size + 1) // 2
    first, second = lax.slice(count, (0,), (half,)), lax.slice(count, (half,), (2 * half,))
    out = lax.concatenate(list(threefry2x32(*_key_words(key_data), first, second)), 0)
    return lax.slice(out, (0,), (size,))


def iota_2x32(shape):
    """The row-major index of every element of `shape` as a 64-bit count split in (high, low) words.

    Low words wrap modulo 2**32, so uint32 arithmetic computes them exactly; the high words are zero
    below 2**32 elements.
    """
    if math.prod(shape) > 2 ** 32:
        raise NotImplementedError(f"random bits for more than 2**32 elements (shape {shape}) are not supported")
    if not shape:
        return lax.full((), np.uint32(0)), lax.full((), np.uint32(0))
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    low = None
    for dimension, stride in enumerate(strides):
        index = lax.broadcasted_iota(uint32, shape, dimension)
        if stride != 1:
            index = lax.mul(index, np.uint32(stride % 2 ** 32))
        low = index if low is None else lax.add(low, index)
    return lax.full(shape, np.uint32(0)), low


# --- key operations on raw uint32[2] data (jitted like JAX's, so numerics match) -------------------
def seed_impl(seed):
    aval = get_aval_of(seed)
    low = lax.convert_element_type(seed, uint32)
    if aval.dtype.itemsize == 8:
        high = lax.convert_element_type(lax.shift_right_logical(seed, np.array(32, aval.dtype)), uint32)
    else:
        high = lax.full((), np.uint32(0))
    return lax.concatenate([lax.reshape(high, (1,)), lax.reshape(low, (1,))], 0)


def split_impl(key_data, shape):
    high, low = iota_2x32(shape)
    bits1, bits2 = threefry2x32(*_key_words(key_data), high, low)
    ndim = len(shape)
    return lax.concatenate([lax.expand_dims(bits1, (ndim,)), lax.expand_dims(bits2, (ndim,))], ndim)


def fold_in_impl(key_data, data):
    return _threefry_2x32(key_data, seed_impl(data))


def random_bits_impl(key_data, bit_width, shape):
    high, low = iota_2x32(shape)
    bits1, bits2 = threefry2x32(*_key_words(key_data), high, low)
    dtype = UINT_DTYPES[bit_width]
    if bit_width == 64:
        wide1, wide2 = lax.convert_element_type(bits1, dtype), lax.convert_element_type(bits2, dtype)
        return lax.bitwise_or(lax.shift_left(wide1, np.array(32, dtype)), wide2)
    mixed = lax.bitwise_xor(bits1, bits2)
    return mixed if bit_width == 32 else lax.convert_element_type(mixed, dtype)


seed_data = named_jit(seed_impl, "threefry_seed")
split_data = named_jit(split_impl, "threefry_split", static_argnums=(1,))
fold_in_data = named_jit(fold_in_impl, "threefry_fold_in")
random_bits_data = named_jit(random_bits_impl, "threefry_random_bits", static_argnums=(1, 2))


# --- typed keys -------------------------------------------------------------------------------------
class KeyDType(dtypes.ExtendedDType):
    """The dtype of typed threefry keys; prints as JAX's `key<fry>`."""

    name = "key<fry>"
    type = dtypes.prng_key
    impl = "threefry2x32"
    itemsize = 8

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, KeyDType) or other == "key<fry>"

    def __hash__(self):
        return hash("key<fry>")

    def abstract_array(self, struct):
        """Keys of `struct`'s shape over a struct of their uint32 key data."""
        return PRNGKeyArray(ShapeDtypeStruct(tuple(struct.shape) + (2,), uint32, sharding=struct.sharding))


threefry_key_dtype = KeyDType()


class KeyShapedArray(ShapedArray):
    """The abstract value of a typed key array (`typeof(key)`, `key.aval`): JAX's ShapedArray of an extended dtype,
    `key<fry>[]`. Inside numax's transformations keys travel as their uint32 data; this type is what users see."""

    __slots__ = ()

    def __init__(self, shape, dtype=threefry_key_dtype, weak_type=False):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.weak_type = False
        self.vma = frozenset()
        self._hash = hash((self.shape, "key<fry>"))

    def update(self, shape=None, dtype=None, weak_type=None, vma=None):
        return KeyShapedArray(self.shape if shape is None else shape)

    def str_short(self):
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"

    __str__ = str_short

    def __eq__(self, other):
        return type(other) is KeyShapedArray and self.shape == other.shape

    __hash__ = ShapedArray.__hash__

    def __repr__(self):
        return f"ShapedArray({self.str_short()})"


class PRNGKeyArray:
    """An array of typed PRNG keys (`numax.random.key`): shape excludes the two uint32 words of each key.

    A pytree with one leaf (the uint32 key data), so keys pass through `jit` as arguments and results.
    Keys do no arithmetic; `numax.random.key_data` gives the raw words.
    """

    __slots__ = ("_data",)
    dtype = threefry_key_dtype

    def __init__(self, data):
        self._data = data

    @property
    def shape(self):
        return tuple(get_aval_of(self._data).shape[:-1])

    @property
    def aval(self):
        return KeyShapedArray(self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of an unsized key array")
        return self.shape[0]

    def __getitem__(self, index):
        # The trailing key-word dimension is never indexed.
        index = index if isinstance(index, tuple) else (index,)
        if Ellipsis not in index:
            index = index + (Ellipsis,)
        return PRNGKeyArray(self._data[index + (slice(None),)])

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        return xnp.all(xnp.equal(self._data, other._data), axis=-1)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else ~equal

    __hash__ = None

    # --- as jax's key arrays: what moves keys around, and their placement ---------------------------------
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    T = property(lambda self: self.transpose())

    def reshape(self, *shape, order="C"):
        return xnp.reshape(self, shape[0] if len(shape) == 1 else shape, order=order)

    def ravel(self, order="C"):
        return xnp.ravel(self, order)

    flatten = ravel

    def squeeze(self, axis=None):
        return xnp.squeeze(self, axis)

    def swapaxes(self, axis1, axis2):
        return xnp.swapaxes(self, axis1, axis2)

    def transpose(self, *axes):
        return xnp.transpose(self, axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes or None)

    def take(self, indices, axis=None, **kwargs):
        return xnp.take(self, indices, axis=axis, **kwargs)

    def copy(self):
        return PRNGKeyArray(self._data.copy() if hasattr(self._data, "copy") else self._data)

    def _placed(self, what):
        if isinstance(self._data, Tracer):
            raise ConcretizationTypeError(self._data, f"the {what} of a traced key array")
        return getattr(self._data, what)

    device = property(lambda self: self._placed("device"))
    sharding = property(lambda self: self._placed("sharding"))
    committed = property(lambda self: self._placed("committed"))

    def devices(self):
        return self._placed("devices")()

    def delete(self):
        self._placed("delete")()

    def is_deleted(self):
        return self._placed("is_deleted")()

    def block_until_ready(self):
        if hasattr(self._data, "block_until_ready"):
            self._data.block_until_ready()
        return self

    def __repr__(self):
        if isinstance(self._data, Tracer):
            return f"Traced<key<fry>{list(self.shape)}>"
        return f"Array({self.shape}, dtype=key<fry>) overlaying:\n{np.asarray(self._data)}"


array_type.Array.register(PRNGKeyArray)  # typed keys are arrays to user code, as in jax
# To numax's transformations a key array is a node over its key data (jit, vmap, grad, scan pass keys as that data
# and rebuild them); to users, as in JAX, it is one leaf (core/pytree_user.py), whose abstract value (what
# eval_shape gives for it) is a ShapeDtypeStruct of the key dtype.
register_pytree_node(PRNGKeyArray, lambda keys: ([keys._data], None), lambda _, children: PRNGKeyArray(children[0]))
register_user_leaf(PRNGKeyArray, abstract=lambda keys: ShapeDtypeStruct(keys._data.shape[:-1], keys.dtype))
typeof_handlers[PRNGKeyArray] = lambda keys: keys.aval


def _is_array_like(value):
    return isinstance(value, (Array, Tracer, np.ndarray, np.generic))


def check_key_data(name, key_data, allow_batched=False):
    """Validates raw key data: uint32 with trailing dimension 2 (only a single key unless batched)."""
    if not _is_array_like(key_data):
        raise TypeError(f"{name}: unexpected PRNG key type {type(key_data).__name__}; create keys with "
                        "numax.random.key(seed) or numax.random.PRNGKey(seed)")
    aval = get_aval_of(key_data)
    if aval.dtype != uint32 or not aval.shape or aval.shape[-1] != 2:
        raise TypeError(f"{name}: invalid PRNG key data: expected a uint32 array with trailing dimension 2, got "
                        f"{aval.dtype.name}{list(aval.shape)}")
    if not allow_batched and aval.ndim != 1:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape {aval.shape[:-1]} != (); "
                         "split or index the keys first")
    return key_data


def unwrap(name, key, allow_batched=False):
    """(raw uint32 key data, whether `key` was a typed key) for either kind of key."""
    if isinstance(key, PRNGKeyArray):
        return check_key_data(name, key._data, allow_batched), True
    if isinstance(key, (np.ndarray, np.generic)) and key.dtype != uint32:
        raise TypeError(f"{name}: invalid PRNG key data: expected uint32, got {key.dtype}")
    return check_key_data(name, key, allow_batched), False


def rewrap(typed, key_data):
    return PRNGKeyArray(key_data) if typed else key_data


# --- public key API -----------------------------------------------------------------------------------
def _seed_array(name, seed):
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{name} accepts a scalar seed, but was given a PRNG key")
    if type(seed) is int:
        # As JAX does in 32-bit mode: a Python int seed wraps to its low 32 bits.
        seed = np.int64(seed)
        if not config.enable_x64:
            seed = seed.astype(np.int32)
    elif isinstance(seed, (bool, float, complex)):
        raise TypeError(f"{name}: PRNG key seed must be an integer; got {seed!r}")
    elif not _is_array_like(seed):
        seed = np.asarray(seed)
    aval = get_aval_of(seed)
    if aval.shape:
        raise TypeError(f"{name} accepts a scalar seed, but was given an array of shape {aval.shape} != ()")
    if not dtypes.is_integer(aval.dtype):
        raise TypeError(f"{name}: PRNG key seed must be an integer; got dtype {aval.dtype.name}")
    if isinstance(seed, (np.ndarray, np.generic)):
        seed = np.asarray(seed, dtypes.canonicalize_dtype(aval.dtype))
    return seed


def _check_impl(impl):
    if impl not in (None, "threefry2x32"):
        raise ValueError(f"unsupported PRNG implementation {impl!r}; numax implements 'threefry2x32'")


def PRNGKey(seed):
    """A raw (legacy) key: a uint32[2] array made from an integer `seed`."""
    return seed_data(_seed_array("PRNGKey", seed))


def key(seed, *, impl=None):
    """A typed key (dtype `key<fry>`, shape ()) made from an integer `seed`."""
    _check_impl(impl)
    return PRNGKeyArray(seed_data(_seed_array("key", seed)))


def key_dtype(impl_spec=None):
    """The dtype of typed keys (`key<fry>`); only the threefry2x32 implementation exists."""
    _check_impl(impl_spec)
    return threefry_key_dtype


def key_data(keys):
    """The uint32 words under a key array (raw keys pass through)."""
    data, _ = unwrap("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array, *, impl=None):
    """Typed keys over uint32 data whose trailing dimension is 2."""
    _check_impl(impl)
    if isinstance(key_bits_array, (list, tuple)):
        key_bits_array = np.asarray(key_bits_array, np.uint32)
    return PRNGKeyArray(check_key_data("wrap_key_data", key_bits_array, allow_batched=True))


def key_impl(keys):
    unwrap("key_impl", keys, allow_batched=True)
    return "threefry2x32"


def split(key, num=2):
    """`num` new keys (an int, or a shape tuple) from one key: a new leading axis (or axes)."""
    data, typed = unwrap("split", key)
    shape = tuple(int(n) for n in num) if isinstance(num, (tuple, list)) else (int(num),)
    if any(n < 0 for n in shape):
        raise ValueError(f"split: num must be non-negative, got {num}")
    return rewrap(typed, split_data(data, shape))


def fold_in(key, data):
    """A new key from `key` and a 32-bit integer `data`."""
    key_words, typed = unwrap("fold_in", key)
    if isinstance(data, bool) or (type(data) is not int and not _is_array_like(data)):
        data = np.asarray(data)
    if type(data) is int:
        message = np.asarray(data, uint32)  # raises OverflowError outside [0, 2**32), as JAX does
    else:
        aval = get_aval_of(data)
        if aval.shape:
            raise TypeError(f"fold_in accepts a scalar, but was given an array of shape {aval.shape} != ()")
        message = lax.convert_element_type(data, uint32)
    return rewrap(typed, fold_in_data(key_words, message))


def random_bits(key_words, bit_width, shape):
    return random_bits_data(key_words, int(bit_width), tuple(shape))


def clone(key):
    return key
