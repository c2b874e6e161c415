"""flax.nnx as its users write it: modules built from `nnx.Rngs`, trained with `nnx.Optimizer` (optax) under
`nnx.jit` and `nnx.value_and_grad`, with dropout and batch-norm state (see ecosystem_case.py for how these run on
jax and on numax)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from ecosystem_case import case
from flax import nnx


def _data(features=8):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, features)).astype(np.float32)
    y = np.sin(x[:, :2].sum(axis=1, keepdims=True)).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(y)


class MLP(nnx.Module):
    def __init__(self, features, hidden, *, rngs, dropout=0.0, batch_norm=False):
        self.hidden = nnx.Linear(features, hidden, rngs=rngs)
        self.norm = nnx.BatchNorm(hidden, rngs=rngs) if batch_norm else None
        self.dropout = nnx.Dropout(dropout, rngs=rngs) if dropout else None
        self.out = nnx.Linear(hidden, 1, rngs=rngs)

    def __call__(self, x):
        x = self.hidden(x)
        if self.norm is not None:
            x = self.norm(x)
        x = nnx.gelu(x)
        if self.dropout is not None:
            x = self.dropout(x)
        return self.out(x)


def _train(model, optimizer, steps=10):
    x, y = _data()

    @nnx.jit
    def step(model, optimizer, x, y):
        def loss_fn(model):
            return jnp.mean((model(x) - y) ** 2)

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    losses = jnp.stack([step(model, optimizer, x, y) for _ in range(steps)])
    model.eval()
    return {"losses": losses, "state": nnx.state(model, nnx.Param), "prediction": model(x)}


@case
def mlp_adam():
    model = MLP(8, 16, rngs=nnx.Rngs(0))
    return _train(model, nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param))


@case
def mlp_dropout_batch_norm_sgd():
    model = MLP(8, 16, rngs=nnx.Rngs(params=1, dropout=2), dropout=0.2, batch_norm=True)
    out = _train(model, nnx.Optimizer(model, optax.sgd(5e-2, momentum=0.9), wrt=nnx.Param))
    out["batch_stats"] = nnx.state(model, nnx.BatchStat)
    return out


@case
def rngs_streams():
    rngs = nnx.Rngs(params=0, dropout=jax.random.key(3))
    keys = [rngs.params(), rngs.dropout(), rngs.params()]
    return {"data": jnp.stack([jax.random.key_data(k) for k in keys]),
            "normal": rngs.params.normal((3,)), "uniform": rngs.dropout.uniform((2, 2))}


@case
def rngs_in_jit_advance_their_counts():
    rngs = nnx.Rngs(dropout=5)

    @nnx.jit
    def draw(rngs):
        return rngs.dropout.normal((4,)) + rngs.dropout.uniform((4,))

    draws = jnp.stack([draw(rngs) for _ in range(3)])
    return {"draws": draws, "count": rngs.dropout.count[...], "key": jax.random.key_data(rngs.dropout.key[...])}


@case
def vmapped_ensemble_with_split_rngs():
    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def create(rngs):
        return MLP(8, 4, rngs=rngs)

    ensemble = create(nnx.Rngs(7))
    x, _ = _data()

    @nnx.vmap(in_axes=(0, None), out_axes=0)
    def forward(model, x):
        return model(x)

    return {"out": forward(ensemble, x), "params": nnx.state(ensemble, nnx.Param)}


@case
def scanned_layers():
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(8, 8, rngs=rngs)
            self.norm = nnx.LayerNorm(8, rngs=rngs)

        def __call__(self, x):
            return x + nnx.relu(self.norm(self.linear(x)))

    @nnx.split_rngs(splits=4)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def create(rngs):
        return Block(rngs)

    blocks = create(nnx.Rngs(3))
    x, _ = _data()

    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
    def apply(x, block):
        return block(x)

    @nnx.jit
    def loss(blocks, x):
        return jnp.mean(apply(x, blocks) ** 2)

    value, grads = nnx.jit(nnx.value_and_grad(loss))(blocks, x)
    return {"loss": value, "grads": grads}


@case(rtol=2e-5, atol=2e-6)
def cnn_and_attention_train():
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.embed = nnx.Embed(11, 8, rngs=rngs)
            self.conv = nnx.Conv(8, 8, kernel_size=(3,), rngs=rngs)
            # No projection biases: the key bias's gradient is zero in exact arithmetic (softmax ignores a shift
            # shared by all keys), so its float noise, which Adam normalizes into full steps, is all it learns.
            self.attention = nnx.MultiHeadAttention(num_heads=2, in_features=8, qkv_features=8, decode=False,
                                                    dropout_rate=0.1, use_bias=False, rngs=rngs)
            self.norm = nnx.LayerNorm(8, rngs=rngs)
            self.head = nnx.Linear(8, 11, rngs=rngs)

        def __call__(self, tokens):
            x = self.embed(tokens)
            x = nnx.relu(self.conv(x))
            x = self.norm(x + self.attention(x, mask=nnx.make_causal_mask(tokens), deterministic=False))
            return self.head(x)

    tokens = jnp.asarray(np.random.default_rng(1).integers(0, 11, size=(4, 6)).astype(np.int32))
    model = Net(nnx.Rngs(params=0, dropout=1))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-2), wrt=nnx.Param)

    @nnx.jit
    def step(model, optimizer, tokens):
        def loss_fn(model):
            logits = model(tokens[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    losses = jnp.stack([step(model, optimizer, tokens) for _ in range(5)])
    return {"losses": losses, "params": nnx.state(model, nnx.Param)}


def _leaf_summary(tree):
    """Each leaf's rank and whether it is a typed key (typed keys are single leaves in jax's trees)."""
    leaves = jax.tree.leaves(tree)
    return {"ndim": jnp.asarray([leaf.ndim for leaf in leaves]),
            "is_key": jnp.asarray([jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key) for leaf in leaves])}


@case
def abstract_model_and_rng_state_leaves():
    def create():
        return MLP(8, 16, rngs=nnx.Rngs(params=1, dropout=2), dropout=0.2, batch_norm=True)

    abstract = nnx.eval_shape(create)
    model = create()
    rng_state = nnx.state(model, nnx.RngState)
    shapes = jax.tree.map(lambda x: jnp.asarray(x.shape + (0,) * (2 - x.ndim)), nnx.state(abstract))
    return {"abstract": _leaf_summary(nnx.state(abstract)), "model": _leaf_summary(nnx.state(model)),
            "shapes": shapes, "key_data": jax.tree.map(jax.random.key_data, nnx.state(model, nnx.RngKey)),
            "counts": jax.tree.leaves(nnx.state(model, nnx.RngCount)), "n_rng_leaves": len(jax.tree.leaves(rng_state))}


@case
def forked_and_split_streams():
    rngs = nnx.Rngs(params=0, dropout=1)
    forked = rngs.fork()
    split = rngs.split({"params": 3, ...: 2})
    return {"forked": jax.random.normal(forked.params(), (2,)),
            "split": jax.vmap(lambda key: jax.random.uniform(key, (2,)))(split.params.key[...]),
            "split_dropout": jax.random.key_data(split.dropout.key[...]), "shape": jnp.asarray(split.params.key.shape)}


@case
def ref_variables_updated_under_jit():
    # Variables over mutable array refs (jax.new_ref): nnx.jit passes the refs to jax.jit, which writes the
    # updates made inside (batch statistics, a counter, a parameter step) back into them.
    with nnx.var_defaults(ref=True):
        model = MLP(8, 16, rngs=nnx.Rngs(params=0, dropout=1), dropout=0.1, batch_norm=True)
    x, _ = _data()

    @nnx.jit
    def forward(model, x):
        model.out.bias[...] = model.out.bias[...] + 0.5
        return model(x)

    outs = jnp.stack([forward(model, x * (i + 1)) for i in range(3)])
    return {"outs": outs, "raw_is_ref": jnp.asarray(type(model.out.bias.get_raw_value()).__name__ == "Ref"),
            "state": jax.tree.map(lambda v: v[...], nnx.state(model, nnx.BatchStat)),
            "bias": model.out.bias[...], "count": model.dropout.rngs.count[...]}


@case
def key_held_as_module_data():
    class Noisy(nnx.Module):
        def __init__(self):
            self.seed = nnx.data(jax.random.key(3))  # a key as a pytree leaf of the module, not in a Variable
            self.w = nnx.Param(jnp.ones(2))

    model = Noisy()
    _, state = nnx.split(model)

    @nnx.jit
    def noise(model):
        return jax.random.normal(model.seed, (2,)) * model.w

    return {"noise": noise(model), "state": _leaf_summary(state), "n_leaves": len(jax.tree.leaves(state))}


@case
def hijax_variables_eagerly():
    # Variables as jax.experimental.hijax types (flax's opt-in hijax mode), used outside transformations: their
    # reads and writes are hijax primitives evaluated eagerly (both libraries stop at nnx.jit in this mode).
    with nnx.var_defaults(hijax=True):
        model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    x = jnp.ones((4, 3))
    before = model(x)
    model.bias[...] = model.bias[...] + 1.0
    return {"before": before, "after": model(x), "kernel": model.kernel[...]}
