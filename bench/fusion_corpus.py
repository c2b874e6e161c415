"""The fusion corpus (issue 32): memory-bound programs from real models, each written the way its users write it,
once in jax style (run by numax and by jax) and once in torch style, forward and backward, in float32, bfloat16 and
float16. `python3 bench/fusion_corpus.py` times them on a GPU against jax.jit, torch.compile and torch eager;
tests/test_fusion_corpus.py runs the small sizes through Triton's interpreter and counts the kernels.

A case is a `Case`: its jax-style function `jax_style(np_, nn, lax, random)` (numax's modules or jax's), its torch
twin `torch_style(torch)`, its inputs, and the arguments its backward pass differentiates (`grad_argnums`; the
backward pass is `grad` of the sum of the result times a fixed cotangent, as a model's loss would send back).

    python3 bench/fusion_corpus.py [--quick] [--cases ln,rms,...] [--modes fwd,grad] [--json PATH]
"""

import argparse
import dataclasses
import json
import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

EPSILON = 1e-5
F32, BF16, F16 = np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)


# --- the programs, jax style -------------------------------------------------------------------------------
def layer_norm_gelu(np_, nn, lax, random):
    """Pre-norm LayerNorm with float32 statistics, affine, exact GELU, residual."""
    def f(x, scale, shift):
        x32 = x.astype(np_.float32)
        mean = x32.mean(-1, keepdims=True)
        variance = np_.square(x32 - mean).mean(-1, keepdims=True)
        normed = ((x32 - mean) * lax.rsqrt(variance + EPSILON)).astype(x.dtype) * scale + shift
        return nn.gelu(normed, approximate=False) + x

    return f


def rms_norm(np_, nn, lax, random):
    """RMSNorm with float32 statistics (LLaMA's)."""
    def f(x, weight):
        x32 = x.astype(np_.float32)
        normed = x32 * lax.rsqrt(np_.mean(x32 * x32, axis=-1, keepdims=True) + EPSILON)
        return normed.astype(x.dtype) * weight

    return f


def swiglu(np_, nn, lax, random):
    """The gate of a SwiGLU MLP: silu(x W) * (x V), after its two matmuls."""
    return lambda gate, up: nn.silu(gate) * up


def causal_softmax(np_, nn, lax, random):
    """Attention probabilities: scaled scores, a causal mask, softmax in float32, back to the scores' dtype."""
    def f(scores):
        length = scores.shape[-1]
        mask = np_.tril(np_.ones((length, length), dtype=bool))
        logits = np_.where(mask, scores.astype(np_.float32) / np_.sqrt(scores.shape[-1] * 1.0), -np_.inf)
        return nn.softmax(logits, axis=-1).astype(scores.dtype)

    return f


def rotary(np_, nn, lax, random):
    """Rotary position embeddings on (batch, time, heads, head_dim), rotate-half form, with cos and sin tables."""
    def f(x, cos, sin):
        half = x.shape[-1] // 2
        rotated = np_.concatenate([-x[..., half:], x[..., :half]], axis=-1)
        return (x * cos[:, None, :] + rotated * sin[:, None, :]).astype(x.dtype)

    return f


def cross_entropy(np_, nn, lax, random):
    """Mean cross-entropy of integer labels (logsumexp minus the label's logit), in float32."""
    def f(logits, labels):
        logits = logits.astype(np_.float32)
        label_logits = np_.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]
        return np_.mean(nn.logsumexp(logits, axis=-1) - label_logits)

    return f


def adamw(np_, nn, lax, random, learning_rate=1e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01):
    """One AdamW step over a list of parameter tensors (with bias correction at step `count`)."""
    def f(params, grads, mu, nu, count):
        count = count + 1
        mu = [b1 * m + (1 - b1) * g for m, g in zip(mu, grads)]
        nu = [b2 * v + (1 - b2) * g * g for v, g in zip(nu, grads)]
        mu_hat_scale, nu_hat_scale = 1 / (1 - b1 ** count), 1 / (1 - b2 ** count)
        params = [p - learning_rate * (m * mu_hat_scale / (np_.sqrt(v * nu_hat_scale) + eps) + weight_decay * p)
                  for p, m, v in zip(params, mu, nu)]
        return params, mu, nu, count

    return f


def dropout(np_, nn, lax, random, rate=0.1):
    """Inverted dropout with a key, on a residual branch."""
    def f(x, residual, key):
        keep = random.bernoulli(key, 1 - rate, x.shape)
        return residual + np_.where(keep, x / (1 - rate), 0).astype(x.dtype)

    return f


# --- the same programs, torch style --------------------------------------------------------------------------
def torch_layer_norm_gelu(torch):
    import torch.nn.functional as F

    return lambda x, scale, shift: F.gelu(F.layer_norm(x.float(), x.shape[-1:], eps=EPSILON).to(x.dtype) * scale
                                          + shift) + x


def torch_rms_norm(torch):
    def f(x, weight):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + EPSILON)).to(x.dtype) * weight

    return f


def torch_swiglu(torch):
    import torch.nn.functional as F

    return lambda gate, up: F.silu(gate) * up


def torch_causal_softmax(torch):
    def f(scores):
        length = scores.shape[-1]
        mask = torch.ones(length, length, dtype=torch.bool, device=scores.device).tril()
        logits = (scores.float() / length ** 0.5).masked_fill(~mask, float("-inf"))
        return torch.softmax(logits, dim=-1).to(scores.dtype)

    return f


def torch_rotary(torch):
    def f(x, cos, sin):
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return (x * cos[:, None, :] + rotated * sin[:, None, :]).to(x.dtype)

    return f


def torch_cross_entropy(torch):
    import torch.nn.functional as F

    return lambda logits, labels: F.cross_entropy(logits.float(), labels.long())


def torch_adamw(torch):
    def f(params, grads, mu, nu, count):  # torch.optim.AdamW's foreach arithmetic, written out functionally
        count = count + 1
        mu = torch._foreach_lerp(mu, grads, 0.1)
        nu = torch._foreach_add(torch._foreach_mul(nu, 0.999), torch._foreach_mul(grads, grads), alpha=0.001)
        mu_hat_scale, nu_hat_scale = 1 / (1 - 0.9 ** count), 1 / (1 - 0.999 ** count)
        denominators = torch._foreach_add(torch._foreach_sqrt(torch._foreach_mul(nu, nu_hat_scale)), 1e-8)
        updates = torch._foreach_div(torch._foreach_mul(mu, mu_hat_scale), denominators)
        params = torch._foreach_sub(torch._foreach_mul(params, 1 - 1e-3 * 0.01), torch._foreach_mul(updates, 1e-3))
        return params, mu, nu, count

    return f


def torch_dropout(torch):
    import torch.nn.functional as F

    return lambda x, residual, key: residual + F.dropout(x, 0.1, training=True)


# --- the cases --------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Case:
    key: str
    title: str
    jax_style: object
    torch_style: object
    make_inputs: object  # (rng, dtype, small) -> list of host inputs (numpy arrays, lists of them, keys as raw uint32)
    dtypes: tuple = (F32, BF16, F16)
    grad_argnums: tuple = ()  # the arguments its backward pass differentiates; () for no backward pass
    own_random_numbers: bool = False  # torch draws its own: its result is not compared

    def forward(self, api):
        """The jax-style function over `api`: a namespace of np, nn, lax, random and grad (numax's or jax's)."""
        return self.jax_style(api.np, api.nn, api.lax, api.random)

    def gradient(self, api):
        """grad of sum(result * cotangent) with respect to `grad_argnums`: the cotangent is one more argument."""
        if not self.grad_argnums:
            return None
        f, np_ = self.forward(api), api.np

        def loss(*args):
            *args, cotangent = args
            return np_.sum(f(*args).astype(np_.float32) * cotangent)

        return api.grad(loss, argnums=self.grad_argnums)


def _normal(rng, shape, dtype, scale=1.0):
    return (scale * rng.standard_normal(shape, dtype=np.float32)).astype(dtype)


def _tokens(small):
    return (8, 96) if small else (16384, 4096)


def _ln_inputs(rng, dtype, small):
    rows, width = _tokens(small)
    return [_normal(rng, (rows, width), dtype), (1 + _normal(rng, width, np.float32, 0.1)).astype(dtype),
            _normal(rng, width, dtype, 0.1)]


def _rms_inputs(rng, dtype, small):
    rows, width = _tokens(small)
    return [_normal(rng, (rows, width), dtype), (1 + _normal(rng, width, np.float32, 0.1)).astype(dtype)]


def _swiglu_inputs(rng, dtype, small):
    rows, width = _tokens(small)
    return [_normal(rng, (rows, width), dtype), _normal(rng, (rows, width), dtype)]


def _scores_inputs(rng, dtype, small):
    shape = (2, 2, 24, 24) if small else (4, 16, 1024, 1024)
    return [_normal(rng, shape, dtype, 4.0)]


def _rotary_inputs(rng, dtype, small):
    batch, time_, heads, head_dim = (2, 12, 3, 16) if small else (8, 1024, 16, 64)
    angles = np.arange(time_)[:, None] / 10000 ** (np.arange(0, head_dim, 2) / head_dim)
    angles = np.concatenate([angles, angles], axis=-1)
    return [_normal(rng, (batch, time_, heads, head_dim), dtype), np.cos(angles).astype(dtype),
            np.sin(angles).astype(dtype)]


def _logits_inputs(rng, dtype, small):
    rows, classes = (12, 100) if small else (8192, 8192)
    return [_normal(rng, (rows, classes), dtype, 2.0), rng.integers(0, classes, rows).astype(np.int32)]


def _vocabulary_logits_inputs(rng, dtype, small):
    rows, classes = (2, 9000) if small else (8192, 50257)  # rows past what one program holds (8192 elements)
    return [_normal(rng, (rows, classes), dtype, 2.0), rng.integers(0, classes, rows).astype(np.int32)]


ADAMW_SHAPES = [(768,), (768, 2304), (2304,), (768, 768), (768,), (768, 3072), (3072,), (3072, 768), (768,)]


def _adamw_inputs(rng, dtype, small):
    shapes = [tuple(max(1, n // 48) for n in s) for s in ADAMW_SHAPES] if small else ADAMW_SHAPES * 4
    state = [[_normal(rng, s, dtype, scale) for s in shapes] for scale in (1.0, 0.01, 0.01)]
    nu = [np.abs(_normal(rng, s, dtype, 1e-4)) for s in shapes]
    return [state[0], state[1], state[2], nu, np.int32(3)]


def _dropout_inputs(rng, dtype, small):
    rows, width = _tokens(small)
    return [_normal(rng, (rows, width), dtype), _normal(rng, (rows, width), dtype), np.array([0, 42], np.uint32)]


CASES = {case.key: case for case in [
    Case("ln", "LayerNorm (f32 statistics) + exact GELU + residual", layer_norm_gelu, torch_layer_norm_gelu,
         _ln_inputs, grad_argnums=(0, 1, 2)),
    Case("rms", "RMSNorm (f32 statistics) * weight", rms_norm, torch_rms_norm, _rms_inputs, grad_argnums=(0, 1)),
    Case("swiglu", "SwiGLU gate: silu(gate) * up", swiglu, torch_swiglu, _swiglu_inputs, grad_argnums=(0, 1)),
    Case("softmax", "causal softmax of scaled scores (f32)", causal_softmax, torch_causal_softmax, _scores_inputs,
         grad_argnums=(0,)),
    Case("rotary", "rotary embedding (rotate half)", rotary, torch_rotary, _rotary_inputs, grad_argnums=(0,)),
    Case("xent", "cross-entropy with logsumexp (f32)", cross_entropy, torch_cross_entropy, _logits_inputs,
         grad_argnums=(0,)),
    Case("xent_vocab", "cross-entropy over GPT-2's 50,257-word vocabulary (f32)", cross_entropy, torch_cross_entropy,
         _vocabulary_logits_inputs, dtypes=(F32, BF16), grad_argnums=(0,)),
    Case("adamw", "AdamW step over 36 tensors (GPT-2 blocks' shapes)", adamw, torch_adamw, _adamw_inputs,
         dtypes=(F32,)),
    Case("dropout", "dropout with a key + residual", dropout, torch_dropout, _dropout_inputs,
         own_random_numbers=True),
]}


def cotangent_like(case, result, rng):
    """The fixed cotangent a case's backward pass multiplies its result by (float32, the result's shape)."""
    return _normal(rng, np.shape(result), np.float32)


def api_of(module_name):
    """The namespace a case's jax-style function is written against: "numax" or "jax"."""
    import importlib
    import types

    root = importlib.import_module(module_name)
    return types.SimpleNamespace(np=importlib.import_module(f"{module_name}.numpy"),
                                 nn=importlib.import_module(f"{module_name}.nn"),
                                 lax=importlib.import_module(f"{module_name}.lax"),
                                 random=importlib.import_module(f"{module_name}.random"), grad=root.grad)


# --- running the corpus on a GPU -------------------------------------------------------------------------------
TOLERANCE = {F32: 2e-4, BF16: 3e-2, F16: 1e-2}  # of the largest expected magnitude, per input dtype


def as_float32(value):
    """A result of any side on the host, in float32 (bfloat16 included)."""
    if hasattr(value, "detach"):
        return value.detach().float().cpu().numpy()
    return np.asarray(value).astype(np.float32)


def torch_side(case, mode, inputs):
    """(compiled, eager, torch inputs) for a case's torch twin, or None where it has none in this mode."""
    import torch

    def to_torch(value):
        if isinstance(value, list):
            return [to_torch(v) for v in value]
        value = np.asarray(value)
        if value.dtype == BF16:
            return torch.from_numpy(value.astype(np.float32)).cuda().to(torch.bfloat16)
        return torch.from_numpy(value).cuda() if value.ndim else torch.tensor(value.item())

    forward = case.torch_style(torch)
    if mode == "fwd":
        return torch.compile(forward), forward, [to_torch(v) for v in inputs]

    def loss(*args):
        *args, cotangent = args
        return (forward(*args).float() * cotangent).sum()

    def gradient(prepared):
        """The gradient as torch users take it: the loss (compiled, its backward through AOTAutograd, or eager),
        then autograd. (torch.compile of torch.func.grad ran eagerly: its first call took no time.)"""
        def grads(*args):
            args = [a.detach().requires_grad_() if i in case.grad_argnums else a for i, a in enumerate(args)]
            return torch.autograd.grad(prepared(*args), [args[i] for i in case.grad_argnums])

        return grads

    return gradient(torch.compile(loss)), gradient(loss), [to_torch(v) for v in inputs]


def run_one(case, dtype, mode, quick, rng, numax_order=("xla", "triton")):
    import jax
    from dispatch import interleaved
    from fusion import back_to_back, leaves

    import numax

    apis = {"numax": api_of("numax"), "jax": api_of("jax")}
    build = (lambda api: case.forward(api)) if mode == "fwd" else (lambda api: case.gradient(api))
    inputs = case.make_inputs(rng, dtype, False)
    if mode == "grad":
        inputs = inputs + [cotangent_like(case, jax.jit(case.forward(apis["jax"]))(*inputs), rng)]
    found = {}
    # Both numax sides read the same argument arrays: with arrays of their own, whichever side was compiled first
    # ran about 8 us slower back to back (40 us per call) on the H100, fused or not (bench/probes/
    # fusion_side_gap_probe.py, bench/RESULTS.md).
    args = numax.tree_util.tree_map(numax.device_put, inputs)
    for fusion in numax_order:
        fn = numax.jit(build(apis["numax"]), fusion=fusion)
        side = f"numax ({'fusion' if fusion == 'triton' else 'XLA'})"
        found[side] = (lambda fn=fn: fn(*args)), numax.block_until_ready
    jf, jargs = jax.jit(build(apis["jax"])), jax.tree_util.tree_map(jax.device_put, inputs)
    found["jax.jit"] = (lambda: jf(*jargs)), jax.block_until_ready
    try:
        import torch

        compiled, eager, targs = torch_side(case, mode, inputs)
        synchronize = lambda result: torch.cuda.synchronize()  # noqa: E731
        found["torch.compile"] = (lambda: compiled(*targs)), synchronize
        found["torch eager"] = (lambda: eager(*targs)), synchronize
    except ImportError:
        torch = None
    expected, first_call, checks = None, {}, {}
    for name, (call, wait) in found.items():
        start = time.perf_counter()
        try:
            out = call()
            wait(out)
        except Exception as error:  # a side that cannot run this case is named, not fatal
            checks[name] = f"failed: {type(error).__name__}: {str(error).splitlines()[0][:120]}"
            continue
        first_call[name] = time.perf_counter() - start
        got = [as_float32(v) for v in leaves(out)]
        if name == "jax.jit":
            expected = got
        found[name] = (call, wait, got)
    floor_bytes = sum(np.asarray(v).nbytes for v in leaves(inputs)) + sum(v.nbytes for v in expected)
    for name in list(found):
        if name in checks:
            del found[name]
            continue
        call, wait, got = found[name]
        if case.own_random_numbers and name.startswith("torch"):
            checks[name] = "not compared (its own random numbers)"
        else:
            errors = [float(np.max(np.abs(g - e))) / max(1e-30, float(np.max(np.abs(e)))) if e.size else 0.0
                      for g, e in zip(got, expected)]
            ok = max(errors) <= TOLERANCE[np.dtype(dtype)]
            checks[name] = f"{'ok' if ok else 'MISMATCH'} (relative error {max(errors):.1e})"
        found[name] = (call, wait)
    if torch is not None:
        copy_source = torch.empty(floor_bytes // 2, dtype=torch.uint8, device="cuda")
        found["copy (floor)"] = copy_source.clone, (lambda result: torch.cuda.synchronize())
    repeats, inner, streamed_calls = (5, 5, 20) if quick else (15, 20, 100)
    waited = interleaved([(name, lambda c=call, w=wait: w(c())) for name, (call, wait) in found.items()],
                         repeats, inner)
    streamed = interleaved([(name, lambda c=call, w=wait: back_to_back(c, w, streamed_calls))
                            for name, (call, wait) in found.items()], repeats, 1)
    streamed = {name: value / streamed_calls for name, value in streamed.items()}
    return {"case": f"{case.key}/{dtype.name}/{mode}", "title": f"{case.title}, {dtype.name}, {mode}",
            "times_us": waited, "floor_us": waited.pop("copy (floor)", None),
            "back_to_back_us": streamed, "floor_back_to_back_us": streamed.pop("copy (floor)", None),
            "compile_s": first_call, "checks": checks, "floor_bytes": floor_bytes}


def main():
    from fusion import report

    import numax

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--dtypes", default="float32,bfloat16,float16")
    parser.add_argument("--modes", default="fwd,grad")
    parser.add_argument("--numax-order", default="xla,triton", help="the order the numax sides compile in")
    parser.add_argument("--json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"# numax fusion corpus on {numax.devices()[0].device_kind}")
    results = []
    for key in args.cases.split(","):
        case = CASES[key]
        for dtype in case.dtypes:
            for mode in args.modes.split(","):
                if dtype.name not in args.dtypes.split(",") or (mode == "grad" and not case.grad_argnums):
                    continue
                results.append(run_one(case, dtype, mode, args.quick, rng, tuple(args.numax_order.split(","))))
                report(results[-1])
                print("checks: " + "; ".join(f"{k} {v}" for k, v in results[-1]["checks"].items()), flush=True)
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"device": numax.devices()[0].device_kind, "results": results}, file, indent=1)


if __name__ == "__main__":
    main()
