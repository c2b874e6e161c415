"""Explained recompiles: each compile's reason by Python path, jax_explain_cache_misses (checked against jax's
own explanations), the recompile limit's RecompileWarning and the compile statistics."""

import logging
import re
import warnings

import jax
import numpy as np
import pytest

import numax


@pytest.fixture
def flags():
    """Sets config flags for one test and restores them after."""
    saved = {}

    def set_flag(name, value):
        saved.setdefault(name, numax.config.read(name))
        numax.config.update(name, value)

    yield set_flag
    for name, value in saved.items():
        numax.config.update(name, value)


def step(params, x, training=True):
    return params["w"].sum() + x.sum() * (2.0 if training else 1.0)


def _calls():
    """A call sequence whose every step changes one thing (with its expected explanation)."""
    w3, w4, x = np.ones(3, np.float32), np.ones(4, np.float32), np.ones(2, np.float32)
    return [
        ((({"w": w3}, x), {}), None),
        ((({"w": w4}, x), {}), "params['w']: f32[3] -> f32[4]"),
        ((({"w": w4}, x.astype(np.int32)), {}), "x: f32[2] -> i32[2]"),
        ((({"w": w4}, x), {"training": False}), "static argument training: True -> False"),
        ((({"w": w4, "b": w3}, x), {"training": False}), "new argument structure: params['b'] added"),
    ]


def _explanations(caplog, logger):
    return [r.getMessage() for r in caplog.records if r.name.startswith(logger)]


def test_explanations_name_paths_and_match_jax(flags, caplog):
    flags("jax_explain_cache_misses", True)
    mine = numax.jit(step, static_argnames="training")
    theirs = jax.jit(step, static_argnames="training")
    jax.config.update("jax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING):
            for (args, kwargs), expected in _calls():
                caplog.clear()
                np.testing.assert_allclose(mine(*args, **kwargs), theirs(*args, **kwargs))
                ours = _explanations(caplog, "numax.jit")
                jaxs = _explanations(caplog, "jax")
                if expected is None:  # the first compile is not explained
                    assert ours == []
                    continue
                assert len(ours) == 1 and f"* {expected}" in ours[0], ours
                assert "jit cache miss of step (defined at " in ours[0] and "test_recompile_explanations.py:" in ours[0]
                # our call site is this test's line, as jax's is
                site = re.search(r"called at (\S+):(\d+)", ours[0])
                assert site and site.group(1) == __file__, ours[0]
                assert any(f"{__file__}:{site.group(2)}" in text for text in jaxs), (ours, jaxs)
                if "->" in expected and "structure" not in expected and "static" not in expected:
                    path, types = expected.split(": ")
                    before, now = types.split(" -> ")
                    assert any(f"at {path}, now {now} and before {before}" in text for text in jaxs), jaxs
    finally:
        jax.config.update("jax_explain_cache_misses", False)


def test_x64_and_tree_kind_changes_are_explained(flags, caplog):
    flags("jax_explain_cache_misses", True)
    f = numax.jit(lambda tree: tree[0] * 2)
    with caplog.at_level(logging.WARNING, logger="numax.jit"):
        f((1.0,))
        f([1.0])
        flags("jax_enable_x64", True)
        f([1.0])
    messages = _explanations(caplog, "numax.jit")
    assert len(messages) == 2, messages
    assert "new argument structure: tree: PyTreeDef((*,)) -> PyTreeDef([*])" in messages[0]
    assert "64-bit mode turned on" in messages[1]


def test_log_compiles_gives_the_explained_reason(flags, capsys):
    flags("jax_log_compiles", True)
    f = numax.jit(step)
    capsys.readouterr()
    f({"w": np.ones(3, np.float32)}, np.ones(2, np.float32))
    f({"w": np.ones(5, np.float32)}, np.ones(2, np.float32))
    # "loaded" where the suite's persistent cache already holds the executable (tests/conftest.py)
    lines = [line for line in capsys.readouterr().err.splitlines() if re.match(r"numax: (compiled|loaded) step", line)]
    assert len(lines) == 2 and "(first call)" in lines[0]
    assert "(params['w']: f32[3] -> f32[5])" in lines[1]


def test_no_explanation_without_the_flag(caplog):
    f = numax.jit(lambda x: x + 1)
    with caplog.at_level(logging.WARNING, logger="numax.jit"):
        f(np.ones(2, np.float32))
        f(np.ones(3, np.float32))
    assert _explanations(caplog, "numax.jit") == []


def test_recompile_warning_past_the_limit_and_statistics(flags):
    flags("numax_recompile_limit", 3)
    f = numax.jit(lambda x: x * 2)
    before = numax.jit_statistics().compiles
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 6):
            f(np.ones(n, np.float32))
            f(np.ones(n, np.float32))
    ours = [w for w in caught if issubclass(w.category, numax.RecompileWarning)]
    assert len(ours) == 1, [str(w.message) for w in caught]  # once, when the 4th compile passes 3
    assert issubclass(numax.RecompileWarning, UserWarning)
    message = str(ours[0].message)
    assert "compiled 4 times" in message and "numax_recompile_limit=3" in message and "bucket" in message
    assert "x: f32[3] -> f32[4]" in message
    assert ours[0].filename == __file__  # points at the user's call
    assert f._cache_size() == 5
    assert (f.stats.compiles, f.stats.cache_hits) == (5, 5)
    assert f.stats.compile_seconds > 0
    assert numax.jit_statistics().compiles - before == 5
    f.clear_cache()
    assert f._cache_size() == 0


def test_recompile_limit_from_the_environment(monkeypatch):
    from numax.core.config import Config

    monkeypatch.setenv("NUMAX_RECOMPILE_LIMIT", "2")
    monkeypatch.setenv("JAX_EXPLAIN_CACHE_MISSES", "1")
    fresh = Config()
    assert fresh.recompile_limit == 2 and fresh.explain_cache_misses is True
