"""`numax.lax`: the primitives, each defined once with its rules, and JAX-named wrappers over them."""

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
    bitcast_convert_type,
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
    convert_element_type,
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
    reduce_precision,
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
from .callbacks import *  # noqa: E402, F401, F403
from .collectives import *  # noqa: E402, F401, F403
from .conditionals import *  # noqa: E402, F401, F403
from .convolution import *  # noqa: E402, F401, F403
from .cumulative import *  # noqa: E402, F401, F403
from .fft import *  # noqa: E402, F401, F403
from .generic_reduce import *  # noqa: E402, F401, F403
from .lax_extras import *  # noqa: E402, F401, F403
from .linalg import *  # noqa: E402, F401, F403
from .linear_solve import *  # noqa: E402, F401, F403
from .loops import *  # noqa: E402, F401, F403
from .primitive_table import *  # noqa: E402, F401, F403
from .sorting import *  # noqa: E402, F401, F403
from .special import *  # noqa: E402, F401, F403
from .while_loop import *  # noqa: E402, F401, F403
from .windows import *  # noqa: E402, F401, F403
