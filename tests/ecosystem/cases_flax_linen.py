"""flax.linen as its users write it: layers initialized and applied (forward values and gradients with respect to
parameters and inputs), mutable batch statistics, dropout streams, the lifted transformations `nn.scan`,
`nn.remat`, `nn.vmap`, `nn.jit`, `nn.cond` and `nn.while_loop`, `nn.RNN`, sown intermediates, the `tabulate`
summary, lazy initialization from shapes, and a small causal transformer language model trained with optax under
`jax.jit` (see ecosystem_case.py for how these run on jax and on numax). Most models initialize under `jax.jit`,
as users' training scripts do; a few cases initialize and apply eagerly."""

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from ecosystem_case import case


def _inputs(*shape, seed=0):
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape).astype(np.float32))


def _init_apply_grads(model, x, eager_init=False, **apply_kwargs):
    """Parameters from `init` (under jax.jit, as most models initialize, or eagerly), the output of `apply`, and
    the gradients of a scalar of the output with respect to the parameters and to the input (under jax.jit, as a
    training step computes them)."""
    init = model.init if eager_init else jax.jit(functools.partial(model.init, **apply_kwargs))
    variables = init(jax.random.PRNGKey(0), x, **apply_kwargs) if eager_init else init(jax.random.PRNGKey(0), x)

    @jax.jit
    def loss(variables, x):
        y = model.apply(variables, x, **apply_kwargs)
        return sum(jnp.sum(jnp.sin(leaf) * leaf) for leaf in jax.tree_util.tree_leaves(y)), y

    (value, y), grads = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(variables, x)
    return {"variables": variables, "y": y, "loss": value, "grad_variables": grads[0], "grad_x": grads[1]}


@case
def dense():
    return {"eager_init": _init_apply_grads(nn.Dense(5), _inputs(4, 3), eager_init=True),
            "jit_init": _init_apply_grads(nn.Dense(5, use_bias=False), _inputs(4, 3))}


@case
def dense_general_and_eager_apply():
    model = nn.DenseGeneral(features=(2, 3), axis=(-2, -1), use_bias=True)
    x = _inputs(4, 5, 6)
    variables = model.init(jax.random.PRNGKey(1), x)
    return {"variables": variables, "y": model.apply(variables, x)}


@case
def conv_padding_and_strides():
    x = _inputs(2, 9, 8, 3)
    return {"same_stride2": _init_apply_grads(nn.Conv(4, (3, 3), strides=(2, 2), padding="SAME"), x),
            "explicit_padding_dilated": _init_apply_grads(
                nn.Conv(2, (3, 2), padding=((1, 2), (0, 1)), kernel_dilation=(2, 1)), x),
            "valid_grouped": _init_apply_grads(nn.Conv(6, (2, 2), padding="VALID", feature_group_count=3), x),
            "circular": _init_apply_grads(nn.Conv(2, (3, 3), padding="CIRCULAR"), x),
            "transpose": _init_apply_grads(nn.ConvTranspose(3, (3, 3), strides=(2, 2)), x)}


@case
def pooling():
    x = _inputs(2, 7, 6, 3)

    def pools(x):
        return {"avg": nn.avg_pool(x, (3, 3), strides=(2, 2), padding="SAME"),
                "avg_exclude_pad": nn.avg_pool(x, (2, 3), strides=(1, 2), padding=((1, 0), (1, 1)),
                                               count_include_pad=False),
                "max": nn.max_pool(x, (2, 2), strides=(2, 2)),
                "max_padded": nn.max_pool(x, (3, 3), strides=(1, 1), padding="SAME")}

    def loss(x):
        return sum(jnp.sum(jnp.cos(y)) for y in jax.tree_util.tree_leaves(pools(x)))

    return {"eager": pools(x), "jit": jax.jit(pools)(x), "grad_x": jax.jit(jax.grad(loss))(x)}


@case
def layer_norm_and_group_norm():
    x = _inputs(3, 4, 6) * 3.0 + 1.0
    return {"layer_norm": _init_apply_grads(nn.LayerNorm(), x),
            "layer_norm_no_scale": _init_apply_grads(nn.LayerNorm(use_scale=False, epsilon=1e-3), x),
            "rms_norm": _init_apply_grads(nn.RMSNorm(), x),
            "group_norm": _init_apply_grads(nn.GroupNorm(num_groups=2), x)}


class _BatchNormNet(nn.Module):
    @nn.compact
    def __call__(self, x, train):
        x = nn.Dense(6)(x)
        x = nn.BatchNorm(use_running_average=not train, momentum=0.8)(x)
        return nn.Dense(2)(nn.relu(x))


@case
def batch_norm_train_and_eval():
    model = _BatchNormNet()
    x = _inputs(8, 4)
    variables = jax.jit(functools.partial(model.init, train=False))(jax.random.PRNGKey(0), x)

    @jax.jit
    def train_step(params, batch_stats, x):
        def loss(params):
            y, updates = model.apply({"params": params, "batch_stats": batch_stats}, x, train=True,
                                     mutable=["batch_stats"])
            return jnp.mean(y ** 2), updates["batch_stats"]

        (value, batch_stats), grads = jax.value_and_grad(loss, has_aux=True)(params)
        params = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
        return params, batch_stats, value

    params, batch_stats = variables["params"], variables["batch_stats"]
    losses = []
    for step in range(3):
        params, batch_stats, value = train_step(params, batch_stats, x + step)
        losses.append(value)
    y_eval = model.apply({"params": params, "batch_stats": batch_stats}, x, train=False)
    return {"init": variables, "losses": jnp.stack(losses), "params": params, "batch_stats": batch_stats,
            "y_eval": y_eval}


class _DropoutNet(nn.Module):
    @nn.compact
    def __call__(self, x, deterministic):
        x = nn.Dense(16)(x)
        x = nn.Dropout(rate=0.3)(x, deterministic=deterministic)
        return nn.Dense(3)(x)


@case
def dropout_with_rngs():
    model = _DropoutNet()
    x = _inputs(5, 4)
    variables = jax.jit(functools.partial(model.init, deterministic=True))(jax.random.PRNGKey(0), x)

    def loss(params, key):
        y = model.apply({"params": params}, x, deterministic=False, rngs={"dropout": key})
        return jnp.sum(y ** 2), y

    grad_fn = jax.jit(jax.value_and_grad(loss, has_aux=True))
    (value, y), grads = grad_fn(variables["params"], jax.random.PRNGKey(7))
    (_, y_other_key), _ = grad_fn(variables["params"], jax.random.PRNGKey(8))
    y_eager = model.apply(variables, x, deterministic=False, rngs={"dropout": jax.random.PRNGKey(7)})
    y_deterministic = model.apply(variables, x, deterministic=True)
    return {"variables": variables, "loss": value, "y": y, "grads": grads, "y_other_key": y_other_key,
            "y_eager": y_eager, "y_deterministic": y_deterministic}


@case
def dropout_with_typed_key():
    model = _DropoutNet()
    x = _inputs(5, 4)
    variables = model.init(jax.random.key(3), x, deterministic=True)
    return {"variables": variables,
            "y": model.apply(variables, x, deterministic=False, rngs={"dropout": jax.random.key(4)})}


class _EmbedNet(nn.Module):
    @nn.compact
    def __call__(self, tokens):
        embed = nn.Embed(num_embeddings=11, features=6)
        hidden = embed(tokens)
        return hidden, embed.attend(hidden)


@case
def embed_lookup_and_attend():
    model = _EmbedNet()
    tokens = jnp.asarray(np.random.default_rng(2).integers(0, 11, size=(3, 5)).astype(np.int32))
    variables = jax.jit(model.init)(jax.random.PRNGKey(0), tokens)

    @jax.jit
    def loss(variables):
        hidden, logits = model.apply(variables, tokens)
        return jnp.sum(hidden ** 2) + jnp.sum(jax.nn.log_softmax(logits)), logits

    (value, logits), grads = jax.value_and_grad(loss, has_aux=True)(variables)
    return {"variables": variables, "loss": value, "logits": logits, "grads": grads}


@case
def multi_head_attention_causal():
    x = _inputs(2, 6, 8)
    mask = nn.make_causal_mask(jnp.ones((2, 6)))
    model = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=8)
    variables = jax.jit(model.init)(jax.random.PRNGKey(0), x, mask=mask)

    @jax.jit
    def loss(variables, x):
        y = model.apply(variables, x, mask=mask)
        return jnp.sum(y * jnp.cos(y)), y

    (value, y), grads = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(variables, x)
    y_eager = model.apply(variables, x, mask=mask)
    return {"mask": mask, "variables": variables, "y": y, "loss": value, "grads": grads, "y_eager": y_eager}


@case
def attention_with_padding_mask_and_dropout():
    q = _inputs(2, 4, 8, seed=1)
    kv = _inputs(2, 5, 8, seed=2)
    valid = jnp.asarray(np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.float32))
    mask = nn.make_attention_mask(jnp.ones((2, 4)), valid)
    model = nn.MultiHeadDotProductAttention(num_heads=4, dropout_rate=0.2, deterministic=False)
    variables = jax.jit(model.init)(jax.random.PRNGKey(0), q, kv, mask=mask)
    y = jax.jit(lambda v: model.apply(v, q, kv, mask=mask, rngs={"dropout": jax.random.PRNGKey(5)}))(variables)
    return {"variables": variables, "y": y}


class _RNN(nn.Module):
    """An LSTM cell scanned over time by `nn.scan` (parameters broadcast, carry threaded)."""

    @nn.compact
    def __call__(self, xs):
        cell = nn.scan(nn.OptimizedLSTMCell, variable_broadcast="params", split_rngs={"params": False},
                       in_axes=1, out_axes=1)(features=5)
        carry = cell.initialize_carry(jax.random.PRNGKey(0), xs[:, 0].shape)
        return cell(carry, xs)


@case
def scan_lstm_cell_over_time():
    model = _RNN()
    xs = _inputs(3, 7, 4)
    variables = jax.jit(model.init)(jax.random.PRNGKey(0), xs)

    @jax.jit
    def loss(variables, xs):
        (c, h), ys = model.apply(variables, xs)
        return jnp.sum(ys ** 2) + jnp.sum(c), ys

    (value, ys), grads = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(variables, xs)
    return {"variables": variables, "loss": value, "ys": ys, "grads": grads}


class _Block(nn.Module):
    @nn.compact
    def __call__(self, x, _):
        y = nn.Dense(x.shape[-1])(nn.LayerNorm()(x))
        y = nn.Dropout(0.1, deterministic=False)(y)
        return x + nn.gelu(y), jnp.mean(y)


class _ScannedStack(nn.Module):
    """Four residual blocks whose parameters are stacked on a leading axis by `nn.scan` (one trace, four layers;
    each layer its own parameter and dropout keys)."""

    @nn.compact
    def __call__(self, x):
        stack = nn.scan(_Block, variable_axes={"params": 0}, split_rngs={"params": True, "dropout": True},
                        length=4)
        return stack()(x, None)


@case
def scan_layer_stack():
    model = _ScannedStack()
    x = _inputs(2, 6)
    rngs = {"params": jax.random.PRNGKey(0), "dropout": jax.random.PRNGKey(1)}
    variables = jax.jit(model.init)(rngs, x)

    @jax.jit
    def loss(variables, x):
        y, means = model.apply(variables, x, rngs={"dropout": jax.random.PRNGKey(2)})
        return jnp.sum(y ** 2), (y, means)

    (value, (y, means)), grads = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(variables, x)
    return {"variables": variables, "loss": value, "y": y, "means": means, "grads": grads}


class _BroadcastOut(nn.Module):
    """`nn.scan` with a broadcast input and output: flax checks, by partial evaluation, that the broadcast output
    does not depend on the loop."""

    @nn.compact
    def __call__(self, carry, x, scale):
        w = self.param("w", nn.initializers.normal(1.0), (x.shape[-1],))
        return nn.relu(carry * scale + x * w), (x * carry).sum(-1)  # (relu: a custom_jvp function in the body)


@case
def scan_with_broadcast_inputs():
    scanned = nn.scan(_BroadcastOut, variable_broadcast="params", split_rngs={"params": False},
                      in_axes=(0, nn.broadcast), out_axes=0)
    model = scanned()
    carry, xs, scale = _inputs(3), _inputs(5, 3, seed=1), jnp.float32(0.9)
    variables = jax.jit(model.init)(jax.random.PRNGKey(0), carry, xs, scale)
    (carry_out, ys), grads = jax.jit(jax.value_and_grad(
        lambda v: (lambda out: (jnp.sum(out[0]) + jnp.sum(out[1]), out))(model.apply(v, carry, xs, scale)),
        has_aux=True))(variables)
    del carry_out
    eager_variables = scanned().init(jax.random.PRNGKey(1), carry, xs, scale)  # eagerly: scan and partial eval
    return {"variables": variables, "outputs": ys, "grads": grads, "eager_variables": eager_variables,
            "eager_outputs": model.apply(eager_variables, carry, xs, scale)}


class _MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        for width in (16, 16, 4):
            x = nn.tanh(nn.Dense(width)(x))
        return x


class _Remat(nn.Module):
    @nn.compact
    def __call__(self, x):
        policy = jax.checkpoint_policies.nothing_saveable
        x = nn.remat(_MLP)()(x)
        return nn.remat(_MLP, policy=policy, prevent_cse=False)()(x)


@case
def remat():
    return _init_apply_grads(_Remat(), _inputs(3, 5))


class _Ensemble(nn.Module):
    """Three copies of a Dense layer with their own parameters, applied to a batch by `nn.vmap`."""

    @nn.compact
    def __call__(self, x):
        ensemble = nn.vmap(nn.Dense, variable_axes={"params": 0}, split_rngs={"params": True}, in_axes=None,
                           out_axes=0, axis_size=3)
        per_example = nn.vmap(nn.Dense, variable_axes={"params": None}, split_rngs={"params": False}, in_axes=0,
                              out_axes=1)
        return ensemble(4)(x), per_example(2)(x)


@case
def vmap_ensemble_and_batch():
    return _init_apply_grads(_Ensemble(), _inputs(5, 3))


class _Lifted(nn.Module):
    """nn.jit, sow'n intermediates, nn.RNN over a GRU cell, nn.Sequential, and nn.cond / nn.while_loop whose
    branches and body call a submodule."""

    def setup(self):
        self.jitted = nn.jit(nn.Dense)(6)
        self.inner = nn.Dense(6)
        self.rnn = nn.RNN(nn.GRUCell(6))
        self.head = nn.Sequential([nn.Dense(3), nn.relu, nn.Dense(6)])

    def __call__(self, x, flag):
        y = self.jitted(x)
        self.sow("intermediates", "after_jit", y)
        y = self.rnn(y)
        y = nn.cond(flag, lambda module, z: module.inner(z), lambda module, z: -module.inner(z), self, y)

        def body(module, carry):
            step, z = carry
            return step + 1, jnp.tanh(module.head(z))

        if self.is_initializing():  # (a while loop's body cannot create parameters)
            self.head(y)
        _, y = nn.while_loop(lambda module, carry: carry[0] < 3, body, self, (0, y))
        return y


@case
def lifted_jit_cond_while_rnn_and_summary():
    model = _Lifted()
    x = _inputs(2, 5, 3)
    variables = jax.jit(model.init)(jax.random.PRNGKey(0), x, True)
    y_true, state = model.apply(variables, x, True, mutable=["intermediates"])
    y_false = jax.jit(model.apply)(variables, x, False)
    # Forward mode (reverse mode through a while loop fails on jax too).
    y_dot = jax.jit(lambda v, t: jax.jvp(lambda x: model.apply(v, x, True), (x,), (t,))[1])(variables, x * 0.5)
    summary = model.tabulate(jax.random.PRNGKey(0), x, True, compute_flops=False, console_kwargs={"width": 120})
    flops_summary = _MLP().tabulate(jax.random.PRNGKey(0), x, compute_flops=True, compute_vjp_flops=True,
                                    console_kwargs={"width": 120})  # (XLA's cost analysis of each call)
    return {"variables": variables, "y_true": y_true, "intermediates": state, "y_false": y_false,
            "y_dot": y_dot, "summary_text": np.frombuffer(summary.encode(), np.uint8),
            "flops_summary_text": np.frombuffer(flops_summary.encode(), np.uint8)}


@case
def while_loop_reverse_mode_fails_as_on_jax():
    model = _Lifted()
    x = _inputs(2, 5, 3)
    variables = jax.jit(model.init)(jax.random.PRNGKey(0), x, True)
    return jax.grad(lambda v: jnp.sum(model.apply(v, x, True) ** 2))(variables)  # ValueError on both


@case
def lazy_init_from_shapes():
    model = _MLP()
    variables = model.lazy_init(jax.random.PRNGKey(0), jax.ShapeDtypeStruct((2, 5), jnp.float32))
    shapes = jax.eval_shape(model.init, jax.random.PRNGKey(0), jax.ShapeDtypeStruct((2, 5), jnp.float32))
    return {"variables": variables,
            "shapes": jax.tree_util.tree_map(lambda s: jnp.asarray(s.shape), shapes)}


# --- a small causal transformer language model, trained ------------------------------------------------------
class _DecoderBlock(nn.Module):
    width: int
    heads: int

    @nn.compact
    def __call__(self, x, mask, deterministic):
        y = nn.LayerNorm()(x)
        # No biases in the attention projections: the key projection's bias has an identically zero gradient
        # (it shifts all of a query's logits alike), which Adam would turn from rounding noise into steps of size
        # `learning_rate`, so it would differ between any two implementations. (Its zero gradient is compared
        # in multi_head_attention_causal.)
        y = nn.MultiHeadDotProductAttention(num_heads=self.heads, dropout_rate=0.1, use_bias=False)(
            y, mask=mask, deterministic=deterministic)
        x = x + nn.Dropout(0.1)(y, deterministic=deterministic)
        y = nn.LayerNorm()(x)
        y = nn.Dense(self.width)(nn.gelu(nn.Dense(4 * self.width)(y)))
        return x + nn.Dropout(0.1)(y, deterministic=deterministic)


class _TinyLM(nn.Module):
    vocab: int = 17
    width: int = 16
    heads: int = 2
    max_len: int = 12

    @nn.compact
    def __call__(self, tokens, deterministic=True):
        embed = nn.Embed(self.vocab, self.width)
        positions = self.param("positions", nn.initializers.normal(0.02), (self.max_len, self.width))
        x = embed(tokens) + positions[: tokens.shape[1]]
        mask = nn.make_causal_mask(tokens)
        for _ in range(2):
            x = _DecoderBlock(self.width, self.heads)(x, mask, deterministic)
        return embed.attend(nn.LayerNorm()(x))


def _lm_batches(steps, batch=4, length=12, vocab=17):
    """Sequences counting up modulo the vocabulary from random starts: the next token is predictable."""
    starts = np.random.default_rng(3).integers(0, vocab, size=(steps, batch, 1))
    return jnp.asarray(((starts + np.arange(length)) % vocab).astype(np.int32))


@case
def transformer_language_model_training():
    model = _TinyLM()
    batches = _lm_batches(6)
    params = jax.jit(model.init)(jax.random.PRNGKey(0), batches[0])["params"]
    optimizer = optax.adam(3e-3)
    opt_state = optimizer.init(params)

    @jax.jit
    def train_step(params, opt_state, tokens, dropout_key):
        def loss(params):
            logits = model.apply({"params": params}, tokens[:, :-1], deterministic=False,
                                 rngs={"dropout": dropout_key})
            return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()

        value, grads = jax.value_and_grad(loss)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    losses = []
    key = jax.random.PRNGKey(42)
    for tokens in batches:
        key, dropout_key = jax.random.split(key)
        params, opt_state, value = train_step(params, opt_state, tokens, dropout_key)
        losses.append(value)
    eval_logits = jax.jit(lambda p, t: model.apply({"params": p}, t))(params, batches[0][:, :-1])
    return {"losses": jnp.stack(losses), "params": params, "eval_logits": eval_logits}
