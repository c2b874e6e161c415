"""The array API's namespace as jax.numpy has it: scalar types as dtypes, the version and inspection
namespace, isdtype's kinds, and every standard function's signature."""

import inspect

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from array_api_util import bits64  # noqa: F401  (a fixture)
from hypothesis import given
from hypothesis import strategies as st

import numax
import numax.numpy as xnp

SCALAR_TYPE_NAMES = ["bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                     "bfloat16", "float16", "float32", "float64", "complex64", "complex128", "float8_e4m3fn", "int4"]
SCALAR_TYPES = [getattr(xnp, name) for name in SCALAR_TYPE_NAMES]


# --- scalar types: usable as dictionary keys next to anything ----------------------------------------------
# Objects that are no dtype, including ones numpy fails to parse with errors other than TypeError.
NOT_DTYPES = [{"a": 1}, {"a": (1, 2, 3, 4)}, {"names": ["a"], "formats": ["f4"], "offsets": [-1]}, ("f4", -1),
              (np.float32, -1), "not a dtype", "(", "", None, 3, 2.5, [1], object(), np.ones(2), np.float32(1.0),
              xnp.ones(2), Ellipsis, float("nan")]
anything = st.one_of(st.sampled_from(NOT_DTYPES), st.text(max_size=8), st.integers(), st.floats(),
                     st.dictionaries(st.text(max_size=3), st.integers() | st.tuples(st.integers())),
                     st.tuples(st.text(max_size=4), st.integers()), st.lists(st.integers(), max_size=3))


@given(other=anything)
def test_scalar_types_compare_with_anything_as_a_bool(other):
    for scalar_type in SCALAR_TYPES:
        equal, unequal = scalar_type == other, scalar_type != other
        assert type(equal) is bool and type(unequal) is bool and unequal is not equal
        if isinstance(other, str):
            try:
                parsed = np.dtype(other)
            except Exception:  # noqa: BLE001  (whatever numpy raises, the comparison says False)
                parsed = None
            assert equal is (parsed is not None and parsed == scalar_type.dtype), (scalar_type, other)
        else:
            assert equal is False, (scalar_type, other)


def test_scalar_types_compare_with_record_dtype_specs_that_numpy_rejects():
    # numpy raises ValueError (not TypeError) for these: the comparison used to let it escape.
    for spec in ({"a": (1, 2, 3, 4)}, {"names": ["a"], "formats": ["f4"], "offsets": [-1]}, ("f4", -1)):
        assert (xnp.float32 == spec) is False and (xnp.float32 != spec) is True
        assert spec not in [xnp.float32] and xnp.float32 not in [spec]


def test_scalar_types_equal_what_names_their_dtype_as_jax_does():
    for name in SCALAR_TYPE_NAMES:
        ours, theirs = getattr(xnp, name), getattr(jnp, name)
        dtype = np.dtype(theirs)
        for other in (dtype, dtype.type, theirs, ours):
            assert ours == other and not ours != other, (name, other)
        assert np.dtype(ours) == dtype and ours.dtype == theirs.dtype
        assert ours.__name__ == theirs.__name__
        assert [t == ours for t in SCALAR_TYPES].count(True) == (2 if name in ("bool", "bool_") else 1)
    assert xnp.float32 != xnp.float64 and xnp.int8 != np.uint8 and xnp.bfloat16 != np.float16


def test_scalar_types_hash_with_the_dtypes_they_equal():
    dtypes = [np.dtype(t.dtype) for t in SCALAR_TYPES]
    for a in SCALAR_TYPES + dtypes:
        for b in SCALAR_TYPES + dtypes:
            if a == b:
                assert hash(a) == hash(b), (a, b)
    # Tables keyed by scalar types find array dtypes, and the reverse.
    table = {xnp.float32: "f32", xnp.int8: "i8", xnp.bool: "bool", xnp.bfloat16: "bf16"}
    assert table[xnp.ones(2, xnp.float32).dtype] == "f32" and table[np.dtype(np.int8)] == "i8"
    assert table[np.dtype(np.bool_)] == "bool" and table[np.dtype(ml_dtypes.bfloat16)] == "bf16"
    assert {np.dtype(np.float16): 1}[xnp.float16] == 1 and xnp.int32 in {np.dtype(np.int32)}
    assert len({xnp.float32, np.dtype(np.float32), xnp.float32}) == 1


# --- version, namespace and inspection ---------------------------------------------------------------------
def _namespace_error(array, version):
    try:
        array.__array_namespace__(api_version=version)
    except ValueError as error:
        return str(error).replace("jax", "numax")
    return None


def test_namespace_and_version_as_jax():
    # numax implements (and these tests check) the 2024.12 standard, the version jax 0.10 claims; jax 0.11
    # claims 2025.12. Error messages are compared with jax's where the two claim the same version.
    assert xnp.__array_api_version__ == "2024.12" <= jnp.__array_api_version__
    same_version = xnp.__array_api_version__ == jnp.__array_api_version__
    ours, theirs = xnp.asarray([1.0, 2.0]), jnp.asarray([1.0, 2.0])
    assert ours.__array_namespace__() is xnp and ours.__array_namespace__(api_version=None) is xnp
    assert ours.__array_namespace__(api_version=xnp.__array_api_version__) is xnp
    for version in ("2021.12", "2022.12", "2023.12", "2025.12", "2024", "latest"):
        message = _namespace_error(ours, version)
        assert message is not None and "['2024.12']" in message, version
        if same_version:
            assert message == _namespace_error(theirs, version), version
    # Tracers answer the same, inside a jitted function.
    found = []
    numax.jit(lambda x: found.append((x.__array_namespace__(), _namespace_error(x, "2023.12"))) or x)(ours)
    assert found[0][0] is xnp and found[0][1] == _namespace_error(ours, "2023.12")


KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric",
         ("bool", "integral"), ("real floating", "complex floating"), ("signed integer", "unsigned integer", "bool"),
         ("numeric",), ()]


def test_inspection_namespace_as_jax(bits64):  # noqa: F811
    ours, theirs = xnp.__array_namespace_info__(), jnp.__array_namespace_info__()
    assert ours.capabilities() == theirs.capabilities()
    assert ours.default_device() is None and theirs.default_device() is None
    our_devices, their_devices = ours.devices(), theirs.devices()
    assert our_devices[0] is None and their_devices[0] is None
    assert [(d.platform, d.id) for d in our_devices[1:]] == [(d.platform, d.id) for d in their_devices[1:]]
    for our_device, their_device in zip(our_devices, their_devices):
        assert ours.default_dtypes(device=our_device) == theirs.default_dtypes(device=their_device)
        assert ours.dtypes(device=our_device) == theirs.dtypes(device=their_device)
    assert ours.default_dtypes()["real floating"] == (np.float64 if bits64 else np.float32)
    for kind in KINDS:
        assert ours.dtypes(kind=kind) == theirs.dtypes(kind=kind), kind
    assert set(ours.dtypes()) == {"bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32",
                                  "complex64"} | ({"int64", "uint64", "float64", "complex128"} if bits64 else set())
    for bad_kind in ("floating", ("bool", "float")):
        with pytest.raises(KeyError):
            theirs.dtypes(kind=bad_kind)
        with pytest.raises(KeyError, match="unknown dtype kind"):
            ours.dtypes(kind=bad_kind)


def test_every_inspected_device_and_dtype_makes_arrays(bits64):  # noqa: F811
    info = xnp.__array_namespace_info__()
    for device in info.devices()[:3]:
        for dtype in info.dtypes(device=device).values():
            x = xnp.empty(2, dtype=dtype, device=device)
            assert x.dtype == dtype and x.device == (device or xnp.empty(1).device)


ISDTYPE_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                  np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64, np.complex128,
                  ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.int4, ml_dtypes.uint4]


def test_isdtype_as_jax():
    for dtype in ISDTYPE_DTYPES:
        for kind in KINDS + [np.float32, (np.int8, "bool"), xnp.float16]:
            want = jnp.isdtype(np.dtype(dtype), kind)
            assert xnp.isdtype(np.dtype(dtype), kind) is want, (dtype, kind)
        assert xnp.isdtype(getattr(xnp, np.dtype(dtype).name), "numeric") is jnp.isdtype(dtype, "numeric")
    with pytest.raises(ValueError, match="Unrecognized kind='floating point'"):
        jnp.isdtype(np.float32, "floating point")
    with pytest.raises(ValueError, match="Unrecognized kind='floating point'"):
        xnp.isdtype(np.float32, "floating point")


# --- signatures -------------------------------------------------------------------------------------------
# The standard's signatures (2024.12): elementwise functions by arity, then everything else.
UNARY = """abs acos acosh asin asinh atan atanh bitwise_invert ceil conj cos cosh exp expm1 floor imag isfinite isinf
isnan log log1p log2 log10 logical_not negative positive real reciprocal round sign signbit sin sinh square sqrt tan
tanh trunc nonzero unique_all unique_counts unique_inverse unique_values matrix_transpose""".split()
BINARY = """add atan2 bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor copysign divide equal
floor_divide greater greater_equal hypot less less_equal logaddexp logical_and logical_or logical_xor maximum minimum
multiply nextafter not_equal pow remainder subtract matmul""".split()
SIGNATURES = [f"{name}(x, /)" for name in UNARY] + [f"{name}(x1, x2, /)" for name in BINARY] + """
arange(start, /, stop=None, step=1, *, dtype=None, device=None)
asarray(obj, /, *, dtype=None, device=None, copy=None)
empty(shape, *, dtype=None, device=None)
empty_like(x, /, *, dtype=None, device=None)
eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None)
from_dlpack(x, /, *, device=None, copy=None)
full(shape, fill_value, *, dtype=None, device=None)
full_like(x, /, fill_value, *, dtype=None, device=None)
linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True)
meshgrid(*arrays, indexing='xy')
ones(shape, *, dtype=None, device=None)
ones_like(x, /, *, dtype=None, device=None)
tril(x, /, *, k=0)
triu(x, /, *, k=0)
zeros(shape, *, dtype=None, device=None)
zeros_like(x, /, *, dtype=None, device=None)
astype(x, dtype, /, *, copy=True, device=None)
can_cast(from_, to, /)
finfo(type, /)
iinfo(type, /)
isdtype(dtype, kind)
result_type(*arrays_and_dtypes)
clip(x, /, min=None, max=None)
take(x, indices, /, *, axis=None)
take_along_axis(x, indices, /, *, axis=-1)
tensordot(x1, x2, /, *, axes=2)
vecdot(x1, x2, /, *, axis=-1)
broadcast_arrays(*arrays)
broadcast_to(x, /, shape)
concat(arrays, /, *, axis=0)
expand_dims(x, /, axis)
flip(x, /, *, axis=None)
moveaxis(x, source, destination, /)
permute_dims(x, /, axes)
repeat(x, repeats, /, *, axis=None)
reshape(x, /, shape, *, copy=None)
roll(x, /, shift, *, axis=None)
squeeze(x, /, axis)
stack(arrays, /, *, axis=0)
tile(x, repetitions, /)
unstack(x, /, *, axis=0)
argmax(x, /, *, axis=None, keepdims=False)
argmin(x, /, *, axis=None, keepdims=False)
count_nonzero(x, /, *, axis=None, keepdims=False)
searchsorted(x1, x2, /, *, side='left', sorter=None)
where(condition, x1, x2, /)
argsort(x, /, *, axis=-1, descending=False, stable=True)
sort(x, /, *, axis=-1, descending=False, stable=True)
cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False)
cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False)
max(x, /, *, axis=None, keepdims=False)
mean(x, /, *, axis=None, keepdims=False)
min(x, /, *, axis=None, keepdims=False)
prod(x, /, *, axis=None, dtype=None, keepdims=False)
std(x, /, *, axis=None, correction=0.0, keepdims=False)
sum(x, /, *, axis=None, dtype=None, keepdims=False)
var(x, /, *, axis=None, correction=0.0, keepdims=False)
all(x, /, *, axis=None, keepdims=False)
any(x, /, *, axis=None, keepdims=False)
diff(x, /, *, axis=-1, n=1, prepend=None, append=None)
__array_namespace_info__()
linalg.cholesky(x, /, *, upper=False)
linalg.cross(x1, x2, /, *, axis=-1)
linalg.det(x, /)
linalg.diagonal(x, /, *, offset=0)
linalg.eigh(x, /)
linalg.eigvalsh(x, /)
linalg.inv(x, /)
linalg.matmul(x1, x2, /)
linalg.matrix_norm(x, /, *, keepdims=False, ord='fro')
linalg.matrix_power(x, n, /)
linalg.matrix_rank(x, /, *, rtol=None)
linalg.matrix_transpose(x, /)
linalg.outer(x1, x2, /)
linalg.pinv(x, /, *, rtol=None)
linalg.qr(x, /, *, mode='reduced')
linalg.slogdet(x, /)
linalg.solve(x1, x2, /)
linalg.svd(x, /, *, full_matrices=True)
linalg.svdvals(x, /)
linalg.tensordot(x1, x2, /, *, axes=2)
linalg.trace(x, /, *, offset=0, dtype=None)
linalg.vecdot(x1, x2, /, *, axis=-1)
linalg.vector_norm(x, /, *, axis=None, keepdims=False, ord=2)
fft.fft(x, /, *, n=None, axis=-1, norm='backward')
fft.ifft(x, /, *, n=None, axis=-1, norm='backward')
fft.fftn(x, /, *, s=None, axes=None, norm='backward')
fft.ifftn(x, /, *, s=None, axes=None, norm='backward')
fft.rfft(x, /, *, n=None, axis=-1, norm='backward')
fft.irfft(x, /, *, n=None, axis=-1, norm='backward')
fft.rfftn(x, /, *, s=None, axes=None, norm='backward')
fft.irfftn(x, /, *, s=None, axes=None, norm='backward')
fft.hfft(x, /, *, n=None, axis=-1, norm='backward')
fft.ihfft(x, /, *, n=None, axis=-1, norm='backward')
fft.fftfreq(n, /, *, d=1.0, dtype=None, device=None)
fft.rfftfreq(n, /, *, d=1.0, dtype=None, device=None)
fft.fftshift(x, /, *, axes=None)
fft.ifftshift(x, /, *, axes=None)
ndarray.__array_namespace__(self, /, *, api_version=None)
ndarray.__dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None)
ndarray.__dlpack_device__(self, /)
ndarray.__getitem__(self, key, /)
ndarray.__setitem__(self, key, value, /)
ndarray.to_device(self, device, /, *, stream=None)
info.default_dtypes(*, device=None)
info.dtypes(*, device=None, kind=None)
""".split("\n")[1:-1]
_PARAMETER_KINDS = inspect.Parameter


def _standard_signature(text):
    name, parameters = text.split("(", 1)
    return name, inspect.signature(eval(f"lambda {parameters[:-1]}: None"))  # noqa: S307  (our own table)


def _find(namespace, dotted):
    owner = {"info": type(namespace.__array_namespace_info__()), "ndarray": type(namespace.ones(1))}
    first, _, rest = dotted.partition(".")
    target = owner[first] if first in owner else getattr(namespace, first)
    return getattr(target, rest) if rest else target


def _conformance(function, standard):
    """What keeps `function` from being called as the standard's signature allows (None: nothing). As the
    array API test suite judges it: positional parameters in their places (named as the standard names them
    unless positional-only there), keyword-only ones by name, either keyword-only or positional-or-keyword."""
    parameters = list(inspect.signature(function).parameters.values())
    if parameters and parameters[0].name == "self":
        parameters = parameters[1:]
    expected = list(standard.parameters.values())
    if expected and expected[0].name == "self":
        expected = expected[1:]
    positional = [p for p in expected if p.kind is not _PARAMETER_KINDS.KEYWORD_ONLY]
    for index, want in enumerate(positional):
        if index >= len(parameters):
            return f"lacks {want.name}"
        have = parameters[index]
        if want.kind is _PARAMETER_KINDS.VAR_POSITIONAL:
            if have.kind is not want.kind:
                return f"{have.name} should be *{want.name}"
        elif want.kind is _PARAMETER_KINDS.POSITIONAL_OR_KEYWORD and (have.name, have.kind) != (want.name, want.kind):
            return f"{have.name} ({have.kind.description}) should be {want.name} (positional or keyword)"
    by_name = {p.name: p for p in parameters}
    for want in expected[len(positional):]:
        have = by_name.get(want.name)
        if have is None or have.kind not in (want.kind, _PARAMETER_KINDS.POSITIONAL_OR_KEYWORD):
            return f"lacks the keyword {want.name}"
    return None


@pytest.mark.parametrize("text", SIGNATURES, ids=lambda text: text.split("(")[0])
def test_signature_follows_the_standard_where_jax_does(text):
    name, standard = _standard_signature(text)
    assert _conformance(_find(jnp, name), standard) is None  # the table and the judge agree with jax
    assert _conformance(_find(xnp, name), standard) is None
