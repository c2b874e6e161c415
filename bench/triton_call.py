"""Triton kernels launched by numax.triton.triton_call against the same kernels launched by jax_triton (when
installed) or by torch (Triton's own launcher), on one NVIDIA GPU: a vector add of 64M floats (kernel time) and
of 1024 floats (launch overhead per call), and a row softmax of 4096 x 1024. Every side's result is checked
against numpy first. Times are medians of interleaved repeats, each call followed by a wait for the device.

    python3 bench/triton_call.py [--quick]
"""

import argparse
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import numpy as np  # noqa: E402
import triton  # noqa: E402
from dispatch import interleaved  # noqa: E402
from triton_kernels import add_kernel, softmax_kernel  # noqa: E402

import numax  # noqa: E402
import numax.triton as nt  # noqa: E402

BLOCK = 1024


def numax_add(x, y):
    n = x.shape[0]
    return nt.triton_call(x, y, n, kernel=add_kernel, out_shape=numax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(nt.cdiv(n, BLOCK),), BLOCK=BLOCK)


def numax_softmax(x):
    rows, cols = x.shape
    return nt.triton_call(x, cols, cols, kernel=softmax_kernel, out_shape=numax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=rows, BLOCK=triton.next_power_of_2(cols))


def sides(x_host, y_host, matrix_host):
    """name -> (add, softmax), each a no-argument function launching once and waiting for the result."""
    found = {}
    x, y, matrix = (numax.device_put(v) for v in (x_host, y_host, matrix_host))
    jit_add, jit_softmax = numax.jit(numax_add), numax.jit(numax_softmax)
    found["numax (jit)"] = (lambda: jit_add(x, y).block_until_ready(),
                            lambda: jit_softmax(matrix).block_until_ready())
    found["numax (eager)"] = (lambda: numax_add(x, y).block_until_ready(),
                              lambda: numax_softmax(matrix).block_until_ready())
    try:
        import jax
        import jax_triton as jt

        jx, jy, jmatrix = (jax.device_put(v) for v in (x_host, y_host, matrix_host))
        n, (rows, cols) = x_host.shape[0], matrix_host.shape
        j_add = jax.jit(lambda a, b: jt.triton_call(a, b, n, kernel=add_kernel, grid=(triton.cdiv(n, BLOCK),),
                                                    out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype), BLOCK=BLOCK))
        j_softmax = jax.jit(lambda a: jt.triton_call(a, cols, cols, kernel=softmax_kernel, grid=(rows,),
                                                     out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype),
                                                     BLOCK=triton.next_power_of_2(cols)))
        found["jax_triton (jit)"] = (lambda: j_add(jx, jy).block_until_ready(),
                                     lambda: j_softmax(jmatrix).block_until_ready())
    except ImportError:
        import torch

        tx, ty, tmatrix = (torch.from_numpy(v).cuda() for v in (x_host, y_host, matrix_host))
        n, (rows, cols) = x_host.shape[0], matrix_host.shape

        def torch_add():
            out = torch.empty_like(tx)
            add_kernel[(triton.cdiv(n, BLOCK),)](tx, ty, n, out, BLOCK=BLOCK)
            torch.cuda.synchronize()
            return out

        def torch_softmax():
            out = torch.empty_like(tmatrix)
            softmax_kernel[(rows,)](tmatrix, cols, cols, out, BLOCK=triton.next_power_of_2(cols))
            torch.cuda.synchronize()
            return out

        found["torch (Triton's launcher)"] = (torch_add, torch_softmax)
    return found


def check(found, x, y, matrix):
    expected_softmax = np.exp(matrix - matrix.max(1, keepdims=True))
    expected_softmax /= expected_softmax.sum(1, keepdims=True)
    for name, (add, softmax) in found.items():
        np.testing.assert_allclose(_host(add()), x + y, rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(_host(softmax()), expected_softmax, rtol=1e-4, atol=1e-7, err_msg=name)


def _host(value):
    return value.cpu().numpy() if hasattr(value, "cpu") and not isinstance(value, numax.Array) else np.asarray(value)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats, inner = (5, 20) if args.quick else (21, 100)
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(4096, 1024)).astype(np.float32)
    print(f"# numax {numax.__version__}, triton {triton.__version__}, on {numax.devices()[0].device_kind}")
    rows = []
    for label, n in (("vector add, 1024 floats (launch overhead)", 1024), ("vector add, 64M floats", 64 << 20)):
        x, y = rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32)
        found = sides(x, y, matrix)
        check(found, x, y, matrix)
        rows.append((label, interleaved([(name, pair[0]) for name, pair in found.items()], repeats, inner)))
    rows.append(("row softmax, 4096 x 1024", interleaved([(name, pair[1]) for name, pair in found.items()],
                                                           repeats, inner)))
    names = list(found)
    reference = names[-1]
    print("| kernel | " + " | ".join(names) + f" | numax (jit) / {reference} |")
    print("| --- |" + " --- |" * (len(names) + 1))
    for label, times in rows:
        cells = " | ".join(f"{times[name]:.1f} us" for name in names)
        print(f"| {label} | {cells} | {times['numax (jit)'] / times[reference]:.2f}x |")


if __name__ == "__main__":
    main()
