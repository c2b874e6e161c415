"""jax's public module surface against numax's: every public name of jax's modules (jax, jax.numpy, jax.lax,
jax.random, jax.nn, jax.scipy, jax.tree_util, jax.sharding, jax.export, jax.experimental, jax.extend,
jax.interpreters, ...) exists in numax's module of the same path, as code written for jax reaches it under
`numax.compat.install()`, unless `NOT_YET` lists it with the reason numax lacks it. A listed name that numax now
has fails too, so the table shrinks as names land. A jax module must be a module in numax and a jax function or
class a callable (numax's scalar types, for one, are callable objects rather than classes).

Both surfaces are read in fresh interpreters (this file run as a script), so what other tests imported does not
change them: jax's first, each module's names right after importing it, parents before children; then numax's
under the switch, for the names jax has. `python tests/test_public_surface.py report` lists what the table should
gain or lose.
"""

import __future__

import importlib
import json
import subprocess
import sys
import types

import pytest

MODULES = [
    "jax", "jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.lax", "jax.lax.linalg", "jax.random", "jax.nn",
    "jax.nn.initializers", "jax.scipy", "jax.scipy.special", "jax.scipy.linalg", "jax.scipy.signal", "jax.scipy.stats",
    "jax.scipy.stats.norm", "jax.scipy.stats.uniform", "jax.scipy.stats.expon", "jax.scipy.stats.bernoulli",
    "jax.scipy.stats.multivariate_normal", "jax.tree_util", "jax.tree", "jax.sharding", "jax.export",
    "jax.experimental", "jax.experimental.checkify", "jax.experimental.hijax", "jax.experimental.multihost_utils",
    "jax.experimental.layout",
    "jax.experimental.compilation_cache.compilation_cache", "jax.dtypes", "jax.typing", "jax.errors", "jax.stages",
    "jax.custom_derivatives", "jax.flatten_util", "jax.monitoring", "jax.api_util", "jax.extend", "jax.extend.core",
    "jax.extend.linear_util", "jax.extend.source_info_util", "jax.interpreters", "jax.interpreters.ad",
    "jax.interpreters.batching", "jax.interpreters.mlir", "jax.interpreters.partial_eval", "jax.core", "jax.debug",
    "jax.distributed", "jax.ad_checkpoint", "jax.ref", "jax.version",
]

# Public names of jax's modules that numax does not have yet, by module: (reason, names) groups.
NOT_YET = {
    "jax": [
        ("explicit allocation and freeing of references", "empty_ref free_ref"),
        ("jax 0.10's new autodiff namespace (jax.ad: DontWant, GradRef, ...) and fwd_and_bwd", "ad fwd_and_bwd"),
        ("jax 0.10's new sharding-in-types and threading helpers", "auto_pcast ds make_user_context smap thread_guard"),
        ("no public class for an array's per-device shards yet", "Shard"),
        ("deprecated host aliases of the process functions", "host_count host_id host_ids"),
        ("modules numax has no counterpart of yet", "custom_batching dlpack ffi image lib ops profiler"),
        ("memory spaces (jax.memory.Space)", "memory"),
    ],
    "jax.numpy": [
        ("numpy's ufunc objects (jnp.ufunc, frompyfunc) are not modelled", "frompyfunc ufunc"),
    ],
    "jax.lax": [
        ("dot algorithm and accuracy selection", "AccuracyMode DotAlgorithm DotAlgorithmPreset Tolerance"),
        ("ragged dots and ragged all-to-all", "RaggedDotDimensionNumbers ragged_all_to_all ragged_all_to_all_p "
         "ragged_dot ragged_dot_general"),
        ("random bit generation as a lax op", "RandomAlgorithm rng_bit_generator rng_bit_generator_p rng_uniform "
         "rng_uniform_p"),
        ("tokens and ordering ops", "after_all after_all_p create_token create_token_p"),
        ("primitive objects numax keeps under other names or has not split out", "all_to_all_p approx_top_k_p "
         "bessel_i0e_p bessel_i1e_p copy_p device_put_p eq_to_p igamma_grad_a_p igamma_p igammac_p le_to_p lt_to_p "
         "mulhi_p ppermute_p regularized_incomplete_beta_p scatter_sub_p select_and_gather_add_p "
         "select_and_scatter_add_p select_and_scatter_p sharding_constraint_p split_p square_p stack_p tile_p "
         "unstack_p zeta_p"),
        ("point-to-point sends and device-varying broadcasts", "pbroadcast precv psend"),
        ("jax 0.10's newest ops", "broadcast_like composite dce_sink dce_sink_p platform_dependent scaled_dot "
         "scatter_apply shape_as_value stage stage_p"),
    ],
    "jax.lax.linalg": [
        ("algorithm selection enums", "EigImplementation EighImplementation SvdAlgorithm"),
        ("decompositions numax does not have", "cholesky_update cholesky_update_p hessenberg hessenberg_p ormqr "
         "ormqr_p qdwh schur schur_p symmetric_product symmetric_product_p tridiagonal tridiagonal_p "
         "tridiagonal_solve tridiagonal_solve_p"),
    ],
    "jax.nn": [
        ("scaled (quantized) dot products", "get_scaled_dot_general_config scaled_dot_general scaled_matmul"),
    ],
    "jax.scipy": [
        ("scipy submodules numax has no counterpart of", "cluster fft integrate interpolate ndimage sparse"),
    ],
    "jax.scipy.special": [
        ("special functions not written yet", "bessel_jn dawsn expn fresnel hyp1f1 hyp2f1 owens_t sici sph_harm_y "
         "wofz"),
    ],
    "jax.scipy.linalg": [
        ("special matrices", "convolution_matrix dft fiedler_companion invhilbert invpascal pascal"),
        ("matrix functions and decompositions", "eigh_tridiagonal expm expm_frechet funm hessenberg polar "
         "qr_multiply rsf2csf schur solve_sylvester sqrtm"),
    ],
    "jax.scipy.stats": [
        ("distributions not written yet", "beta betabinom binom cauchy chi2 dirichlet gamma gennorm geom gumbel_l "
         "gumbel_r laplace logistic multinomial nbinom pareto poisson t truncnorm vonmises wrapcauchy"),
        ("statistics functions", "gaussian_kde mode rankdata sem"),
    ],
    "jax.tree_util": [
        ("jax's registry object (numax keeps one registry, not exposed)", "default_registry"),
    ],
    "jax.sharding": [
        ("abstract devices and manual axis types", "AbstractDevice ManualAxisType"),
    ],
    "jax.experimental": [
        ("extended arrays and the quasi-dynamic-data helpers of jax's hijax", "EArray primal_tangent_dtype"),
    ],
    "jax.experimental.hijax": [
        ("parts of jax's hijax that flax.nnx does not use", "HiPspec TransformedRef VJPHiPrimitive"),
    ],
    "jax.experimental.multihost_utils": [
        ("not written yet", "live_devices"),
    ],
    "jax.errors": [
        ("numax checks no key reuse (jax_debug_key_reuse is stored, not enforced)", "KeyReuseError"),
        ("numax has no program type checker raising it", "JaxprTypeError"),
    ],
    "jax.custom_derivatives": [
        ("not written yet", "linear_call remat_opt_p zero_from_primal"),
    ],
    "jax.extend": [
        ("extension modules numax has no counterpart of", "backend lowering mlir pallas random sharding xla"),
    ],
    "jax.extend.core": [
        ("tokens, effects and call primitives", "AbstractToken CallPrimitive Token call_impl no_effects"),
        ("jaxpr construction and checking", "DebugInfo DropVar JaxprTypeError check_jaxpr gensym new_jaxpr_eqn"),
        ("trace-state internals", "TraceTag set_current_trace take_current_trace nonempty_axis_env_DO_NOT_USE "
         "unsafe_am_i_under_a_jit_DO_NOT_USE unsafe_am_i_under_a_vmap_DO_NOT_USE unsafe_get_axis_names_DO_NOT_USE"),
        ("aval helpers", "array_types concrete_or_error primal_dtype_to_tangent_dtype valid_jaxtype"),
    ],
    "jax.interpreters": [
        ("jax's pxla and xla interpreters, and traceback_util", "pxla traceback_util xla"),
    ],
    "jax.interpreters.ad": [
        ("jvp tracing internals and linear rule helpers", "add_jaxvals add_jaxvals_p jvp linearize"),
    ],
    "jax.interpreters.batching": [
        ("batching helpers", "bdim_at_front broadcast defreducer register_vmappable unregister_vmappable"),
    ],
    "jax.interpreters.mlir": [
        ("lowering contexts and results", "ConstantHandler LoweringParameters LoweringResult Mesh SPMDAxisContext "
         "ShapePolyLoweringState ShardingContext Token TokenSet lowerable_effects register_constant_handler "
         "token_type DEVICE_TO_DEVICE_TYPE RECV_FROM_HOST_TYPE SEND_TO_HOST_TYPE"),
        ("IR building helpers", "aval_to_ir_types core_call_lowering dense_int_array dense_int_elements "
         "dtype_to_ir_type emit_python_callback flatten_ir_types flatten_ir_values i32_attr i64_attr ir ir_attribute "
         "ir_constants ir_tree_registry ir_type_handlers jaxpr_subcomp lower_jaxpr_to_fun lower_jaxpr_to_module "
         "make_ir_context merge_mlir_modules module_to_bytecode module_to_string shape_tensor "
         "unflatten_ir_values_like_types"),
    ],
    "jax.interpreters.partial_eval": [
        ("jax's partial-evaluation and dead-code rule tables (numax's partial evaluation keeps its own)",
         "custom_partial_eval_rules dce_jaxpr_call_rule dce_jaxpr_closed_call_rule dce_jaxpr_consts dce_rules "
         "partial_eval_jaxpr_custom_rules"),
    ],
    "jax.core": [
        ("not written yet", "ensure_compile_time_eval eval_context max_dim min_dim"),
    ],
    "jax.debug": [
        ("debug effects and sharding inspection", "DebugEffect OrderedDebugEffect inspect_array_sharding"),
    ],
    "jax.ref": [
        ("explicit allocation and freeing of references", "empty_ref free_ref"),
    ],
}

# Public names of jax's modules that are the module's own imports, not API (jax's multihost_utils imports its
# helpers under public names): not checked.
NOT_API = {
    "jax.experimental.multihost_utils": (
        "P ProcessFailureError ad array batching core distributed global_array_to_host_local_array_impl "
        "global_array_to_host_local_array_p gtl_abstract_eval host_local_array_to_global_array_impl "
        "host_local_array_to_global_array_p jax jnp ltg_abstract_eval ltg_batcher mlir pjit_lib prng pxla "
        "safe_zip sharding_impls tree_flatten tree_unflatten xla_bridge xla_client"),
}


def _kind(value):
    if isinstance(value, types.ModuleType):
        return "module"
    if isinstance(value, type):
        return "class"
    return "callable" if callable(value) else "value"


def _is_foreign(value):
    """A name that a jax module binds to the standard library's objects (`annotations`, `Any`, `partial`, `os`)
    or to a module outside jax and jaxlib: the module's imports, not its API."""
    if isinstance(value, types.ModuleType):
        return value.__name__.split(".")[0] not in ("jax", "jaxlib")
    if isinstance(value, __future__._Feature):
        return True
    module = getattr(value, "__module__", None) if callable(value) else None  # (a plain value is API)
    return isinstance(module, str) and module.split(".")[0] in sys.stdlib_module_names


def _jax_surface():
    """{module: {public name: kind}}, each module's names read right after importing it."""
    surface = {}
    for path in MODULES:
        module = importlib.import_module(path)
        surface[path] = {name: _kind(getattr(module, name)) for name in dir(module)
                         if not name.startswith("_") and not _is_foreign(getattr(module, name))}
    return surface


def _numax_surface(wanted):
    """{module: {name: kind or None (missing)}} under numax.compat for the names of `wanted`; a module numax
    lacks maps to None."""
    import numax.compat

    numax.compat.install()
    surface = {}
    for path in MODULES:
        try:
            module = importlib.import_module(path)
        except ModuleNotFoundError:
            surface[path] = None
            continue
        surface[path] = {name: _kind(getattr(module, name)) if hasattr(module, name) else None
                         for name in wanted[path]}
    return surface


def _run_fresh(side, stdin=""):
    finished = subprocess.run([sys.executable, __file__, side], input=stdin, capture_output=True, text=True,
                              timeout=300)
    assert finished.returncode == 0, finished.stderr
    return finished.stdout


@pytest.fixture(scope="module")
def surfaces():
    jax_text = _run_fresh("jax")
    return json.loads(jax_text), json.loads(_run_fresh("numax", jax_text))


def _table(table, path):
    return {name for _, names in table.get(path, ()) for name in names.split()}


def _not_api(path):
    return set(NOT_API.get(path, "").split())


def test_tables_name_modules_checked_here():
    assert set(NOT_YET) <= set(MODULES) and set(NOT_API) <= set(MODULES)
    for path, groups in NOT_YET.items():
        names = [name for _, text in groups for name in text.split()]
        assert len(names) == len(set(names)), f"{path}: a name is listed twice"
        assert all(reason for reason, _ in groups)


@pytest.mark.parametrize("path", MODULES)
def test_numax_has_jax_public_names(surfaces, path):
    jax_names, numax_names = surfaces
    listed, not_api = _table(NOT_YET, path), _not_api(path)
    stale = (listed | not_api) - set(jax_names[path])
    assert not stale, f"{path}: listed names that jax lacks: {sorted(stale)}"
    checked = set(jax_names[path]) - not_api
    have = set() if numax_names[path] is None else {n for n in checked if numax_names[path][n] is not None}
    missing = checked - have - listed
    assert not missing, (f"numax's {path} lacks jax's public names {sorted(missing)}: add them, or list them in "
                         "NOT_YET with the reason")
    landed = listed & have
    assert not landed, f"numax's {path} now has {sorted(landed)}: remove them from NOT_YET"


@pytest.mark.parametrize("path", MODULES)
def test_kinds_agree(surfaces, path):
    """A jax module is a module in numax; a jax function or class is callable in numax."""
    jax_names, numax_names = surfaces
    if numax_names[path] is None:
        pytest.skip(f"numax has no {path} (the test above lists its names)")
    wrong = {}
    for name, jax_kind in jax_names[path].items():
        numax_kind = numax_names[path].get(name)
        if numax_kind is None:
            continue
        if (jax_kind == "module") != (numax_kind == "module") or (
                jax_kind in ("class", "callable") and numax_kind not in ("class", "callable")):
            wrong[name] = (jax_kind, numax_kind)
    assert not wrong, f"{path}: (jax's kind, numax's kind) differ: {wrong}"


def _report():
    """What NOT_YET should say now: per module, the names numax lacks that it does not list, and the listed names
    that numax has (`python tests/test_public_surface.py report`)."""
    jax_text = _run_fresh("jax")
    jax_names, numax_names = json.loads(jax_text), json.loads(_run_fresh("numax", jax_text))
    for path in MODULES:
        have = {n for n, kind in (numax_names[path] or {}).items() if kind is not None}
        listed, checked = _table(NOT_YET, path), set(jax_names[path]) - _not_api(path)
        for what, names in (("missing, not listed", checked - have - listed), ("listed, now present", listed & have)):
            if names:
                print(f"{path}: {what}: {' '.join(sorted(names))}")


if __name__ == "__main__":
    if sys.argv[1] == "jax":
        json.dump(_jax_surface(), sys.stdout)
    elif sys.argv[1] == "numax":
        json.dump(_numax_surface(json.load(sys.stdin)), sys.stdout)
    else:
        _report()
