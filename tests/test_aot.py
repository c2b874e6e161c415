"""The ahead-of-time API against jax's: trace / lower (with ShapeDtypeStructs) / compile, the trees and
argument infos of each stage, cost and memory analyses, and Compiled's strict argument checks."""

import jax
import numpy as np
import pytest

import numax

# `x` is donated to check args_info; jax warns that its buffer cannot serve the (scalar) outputs.
pytestmark = pytest.mark.filterwarnings("ignore:Some donated buffers were not usable")


def loss(params, x, scale=2.0):
    return {"loss": ((params["w"] * x).sum() + params["b"]) * scale, "n": x.shape[0]}


def _specs(module):
    return ({"w": module.ShapeDtypeStruct((3,), np.float32), "b": module.ShapeDtypeStruct((), np.float32)},
            module.ShapeDtypeStruct((3,), np.float32))


@pytest.fixture(scope="module")
def stages():
    """Our (traced, lowered, compiled) and jax's, for `loss` lowered from shapes alone."""
    ours = numax.jit(loss, static_argnames="scale", donate_argnums=1).trace(*_specs(numax), scale=3.0)
    theirs = jax.jit(loss, static_argnames="scale", donate_argnums=1).trace(*_specs(jax), scale=3.0)
    return (ours, ours.lower(), ours.lower().compile()), (theirs, theirs.lower(), theirs.lower().compile())


def _infos(args_info):
    return [(a.shape, np.dtype(a.dtype), a.donated) for a in numax.tree_leaves(args_info)]


def test_stages_trees_and_infos_match_jax(stages):
    for ours, theirs in zip(*stages):
        assert str(ours.in_tree) == str(theirs.in_tree)
        assert str(ours.out_tree) == str(theirs.out_tree)
        assert _infos(ours.args_info) == [(a.shape, np.dtype(a.dtype), a.donated)
                                          for a in jax.tree.leaves(theirs.args_info)]
        assert [(o.shape, o.dtype) for o in numax.tree_leaves(ours.out_info)] == [
            (o.shape, o.dtype) for o in jax.tree.leaves(theirs.out_info)]


def test_traced_jaxpr_and_lowered_text(stages):
    (traced, lowered, compiled), (jax_traced, _, _) = stages
    assert [v.aval.shape for v in traced.jaxpr.program.invars] == [v.aval.shape for v in jax_traced.jaxpr.jaxpr.invars]
    assert "reduce_sum" in str(traced.jaxpr)
    text = lowered.as_text()
    assert "func.func public @main" in text and "tensor<3xf32>" in text
    assert "HloModule" in compiled.as_text()


def test_compiled_runs_like_jax(stages):
    (_, _, compiled), (_, _, jax_compiled) = stages
    params = {"w": np.arange(3, dtype=np.float32), "b": np.float32(0.5)}
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    ours, theirs = compiled(params, x), jax_compiled(params, np.array(x))
    np.testing.assert_allclose(ours["loss"], theirs["loss"], rtol=1e-6)
    assert int(ours["n"]) == int(theirs["n"])


def test_cost_and_memory_analysis(stages):
    (_, _, compiled), (_, _, jax_compiled) = stages
    costs, jax_costs = compiled.cost_analysis(), jax_compiled.cost_analysis()
    assert costs["flops"] == jax_costs["flops"] > 0
    memory, jax_memory = compiled.memory_analysis(), jax_compiled.memory_analysis()
    assert memory.argument_size_in_bytes == jax_memory.argument_size_in_bytes == 4 * (3 + 1 + 3)
    assert memory.output_size_in_bytes == jax_memory.output_size_in_bytes


def _bad_calls():
    good = {"w": np.ones(3, np.float32), "b": np.float32(1)}
    return [
        ((dict(good, w=np.ones(4, np.float32)), np.ones(3, np.float32)), {}, "args[0]['w'] compiled with f32[3]"),
        ((good, np.ones(3, np.int32)), {}, "args[1] compiled with f32[3] and called with i32[3]"),
        ((good,), {}, "input pytree"),
        ((good, np.ones(3, np.float32)), {"scale": 1.0}, "input pytree"),
    ]


@pytest.mark.parametrize("case", range(4))
def test_compiled_checks_arguments_strictly_as_jax(stages, case):
    (_, _, compiled), (_, _, jax_compiled) = stages
    args, kwargs, expected = _bad_calls()[case]
    with pytest.raises(TypeError) as ours:
        compiled(*args, **kwargs)
    assert expected in str(ours.value)
    with pytest.raises(TypeError):
        jax_compiled(*args, **kwargs)


def test_lower_from_shapes_equals_lower_from_arrays():
    f = numax.jit(lambda x, y: x @ y)
    arrays = (np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    from_shapes = f.lower(*[numax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays])
    assert from_shapes.as_text() == f.lower(*arrays).as_text()
    np.testing.assert_allclose(from_shapes.compile()(*arrays), arrays[0] @ arrays[1])
    assert f._cache_size() == 0  # ahead-of-time stages leave the call cache alone
