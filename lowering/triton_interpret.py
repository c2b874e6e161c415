"""Running a user's Triton kernel through Triton's interpreter on numpy arrays (the CPU path of numax.triton).

`run_interpreted` is the engine behind `triton_call` on a machine without a GPU: the lowering calls it from a
host callback with plain numpy arrays and gets the outputs back as numpy arrays. It owns the torch-free adapter
the interpreter needs (`HostTensor`), the resolution of `triton.autotune` / `triton.heuristics` wrappers without
timing, the checks of the call against the kernel's signature, and the one lock that serializes interpreted runs.

Triton is imported inside functions only: numax imports without it. Nothing here knows about numax's IR or XLA.
Works with triton 3.6 and 3.9; the interpreter API used is `InterpretedFunction(fn)`, its `run(*args, grid=,
warmup=False, **constexprs)` and `__call__` (for @triton.jit helpers a kernel calls), `InterpreterError`, the
module-global `interpreter_builder` (its `options` and `grid_idx`), and `_LangPatchScope.set_attr(obj, name, value)`,
through which the interpreter makes every change it makes to triton.language.
"""

import contextlib
import dataclasses
import functools

import numpy as np

from .triton_signature import TRITON_LANGUAGE, check_signature, unwrap_kernel

# The interpreted form of each @triton.jit function seen (kernels and the helpers they call), keyed by its Python
# function; Triton itself caches the rewritten source per Python function for the life of the process.
_INTERPRETED_FUNCTIONS = {}

_ABSENT = object()  # an attribute an object did not hold itself before a run


class InterpretedKernelError(RuntimeError):
    """A Triton kernel failed while Triton's interpreter ran it; the original exception is its __cause__."""


class _HostStorage:
    """The untyped storage behind a `HostTensor`: a whole numpy buffer, already on the host."""

    def __init__(self, buffer):
        self.buffer = buffer

    def data_ptr(self):
        return self.buffer.ctypes.data

    def cpu(self):
        # The interpreter copies each storage to the host before a run and back after it: host memory needs
        # neither copy, and sharing the buffer is what makes two arguments over one buffer alias.
        return self

    def copy_(self, source):
        if source.buffer is not self.buffer:
            np.copyto(self.buffer, source.buffer)
        return self


class HostTensor:
    """A numpy array seen through the part of torch.Tensor's API that Triton's interpreter calls.

    The interpreter passes every pointer argument through torch's storage API (`untyped_storage().cpu()`,
    `new_empty(0)` then `set_(storage, offset, size, stride)`, `copy_` back) and reads `data_ptr()` and `dtype`
    (a numpy dtype here: Triton names pointer types from `str(dtype)`, which numpy and ml_dtypes spell as torch
    does). Sizes and strides are in elements, as in torch; `shape`, `numel` and `stride(dim)` also serve
    `triton.heuristics` functions written for torch tensors.
    """

    def __init__(self, array, storage=None):
        self.array = array
        self.storage = _HostStorage(array) if storage is None else storage

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def shape(self):
        return self.array.shape

    def data_ptr(self):
        return self.array.ctypes.data

    def untyped_storage(self):
        return self.storage

    def storage_offset(self):
        return (self.data_ptr() - self.storage.data_ptr()) // self.array.itemsize

    def size(self, dim=None):
        return self.array.shape if dim is None else self.array.shape[dim]

    def stride(self, dim=None):
        strides = tuple(step // self.array.itemsize for step in self.array.strides)
        return strides if dim is None else strides[dim]

    def numel(self):
        return self.array.size

    def new_empty(self, size, device=None):
        return HostTensor(np.empty(size, self.array.dtype))

    def set_(self, storage, offset, size, stride):
        itemsize = self.array.itemsize
        self.array = np.ndarray(tuple(size), self.array.dtype, buffer=storage.buffer, offset=offset * itemsize,
                                strides=tuple(step * itemsize for step in stride))
        self.storage = storage
        return self


def run_interpreted(kernel, call_args, out_avals, *, grid, metaparams, input_output_aliases=None,
                    zeroed_outputs=(), num_warps=None, num_stages=None, num_ctas=1, debug=False):
    """Runs `kernel` through Triton's interpreter; returns the outputs as a list of numpy arrays.

    kernel: a @triton.jit function, or a `triton.autotune` / `triton.heuristics` wrapper of one (nested in any
        order). The interpreter cannot time configs: autotuning takes the first config, whose kwargs join the
        metaparameters (setting one twice is an error, as in Triton). Heuristics are evaluated, outermost first,
        on the kernel's arguments (arrays as `HostTensor`) and the metaparameters resolved so far, as Triton does.
    call_args: the kernel's leading arguments: numpy arrays (passed as pointers to C-contiguous copies where they
        are not C-contiguous) and scalars (Python or numpy bool/int/float: passed as Python scalars, which Triton
        types by value as i1, i32, u32, i64 or u64, and fp32).
    out_avals: [(shape, dtype), ...]; the kernel gets one pointer per output after `call_args`.
    grid: a tuple of 1 to 3 ints.
    metaparams: the kernel's constexpr (or otherwise unbound) keyword arguments.
    input_output_aliases: {index among the array arguments: output index}: that output is that input's buffer:
        it starts with the input's values, and the kernel gets its pointer in both places.
    zeroed_outputs: output indices zeroed before the kernel runs (after an aliased input's values are copied
        in). Every other output starts as zeros too, so this only matters for aliased outputs here.
    num_warps, num_stages, num_ctas: accepted for parity with the GPU path; the interpreter runs each program
        of the grid as whole-block numpy operations, so they do not change what it computes.
    debug: turns on `tl.device_assert` (and Triton's other debug-only checks), as `debug=True` does on a GPU.

    bfloat16 arrays are passed and loaded bit-exact, and `.to(tl.float32)` widens them exactly; but Triton's
    interpreter computes bfloat16 arithmetic wrongly (a kernel should compute in float32), and its float32 ->
    bfloat16 conversion truncates (rounds toward zero, even with fp_downcast_rounding="rtne"), so a stored
    bfloat16 result can be one unit in the last place below a GPU's round-to-nearest-even.
    Runs are serialized (Triton's interpreter is process-global) and may come from any thread.
    """
    jit_function, wrappers = unwrap_kernel(kernel)
    kernel_name = jit_function.fn.__name__
    grid = _checked_grid(grid, kernel_name)
    outputs = _allocate_outputs(call_args, out_avals, input_output_aliases or {}, zeroed_outputs, kernel_name)
    positional = _kernel_arguments(call_args, outputs, input_output_aliases or {}, kernel_name)
    constexprs = _resolve_wrappers(wrappers, jit_function, positional, dict(metaparams), kernel_name)
    check_signature(jit_function, len(call_args), len(outputs), constexprs, kernel_name)
    from triton.runtime.errors import InterpreterError

    with (TRITON_LANGUAGE.interpreting(), _language_patches_undone(), _interpreter_debug(debug),
          _jit_helpers_interpreted()):
        try:
            _interpreted(jit_function).run(*positional, grid=grid, warmup=False, **constexprs)
        except Exception as error:
            # Triton wraps what fails inside the grid loop in InterpreterError (once more per @triton.jit helper);
            # what fails before it (rewriting the source, converting arguments) comes as it is.
            where = f" at program id {_failing_program_id()}" if isinstance(error, InterpreterError) else ""
            original = error
            while isinstance(original, InterpreterError) and original.__cause__ is not None:
                original = original.__cause__
            raise InterpretedKernelError(f"Triton kernel '{kernel_name}' failed in Triton's interpreter{where}: "
                                         f"{type(original).__name__}: {original}") from original
    return outputs


def _checked_grid(grid, kernel_name):
    if (not isinstance(grid, tuple) or not 1 <= len(grid) <= 3
            or not all(isinstance(size, (int, np.integer)) and size >= 0 for size in grid)):
        raise ValueError(f"grid for Triton kernel '{kernel_name}' must be a tuple of 1 to 3 non-negative ints, "
                         f"got {grid!r}")
    return tuple(int(size) for size in grid)


def _array_arguments(call_args):
    return [arg for arg in call_args if isinstance(arg, np.ndarray)]


def _allocate_outputs(call_args, out_avals, input_output_aliases, zeroed_outputs, kernel_name):
    """Fresh zeroed output buffers; an aliased output starts as a copy of its input's values."""
    outputs = [np.zeros(shape, np.dtype(dtype)) for shape, dtype in out_avals]
    arrays = _array_arguments(call_args)
    for input_index, output_index in input_output_aliases.items():
        if not 0 <= input_index < len(arrays) or not 0 <= output_index < len(outputs):
            raise ValueError(f"input_output_aliases for Triton kernel '{kernel_name}' maps input {input_index} to "
                             f"output {output_index}, but the call has {len(arrays)} array arguments and "
                             f"{len(outputs)} outputs")
        source, target = arrays[input_index], outputs[output_index]
        if source.shape != target.shape or source.dtype != target.dtype:
            raise ValueError(f"input_output_aliases for Triton kernel '{kernel_name}': input {input_index} "
                             f"({source.dtype}{list(source.shape)}) and output {output_index} "
                             f"({target.dtype}{list(target.shape)}) must have the same shape and dtype")
        np.copyto(target, source)
    for output_index in zeroed_outputs:
        outputs[output_index][...] = 0
    return outputs


def _kernel_arguments(call_args, outputs, input_output_aliases, kernel_name):
    """The kernel's positional arguments: pointers (`HostTensor`) and Python scalars, then the output pointers."""
    output_tensors = [HostTensor(output) for output in outputs]
    arguments = []
    array_index = 0
    for position, arg in enumerate(call_args):
        if isinstance(arg, np.ndarray):
            if array_index in input_output_aliases:
                arguments.append(output_tensors[input_output_aliases[array_index]])
            else:
                arguments.append(HostTensor(np.ascontiguousarray(arg)))
            array_index += 1
        elif isinstance(arg, (bool, int, float, np.bool_, np.integer, np.floating)):
            # The interpreter types only Python scalars (a np.float32 would reach the kernel untyped).
            scalar = arg.item() if isinstance(arg, np.generic) else arg
            if isinstance(scalar, bool) and not _interpreter_takes_bools():
                scalar = int(scalar)  # Triton < 3.7 types a bool i1 but stores it as int32, and fails
            arguments.append(scalar)
        else:
            raise TypeError(f"argument {position} of Triton kernel '{kernel_name}' must be a numpy array or a "
                            f"bool/int/float scalar, got {type(arg).__name__}")
    return arguments + output_tensors


@functools.cache
def _interpreter_takes_bools():
    import triton

    return tuple(int(part) for part in triton.__version__.split(".")[:2]) >= (3, 7)


def _resolve_wrappers(wrappers, jit_function, positional, metaparams, kernel_name):
    """The metaparameters after the autotune configs and heuristics around the kernel, applied outermost first."""
    from triton.runtime.autotuner import Autotuner

    for wrapper in wrappers:
        if isinstance(wrapper, Autotuner):
            config = wrapper.configs[0]
            if config.pre_hook is not None:
                raise NotImplementedError(f"Triton kernel '{kernel_name}': autotune configs with a pre_hook "
                                          "cannot run in the interpreter (the hook expects torch tensors)")
            repeated = sorted(set(config.kwargs) & set(metaparams))
            if repeated:
                raise TypeError(f"Triton kernel '{kernel_name}': metaparameters {repeated} are set both by the "
                                "call and by its autotune config")
            metaparams.update(config.kwargs)
        else:
            named_arguments = dict(zip(jit_function.arg_names, positional))
            for name, heuristic in wrapper.values.items():
                metaparams[name] = heuristic({**named_arguments, **metaparams})
    return metaparams


def _interpreted(jit_function):
    """The interpreted form of a @triton.jit function, made once (callers hold an interpreting turn of
    TRITON_LANGUAGE)."""
    from triton.runtime.interpreter import InterpretedFunction

    if isinstance(jit_function, InterpretedFunction):
        return jit_function
    # Keyed by the Python function: hashing a JITFunction hashes its source and dependencies, which fails while
    # the interpreter has triton.language patched.
    if jit_function.fn not in _INTERPRETED_FUNCTIONS:
        _INTERPRETED_FUNCTIONS[jit_function.fn] = InterpretedFunction(jit_function.fn)
    return _INTERPRETED_FUNCTIONS[jit_function.fn]


@contextlib.contextmanager
def _jit_helpers_interpreted():
    """Makes @triton.jit helpers that an interpreted kernel calls run interpreted too.

    Decorated without TRITON_INTERPRET=1, a helper is a JITFunction, whose `__call__` refuses to run outside a
    compiled kernel; the interpreter calls it as plain Python. For the run (an interpreting turn of
    TRITON_LANGUAGE) the call goes to the helper's interpreted form instead, wherever the kernel found the helper
    (globals, a module attribute, a closure).
    """
    from triton.runtime.jit import JITFunction

    original_call = JITFunction.__call__
    JITFunction.__call__ = lambda helper, *args, **kwargs: _interpreted(helper)(*args, **kwargs)
    try:
        yield
    finally:
        JITFunction.__call__ = original_call


@contextlib.contextmanager
def _language_patches_undone():
    """Puts back, when the run ends (returning or raising), everything Triton's interpreter patched during it.

    The interpreter swaps builtins of triton.language, triton.language.core and triton.language.math, and methods of
    its tensor, dtype and condition classes, for numpy stand-ins, recording each change in a `_LangPatchScope`. It
    undoes a kernel's scope when the kernel returns, but drops the scope of each @triton.jit helper call: a helper
    whose module sees triton.language.core (Triton's own tl.sum, tl.max, ...) leaves tl.core patched, and the next
    compile for a GPU in the process would build its kernel from the stand-ins. So every change is recorded here
    too, and each patched attribute gets back what the object itself held before the run (or none, if it held
    none: it may have been inherited).
    """
    from triton.runtime.interpreter import _LangPatchScope

    originals = {}  # (id(obj), name) -> (obj, name, what vars(obj) held before the run's first change)
    set_attr = _LangPatchScope.set_attr

    def recording_set_attr(scope, obj, name, value):
        originals.setdefault((id(obj), name), (obj, name, vars(obj).get(name, _ABSENT)))
        set_attr(scope, obj, name, value)

    _LangPatchScope.set_attr = recording_set_attr
    try:
        yield
    finally:
        _LangPatchScope.set_attr = set_attr
        for obj, name, original in originals.values():
            if original is not _ABSENT:
                setattr(obj, name, original)
            elif name in vars(obj):
                delattr(obj, name)


@contextlib.contextmanager
def _interpreter_debug(debug):
    """Sets the interpreter's `debug` option (device asserts) for one run; its options are process-global."""
    from triton.runtime.interpreter import interpreter_builder

    original_options = interpreter_builder.options
    interpreter_builder.options = dataclasses.replace(original_options, debug=bool(debug))
    try:
        yield
    finally:
        interpreter_builder.options = original_options


def _failing_program_id():
    from triton.runtime.interpreter import interpreter_builder

    return getattr(interpreter_builder, "grid_idx", None)
