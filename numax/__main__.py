"""`python -m numax`: the main demo. Fits a small model to synthetic data with jitted numpy code."""

import time

import numpy as np

import numax
import numax.numpy as xnp


def make_data(n=256, features=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    true_w = rng.normal(size=(features, 1)).astype(np.float32)
    y = np.tanh(x @ true_w) + 0.05 * rng.normal(size=(n, 1)).astype(np.float32)
    return xnp.asarray(x), xnp.asarray(y)


def predict(params, x):
    w, b = params
    return xnp.tanh(x @ w + b)


def loss(params, x, y):
    return xnp.mean((predict(params, x) - y) ** 2)


@numax.jit
def train_step(params, x, y, learning_rate):
    """One step of gradient descent, with the gradient of the mean squared error derived by hand."""
    w, b = params
    z = x @ w + b
    prediction = xnp.tanh(z)
    error = prediction - y
    # d loss / d z = 2 (prediction - y) (1 - tanh(z)^2) / n
    dz = 2.0 * error * (1.0 - prediction**2) / y.shape[0]
    grad_w = x.T @ dz
    grad_b = dz.sum(axis=0)
    new_params = (w - learning_rate * grad_w, b - learning_rate * grad_b)
    return new_params, xnp.mean(error**2)


def main():
    x, y = make_data()
    params = (xnp.zeros((x.shape[1], 1)), xnp.zeros((1,)))
    print(f"numax {numax.__version__} on {numax.default_backend()}: {numax.devices()}")
    print("\nThe training step as numax traces it (a jaxpr):")
    print(numax.make_jaxpr(train_step.fun)(params, x, y, 0.5))
    print("\nand the StableHLO that XLA compiles:")
    print(train_step.lower(params, x, y, 0.5).as_text())
    print("\nTraining:")
    start = time.perf_counter()
    for step in range(201):
        params, current_loss = train_step(params, x, y, 0.5)
        if step % 25 == 0:
            print(f"  step {step:3d}  loss {float(current_loss):.5f}")
    elapsed = time.perf_counter() - start
    print(f"final loss {float(loss(params, x, y)):.5f}; 201 steps in {elapsed:.2f} s (compile included)")


if __name__ == "__main__":
    main()
