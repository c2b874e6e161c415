"""Triton source for a fused elementwise region: one lane per element of the region's shape, each value of the
region computed at the element (or elements) of it that the lane needs.

The kernel computes one block of `BLOCK` flat offsets into the region's shape per program:

    def fused_<ops>_<digest>(in0_ptr, ..., n, out0_ptr, ..., BLOCK: tl.constexpr)

Most values have the region's shape and are computed once per lane at the lane's own element; an input read
repeated along some axes (a bias, a value per row) is loaded at the element each offset reads (`read_index`), once
per way the region reads it. Values of other shapes enter through view equations: a slice, a concatenation, a
pad, a reshape, a transpose, a reversal or a broadcast of something the region computes from its inputs (the
rotate-half of rotary embeddings, a per-row value computed in the region, a scalar sliced from a key). Such a value
is computed at the coordinates the view maps the lane's element to (`Emitter.at`): every view has a rule from its
result's coordinates to its operand's (`_VIEW_RULES`), and the lane's own coordinates are its flat offset divided
down the region's shape. A concatenation or pad selects among its pieces per lane, each piece read at
coordinates clamped into its bounds, so that no lane loads outside an input.
"""

import hashlib
import math
import re

from ..core.ir import Literal
from . import fusion_codegen as codegen


def _linear(coordinates, shape):
    """The flat index text of `coordinates` (texts) into an array of `shape`."""
    terms, stride = [], 1
    for coordinate, n in reversed(list(zip(coordinates, shape))):
        if n > 1 and coordinate != "0":
            terms.append(coordinate if stride == 1 else f"({coordinate}) * {stride}")
        stride *= n
    return " + ".join(reversed(terms)) or "0"


def delinearized(flat, shape):
    """The coordinates (texts) of flat index `flat` into an array of `shape`."""
    coordinates, inner = [], 1
    for n in reversed(shape):
        if n == 1:
            coordinates.append("0")
        else:
            quotient = f"({flat})" if inner == 1 else f"(({flat}) // {inner})"
            coordinates.append(quotient if inner * n == math.prod(shape) else f"({quotient} % {n})")
        inner *= n
    return tuple(reversed(coordinates))


# Coordinates are texts; each one composed here is parenthesized, so that it can stand in any expression.
def _clamped(coordinate, low, high):
    return f"tl.minimum(tl.maximum({coordinate}, {low}), {high})"


# --- views: a result's coordinates -> each operand's, and how the pieces combine ----------------------------------
def _slice(emitter, eqn, coordinates):
    starts, strides = eqn.params["start_indices"], eqn.params.get("strides") or (1,) * len(coordinates)
    operand = tuple(c if start == 0 and (stride == 1 or c == "0") else
                    f"({c} * {stride} + {start})" for c, start, stride in zip(coordinates, starts, strides))
    return emitter.at(eqn.inputs[0], operand)


def _concatenate(emitter, eqn, coordinates):
    axis = eqn.params["dimension"]
    pieces, offset = [], 0
    for operand in eqn.inputs:
        n = operand.aval.shape[axis]
        shifted = list(coordinates)
        local = coordinates[axis] if offset == 0 else f"({coordinates[axis]} - {offset})"
        shifted[axis] = _clamped(local, 0, n - 1)
        pieces.append((offset + n, emitter.at(operand, tuple(shifted))))
        offset += n
    value = pieces[-1][1]
    for end, piece in reversed(pieces[:-1]):
        value = f"tl.where({coordinates[axis]} < {end}, {piece}, {value})"
    return value


def _pad(emitter, eqn, coordinates):
    operand, padding = eqn.inputs
    inside, source = [], []
    for c, n, (low, _, interior) in zip(coordinates, operand.aval.shape, eqn.params["padding_config"]):
        step = interior + 1
        local = c if low == 0 else f"({c} - {low})"
        if step == 1:
            inside.append(f"({local} >= 0) & ({local} < {n})")
            source.append(_clamped(local, 0, n - 1))
        else:
            inside.append(f"({local} >= 0) & ({local} % {step} == 0) & ({local} // {step} < {n})")
            source.append(_clamped(f"{local} // {step}", 0, n - 1))
    return f"tl.where({' & '.join(inside)}, {emitter.at(operand, tuple(source))}, {emitter.at(padding, ())})"


def _reshape(emitter, eqn, coordinates):
    return emitter.at(eqn.inputs[0], delinearized(_linear(coordinates, eqn.outvars[0].aval.shape),
                                                   eqn.inputs[0].aval.shape))


def _transpose(emitter, eqn, coordinates):
    operand = [None] * len(coordinates)
    for result_axis, operand_axis in enumerate(eqn.params["permutation"]):
        operand[operand_axis] = coordinates[result_axis]
    return emitter.at(eqn.inputs[0], tuple(operand))


def _rev(emitter, eqn, coordinates):
    shape = eqn.outvars[0].aval.shape
    return emitter.at(eqn.inputs[0], tuple(f"({shape[axis] - 1} - {c})" if axis in eqn.params["dimensions"] else c
                                           for axis, c in enumerate(coordinates)))


def _squeeze(emitter, eqn, coordinates):
    squeezed, remaining = set(eqn.params["dimensions"]), iter(coordinates)
    return emitter.at(eqn.inputs[0], tuple("0" if axis in squeezed else next(remaining)
                                           for axis in range(eqn.inputs[0].aval.ndim)))


_VIEW_RULES = {"slice": _slice, "concatenate": _concatenate, "pad": _pad, "reshape": _reshape,
               "transpose": _transpose, "rev": _rev, "squeeze": _squeeze}


def is_view(eqn):
    """Does the emitter have a rule for `eqn` as a view (a reshape only without its `dimensions` reordering)?"""
    name = eqn.primitive.name
    if name not in _VIEW_RULES or len(eqn.outvars) != 1:
        return False
    if name == "reshape" and eqn.params.get("dimensions") is not None:
        return False
    if name == "slice" and eqn.params.get("strides") and min(eqn.params["strides"]) < 1:
        return False
    return all(codegen.has_triton_dtype(a.aval.dtype) for a in list(eqn.inputs) + list(eqn.outvars))


class Emitter:
    """Writes the values of a region's `equations` into `writer` at the coordinates each lane needs them
    (`templates`: the equations' forms, a row kernel's where its writer is one)."""

    def __init__(self, writer, equations, inputs, shape, templates=codegen.EQUATION_TEMPLATES):
        self.writer, self.shape, self.templates = writer, tuple(shape), templates
        self.producer = {v: eqn for eqn in equations for v in eqn.outvars}
        self.positions = {var: position for position, var in enumerate(inputs)}
        self.names = {}  # (Var, coordinates or None: the lane's own element) -> name
        self.lane = None
        self.lane_names = {"offsets"}  # the names whose values differ between lanes

    def lane_coordinates(self):
        """The lane's own coordinates in the region's shape (named once)."""
        if self.lane is None:
            self.lane = tuple(c if c == "0" else self.writer.let(c) for c in delinearized("offsets", self.shape))
            self.lane_names.update(self.lane)
        return self.lane

    def varies(self, text):
        """Does the index text `text` differ between lanes (does it name a lane's coordinate)?"""
        return bool(set(re.findall(r"[A-Za-z_]\w*", text)) & self.lane_names)

    def own(self, var):
        """`var` (of the region's shape) at the lane's own element."""
        return self.at(var, None)

    def at(self, atom, coordinates):
        """The name of `atom`'s value at `coordinates` (texts, one per axis of its shape; None: the lane's own
        element of the region's shape)."""
        if isinstance(atom, Literal):
            return self.writer.literal(atom)
        if coordinates is not None and all(c == "0" for c in coordinates) and atom.aval.size == 1:
            coordinates = ("0",) * atom.aval.ndim
        key = (atom, coordinates)
        if key not in self.names:
            self.names[key] = self._compute(atom, coordinates)
        return self.names[key]

    def _compute(self, var, coordinates):
        writer = self.writer
        if var in self.positions:
            pointer = f"in{self.positions[var]}_ptr"
            if coordinates is None:
                return writer.let(codegen.load_text(f"{pointer} + offsets", var.aval.dtype, "mask"))
            index = _linear(coordinates, var.aval.shape)
            if not self.varies(index):  # one element for every lane
                return writer.let(codegen.load_text(pointer if index == "0" else f"{pointer} + {index}",
                                                    var.aval.dtype))
            return writer.let(codegen.load_text(f"{pointer} + {index}", var.aval.dtype, "mask"))
        eqn = self.producer[var]
        name = eqn.primitive.name
        if name in _VIEW_RULES:
            return writer.let(_VIEW_RULES[name](self, eqn, coordinates or self.lane_coordinates()))
        operands = [self._operand(eqn, a, coordinates) for a in eqn.inputs]
        writer.narrow = all(v in writer.narrow_values for v in eqn.outvars)
        if name == "iota":
            dimension = eqn.params["dimension"]
            own = (coordinates or self.lane_coordinates())[dimension]
            kind = codegen.triton_dtype(codegen.register_dtype(var.aval.dtype))
            if not self.varies(own):  # a coordinate every lane shares (fixed by a slice, say)
                return writer.let(f"tl.full({writer.literal_shape}, {own}, {kind})")
            return writer.let(f"tl.full({writer.literal_shape}, 0, {kind}) + ({own}).to({kind})")
        result = self.templates[name](writer, operands, [a.aval for a in eqn.inputs], eqn.outvars[0].aval,
                                                  eqn.params)
        if isinstance(result, list):
            for v, named in zip(eqn.outvars, result):
                self.names[v, coordinates] = named
            return self.names[var, coordinates]
        return writer.let(result)

    def _operand(self, eqn, operand, coordinates):
        """An elementwise equation's operand at the coordinates the equation's result is wanted at."""
        if isinstance(operand, Literal):
            return self.writer.literal(operand)
        shape = eqn.outvars[0].aval.shape
        placed = codegen.read_shape(eqn, operand, shape)
        if coordinates is None and placed == self.shape and operand.aval.shape == self.shape:
            return self.own(operand)
        if coordinates is None and operand in self.positions:  # an input read repeated along some axes
            key = (operand, ("read", placed))
            if key not in self.names:
                index = codegen.read_index(placed, self.shape)
                address = f"in{self.positions[operand]}_ptr" + ("" if index is None else f" + {index}")
                self.names[key] = self.writer.let(codegen.load_text(address, operand.aval.dtype,
                                                                   index and "mask"))
            return self.names[key]
        result = coordinates or self.lane_coordinates()
        if eqn.primitive.name == "broadcast_in_dim":
            own = tuple("0" if n == 1 else result[axis]
                        for axis, n in zip(eqn.params["broadcast_dimensions"], operand.aval.shape))
        else:
            own = tuple("0" if n == 1 else c for c, n in zip(result[len(result) - operand.aval.ndim:],
                                                             operand.aval.shape))
        return self.at(operand, own)


def generate_source(equations, inputs, outputs, shape, platform="cpu", segment=False):
    """(kernel name, Triton source) for `equations` over arrays of `shape`, for `platform`.

    inputs: the region's array inputs (Vars) in the kernel's order; outputs: the Vars the kernel stores, in order,
    each of the region's shape. Literals among the equations' inputs become constants. With `segment`, the function
    takes its block's index as a parameter `program` (after the outputs) instead of asking for its program id: a
    segment of a kernel over several regions (`foreach_source`)."""
    size = math.prod(shape)
    writer = codegen.KernelWriter(platform)
    writer.narrow_values = codegen.visibly_narrow(equations, outputs)
    program = "program" if segment else "tl.program_id(0)"
    offsets = f"{program}.to(tl.int64) * BLOCK" if size >= 2 ** 31 else f"{program} * BLOCK"
    writer.lines += [f"offsets = {offsets} + tl.arange(0, BLOCK)", "mask = offsets < n"]
    emitter = Emitter(writer, equations, inputs, shape)
    for position, var in enumerate(outputs):
        value = codegen.stored_text(emitter.own(var), var.aval.dtype)
        writer.lines.append(f"tl.store(out{position}_ptr + offsets, {value}, mask=mask)")
    parameters = [f"in{i}_ptr" for i in range(len(inputs))] + ["n"] + [f"out{i}_ptr" for i in range(len(outputs))]
    return codegen.kernel_source(writer, equations, parameters + (["program"] if segment else []))


def foreach_source(segment_name, segment_source, segments, input_count, output_count):
    """(kernel name, Triton source) of one kernel over several regions whose kernels are the same function
    `segment_name` (defined by `segment_source`, written with `segment=True`), one launch for all (as torch's foreach
    kernels update many tensors): the programs of segment k follow those of segment k - 1, each segment running
    cdiv(n_k, BLOCK) of them.

    segments: per region, (positions of its inputs among the kernel's `input_count` inputs, positions of its outputs
    among its `output_count` outputs). Parameters: the inputs, then each segment's element count n0, n1, ..., then
    the outputs."""
    lines = ["pid = tl.program_id(0)"]
    for k in range(len(segments)):
        lines.append(f"end{k} = {f'end{k - 1} + ' if k else ''}tl.cdiv(n{k}, BLOCK)")
    for k, (inputs, outputs) in enumerate(segments):
        arguments = ([f"in{i}_ptr" for i in inputs] + [f"n{k}"] + [f"out{o}_ptr" for o in outputs]
                     + [f"pid - end{k - 1}" if k else "pid", "BLOCK"])
        lines += [f"{'elif' if k else 'if'} pid < end{k}:", f"    {segment_name}({', '.join(arguments)})"]
    parameters = ([f"in{i}_ptr" for i in range(input_count)] + [f"n{k}" for k in range(len(segments))]
                  + [f"out{o}_ptr" for o in range(output_count)] + ["BLOCK: tl.constexpr"])
    body = "".join(f"    {line}\n" for line in lines)
    digest = hashlib.sha256((segment_source + body).encode()).hexdigest()[:10]
    name = f"foreach_{len(segments)}_{segment_name}_{digest}"
    return name, f"{segment_source}\n\n@triton.jit\ndef {name}({', '.join(parameters)}):\n{body}"
