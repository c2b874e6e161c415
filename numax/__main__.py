"""`python -m numax`: the main demo. Trains a small MLP on synthetic data with `jit(value_and_grad(...))`."""

import time

import numpy as np

import numax
import numax.numpy as xnp


def make_data(n=512, features=8, seed=0):
    """A noisy smooth function of 8 inputs: y = sin(x . a) + 0.5 * tanh(x . b)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    a, b = rng.normal(size=(2, features)).astype(np.float32) / np.sqrt(features)
    y = np.sin(x @ a) + 0.5 * np.tanh(x @ b) + 0.05 * rng.normal(size=n).astype(np.float32)
    return xnp.asarray(x), xnp.asarray(y[:, None])


def init_params(key, sizes=(8, 32, 32, 1)):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, subkey = numax.random.split(key)
        w = numax.random.normal(subkey, (fan_in, fan_out)) * np.sqrt(1.0 / fan_in)
        params.append((w, xnp.zeros(fan_out)))
    return params


def predict(params, x):
    for w, b in params[:-1]:
        x = xnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss(params, x, y):
    return xnp.mean((predict(params, x) - y) ** 2)


@numax.jit
def train_step(params, x, y, learning_rate):
    """One step of gradient descent; the gradient comes from reverse-mode autodiff."""
    value, grads = numax.value_and_grad(loss)(params, x, y)
    new_params = numax.tree.map(lambda p, g: p - learning_rate * g, params, grads)
    return new_params, value


def main():
    x, y = make_data()
    params = init_params(numax.random.key(0))
    print(f"numax {numax.__version__} on {numax.default_backend()}: {numax.devices()}")
    print("\nThe training step as numax traces it (a jaxpr): the forward pass, then the backward pass that")
    print("linearize + transpose derived from it, then the update:")
    print(numax.make_jaxpr(train_step.fun)(params, x, y, 0.1))
    print("\nTraining (jit(value_and_grad(loss))):")
    start = time.perf_counter()
    for step in range(301):
        params, current_loss = train_step(params, x, y, 0.1)
        if step % 50 == 0:
            print(f"  step {step:3d}  loss {float(current_loss):.5f}")
    elapsed = time.perf_counter() - start
    print(f"final loss {float(loss(params, x, y)):.5f}; 301 steps in {elapsed:.2f} s (compile included)")
    print("\nThe StableHLO that XLA compiled for the step (first lines):")
    print("\n".join(train_step.lower(params, x, y, 0.1).as_text().splitlines()[:12]) + "\n  ...")


if __name__ == "__main__":
    main()
