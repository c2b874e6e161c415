"""`triton_call`: a user's Triton kernel as a primitive of numax programs.

The primitive's operands are the call's array arguments; its params say everything else: the kernel, the
output avals, the launch grid (a tuple of three ints, or a function of the metaparameters), each user
argument in order (`call_spec`: an operand or a Python scalar), the metaparameters, aliasing and zeroing
of outputs, and the launch options. Abstract evaluation returns the declared outputs. It lowers on the
GPU to a kernel launch XLA calls (lowering/triton_gpu.py compiles the kernel with Triton), and on the CPU
to a host callback that runs the kernel through Triton's interpreter (lowering/triton_interpret.py), so
kernels run, and are tested, without a GPU. Under vmap the kernel runs once per example in a loop inside
the program; it has no derivative of its own: pair a forward and a backward kernel with `custom_vjp`.
"""

from ..core import pytree as tree
from ..core.primitives import Primitive, batching_rules, jvp_rules
from ..lowering.lower import register_lowering
from ..lowering.triton_signature import resolve_grid, resolve_zeroed
from .batching import move_axis
from .callbacks import HostCallback, callback_lowering

triton_call_p = Primitive("triton_call", multiple_results=True)


def _abstract_eval(*avals, out_avals, input_output_aliases, name, **_):
    for operand, output in input_output_aliases:
        given, declared = avals[operand], out_avals[output]
        if (given.shape, given.dtype) != (declared.shape, declared.dtype):
            raise ValueError(f"triton_call {name}: input {operand} ({given.str_short()}) aliases output {output}, "
                             f"declared {declared.str_short()}: an aliased output must match its input")
    return list(out_avals)


triton_call_p.def_abstract_eval(_abstract_eval)


def _jvp(primals, tangents, *, name, **_):
    raise NotImplementedError(f"triton_call {name}: a Triton kernel has no derivative of its own; pair a forward "
                              "and a backward kernel with numax.custom_vjp to differentiate through it")


jvp_rules[triton_call_p] = _jvp


def _batching(values, dims, **params):
    """vmap: one launch per example, in a loop inside the program (`lax.map` over the batch)."""
    from .loops import map as loop_map

    batched = [move_axis(v, d, 0) for v, d in zip(values, dims) if d is not None]
    positions = [i for i, d in enumerate(dims) if d is not None]

    def one_example(examples):
        operands = list(values)
        for i, example in zip(positions, examples):
            operands[i] = example
        return tuple(triton_call_p.bind(*operands, **params))

    outs = loop_map(one_example, batched)
    return list(outs), [0] * len(params["out_avals"])


batching_rules[triton_call_p] = _batching


# --- lowering ------------------------------------------------------------------------------------------------
def _interpreted(kernel, call_spec, out_avals, grid, metaparams, input_output_aliases, zeroed_outputs, num_warps,
                 num_stages, num_ctas, debug, name):
    """The host function running the kernel through Triton's interpreter on the operands' numpy arrays."""
    from ..lowering.triton_interpret import run_interpreted

    metaparams = dict(metaparams)
    launch = dict(grid=resolve_grid(grid, metaparams), metaparams=metaparams,
                  input_output_aliases=dict(input_output_aliases),
                  zeroed_outputs=resolve_zeroed(zeroed_outputs, metaparams), num_warps=num_warps,
                  num_stages=num_stages, num_ctas=num_ctas, debug=debug)
    shapes = [(a.shape, a.dtype) for a in out_avals]

    def run(*arrays):
        call_args = [arrays[item] if kind == "array" else item for kind, item in call_spec]
        return tuple(run_interpreted(kernel, call_args, shapes, **launch))

    return run


_host_call = callback_lowering("xla_ffi_python_cpu_callback", False)


def _lower_cpu(ctx, *operands, out_avals, name, **params):
    run = _interpreted(out_avals=out_avals, name=name, **params)
    callback = HostCallback(run, f"triton_call {name}", out_avals, tree.tree_structure(tuple(out_avals)))
    return _host_call(ctx, *operands, callback=callback)


def _lower_gpu(ctx, *operands, **params):
    from ..lowering.triton_gpu import lower_triton_call_gpu

    return lower_triton_call_gpu(ctx, *operands, **params)


register_lowering(triton_call_p, _lower_cpu)
register_lowering(triton_call_p, _lower_gpu, platform="gpu")
