"""numax.triton.triton_call: Triton kernels inside numax programs, run here through Triton's interpreter (from a
host callback in the compiled program), against numpy and numax's own math: eager, under jit between other
operations, under vmap, differentiated through custom_vjp with a backward kernel, aliasing, zeroed outputs, grid
functions, several outputs, the printed program, and the errors."""

import numpy as np
import pytest
import triton_kernels as K

import numax
import numax.numpy as mnp
import numax.triton as nt

F32 = np.float32


def _add(x, y, block=32):
    n = x.shape[0]
    return nt.triton_call(x, y, n, kernel=K.add_kernel, out_shape=numax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(nt.cdiv(n, block),), BLOCK=block)


def _softmax(x):
    rows, cols = x.shape
    return nt.triton_call(x, cols, cols, kernel=K.softmax_kernel, out_shape=numax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=rows, BLOCK=nt.next_power_of_2(cols))


def test_helpers_match_jax_triton_definitions():
    assert [nt.cdiv(a, 4) for a in (0, 1, 4, 5)] == [0, 1, 1, 2]
    assert [nt.next_power_of_2(n) for n in (0, 1, 2, 3, 5, 64, 65)] == [1, 1, 2, 4, 8, 64, 128]
    assert nt.strides_from_shape((2, 3, 4)) == tuple(s // 4 for s in np.zeros((2, 3, 4), F32).strides)


def test_vector_add_eagerly_and_under_jit_between_other_operations():
    x, y = np.arange(100, dtype=F32), np.linspace(-1, 1, 100, dtype=F32)
    np.testing.assert_array_equal(np.asarray(_add(x, y)), x + y)
    f = numax.jit(lambda a, b: mnp.sin(_add(a * 2, b)) + 1)
    np.testing.assert_allclose(np.asarray(f(x, y)), np.sin(x * 2 + y) + 1, rtol=1e-6)
    assert "triton_call" in str(numax.make_jaxpr(f)(x, y)) and "add_kernel" in str(numax.make_jaxpr(f)(x, y))


def test_grid_function_scalars_and_several_outputs():
    x, y = np.arange(70, dtype=F32), np.full(70, 3, F32)
    total, difference = nt.triton_call(
        x, y, 70, kernel=K.add_sub_kernel, grid=lambda meta: (nt.cdiv(70, meta["BLOCK"]),), BLOCK=16,
        out_shape=(numax.ShapeDtypeStruct((70,), F32), numax.ShapeDtypeStruct((70,), F32)))
    np.testing.assert_array_equal(np.asarray(total), x + y)
    np.testing.assert_array_equal(np.asarray(difference), x - y)
    scaled = numax.jit(lambda a, b: nt.triton_call(a, b, 2.5, 70, kernel=K.axpy_kernel, grid=(3,), BLOCK=32,
                                                    out_type=numax.ShapeDtypeStruct((70,), F32)))(x, y)
    np.testing.assert_allclose(np.asarray(scaled), 2.5 * x + y, rtol=1e-6)


def test_aliasing_and_zeroed_outputs():
    x, accumulator = np.arange(40, dtype=F32), np.full(40, 10, F32)
    out = numax.jit(lambda a, acc: nt.triton_call(
        a, acc, 40, kernel=K.add_in_place_kernel, out_shape=numax.ShapeDtypeStruct((40,), F32), grid=(2,),
        BLOCK=32, input_output_aliases={1: 0}))(x, accumulator)
    np.testing.assert_array_equal(np.asarray(out), x + 10)
    total = nt.triton_call(x, 40, kernel=K.sum_kernel, out_shape=numax.ShapeDtypeStruct((1,), F32), grid=(4,),
                           BLOCK=16, zeroed_outputs=(0,))
    np.testing.assert_allclose(np.asarray(total), [x.sum()], rtol=1e-6)


def test_row_softmax_and_blocked_matmul_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 20)).astype(F32)
    expected = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(np.asarray(_softmax(x)), expected / expected.sum(1, keepdims=True), rtol=1e-5)
    a, b = rng.normal(size=(32, 16)).astype(F32), rng.normal(size=(16, 48)).astype(F32)
    c = nt.triton_call(a, b, 32, 48, kernel=K.matmul_kernel, out_shape=numax.ShapeDtypeStruct((32, 48), F32),
                       grid=(2, 3), K=16, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    np.testing.assert_allclose(np.asarray(c), a @ b, rtol=1e-4, atol=1e-4)


def test_vmap_runs_one_launch_per_example():
    rng = np.random.default_rng(1)
    xs, y = rng.normal(size=(3, 50)).astype(F32), rng.normal(size=50).astype(F32)
    out = numax.vmap(lambda row: _add(row, y))(xs)
    np.testing.assert_allclose(np.asarray(out), xs + y, rtol=1e-6)
    batched = numax.jit(numax.vmap(_softmax, in_axes=1, out_axes=1))(rng.normal(size=(4, 3, 8)).astype(F32))
    assert batched.shape == (4, 3, 8)
    np.testing.assert_allclose(np.asarray(batched).sum(axis=2), 1.0, rtol=1e-5)


@numax.custom_vjp
def softmax(x):
    return _softmax(x)


def _softmax_forward(x):
    y = _softmax(x)
    return y, y


def _softmax_backward(y, dy):
    rows, cols = y.shape
    return (nt.triton_call(y, dy, cols, cols, kernel=K.softmax_backward_kernel, grid=rows,
                           out_shape=numax.ShapeDtypeStruct(y.shape, y.dtype), BLOCK=nt.next_power_of_2(cols)),)


softmax.defvjp(_softmax_forward, _softmax_backward)


def test_grad_through_custom_vjp_with_a_backward_kernel_matches_numax_math():
    rng = np.random.default_rng(2)
    x, weights = rng.normal(size=(5, 12)).astype(F32), rng.normal(size=(5, 12)).astype(F32)

    def loss(softmax_fn):
        return lambda v: mnp.sum(softmax_fn(v) * weights) ** 2

    ours = numax.jit(numax.grad(loss(softmax)))(x)
    reference = numax.grad(loss(lambda v: numax.nn.softmax(v, axis=-1)))(x)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(reference), rtol=1e-4, atol=1e-5)
    with pytest.raises(NotImplementedError, match="custom_vjp"):
        numax.grad(lambda v: _softmax(v).sum())(x)


def test_errors_name_the_problem():
    x = np.ones(8, F32)
    with pytest.raises(TypeError, match="@triton.jit"):
        nt.triton_call(x, kernel=lambda *a: None, out_shape=numax.ShapeDtypeStruct((8,), F32), grid=1)
    with pytest.raises(TypeError, match="out_shape"):
        nt.triton_call(x, x, 8, kernel=K.add_kernel, out_shape=[(8,)], grid=1, BLOCK=8)
    with pytest.raises(TypeError, match="add_kernel"):  # one argument too few for the kernel's signature
        np.asarray(nt.triton_call(x, 8, kernel=K.add_kernel, out_shape=numax.ShapeDtypeStruct((8,), F32), grid=1,
                                  BLOCK=8))
    with pytest.raises(ValueError, match="aliases"):
        nt.triton_call(x, x, 8, kernel=K.add_kernel, out_shape=numax.ShapeDtypeStruct((4,), F32), grid=1, BLOCK=8,
                       input_output_aliases={0: 0})
