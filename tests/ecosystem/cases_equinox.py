"""equinox as its users write it: models built from `eqx.nn` layers, trained with optax under `eqx.filter_jit` and
`eqx.filter_value_and_grad`, the filtered transformations, `partition`/`combine`/`tree_at`, `eqx.error_if` (passing,
and failing with equinox's own errors), and `eqx.internal`'s primitives, which equinox defines through
`jax.extend.core.Primitive` and the rule tables of `jax.interpreters` (checkpointed while loops and scans, buffers,
unvmap, nondifferentiable, nonbatchable, finalise, announce_transform) and a user primitive made with
`eqx.internal.create_vprim` (see ecosystem_case.py for how these run on jax and on numax)."""

import io

import equinox as eqx
import jax
import jax.interpreters.ad
import jax.numpy as jnp
import numpy as np
import optax
from ecosystem_case import case


def _data(n=32, features=4):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, features)).astype(np.float32)
    y = np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(y)


def _params(model):
    return eqx.filter(model, eqx.is_array)


@case
def mlp_trained_with_adam_under_filter_jit():
    x, y = _data()
    model = eqx.nn.MLP(4, 1, width_size=16, depth=2, activation=jax.nn.tanh, key=jax.random.PRNGKey(0))
    optimizer = optax.adam(1e-2)
    state = optimizer.init(_params(model))

    @eqx.filter_value_and_grad
    def loss(model, x, y):
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)

    @eqx.filter_jit
    def step(model, state, x, y):
        value, grads = loss(model, x, y)
        updates, state = optimizer.update(grads, state, _params(model))
        return eqx.apply_updates(model, updates), state, value

    losses = []
    for _ in range(20):
        model, state, value = step(model, state, x, y)
        losses.append(value)
    return {"losses": jnp.stack(losses), "params": _params(model)}


class _Scaled(eqx.Module):
    """A module with a static field, an integer array and a Python callable besides its float parameters."""

    linear: eqx.nn.Linear
    count: jax.Array
    power: int = eqx.field(static=True)
    activation: object = jax.nn.softplus

    def __call__(self, x):
        return self.activation(self.linear(x)) ** self.power * self.count


@case
def filter_grad_differentiates_only_float_arrays():
    model = _Scaled(eqx.nn.Linear(3, 2, key=jax.random.PRNGKey(1)), jnp.asarray(3), power=2)
    x = jnp.asarray([0.5, -1.0, 2.0])
    grads = eqx.filter_grad(lambda m, x: jnp.sum(m(x)))(model, x)
    assert grads.count is None and grads.power == 2, "non-float leaves get no gradient"
    jitted = eqx.filter_jit(eqx.filter_grad(lambda m, x: jnp.sum(m(x))))(model, x)
    return {"eager": _params(grads), "jit": _params(jitted), "out": model(x)}


@case
def filter_vmap_builds_and_runs_an_ensemble():
    keys = jax.random.split(jax.random.PRNGKey(2), 5)
    ensemble = eqx.filter_vmap(lambda key: eqx.nn.MLP(3, 2, 8, 1, key=key))(keys)
    x = jnp.linspace(-1.0, 1.0, 3)
    outputs = eqx.filter_vmap(lambda model, x: model(x), in_axes=(eqx.if_array(0), None))(ensemble, x)
    batched = eqx.filter_vmap(eqx.filter_vmap(lambda model, x: model(x), in_axes=(None, 0)),
                              in_axes=(eqx.if_array(0), None))(ensemble, jnp.stack([x, -x]))
    return {"outputs": outputs, "batched": batched, "weights": ensemble.layers[0].weight}


@case
def partition_combine_and_a_gradient_of_the_params_only():
    x, y = _data(8, 3)
    model = eqx.nn.MLP(3, 1, 6, 1, key=jax.random.PRNGKey(3))
    params, static = eqx.partition(model, eqx.is_inexact_array)
    assert eqx.tree_equal(eqx.combine(params, static), model)

    @jax.jit
    def loss(params, x, y):
        model = eqx.combine(params, static)
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)

    value, grads = jax.value_and_grad(loss)(params, x, y)
    return {"loss": value, "grads": grads}


@case(rtol=1e-5, atol=1e-5)
def layers_forward_and_gradients():
    keys = jax.random.split(jax.random.PRNGKey(4), 8)
    layers = {
        "linear": eqx.nn.Linear(3, 4, key=keys[0]),
        "conv": eqx.nn.Conv2d(2, 3, kernel_size=3, padding=1, key=keys[1]),
        "norm": eqx.nn.LayerNorm(4),
        "sequential": eqx.nn.Sequential([eqx.nn.Linear(3, 5, key=keys[2]), eqx.nn.Lambda(jax.nn.relu),
                                         eqx.nn.Linear(5, 4, key=keys[3])]),
        "attention": eqx.nn.MultiheadAttention(num_heads=2, query_size=8, key=keys[4]),
    }
    vector, image = jnp.asarray([0.3, -1.2, 2.0]), jax.random.normal(keys[5], (2, 5, 5))
    tokens = jax.random.normal(keys[6], (4, 8))
    dropout = eqx.nn.Dropout(0.5)

    def run(layers):
        hidden = layers["norm"](layers["sequential"](vector) + layers["linear"](vector))
        return {"hidden": hidden, "dropped": dropout(hidden, key=keys[7]),
                "inference": dropout(hidden, inference=True), "conv": layers["conv"](image),
                "attention": layers["attention"](tokens, tokens, tokens)}

    def loss(layers):
        out = run(layers)
        return sum(jnp.sum(jnp.tanh(value)) for value in out.values())

    # (one jitted program for the forward pass and one for the gradients: eager runs are in the cases above)
    return {"out": eqx.filter_jit(run)(layers), "grads": _params(eqx.filter_jit(eqx.filter_grad(loss))(layers))}


@case
def tree_at_replaces_leaves_and_subtrees():
    model = eqx.nn.MLP(2, 2, 4, 1, key=jax.random.PRNGKey(5))
    zeroed = eqx.tree_at(lambda m: m.layers[-1].bias, model, jnp.zeros(2))
    doubled = eqx.tree_at(lambda m: (m.layers[0].weight, m.layers[1].weight), model, replace_fn=lambda w: 2 * w)
    swapped = eqx.tree_at(lambda m: m.layers[1], model, eqx.nn.Linear(4, 2, use_bias=False, key=jax.random.PRNGKey(6)))
    x = jnp.asarray([1.0, -0.5])
    assert swapped.layers[1].bias is None
    return {"zeroed": zeroed(x), "doubled": doubled(x), "swapped": swapped(x), "model": model(x)}


@case
def error_if_passes_values_through_jit_vmap_and_grad():
    def checked(x):
        return eqx.error_if(x, x < 0, "negative input") * 2.0

    x = jnp.asarray([1.0, 2.0, 3.0])
    return {"jit": eqx.filter_jit(checked)(x), "vmap": jax.vmap(checked)(x),
            "grad": jax.grad(lambda x: jnp.sum(checked(x) ** 2))(x), "eager": checked(x),
            "branched": eqx.filter_jit(lambda x: eqx.branched_error_if(x, x > 5, jnp.asarray(1), ["a", "b"]))(x)}


@case
def error_if_raises_at_run_time_under_filter_jit():
    checked = eqx.filter_jit(lambda x: eqx.error_if(x, x < 0, "negative input"))
    return checked(jnp.asarray([1.0, -2.0]))


@case
def error_if_raises_at_run_time_under_vmap():
    checked = eqx.filter_jit(jax.vmap(lambda x: eqx.error_if(x, x < 0, "negative input")))
    return checked(jnp.asarray([1.0, -2.0]))


@case
def error_if_raises_at_trace_time_for_a_known_predicate():
    return eqx.error_if(jnp.ones(2), True, "always")


def _loop_function(kind, checkpoints=None):
    def body(carry):
        step, x = carry
        return step + 1, jnp.sin(x) * 1.1 + 0.1 * step

    def f(x):
        _, out = eqx.internal.while_loop(lambda carry: carry[0] < 6, body, (0, x), max_steps=10, kind=kind,
                                         checkpoints=checkpoints)
        return jnp.sum(out ** 2)

    return f


@case
def internal_while_loop_checkpointed_and_bounded_gradients():
    x = jnp.asarray([0.1, 0.7, -0.4])
    checkpointed, bounded = _loop_function("checkpointed", checkpoints=2), _loop_function("bounded")
    return {"value": checkpointed(x), "checkpointed": jax.grad(checkpointed)(x),
            "checkpointed_jit": jax.jit(jax.grad(checkpointed))(x), "bounded": jax.jit(jax.grad(bounded))(x),
            "lax": jax.jit(_loop_function("lax"))(x),
            "vmap": jax.jit(jax.vmap(jax.grad(checkpointed)))(jnp.stack([x, 2 * x]))}


@case
def internal_while_loop_with_buffers_under_vmap():
    """In-place buffer writes (equinox's `maybe_set` primitive, batched through its vmap-of-rules primitive)."""

    def fill(x):
        def body(carry):
            step, buffer, total = carry
            return step + 1, buffer.at[step].set(total * x), total + x

        init = (0, jnp.zeros(6), x)
        _, buffer, _ = eqx.internal.while_loop(lambda c: c[0] < 4, body, init, max_steps=6, kind="checkpointed",
                                               buffers=lambda c: c[1], checkpoints=3)
        return buffer

    xs = jnp.asarray([1.0, -0.5, 2.0])
    return {"one": jax.jit(fill)(xs[0]), "vmap": jax.jit(jax.vmap(fill))(xs),
            "grad": jax.grad(lambda x: jnp.sum(fill(x) ** 2))(xs[2])}


@case
def internal_unvmap_primitives():
    x = jnp.asarray([[0.0, 3.0, -1.0], [2.0, 5.0, 1.0]])

    def stats(row):
        return (eqx.internal.unvmap_any(row > 4.0), eqx.internal.unvmap_all(row > -2.0),
                eqx.internal.unvmap_max(row.astype(jnp.int32)))

    return {"vmap": jax.vmap(stats)(x), "jit_vmap": jax.jit(jax.vmap(stats))(x), "plain": stats(x[0]),
            "nested": jax.vmap(jax.vmap(lambda v: eqx.internal.unvmap_max(v)))(x)}


@case
def internal_nondifferentiable_passes_forward_values():
    x = jnp.asarray([1.0, 2.0])
    f = lambda x: jnp.sum(eqx.internal.nondifferentiable(x) * 3.0)  # noqa: E731
    backward = lambda x: jnp.sum(eqx.internal.nondifferentiable_backward(x) * x)  # noqa: E731
    return {"value": jax.jit(f)(x), "backward_value": backward(x), "vmap": jax.vmap(f)(x[:, None]),
            "jvp": jax.jvp(backward, (x,), (jnp.ones(2),))}


@case
def internal_nondifferentiable_refuses_reverse_mode():
    return jax.grad(lambda x: jnp.sum(eqx.internal.nondifferentiable(x)))(jnp.ones(2))


@case
def internal_nondifferentiable_backward_refuses_a_cotangent():
    return jax.grad(lambda x: jnp.sum(eqx.internal.nondifferentiable_backward(x)))(jnp.ones(2))


@case
def batch_norm_with_state_under_filter_vmap():
    model, state = eqx.nn.make_with_state(eqx.nn.Sequential)([
        eqx.nn.Linear(3, 4, key=jax.random.PRNGKey(7)), eqx.nn.BatchNorm(4, axis_name="batch", mode="ema")])
    x = jax.random.normal(jax.random.PRNGKey(8), (6, 3))

    @eqx.filter_jit
    def forward(model, state, x):
        return eqx.filter_vmap(model, in_axes=(0, None), out_axes=(0, None), axis_name="batch")(x, state)

    outs = []
    for _ in range(3):
        out, state = forward(model, state, x)
        outs.append(out)
    inference = eqx.nn.inference_mode(model)
    return {"outs": jnp.stack(outs), "state": jax.tree_util.tree_leaves(state),
            "inference": jax.vmap(inference, in_axes=(0, None), out_axes=(0, None))(x, state)[0]}


@case
def filter_custom_jvp_and_custom_vjp():
    @eqx.filter_custom_jvp
    def clipped(x, limit):
        return jnp.clip(x, -limit, limit)

    @clipped.def_jvp
    def _(primals, tangents):
        x, limit = primals
        tx, _ = tangents
        return clipped(x, limit), tx * 0.5

    @eqx.filter_custom_vjp
    def scaled(params, x):
        weight, bias = params
        return weight * x + bias

    def forward(params, x):
        return scaled(params, x), x

    def backward(residual, grad, perturbed, params, x):
        # a gradient of our own choosing: twice the true one for the weight, the true one for the bias
        return (2.0 * jnp.sum(residual * grad), jnp.sum(grad))

    scaled.def_fwd(lambda perturbed, params, x: forward(params, x))
    scaled.def_bwd(backward)
    x = jnp.asarray([0.5, 3.0, -4.0])
    params = (jnp.asarray(1.5), jnp.asarray(0.25))
    return {"jvp": jax.jvp(lambda x: clipped(x, 2.0), (x,), (jnp.ones(3),)),
            "grad_jvp": jax.grad(lambda x: jnp.sum(clipped(x, 2.0)))(x),
            "vjp": jax.grad(lambda p: jnp.sum(scaled(p, x)))(params)}


@case
def scan_over_stacked_layers():
    keys = jax.random.split(jax.random.PRNGKey(9), 4)
    stacked = eqx.filter_vmap(lambda key: eqx.nn.Linear(5, 5, key=key))(keys)
    params, static = eqx.partition(stacked, eqx.is_array)

    def forward(params, x):
        def step(x, layer_params):
            return jnp.tanh(eqx.combine(layer_params, static)(x)), None

        return jax.lax.scan(step, x, params)[0]

    x = jnp.linspace(-1.0, 1.0, 5)
    return {"out": eqx.filter_jit(forward)(params, x),
            "grads": jax.grad(lambda p: jnp.sum(forward(p, x)))(params)}


@case
def recurrent_cells_embeddings_and_pooling():
    keys = jax.random.split(jax.random.PRNGKey(10), 5)
    gru, lstm = eqx.nn.GRUCell(3, 4, key=keys[0]), eqx.nn.LSTMCell(3, 4, key=keys[1])
    embed = eqx.nn.Embedding(10, 3, key=keys[2])
    conv1d, pool = eqx.nn.Conv1d(3, 2, 2, key=keys[3]), eqx.nn.MaxPool1d(2, stride=1)
    rms = eqx.nn.RMSNorm(4)
    tokens = jnp.asarray([1, 4, 7, 2])
    inputs = jax.vmap(embed)(tokens)

    def run(inputs):
        def step(carry, x):
            h, (lh, lc) = carry
            h = gru(x, h)
            lh, lc = lstm(x, (lh, lc))
            return (h, (lh, lc)), rms(h + lh)

        zeros = jnp.zeros(4)
        _, hs = jax.lax.scan(step, (zeros, (zeros, zeros)), inputs)
        return hs, pool(conv1d(inputs.T))

    return {"out": eqx.filter_jit(run)(inputs),
            "grad": jax.jit(jax.grad(lambda i: jnp.sum(run(i)[0]) + jnp.sum(run(i)[1])))(inputs)}


@case
def filter_checkpoint_closure_convert_and_eval_shape():
    model = eqx.nn.MLP(3, 2, 5, 2, key=jax.random.PRNGKey(11))
    x = jnp.asarray([0.2, -0.3, 0.9])
    checkpointed = eqx.filter_checkpoint(lambda m, x: jnp.sum(m(x) ** 2))
    converted = eqx.filter_closure_convert(lambda y: model(y) * 2.0, x)
    shape = eqx.filter_eval_shape(model, x)
    assert shape.shape == (2,) and shape.dtype == jnp.float32
    return {"checkpoint_grad": _params(eqx.filter_grad(checkpointed)(model, x)), "converted": converted(x),
            "converted_grad": jax.grad(lambda y: jnp.sum(converted(y)))(x)}


@case
def serialise_and_deserialise_leaves():
    model = eqx.nn.MLP(2, 2, 3, 1, key=jax.random.PRNGKey(12))
    buffer = io.BytesIO()
    eqx.tree_serialise_leaves(buffer, model)
    buffer.seek(0)
    like = eqx.nn.MLP(2, 2, 3, 1, key=jax.random.PRNGKey(13))
    restored = eqx.tree_deserialise_leaves(buffer, like)
    assert eqx.tree_equal(restored, model)
    return _params(restored)


@case
def filter_jvp_jacobians_and_hessian():
    x = jnp.asarray([0.3, -0.7, 1.1])

    def f(x, scale):
        return jnp.sin(x) * scale, "not an array"

    (primal, label), (tangent, _) = eqx.filter_jvp(f, (x, 2.0), (jnp.ones(3), None))
    assert label == "not an array"
    energy = lambda x: jnp.sum(jnp.sin(x) * x ** 2)  # noqa: E731
    derivatives = eqx.filter_jit(lambda x: {
        "jacfwd": eqx.filter_jacfwd(lambda x: f(x, 2.0)[0])(x), "jacrev": eqx.filter_jacrev(lambda x: f(x, 2.0)[0])(x),
        "hessian": eqx.filter_hessian(energy)(x), "vjp": eqx.filter_vjp(lambda x: f(x, 3.0)[0], x)[1](x * 2)})
    return {"jvp": (primal, tangent), **derivatives(x)}


@case
def internal_scan_checkpointed_and_announced_transforms():
    x = jnp.asarray([0.3, -0.7, 1.1])
    announced = []

    def loss(x):
        x = eqx.debug.announce_transform(x, announce=lambda stack: announced.append(stack))
        final, ys = eqx.internal.scan(lambda c, _: (jnp.sin(c) * 1.2, jnp.sum(c ** 2)), x, None, length=5,
                                      kind="checkpointed", checkpoints=2)
        return jnp.sum(ys) + jnp.sum(final)

    grads = jax.jit(jax.grad(loss))(x)
    assert announced, "announce_transform's rules ran"
    return {"grad": grads, "value": loss(x), "lax_kind": eqx.internal.scan(
        lambda c, y: (c + y, c * y), x, jnp.ones((4, 3)), kind="lax")}


@case
def internal_finalise_noinline_and_nontraceable():
    x = jnp.asarray([0.3, -0.7, 1.1])
    finalised = eqx.internal.finalise_fn(lambda x: (eqx.internal.unvmap_any(x > 0), x * 2))(x)
    noinline_grad = jax.grad(lambda x: jnp.sum(eqx.internal.noinline(jnp.sin)(x)))(x)
    return {"finalised": finalised, "noinline_grad": noinline_grad,
            "nontraceable": jax.jit(eqx.internal.nontraceable)(x)}


@case
def internal_nonbatchable_refuses_vmap():
    return jax.vmap(eqx.internal.nonbatchable)(jnp.ones(3))


@case
def filter_pure_callback_and_closure_convert_gradient():
    x = jnp.asarray([0.3, -0.7, 1.1])
    called = eqx.filter_jit(lambda x: eqx.filter_pure_callback(lambda x: np.cos(np.asarray(x)), x,
                                                               result_shape_dtypes=x))(x)
    converted_grad = jax.grad(lambda x: jnp.sum(eqx.filter_closure_convert(lambda y: y * x, x)(x)))(x)
    return {"callback": called, "converted_grad": converted_grad}


@case(rtol=1e-5, atol=1e-5)
def normalisation_and_convolution_layers():
    keys = jax.random.split(jax.random.PRNGKey(14), 4)
    spectral, state = eqx.nn.make_with_state(eqx.nn.SpectralNorm)(eqx.nn.Linear(3, 3, key=keys[0]), "weight",
                                                                  key=keys[1])
    x, image = jnp.asarray([0.3, -0.7, 1.1]), jax.random.normal(keys[2], (2, 6, 6))
    layers = {"weight_norm": eqx.nn.WeightNorm(eqx.nn.Linear(3, 3, key=keys[3])),
              "transpose": eqx.nn.ConvTranspose2d(2, 3, 3, stride=2, key=keys[3]),
              "group_norm": eqx.nn.GroupNorm(1, 3), "prelu": eqx.nn.PReLU()}

    @eqx.filter_jit
    def run(layers, state, x, image):
        out, state = spectral(x, state)
        return {"spectral": out, "state": jax.tree_util.tree_leaves(state), "weight_norm": layers["weight_norm"](x),
                "transpose": layers["transpose"](image), "avg_pool": eqx.nn.AvgPool2d(2, stride=2)(image),
                "adaptive": eqx.nn.AdaptiveMaxPool1d(2)(image[0]), "group_norm": layers["group_norm"](x),
                "prelu": layers["prelu"](x), "rope": eqx.nn.RotaryPositionalEmbedding(4)(jnp.ones((3, 4))),
                "weight_norm_grad": _params(eqx.filter_grad(lambda m: jnp.sum(m(x) ** 2))(layers["weight_norm"]))}

    return run(layers, state, x, image)


def _power_times_primitive():
    """`x ** power * y` as a primitive made with `eqx.internal.create_vprim` (its batching rule is derived by
    vmapping the other rules): a JVP whose tangent in `y` is the primitive itself, so reverse mode in `y` goes
    through the transpose rule."""

    def impl(x, y, *, power):
        return [x ** power * y]

    def abstract_eval(x, y, *, power):
        return [y]

    def jvp(primals, tangents, *, power):
        x, y = primals
        tx, ty = (jax.interpreters.ad.instantiate_zeros(t) for t in tangents)
        (out,) = prim.bind(x, y, power=power)
        (linear_in_y,) = prim.bind(x, ty, power=power)
        return [out], [linear_in_y + power * x ** (power - 1) * tx * y]

    def transpose(cts, x, y, *, power):
        assert not jax.interpreters.ad.is_undefined_primal(x)
        (ct,) = cts
        if type(ct) is jax.interpreters.ad.Zero:
            return [None, None]
        return [None, x ** power * ct]

    prim = eqx.internal.create_vprim("power_times", impl, abstract_eval, jvp, transpose)
    return prim


@case
def internal_create_vprim_user_primitive():
    prim = _power_times_primitive()
    x, y = jnp.asarray([0.5, 1.5, -2.0]), jnp.asarray([1.0, -1.0, 3.0])

    def loss(x, y):
        return jnp.sum(jnp.tanh(prim.bind(x, y, power=3)[0]))

    xs, ys = jnp.stack([x, 2 * x]), jnp.stack([y, -y])
    return {"eager": prim.bind(x, y, power=2), "jit": jax.jit(lambda x, y: prim.bind(x, y, power=2))(x, y),
            "grad": jax.grad(loss, argnums=(0, 1))(x, y), "jit_grad_y": jax.jit(jax.grad(loss, argnums=1))(x, y),
            "jvp": jax.jvp(loss, (x, y), (y, x)), "vmap": jax.vmap(lambda x, y: prim.bind(x, y, power=2))(xs, ys),
            "vmap_unbatched_y": jax.vmap(lambda x: prim.bind(x, y, power=2), in_axes=0)(xs),
            "vmap_grad": jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1))))(xs, ys),
            "grad_vmap": jax.grad(lambda ys: jnp.sum(jax.vmap(loss)(xs, ys)))(ys)}
