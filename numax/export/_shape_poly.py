"""Symbolic dimensions for shape-polymorphic exports: `DimExpr`, `symbolic_shape`, and their errors.

A `DimExpr` is an integer polynomial over dimension variables (each at least 1), whose atoms may also be
`floordiv(a, b)` and `mod(a, b)` of other expressions. Arithmetic with ints and other expressions gives
normalized expressions (an expression that is a constant is a plain int), `==` compares normalized forms, and
`<`, `<=`, `>`, `>=` are decided from bounds that hold whenever every variable is at least 1, raising
`InconclusiveDimensionOperation` when the bounds do not decide. Expressions print in JAX's syntax ("2*b + 1",
"b^2", "floordiv(b, 2)") and `symbolic_shape` parses it back. The core learns of DimExpr through its registries
(`symbolic_dim_types`, `aval_of_type`: a dimension used as a value is an integer scalar); lowering computes
dimensions through `evaluate_with` (lowering/dynamic_shapes.py). `bind_dimensions` matches a call's shapes.
"""

import math
import re

import numpy as np

from ..core import dtypes
from ..core.avals import InconclusiveDimensionOperation, ShapedArray, aval_of_type, symbolic_dim_types

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


def _normalized(terms):
    """A DimExpr of `terms` (zero coefficients dropped), or an int when no variable is left."""
    terms = {monomial: coefficient for monomial, coefficient in terms.items() if coefficient}
    if not terms:
        return 0
    if list(terms) == [()]:
        return terms[()]
    expression = DimExpr.__new__(DimExpr)
    expression._terms = tuple(sorted(terms.items(), key=lambda item: _monomial_key(item[0])))
    expression._hash = hash(expression._terms)
    return expression


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
    if not isinstance(denominator, int) or denominator <= 0:
        return -_INFINITY, _INFINITY
    if operation == "mod":
        return 0, denominator - 1
    low, high = bounds(numerator)
    return (low if math.isinf(low) else low // denominator), (high if math.isinf(high) else high // denominator)


def bounds(value):
    """(lowest, highest) values an int or DimExpr can take when every variable is at least 1 (may be loose)."""
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
    """numerator / denominator when it divides exactly term by term (an int or DimExpr), else None."""
    denominator_terms = _terms_of(denominator)
    if len(denominator_terms) != 1:
        return numerator // denominator if numerator == 0 else None
    (divisor_monomial, divisor_coefficient), = denominator_terms.items()
    divisor_powers = dict(divisor_monomial)
    quotient = {}
    for monomial, coefficient in _terms_of(numerator).items():
        powers = dict(monomial)
        if coefficient % divisor_coefficient or any(powers.get(a, 0) < p for a, p in divisor_powers.items()):
            return None
        remaining = {a: p - divisor_powers.get(a, 0) for a, p in powers.items() if p != divisor_powers.get(a, 0)}
        key = tuple(sorted(remaining.items(), key=lambda item: _atom_key(item[0])))
        quotient[key] = coefficient // divisor_coefficient
    return _normalized(quotient)


def _divide(numerator, denominator, operation):
    """`numerator // denominator` or `numerator % denominator` for ints and DimExprs."""
    if not isinstance(numerator, DimExpr) and not isinstance(denominator, DimExpr):
        return numerator // denominator if operation == "floordiv" else numerator % denominator
    if isinstance(denominator, int) and denominator == 0:
        raise ZeroDivisionError(f"division of the dimension {numerator} by zero")
    quotient = _exact_quotient(numerator, denominator)
    if quotient is not None:
        return quotient if operation == "floordiv" else 0
    return _normalized({(((operation, numerator, denominator), 1),): 1})


def _division_operator(operation, reflected):
    """DimExpr's `//` or `%` ("floordiv" or "mod"), or its reflected form: dimension arithmetic with ints and
    DimExprs, NotImplemented for other operands."""
    def operator(self, other):
        other = _as_dim_operand(other)
        if other is None:
            return NotImplemented
        return _divide(other, self, operation) if reflected else _divide(self, other, operation)

    return operator


class DimExpr:
    """A symbolic dimension: an integer polynomial of dimension variables (see the module docstring)."""

    __slots__ = ("_terms", "_hash")

    @property
    def dtype(self):
        """The dtype of the dimension used as a value (read by dtype promotion)."""
        return dtypes.default_int_dtype()

    weak_type = True  # used as a value, a dimension promotes as a Python int does

    @staticmethod
    def variable(name: str) -> "DimExpr":
        return _normalized({((name, 1),): 1})

    # --- arithmetic -----------------------------------------------------------------------------------------
    def __add__(self, other):
        other = _as_dim_operand(other)
        if other is None:
            return NotImplemented
        terms = _terms_of(self)
        for monomial, coefficient in _terms_of(other).items():
            terms[monomial] = terms.get(monomial, 0) + coefficient
        return _normalized(terms)

    __radd__ = __add__

    def __neg__(self):
        return _normalized({monomial: -coefficient for monomial, coefficient in self._terms})

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
        return _normalized(terms)

    __rmul__ = __mul__

    __floordiv__ = _division_operator("floordiv", reflected=False)
    __rfloordiv__ = _division_operator("floordiv", reflected=True)
    __mod__ = _division_operator("mod", reflected=False)
    __rmod__ = _division_operator("mod", reflected=True)

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


symbolic_dim_types.add(DimExpr)
# A dimension used as a value is a weakly typed scalar of the default integer type, as a Python int is (JAX's
# dimension_as_value): `labels % x.shape[0]` keeps the labels' dtype.
aval_of_type[DimExpr] = lambda dim: ShapedArray((), dtypes.default_int_dtype(), weak_type=True)


def is_symbolic_dim(value) -> bool:
    return isinstance(value, DimExpr)


# --- parsing --------------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*%^(),]))")


class _Parser:
    """A recursive-descent parser of JAX's dimension syntax: sums of products of powers of atoms, where an
    atom is an integer, a variable, `floordiv(e, e)`, `mod(e, e)` or a parenthesized expression."""

    def __init__(self, text):
        self.text = text
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
            dims.append(self.sum())
            if self.peek() is not None:
                self.take(",")
        return tuple(dims)

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
            return DimExpr.variable(token)
        self.fail(f"unexpected {token!r}")


def parse_dim(text: str):
    """One dimension in JAX's syntax: an int or a DimExpr."""
    dims = _Parser(text).shape()
    if len(dims) != 1:
        raise ValueError(f"invalid symbolic dimension {text!r}: expected one dimension")
    return dims[0]


def symbolic_shape(shape_string: str, *, constraints=()) -> tuple:
    """The shape that `shape_string` describes, e.g. "b, 784" -> (b, 784), with `b` a symbolic dimension
    (at least 1) that a shape-polymorphic export binds to the actual size when it is called. Dimensions
    are sums of products of integers, variables, `floordiv(e, e)` and `mod(e, e)` (also written `//`, `%`).
    Variables of the same name are the same variable. `constraints` are not supported yet."""
    if constraints:
        raise NotImplementedError("symbolic_shape: constraints are not supported by numax yet")
    if not isinstance(shape_string, str):
        raise TypeError(f"symbolic_shape expects a string such as 'b, 784', got {shape_string!r}")
    dims = _Parser(shape_string).shape()
    for dim in dims:
        if isinstance(dim, int) and dim < 0:
            raise ValueError(f"invalid symbolic shape {shape_string!r}: dimension {dim} is negative")
    return dims


# --- binding at a call ------------------------------------------------------------------------------------------
def bind_dimensions(fun_name, exported_avals, actual_avals) -> dict:
    """{variable: size} that makes the exported avals (symbolic shapes allowed) those of the actual arguments;
    TypeError for a rank, dtype or static shape mismatch, ValueError for sizes the symbolic shapes cannot take."""
    bindings = {}
    for i, (exported, actual) in enumerate(zip(exported_avals, actual_avals)):
        if exported.dtype != actual.dtype or len(exported.shape) != len(actual.shape) or (
                all(isinstance(d, int) for d in exported.shape) and exported.shape != tuple(actual.shape)):
            raise TypeError(f"function {fun_name!r}: argument leaf {i} of type {actual.str_short()} passed where "
                            f"{exported.str_short()} was exported")
        for dim, size in zip(exported.shape, actual.shape):
            if isinstance(dim, DimExpr) and dim.variables() == {str(dim)}:
                bound = bindings.setdefault(str(dim), size)
                if bound != size or size < 1:
                    raise ValueError(f"function {fun_name!r}: argument leaf {i} of shape {actual.shape} does not "
                                     f"match its symbolic shape {exported.str_short()}: dimension variable "
                                     f"{dim} would be {size}" + (f" but is {bound} elsewhere" if bound != size
                                                                 else " (it must be at least 1)"))
    for i, (exported, actual) in enumerate(zip(exported_avals, actual_avals)):
        expected = substitute_shape(exported.shape, bindings)
        if expected != tuple(actual.shape):
            raise ValueError(f"function {fun_name!r}: argument leaf {i} of shape {actual.shape} does not match "
                             f"its symbolic shape {exported.str_short()} with {_bindings_text(bindings)}, which "
                             f"gives {expected}")
    return bindings


def substitute_shape(shape, bindings) -> tuple:
    """`shape` with every symbolic dimension evaluated for `bindings` ({variable: int})."""
    return tuple(dim.evaluate(bindings) if isinstance(dim, DimExpr) else dim for dim in shape)


def _bindings_text(bindings):
    return ", ".join(f"{name} = {size}" for name, size in sorted(bindings.items())) or "no dimension variables"
