"""The shape arithmetic of convolutions that `jax.lax` exports: `conv_shape_tuple` (operands in (batch, feature,
spatial...) order), `conv_general_shape_tuple` (operands in any layout named by dimension numbers) and
`conv_transpose_shape_tuple` (the output of `conv_transpose`)."""

import numpy as np

from .convolution import _transpose_padding, conv_general_permutations
from .windows import padtype_to_pads

__all__ = ["conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose_shape_tuple"]


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The output shape of a convolution of `lhs_shape` (N, C, spatial...) with `rhs_shape` (O, I, window...):
    `pads` is a padding name ('SAME', 'VALID', ...) or one (low, high) pair per spatial dimension."""
    spatial, window = tuple(lhs_shape[2:]), tuple(rhs_shape[2:])
    if isinstance(pads, str):
        pads = padtype_to_pads(spatial, window, strides, pads)
    if len(pads) != len(spatial):
        raise TypeError(f"Wrong number of explicit pads for convolution: expected {len(spatial)}, got {len(pads)}.")
    padded = [size + low + high for size, (low, high) in zip(spatial, pads)]
    if any(size < 0 for size in padded):
        raise ValueError("Negative padding is larger than the size of the corresponding dimension: got "
                         f"padding={pads} for lhs_shape[2:]={spatial}")
    out_spatial = tuple(max(0, (size - k) // s + 1) for size, k, s in zip(padded, window, strides))
    if batch_group_count > 1 and lhs_shape[0] % batch_group_count:
        raise ValueError(f"batch size {lhs_shape[0]} is not a multiple of batch_group_count={batch_group_count}")
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + out_spatial


def _in_canonical_order(lhs_shape, rhs_shape, dimension_numbers):
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    return tuple(np.take(lhs_shape, lhs_perm)), tuple(np.take(rhs_shape, rhs_perm)), np.argsort(out_perm)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """`conv_shape_tuple` for operands and output in the layouts `dimension_numbers` names (string specs)."""
    lhs, rhs, to_output = _in_canonical_order(lhs_shape, rhs_shape, dimension_numbers)
    return tuple(int(d) for d in np.take(conv_shape_tuple(lhs, rhs, window_strides, padding), to_output))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of `conv_transpose`: each spatial size grows to (size - 1) * stride - window + 2 plus the
    total padding, that of the transposed convolution for a padding name, or the sum of each given pair."""
    lhs, rhs, to_output = _in_canonical_order(lhs_shape, rhs_shape, dimension_numbers)
    if isinstance(padding, str):
        padding = [_transpose_padding(int(k), s, padding) for k, s in zip(rhs[2:], window_strides)]
    out_spatial = [(size - 1) * s - k + 2 + int(np.sum(pad))
                   for size, k, s, pad in zip(lhs[2:], rhs[2:], window_strides, padding)]
    return tuple(int(d) for d in np.take((lhs[0], rhs[0], *out_spatial), to_output))
