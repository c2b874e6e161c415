"""Probe: where numax's special functions and jax's disagree on a GPU (nan positions, large differences),
with the inputs. Run on the device machine: python3 bench/gpu_special_probe.py"""
import sys

import jax
import numpy as np

sys.path.insert(0, "tests")
import test_special_functions as t  # noqa: E402

import numax  # noqa: E402

for dtype in (np.float32, np.float64):
    if dtype == np.float64:
        numax.config.update("numax_enable_x64", True)
        jax.config.update("jax_enable_x64", True)
    cases = t._lax_cases(np.random.default_rng(0), dtype)
    for fn, jfn, args in cases:
        got, want = np.asarray(numax.jit(fn)(*args)), np.asarray(jax.jit(jfn)(*args))
        bad = np.isnan(got) != np.isnan(want)
        close = np.isclose(got, want, rtol=1e-4, atol=1e-6, equal_nan=True)
        bad |= ~close
        if bad.any():
            idx = np.nonzero(bad)[0][:6]
            print(dtype.__name__, fn.__name__, int(bad.sum()), "bad of", bad.size)
            for i in idx:
                print("   args", [a[i] for a in args], "numax", got[i], "jax", want[i])
