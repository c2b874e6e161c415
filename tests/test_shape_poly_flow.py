"""Control flow and convolution under a symbolic batch: cond/switch, while_loop, fori_loop and scan (over a
static axis and over the symbolic one) exported once per family and called at a few batch sizes against numpy;
an RNN and the gradient of its loss; unsupported primitives inside loop and branch bodies still name themselves."""

import numpy as np
import pytest
from numax.transforms.aot import ShapeDtypeStruct

import numax
import numax.numpy as jnp
from numax import export, lax
from numax.export import symbolic_shape
from tests.shape_poly_util import check_export

_F32 = np.float32
_BATCH_X = ShapeDtypeStruct(symbolic_shape("b, 8"), _F32)
_SQUARE = ShapeDtypeStruct((8, 8), _F32)


# --- cond, switch, while_loop, fori_loop, scan ------------------------------------------------------------------
def _control_flow(x, w, index):
    running_sum = lambda total, row: (total + row, total.sum())  # noqa: E731
    doubled = lax.while_loop(lambda state: state[0] < 3, lambda state: (state[0] + 1, state[1] * 2.0), (0, x))[1]
    column_scan = lax.scan(lambda carry, column: (carry * column.sum(), carry.sum()), x, jnp.ones((4, 3), _F32))
    return (lax.cond(x.sum() > 0, lambda y: y * 2.0, lambda y: y - 1.0, x),
            lax.switch(index, [lambda y: y + 1.0, lambda y: y @ w, lambda y: -y], x),
            doubled,
            lax.fori_loop(0, 3, lambda i, carry: jnp.tanh(carry @ w), x),
            *lax.scan(running_sum, jnp.zeros(8, _F32), x),
            *lax.scan(running_sum, jnp.zeros(8, _F32), x, reverse=True),
            *column_scan,
            lax.fori_loop(1, x.shape[0], lambda i, total: total + x[i], jnp.zeros(8, _F32)),  # a symbolic bound
            lax.scan(running_sum, jnp.zeros(8, _F32), x, unroll=True)[1])


def _control_flow_reference(x, w, index):
    fori = x
    for _ in range(3):
        fori = np.tanh(fori @ w)
    forward = np.cumsum(x, axis=0)
    backward = np.cumsum(x[::-1], axis=0)[::-1]
    before_forward = np.concatenate([np.zeros((1, 8), _F32), forward[:-1]]).sum(axis=1)
    before_backward = np.concatenate([backward[1:], np.zeros((1, 8), _F32)]).sum(axis=1)
    return (x * 2 if x.sum() > 0 else x - 1, [x + 1, x @ w, -x][min(max(index, 0), 2)], x * 8, fori,
            forward[-1], before_forward, backward[0], before_backward,
            x * 3.0 ** 4, x.sum() * 3.0 ** np.arange(4), x[1:].sum(axis=0), before_forward)


def _x_w_index(rng, size):
    return (rng.normal(size=(size, 8)).astype(_F32), (rng.normal(size=(8, 8)) / 3).astype(_F32),
            np.int32(rng.integers(-1, 4)))


def test_cond_switch_while_fori_and_scans_over_static_and_symbolic_axes():
    exported = check_export(_control_flow, _control_flow_reference,
                             (_BATCH_X, _SQUARE, ShapeDtypeStruct((), np.int32)), _x_w_index, rtol=1e-4)
    text = exported.mlir_module()
    assert "stablehlo.case" in text and "stablehlo.while" in text


# --- an RNN over a static time axis and the gradient of its loss ---------------------------------------------
_STEPS = 4
_SEQUENCE = ShapeDtypeStruct(symbolic_shape(f"{_STEPS}, b, 8"), _F32)


def _rnn_outputs(w, u, xs):
    def step(hidden, x):
        hidden = jnp.tanh(hidden @ w + x @ u)
        return hidden, hidden.sum(axis=1)

    return lax.scan(step, jnp.zeros((xs.shape[1], 8), _F32), xs)


def _rnn_loss(w, u, xs):
    return jnp.mean(_rnn_outputs(w, u, xs)[0] ** 2)


def _rnn(w, u, xs):
    return (*_rnn_outputs(w, u, xs), *numax.grad(_rnn_loss, argnums=(0, 1))(w, u, xs))


def _rnn_reference(w, u, xs):
    hiddens = [np.zeros((xs.shape[1], 8), _F32)]
    for x in xs:
        hiddens.append(np.tanh(hiddens[-1] @ w + x @ u))
    # Backpropagation through time of mean(h_T ** 2).
    grad_w, grad_u = np.zeros_like(w), np.zeros_like(u)
    grad_hidden = 2 * hiddens[-1] / hiddens[-1].size
    for t in range(len(xs), 0, -1):
        grad_pre = grad_hidden * (1 - hiddens[t] ** 2)
        grad_w += hiddens[t - 1].T @ grad_pre
        grad_u += xs[t - 1].T @ grad_pre
        grad_hidden = grad_pre @ w.T
    return hiddens[-1], np.stack([h.sum(axis=1) for h in hiddens[1:]]), grad_w, grad_u


def _rnn_args(rng, size):
    return ((rng.normal(size=(8, 8)) / 3).astype(_F32), (rng.normal(size=(8, 8)) / 3).astype(_F32),
            rng.normal(size=(_STEPS, size, 8)).astype(_F32))


def test_rnn_scan_and_the_gradient_of_its_loss():
    exported = check_export(_rnn, _rnn_reference, (_SQUARE, _SQUARE, _SEQUENCE), _rnn_args, rtol=1e-4)
    assert exported.out_avals[1].shape == symbolic_shape(f"{_STEPS}, b")


def _symbolic_length_loss(w, x):
    final, ys = lax.scan(lambda hidden, row: (jnp.tanh(hidden @ w + row), hidden.sum()), jnp.zeros(8, _F32), x)
    return (final ** 2).sum() + ys.sum()


def _symbolic_length_reference(w, x):
    hiddens = [np.zeros(8, _F32)]
    for row in x:
        hiddens.append(np.tanh(hiddens[-1] @ w + row))
    grad_hidden = 2 * hiddens[-1]
    grad_w = np.zeros_like(w)
    for t in range(len(x), 0, -1):
        grad_pre = grad_hidden * (1 - hiddens[t] ** 2)
        grad_w += np.outer(hiddens[t - 1], grad_pre)
        grad_hidden = grad_pre @ w.T + (1.0 if t > 1 else 0.0)  # h_{t-1}.sum() is y_t (h_0 is a constant)
    return (grad_w,)


def _w_and_x(rng, size):
    return (rng.normal(size=(8, 8)) / 3).astype(_F32), rng.normal(size=(size, 8)).astype(_F32)


def test_gradient_of_a_scan_over_the_symbolic_axis():
    check_export(lambda w, x: (numax.grad(_symbolic_length_loss)(w, x),), _symbolic_length_reference,
                  (_SQUARE, _BATCH_X), _w_and_x, rtol=1e-4)


# --- unsupported primitives inside bodies ----------------------------------------------------------------------
def _window_sum(y):
    return lax.reduce_window(y, 0.0, lax.add, (1, 2), (1, 1), "VALID").sum() * y


@pytest.mark.parametrize("body", [
    lambda x: lax.cond(x.sum() > 0, _window_sum, lambda y: y, x),
    lambda x: lax.fori_loop(0, 2, lambda i, y: _window_sum(y), x),
    lambda x: lax.while_loop(lambda y: y.sum() > 0, _window_sum, x),
    lambda x: lax.scan(lambda carry, row: (carry, _window_sum(carry)), x, jnp.ones((3, 2), _F32))[1],
], ids=["cond", "fori_loop", "while_loop", "scan"])
def test_unsupported_primitive_inside_a_body_names_itself(body):
    with pytest.raises(NotImplementedError, match=r"primitive reduce_window_sum is not supported with symbolic"):
        export.export(numax.jit(body))(_BATCH_X)


# --- convolution -------------------------------------------------------------------------------------------------
_IMAGES = ShapeDtypeStruct(symbolic_shape("b, 6, 6, 2"), _F32)
_TALL_IMAGES = ShapeDtypeStruct(symbolic_shape("b, h, 5, 2"), _F32)
_KERNEL = ShapeDtypeStruct((3, 3, 2, 4), _F32)
_NHWC = ("NHWC", "HWIO", "NHWC")


def _cnn_loss(kernel, images):
    features = lax.conv_general_dilated(images, kernel, (1, 1), "SAME", dimension_numbers=_NHWC)
    return jnp.mean(jnp.maximum(features, 0.0) ** 2)


def _convolutions(images, kernel, tall_images):
    channels_first = lax.conv_general_dilated(images.transpose(0, 3, 1, 2), kernel.transpose(3, 2, 0, 1), (2, 1),
                                              ((1, 0), (2, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW"))
    tall = lax.conv_general_dilated(tall_images, kernel, (1, 1), "SAME", dimension_numbers=_NHWC)
    return _cnn_loss(kernel, images), numax.grad(_cnn_loss)(kernel, images), channels_first, tall


def _correlate(images, kernel, strides, padding):
    """NHWC images with an HWIO kernel, through numpy windows."""
    padded = np.pad(images, ((0, 0), *padding, (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, kernel.shape[:2], axis=(1, 2))
    windows = windows[:, ::strides[0], ::strides[1]]  # (n, out_h, out_w, channels, kernel_h, kernel_w)
    return np.einsum("nhwcij,ijco->nhwo", windows, kernel), windows


def _convolutions_reference(images, kernel, tall_images):
    features, windows = _correlate(images, kernel, (1, 1), ((1, 1), (1, 1)))
    positive = np.maximum(features, 0.0)
    grad_features = 2 * positive / features.size
    kernel_grad = np.einsum("nhwcij,nhwo->ijco", windows, grad_features)
    channels_first = _correlate(images, kernel, (2, 1), ((1, 0), (2, 1)))[0].transpose(0, 3, 1, 2)
    tall = _correlate(tall_images, kernel, (1, 1), ((1, 1), (1, 1)))[0]
    return np.mean(positive ** 2), kernel_grad, channels_first, tall


def _conv_args(rng, size):
    return (rng.normal(size=(size, 6, 6, 2)).astype(_F32), rng.normal(size=(3, 3, 2, 4)).astype(_F32),
            rng.normal(size=(size, size + 3, 5, 2)).astype(_F32))


def test_cnn_forward_and_weight_gradient_with_a_symbolic_batch():
    exported = check_export(_convolutions, _convolutions_reference, (_IMAGES, _KERNEL, _TALL_IMAGES), _conv_args,
                            rtol=1e-4)
    assert exported.out_avals[2].shape == symbolic_shape("b, 4, 3, 7")
    assert exported.out_avals[3].shape == symbolic_shape("b, h, 5, 4")


def test_padding_that_depends_on_a_symbolic_spatial_dimension_raises():
    def strided(images, kernel):
        return lax.conv_general_dilated(images, kernel, (2, 1), "SAME", dimension_numbers=_NHWC)

    with pytest.raises(NotImplementedError, match="'SAME' padding of the symbolic spatial dimensions"):
        export.export(numax.jit(strided))(_TALL_IMAGES, _KERNEL)
