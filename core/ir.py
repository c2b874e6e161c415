"""The IR: typed variables, literals, equations and programs (numax's jaxprs), and their printer.

A `Program` is a list of equations in SSA form over `Var`s, with `constvars` for values captured at
trace time, `invars` for arguments and `outvars` for results. A `ClosedProgram` pairs a program with the
values of its constvars.
"""

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
    """A scalar constant written into the program (Python scalars and 0-d numpy values)."""

    __slots__ = ("value", "aval")

    def __init__(self, value, aval: ShapedArray):
        self.value = value
        self.aval = aval

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

    __slots__ = ("constvars", "invars", "outvars", "equations")

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


class ProgramPrinter:
    """Prints programs in JAX's style: `{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }`."""

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

    def equation(self, eqn, indent=0):
        outs = " ".join(self.binder(v) for v in eqn.outvars) or "_"
        params = self.params(eqn.params, indent)
        args = " ".join(self.name(a) for a in eqn.inputs)
        return f"{outs} = {eqn.primitive.name}{params} {args}".rstrip()

    def params(self, params, indent):
        if not params:
            return ""
        items = []
        for key in sorted(params):
            value = params[key]
            if isinstance(value, (Program, ClosedProgram)):
                program = value.program if isinstance(value, ClosedProgram) else value
                inner = ProgramPrinter()
                inner.name_source = self.name_source  # fresh names, never shadowing outer ones
                text = inner.program(program, indent + 4)
                items.append(f"{key}={text}")
            elif isinstance(value, (tuple, list)) and value and all(
                isinstance(v, (Program, ClosedProgram)) for v in value
            ):
                inner_texts = []
                for v in value:
                    inner = ProgramPrinter()
                    inner.name_source = self.name_source
                    inner_texts.append(inner.program(v.program if isinstance(v, ClosedProgram) else v, indent + 4))
                items.append(f"{key}=(" + " ".join(inner_texts) + ")")
            else:
                items.append(f"{key}={_param_text(value)}")
        return "[" + " ".join(items) + "]" if len(items) < 3 and not any("\n" in i for i in items) else (
            "[\n" + "".join(" " * (indent + 4) + item + "\n" for item in items) + " " * (indent + 2) + "]"
        )

    def program(self, program: Program, indent=0):
        consts = " ".join(self.binder(v) for v in program.constvars)
        invars = " ".join(self.binder(v) for v in program.invars)
        pad = " " * (indent + 4)
        lines = [f"{{ lambda {consts}; {invars}. let"]
        for eqn in program.equations:
            lines.append(pad + self.equation(eqn, indent + 4))
        outs = ", ".join(self.name(v) for v in program.outvars)
        trailing = "," if len(program.outvars) == 1 else ""
        lines.append(" " * (indent + 2) + f"in ({outs}{trailing}) }}")
        if not program.equations:
            return f"{{ lambda {consts}; {invars}. let  in ({outs}{trailing}) }}"
        return "\n".join(lines)


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
