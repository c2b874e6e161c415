"""Symbolic dimensions for shape-polymorphic exports: `DimExpr`, `SymbolicScope`, `symbolic_shape`, and their
errors.

A `DimExpr` is an integer polynomial over dimension variables (each at least 1), whose atoms may also be
`floordiv(a, b)` and `mod(a, b)` of other expressions. Arithmetic with ints and other expressions gives
normalized expressions (an expression that is a constant is a plain int), `==` compares normalized forms, and
`<`, `<=`, `>`, `>=` are decided from bounds that hold whenever every variable is at least 1 and the
constraints of the expression's `SymbolicScope` hold, raising `InconclusiveDimensionOperation` when the bounds
do not decide. Arithmetic with a float or a numpy array uses the dimension as a value, as jax's does.
Expressions print in JAX's syntax ("2*b + 1", "b^2", "floordiv(b, 2)") and `symbolic_shape` parses it back.
The core learns of DimExpr through its registries (`symbolic_dim_types`, `aval_of_type`: a dimension used as a
value is an integer scalar); lowering computes dimensions through `evaluate_with` (lowering/dynamic_shapes.py).
A call's dimension variables are solved from its shapes in `_shape_binding.py`.
"""

import math
import re

import numpy as np

from ..core import dtypes
from ..core import pytree as tree
from ..core.avals import InconclusiveDimensionOperation, ShapedArray, aval_of_type, get_aval, symbolic_dim_types
from ..lowering.dynamic_shapes import UnexpectedDimVar  # noqa: F401 (raised in lowering; jax's shape_poly has it)
from ..transforms.jit import ShapeDtypeStruct

_INFINITY = math.inf


def _atom_key(atom):
    """A total order of atoms: variables by name, then floordiv and mod by their printed operands."""
    if isinstance(atom, str):
        return (0, atom)
    operation, numerator, denominator = atom
    return (1, operation, str(numerator), str(denominator))


def _monomial_key(monomial):
    """Higher degree first, then by atoms: the printed order of terms."""
    degree = sum(power for _, power in monomial)
    return (-degree, [(_atom_key(atom), -power) for atom, power in monomial])


def _monomial_product(left, right):
    powers = dict(left)
    for atom, power in right:
        powers[atom] = powers.get(atom, 0) + power
    return tuple(sorted(powers.items(), key=lambda item: _atom_key(item[0])))


def _terms_of(value):
    """{monomial: coefficient} of an int or a DimExpr (the constant's monomial is ())."""
    if isinstance(value, DimExpr):
        return dict(value._terms)
    return {(): int(value)} if value else {}


def _normalized(terms, scope=None):
    """A DimExpr of `terms` in `scope` (by default the shared one), rewritten by the scope's equality constraints,
    zero coefficients dropped; or an int when no variable is left."""
    scope = _DEFAULT_SCOPE if scope is None else scope
    terms = {monomial: coefficient for monomial, coefficient in scope._rewritten(terms).items() if coefficient}
    if not terms:
        return 0
    if list(terms) == [()]:
        return terms[()]
    expression = DimExpr.__new__(DimExpr)
    expression._terms = tuple(sorted(terms.items(), key=lambda item: _monomial_key(item[0])))
    expression._hash = hash(expression._terms)
    expression._scope = scope
    return expression


def _common_scope(*values):
    """The scope of the DimExprs among `values` (None if none is one); ValueError when they come from different
    scopes, as jax's: constraints hold only within their scope."""
    expressions = [v for v in values if isinstance(v, DimExpr)]
    for other in expressions[1:]:
        if other._scope is not expressions[0]._scope:
            raise ValueError(f"Invalid mixing of symbolic scopes: '{expressions[0]}' and '{other}' come from "
                             "different SymbolicScopes (symbolic_shape calls with their own constraints or scope): "
                             "create them with one `scope=`. See https://docs.jax.dev/en/latest/export/"
                             "shape_poly.html#user-specified-symbolic-constraints.")
    return expressions[0]._scope if expressions else None


def _as_dim_operand(value):
    """`value` as an int or DimExpr, or None when arithmetic with it is not dimension arithmetic (arrays and
    floats: their operators then use the dimension as a value)."""
    if isinstance(value, DimExpr | int | np.integer) and not isinstance(value, bool):
        return value if isinstance(value, DimExpr) else int(value)
    return None


def _multiply_intervals(a, b):
    products = [(x * y if x and y else 0) for x in a for y in b]  # 0 * inf is 0 for bounds of integers
    return min(products), max(products)


def _atom_bounds(atom):
    if isinstance(atom, str):
        return 1, _INFINITY
    operation, numerator, denominator = atom
    if isinstance(denominator, DimExpr):
        # a positive divisor: a non-negative numerator gives a quotient in [0, numerator] and a remainder below
        # both; other signs are left unbounded
        (low, high), divisor_low = bounds(numerator), bounds(denominator)[0]
        if divisor_low < 1 or low < 0:
            return -_INFINITY, _INFINITY
        return (0, high) if operation == "floordiv" else (0, min(high, bounds(denominator)[1] - 1))
    if denominator <= 0:
        return -_INFINITY, _INFINITY
    if operation == "mod":
        return 0, denominator - 1
    low, high = bounds(numerator)
    return (low if math.isinf(low) else low // denominator), (high if math.isinf(high) else high // denominator)


def bounds(value):
    """(lowest, highest) values an int or DimExpr can take when every variable is at least 1 and its scope's
    inequality constraints hold (may be loose). A constraint C >= 0 (or a sum of two) bounds e from below by
    the lowest value of e - C, and from above by minus the lowest of -e - C."""
    low, high = _plain_bounds(value)
    if isinstance(value, DimExpr):
        for constraint in value._scope._combinations():
            low = max(low, _plain_bounds(value - constraint)[0])
            high = min(high, -_plain_bounds(-value - constraint)[0])
    return low, high


def _plain_bounds(value):
    """bounds() from the variables being at least 1 alone."""
    if not isinstance(value, DimExpr):
        return value, value
    low = high = 0
    for monomial, coefficient in value._terms:
        interval = (1, 1)
        for atom, power in monomial:
            for _ in range(power):
                interval = _multiply_intervals(interval, _atom_bounds(atom))
        term = _multiply_intervals(interval, (coefficient, coefficient))
        low, high = low + term[0], high + term[1]
    return low, high


def _exact_quotient(numerator, denominator):
    """numerator / denominator when the polynomial division is exact (an int or DimExpr), else None: long
    division by the divisor's leading term in graded lexicographic order, so `(b + 2) * (b + 10) // (b + 2)` is
    `b + 10`, as jax divides."""
    divisor, remainder = _terms_of(denominator), _terms_of(numerator)
    if not divisor:
        return None
    atoms = sorted({atom for monomial in (*divisor, *remainder) for atom, _ in monomial}, key=_atom_key)

    def order(monomial):  # a monomial order: products keep it, so each step lowers the remainder's leading term
        powers = dict(monomial)
        return sum(powers.values()), [powers.get(atom, 0) for atom in atoms]

    lead = max(divisor, key=order)
    lead_powers = dict(lead)
    quotient = {}
    while remainder:
        top = max(remainder, key=order)
        powers = dict(top)
        if remainder[top] % divisor[lead] or any(powers.get(a, 0) < p for a, p in lead_powers.items()):
            return None
        factor = tuple(sorted(((a, p - lead_powers.get(a, 0)) for a, p in powers.items()
                               if p != lead_powers.get(a, 0)), key=lambda item: _atom_key(item[0])))
        factor_coefficient = remainder[top] // divisor[lead]
        quotient[factor] = factor_coefficient
        for monomial, coefficient in divisor.items():
            product = _monomial_product(factor, monomial)
            remainder[product] = remainder.get(product, 0) - factor_coefficient * coefficient
            if not remainder[product]:
                del remainder[product]
    return _normalized(quotient, _common_scope(numerator, denominator))


def _divide(numerator, denominator, operation):
    """`numerator // denominator` or `numerator % denominator` for ints and DimExprs."""
    if not isinstance(numerator, DimExpr) and not isinstance(denominator, DimExpr):
        return numerator // denominator if operation == "floordiv" else numerator % denominator
    if isinstance(denominator, int) and denominator == 0:
        raise ZeroDivisionError(f"division of the dimension {numerator} by zero")
    quotient = _exact_quotient(numerator, denominator)
    if quotient is not None:
        return quotient if operation == "floordiv" else 0
    return _normalized({(((operation, numerator, denominator), 1),): 1}, _common_scope(numerator, denominator))


def _division_operator(operation, reflected):
    """DimExpr's `//` or `%` ("floordiv" or "mod"), or its reflected form: dimension arithmetic with ints and
    DimExprs, NotImplemented for other operands."""
    def operator(self, other):
        other = _as_dim_operand(other)
        if other is None:
            return NotImplemented
        return _divide(other, self, operation) if reflected else _divide(self, other, operation)

    return operator


def _as_value(dim):
    """The dimension used as a value: a weakly typed integer scalar of the traced program (jax's
    dimension_as_value)."""
    import numax.numpy as jnp  # the export package sits above numpy, which must not import it back

    return jnp.asarray(0) + dim


def _value_fallback(operator, name, reflected):
    """`operator` (DimExpr arithmetic), falling back for a float or complex scalar or a numpy array operand (which
    would not use the dimension as a value itself) to arithmetic on the dimension as a value, as jax does: `5. + b`
    and `b - np.arange(5)` are arrays."""
    def with_fallback(self, other):
        result = operator(self, other)
        if result is NotImplemented and isinstance(other, float | complex | np.ndarray | np.generic):
            value = _as_value(self)
            return getattr(value, f"__r{name}__" if reflected else f"__{name}__")(other)
        return result

    return with_fallback


class DimExpr:
    """A symbolic dimension: an integer polynomial of dimension variables (see the module docstring)."""

    __slots__ = ("_terms", "_hash", "_scope")

    @property
    def dtype(self):
        """The dtype of the dimension used as a value (read by dtype promotion)."""
        return dtypes.default_int_dtype()

    weak_type = True  # used as a value, a dimension promotes as a Python int does

    @staticmethod
    def variable(name: str, scope=None) -> "DimExpr":
        return _normalized({((name, 1),): 1}, scope)

    @property
    def scope(self) -> "SymbolicScope":
        """The SymbolicScope this expression's variables and constraints belong to."""
        return self._scope

    # --- arithmetic -----------------------------------------------------------------------------------------
    def __add__(self, other):
        other = _as_dim_operand(other)
        if other is None:
            return NotImplemented
        terms = _terms_of(self)
        for monomial, coefficient in _terms_of(other).items():
            terms[monomial] = terms.get(monomial, 0) + coefficient
        return _normalized(terms, _common_scope(self, other))

    __radd__ = __add__

    def __neg__(self):
        return _normalized({monomial: -coefficient for monomial, coefficient in self._terms}, self._scope)

    def __sub__(self, other):
        other = _as_dim_operand(other)
        return NotImplemented if other is None else self + (-other)

    def __rsub__(self, other):
        other = _as_dim_operand(other)
        return NotImplemented if other is None else (-self) + other

    def __mul__(self, other):
        other = _as_dim_operand(other)
        if other is None:
            return NotImplemented
        terms = {}
        for left, left_coefficient in self._terms:
            for right, right_coefficient in _terms_of(other).items():
                monomial = _monomial_product(left, right)
                terms[monomial] = terms.get(monomial, 0) + left_coefficient * right_coefficient
        return _normalized(terms, _common_scope(self, other))

    __rmul__ = __mul__

    __floordiv__ = _division_operator("floordiv", reflected=False)
    __rfloordiv__ = _division_operator("floordiv", reflected=True)
    __mod__ = _division_operator("mod", reflected=False)
    __rmod__ = _division_operator("mod", reflected=True)

    def __truediv__(self, other):
        return _as_value(self) / other

    def __rtruediv__(self, other):
        return other / _as_value(self)

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self

    # --- comparisons ------------------------------------------------------------------------------------------
    def __eq__(self, other):
        # Structural, as JAX's: `b == 1` is False although it holds when b is 1 (`==` must not raise: hashing
        # and `in` use it).
        other = _as_dim_operand(other)
        return other is not None and isinstance(other, DimExpr) and self._terms == other._terms

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return self._hash

    def _compare(self, other, operation, holds):
        """`holds(low, high)` of (self - other)'s bounds: True, False, or None when undecided."""
        other = _as_dim_operand(other)
        if other is None:
            return NotImplemented
        low, high = bounds(self - other)
        answer = holds(low, high)
        if answer is None:
            raise InconclusiveDimensionOperation(
                f"symbolic dimension comparison '{self}' {operation} '{other}' is inconclusive: it depends on "
                "the values of the dimension variables")
        return answer

    def __ge__(self, other):
        return self._compare(other, ">=", lambda low, high: True if low >= 0 else False if high < 0 else None)

    def __gt__(self, other):
        return self._compare(other, ">", lambda low, high: True if low > 0 else False if high <= 0 else None)

    def __le__(self, other):
        return self._compare(other, "<=", lambda low, high: True if high <= 0 else False if low > 0 else None)

    def __lt__(self, other):
        return self._compare(other, "<", lambda low, high: True if high < 0 else False if low >= 0 else None)

    def __int__(self):
        raise InconclusiveDimensionOperation(f"symbolic dimension '{self}' used where an integer is needed")

    __index__ = __int__

    # --- inspection -------------------------------------------------------------------------------------------
    def variables(self) -> set:
        """The names of the dimension variables this expression uses (inside floordiv and mod too)."""
        names = set()
        for monomial, _ in self._terms:
            for atom, _ in monomial:
                if isinstance(atom, str):
                    names.add(atom)
                else:
                    names.update(*(operand.variables() for operand in atom[1:] if isinstance(operand, DimExpr)))
        return names

    def linear_in_one_unknown(self, known) -> tuple | None:
        """(variable, coefficient, rest) when this expression is `coefficient * variable + rest`, with `variable`
        its only variable not in `known` and appearing nowhere in `rest`; else None. The form jax solves a
        dimension variable from: the variable's value is (size - rest) // coefficient."""
        unknown = self.variables() - set(known)
        if len(unknown) != 1:
            return None
        variable, = unknown
        coefficient = dict(self._terms).get(((variable, 1),), 0)
        rest = self - coefficient * DimExpr.variable(variable, self._scope)
        if not coefficient or (isinstance(rest, DimExpr) and variable in rest.variables()):
            return None
        return variable, coefficient, rest

    def evaluate(self, values: dict) -> int:
        """The integer this expression takes for the variables' `values` ({name: int})."""
        return self.evaluate_with(values, add=lambda a, b: a + b, multiply=lambda a, b: a * b,
                                  divide=lambda a, b, operation: a // b if operation == "floordiv" else a % b,
                                  constant=int)

    def evaluate_with(self, variables, *, add, multiply, divide, constant):
        """The expression computed by the given operations, from `variables` ({name: value}) and `constant(int)`:
        one walk serves integer evaluation and the emission of StableHLO that computes a dimension."""

        def operand(value):
            if isinstance(value, DimExpr):
                return value.evaluate_with(variables, add=add, multiply=multiply, divide=divide, constant=constant)
            return constant(value)

        total = None
        for monomial, coefficient in self._terms:
            term = None if coefficient == 1 else constant(coefficient)
            for atom, power in monomial:
                if isinstance(atom, str):
                    factor = variables[atom]
                else:
                    factor = divide(operand(atom[1]), operand(atom[2]), atom[0])
                for _ in range(power):
                    term = factor if term is None else multiply(term, factor)
            term = constant(1) if term is None else term  # a constant term of coefficient 1
            total = term if total is None else add(total, term)
        return total

    def __str__(self):
        pieces = []
        for monomial, coefficient in self._terms:
            factors = [_atom_text(atom) + (f"^{power}" if power != 1 else "") for atom, power in monomial]
            magnitude = abs(coefficient)
            text = "*".join(([str(magnitude)] if magnitude != 1 or not factors else []) + factors)
            if pieces:
                pieces.append(("- " if coefficient < 0 else "+ ") + text)
            else:
                pieces.append(("- " if coefficient < 0 else "") + text)
        return " ".join(pieces)

    __repr__ = __str__


def _atom_text(atom):
    if isinstance(atom, str):
        return atom
    operation, numerator, denominator = atom
    return f"{operation}({numerator}, {denominator})"


for _name in ("add", "sub", "mul", "floordiv", "mod"):
    for _reflected in (False, True):
        _attribute = f"__r{_name}__" if _reflected else f"__{_name}__"
        setattr(DimExpr, _attribute, _value_fallback(getattr(DimExpr, _attribute), _name, _reflected))

symbolic_dim_types.add(DimExpr)
# A dimension used as a value is a weakly typed scalar of the default integer type, as a Python int is (JAX's
# dimension_as_value): `labels % x.shape[0]` keeps the labels' dtype.
aval_of_type[DimExpr] = lambda dim: ShapedArray((), dtypes.default_int_dtype(), weak_type=True)


def is_symbolic_dim(value) -> bool:
    return isinstance(value, DimExpr)


# --- parsing --------------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(//|\.\.\.|[-+*%^(),]))")
_PLACEHOLDERS = ("_", "...")  # a dimension of the `like` shape, or all its remaining ones


class _Parser:
    """A recursive-descent parser of JAX's dimension syntax: sums of products of powers of atoms, where an
    atom is an integer, a variable, `floordiv(e, e)`, `mod(e, e)` or a parenthesized expression. With a `like`
    shape, a dimension may be `_` (like's dimension there) and the shape may end with `...` (like's remaining
    ones), and a constant dimension must equal like's."""

    def __init__(self, text, like=None, scope=None):
        self.text, self.scope = text, scope
        self.like = None if like is None else tuple(like)
        self.tokens = []
        position = 0
        while position < len(text.rstrip()):
            match = _TOKEN.match(text, position)
            if match is None:
                self.fail(f"unexpected character {text[position:].strip()[0]!r}")
            self.tokens.append(next(group for group in match.groups() if group is not None))
            position = match.end()
        self.index = 0

    def fail(self, reason):
        raise ValueError(f"invalid symbolic shape {self.text!r}: {reason}")

    def peek(self):
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self, expected=None):
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            self.fail(f"expected {expected or 'a dimension'}, found {token or 'the end'}")
        self.index += 1
        return token

    def shape(self):
        if self.peek() == "(" and self.tokens[-1] == ")" and "," in self.tokens:
            self.take("(")
            self.tokens.pop()
        dims = []
        while self.peek() is not None:
            if self.peek() in _PLACEHOLDERS:
                dims.extend(self.placeholder(self.take(), len(dims)))
                if dims and dims[-1] is Ellipsis:
                    dims.pop()
                    if self.peek() is not None:
                        self.fail("'...' must be the last dimension")
                    break
            else:
                dims.append(self.sum())
                if self.like is not None and isinstance(dims[-1], int) and len(dims) <= len(self.like) and (
                        self.like[len(dims) - 1] not in (None, dims[-1])):
                    self.fail(f"different size {dims[-1]} for known dimension {len(dims) - 1}; like={self.like}")
            if self.peek() is not None:
                self.take(",")
        return tuple(dims)

    def placeholder(self, token, position):
        """The dimensions that `_` or `...` at `position` stands for (`...` marked by a final Ellipsis)."""
        if self.like is None:
            self.fail(f"it contains the placeholder {token!r} but no 'like' shape was given")
        taken = self.like[position:] if token == "..." else self.like[position:position + 1]
        if token == "_" and not taken:
            self.fail(f"cannot resolve the placeholder '_' at dimension {position}: like={self.like} has "
                      f"{len(self.like)} dimensions")
        if None in taken:
            self.fail(f"placeholder {token!r} for an unknown dimension; like={self.like}")
        return [*taken, Ellipsis] if token == "..." else list(taken)

    def sum(self):
        total = -self.product() if self.peek() == "-" and self.take("-") else self.product()
        while self.peek() in ("+", "-"):
            total = total + self.product() if self.take() == "+" else total - self.product()
        return total

    def product(self):
        value = self.power()
        while self.peek() in ("*", "//", "%"):
            operation = self.take()
            right = self.power()
            value = value * right if operation == "*" else value // right if operation == "//" else value % right
        return value

    def power(self):
        value = self.atom()
        if self.peek() == "^":
            self.take("^")
            exponent = self.take()
            if not exponent.isdigit():
                self.fail(f"the exponent of ^ must be an integer, found {exponent}")
            value = math.prod([value] * int(exponent), start=1)
        return value

    def atom(self):
        token = self.take()
        if token.isdigit():
            return int(token)
        if token == "(":
            value = self.sum()
            self.take(")")
            return value
        if token in ("floordiv", "mod") and self.peek() == "(":
            self.take("(")
            numerator = self.sum()
            self.take(",")
            denominator = self.sum()
            self.take(")")
            return numerator // denominator if token == "floordiv" else numerator % denominator
        if token[0].isalpha() or token[0] == "_":
            return DimExpr.variable(token, self.scope)
        self.fail(f"unexpected {token!r}")


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
    """jax's `export.symbolic_args_specs`: `args` (a pytree of arrays or ShapeDtypeStructs) as ShapeDtypeStructs
    whose shapes are `symbolic_shape(spec, like=arg.shape)`. `shapes_specs` is None (static shapes), one string
    for every argument, or a prefix pytree of `args` with a string or None at each of its leaves."""
    if scope is not None and constraints:
        raise ValueError("Cannot use both `scope` and `constraints`")
    scope = (SymbolicScope(constraints) if constraints else _DEFAULT_SCOPE) if scope is None else scope
    leaves, treedef = tree.tree_flatten(args)
    if isinstance(args, tuple) and isinstance(shapes_specs, list):
        shapes_specs = tuple(shapes_specs)  # as jax, which accepts a list for a tuple of arguments
    try:
        specs = tree.broadcast_prefix_leaves(shapes_specs, args, is_leaf=lambda x: x is None)
    except ValueError as error:
        raise ValueError(f"export.symbolic_args_specs shapes_specs must be a prefix of the arguments' pytree "
                         f"{treedef}: {error}") from None
    avals = [get_aval(leaf) for leaf in leaves]  # of arrays and ShapeDtypeStructs alike
    return treedef.unflatten(ShapeDtypeStruct(symbolic_shape(spec, like=aval.shape, scope=scope), aval.dtype)
                             for spec, aval in zip(specs, avals))


def parse_dim(text: str, scope=None):
    """One dimension in JAX's syntax: an int or a DimExpr (in `scope`, by default the shared one)."""
    dims = _Parser(text, scope=scope).shape()
    if len(dims) != 1:
        raise ValueError(f"invalid symbolic dimension {text!r}: expected one dimension")
    return dims[0]


class SymbolicScope:
    """jax's scope of symbolic dimensions: the expressions that may meet (in arithmetic, or in one function's
    argument shapes) and the constraints they obey, strings "e1 >= e2", "e1 <= e2" or "e1 == e2". An
    inequality tightens the bounds that decide comparisons (`bounds`); an equality, whose left side must be one
    term `k*t`, rewrites `t` wherever an expression of the scope holds it. Dimensions made without a scope or
    constraints share one default scope (numax's; in jax each `symbolic_shape` call makes its own). Like jax's,
    the constraints are not serialized."""

    def __init__(self, constraints_str=()):
        if isinstance(constraints_str, str):
            raise ValueError(f"The symbolic constraints should be a sequence of strings. Got {constraints_str!r}")
        self._inequalities = []  # (expression that is >= 0, the constraint it comes from)
        self._rules = []  # ({atom: power} of the left side's term, its coefficient, {monomial: coefficient} right)
        self._combined = None
        self._constraints = tuple(constraints_str)
        for constraint in self._constraints:
            self._add(constraint)

    def _add(self, text):
        if not isinstance(text, str):
            raise ValueError(f"SymbolicScope constraint must be a string: got {text!r}")
        match = re.fullmatch(r"(.*?)(==|>=|<=)(.*)", text)
        if match is None:
            raise ValueError("Constraint parsing error: must contain one of '==' or '>=' or '<='")
        left, comparison, right = (parse_dim(match[1], self), match[2], parse_dim(match[3], self))
        difference = left - right if comparison != "<=" else right - left
        if not isinstance(difference, DimExpr):
            if difference < 0 or (comparison == "==" and difference):
                raise ValueError(f"Unsatisfiable explicit constraint: {text}")
            return
        if comparison != "==":
            self._inequalities.append((difference, text))
            return
        terms = _terms_of(left)
        if not isinstance(left, DimExpr) or len(terms) != 1 or () in terms:
            raise ValueError(f"Invalid equality constraint: {text}. The left-hand-side must be of the form "
                             "`term * coefficient`.")
        (monomial, coefficient), = terms.items()
        self._rules.append((dict(monomial), coefficient, _terms_of(right)))
        self._inequalities += [(difference, text), (-difference, text)]

    def _rewritten(self, terms):
        """`terms` with each term holding a rule's left side `k*t` (a multiple of k, a multiple of t) rewritten."""
        if not self._rules:
            return terms
        result = {}
        for monomial, coefficient in terms.items():
            powers = dict(monomial)
            for rule_powers, rule_coefficient, replacement in self._rules:
                if coefficient % rule_coefficient == 0 and all(powers.get(a, 0) >= p for a, p in rule_powers.items()):
                    rest = tuple(sorted(((a, q - rule_powers.get(a, 0)) for a, q in powers.items()
                                         if q != rule_powers.get(a, 0)), key=lambda item: _atom_key(item[0])))
                    for replaced, replaced_coefficient in replacement.items():
                        product = _monomial_product(rest, replaced)
                        result[product] = result.get(product, 0) + coefficient // rule_coefficient * \
                            replaced_coefficient
                    break
            else:
                result[monomial] = result.get(monomial, 0) + coefficient
        return result

    def _combinations(self):
        """The inequality constraints and the sums of two of them: expressions known to be >= 0."""
        if self._combined is None:
            singles = [expression for expression, _ in self._inequalities]
            self._combined = singles + [a + b for i, a in enumerate(singles) for b in singles[i + 1:]]
        return self._combined

    def variables(self) -> set:
        """The names of the dimension variables the constraints use."""
        return set().union(*(expression.variables() for expression, _ in self._inequalities))

    def violated(self, bindings):
        """(constraint, expression, value) of the first constraint that the dimension variables' values
        `bindings` break (the expression that should be >= 0 and its value), or None."""
        for expression, text in self._inequalities:
            if expression.variables() <= bindings.keys():
                value = expression.evaluate(bindings)
                if isinstance(value, int) and value < 0:
                    return text, expression, value
        return None

    def __str__(self):
        return f"SymbolicScope({list(self._constraints)})"

    __repr__ = __str__


_DEFAULT_SCOPE = SymbolicScope()


def symbolic_shape(shape_string, *, constraints=(), scope=None, like=None) -> tuple:
    """The shape that `shape_string` describes, e.g. "b, 784" -> (b, 784), with `b` a symbolic dimension
    (at least 1) that a shape-polymorphic export binds to the actual size when it is called. Dimensions
    are sums of products of integers, variables, `floordiv(e, e)` and `mod(e, e)` (also written `//`, `%`).
    Variables of the same name are the same variable. With `like` (a shape), `_` stands for its dimension
    there and a final `...` for its remaining ones (None for the whole string means "..."). `constraints`
    (strings "e1 >= e2", "e1 <= e2", "e1 == e2") make a new `SymbolicScope` for these dimensions; `scope`
    puts them in an existing one (see SymbolicScope)."""
    if scope is None:
        scope = SymbolicScope(constraints) if constraints else _DEFAULT_SCOPE
    elif constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    if shape_string is None:
        shape_string = "..."
    if not isinstance(shape_string, str):
        raise ValueError(f"polymorphic shape spec should be None or a string. Found {shape_string!r}.")
    dims = _Parser(shape_string, like, scope).shape()
    for dim in dims:
        if isinstance(dim, int) and dim < 0:
            raise ValueError(f"invalid symbolic shape {shape_string!r}: dimension {dim} is negative")
    return dims
