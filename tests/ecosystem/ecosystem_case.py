"""How an ecosystem case module declares its cases: `@case` (or `@case(rtol=..., atol=...)`) on a function of no
arguments that uses a library built on jax (optax, flax, chex, equinox) exactly as its users do, `import jax`
included, and returns a pytree of arrays (losses, parameters, outputs). Each module runs twice in fresh
processes, on jax and on numax under the switch (`numax.compat.install()`), and the two results must agree
(test_ecosystem.py). A module imports only this helper and the libraries: what it imports decides which side
it runs on."""

CASES = {}  # name -> (function, tolerances)


def case(function=None, *, rtol=1e-5, atol=1e-6):
    """Registers a case; the tolerances compare every array leaf numax gives to jax's."""
    def register(function):
        CASES[function.__name__] = (function, {"rtol": rtol, "atol": atol})
        return function

    return register(function) if function is not None else register
