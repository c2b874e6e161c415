import os
from importlib import metadata

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _default_xla_flags():
    """Eight host devices (the collective tests), and cheaper CPU code generation where it was checked.

    XLA compiles dominate the suite: jax (the oracle) and numax each compile thousands of small programs, about
    80% of its CPU time with XLA's default flags. These flags cut each compile to about 40% of that: LLVM
    skips optimizing the machine code, each program is one LLVM module instead of several compiled in parallel
    (together a quarter to a third off), and XLA's older elemental emitters replace its fusion emitters (about
    half off what is left: 24 -> 13 ms for a one-operation program; the whole suite 910 -> 641 s of wall time on
    a 2-core machine). The HLO passes, and so what a program computes, stay as they are, and jax and numax
    compile under the same flags in this process. The older emitters lack complex minimum and maximum, which
    numax (as jax) spells out in lexicographic order wherever a program combines complex values.
    Unknown flags abort XLA, hence only on the jaxlib release line they were checked with. XLA_FLAGS set in the
    environment replace all of this (for XLA's defaults: XLA_FLAGS=--xla_force_host_platform_device_count=8).
    """
    flags = ["--xla_force_host_platform_device_count=8"]
    if metadata.version("jaxlib").startswith("0.10."):
        flags += ["--xla_backend_optimization_level=0", "--xla_cpu_parallel_codegen_split_count=1",
                  "--xla_cpu_use_fusion_emitters=false"]
    return " ".join(flags)


os.environ.setdefault("XLA_FLAGS", _default_xla_flags())


def _persistent_cache():
    """numax's persistent compilation cache for the suite's processes (the xdist workers, and the fresh
    processes and notebooks they start, inherit it through the environment): a directory in pytest's own
    cache folder of this checkout, so that a clean clone starts cold and a second run loads what the first
    compiled. Every compile is written (no minimum compile time). NUMAX_COMPILATION_CACHE_DIR set in the
    environment wins; set it empty to run the suite without the cache (and JAX_COMPILATION_CACHE_DIR for jax's)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ.setdefault("NUMAX_COMPILATION_CACHE_DIR", os.path.join(root, ".pytest_cache", "numax-compilation-cache"))
    os.environ.setdefault("NUMAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    # jax, the oracle, the same way: the documentation pages run each in a fresh process, and compile many of the
    # same small programs (jax's eager operations) again in each.
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(root, ".pytest_cache", "jax-compilation-cache"))
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")


_persistent_cache()


def _fresh_kernel_caches():
    """Triton's kernel cache and numax's (NUMAX_CACHE_DIR) in a new folder for each run of the suite, unless set:
    a warm ~/.triton/cache once hid a failure that only a first compile in a process shows. The xdist workers
    inherit the controller's folder through the environment."""
    import tempfile

    if "TRITON_CACHE_DIR" in os.environ and "NUMAX_CACHE_DIR" in os.environ:
        return None
    scratch = tempfile.mkdtemp(prefix="numax-test-caches-")
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(scratch, "triton"))
    os.environ.setdefault("NUMAX_CACHE_DIR", os.path.join(scratch, "numax"))
    return scratch


_kernel_cache_scratch = _fresh_kernel_caches()


def pytest_unconfigure(config):
    if _kernel_cache_scratch is not None:  # made by this process (the controller, or a run without xdist)
        import shutil

        shutil.rmtree(_kernel_cache_scratch, ignore_errors=True)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# Few examples (the suite runs within CI's 15 minutes), and the same ones in every run, on any worker and in any
# order: each test's examples come from its own source, never from the clock or a database of earlier failures.
settings.register_profile("numax", max_examples=15, deadline=None, derandomize=True, database=None)
settings.load_profile("numax")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def x64():
    """64-bit types on for one test (float64 finite differences), restored after."""
    import numax

    numax.config.update("numax_enable_x64", True)
    try:
        yield
    finally:
        numax.config.update("numax_enable_x64", False)


@pytest.fixture
def untuned_fusion():
    """fusion="triton" regions become kernels without the autotuner timing them against XLA (on by default on
    GPUs): tests of what the fuser forms count the same kernels on every platform. Restored after."""
    import numax

    numax.config.update("numax_fusion_autotune", "never")
    try:
        yield
    finally:
        numax.config.update("numax_fusion_autotune", "auto")
