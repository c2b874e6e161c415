"""optax as its users write it: optimizers, chains, schedules, wrappers and losses, trained or evaluated under
`jax.jit` (see ecosystem_case.py for how these run on jax and on numax)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from ecosystem_case import case


def _problem():
    """A small regression problem and MLP parameters, from a fixed numpy seed."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)).astype(np.float32)
    y = np.sin(x[:, :2].sum(axis=1, keepdims=True)).astype(np.float32)
    params = {"hidden": {"w": jnp.asarray(rng.normal(size=(8, 16)).astype(np.float32) * 0.3),
                         "b": jnp.zeros(16)},
              "out": {"w": jnp.asarray(rng.normal(size=(16, 1)).astype(np.float32) * 0.3), "b": jnp.zeros(1)}}
    return params, jnp.asarray(x), jnp.asarray(y)


def _loss(params, x, y):
    hidden = jax.nn.gelu(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return jnp.mean(optax.l2_loss(hidden @ params["out"]["w"] + params["out"]["b"], y))


def _train(optimizer, steps=25, loss=_loss):
    params, x, y = _problem()
    state = optimizer.init(params)

    @jax.jit
    def step(params, state):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    losses = []
    for _ in range(steps):
        params, state, value = step(params, state)
        losses.append(value)
    return {"losses": jnp.stack(losses), "params": params}


@case
def adam():
    return _train(optax.adam(1e-2))


@case
def adamw_with_clipping_and_warmup_cosine():
    schedule = optax.warmup_cosine_decay_schedule(0.0, 3e-2, warmup_steps=5, decay_steps=25, end_value=1e-3)
    return _train(optax.chain(optax.clip_by_global_norm(0.5), optax.adamw(schedule, weight_decay=1e-2)))


@case
def sgd_momentum_piecewise_schedule():
    schedule = optax.piecewise_constant_schedule(5e-2, {10: 0.5, 20: 0.1})
    return _train(optax.sgd(schedule, momentum=0.9, nesterov=True))


@case
def sgd_exponential_decay():
    return _train(optax.sgd(optax.exponential_decay(1e-1, transition_steps=5, decay_rate=0.7, staircase=True)))


@case
def rmsprop_adagrad_lion_lamb():
    return {name: _train(optimizer, steps=10)
            for name, optimizer in {"rmsprop": optax.rmsprop(1e-2, momentum=0.5), "adagrad": optax.adagrad(5e-2),
                                    "lion": optax.lion(1e-3), "lamb": optax.lamb(1e-2),
                                    "adabelief": optax.adabelief(1e-2), "radam": optax.radam(1e-2),
                                    "nadam": optax.nadam(1e-2), "adamax": optax.adamax(1e-2),
                                    "yogi": optax.yogi(1e-2), "novograd": optax.novograd(1e-2)}.items()}


@case(rtol=2e-5, atol=1e-6)
def adafactor():
    return _train(optax.adafactor(1e-2), steps=10)


@case
def lookahead_adam():
    optimizer = optax.lookahead(optax.adam(1e-2), sync_period=4, slow_step_size=0.5)
    params, x, y = _problem()
    params = optax.LookaheadParams.init_synced(params)
    state = optimizer.init(params)

    @jax.jit
    def step(params, state):
        value, grads = jax.value_and_grad(_loss)(params.fast, x, y)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    losses = []
    for _ in range(12):
        params, state, value = step(params, state)
        losses.append(value)
    return {"losses": jnp.stack(losses), "slow": params.slow, "fast": params.fast}


@case
def multi_transform_by_label():
    labels = {"hidden": {"w": "adam", "b": "frozen"}, "out": {"w": "sgd", "b": "sgd"}}
    optimizer = optax.multi_transform({"adam": optax.adam(1e-2), "sgd": optax.sgd(1e-1),
                                       "frozen": optax.set_to_zero()}, labels)
    return _train(optimizer, steps=10)


@case
def gradient_accumulation_and_masking():
    optimizer = optax.MultiSteps(optax.chain(optax.add_decayed_weights(1e-3, mask={"hidden": {"w": True, "b": False},
                                                                                    "out": {"w": True, "b": False}}),
                                             optax.sgd(5e-2)), every_k_schedule=3)
    return _train(optimizer, steps=9)


@case
def noisy_sgd_accumulated():
    # a typed PRNG key in the optimizer state, carried through MultiSteps' jnp.where/jnp.astype
    return _train(optax.MultiSteps(optax.noisy_sgd(5e-2, eta=1e-3, key=0), every_k_schedule=2), steps=6)


@case
def inject_hyperparams_with_a_key():
    # a key hyperparameter kept (jnp.asarray of a key) and split each step, the noise added to the updates
    def noisy_sgd(key, learning_rate):
        def init(params):
            del params
            return {"key": key}

        def update(updates, state, params=None):
            del params
            key, sub = jax.random.split(state["key"])
            leaves, tree = jax.tree.flatten(updates)
            noise = [1e-3 * jax.random.normal(k, leaf.shape) for k, leaf in
                     zip(jax.random.split(sub, len(leaves)), leaves)]
            noisy = jax.tree.unflatten(tree, [leaf + n for leaf, n in zip(leaves, noise)])
            return jax.tree.map(lambda u: -learning_rate * u, noisy), {"key": key}

        return optax.GradientTransformation(init, update)

    return _train(optax.inject_hyperparams(noisy_sgd)(key=jax.random.key(3), learning_rate=5e-2), steps=5)


@case
def inject_hyperparams_and_global_norm():
    optimizer = optax.inject_hyperparams(optax.adam)(learning_rate=1e-2)
    result = _train(optimizer, steps=5)
    result["global_norm"] = optax.global_norm(result["params"])
    return result


@case
def classification_losses():
    rng = np.random.default_rng(1)
    logits = jnp.asarray(rng.normal(size=(16, 5)).astype(np.float32))
    labels = jnp.asarray(rng.integers(0, 5, size=16))
    one_hot = jax.nn.one_hot(labels, 5)
    targets = jnp.asarray(rng.uniform(size=(16, 5)).astype(np.float32))
    return jax.jit(lambda: {
        "softmax_ce": optax.softmax_cross_entropy(logits, one_hot),
        "softmax_ce_int": optax.softmax_cross_entropy_with_integer_labels(logits, labels),
        "sigmoid_bce": optax.sigmoid_binary_cross_entropy(logits, targets),
        "smoothed": optax.smooth_labels(one_hot, 0.1),
        "hinge": optax.hinge_loss(logits[:, 0], jnp.sign(targets[:, 0] - 0.5)),
        "poly_ce": optax.losses.poly_loss_cross_entropy(logits, one_hot),
        "kl": optax.kl_divergence(jax.nn.log_softmax(logits), jax.nn.softmax(targets)),
        "focal": optax.sigmoid_focal_loss(logits, targets),
    })()


@case
def regression_losses():
    rng = np.random.default_rng(2)
    predictions = jnp.asarray(rng.normal(size=(8, 6)).astype(np.float32))
    targets = jnp.asarray(rng.normal(size=(8, 6)).astype(np.float32))
    return {
        "l2": optax.l2_loss(predictions, targets),
        "squared": optax.squared_error(predictions, targets),
        "huber": optax.huber_loss(predictions, targets, delta=0.5),
        "log_cosh": optax.log_cosh(predictions, targets),
        "cosine_similarity": optax.cosine_similarity(predictions, targets),
        "cosine_distance": optax.cosine_distance(predictions, targets),
        "grad_huber": jax.grad(lambda p: optax.huber_loss(p, targets).sum())(predictions),
    }
