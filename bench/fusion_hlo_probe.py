"""Case (c) of bench/fusion.py: numax's program on XLA only against jax's, as StableHLO and as the kernels XLA
compiles them into (why their times differ), at the benchmark's size.

    python3 bench/fusion_hlo_probe.py
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from fusion import layernorm_gelu_residual  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402

x = np.zeros((16384, 4096), np.float16)
s = np.zeros(4096, np.float16)
numax_fn = numax.jit(layernorm_gelu_residual(xnp, numax.lax.rsqrt, numax.nn.gelu))
jax_fn = jax.jit(layernorm_gelu_residual(jnp, jax.lax.rsqrt, jax.nn.gelu))
print("== numax program\n", numax.make_jaxpr(layernorm_gelu_residual(xnp, numax.lax.rsqrt, numax.nn.gelu))(x, s, s))
print("== jax program\n", jax.make_jaxpr(layernorm_gelu_residual(jnp, jax.lax.rsqrt, jax.nn.gelu))(x, s, s))
numax_hlo = numax_fn.lower(x, s, s).compile().as_text()
jax_hlo = jax_fn.lower(x, s, s).compile().as_text()
for name, text in (("numax", numax_hlo), ("jax", jax_hlo)):
    entry = text[text.index("ENTRY"):]
    print(f"== {name}: compiled entry computation")
    print("\n".join(re.sub(r", metadata=\{[^}]*\}", "", line) for line in entry.splitlines()))
