"""The GPU Triton engine without a GPU: compiling kernels for sm_90 (Triton ships ptxas; each test that compiles
has an empty Triton cache, and one compiles after interpreted runs), the kernel cache (memory, disk, corrupt and
torn entries), the launch parameters of plain, zeroed, heuristic and autotuned calls, and the custom call's text.
What needs the CUDA plugin (the backend_config proto, running kernels) is checked on a GPU by
bench/gpu_triton_check.py."""

import importlib.util
import json
import os
import time
import zlib

import numpy as np
import pytest
import triton
from numax.core import dtypes
from numax.core.avals import ShapedArray
from numax.lowering import triton_cache, triton_gpu, xla
from numax.lowering.lower import ModuleContext, RuleContext
from numax.lowering.stablehlo import FunctionBuilder, aval_type
from numax.lowering.triton_interpret import run_interpreted
from sample_triton_kernels import add_kernel, atomic_sum_kernel, heuristic_softmax_kernel, softmax_kernel

SM90 = 90


# Autotuned with different configs than the GPU check's, to test the config expansion.
autotuned_add_kernel = triton.autotune(
    configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 256}, num_warps=8)], key=["n"]
)(add_kernel)


F32 = np.dtype(np.float32)
ADD_TYPES = [("pointer", F32), ("pointer", F32), ("scalar", int, 1000), ("pointer", F32)]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh kernel cache in a temporary directory, and a fresh Triton cache (Triton reads TRITON_CACHE_DIR on
    each compile), so that Triton compiles each kernel itself instead of finding an earlier run's result."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    fresh = triton_cache.KernelCache(str(tmp_path / "kernels"))
    monkeypatch.setattr(triton_gpu, "kernel_cache", fresh)
    return fresh


def compile_add(block=128, arg_types=ADD_TYPES, kernel=add_kernel, num_warps=4):
    return triton_gpu.compile_kernel(kernel, arg_types, {"BLOCK": block}, num_warps=num_warps, num_stages=3,
                                     num_ctas=1, compute_capability=SM90)


def entry_params(ptx, name):
    """The parameter lines of the PTX entry `name`."""
    start = ptx.index(f".entry {name}(")
    return [line.strip() for line in ptx[start:ptx.index(")", start)].splitlines()[1:]]


def test_vector_add_compiles_for_sm90(cache):
    compiled = compile_add()
    assert compiled.name == "add_kernel"
    assert ".target sm_90" in compiled.ptx
    params = entry_params(compiled.ptx, compiled.name)
    # three pointers and n (an i32: 1000 fits), then the two scratch pointers the plugin appends
    assert len(params) == 4 + 2
    assert [p.split()[1] for p in params[:4]] == [".u64", ".u64", ".u32", ".u64"]
    assert "tt.divisibility = 16" in compiled.ttir
    assert (compiled.num_warps, compiled.num_ctas, compiled.compute_capability) == (4, 1, SM90)
    assert compiled.global_scratch_size == 0


def test_compiles_after_interpreted_runs(cache):
    """The interpreter patches triton.language while it runs (tl.sum, a @triton.jit helper of Triton's, patches
    triton.language.core); a compile after them, with nothing in Triton's cache, must see none of it."""
    (total,) = run_interpreted(atomic_sum_kernel, [np.ones(40, np.float32), 40], [((1,), np.float32)], grid=(3,),
                               metaparams={"BLOCK": 16})
    assert total[0] == 40
    compiled = compile_add()
    assert compiled.name == "add_kernel" and ".target sm_90" in compiled.ptx


def test_softmax_compiles_with_shared_memory(cache):
    compiled = triton_gpu.compile_kernel(softmax_kernel, [("pointer", F32), ("scalar", int, 781), ("pointer", F32)],
                                         {"BLOCK": 1024}, num_warps=8, num_stages=3, num_ctas=1,
                                         compute_capability=SM90)
    assert compiled.name == "softmax_kernel"
    assert "ex2.approx" in compiled.ptx  # exp lowered to the hardware exp2
    assert compiled.shared_mem_bytes > 0  # the cross-warp max and sum reduce through shared memory
    assert compiled.num_warps == 8


def test_types_of_arguments():
    assert triton_gpu.pointer_type(np.float16) == "*fp16"
    assert triton_gpu.pointer_type(dtypes.bfloat16) == "*bf16"
    assert triton_gpu.pointer_type(np.bool_) == "*i1"
    assert [triton_gpu.scalar_type(int, v) for v in (-(2**31), 2**31, -(2**31) - 1, 2**63)] == \
        ["i32", "u32", "i64", "u64"]
    assert triton_gpu.scalar_type(float, 0.5) == "fp32"
    assert triton_gpu.scalar_type(float, 1e300) == "fp64"
    assert triton_gpu.scalar_type(bool, True) == "i1"
    assert triton_gpu.scalar_type(np.dtype(np.float64), 1.0) == "fp64"
    with pytest.raises(TypeError, match="int8"):
        triton_gpu.scalar_type(np.dtype(np.int8), 1)
    with pytest.raises(OverflowError):
        triton_gpu.scalar_type(int, 2**64)
    with pytest.raises(TypeError, match="complex"):
        triton_gpu.pointer_type(np.complex64)


def test_specialization_divisibility_and_constexprs():
    signature, constexprs, attrs = triton_gpu._specialization(
        add_kernel, [("pointer", F32), ("pointer", F32), ("scalar", int, 4096), ("pointer", F32)], {"BLOCK": 64,
                                                                                                   "GRID_ONLY": 3})
    assert signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "out_ptr": "*fp32", "BLOCK": "constexpr"}
    assert constexprs == {"BLOCK": 64}  # names the kernel lacks are for the grid
    assert sorted(attrs) == [(0,), (1,), (2,), (3,)]  # 4096 is a multiple of 16, like the pointers
    _, _, attrs = triton_gpu._specialization(add_kernel, ADD_TYPES[:2] + [("scalar", int, 1001)] + ADD_TYPES[3:],
                                             {"BLOCK": 64})
    assert (2,) not in attrs


def test_wrong_calls_raise_clear_errors(cache):
    with pytest.raises(TypeError, match="takes 4 non-constexpr arguments"):
        compile_add(arg_types=ADD_TYPES[:3])
    with pytest.raises(TypeError, match="constexpr parameter 'BLOCK'"):
        triton_gpu.compile_kernel(add_kernel, ADD_TYPES, {}, num_warps=4, num_stages=3, num_ctas=1,
                                  compute_capability=SM90)
    with pytest.raises(TypeError, match="'n' is not a constexpr"):
        triton_gpu.compile_kernel(add_kernel, ADD_TYPES, {"BLOCK": 64, "n": 3}, num_warps=4, num_stages=3,
                                  num_ctas=1, compute_capability=SM90)
    with pytest.raises(TypeError, match="@triton.jit"):
        triton_gpu.unwrap_kernel(lambda x: x)


def write_kernel_module(directory, name, body):
    """Imports a module holding one kernel `kernel` from a file (Triton reads kernels' source files)."""
    path = directory / f"{name}.py"
    path.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                    "def kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):\n"
                    "    offsets = tl.arange(0, BLOCK)\n"
                    f"    tl.store(out_ptr + offsets, {body})\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


def compile_copy(kernel, block=32):
    return triton_gpu.compile_kernel(kernel, [("pointer", F32), ("pointer", F32)], {"BLOCK": block}, num_warps=1,
                                     num_stages=1, num_ctas=1, compute_capability=SM90)


def test_cache_hits_in_memory_then_on_disk(cache):
    first = compile_add()
    assert (cache.misses, cache.memory_hits, cache.disk_hits) == (1, 0, 0)
    assert cache.last_reason == "not in the disk cache"
    assert compile_add() == first
    assert cache.memory_hits == 1
    cache.clear_memory()  # as a new process would start
    assert compile_add() == first
    assert (cache.misses, cache.disk_hits) == (1, 1)
    files = os.listdir(cache.directory)
    assert len(files) == 1 and files[0].endswith(".json")  # no temporary file left behind


def test_cache_misses_on_a_changed_source_metaparam_or_option(cache, tmp_path):
    doubled = compile_copy(write_kernel_module(tmp_path, "doubled", "2.0 * tl.load(x_ptr + offsets)"))
    tripled = compile_copy(write_kernel_module(tmp_path, "tripled", "3.0 * tl.load(x_ptr + offsets)"))
    assert cache.misses == 2 and doubled.ptx != tripled.ptx
    compile_add(block=128)
    compile_add(block=256)
    compile_add(block=128, num_warps=8)
    assert cache.misses == 5
    compile_add(block=128, arg_types=ADD_TYPES[:2] + [("scalar", int, 2**40)] + ADD_TYPES[3:])  # n: an i64
    assert cache.misses == 6 and cache.memory_hits == 0


def test_cache_key_covers_called_functions(tmp_path):
    """Editing a @triton.jit helper a kernel calls changes the kernel's key (Triton hashes dependencies)."""
    def kernel_calling(helper_body, name):
        path = tmp_path / f"{name}.py"
        path.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                        f"def helper(x):\n    return {helper_body}\n\n\n@triton.jit\n"
                        "def kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):\n"
                        "    offsets = tl.arange(0, BLOCK)\n"
                        "    tl.store(out_ptr + offsets, helper(tl.load(x_ptr + offsets)))\n")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.kernel

    assert kernel_calling("x + 1", "plus_one").cache_key != kernel_calling("x + 2", "plus_two").cache_key


def test_corrupt_disk_entry_is_recompiled(cache):
    first = compile_add()
    (name,) = os.listdir(cache.directory)
    path = os.path.join(cache.directory, name)
    with open(path) as file:
        stored = json.load(file)
    stored["compiled"]["ptx"] = stored["compiled"]["ptx"].replace("add.f32", "sub.f32")
    with open(path, "w") as file:
        json.dump(stored, file)
    cache.clear_memory()
    assert compile_add() == first
    assert cache.misses == 2 and "corrupt" in cache.last_reason
    cache.clear_memory()
    with open(path, "w") as file:
        file.write('{"compiled": {"name": "add_k')  # a torn file
    assert compile_add() == first
    assert cache.misses == 3 and "unreadable" in cache.last_reason
    cache.clear_memory()
    assert compile_add() == first and cache.disk_hits == 1  # the rewritten entry is whole again


def test_cache_write_is_atomic(cache, monkeypatch):
    replace = os.replace
    failed = []

    def failing_replace(source, target):
        # Only numax's cache fails: Triton writes its own cache through os.replace while it compiles.
        if os.path.dirname(target) != cache.directory:
            return replace(source, target)
        failed.append(target)
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    compiled = compile_add()
    assert compiled.name == "add_kernel"  # a cache that cannot be written costs only recompiles
    assert len(failed) == 1  # the write was tried, and failed when renaming into place
    assert os.listdir(cache.directory) == []  # neither a partial entry nor the temporary file


def test_cache_directory_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMAX_CACHE_DIR", str(tmp_path))
    assert triton_cache.KernelCache().directory == os.path.join(str(tmp_path), "triton")
    monkeypatch.delenv("NUMAX_CACHE_DIR")
    assert triton_cache.KernelCache().directory == os.path.expanduser("~/.cache/numax/triton")


def avals(*shapes_dtypes):
    return [ShapedArray(shape, dtype) for shape, dtype in shapes_dtypes]


def test_launch_of_a_plain_call_with_zeroed_outputs(cache):
    vector = avals(((1000,), np.float32))[0]
    (launch,) = triton_gpu.kernel_launches(
        add_kernel, [vector, vector], [vector], grid=lambda meta: (triton.cdiv(1000, meta["BLOCK"]),),
        call_spec=(("array", 0), ("array", 1), ("scalar", 1000)), metaparams=(("BLOCK", 128),),
        zeroed_outputs=(0,), num_warps=None, num_stages=None, num_ctas=1, debug=False, compute_capability=SM90)
    assert launch.grid == (8, 1, 1)
    assert launch.parameters == (("array", 0, 16), ("array", 0, 16), ("scalar", 1000, "i32"), ("array", 4000, 16))
    assert (launch.compiled.num_warps, launch.compiled.name) == (triton_gpu.DEFAULT_NUM_WARPS, "add_kernel")


def test_launches_of_an_autotuned_kernel(cache):
    vector = avals(((5000,), np.float32))[0]
    launches = triton_gpu.kernel_launches(
        autotuned_add_kernel, [vector, vector], [vector], grid=lambda meta: (triton.cdiv(5000, meta["BLOCK"]),),
        call_spec=(("array", 0), ("array", 1), ("scalar", np.int64(5000))), metaparams=(),
        zeroed_outputs=lambda meta: (0,) if meta["BLOCK"] == 64 else (), num_warps=None, num_stages=None,
        num_ctas=1, debug=False, compute_capability=SM90)
    assert [launch.grid for launch in launches] == [(79, 1, 1), (20, 1, 1)]
    assert [launch.compiled.num_warps for launch in launches] == [2, 8]
    assert [launch.parameters[3][1] for launch in launches] == [20000, 0]  # zeroed_outputs of the metaparams
    assert launches[0].parameters[2] == ("scalar", 5000, "i64")  # a numpy scalar keeps its dtype
    assert "BLOCK: 64" in launches[0].description
    pinned = triton_gpu.kernel_launches(
        autotuned_add_kernel, [vector, vector], [vector], grid=(1,), call_spec=(("array", 0), ("array", 1),
                                                                               ("scalar", 5000)),
        metaparams=(("BLOCK", 256),), zeroed_outputs=(), num_warps=None, num_stages=None, num_ctas=1, debug=False,
        compute_capability=SM90)
    assert len(pinned) == 1 and pinned[0].compiled.num_warps == 8  # configs that disagree are dropped


def test_launch_of_a_heuristics_kernel(cache):
    x = avals(((4, 300), np.float32))[0]
    (launch,) = triton_gpu.kernel_launches(
        heuristic_softmax_kernel, [x], [x], grid=(4,), call_spec=(("array", 0), ("scalar", 300)), metaparams=(),
        zeroed_outputs=(), num_warps=4, num_stages=2, num_ctas=1, debug=False, compute_capability=SM90)
    assert launch.grid == (4, 1, 1)
    assert "tensor<512xf32" in launch.compiled.ttir  # BLOCK = next_power_of_2(300) from the heuristic


def test_backend_config_needs_the_cuda_plugin():
    if xla.gpu_triton_module() is not None:
        pytest.skip("the CUDA plugin is installed: bench/gpu_triton_check.py covers backend_config")
    with pytest.raises(RuntimeError, match="CUDA plugin"):
        triton_gpu.backend_config([], "add")


def lowered_module(avals_in, avals_out, opaque, aliases=()):
    builder = FunctionBuilder()
    args = []
    for i, aval in enumerate(avals_in):
        args.append(f"%arg{i}")
        builder.types[args[-1]] = aval_type(aval)
    ctx = RuleContext(ModuleContext("gpu"), builder, avals_in, avals_out)
    results = triton_gpu.emit_triton_kernel_call(ctx, args, opaque, aliases)
    out_types = [aval_type(a) for a in avals_out]
    signature = ", ".join(f"{a}: {builder.types[a]}" for a in args)
    return "\n".join([f"module @m {{\n  func.func public @main({signature}) -> ({', '.join(out_types)}) {{",
                      *builder.lines, f"    return {', '.join(results)} : {', '.join(out_types)}", "  }\n}"])


def custom_call_attributes(text):
    module = xla.parse_module(text)
    func = module.body.operations[0]
    return func.regions[0].blocks[0].operations[0].attributes


def test_lowering_text_round_trips_the_opaque_bytes():
    opaque = zlib.compress(bytes(range(256)) * 3 + b'"\\\n\x00end')
    avals_in = avals(((8, 4), np.float32), ((), np.int32))
    text = lowered_module(avals_in, avals(((8, 4), np.float32), ((3,), np.float16)), opaque)
    assert '"stablehlo.custom_call"' in text and 'call_target_name = "triton_kernel_call_ffi"' in text
    attributes = custom_call_attributes(text)
    from jaxlib.mlir import ir

    assert ir.StringAttr(ir.DictAttr(attributes["backend_config"])["opaque"]).value_bytes == opaque
    assert str(attributes["api_version"]) == "4 : i32"
    assert str(attributes["operand_layouts"]) == "[dense<[1, 0]> : tensor<2xindex>, dense<> : tensor<0xindex>]"
    assert "output_operand_aliases" not in text


def test_lowering_text_aliases():
    vector = avals(((16,), np.float32))
    text = lowered_module(vector * 2, vector, b"x", aliases=((1, 0),))
    aliases = str(custom_call_attributes(text)["output_operand_aliases"])
    assert "output_tuple_indices = []" in aliases and "operand_index = 1" in aliases  # one result: no tuple
    text = lowered_module(vector * 2, vector * 2, b"x", aliases=((0, 1), (1, 0)))
    aliases = str(custom_call_attributes(text)["output_operand_aliases"])
    assert "output_tuple_indices = [1], operand_index = 0" in aliases
    assert "output_tuple_indices = [0], operand_index = 1" in aliases


def test_fused_kernels_compile_without_line_info_and_user_kernels_with_it(cache):
    # the plugin copies and hashes a kernel's PTX at every launch: the fuser's kernels leave out their source lines
    import numax
    import numax.numpy as mnp

    x = np.linspace(-2, 2, 600, dtype=np.float32).reshape(20, 30)
    lowered = numax.jit(lambda x: mnp.tanh(x * 2.0) + 1.0, fusion="triton").lower(x)
    (eqn,) = [e for e in lowered.closed.equations if e.primitive.name == "triton_call"]
    params = eqn.params
    (fused,) = triton_gpu.kernel_launches(
        params["kernel"], [ShapedArray(x.shape, x.dtype)], params["out_avals"],
        grid=params["grid"], call_spec=params["call_spec"], metaparams=params["metaparams"], zeroed_outputs=(),
        num_warps=params["num_warps"], num_stages=None, num_ctas=1, debug=False, compute_capability=SM90)
    assert ".target sm_90" in fused.compiled.ptx and ".loc" not in fused.compiled.ptx
    assert ".loc" in compile_add().ptx
    # the same kernel compiled both ways is two cache entries, each with what it asked for
    with_lines = triton_gpu.compile_kernel(add_kernel, ADD_TYPES, {"BLOCK": 128}, num_warps=4, num_stages=3,
                                           num_ctas=1, compute_capability=SM90)
    without = triton_gpu.compile_kernel(add_kernel, ADD_TYPES, {"BLOCK": 128}, num_warps=4, num_stages=3,
                                        num_ctas=1, compute_capability=SM90, line_info=False)
    assert ".loc" in with_lines.ptx and ".loc" not in without.ptx and len(without.ptx) < len(with_lines.ptx)
    assert not triton.knobs.compilation.disable_line_info  # the knob is back as it was


def test_compiles_from_threads_each_get_the_line_info_they_ask_for(cache):
    # compiles of one setting share a turn; the other setting waits for it (Triton's knob is process-wide)
    from concurrent.futures import ThreadPoolExecutor

    def compiled(index):
        line_info = index % 2 == 0
        return line_info, triton_gpu.compile_kernel(add_kernel, ADD_TYPES, {"BLOCK": 64 << (index // 2)},
                                                    num_warps=4, num_stages=3, num_ctas=1, compute_capability=SM90,
                                                    line_info=line_info)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(compiled, range(6)))
    assert [(".loc" in kernel.ptx) for _, kernel in results] == [line_info for line_info, _ in results]
    assert not triton.knobs.compilation.disable_line_info


def test_language_turns_share_compiles_of_one_kind_and_keep_the_interpreter_alone():
    import contextlib
    import threading

    from numax.lowering.triton_signature import LanguageTurns

    turns, events, log = LanguageTurns(), {}, []

    @contextlib.contextmanager
    def setting(name):
        log.append(f"enter {name}")
        yield
        log.append(f"leave {name}")

    def hold(kind, name, entered, release):
        context = turns.interpreting() if kind is None else turns.compiling(kind, lambda: setting(name))
        with context:
            log.append(f"in {name}")
            entered.set()
            release.wait(10)

    def start(kind, name):
        entered, release = threading.Event(), threading.Event()
        thread = threading.Thread(target=hold, args=(kind, name, entered, release))
        thread.start()
        events[name] = (entered, release, thread)
        return entered

    assert start("a", "a1").wait(10) and start("a", "a2").wait(10)  # one kind: side by side
    assert log == ["enter a1", "in a1", "in a2"]  # the turn's setting, entered once
    interpreter, other = start(None, "interpreter"), start("b", "b1")
    assert not start("a", "a3").wait(0.2)  # others wait: no newcomer joins the turn under way
    assert not interpreter.is_set() and not other.is_set()
    for name in ("a1", "a2"):
        events[name][1].set()
        events[name][2].join(10)
    waiting = ["interpreter", "b1", "a3"]  # three kinds: one at a time, in whatever order they wake
    while waiting:
        for _ in range(1000):
            inside = [name for name in waiting if events[name][0].is_set()]
            if inside:
                break
            time.sleep(0.01)
        assert len(inside) == 1
        events[inside[0]][1].set()
        events[inside[0]][2].join(10)
        waiting.remove(inside[0])
    assert log.count("in interpreter") == 1 and log.count("enter b1") == log.count("leave b1") == 1
    # a1's setting was left by the turn's last compile, before any other turn began
    assert log[:4] == ["enter a1", "in a1", "in a2", "leave a1"]
