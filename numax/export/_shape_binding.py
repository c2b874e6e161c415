"""Binding a shape-polymorphic export's dimension variables at a call: `bind_dimensions` solves them from the
actual shapes as jax does (from dimensions linear in one unknown variable, one at a time), checks the rest and
the scope's constraints, and raises jax's errors naming the argument leaves ("args[0].shape[2]")."""

from ..core import pytree as tree
from ..transforms.jit import ShapeDtypeStruct
from ._shape_poly import DimExpr, bounds

_SHAPE_ASSERTION_DOCS = "https://docs.jax.dev/en/latest/export/shape_poly.html#shape-assertion-errors"
_SOLVABLE_DOCS = ("https://docs.jax.dev/en/latest/export/shape_poly.html"
                  "#dimension-variables-must-be-solvable-from-the-input-shapes")


class _LeafNames:
    """jax's name of each leaf of an `(args, kwargs)` tree ("args[0]", "kwargs['b']", "args[1][0]"), worked out
    on first use (only errors and symbolic shapes need them). The tree is rebuilt over ShapeDtypeStructs of the
    leaves' avals, which custom nodes whose auxiliary data depends on their children's shapes accept."""

    def __init__(self, in_tree, avals):
        self.in_tree, self.avals, self.names = in_tree, avals, None

    def __getitem__(self, i):
        if self.names is None:
            structs = [ShapeDtypeStruct(a.shape, a.dtype) for a in self.avals]
            paths = [path for path, _ in tree.tree_flatten_with_path(self.in_tree.unflatten(structs))[0]]
            self.names = [("args" if path[0].idx == 0 else "kwargs") + tree.keystr(path[1:]) for path in paths]
        return self.names[i]


def bind_dimensions(exported_avals, actual_avals, in_tree) -> dict:
    """{variable: size} that makes the exported avals (symbolic shapes allowed) those of the actual arguments
    (whose sizes may be symbolic too), solved as jax does: from dimensions linear in one unknown variable, one at
    a time. jax's ValueErrors for a rank, dtype or constant dimension mismatch, and for sizes the symbolic shapes
    cannot take."""
    names = _LeafNames(in_tree, actual_avals)
    symbolic = []  # (dimension, actual size, leaf index, axis)
    for leaf, (exported, actual) in enumerate(zip(exported_avals, actual_avals)):
        if len(exported.shape) != len(actual.shape):
            raise ValueError(f"Rank mismatch for {names[leaf]}: expected {exported.shape} and called with "
                             f"{actual.shape}")
        if exported.dtype != actual.dtype:
            raise ValueError(f"Dtype mismatch for {names[leaf]}: expected {exported.dtype} and called with "
                             f"{actual.dtype}")
        for i, (dim, size) in enumerate(zip(exported.shape, actual.shape)):
            if isinstance(dim, DimExpr):
                symbolic.append((dim, size if isinstance(size, DimExpr) else int(size), leaf, i))
            elif isinstance(size, DimExpr) or dim != size:
                raise ValueError(f"Shape mismatch for {names[leaf]}.shape[{i}] (expected same constant): expected "
                                 f"{exported.shape} and called with {actual.shape}")
    if not symbolic:
        return {}
    bindings, obtained = {}, []  # obtained: (variable, dimension, leaf, axis, size), in the order solved

    def where(leaf, axis):
        return f"{names[leaf]}.shape[{axis}]"

    def specifications():
        return ", ".join(f"{names[leaf]}.shape = {exported.shape}" for leaf, exported in enumerate(exported_avals)
                         if not all(isinstance(d, int) for d in exported.shape))

    def mismatch(reason, what="the polymorphic shapes specification"):
        solved = "".join(f"'{variable}' = {bindings[variable]} from specification '{dim}' for dimension "
                         f"{where(leaf, axis)} (= {size}), " for variable, dim, leaf, axis, size in obtained)
        return ValueError(f"Input shapes do not match {what}. {reason}. Using the following polymorphic shapes "
                          f"specifications: {specifications()}. Obtained dimension variables: {solved}. Please see "
                          f"{_SHAPE_ASSERTION_DOCS} for more details.")

    pending = list(symbolic)
    while True:
        solvable = next(((entry, _linear_in_one_unknown(entry[0], bindings)) for entry in pending
                         if _linear_in_one_unknown(entry[0], bindings) is not None), None)
        if solvable is None:
            break
        (dim, size, leaf, axis), (variable, coefficient, rest) = solvable
        pending.remove((dim, size, leaf, axis))
        remaining = size - _evaluate(rest, bindings)
        remainder = remaining % coefficient
        if not (isinstance(remainder, int) and remainder == 0):
            raise mismatch(f"Division had remainder {remainder} when computing the value of '{variable}'")
        bindings[variable] = remaining // coefficient
        obtained.append((variable, dim, leaf, axis, size))
        if bounds(bindings[variable])[0] < 1:
            raise mismatch(f"Expected value >= 1 for dimension variable '{variable}'")
    unsolved = set().union(*(dim.variables() for dim, _, _, _ in pending)) - bindings.keys()
    if unsolved:
        unprocessed = ", ".join(f"'{dim}' for dimension size {where(leaf, axis)}" for dim, _, leaf, axis in pending
                                if dim.variables() - bindings.keys())
        raise ValueError(f"Cannot solve for values of dimension variables {unsolved}. We can only solve linear "
                         f"uni-variate constraints. Using the following polymorphic shapes specifications: "
                         f"{specifications()}. Unprocessed specifications: {unprocessed}. Please see "
                         f"{_SOLVABLE_DOCS} for more details.")
    for dim, size, leaf, axis in pending:
        expected = _evaluate(dim, bindings)
        if expected != size:
            raise mismatch(f"Found inconsistency between dimension size {where(leaf, axis)} (= {size}) and the "
                           f"specification '{dim}' (= {expected})")
    for scope in {id(dim.scope): dim.scope for dim, _, _, _ in symbolic}.values():
        if (violation := scope.violated(bindings)) is not None:
            constraint, expression, value = violation
            raise mismatch(f"Expected '{expression}' to be greater or equal to 0, but found {value}",
                           f"the symbolic shape constraint {constraint}")
    return bindings


def _linear_in_one_unknown(dim, bindings):
    """(variable, coefficient, rest) when `dim` is `coefficient * variable + rest`, with `variable` its only one
    not in `bindings` and appearing nowhere in `rest`; else None."""
    unknown = dim.variables() - bindings.keys()
    if len(unknown) != 1:
        return None
    variable, = unknown
    coefficient = dict(dim._terms).get(((variable, 1),), 0)
    rest = dim - coefficient * DimExpr.variable(variable, dim.scope)
    if not coefficient or (isinstance(rest, DimExpr) and variable in rest.variables()):
        return None
    return variable, coefficient, rest


def _evaluate(value, bindings):
    return value.evaluate(bindings) if isinstance(value, DimExpr) else value


def substitute_shape(shape, bindings) -> tuple:
    """`shape` with every symbolic dimension evaluated for `bindings` ({variable: int or DimExpr})."""
    return tuple(dim.evaluate(bindings) if isinstance(dim, DimExpr) else dim for dim in shape)
