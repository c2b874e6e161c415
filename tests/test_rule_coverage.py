"""Every primitive numax can lower has its JVP and batching rules, except the few listed here with the
reason (the same exceptions JAX makes)."""

import importlib
import pkgutil

from numax.core.primitives import batching_rules, jvp_rules
from numax.lowering.lower import lowering_rules

import numax
import numax.export._call  # noqa: F401  (call_exported_p)
import numax.random._gamma  # noqa: F401  (random_gamma_p)

# A primitive registers its rules when its module loads, and numax loads most lax families on first use:
# load every module that can define one.
for _package in (numax.lax, numax.transforms):
    for _module in pkgutil.iter_modules(_package.__path__):
        importlib.import_module(f"{_package.__name__}.{_module.name}")

# numax's own primitives: the table as collection leaves it, before any test (or documentation page) registers
# primitives of its own through numax.extend.
NUMAX_PRIMITIVES = tuple(lowering_rules)

# Primitives without operands never meet a JVP or batch tracer; JAX defines no derivative for the others.
NO_JVP = {"iota": "no operands", "axis_index": "no operands", "nextafter": "JAX has no derivative",
          "pmax": "JAX has no derivative", "pmin": "JAX has no derivative",
          "call_exported": "differentiated through the export's own VJP (forward mode raises, as in jax)"}
NO_BATCHING = {"iota": "no operands"}


def test_every_primitive_has_a_jvp_rule():
    missing = sorted(p.name for p in NUMAX_PRIMITIVES if p not in jvp_rules)
    assert missing == sorted(NO_JVP)


def test_every_primitive_has_a_batching_rule():
    missing = sorted(p.name for p in NUMAX_PRIMITIVES if p not in batching_rules)
    assert missing == sorted(NO_BATCHING)
