"""jax.export's custom-call safety check: a module may call only the custom-call targets whose behaviour is kept
stable across releases (the LAPACK and cuSOLVER kernels numax's linear algebra calls, as jax's list has them),
plus those the export names with `DisabledSafetyCheck.custom_call(target)`. Any other target (one registered
through `numax.interpreters.mlir.custom_call`, a Triton kernel call) raises jax's ValueError, since the
serialized module would depend on code outside it whose meaning may change."""

import re

_LAPACK_ROUTINES = ("potrf", "geqrf", "orgqr", "ungqr", "syevd", "heevd", "geev", "gesdd", "getrf", "sytrd",
                    "hetrd", "gehrd", "gees", "trsm", "gtsv")
_GPU_KERNELS = ("cu_lu_pivots_to_permutation", "cusolver_getrf_ffi", "cusolver_geqrf_ffi", "cusolver_orgqr_ffi",
                "cusolver_potrf_ffi", "cusolver_syevd_ffi", "cusolver_gesvd_ffi", "cusolver_gesvdj_ffi",
                "cusolver_sytrd_ffi", "cusparse_gtsv2_ffi", "cu_threefry2x32_ffi")
# What jax's exports accept without a disabled check (jax._src.export's list, for the CPU and CUDA targets):
# LAPACK names are `lapack_<s|d|c|z><routine>_ffi`, and each routine exists under its real or complex name only.
_STABLE_LAPACK = re.compile(r"lapack_[sdcz](?:" + "|".join(_LAPACK_ROUTINES) + r")_ffi")
STABLE_TARGETS = frozenset(_GPU_KERNELS) | {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
                                            "annotate_device_placement", "shape_assertion", "AllocateBuffer"}

_TARGET = re.compile(r'call_target_name = "([^"]*)"')


def _is_stable(target):
    return target in STABLE_TARGETS or _STABLE_LAPACK.fullmatch(target) is not None


def check_custom_calls(module_text, disabled_checks):
    """Raises jax's ValueError if the StableHLO text calls a custom-call target that is neither stable nor allowed
    by one of `disabled_checks` (DisabledSafetyChecks; as in jax, `custom_call("ALL")` allows every target)."""
    allowed = {check.is_custom_call() for check in disabled_checks} - {None}
    if "ALL" in allowed:
        return
    refused = []
    for line in module_text.splitlines():
        target = _TARGET.search(line) if '"stablehlo.custom_call"' in line else None
        if target and not _is_stable(target.group(1)) and target.group(1) not in allowed:
            refused.append(line.strip())
    if refused:
        examples = "\n".join(refused)
        raise ValueError("Cannot serialize code with custom calls whose targets have no compatibility guarantees. "
                         "See https://docs.jax.dev/en/latest/export/export.html#compatibility-guarantees-for-custom-"
                         f"calls. Examples are:\n{examples}.\n(Allow a target with "
                         "export(..., disabled_checks=[DisabledSafetyCheck.custom_call(target)]).)")
