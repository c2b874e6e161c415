"""A GPT-2-style training step (issue 32's whole-model benchmark), written once in jax style and run by numax (XLA
and fusion="triton") and jax, and once in torch style run by torch.compile and torch eager: ms per step in the steady
state, tokens per second, the first call (trace, compile, autotune) and the device's peak memory.

The model: token and position embeddings, pre-norm blocks (LayerNorm, causal attention written out, tanh GELU MLP,
residuals), a final LayerNorm and the tied output projection; float32 parameters with bfloat16 matrix products
(torch: autocast), cross-entropy over the vocabulary, and AdamW with bias correction and weight decay (torch:
torch.optim.AdamW, fused). Each side runs in a process of its own, so that its first call and peak memory are its
own and no side's buffers sit beside another's; the first step's loss of every side is checked against jax's.

    python3 bench/gpt2_step.py [--size small|124m|tiny] [--sides numax-xla,numax-fusion,jax,torch-compile,torch-eager]
                               [--steps N] [--json PATH] [--logs DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

SIZES = {  # layers, width, heads, context, vocabulary, batch
    "tiny": dict(layers=1, width=32, heads=2, context=16, vocab=64, batch=2),
    "small": dict(layers=4, width=256, heads=4, context=256, vocab=8192, batch=8),
    "124m": dict(layers=12, width=768, heads=12, context=1024, vocab=50257, batch=8),
}
LEARNING_RATE, BETAS, EPS, WEIGHT_DECAY = 3e-4, (0.9, 0.95), 1e-8, 0.1
SIDES = ["numax-xla", "numax-fusion", "jax", "torch-compile", "torch-eager"]


def initial_parameters(size, seed=0):
    """The parameters as numpy float32 arrays, GPT-2's initialisation (normal, 0.02; residual projections scaled)."""
    rng = np.random.default_rng(seed)
    layers, width, vocab, context = size["layers"], size["width"], size["vocab"], size["context"]
    normal = lambda *shape, scale=0.02: (scale * rng.standard_normal(shape)).astype(np.float32)  # noqa: E731
    zeros, ones = (lambda n: np.zeros(n, np.float32)), (lambda n: np.ones(n, np.float32))
    residual = 0.02 / np.sqrt(2 * layers)
    blocks = [dict(ln1_scale=ones(width), ln1_shift=zeros(width), qkv=normal(width, 3 * width),
                   qkv_bias=zeros(3 * width), proj=normal(width, width, scale=residual), proj_bias=zeros(width),
                   ln2_scale=ones(width), ln2_shift=zeros(width), fc=normal(width, 4 * width),
                   fc_bias=zeros(4 * width), fc_proj=normal(4 * width, width, scale=residual),
                   fc_proj_bias=zeros(width)) for _ in range(layers)]
    return dict(tokens=normal(vocab, width), positions=normal(context, width, scale=0.01), blocks=blocks,
                final_scale=ones(width), final_shift=zeros(width))


def batch_of_tokens(size, seed=1):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, size["vocab"], (size["batch"], size["context"] + 1)).astype(np.int32)
    return tokens[:, :-1], tokens[:, 1:]


# --- jax style: numax and jax run this --------------------------------------------------------------------------
def jax_style_step(np_, nn, tree, heads):
    """step(params, state, inputs, targets) -> (params, state, loss), with state = (mu, nu, count)."""
    bf16 = np_.bfloat16

    def dense(x, weight, bias):
        return (x.astype(bf16) @ weight.astype(bf16)).astype(np_.float32) + bias

    def layer_norm(x, scale, shift):
        mean = x.mean(-1, keepdims=True)
        variance = np_.square(x - mean).mean(-1, keepdims=True)
        return (x - mean) / np_.sqrt(variance + 1e-5) * scale + shift

    def attention(x, block):
        batch, context, width = x.shape
        q, k, v = np_.split(dense(x, block["qkv"], block["qkv_bias"]), 3, axis=-1)
        q, k, v = (a.reshape(batch, context, heads, width // heads).transpose(0, 2, 1, 3) for a in (q, k, v))
        scores = (q.astype(bf16) @ k.astype(bf16).transpose(0, 1, 3, 2)).astype(np_.float32)
        scores = scores / np_.sqrt(width // heads * 1.0)
        mask = np_.tril(np_.ones((context, context), dtype=bool))
        probabilities = nn.softmax(np_.where(mask, scores, -np_.inf), axis=-1)
        attended = (probabilities.astype(bf16) @ v.astype(bf16)).astype(np_.float32)
        attended = attended.transpose(0, 2, 1, 3).reshape(batch, context, width)
        return dense(attended, block["proj"], block["proj_bias"])

    def loss_of(params, inputs, targets):
        x = params["tokens"][inputs] + params["positions"][: inputs.shape[1]]
        for block in params["blocks"]:
            x = x + attention(layer_norm(x, block["ln1_scale"], block["ln1_shift"]), block)
            hidden = nn.gelu(dense(layer_norm(x, block["ln2_scale"], block["ln2_shift"]), block["fc"],
                                   block["fc_bias"]), approximate=True)
            x = x + dense(hidden, block["fc_proj"], block["fc_proj_bias"])
        x = layer_norm(x, params["final_scale"], params["final_shift"])
        logits = (x.astype(bf16) @ params["tokens"].astype(bf16).T).astype(np_.float32)
        log_probabilities = nn.log_softmax(logits, axis=-1)
        return -np_.take_along_axis(log_probabilities, targets[..., None], axis=-1).mean()

    def step(params, state, inputs, targets, value_and_grad):
        loss, grads = value_and_grad(loss_of)(params, inputs, targets)
        mu, nu, count = state
        count = count + 1
        mu = tree.tree_map(lambda m, g: BETAS[0] * m + (1 - BETAS[0]) * g, mu, grads)
        nu = tree.tree_map(lambda v, g: BETAS[1] * v + (1 - BETAS[1]) * g * g, nu, grads)
        mu_scale, nu_scale = 1 / (1 - BETAS[0] ** count), 1 / (1 - BETAS[1] ** count)
        params = tree.tree_map(lambda p, m, v: p - LEARNING_RATE * (
            m * mu_scale / (np_.sqrt(v * nu_scale) + EPS) + WEIGHT_DECAY * p), params, mu, nu)
        return params, (mu, nu, count), loss

    return step


def run_jax_style(side, size, steps):
    """One numax or jax side: {first_call_s, step_ms, losses, peak_bytes}."""
    if side == "jax":
        import jax
        import jax.numpy as np_
        from jax import nn
        from jax import tree_util as tree
        jit = lambda f: jax.jit(f, donate_argnums=(0, 1))  # noqa: E731
        put, ready, value_and_grad = jax.device_put, jax.block_until_ready, jax.value_and_grad
        device = jax.devices()[0]
    else:
        import numax
        import numax.numpy as np_
        from numax import nn
        from numax import tree_util as tree
        fusion = "triton" if side == "numax-fusion" else "xla"
        jit = lambda f: numax.jit(f, donate_argnums=(0, 1), fusion=fusion)  # noqa: E731
        put, ready, value_and_grad = numax.device_put, numax.block_until_ready, numax.value_and_grad
        device = numax.devices()[0]
    step = jax_style_step(np_, nn, tree, size["heads"])
    compiled = jit(lambda params, state, inputs, targets: step(params, state, inputs, targets, value_and_grad))
    params = tree.tree_map(put, initial_parameters(size))
    state = (tree.tree_map(lambda p: put(np.zeros_like(p)), initial_parameters(size)),
             tree.tree_map(lambda p: put(np.zeros_like(p)), initial_parameters(size)), put(np.int32(0)))
    inputs, targets = (put(a) for a in batch_of_tokens(size))
    start = time.perf_counter()
    params, state, loss = compiled(params, state, inputs, targets)
    ready(loss)
    first_call = time.perf_counter() - start
    losses = [float(loss)]
    for _ in range(2):  # warm
        params, state, loss = compiled(params, state, inputs, targets)
    ready(loss)
    start = time.perf_counter()
    for _ in range(steps):
        params, state, loss = compiled(params, state, inputs, targets)
    ready(loss)
    step_s = (time.perf_counter() - start) / steps
    stats = getattr(device, "memory_stats", lambda: None)() or {}
    return dict(first_call_s=first_call, step_ms=step_s * 1e3, losses=losses + [float(loss)],
                peak_bytes=stats.get("peak_bytes_in_use"))


# --- torch style --------------------------------------------------------------------------------------------
def run_torch(side, size, steps):
    import torch
    import torch.nn.functional as F

    heads = size["heads"]

    def tensor(a):
        return torch.from_numpy(a).cuda().requires_grad_()

    raw = initial_parameters(size)
    params = dict(tokens=tensor(raw["tokens"]), positions=tensor(raw["positions"]),
                  blocks=[{k: tensor(v) for k, v in block.items()} for block in raw["blocks"]],
                  final_scale=tensor(raw["final_scale"]), final_shift=tensor(raw["final_shift"]))

    def loss_of(inputs, targets):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            x = params["tokens"][inputs] + params["positions"][: inputs.shape[1]]
            for block in params["blocks"]:
                h = F.layer_norm(x, x.shape[-1:], block["ln1_scale"], block["ln1_shift"], 1e-5)
                batch, context, width = h.shape
                q, k, v = (h @ block["qkv"] + block["qkv_bias"]).split(width, dim=-1)
                q, k, v = (a.view(batch, context, heads, width // heads).transpose(1, 2) for a in (q, k, v))
                scores = (q @ k.transpose(-2, -1)).float() / (width // heads) ** 0.5
                mask = torch.ones(context, context, dtype=torch.bool, device=x.device).tril()
                probabilities = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
                attended = (probabilities @ v).transpose(1, 2).reshape(batch, context, width)
                x = x + attended @ block["proj"] + block["proj_bias"]
                h = F.layer_norm(x, x.shape[-1:], block["ln2_scale"], block["ln2_shift"], 1e-5)
                x = x + F.gelu(h @ block["fc"] + block["fc_bias"], approximate="tanh") @ block["fc_proj"] + block[
                    "fc_proj_bias"]
            x = F.layer_norm(x, x.shape[-1:], params["final_scale"], params["final_shift"], 1e-5)
            logits = (x @ params["tokens"].T).float()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1).long())

    leaves = [params["tokens"], params["positions"], params["final_scale"], params["final_shift"]] + [
        p for block in params["blocks"] for p in block.values()]
    optimizer = torch.optim.AdamW(leaves, lr=LEARNING_RATE, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY,
                                  fused=True)
    prepared = torch.compile(loss_of) if side == "torch-compile" else loss_of
    inputs, targets = (torch.from_numpy(a).cuda().long() for a in batch_of_tokens(size))

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = prepared(inputs, targets)
        loss.backward()
        optimizer.step()
        return loss

    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    loss = step()
    torch.cuda.synchronize()
    first_call = time.perf_counter() - start
    losses = [float(loss)]
    for _ in range(2):
        loss = step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        loss = step()
    torch.cuda.synchronize()
    return dict(first_call_s=first_call, step_ms=(time.perf_counter() - start) / steps * 1e3,
                losses=losses + [float(loss)], peak_bytes=torch.cuda.max_memory_allocated())


def child(side, size_name, steps):
    size = SIZES[size_name]
    result = run_torch(side, size, steps) if side.startswith("torch") else run_jax_style(side, size, steps)
    result["tokens_per_s"] = size["batch"] * size["context"] / (result["step_ms"] / 1e3)
    print("RESULT " + json.dumps(result), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="small", choices=sorted(SIZES))
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--json")
    parser.add_argument("--logs", help="a folder for each side's standard error (NUMAX_LOG_FUSION's log among it)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.size, args.steps)
    results = {}
    for side in args.sides.split(","):
        run = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", side, "--size", args.size,
                              "--steps", str(args.steps)], capture_output=True, text=True)
        lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
        if args.logs:
            with open(os.path.join(args.logs, f"gpt2_{args.size}_{side}.log"), "w") as log:
                log.write(run.stderr)
        if run.returncode or not lines:
            results[side] = {"error": (run.stderr.strip().splitlines() or ["no output"])[-1][:300]}
        else:
            results[side] = json.loads(lines[-1][len("RESULT "):])
        print(f"{side}: {json.dumps(results[side])}", file=sys.stderr, flush=True)  # a side's result as it ends
    reference = results.get("jax", {}).get("losses")
    size = SIZES[args.size]
    print(f"# GPT-2-style training step, size {args.size} ({size}), {args.steps} steps timed")
    print("| side | ms / step | tokens / s | first call | peak memory | first loss (jax's) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for side, result in results.items():
        if "error" in result:
            print(f"| {side} | failed: {result['error']} | | | | |")
            continue
        peak = f"{result['peak_bytes'] / 2 ** 30:.2f} GiB" if result.get("peak_bytes") else "-"
        first_loss = f"{result['losses'][0]:.4f}" + (f" ({reference[0]:.4f})" if reference else "")
        print(f"| {side} | {result['step_ms']:.2f} | {result['tokens_per_s']:.0f} | {result['first_call_s']:.2f} s "
              f"| {peak} | {first_loss} |")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"size": args.size, "steps": args.steps, "results": results}, file, indent=1)


if __name__ == "__main__":
    main()
