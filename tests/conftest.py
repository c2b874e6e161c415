import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

settings.register_profile("numax", max_examples=15, deadline=None)  # the suite runs within CI's 15 minutes
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
