"""The memory a compiled GPT-2-style training step asks for (bench/gpt2_step.py's model), under plain jit (XLA) and
with fusion="triton" (every region a kernel: the autotuner off), from the compiled program's `memory_analysis()`.
On a CPU the kernels run through Triton's interpreter and XLA schedules its own way, so the numbers compare the two
forms of one step, not the GPU's peak memory (bench/gpt2_step.py measures that on a GPU).

    python bench/gpt2_memory.py [--size small|124m|tiny]
"""

import argparse
import time

import gpt2_step
import numpy as np

import numax
import numax.numpy as np_
from numax import nn
from numax import tree_util as tree


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="small", choices=sorted(gpt2_step.SIZES))
    size = gpt2_step.SIZES[parser.parse_args().size]
    numax.config.update("numax_fusion_autotune", "never")
    step = gpt2_step.jax_style_step(np_, nn, tree, size["heads"])
    train = lambda params, state, inputs, targets: step(params, state, inputs, targets,  # noqa: E731
                                                        numax.value_and_grad)
    abstract = lambda a: numax.ShapeDtypeStruct(a.shape, a.dtype)  # noqa: E731
    params = tree.tree_map(abstract, gpt2_step.initial_parameters(size))
    state = (params, params, numax.ShapeDtypeStruct((), np.int32))
    inputs, targets = (abstract(a) for a in gpt2_step.batch_of_tokens(size))
    print("| form | kernels | temp | arguments | outputs | lower + compile |")
    print("| --- | --- | --- | --- | --- | --- |")
    for fusion in ("xla", "triton"):
        start = time.perf_counter()
        lowered = numax.jit(train, fusion=fusion, donate_argnums=(0, 1)).lower(params, state, inputs, targets)
        memory = lowered.compile().memory_analysis()
        gib = lambda n: f"{n / 2 ** 30:.3f} GiB"  # noqa: E731
        kernels = len(lowered.triton_kernels()) if fusion == "triton" else 0
        print(f"| {fusion} | {kernels} | {gib(memory.temp_size_in_bytes)} | {gib(memory.argument_size_in_bytes)} "
              f"| {gib(memory.output_size_in_bytes)} | {time.perf_counter() - start:.1f} s |")


if __name__ == "__main__":
    main()
