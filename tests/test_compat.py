"""The switch (numax.compat, `python -m numax.run`): under it `import jax` and every `jax.*` module are numax's,
jax's version is reported, a module numax lacks fails clearly, and a process never mixes the two libraries.
Each case runs in a fresh process (the switch changes the import system for the whole process)."""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest


def _run(code, *args, env=None):
    command = [sys.executable, "-m", "numax.run", *args] if code is None else \
        [sys.executable, "-c", textwrap.dedent(code), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env=None if env is None else {**os.environ, **env})


def test_jax_modules_are_numax_modules():
    result = _run("""
        import numax.compat
        numax.compat.install()
        import jax, jax.numpy as jnp, jax.lax, jax.random, jax.tree_util, jax.nn, jax.scipy.special, jax.dtypes
        from jax import core
        import numax, numax.numpy, numax.lax, numax.random, numax.tree_util, numax.nn, numax.scipy.special
        import numax._src.core
        assert jnp is numax.numpy and jax.lax is numax.lax and jax.random is numax.random
        assert jax.tree_util is numax.tree_util and jax.nn is numax.nn and jax.scipy.special is numax.scipy.special
        assert core is numax._src.core and jax.core is numax._src.core  # numax.core is numax's engine package
        assert jax.jit is numax.jit and jax.Array is numax.Array and jax.numpy.ndarray is numax.Array
        assert jnp.__spec__.name == "numax.numpy"  # numax's modules keep their own identity
        assert jax.__version_info__ == numax.version.__version_info__ >= (0, 10)
        assert jax.__version__ == numax.version.__version__ != numax.__version__
        x = jnp.arange(4.0)
        assert isinstance(x, jax.Array) and float(jax.jit(jax.grad(lambda v: (v * v).sum()))(x)[3]) == 6.0
        import sys
        assert not any(name == "jax" or name.startswith("jax.") for name, module in sys.modules.items()
                       if getattr(module, "__file__", None) and "site-packages/jax/" in module.__file__)
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_a_missing_jax_module_names_both():
    result = _run("""
        import numax.compat
        numax.compat.install()
        try:
            import jax.no_such_module
        except ModuleNotFoundError as error:
            assert error.name == "jax.no_such_module", error.name
            print(error)
    """)
    assert result.returncode == 0, result.stderr
    assert "jax.no_such_module" in result.stdout and "numax.no_such_module" in result.stdout


def test_install_refuses_once_jax_is_imported():
    result = _run("""
        import jax
        import numax.compat
        try:
            numax.compat.install()
        except RuntimeError as error:
            print(error)
        assert not numax.compat.is_installed()
    """)
    assert result.returncode == 0, result.stderr
    assert "jax is already imported" in result.stdout


def test_install_twice_is_a_no_op():
    result = _run("""
        import sys
        import numax.compat
        numax.compat.install(); numax.compat.install()
        assert sum(finder is numax.compat._finder for finder in sys.meta_path) == 1
        assert sys.meta_path[0] is numax.compat._finder
    """)
    assert result.returncode == 0, result.stderr


def test_numax_run_runs_a_script_with_its_arguments(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        import jax, jax.numpy as jnp
        import numax
        assert jax.numpy is numax.numpy and __name__ == "__main__"
        print(sys.argv[1:], float(jax.jit(lambda v: jnp.sum(v * 2))(jnp.ones(3))))
    """))
    result = _run(None, str(script), "--steps", "3")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['--steps', '3'] 6.0"


def test_numax_run_without_a_script_prints_usage():
    result = subprocess.run([sys.executable, "-m", "numax.run"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "usage: python -m numax.run" in result.stderr


@pytest.mark.parametrize("path", ["jax._src.compiler", "from jax._src import compiler"])
def test_a_wrapped_backend_compile_sees_every_compile(path):
    # chex.restrict_backends wraps jax._src.compiler.backend_compile_and_load: the wrapper must see numax's compiles.
    importing = f"import {path} as compiler" if not path.startswith("from") else path
    result = _run(f"""
        import numax.compat
        numax.compat.install()
        {importing}
        import jax, numpy as np
        seen = []
        original = compiler.backend_compile_and_load
        def watching(backend, *args, **kwargs):
            seen.append(backend.platform)
            return original(backend, *args, **kwargs)
        compiler.backend_compile_and_load = watching
        jax.jit(lambda v: v * 3 + 1)(np.ones(5, np.float32))  # one program: the argument is not computed
        compiler.backend_compile_and_load = original
        print(seen)
    """, env={"NUMAX_COMPILATION_CACHE_DIR": ""})  # a persistent-cache hit compiles nothing (as in jax)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['cpu']"


def test_the_readme_flax_example_gives_jax_loss():
    readme = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
    example = next(block for block in re.findall(r"```python\n(.*?)```", readme, re.S) if "flax.linen" in block)
    assert example.startswith("import numax.compat; numax.compat.install()")
    on_numax, on_jax = _run(example), _run(example.split("\n", 1)[1])  # jax: without the switch's line
    assert on_numax.returncode == 0 and on_jax.returncode == 0, on_numax.stderr + on_jax.stderr
    numax_loss, jax_loss = float(on_numax.stdout), float(on_jax.stdout)
    assert numax_loss < 1 and abs(numax_loss - jax_loss) <= 1e-5 * abs(jax_loss), (numax_loss, jax_loss)
