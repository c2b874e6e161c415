"""Binding a shape-polymorphic export's dimension variables at a call: `bind_dimensions` solves them from the
actual shapes as jax does (by `solving_plan`: from dimensions linear in one unknown variable), checks the rest and
the scope's constraints, and raises jax's errors naming the argument leaves ("args[0].shape[2]");
`check_solvable` raises at export what no call could solve. The module itself computes the variables in the same
order (lowering/dynamic_shapes.py)."""

from ..core import pytree as tree
from ..core.ir import all_equations
from ..lowering.dynamic_shapes import solving_plan, unexpected_dim_var
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

    steps, unsolved = solving_plan([dim for dim, _, _, _ in symbolic])
    if unsolved:
        variables = set().union(*(symbolic[i][0].variables() for i in unsolved)) - {f[0] for _, f in steps if f}
        unprocessed = ", ".join(f"'{symbolic[i][0]}' for dimension size {where(*symbolic[i][2:])}" for i in unsolved)
        raise ValueError(f"Cannot solve for values of dimension variables {variables}. We can only solve linear "
                         f"uni-variate constraints. Using the following polymorphic shapes specifications: "
                         f"{specifications()}. Unprocessed specifications: {unprocessed}. Please see "
                         f"{_SOLVABLE_DOCS} for more details.")
    # The checks in the plan's order, as jax makes them, each error naming the variables obtained until then.
    for index, form in steps:
        dim, size, leaf, axis = symbolic[index]
        if form is None:
            expected = _evaluate(dim, bindings)
            if expected != size:
                raise mismatch(f"Found inconsistency between dimension size {where(leaf, axis)} (= {size}) and "
                               f"the specification '{dim}' (= {expected})")
            continue
        variable, coefficient, rest = form
        remaining = size - _evaluate(rest, bindings)
        remainder = remaining % coefficient
        if not (isinstance(remainder, int) and remainder == 0):
            raise mismatch(f"Division had remainder {remainder} when computing the value of '{variable}'")
        bindings[variable] = remaining // coefficient
        obtained.append((variable, dim, leaf, axis, size))
        if bounds(bindings[variable])[0] < 1:
            raise mismatch(f"Expected value >= 1 for dimension variable '{variable}'")
    for scope in {id(dim.scope): dim.scope for dim, _, _, _ in symbolic}.values():
        if (violation := scope.violated(bindings)) is not None:
            constraint, expression, value = violation
            raise mismatch(f"Expected '{expression}' to be greater or equal to 0, but found {value}",
                           f"the symbolic shape constraint {constraint}")
    return bindings


def check_solvable(closed, in_tree):
    """At export of a closed program, jax's ValueError ("Cannot solve for values of dimension variables") when a
    dimension variable of its argument shapes cannot be solved from them (it appears only in non-linear
    dimensions, like `a^2`): binding the symbolic shapes to themselves solves every variable exactly when some
    call could. jax's UnexpectedDimVar for a variable that no argument shape gives, in a shape the program
    computes (a symbolic `k` passed as a static argument) or in a constraint (`m >= m1` with no `m1`)."""
    avals = closed.program.in_avals
    bindings = bind_dimensions(avals, avals, in_tree)
    scopes = {id(d.scope): d.scope for aval in avals for d in aval.shape if isinstance(d, DimExpr)}
    used = _variables_in(closed.program).union(*(scope.variables() for scope in scopes.values()))
    if missing := used - bindings.keys():
        raise unexpected_dim_var(missing, bindings)


def _variables_in(program) -> set:
    """The dimension variables in the shapes of the values a program computes, in its nested programs too."""
    names = set()
    for eqn in all_equations(program):
        for var in eqn.outvars:
            names.update(*(d.variables() for d in getattr(var.aval, "shape", ()) if isinstance(d, DimExpr)))
    return names


def _evaluate(value, bindings):
    return value.evaluate(bindings) if isinstance(value, DimExpr) else value


def substitute_shape(shape, bindings) -> tuple:
    """`shape` with every symbolic dimension evaluated for `bindings` ({variable: int or DimExpr})."""
    return tuple(dim.evaluate(bindings) if isinstance(dim, DimExpr) else dim for dim in shape)
