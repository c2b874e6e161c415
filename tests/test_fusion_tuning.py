"""The fusion autotuner (transforms/fusion_tuning.py): with a scripted timer, it keeps the fastest launch
candidate, leaves a region (or a whole program) to XLA where the kernel is not faster, and remembers decisions
in checked files; its timing programs run their copies one after another with the region's results; on the CPU,
really timed, Triton's interpreter loses to XLA and the region stays with XLA."""

import json
import os

import numpy as np
import pytest
from numax.lowering import dispatch, xla
from numax.transforms import fusion_tuning
from numax.transforms.fusion import fuse_with_kernels

import numax
import numax.numpy as mnp

X = np.linspace(-3, 3, 2048, dtype=np.float32).reshape(2, 1024)  # 2048 elements: two launch candidates


def chain(x):
    return mnp.tanh(x) * 2.0 + 1.0


class ScriptedTimer:
    """Returns the given seconds per call in order (candidates, then XLA's region, then whole programs)."""

    def __init__(self, *seconds):
        self.seconds = list(seconds)
        self.calls = 0

    def __call__(self, executable, buffers):
        self.calls += 1
        return self.seconds.pop(0)


@pytest.fixture(autouse=True)
def fresh_decisions(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMAX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fusion_tuning, "_decisions", fusion_tuning._DecisionStore())


def whole(fused_seconds, xla_seconds):
    """A whole program's timings, fused and XLA's in turn: the same each turn."""
    return [fused_seconds, xla_seconds] * fusion_tuning.WHOLE_PROGRAM_TURNS


TIMED_WHOLE = 2 * fusion_tuning.WHOLE_PROGRAM_TURNS


def tuner(timer):
    backend, device = xla.default_placement()
    return fusion_tuning.RegionTuner(backend, device or backend.default_device, timer)


def kernel_calls(closed):
    return [e for e in closed.equations if e.primitive.name == "triton_call"]


def run(closed, *args):
    return np.asarray(dispatch.compile_program(closed)(*args)[0])


def test_the_fastest_candidate_is_kept():
    closed = numax.make_jaxpr(chain)(X)
    timer = ScriptedTimer(3e-6, 1e-6, 5e-6, *whole(1e-6, 9e-6))  # (1024, 4), (2048, 8), XLA; whole: fused, XLA
    fused, (kernel,) = fuse_with_kernels(closed, "cpu", tuner=tuner(timer))
    assert timer.calls == 3 + TIMED_WHOLE and (kernel.block, kernel.num_warps) == (2048, 8)
    (call,) = kernel_calls(fused)
    assert dict(call.params["metaparams"])["BLOCK"] == 2048 and call.params["num_warps"] == 8
    assert "kernel 1.0 us, XLA 5.0 us: kernel 5.00x faster" in kernel.timing
    # every candidate's time, in the log too (the region's line)
    assert "[BLOCK=1024, num_warps=4: 3.0 us; BLOCK=2048, num_warps=8: 1.0 us]" in kernel.timing
    np.testing.assert_allclose(run(fused, X), run(closed, X), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kernel_seconds", [6e-6, 4.9e-6], ids=["slower", "within the margin"])
def test_a_region_not_faster_than_xla_stays_with_xla(kernel_seconds):
    closed = numax.make_jaxpr(chain)(X)
    timer = ScriptedTimer(kernel_seconds, kernel_seconds, 5e-6)
    fused, kernels = fuse_with_kernels(closed, "cpu", tuner=tuner(timer))
    assert kernels == [] and not kernel_calls(fused) and timer.calls == 3
    np.testing.assert_allclose(run(fused, X), run(closed, X), rtol=1e-6, atol=1e-6)


def test_a_whole_program_not_faster_than_xla_compiles_without_fusion(capsys):
    closed = numax.make_jaxpr(chain)(X)
    numax.config.update("numax_log_fusion", True)
    try:
        timer = ScriptedTimer(1e-6, 1e-6, 5e-6, *whole(8e-6, 7e-6))
        fused, kernels = fuse_with_kernels(closed, "cpu", tuner=tuner(timer))
    finally:
        numax.config.update("numax_log_fusion", False)
    assert fused is closed and kernels == []
    assert "not faster than XLA's: compiled without fusion (fused 8.0 us, XLA 7.0 us)" in capsys.readouterr().err


def test_a_whole_program_is_timed_in_turns_with_xla_and_each_sides_best_compared(capsys):
    # fused and XLA's programs alternate (the same drift for both); a slow turn of either side does not decide
    closed = numax.make_jaxpr(chain)(X)
    turns = [9e-6, 5e-6, 9e-6, 6e-6, 2e-6, 9e-6, 9e-6, 7e-6][:TIMED_WHOLE]  # fused, XLA, fused, XLA, ...
    assert fusion_tuning.WHOLE_PROGRAM_TURNS == 4
    numax.config.update("numax_log_fusion", True)
    try:
        fused, kernels = fuse_with_kernels(closed, "cpu", tuner=tuner(ScriptedTimer(1e-6, 1e-6, 5e-6, *turns)))
    finally:
        numax.config.update("numax_log_fusion", False)
    assert len(kernels) == 1 and kernel_calls(fused)
    assert "kept (fused 2.0 us, XLA 5.0 us)" in capsys.readouterr().err


def test_decisions_are_remembered_in_checked_files(tmp_path, monkeypatch):
    closed = numax.make_jaxpr(chain)(X)
    fuse_with_kernels(closed, "cpu", tuner=tuner(ScriptedTimer(3e-6, 1e-6, 5e-6, *whole(1e-6, 9e-6))))
    files = sorted((tmp_path / "fusion" / "tuning").glob("*.json"))
    assert len(files) == 2  # the region's decision and the whole program's
    records = [json.loads(f.read_text()) for f in files]
    assert {r["key"] for r in records} == {f.stem for f in files} and {r["choice"] for r in records} == {0, 1}
    # another process: decisions read back, nothing timed again
    monkeypatch.setattr(fusion_tuning, "_decisions", fusion_tuning._DecisionStore())
    fused, (kernel,) = fuse_with_kernels(closed, "cpu", tuner=tuner(ScriptedTimer()))
    assert (kernel.block, kernel.num_warps) == (2048, 8) and "decided earlier" in kernel.timing
    # a damaged or foreign file is not trusted: the region is timed again and its file rewritten
    for damage in ("{not json", json.dumps({**records[0], "choice": 7}), json.dumps({**records[0], "key": "x"})):
        monkeypatch.setattr(fusion_tuning, "_decisions", fusion_tuning._DecisionStore())
        for f in files:
            f.write_text(damage)
        timer = ScriptedTimer(3e-6, 1e-6, 5e-6, *whole(1e-6, 9e-6))
        fuse_with_kernels(closed, "cpu", tuner=tuner(timer))
        assert timer.calls == 3 + TIMED_WHOLE
        assert {json.loads(f.read_text())["key"] for f in files} == {f.stem for f in files}
    assert not [name for name in os.listdir(files[0].parent) if name.endswith(".tmp")]


def test_timing_programs_run_their_copies_one_after_another():
    closed = numax.make_jaxpr(chain)(X)
    program = closed.program
    copies = fusion_tuning.replicated(program.equations, program.invars, program.outvars, 3)
    assert [e.primitive.name for e in copies.equations].count("optimization_barrier") == 2
    executable = dispatch.compile_program(copies)
    assert executable.hlo_text().count(" tanh(") == 3  # XLA merged no copies
    results = executable(X, X, X)
    assert len(results) == 3
    for result in results:
        np.testing.assert_array_equal(np.asarray(result), run(closed, X))


def test_programs_with_loops_are_not_timed_whole():
    def looped(x):
        return numax.lax.while_loop(lambda v: v[0, 0] > 0.1, lambda v: v * 0.5, mnp.tanh(x) * 2.0 + 1.0)

    closed = numax.make_jaxpr(looped)(X)
    timer = ScriptedTimer(3e-6, 1e-6, 5e-6)  # the region's three timings only
    fused, kernels = fuse_with_kernels(closed, "cpu", tuner=tuner(timer))
    assert len(kernels) == 1 and timer.calls == 3
    np.testing.assert_allclose(run(fused, X), run(closed, X), rtol=1e-6, atol=1e-6)


def test_really_timed_on_the_cpu_the_interpreter_loses_to_xla(capsys):
    small = X[:, :8]
    numax.config.update("numax_fusion_autotune", "always")
    numax.config.update("numax_log_fusion", True)
    try:
        fn = numax.jit(chain, fusion="triton")
        assert fn.lower(small).triton_kernels() == []
        np.testing.assert_allclose(fn(small), numax.jit(chain)(small), rtol=1e-6)
    finally:
        numax.config.update("numax_fusion_autotune", "auto")
        numax.config.update("numax_log_fusion", False)
    err = capsys.readouterr().err
    assert "left 3 equations over f32[2,8] to XLA (kernel" in err and "x faster)" in err.split("XLA (kernel")[1]


def test_the_autotune_flag():
    assert numax.config.fusion_autotune == "auto"
    assert fusion_tuning.should_tune("gpu") and not fusion_tuning.should_tune("cpu")
    with pytest.raises(ValueError, match="numax_fusion_autotune must be one of"):
        numax.config.update("numax_fusion_autotune", "sometimes")
    numax.config.update("numax_fusion_autotune", "never")
    try:
        assert not fusion_tuning.should_tune("gpu")
    finally:
        numax.config.update("numax_fusion_autotune", "auto")


def test_a_regions_programs_compile_side_by_side_under_the_callers_configuration(monkeypatch):
    # the candidates' and XLA's timing programs compile in threads (XLA and Triton release the GIL there), each
    # seeing the tuning thread's own settings; the timing then runs in the caller's thread, in the scripted order
    import threading

    compiled_in = []
    original = dispatch.compile_program

    def recording(closed, *args, **kwargs):
        compiled_in.append((threading.current_thread().name, numax.config.read("jax_numpy_rank_promotion")))
        return original(closed, *args, **kwargs)

    monkeypatch.setattr(dispatch, "compile_program", recording)
    closed = numax.make_jaxpr(chain)(X)
    timer = ScriptedTimer(3e-6, 1e-6, 5e-6, *whole(1e-6, 9e-6))
    with numax.numpy_rank_promotion("warn"):
        fused, (kernel,) = fuse_with_kernels(closed, "cpu", tuner=tuner(timer))
    assert (kernel.block, kernel.num_warps) == (2048, 8)
    assert len(compiled_in) == 3 + 2  # two candidates and XLA's region, then the whole program both ways
    assert all(name.startswith("numax-fusion-tuning") for name, _ in compiled_in)
    assert {promotion for _, promotion in compiled_in} == {"warn"}
    assert numax.config.read("jax_numpy_rank_promotion") == "allow"
