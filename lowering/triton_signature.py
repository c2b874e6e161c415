"""What numax reads off a user's Triton kernel and call before running it anywhere: the @triton.jit function under
its triton.autotune / triton.heuristics wrappers, whether a call's arguments fit the kernel's signature (checked
when a call is traced, so that a mistake names the kernel and its parameters instead of failing in a launch), and
the launch grid and zeroed outputs a call resolves to (the same for the GPU and the interpreter)."""

import collections
import contextlib
import inspect
import threading

import numpy as np

_INTERPRETING = object()


class LanguageTurns:
    """Turns at triton.language. Triton's interpreter keeps its state in module globals and patches
    triton.language while it runs, so an interpreted run (from XLA's callback threads) goes alone; compiles for a
    GPU go together (Triton's compiler releases the GIL in its passes and runs ptxas in a process of its own),
    all under one setting of Triton's process-wide knobs: `setting` (a context manager) is entered by the first
    compile of a turn and left by its last one. Who waits for another kind of turn holds newcomers back, so
    neither kind starves."""

    def __init__(self):
        self._changed = threading.Condition()
        self._kind = None  # the turn under way: a key of `compiling`, or _INTERPRETING
        self._users = 0
        self._left = None  # how the turn's setting is left (an ExitStack)
        self._waiting = collections.Counter()

    def interpreting(self):
        return self._turn(_INTERPRETING, contextlib.nullcontext)

    def compiling(self, kind, setting):
        """A turn among compiles of `kind` (hashable: compiles of one kind share `setting()`)."""
        return self._turn(kind, setting)

    @contextlib.contextmanager
    def _turn(self, kind, setting):
        with self._changed:
            self._waiting[kind] += 1
            self._changed.wait_for(lambda: self._users == 0 or (
                kind is not _INTERPRETING and kind == self._kind and self._waiting.total() == self._waiting[kind]))
            self._waiting[kind] -= 1
            if self._users == 0:
                left = contextlib.ExitStack()
                left.enter_context(setting())
                self._kind, self._left = kind, left
            self._users += 1
        try:
            yield
        finally:
            with self._changed:
                self._users -= 1
                if self._users == 0:
                    left, self._left, self._kind = self._left, None, None
                    try:
                        left.close()
                    finally:
                        self._changed.notify_all()


TRITON_LANGUAGE = LanguageTurns()


def unwrap_kernel(kernel):
    """The @triton.jit function under `kernel`, and the autotune/heuristics wrappers around it, outermost first."""
    try:
        from triton.runtime.autotuner import Autotuner, Heuristics
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction
    except ImportError as error:
        raise ImportError("running a Triton kernel without a GPU needs the `triton` package (pip install "
                          "triton), whose interpreter runs it on the CPU") from error
    wrappers = []
    node = kernel
    while isinstance(node, (Autotuner, Heuristics)):
        wrappers.append(node)
        node = node.fn
    # A kernel decorated while TRITON_INTERPRET=1 was set is already an InterpretedFunction: run it the same way.
    if not isinstance(node, (JITFunction, InterpretedFunction)):
        raise TypeError(f"kernel must be a @triton.jit function (or a triton.autotune / triton.heuristics wrapper "
                        f"of one), got {kernel!r} of type {type(kernel).__name__}")
    return node, wrappers


def _is_constexpr(parameter):
    import triton.language as tl

    annotation = parameter.annotation
    if isinstance(annotation, str):
        return annotation.strip().split(".")[-1] == "constexpr"
    return annotation is tl.constexpr


def check_positional_arguments(jit_function, num_call_args, num_outputs, kernel_name):
    """Raises TypeError naming the kernel when its leading parameters cannot take the call's arguments and output
    pointers; returns (its parameters, its description, the count sentence) for further checks."""
    parameters = list(inspect.signature(jit_function.fn).parameters.values())
    num_positional = num_call_args + num_outputs
    signature = ", ".join(f"{p.name}: constexpr" if _is_constexpr(p) else p.name for p in parameters)
    described = f"Triton kernel '{kernel_name}({signature})'"
    count = (f"takes {sum(not _is_constexpr(p) for p in parameters)} non-constexpr arguments, but the call passes "
             f"{num_positional} ({num_call_args} arguments and {num_outputs} output pointers)")
    leading = parameters[:num_positional]
    if len(leading) < num_positional or any(_is_constexpr(p) for p in leading):
        raise TypeError(f"{described} {count}")
    return parameters, described, count


def check_call(kernel, num_call_args, num_outputs, metaparams, kernel_name):
    """The checks that need no argument values, made when a call is traced: the whole signature for a plain
    kernel; the positional part for an autotune/heuristics wrapper (its configs add metaparameters later)."""
    jit_function, wrappers = unwrap_kernel(kernel)
    if wrappers:
        check_positional_arguments(jit_function, num_call_args, num_outputs, kernel_name)
    else:
        check_signature(jit_function, num_call_args, num_outputs, metaparams, kernel_name)


def check_signature(jit_function, num_call_args, num_outputs, metaparams, kernel_name):
    """Raises TypeError naming the kernel where the call does not bind its signature as Triton would need."""
    parameters, described, count = check_positional_arguments(jit_function, num_call_args, num_outputs, kernel_name)
    names = [p.name for p in parameters]
    num_positional = num_call_args + num_outputs
    unknown = sorted(set(metaparams) - set(names))
    if unknown:
        raise TypeError(f"{described} has no parameters named {unknown}")
    twice = sorted(set(metaparams) & set(names[:num_positional]))
    if twice:
        raise TypeError(f"{described}: {twice} are passed both as arguments and as metaparameters")
    for parameter in parameters[num_positional:]:
        if parameter.name in metaparams or parameter.default is not inspect.Parameter.empty:
            continue
        if _is_constexpr(parameter):
            raise TypeError(f"{described} is missing the constexpr metaparameter '{parameter.name}': pass "
                            f"{parameter.name}=... to the call")
        # jax-triton lets a non-constexpr scalar come as a metaparameter too, so name both ways to pass it.
        raise TypeError(f"{described} {count}, and no metaparameter '{parameter.name}'")


def resolve_grid(grid, metaparams):
    """The launch grid as three ints from an int, a tuple of up to three, or a function of the metaparams."""
    if callable(grid):
        grid = grid(dict(metaparams))
    if isinstance(grid, int | np.integer):
        grid = (grid,)
    grid = tuple(int(g) for g in grid)
    if not 1 <= len(grid) <= 3 or any(g < 0 for g in grid):
        raise ValueError(f"triton_call: the grid must have one to three non-negative sizes, got {grid}")
    return grid + (1,) * (3 - len(grid))


def resolve_zeroed(zeroed_outputs, metaparams):
    """The indices of the outputs to zero, from a sequence or a function of the metaparams."""
    return tuple(zeroed_outputs(dict(metaparams)) if callable(zeroed_outputs) else zeroed_outputs)
