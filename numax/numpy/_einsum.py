"""`einsum` and `einsum_path`: Einstein summation as diagonals, sums and pairwise `lax.dot_general`s.

Each operand is first simplified on its own (size-1 dimensions that broadcast are squeezed, repeated
labels become diagonals, labels nobody else needs are summed out); then operands are contracted two
at a time in an order chosen from their shapes alone (exhaustive search over subsets for a few
operands, greedy by intermediate size beyond), each contraction one dot_general whose batch
dimensions are the labels both operands share and a later step still needs.
"""

import builtins
import itertools
import math
import string

from numax import lax
from numax.core import dtypes

from ._linalg_ops import diagonal, laid_out
from ._util import check_arraylike, promote_dtypes, shape, to_array

__all__ = ["einsum", "einsum_path"]

_OPTIMAL_LIMIT = 8  # operands up to which 'optimal' searches every contraction order (3**n subsets)


# --- parsing ----------------------------------------------------------------------------------------
class _Spec:
    """A parsed subscript string: one label list per operand, the output labels, and each label's size.

    Labels are single characters; the dimensions an ellipsis stands for get fresh characters.
    """

    def __init__(self, inputs, output, sizes):
        self.inputs = inputs
        self.output = output
        self.sizes = sizes

    def text(self):
        return ",".join("".join(labels) for labels in self.inputs) + "->" + "".join(self.output)


def _interleaved_to_subscripts(args):
    """`einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])` as (subscripts, operands)."""
    args = list(args)
    output = args.pop() if len(args) % 2 == 1 else None
    operands, terms = args[0::2], args[1::2]

    def term(sublist):
        out = []
        for item in sublist:
            if item is Ellipsis:
                out.append("...")
            elif isinstance(item, int) and 0 <= item < len(string.ascii_letters):
                out.append(string.ascii_letters[item])
            else:
                raise ValueError(f"einsum: sublist labels must be integers in [0, 52) or Ellipsis, got {item!r}")
        return "".join(out)

    subscripts = ",".join(term(t) for t in terms)
    if output is not None:
        subscripts += "->" + term(output)
    return subscripts, operands


def _split_ellipsis(term, what):
    if term.count("...") > 1 or term.replace("...", "").count(".") > 0:
        raise ValueError(f"einsum: {what} subscripts {term!r} contain a '.' that is not part of one '...'")
    for char in term.replace("...", ""):
        if not char.isalpha():
            raise ValueError(f"einsum: invalid subscript {char!r} in {what} {term!r}; use letters a-z, A-Z")
    if "..." in term:
        before, after = term.split("...")
        return list(before), list(after), True
    return list(term), [], False


def _parse(subscripts, shapes):
    subscripts = subscripts.replace(" ", "")
    if subscripts.count("->") > 1:
        raise ValueError(f"einsum: subscripts {subscripts!r} contain more than one '->'")
    explicit = "->" in subscripts
    inputs_text, output_text = subscripts.split("->") if explicit else (subscripts, None)
    terms = inputs_text.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(terms)} operand(s), "
                         f"but {len(shapes)} were given")
    used = set(subscripts)
    fresh = (c for c in itertools.chain(string.ascii_letters, map(chr, itertools.count(0x100))) if c not in used)
    parts, ellipsis_rank = [], 0
    for i, (term, operand_shape) in enumerate(zip(terms, shapes)):
        before, after, has_ellipsis = _split_ellipsis(term, f"operand {i}")
        named = len(before) + len(after)
        if named > len(operand_shape) or (not has_ellipsis and named != len(operand_shape)):
            raise ValueError(f"einsum: operand {i} has shape {tuple(operand_shape)} (rank {len(operand_shape)}), "
                             f"but its subscripts {term!r} name {named} dimension(s)")
        rank = len(operand_shape) - named if has_ellipsis else 0
        ellipsis_rank = builtins.max(ellipsis_rank, rank)
        parts.append((before, after, rank))
    ellipsis_labels = [next(fresh) for _ in range(ellipsis_rank)]
    # An ellipsis stands for trailing broadcast dimensions: aligned from the right, as in numpy.
    inputs = [before + ellipsis_labels[ellipsis_rank - rank:] + after for before, after, rank in parts]

    sizes = {}
    for i, (labels, operand_shape) in enumerate(zip(inputs, shapes)):
        for label, size in zip(labels, operand_shape):
            known = sizes.get(label)
            if known is None or known == 1:
                sizes[label] = int(size)
            elif size != known and size != 1:
                raise ValueError(f"einsum: label {label!r} has size {known} in one operand but size {size} in "
                                 f"operand {i} (shape {tuple(operand_shape)}); sizes must match or be 1")

    if explicit:
        before, after, has_ellipsis = _split_ellipsis(output_text, "output")
        output = before + (ellipsis_labels if has_ellipsis else []) + after
        for label in output:
            if output.count(label) > 1:
                raise ValueError(f"einsum: output subscript {label!r} appears more than once in {subscripts!r}")
            if label not in sizes and label not in ellipsis_labels:
                raise ValueError(f"einsum: output subscript {label!r} does not appear in any input of "
                                 f"{subscripts!r}")
    else:
        counts = {}
        for labels in inputs:
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
        named = sorted(label for label, n in counts.items() if n == 1 and label not in ellipsis_labels)
        output = ellipsis_labels + named
    for label in ellipsis_labels:
        sizes.setdefault(label, 1)
    return _Spec(inputs, output, sizes)


# --- per-operand simplification ---------------------------------------------------------------------
def _squeeze_broadcast(operand, labels, dims, sizes):
    """Drops size-1 dimensions whose label is larger elsewhere: they only broadcast."""
    drop = [i for i, (label, size) in enumerate(zip(labels, dims)) if size == 1 and sizes[label] != 1]
    if drop and operand is not None:
        operand = lax.squeeze(operand, drop)
    return operand, [label for i, label in enumerate(labels) if i not in drop]


def _reduce_labels(operand, labels, needed):
    """Takes diagonals of repeated labels and sums out labels not `needed`; each label remains once.

    With `operand=None` only the labels are computed (for einsum_path).
    """
    labels = list(labels)
    while len(set(labels)) != len(labels):
        label = next(lbl for lbl in labels if labels.count(lbl) > 1)
        first = labels.index(label)
        second = labels.index(label, first + 1)
        if operand is not None:
            operand = diagonal(operand, 0, first, second)  # the diagonal becomes the last axis
        labels = [lbl for i, lbl in enumerate(labels) if i not in (first, second)] + [label]
    unneeded = [i for i, label in enumerate(labels) if label not in needed]
    if unneeded and operand is not None:
        operand = _sum(operand, unneeded)
    return operand, [label for i, label in enumerate(labels) if i not in unneeded]


def _sum(operand, axes):
    # Sums of booleans are logical ors, as in jnp.einsum.
    if dtypes.dtype(operand) == dtypes.bool_:
        return lax.reduce_or(operand, axes)
    return lax.reduce_sum(operand, axes)


def _simplified_inputs(spec, shapes, operands=None):
    """[(operand, labels)] with each operand simplified on its own; `operands=None`: labels only."""
    out = []
    for i, labels in enumerate(spec.inputs):
        needed = set(spec.output).union(*(other for j, other in enumerate(spec.inputs) if j != i))
        operand = None if operands is None else operands[i]
        operand, labels = _squeeze_broadcast(operand, labels, shapes[i], spec.sizes)
        out.append(_reduce_labels(operand, labels, needed))
    return out


# --- contraction order ------------------------------------------------------------------------------------
def _size(labels, sizes):
    return math.prod(sizes[label] for label in labels)


def _result_labels(a, b, keep):
    """Labels of contracting label sets a and b when `keep` are the labels later steps need."""
    return [label for label in dict.fromkeys(list(a) + list(b)) if label in keep]


def _keep_labels(items, skip, output):
    keep = set(output)
    for k, labels in enumerate(items):
        if k not in skip:
            keep.update(labels)
    return keep


def _greedy_path(label_sets, output, sizes):
    """Repeatedly contracts the pair whose result is smallest (then cheapest, then leftmost)."""
    items = [list(labels) for labels in label_sets]
    path = []
    while len(items) > 1:
        best = None
        for i, j in itertools.combinations(range(len(items)), 2):
            result = _result_labels(items[i], items[j], _keep_labels(items, (i, j), output))
            cost = (_size(result, sizes), _size(set(items[i]) | set(items[j]), sizes))
            if best is None or cost < best[0]:
                best = (cost, i, j, result)
        _, i, j, result = best
        path.append((i, j))
        items = [labels for k, labels in enumerate(items) if k not in (i, j)] + [result]
    return path


def _optimal_path(label_sets, output, sizes):
    """The order with the fewest multiply-adds, by dynamic programming over subsets of operands."""
    count = len(label_sets)
    every = frozenset(range(count))

    def labels_of(subset):
        """Labels the contraction of `subset` keeps: those the other operands or the output need."""
        inside = set().union(*(label_sets[k] for k in subset))
        outside = set(output).union(*(label_sets[k] for k in every - subset))
        return frozenset(inside & outside)

    best = {frozenset([k]): (0, None) for k in range(count)}
    for size in range(2, count + 1):
        for members in itertools.combinations(range(count), size):
            subset = frozenset(members)
            first, rest = members[0], members[1:]
            choice = None
            # Each split once: the part holding the first member, and the rest.
            for r in range(len(rest)):
                for others in itertools.combinations(rest, r):
                    left = frozenset((first,) + others)
                    right = subset - left
                    flops = _size(labels_of(left) | labels_of(right), sizes)
                    cost = best[left][0] + best[right][0] + flops
                    if choice is None or cost < choice[0]:
                        choice = (cost, (left, right))
            best[subset] = choice

    steps = []

    def collect(subset):
        split = best[subset][1]
        if split is None:
            return
        collect(split[0])
        collect(split[1])
        steps.append(split)

    collect(every)
    items = [frozenset([k]) for k in range(count)]
    path = []
    for left, right in steps:
        i, j = sorted((items.index(left), items.index(right)))
        path.append((i, j))
        items = [item for k, item in enumerate(items) if k not in (i, j)] + [left | right]
    return path


def _path(label_sets, output, sizes, optimize):
    count = len(label_sets)
    if count == 1:
        return [(0,)]
    if isinstance(optimize, (list, tuple)):
        path = [tuple(step) for step in optimize if step != "einsum_path"]
        _check_path(path, count)
        return path
    if optimize is False or optimize is None:
        return [(0, count - k - 1) for k in range(count - 1)]  # left to right
    if optimize in (True, "optimal", "auto", "dp", "branch-all", "branch-2") and count <= _OPTIMAL_LIMIT:
        return _optimal_path(label_sets, output, sizes)
    if optimize in (True, "optimal", "auto", "dp", "branch-all", "branch-2", "greedy"):
        return _greedy_path(label_sets, output, sizes)
    raise ValueError(f"einsum: optimize must be True, False, 'optimal', 'greedy' or a contraction path, "
                     f"got {optimize!r}")


def _check_path(path, count):
    for step in path:
        if not step or len(set(step)) != len(step) or any(not 0 <= k < count for k in step):
            raise ValueError(f"einsum: invalid contraction path step {step} with {count} operands left")
        count -= len(step) - 1
    if count != 1:
        raise ValueError(f"einsum: the contraction path {path} leaves {count} operands instead of 1")


# --- contraction ----------------------------------------------------------------------------------------
def _contract_pair(x, x_labels, y, y_labels, keep, precision, preferred, dot_general=None):
    """One dot_general (`dot_general` when given, called as `lax.dot_general`); returns (result, its labels:
    batch, then x's free, then y's free)."""
    x, x_labels = _reduce_labels(x, x_labels, keep | set(y_labels))
    y, y_labels = _reduce_labels(y, y_labels, keep | set(x_labels))
    shared = [label for label in x_labels if label in y_labels]
    batch = [label for label in shared if label in keep]
    contract = [label for label in shared if label not in keep]
    x_dtype, y_dtype = dtypes.dtype(x), dtypes.dtype(y)
    if x_dtype != y_dtype:  # an intermediate of a preferred_element_type meets an input
        common = dtypes.promote_types(x_dtype, y_dtype)
        x, y = lax.convert_element_type(x, common), lax.convert_element_type(y, common)
    dimension_numbers = (([x_labels.index(c) for c in contract], [y_labels.index(c) for c in contract]),
                         ([x_labels.index(b) for b in batch], [y_labels.index(b) for b in batch]))
    if preferred is not None and dtypes.is_inexact(preferred) and not dtypes.is_inexact(dtypes.dtype(x)):
        # A float accumulator: contract in the float type, so that boolean inputs take the float path rather
        # than `_bool_contract` (integer operands alone would be converted by dot_general's lowering).
        x, y = lax.convert_element_type(x, preferred), lax.convert_element_type(y, preferred)
    if dot_general is not None:
        result = dot_general(x, y, dimension_numbers, precision, preferred_element_type=preferred)
    elif dtypes.dtype(x) == dtypes.bool_:
        result = _bool_contract(x, y, dimension_numbers)
    else:
        result = lax.dot_general(x, y, dimension_numbers, precision=precision, preferred_element_type=preferred)
    free_x = [label for label in x_labels if label not in shared]
    free_y = [label for label in y_labels if label not in shared]
    return result, batch + free_x + free_y


def _bool_contract(x, y, dimension_numbers):
    """A boolean contraction (any of the ands), computed as an integer one."""
    as_int = [lax.convert_element_type(v, dtypes.int32) for v in (x, y)]
    counts = lax.dot_general(*as_int, dimension_numbers)
    return lax.ne(counts, lax.full_like(counts, 0))


def einsum(subscripts, *operands, out=None, optimize="auto", precision=None, preferred_element_type=None,
           out_sharding=None, _dot_general=None):
    """Einstein summation, as `jnp.einsum`: explicit (`'ij,jk->ik'`) or implicit (`'ij,jk'`) output,
    `...` broadcasting, repeated labels (diagonals, traces), and any number of operands, contracted
    pairwise in the order `optimize` picks ('auto'/'optimal'/True: fewest multiply-adds for up to
    8 operands, else greedy; 'greedy'; False: left to right; or a path from einsum_path).

    Also takes numpy's interleaved form `einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])`.
    `out_sharding` lays the result out by a Sharding or a PartitionSpec over the mesh in context.
    `_dot_general` (as jax's) replaces `lax.dot_general` for the contractions (a quantized one, say).
    """
    if out_sharding is not None:
        return laid_out(einsum(subscripts, *operands, out=out, optimize=optimize, precision=precision,
                               preferred_element_type=preferred_element_type, _dot_general=_dot_general),
                        out_sharding)
    if out is not None:
        raise NotImplementedError("The 'out' argument to numax.numpy.einsum is not supported (arrays are immutable)")
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved_to_subscripts((subscripts,) + operands)
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    check_arraylike("einsum", *operands)
    arrays = [to_array(x) for x in operands]
    arrays = promote_dtypes(*arrays) if len(arrays) > 1 else arrays
    result_dtype, result_weak = dtypes.result_type(*arrays, return_weak_type_flag=True)
    preferred = None
    if preferred_element_type is not None:
        preferred = dtypes.canonicalize_dtype(preferred_element_type)
        result_dtype, result_weak = preferred, False
    shapes = [shape(x) for x in arrays]
    spec = _parse(subscripts, shapes)
    items = _simplified_inputs(spec, shapes, arrays)
    path = _path([labels for _, labels in items], spec.output, spec.sizes, optimize)
    for step in path:
        chosen = [items[k] for k in step]
        rest = [item for k, item in enumerate(items) if k not in step]
        keep = _keep_labels([labels for _, labels in rest], (), spec.output)
        operand, labels = chosen[0]
        for k, (other, other_labels) in enumerate(chosen[1:]):
            later = set(keep).union(*(lbls for _, lbls in chosen[k + 2:]))
            operand, labels = _contract_pair(operand, labels, other, other_labels, later, precision, preferred,
                                             _dot_general)
        items = rest + [(operand, labels)]
    (operand, labels), = items
    operand, labels = _reduce_labels(operand, labels, set(spec.output))
    operand = lax.transpose(operand, [labels.index(label) for label in spec.output])
    return lax.convert_element_type(operand, result_dtype, result_weak)


# --- einsum_path ------------------------------------------------------------------------------------------
class EinsumPath:
    """The contraction order einsum would use, with a printable table of its steps."""

    def __init__(self, spec, label_sets, path):
        self.spec = spec
        self.path = path
        self.steps = []
        items = [list(labels) for labels in label_sets]
        naive_labels = set().union(*label_sets) | set(spec.output)
        self.naive_flops = _size(naive_labels, spec.sizes) * builtins.max(len(label_sets) - 1, 1)
        self.flops, self.largest = 0, 0
        for step in path:
            chosen = [items[k] for k in step]
            rest = [labels for k, labels in enumerate(items) if k not in step]
            keep = _keep_labels(rest, (), spec.output)
            involved = set().union(*chosen)
            result = [label for label in dict.fromkeys(sum(chosen, [])) if label in keep]
            self.flops += _size(involved, spec.sizes)
            self.largest = builtins.max(self.largest, _size(result, spec.sizes))
            items = rest + [result]
            self.steps.append((len(involved), ",".join("".join(c) for c in chosen) + "->" + "".join(result),
                               ",".join("".join(labels) for labels in items) + "->" + "".join(spec.output)))

    def __str__(self):
        lines = [
            f"  Complete contraction:  {self.spec.text()}",
            f"      Naive FLOP count:  {self.naive_flops:.3e}",
            f"  Optimized FLOP count:  {self.flops:.3e}",
            f"  Largest intermediate:  {self.largest:.3e} elements",
            "-" * 74,
            f"{'scaling':<10}{'current':>30}{'remaining':>34}",
            "-" * 74,
        ]
        lines += [f"{scaling:>4}      {current:>30}{remaining:>34}" for scaling, current, remaining in self.steps]
        return "\n".join(lines)

    __repr__ = __str__


def einsum_path(subscripts, *operands, optimize="greedy"):
    """(contraction path, printable EinsumPath) for the einsum of operands of these shapes.

    The path is a list of tuples of positions in the list of remaining operands, each contraction's
    result going to the end of the list (opt_einsum's and numpy's convention); einsum takes it as
    `optimize=path`. Operands may be arrays or anything with a `.shape`.
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved_to_subscripts((subscripts,) + operands)
    shapes = [tuple(x.shape) if hasattr(x, "shape") else shape(to_array(x)) for x in operands]
    spec = _parse(subscripts, shapes)
    label_sets = [labels for _, labels in _simplified_inputs(spec, shapes)]
    path = _path(label_sets, spec.output, spec.sizes, optimize)
    return path, EinsumPath(spec, label_sets, path)
