"""`numax.lax`: the primitives, each defined once with its rules, and JAX-named wrappers over them.

The families every program needs (elementwise, shapes, slicing, reductions, dot, gather/scatter, control
flow) load with the package; the others load the first time one of their names is read (see the table at
the end).
"""

from ..core.lazy_imports import defer_imports as _defer_imports
from .conversions import bitcast_convert_type, convert_element_type, reduce_precision  # noqa: F401
from .elementwise import (  # noqa: F401
    RoundingMethod,
    abs,
    acos,
    acosh,
    add,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cbrt,
    ceil,
    clamp,
    clz,
    complex,
    conj,
    cos,
    cosh,
    digamma,
    div,
    eq,
    erf,
    erf_inv,
    erfc,
    exp,
    exp2,
    expm1,
    floor,
    ge,
    gt,
    imag,
    integer_pow,
    is_finite,
    le,
    lgamma,
    log,
    log1p,
    logistic,
    lt,
    max,
    min,
    mul,
    ne,
    neg,
    nextafter,
    polygamma,
    population_count,
    pow,
    real,
    rem,
    round,
    rsqrt,
    select,
    select_n,
    shift_left,
    shift_right_arithmetic,
    shift_right_logical,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    sub,
    tan,
    tanh,
)
from .gather_scatter import (  # noqa: F401
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather,
    scatter,
    scatter_add,
    scatter_max,
    scatter_min,
    scatter_mul,
)
from .linear import Precision, dot, dot_general  # noqa: F401
from .reductions import (  # noqa: F401
    argmax,
    argmin,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_sum,
    reduce_xor,
)
from .shapes import (  # noqa: F401
    broadcast,
    broadcast_in_dim,
    broadcast_to_rank,
    broadcasted_iota,
    concatenate,
    expand_dims,
    full,
    full_like,
    iota,
    pad,
    reshape,
    rev,
    squeeze,
    transpose,
)
from .slicing import (  # noqa: F401
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    index_in_dim,
    slice,
    slice_in_dim,
)

# JAX's names for the logical/bitwise wrappers.
not_ = bitwise_not
and_ = bitwise_and
or_ = bitwise_or
xor = bitwise_xor

from .ad import stop_gradient  # noqa: E402, F401

# Modules named like one of their functions load now: imported later by any code, they would be bound here under
# that name in place of the function (`numax.lax.fft`, `numax.lax.while_loop` are the functions).
from .conditionals import cond, switch  # noqa: E402, F401  (while_loop builds on it)
from .fft import FftType, fft, fft_p  # noqa: E402, F401
from .while_loop import fori_loop, while_loop  # noqa: E402, F401

# The families below load on first use (`numax.lax.qr`, `numax.lax.scan`, `numax.lax.linalg`, ...): each maps
# to the names it provides (its `__all__`; tests/test_import.py keeps the two equal). `primitive_table`
# gathers every family's primitives under JAX's `*_p` names, so reading one of those loads them all.
_defer_imports(globals(), {
    "callbacks": ("pure_callback", "debug_callback"),
    "collectives": ("all_gather", "axis_index", "axis_size", "pcast", "pmax", "pmean", "pmin", "psum", "psum_scatter",
                    "pvary"),
    "collectives_permute": ("all_to_all", "ppermute", "pshuffle", "pswapaxes"),
    "convolution": ("ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_permutations",
        "conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose", "conv_general_dilated_p"),
    "conv_shapes": ("conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose_shape_tuple"),
    "cumulative": ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "cumsum_p", "cumprod_p", "cummax_p",
        "cummin_p", "cumlogsumexp_p"),
    "generic_reduce": ("reduce", "reduce_p"),
    "sharding_constraint": ("with_sharding_constraint", "reshard"),
    "lax_extras": ("DotDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "PrecisionLike", "approx_max_k",
        "approx_min_k", "batch_matmul", "broadcast_shapes", "collapse", "conv_general_dilated_local",
        "conv_general_dilated_patches", "dtype", "empty", "index_take", "mulhi",
        "optimization_barrier", "optimization_barrier_p", "reciprocal",
        "scatter_sub", "split", "stack", "tile", "unstack"),
    "linalg": ("cholesky", "eig", "eigh", "householder_product", "lu", "lu_pivots_to_permutation", "qr", "svd",
        "triangular_solve"),
    "linear_solve": ("custom_linear_solve", "custom_root", "linear_solve_p"),
    "loops": ("scan", "map", "associative_scan", "scan_p"),
    "primitive_table": ("abs_p", "acos_p", "acosh_p", "add_p", "all_gather_p", "and_p", "argmax_p", "argmin_p",
        "asin_p", "asinh_p", "atan2_p", "atan_p", "atanh_p", "axis_index_p", "bitcast_convert_type_p",
        "broadcast_in_dim_p", "cbrt_p", "ceil_p", "clamp_p", "clz_p", "complex_p", "concatenate_p", "cond_p",
        "conj_p", "convert_element_type_p", "cos_p", "cosh_p", "digamma_p", "div_p", "dot_general_p",
        "dynamic_slice_p", "dynamic_update_slice_p", "eq_p", "erf_inv_p", "erf_p", "erfc_p", "exp2_p", "exp_p",
        "expm1_p", "floor_p", "gather_p", "ge_p", "gt_p", "imag_p", "integer_pow_p", "iota_p", "is_finite_p",
        "le_p", "lgamma_p", "log1p_p", "log_p", "logistic_p", "lt_p", "max_p", "min_p", "mul_p", "ne_p", "neg_p",
        "nextafter_p", "not_p", "or_p", "pad_p", "pmax_p", "pmin_p", "polygamma_p", "population_count_p", "pow_p",
        "psum_p", "real_p", "reduce_and_p", "reduce_max_p", "reduce_min_p", "reduce_or_p", "reduce_precision_p",
        "reduce_prod_p", "reduce_sum_p", "reduce_xor_p", "rem_p", "reshape_p", "rev_p", "round_p", "rsqrt_p",
        "scatter_add_p", "scatter_max_p", "scatter_min_p", "scatter_mul_p", "scatter_p", "select_n_p",
        "shift_left_p", "shift_right_arithmetic_p", "shift_right_logical_p", "sign_p", "sin_p", "sinh_p", "slice_p",
        "sqrt_p", "squeeze_p", "stop_gradient_p", "sub_p", "tan_p", "tanh_p", "transpose_p", "while_p", "xor_p"),
    "sorting": ("sort", "sort_key_val", "top_k", "sort_p", "top_k_p"),
    "special": ("bessel_i0e", "bessel_i1e", "betainc", "igamma", "igamma_grad_a", "igammac", "random_gamma_grad",
        "zeta"),
    "windows": ("PaddingType", "padtype_to_pads", "reduce_window", "reduce_window_shape_tuple", "reduce_window_sum",
        "reduce_window_max", "reduce_window_min", "reduce_window_p", "reduce_window_sum_p", "reduce_window_max_p",
        "reduce_window_min_p"),
    "prng": (),  # threefry2x32, reached as numax.lax.prng (numax.random builds on it)
})
