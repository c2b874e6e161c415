"""pytest plugin `-p pytest_numax_switch` (with bench/ on PYTHONPATH): installs numax's switch
(`numax.compat.install()`) when pytest loads its plugins, before any test module is collected, so a library's own
test files run with `import jax` importing numax, unmodified. Used by bench/ecosystem_suites.py; xdist workers
load it too, since they get the same `-p` option and environment."""

import numax.compat

numax.compat.install()
