"""`logsumexp`, below both packages that use it: numax.nn (logmeanexp, dot-product attention) and
numax.scipy.special (which re-exports it, as jax.nn does), so that neither package loads the other (jax keeps it
apart too, in its ops/special.py)."""

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax.core import dtypes
from numax.numpy._util import canonicalize_axes, promote_args_inexact


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) over `axis`, computed stably (shifted by the finite maximum).

    With `return_sign`, returns (log|sum|, sign(sum)); otherwise a negative sum gives nan.
    """
    if where is not None:
        a = xnp.where(where, a, 0)
    if b is not None:
        a, b = promote_args_inexact("logsumexp", a, b)
        a = xnp.where(xnp.not_equal(b, 0), a, -np.inf)
    else:
        (a,) = promote_args_inexact("logsumexp", a)
    a = xnp.asarray(a)
    rank = a.ndim
    axes = canonicalize_axes(axis, rank)
    real_a = xnp.real(a) if dtypes.is_complex(a.dtype) else a
    amax = xnp.max(real_a, axis=axes, keepdims=keepdims, where=where, initial=-np.inf)
    # Infinite maxima (all -inf, or +inf present) shift by 0 so that exp sees the infinities themselves.
    # The shift cancels mathematically; JAX keeps it out of differentiation.
    amax = lax.stop_gradient(lax.select(xnp.isfinite(amax), amax, lax.full_like(amax, 0)))
    amax_with_dims = amax if keepdims else lax.expand_dims(amax, axes)
    exp_a = lax.exp(lax.sub(a, lax.convert_element_type(xnp.broadcast_to(amax_with_dims, a.shape), a.dtype)))
    if b is not None:
        exp_a = xnp.multiply(exp_a, b)
    sumexp = xnp.sum(exp_a, axis=axes, keepdims=keepdims, where=where)
    sign = lax.sign(sumexp)
    if return_sign or not dtypes.is_complex(a.dtype):
        sumexp = lax.abs(sumexp)
    out = lax.add(lax.log(sumexp), lax.convert_element_type(amax, xnp.result_type(sumexp)))
    if return_sign:
        return out, sign
    if b is not None and not dtypes.is_complex(xnp.result_type(out)):
        out = xnp.where(lax.lt(sign, lax.full_like(sign, 0)), np.array(np.nan, xnp.result_type(out)), out)
    return out
