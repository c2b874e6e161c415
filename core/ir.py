"""The IR: typed variables, literals, equations and programs (numax's jaxprs), and their printer.

A `Program` is a list of equations in SSA form over `Var`s, with `constvars` for values captured at
trace time, `invars` for arguments and `outvars` for results. A `ClosedProgram` pairs a program with the
values of its constvars.
"""

import weakref

import numpy as np

from .avals import ShapedArray


class Var:
    """A typed SSA variable. Names are given only when printing."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar constant written into the program (Python scalars and 0-d numpy values).

    `value` is what the program text shows; `operand` is what evaluating the program binds in its place:
    a value of exactly the literal's type (a float16 literal stays float16 when the program is
    re-evaluated by a transformation)."""

    __slots__ = ("value", "aval", "operand")

    def __init__(self, value, aval: ShapedArray, operand=None):
        self.value = value
        self.aval = aval
        self.operand = value if operand is None else operand

    @property
    def val(self):
        """jax's name for the value a literal stands for (what evaluating the program binds)."""
        return self.operand

    def __repr__(self):
        return f"Literal({self.value!r})"


class Equation:
    """`outvars = primitive[params] inputs`."""

    __slots__ = ("primitive", "inputs", "outvars", "params")

    def __init__(self, primitive, inputs, outvars, params):
        self.primitive = primitive
        self.inputs = inputs
        self.outvars = outvars
        self.params = params

    def replace(self, **changes):
        fields = dict(primitive=self.primitive, inputs=self.inputs, outvars=self.outvars, params=self.params)
        fields.update(changes)
        return Equation(**fields)

    def __repr__(self):
        return ProgramPrinter().equation(self)


class Program:
    """A first-order program: `{ lambda constvars ; invars . let equations in outvars }`."""

    __slots__ = ("constvars", "invars", "outvars", "equations", "__weakref__")

    def __init__(self, constvars, invars, outvars, equations):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.equations = list(equations)

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    def __str__(self):
        return ProgramPrinter().program(self)

    __repr__ = __str__

    def pretty_print(self):
        return str(self)


class ClosedProgram:
    """A program with the values of its constvars; hashable by identity."""

    __slots__ = ("program", "consts")

    def __init__(self, program: Program, consts):
        self.program = program
        self.consts = list(consts)

    @property
    def in_avals(self):
        return self.program.in_avals

    @property
    def out_avals(self):
        return self.program.out_avals

    @property
    def equations(self):
        return self.program.equations

    def __str__(self):
        return str(self.program)

    __repr__ = __str__

    def pretty_print(self):
        return str(self)


# --- printing --------------------------------------------------------------------------------
def _var_names():
    letters = "abcdefghijklmnopqrstuvwxyz"
    size = 1
    while True:
        count = len(letters) ** size
        for i in range(count):
            name, n = "", i
            for _ in range(size):
                n, r = divmod(n, len(letters))
                name = letters[r] + name
            yield name
        size += 1


_named_axes = weakref.WeakKeyDictionary()


def named_axes(program) -> frozenset:
    """The axis names that the collectives of a (closed) program, or of programs its equations hold,
    work over (cached per program: programs are immutable)."""
    if isinstance(program, ClosedProgram):
        program = program.program
    names = _named_axes.get(program)
    if names is None:
        names = frozenset().union(*[eq.primitive.named_axes(eq.params) for eq in program.equations])
        _named_axes[program] = names
    return names


def programs_in(value):
    """The programs in a parameter value: itself, or those in a tuple or list of them."""
    if isinstance(value, (Program, ClosedProgram)):
        return [value]
    if isinstance(value, (tuple, list)):
        return [p for item in value for p in programs_in(item)]
    return []


def sub_programs(eqn):
    """The programs an equation holds in its parameters (a loop's body, a cond's branches, a jit's program)."""
    return [p for value in eqn.params.values() for p in programs_in(value)]


def all_equations(program):
    """Every equation of a (closed) program and of the programs nested in it, each before those it holds."""
    for eqn in open_program(program).equations:
        yield eqn
        for inner in sub_programs(eqn):
            yield from all_equations(inner)


class ProgramPrinter:
    """Prints programs in JAX's layout: `{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }`.

    A program (or an equation's parameter list) is written on one line when it ends before column
    `width` (80), and broken over lines otherwise, as JAX's pretty printer does. Every variable gets one
    name for the whole printout, so nested programs never shadow the names around them.
    """

    width = 80

    def __init__(self):
        self.names = {}
        self.name_source = _var_names()

    def name(self, atom):
        if isinstance(atom, Literal):
            return _literal_text(atom)
        name = self.names.get(atom)
        if name is None:
            name = self.names[atom] = next(self.name_source)
        return name

    def binder(self, var):
        return f"{self.name(var)}:{var.aval.str_short()}"

    def program(self, program: Program, indent=0, column=None):
        """The program's text; `indent` is the indentation of the line it starts on, `column` where it starts."""
        column = indent if column is None else column
        header = f"{{ lambda {' '.join(self.binder(v) for v in program.constvars)}; " \
                 f"{' '.join(self.binder(v) for v in program.invars)}. let"
        equations = [self.equation(eqn, indent + 4) for eqn in program.equations]
        outs = ", ".join(self.name(v) for v in program.outvars)
        footer = f"in ({outs}{',' if len(program.outvars) == 1 else ''}) }}"
        flat = f"{header} {'; '.join(equations)} {footer}"
        if "\n" not in flat and column + len(flat) < self.width:
            return flat
        lines = [header] + [" " * (indent + 4) + text for text in equations] + [" " * (indent + 2) + footer]
        return "\n".join(lines)

    def equation(self, eqn, indent=0):
        """`outs = name[params] inputs`; the parameters go one per line when the line would not fit."""
        outs = " ".join(self.binder(v) for v in eqn.outvars)
        prefix = f"{outs} = {eqn.primitive.name}" if outs else eqn.primitive.name  # JAX writes no `=` then
        args = " ".join(self.name(a) for a in eqn.inputs)
        if not eqn.params:
            return f"{prefix} {args}".rstrip()
        keys = sorted(eqn.params)
        flat_items = [f"{key}={self.param(eqn.params[key], indent, indent + len(prefix) + 1)}" for key in keys]
        flat = f"{prefix}[{' '.join(flat_items)}] {args}".rstrip()
        if "\n" not in flat and indent + len(flat) < self.width:
            return flat
        item_indent = indent + 2
        items = [f"{key}={self.param(eqn.params[key], item_indent, item_indent + len(key) + 1)}" for key in keys]
        body = "".join(" " * item_indent + item + "\n" for item in items)
        return f"{prefix}[\n{body}{' ' * indent}] {args}".rstrip()

    def param(self, value, indent, column):
        if isinstance(value, (Program, ClosedProgram)):
            return self.program(open_program(value), indent, column)
        if isinstance(value, (tuple, list)) and any(isinstance(v, (Program, ClosedProgram)) for v in value):
            texts = [self.param(v, indent, column + 1) for v in value]
            fields = getattr(value, "_fields", None)  # a NamedTuple of programs: name each one
            if fields:
                texts = [f"{name}={text}" for name, text in zip(fields, texts)]
            return "(" + " ".join(texts) + ")"
        return _param_text(value)


def open_program(program):
    """The Program of a Program or a ClosedProgram."""
    return program.program if isinstance(program, ClosedProgram) else program


def _literal_text(literal):
    value = literal.value
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.item() if np.ndim(value) == 0 else value
    return f"{value!r}:{literal.aval.str_short()}"


def _param_text(value):
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return repr(value) if not isinstance(value, str) else value
