"""checkify's rules for calls that carry more than a program: custom_jvp and custom_vjp (their user's rules) and
pmap and shard_map (their devices). transforms/checkify.py has the interpreter and installs these rules.

custom_jvp / custom_vjp, as in JAX: checkify checks the function's program (the error's leaves travel through
the call as extra inputs and outputs), but adds no checks to the user's derivative rules; when differentiation
meets the call (jvp or grad of a checkified function), the rules run and the error that came in is passed out
unchanged. To check a rule, checkify the derivative instead (`checkify(jax.grad(f))`).

pmap / shard_map, as in JAX: the error enters every device's program as a replicated value and leaves it
per device, stacked along a new leading axis of the devices (a "mapped" error, whose `get()` names the device:
"at mapped index 3: ..."). An error already mapped over the same number of devices (by an earlier pmap or
shard_map) enters mapped, each device its own.
"""

import dataclasses
import types

from ..core import pytree as tree
from ..core.ad_util import Zero, tangent_aval
from ..core.evaluation import eval_closed_program
from ..core.staging import trace_to_closed_program
from ..core.trace import get_aval_of
from .checkify import Error, _checkified_with, _consts_first, _split_error, _with_placeholders


class _CallRules:
    """One checkified custom call: the error's structure in (`err_tree`) and out (`out_tree`, with the kinds
    `effects` its program can add), and whether the user's rules ran during the bind (the call was
    differentiated): the error out is then the one that came in, with its codes only (as JAX's, whose error
    then has no new metadata)."""

    def __init__(self, err_tree, out_tree, effects):
        self.err_tree, self.out_tree, self.effects = err_tree, out_tree, effects
        self.ran = False

    def forward_error(self, err_leaves):
        """The leaves of the error out when the rules run: the incoming error unchanged, with the kinds the
        program could add present but not failed."""
        self.ran = True
        leaves, forwarded_tree = tree.tree_flatten(_with_placeholders(self.err_tree.unflatten(err_leaves),
                                                                      self.effects))
        assert forwarded_tree.num_leaves == self.out_tree.num_leaves
        return leaves

    def result(self, error_in, outs):
        error, outs = _split_error(self.out_tree, outs)
        if self.ran:
            error = dataclasses.replace(error, _metadata=dict(error_in._metadata))
        return error, outs


# --- custom_jvp -------------------------------------------------------------------------------------------------
class _ErrorForwardingJVPRule:
    """A custom_jvp call's rule once checkify put the error's leaves in front of its dynamic nondiff arguments:
    runs the user's rule on the rest and passes the error through (tangents: zero). Hashed by identity."""

    def __init__(self, rule, call, num_error_leaves):
        self.rule, self.call, self.num_error_leaves = rule, call, num_error_leaves
        self.arguments = types.SimpleNamespace(num_dynamic=num_error_leaves + rule.arguments.num_dynamic)

    def __repr__(self):
        return repr(self.rule)

    def __call__(self, dynamic_nondiff, primals, tangents):
        n = self.num_error_leaves
        primal_out, out_tree, tangent_out = self.rule(dynamic_nondiff[n:], primals, tangents)
        err_out = self.call.forward_error(list(dynamic_nondiff[:n]))
        return err_out + list(primal_out), out_tree, [Zero(tangent_aval(get_aval_of(e))) for e in err_out] + list(
            tangent_out)


def _custom_jvp_rule(error, enabled_errors, *args, program, jvp, num_consts, symbolic_zeros, name):
    from .custom_jvp_call import custom_jvp_call_p

    (checked, out_tree, effects), err_leaves = _checkified_with(program, enabled_errors, error)
    n = len(err_leaves)
    call = _CallRules(tree.tree_structure(error), out_tree, effects)
    outs = custom_jvp_call_p.bind(*args[:num_consts], *err_leaves, *args[num_consts:],
                                  program=_consts_first(checked, n, num_consts),
                                  jvp=_ErrorForwardingJVPRule(jvp, call, n), num_consts=num_consts,
                                  symbolic_zeros=symbolic_zeros, name=name)
    return call.result(error, outs)


# --- custom_vjp -------------------------------------------------------------------------------------------------
class _ErrorForwardingVJPRule:
    """A custom_vjp call's fwd and bwd once checkify put the error's leaves in front of its differentiable
    arguments: fwd runs the user's on the rest and passes the error through; bwd gives the error no cotangent.
    Has the interface of custom_vjp_call's `_VJPRule`; hashed by identity."""

    def __init__(self, rule, call, err_avals, err_out_avals):
        from .custom_vjp_call import _BackwardRule

        self.rule, self.call = rule, call
        self.err_avals, self.err_out_avals = list(err_avals), list(err_out_avals)
        self.backward_rule = _BackwardRule(self)
        self.bwd = rule.bwd

    def __repr__(self):
        return repr(self.rule)

    @property
    def in_avals(self):
        return self.err_avals + list(self.rule.in_avals)

    @property
    def out_avals(self):
        return self.err_out_avals + list(self.rule.out_avals)

    @property
    def out_tree(self):
        return self.rule.out_tree

    def forward(self, primals, perturbed):
        n = len(self.err_avals)
        primal_out, residuals, res_tree = self.rule.forward(list(primals[n:]), list(perturbed[n:]))
        return self.call.forward_error(list(primals[:n])) + list(primal_out), residuals, res_tree

    def backward(self, residuals, res_tree, cts):
        cts_in = self.rule.backward(residuals, res_tree, list(cts[len(self.err_out_avals):]))
        return [Zero(tangent_aval(aval)) for aval in self.err_avals] + list(cts_in)


def _custom_vjp_rule(error, enabled_errors, *args, program, fwd, bwd, num_consts, symbolic_zeros, name):
    from .custom_vjp_call import custom_vjp_call_p

    (checked, out_tree, effects), err_leaves = _checkified_with(program, enabled_errors, error)
    n = len(err_leaves)
    call = _CallRules(tree.tree_structure(error), out_tree, effects)
    rule = _ErrorForwardingVJPRule(fwd, call, [get_aval_of(e) for e in err_leaves],
                                   checked.out_avals[:out_tree.num_leaves])
    outs = custom_vjp_call_p.bind(*args[:num_consts], *err_leaves, *args[num_consts:],
                                  program=_consts_first(checked, n, num_consts), fwd=rule, bwd=rule.backward_rule,
                                  num_consts=num_consts, symbolic_zeros=symbolic_zeros, name=name)
    return call.result(error, outs)


# --- pmap and shard_map: errors per device ------------------------------------------------------------------------
def _mapped_leaves(error, count):
    """Per leaf of `error`: whether its kind was recorded per device by a map over `count` devices."""
    mapped = {effect for effect, pred in error._pred.items() if get_aval_of(pred).shape[:1] == (count,)}
    marks = Error({e: e in mapped for e in error._pred}, {e: e in mapped for e in error._code}, error._metadata,
                  {e: [e in mapped] * len(leaves) for e, leaves in error._payload.items()})
    return tree.tree_leaves(marks)


def _per_device_error(error, count):
    """`error` as one device's program sees it (its treedef, its leaves' avals: of a kind mapped over `count`
    devices, one device's part) and which of its leaves are mapped."""
    leaves, err_tree = tree.tree_flatten(error)
    marks = _mapped_leaves(error, count)
    avals = tuple(get_aval_of(leaf) for leaf in leaves)
    return err_tree, tuple(aval.update(shape=aval.shape[1:]) if m else aval for aval, m in zip(avals, marks)), marks


def _pmap_rule(error, enabled_errors, *args, program, axis_name, axis_size, in_axes, out_axes, **params):
    from ..lax.collectives import extend_axis_env
    from .checkify import checkified_program
    from .pmap import pmap_p

    err_tree, err_avals, marks = _per_device_error(error, axis_size)
    with extend_axis_env(axis_name, axis_size):
        checked, out_tree, _ = checkified_program(program, enabled_errors, err_tree, err_avals)
    err_axes = tuple(0 if m else None for m in marks)
    outs = pmap_p.bind(*tree.tree_leaves(error), *args, program=checked, axis_name=axis_name, axis_size=axis_size,
                       in_axes=err_axes + tuple(in_axes), out_axes=(0,) * out_tree.num_leaves + tuple(out_axes),
                       **params)
    return _split_error(out_tree, outs)


def _shard_map_rule(error, enabled_errors, *args, program, mesh, in_specs, out_specs, manual_axes, check_vma):
    import math

    from ..core.sharding import P
    from ..lax.shapes import expand_dims, squeeze
    from .checkify import checkified_program
    from .shard_map import _mesh_axes_bound, shard_map_p

    count = math.prod(mesh.shape[axis] for axis in manual_axes)
    devices = P(tuple(manual_axes))  # a leading axis of the devices (P keeps a 1-tuple as its axis)
    err_tree, err_avals, marks = _per_device_error(error, count)
    with _mesh_axes_bound(mesh, check_vma):
        checked, out_tree, _ = checkified_program(program, enabled_errors, err_tree, err_avals)
        n_in, n_out = len(err_avals), out_tree.num_leaves

        def per_device(*values):
            # A mapped error's block has the devices' axis (of size 1 here): each device's error is its part.
            err_in = [squeeze(v, (0,)) if m else v for v, m in zip(values[:n_in], marks)]
            outs = eval_closed_program(checked, *err_in, *values[n_in:])
            return [expand_dims(e, (0,)) for e in outs[:n_out]] + list(outs[n_out:])

        varying = frozenset(manual_axes) if check_vma else frozenset()
        block_avals = [a.update(shape=(1,) + a.shape, vma=varying) if m else a for a, m in zip(err_avals, marks)]
        wrapped = trace_to_closed_program(per_device, block_avals + list(checked.in_avals[n_in:]))
    outs = shard_map_p.bind(*tree.tree_leaves(error), *args, program=wrapped, mesh=mesh,
                            in_specs=tuple(devices if m else P() for m in marks) + tuple(in_specs),
                            out_specs=(devices,) * n_out + tuple(out_specs), manual_axes=manual_axes,
                            check_vma=check_vma)
    return _split_error(out_tree, outs)


def call_rules():
    """{primitive: checkify rule} for the calls this module knows."""
    from .custom_jvp_call import custom_jvp_call_p
    from .custom_vjp_call import custom_vjp_call_p
    from .pmap import pmap_p
    from .shard_map import shard_map_p

    return {custom_jvp_call_p: _custom_jvp_rule, custom_vjp_call_p: _custom_vjp_rule, pmap_p: _pmap_rule,
            shard_map_p: _shard_map_rule}
