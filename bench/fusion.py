"""Automatic Triton fusion against XLA, jax and torch on one GPU (issue 14), in one run:

  (a) a 64M-element float32 chain of 8 elementwise operations,
  (b) row softmax, 8192x8192 float32,
  (c) layernorm + GELU + residual, float16 16384x4096,
  (d) a 2-layer MLP training step (float32, batch 4096, 1024 -> 4096 -> 1024): only the non-matmul parts fuse,
  (e) layernorm + linear + GELU + residual, float16 32x512x512 (the small-op case),
  (f) a float32 8192x8192 chain whose other operands are a bias (d,) and a value per row (n, 1) (issue 32).

Sides: numax with fusion="triton", numax on XLA only, jax.jit, torch.compile and torch eager. Every side's result
is checked against numpy (float64) first. Times are medians of interleaved repeats, two ways: "call + wait", each
call waiting for the device (latency: host dispatch, device work and the wake-up after it), and "back to back",
calls queued without waiting (throughput: the device's time where it exceeds the host's). The floor is the
case's bytes (inputs read once, outputs written once) at the bandwidth a device-to-device copy reaches, measured
the same two ways, and each time is also given as a fraction of it. The first call of each compiled side
(trace, generate, autotune, compile) is reported as its compile time. With --json PATH the numbers are written
there too (bench/fusion_plot.py draws them).

    python3 bench/fusion.py [--quick] [--cases abcde] [--json PATH]
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from dispatch import interleaved  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402

EPSILON = 1e-5


# --- the cases, written once per framework ------------------------------------------------------------------
def chain(np_):
    """Eight elementwise operations: one read of x and y, one write."""
    def f(x, y):
        z = x * 1.5 + y
        z = np_.tanh(z) * 0.5
        z = np_.exp(-z * z) - 0.25
        return np_.maximum(z, y * 0.1)

    return f


def broadcast_chain(np_):
    """A chain over (n, d) whose other operands are repeated along the rows (a bias) and along the columns (a value
    per row): one read of x, one write."""
    def f(x, bias, per_row):
        return np_.tanh(x + bias) * per_row + 1.0

    return f


def layernorm_gelu_residual(np_, rsqrt, gelu):
    def f(x, scale, shift):
        mean = x.mean(-1, keepdims=True)
        centered = x - mean
        variance = (centered * centered).mean(-1, keepdims=True)
        return gelu(centered * rsqrt(variance + EPSILON) * scale + shift) + x

    return f


def layernorm_linear_gelu_residual(np_, rsqrt, gelu):
    def f(x, scale, shift, weight, bias):
        mean = x.mean(-1, keepdims=True)
        centered = x - mean
        variance = (centered * centered).mean(-1, keepdims=True)
        normed = centered * rsqrt(variance + EPSILON) * scale + shift
        return gelu(normed @ weight + bias) + x

    return f


def mlp_step(np_, gelu, value_and_grad, learning_rate=1e-3):
    def loss(params, x, y):
        w1, b1, w2, b2 = params
        return ((gelu(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean()

    def step(params, x, y):
        value, grads = value_and_grad(loss)(params, x, y)
        return [p - learning_rate * g for p, g in zip(params, grads)], value

    return step


def numpy_gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def numpy_rsqrt(x):
    return 1 / np.sqrt(x)


def numpy_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def numpy_mlp_step(params, x, y, learning_rate=1e-3):
    w1, b1, w2, b2 = params
    pre = x @ w1 + b1
    hidden = numpy_gelu(pre)
    out = hidden @ w2 + b2
    d_out = 2 * (out - y) / out.size
    d_hidden = d_out @ w2.T
    t = np.sqrt(2 / np.pi) * (pre + 0.044715 * pre ** 3)
    d_gelu = 0.5 * (1 + np.tanh(t)) + 0.5 * pre * (1 - np.tanh(t) ** 2) * np.sqrt(2 / np.pi) * (
        1 + 3 * 0.044715 * pre ** 2)
    d_pre = d_hidden * d_gelu
    grads = [x.T @ d_pre, d_pre.sum(0), hidden.T @ d_out, d_out.sum(0)]
    return [p - learning_rate * g for p, g in zip(params, grads)], ((out - y) ** 2).mean()


class Case:
    def __init__(self, key, title, make_inputs, numax_fn, jax_fn, torch_fn, reference, tolerance, floor_bytes):
        self.key, self.title, self.make_inputs = key, title, make_inputs
        self.numax_fn, self.jax_fn, self.torch_fn, self.reference = numax_fn, jax_fn, torch_fn, reference
        self.tolerance, self.floor_bytes = tolerance, floor_bytes


def cases(quick):
    import jax
    import jax.numpy as jnp

    scale = 4 if quick else 1
    numax_ln = layernorm_gelu_residual(xnp, numax.lax.rsqrt, numax.nn.gelu)
    jax_ln = layernorm_gelu_residual(jnp, jax.lax.rsqrt, jax.nn.gelu)
    numax_lin = layernorm_linear_gelu_residual(xnp, numax.lax.rsqrt, numax.nn.gelu)
    jax_lin = layernorm_linear_gelu_residual(jnp, jax.lax.rsqrt, jax.nn.gelu)

    def chain_inputs(rng):
        n = (64 << 20) // scale
        return [rng.normal(size=n).astype(np.float32) for _ in range(2)]

    def broadcast_inputs(rng):
        rows, width = 8192 // scale, 8192
        return [rng.normal(size=(rows, width)).astype(np.float32), rng.normal(size=width).astype(np.float32),
                rng.normal(size=(rows, 1)).astype(np.float32)]

    def softmax_inputs(rng):
        return [rng.normal(size=(8192 // scale, 8192)).astype(np.float32)]

    def scale_and_shift(rng, width):
        return (1 + 0.1 * rng.normal(size=width)).astype(np.float16), (0.1 * rng.normal(size=width)).astype(np.float16)

    def ln_inputs(rng):
        rows, width = 16384 // scale, 4096
        return [rng.normal(size=(rows, width)).astype(np.float16), *scale_and_shift(rng, width)]

    def linear_inputs(rng):
        width = 512
        return [rng.normal(size=(32 // scale, 512, width)).astype(np.float16), *scale_and_shift(rng, width),
                (rng.normal(size=(width, width)) / np.sqrt(width)).astype(np.float16),
                (0.1 * rng.normal(size=width)).astype(np.float16)]

    def mlp_inputs(rng):
        batch, sizes = 4096 // scale, (1024, 4096, 1024)
        params = [(rng.normal(size=(sizes[0], sizes[1])) / np.sqrt(sizes[0])).astype(np.float32),
                  np.zeros(sizes[1], np.float32),
                  (rng.normal(size=(sizes[1], sizes[2])) / np.sqrt(sizes[1])).astype(np.float32),
                  np.zeros(sizes[2], np.float32)]
        return [params, rng.normal(size=(batch, sizes[0])).astype(np.float32),
                rng.normal(size=(batch, sizes[2])).astype(np.float32)]

    def bytes_of(*arrays):
        return sum(np.asarray(a).nbytes for a in arrays)

    def ln_reference(x, scale_, shift):
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        return numpy_gelu((x - mean) / np.sqrt(variance + EPSILON) * scale_ + shift) + x

    def linear_reference(x, scale_, shift, weight, bias):
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        return numpy_gelu(((x - mean) / np.sqrt(variance + EPSILON) * scale_ + shift) @ weight + bias) + x

    return [
        Case("a", "64M float32 chain of 8 ops", chain_inputs, chain(xnp), chain(jnp), chain,
             lambda x, y: chain(np)(x, y), (2e-5, 2e-6), lambda x, y: 3 * x.nbytes),
        Case("b", "row softmax 8192x8192 float32", softmax_inputs, lambda x: numax.nn.softmax(x, axis=-1),
             lambda x: jax.nn.softmax(x, axis=-1), "softmax", numpy_softmax, (1e-5, 1e-7),
             lambda x: 2 * x.nbytes),
        Case("c", "layernorm + GELU + residual float16 16384x4096", ln_inputs, numax_ln, jax_ln, "layernorm_gelu",
             ln_reference, (2e-2, 2e-2), lambda x, s, b: 2 * x.nbytes + s.nbytes + b.nbytes),
        Case("d", "2-layer MLP training step float32 (4096, 1024 -> 4096 -> 1024)", mlp_inputs,
             mlp_step(xnp, numax.nn.gelu, numax.value_and_grad), mlp_step(jnp, jax.nn.gelu, jax.value_and_grad),
             "mlp_step", numpy_mlp_step, (2e-2, 2e-3),
             lambda *arrays: 2 * bytes_of(*arrays[:4]) + bytes_of(*arrays[4:])),  # parameters, then x and y
        Case("e", "layernorm + linear + GELU + residual float16 32x512x512", linear_inputs, numax_lin, jax_lin,
             "layernorm_linear_gelu", linear_reference, (3e-2, 3e-2),
             lambda x, s, b, w, c: 2 * x.nbytes + bytes_of(s, b, w, c)),
        Case("f", "broadcast chain float32 8192x8192: tanh(x + (d,)) * (n, 1) + 1", broadcast_inputs,
             broadcast_chain(xnp), broadcast_chain(jnp), broadcast_chain, broadcast_chain(np), (1e-5, 1e-6),
             lambda x, bias, per_row: 2 * x.nbytes + bytes_of(bias, per_row)),
    ]


# --- torch's versions (its fused library calls where it has them, as a torch user would write them) ---------
def torch_function(name):
    import torch
    import torch.nn.functional as F

    if callable(name):
        return name(torch)
    if name == "softmax":
        return lambda x: torch.softmax(x, dim=-1)
    if name == "layernorm_gelu":
        return lambda x, scale, shift: F.gelu(F.layer_norm(x, x.shape[-1:], scale, shift, EPSILON),
                                              approximate="tanh") + x
    if name == "layernorm_linear_gelu":
        return lambda x, scale, shift, weight, bias: F.gelu(
            F.layer_norm(x, x.shape[-1:], scale, shift, EPSILON) @ weight + bias, approximate="tanh") + x
    if name == "mlp_step":
        return torch_mlp_step()
    raise ValueError(name)


def torch_compiled(name):
    import torch

    # for the training step the loss is compiled, its backward through AOTAutograd, as torch users train
    return torch_mlp_step(torch.compile) if name == "mlp_step" else torch.compile(torch_function(name))


def torch_mlp_step(prepare_loss=lambda loss: loss):
    """case (d) in torch: the loss (passed through `prepare_loss`), its gradient by autograd, an SGD update."""
    import torch
    import torch.nn.functional as F

    def loss(params, x, y):
        w1, b1, w2, b2 = params
        return ((F.gelu(x @ w1 + b1, approximate="tanh") @ w2 + b2 - y) ** 2).mean()

    prepared = prepare_loss(loss)

    def step(params, x, y):
        params = [p.detach().requires_grad_() for p in params]
        value = prepared(params, x, y)
        grads = torch.autograd.grad(value, params)
        return [p.detach() - 1e-3 * g for p, g in zip(params, grads)], value.detach()

    return step


# --- running the sides --------------------------------------------------------------------------------------
def leaves(value):
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]


def host(value):
    if hasattr(value, "detach"):
        return value.detach().float().cpu().numpy()
    return np.asarray(value).astype(np.float32) if np.asarray(value).dtype == np.float16 else np.asarray(value)


def sides(case, inputs):
    """name -> (call, wait): `call()` runs that side once asynchronously, `wait(result)` waits for it."""
    found = {}

    def numax_side(fusion):
        fn = numax.jit(case.numax_fn, fusion=fusion)
        args = numax.tree_util.tree_map(numax.device_put, inputs)
        return (lambda: fn(*args)), numax.block_until_ready

    found["numax (fusion)"] = numax_side("triton")
    found["numax (XLA)"] = numax_side("xla")
    try:
        import jax

        jf = jax.jit(case.jax_fn)
        jargs = jax.tree_util.tree_map(jax.device_put, inputs)
        found["jax.jit"] = (lambda: jf(*jargs)), jax.block_until_ready
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        return found

    def to_torch(value):
        return [to_torch(v) for v in value] if isinstance(value, list) else torch.from_numpy(value).cuda()

    targs = [to_torch(v) for v in inputs]
    synchronize = lambda result: torch.cuda.synchronize()  # noqa: E731
    compiled, eager = torch_compiled(case.torch_fn), torch_function(case.torch_fn)
    found["torch.compile"] = (lambda: compiled(*targs)), synchronize
    found["torch eager"] = (lambda: eager(*targs)), synchronize
    copy_source = torch.empty(case.floor_bytes(*leaves(inputs)) // 2, dtype=torch.uint8, device="cuda")
    found["copy (floor)"] = copy_source.clone, synchronize
    return found


def run_case(case, quick, rng):
    inputs = case.make_inputs(rng)
    reference_inputs = [[np.asarray(v, np.float64) for v in leaf] if isinstance(leaf, list)
                        else np.asarray(leaf, np.float64) for leaf in inputs]
    expected = leaves(case.reference(*reference_inputs))
    found = sides(case, inputs)
    compile_s = {}
    for name, (call, wait) in found.items():
        start = time.perf_counter()
        out = call()
        wait(out)
        if name != "copy (floor)":
            compile_s[name] = time.perf_counter() - start
            rtol, atol = case.tolerance
            for got, want in zip(leaves(out), expected):
                np.testing.assert_allclose(host(got), want, rtol=rtol, atol=atol, err_msg=f"{case.key} {name}")
        del out
    repeats, inner = (5, 5) if quick else (15, 20)
    # Back to back: windows of STREAMED_CALLS calls, so that a window's fixed costs (the first call's launch
    # latency, the final wait's wake-up) spread thin; with 20-call windows they added 5-15 us per call, more to
    # numax's and jax's programs (~50 us to launch through PJRT) than to torch's (bench/probes/fusion_route_probe.py).
    streamed_calls = inner if quick else STREAMED_CALLS
    waited = interleaved([(name, lambda c=call, w=wait: w(c())) for name, (call, wait) in found.items()],
                         repeats, inner)
    streamed = interleaved([(name, lambda c=call, w=wait: back_to_back(c, w, streamed_calls))
                            for name, (call, wait) in found.items()], repeats, 1)
    streamed = {name: value / streamed_calls for name, value in streamed.items()}
    floor, floor_streamed = waited.pop("copy (floor)", None), streamed.pop("copy (floor)", None)
    return {"case": case.key, "title": case.title, "times_us": waited, "floor_us": floor,
            "back_to_back_us": streamed, "floor_back_to_back_us": floor_streamed, "compile_s": compile_s}


STREAMED_CALLS = 100


def back_to_back(call, wait, calls):
    """`calls` calls without waiting in between (each result dropped), then a wait for the last."""
    for _ in range(calls):
        out = call()
    wait(out)


def report(result):
    floor, floor_streamed = result["floor_us"], result["floor_back_to_back_us"]
    print(f"\n## ({result['case']}) {result['title']}")
    print("| side | call + wait | fraction of the floor | back to back | fraction of the floor | first call |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, value in result["times_us"].items():
        streamed = result["back_to_back_us"][name]
        fraction = f"{floor / value:.0%}" if floor else "-"
        fraction_streamed = f"{floor_streamed / streamed:.0%}" if floor_streamed else "-"
        first = result["compile_s"].get(name)
        print(f"| {name} | {value:.1f} us | {fraction} | {streamed:.1f} us | {fraction_streamed} | {first:.2f} s |")
    if floor:
        print(f"| floor (copy bandwidth) | {floor:.1f} us | 100% | {floor_streamed:.1f} us | 100% | |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a quarter of each size, fewer repeats")
    parser.add_argument("--cases", default="abcdef")
    parser.add_argument("--json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"# numax fusion benchmark on {numax.devices()[0].device_kind}")
    results = []
    for case in cases(args.quick):
        if case.key in args.cases:
            results.append(run_case(case, args.quick, rng))
            report(results[-1])
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"device": numax.devices()[0].device_kind, "results": results}, file, indent=1)


if __name__ == "__main__":
    main()
