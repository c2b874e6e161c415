"""`numax.experimental.checkify`: run-time checks as values (`checkify`, `check`, the error sets, `Error`),
as `jax.experimental.checkify`. The transformation lives in numax.transforms.checkify."""

from numax.transforms.checkify import (  # noqa: F401
    DivisionByZeroError,
    Error,
    ErrorCategory,
    FailedCheckError,
    JaxRuntimeError,
    NaNError,
    OOBError,
    all_checks,
    automatic_checks,
    check,
    check_error,
    checkify,
    debug_check,
    div_checks,
    float_checks,
    index_checks,
    init_error,
    nan_checks,
    user_checks,
)
