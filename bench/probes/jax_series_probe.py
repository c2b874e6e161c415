"""Records what the installed jax.numpy gives for Python scalars and special float values, to find where two
jax releases differ (numax follows the release matching its jaxlib: numax.config.jax_semantics).

    JAX_PLATFORMS=cpu python3 bench/probes/jax_series_probe.py OUT.json     # then diff two runs' files

Every callable of jax.numpy gets Python-scalar arguments (dtype, weak type, value bits recorded); the
elementwise ones also get arrays of special values (nan, infs, signed zeros, huge and tiny) under jax.jit.
"""

import json
import sys
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

warnings.simplefilter("ignore")
SCALAR_ARGS = [(2,), (-3,), (0,), (1.5,), (True,), (2, 3), (2, 1.5), (1.5, 2), (0, 0), (True, 2)]
SPECIALS = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1.5, -1.5, 1e30, -1e30, 1e-30, 0.5, 1.0, -1.0, 2.0]
DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16]


def describe(value):
    try:
        value = np.asarray(value) if not isinstance(value, (tuple, list)) else value
    except Exception as error:  # noqa: BLE001
        return f"unreadable {type(error).__name__}"
    if isinstance(value, (tuple, list)):
        return [describe(v) for v in value]
    return f"{value.dtype}{value.shape}:{value.tobytes().hex()[:96]}"


def weak_of(value):
    if isinstance(value, (tuple, list)):
        return [weak_of(v) for v in value]
    return bool(getattr(value, "weak_type", False))


def main(path):
    record = {"jax": jax.__version__, "backend": jax.default_backend()}
    names = sorted(n for n in dir(jnp) if not n.startswith("_") and callable(getattr(jnp, n)))
    for name in names:
        fn = getattr(jnp, name)
        if isinstance(fn, type):
            continue
        for args in SCALAR_ARGS:
            try:
                out = fn(*args)
            except Exception as error:  # noqa: BLE001
                record[f"{name}{args}"] = f"error {type(error).__name__}"
                continue
            if not hasattr(out, "dtype") and not isinstance(out, (tuple, list)):
                continue
            record[f"{name}{args}"] = [describe(out), weak_of(out)]
        for dtype in DTYPES:
            x = np.array(SPECIALS, dtype)
            y = x[::-1].copy()
            for label, call in (("1", lambda a, b: fn(a)), ("2", lambda a, b: fn(a, b))):
                try:
                    eager = call(x, y)
                    jitted = jax.jit(call)(x, y)
                except Exception:  # noqa: BLE001
                    continue
                record[f"{name}[{np.dtype(dtype).name}]{label}"] = [describe(eager), describe(jitted)]
    with open(path, "w") as file:
        json.dump(record, file, indent=0, sort_keys=True)
    print("recorded", len(record), "entries to", path)


if __name__ == "__main__":
    main(sys.argv[1])
