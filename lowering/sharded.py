"""Programs partitioned over a mesh of devices: sharded jit, and arrays placed by a Sharding.

A program whose arguments, results or equations carry NamedShardings is lowered once for the whole mesh,
with Shardy annotations (`sdy.mesh`, `sdy.sharding` on arguments and results, `sdy.sharding_constraint`
inside), and XLA's SPMD partitioner splits it and inserts the communication. `ShardedExecutable` runs such
a program on the blocks of its arguments and wraps each output's blocks as a ShardedArray, with the sharding
the user asked for or, where none was asked for, the one XLA chose. `put_sharded` places a host value
by a sharding.
"""


import numpy as np

from ..core import caches
from ..core.ir import open_program, programs_in
from ..core.partial_sums import partial_sum_blocks
from ..core.sharding import Mesh, NamedSharding, P, check_broadcasting_splits, has_partial_sums, sharding_with_layout
from . import native_dispatch, xla
from .array import Array, canonical_aval, is_committed
from .lower import hoist_large_consts, lower_to_module
from .sharded_array import ShardedArray


# --- describing layouts to XLA ----------------------------------------------------------------------------
def sdy_sharding(symbol, sharding, ndim):
    """The Shardy sharding `<@mesh, [{"x"}, {}]>` of a NamedSharding on an array of rank `ndim`: each
    dimension closed to the axes the spec names (`{?}`: open, for P.UNCONSTRAINED)."""
    entries = tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec))
    dims = []
    for entry in entries:
        if entry is P.UNCONSTRAINED:
            dims.append("{?}")
        else:
            axes = () if entry is None else entry if isinstance(entry, tuple) else (entry,)
            dims.append("{" + ", ".join(f'"{axis}"' for axis in axes) + "}")
    return f"<@{symbol}, [{', '.join(dims)}]>"


def sdy_attribute(sharding, ndim):
    """An argument's or result's `sdy.sharding` attribute, as a function of the module (which declares the mesh)."""
    return lambda module: "sdy.sharding = #sdy.sharding" + sdy_sharding(module.mesh_symbol(sharding.mesh), sharding,
                                                                       ndim)


def hlo_sharding(sharding, ndim, devices):
    """The HLO sharding of `sharding` on an array of rank `ndim`, positions counted in `devices`' order."""
    return _hlo_sharding(sharding, ndim, tuple(devices))


@caches.lru(4096)
def _hlo_sharding(sharding, ndim, devices):
    blocks, coordinates = sharding._block_layout(ndim)
    position = {device: k for k, device in enumerate(devices)}
    copies = len(coordinates) // max(1, int(np.prod(blocks)))
    tiles = {}
    for device, coordinate in zip(sharding._device_assignment, coordinates):
        tiles.setdefault(tuple(coordinate), []).append(position[device])
    tile_devices = [k for coordinate in sorted(tiles) for k in tiles[coordinate]]
    return xla.tiled_hlo_sharding(blocks, tile_devices, copies)


def _attributes(shardings, avals):
    """{position: sdy.sharding attribute} of the arguments or results whose sharding is a NamedSharding."""
    return {i: sdy_attribute(s, aval.ndim) for i, (s, aval) in enumerate(zip(shardings, avals))
            if isinstance(s, NamedSharding)}


# --- placing values -----------------------------------------------------------------------------------------
def block_buffers(host, sharding, backend):
    """One device buffer per addressable device of `sharding` holding that device's block of `host`."""
    return [xla.device_put(np.ascontiguousarray(host[index]), backend, device)
            for device, index in sharding.addressable_devices_indices_map(host.shape).items()]


def put_sharded(value, sharding, aval):
    """`value` (host data or an array, of `aval`) laid out by `sharding` as a ShardedArray."""
    aval = canonical_aval(aval)  # (so that the cache keys of calls on it match by identity)
    if type(value) is ShardedArray and value.has_layout(sharding):
        mine = value._sharding
        if mine is sharding or mine == sharding or mine._device_assignment != sharding._device_assignment:
            return value
        # The same blocks in the same places, described as asked (a spec over a retyped mesh, say), as jax's are.
        return ShardedArray(aval, value._shards, value._backend, sharding)
    host = np.asarray(value, dtype=aval.dtype)
    backend = xla.backend_of_device(next(iter(sharding.device_set)))
    if has_partial_sums(sharding):  # each device holds its share of a sum (P(..., unreduced=...)), as jax splits it
        source = value._sharding if type(value) is ShardedArray else None
        blocks = partial_sum_blocks(sharding, host, source)
        return ShardedArray(aval, [xla.device_put(np.ascontiguousarray(block), backend, device)
                                   for device, block in blocks.items()], backend, sharding)
    return ShardedArray(aval, block_buffers(host, sharding, backend), backend, sharding)


# --- which mesh a program runs over ------------------------------------------------------------------------
def meshes_of_program(program, found=None):
    """The meshes named by the equations of `program` and its sub-programs (sharding constraints, shard_maps)."""
    found = [] if found is None else found
    for eqn in program.equations:
        for value in eqn.params.values():
            for item in value if isinstance(value, tuple | list) else (value,):
                mesh = item.mesh if isinstance(item, NamedSharding) else item if isinstance(item, Mesh) else None
                if mesh is not None and mesh not in found:
                    found.append(mesh)
            for sub_program in programs_in(value):
                meshes_of_program(open_program(sub_program), found)
    return found


def program_mesh(program, in_shardings, out_shardings):
    """The mesh a partitioned program runs over (its device order is the program's), or None when nothing asks
    for more than a single device's program: the first NamedSharding's mesh among the arguments, results and
    equations. Every sharding must use the same set of devices."""
    shardings = [s for s in list(in_shardings) + list(out_shardings) if s is not None]
    meshes = [s.mesh for s in shardings if isinstance(s, NamedSharding)] + meshes_of_program(program)
    if meshes:
        mesh = meshes[0]
    elif shardings:
        mesh = Mesh(np.array(shardings[0]._device_assignment, dtype=object), ("devices",))
    else:
        return None
    devices = tuple(mesh.devices.flat)
    for sharding in shardings + [NamedSharding(m, P()) for m in meshes]:
        if sharding._device_assignment != devices:  # (the same devices in another order are refused too, as in jax)
            raise ValueError(incompatible_devices_message(("a sharding", sharding._device_assignment),
                                                          ("one", devices)))
    return mesh


def incompatible_devices_message(first, second):
    """jax's error for values of one computation on different devices: `first` and `second` are (what, devices)."""
    def described(what, devices):
        return f"{what} with device ids {[d.id for d in devices]} on platform {devices[0].platform.upper()}"

    return (f"Received incompatible devices for jitted computation. Got {described(*first)} and "
            f"{described(*second)}; every argument, result and constraint of one computation must use the same "
            "devices in the same order (move arrays with numax.device_put)")


def check_committed_devices(args):
    """A ValueError, as jax's, when committed arguments of one computation (arrays laid out over devices, and
    single-device arrays committed to theirs) lie on different devices (or the same ones in another order)."""
    first = None
    for arg in args:
        if isinstance(arg, Array) and is_committed(arg):
            devices = arg._device_assignment()
            if first is None:
                first = (arg, devices)
            elif devices != first[1]:
                raise ValueError(incompatible_devices_message(
                    (f"an argument of shape {first[0].aval.str_short()}", first[1]),
                    (f"an argument of shape {arg.aval.str_short()}", devices)))


def check_asked_sharding(value, asked, aval):
    """jax's check of a committed argument against the sharding jit's `in_shardings` asks for: the same blocks
    (wherever they lie: an array committed to other devices is moved), else a ValueError. Uncommitted arguments
    are laid out as asked."""
    if not is_committed(value):
        return
    own = value.sharding
    if own is asked or own == asked or _same_blocks(own, asked, aval.ndim):
        return
    raise ValueError(f"Sharding passed to jit does not match the sharding on the respective arg. Got jit sharding: "
                     f"{asked},\narg sharding: {own} for arg type: {aval.str_short()}")


@caches.lru(1024)
def _same_blocks(sharding, other, ndim):
    """Whether two shardings split an array into the same blocks, each held by the devices at the same
    positions of their own device orders (jax compares their HLO shardings so)."""
    return hlo_sharding(sharding, ndim, sharding._device_assignment) == hlo_sharding(other, ndim,
                                                                                     other._device_assignment)


def lower_partitioned(closed, name, mesh, in_shardings, out_shardings, platform):
    """Lowers a program for the devices of `mesh`, its arguments and results annotated with their shardings
    (None: as XLA's partitioner chooses). Large constants become leading arguments. Returns (text,
    ModuleContext, the lowered program, the hoisted constants, every argument's sharding or None)."""
    lowered, _, hoisted = hoist_large_consts(closed)
    in_shardings = [None] * len(hoisted) + list(in_shardings)
    devices = list(mesh.devices.flat)
    text, module = lower_to_module(lowered, name, platform, _attributes(in_shardings, lowered.program.in_avals),
                                   devices=devices, num_partitions=len(devices),
                                   result_attributes=_attributes(out_shardings, closed.program.out_avals))
    return text, module, lowered, hoisted, in_shardings


# --- executing ---------------------------------------------------------------------------------------------
class MultiDeviceCall:
    """Calls a program compiled for several devices on numax values: lays each argument out as the program
    takes it (an array already laid out so goes in as it is) and wraps each output, kept whole on the
    devices, as a ShardedArray.

    The native call path (lowering/native_dispatch.py) reads its slots to answer cache hits of the function
    owning it (that function's executable's `native_call`): `native_in` gives, per argument, the HLO sharding
    of the whole arrays it takes as they are (over `devices`; None: `argument` decides at each call), and
    `leading` holds the raw arguments passed before the call's own (`leading_values` laid out: the program's
    hoisted constants). `decided_per_call` are the argument positions that `argument` always decides (jit's
    in_shardings asked for a sharding other than the one the program takes: the check of a committed value's
    sharding belongs to the Python path)."""

    __slots__ = ("compiled", "execute", "devices", "backend", "in_avals", "in_shardings", "out_avals",
                 "out_shardings", "hlo_in", "out_layouts", "handlers", "native_in", "leading")

    def __init__(self, compiled, devices, in_avals, in_shardings, out_avals, out_shardings, host_callbacks=(),
                 leading_values=(), decided_per_call=()):
        self.compiled = compiled
        self.execute = xla.executor(host_callbacks)  # (one with callbacks keeps its token for effects_barrier)
        self.devices = devices = tuple(devices)
        self.backend = xla.backend_of_device(devices[0])
        self.in_avals, self.in_shardings = list(in_avals), list(in_shardings)
        self.out_avals, self.out_shardings = [canonical_aval(a) for a in out_avals], list(out_shardings)
        self.hlo_in = [hlo_sharding(s, a.ndim, devices) for s, a in zip(in_shardings, in_avals)]
        hlo_out = [hlo_sharding(s, a.ndim, devices) for s, a in zip(out_shardings, out_avals)]
        self.out_layouts = [(hlo, devices) for hlo in hlo_out]
        self.handlers = [xla.multi_device_result_handler(a.shape, a.dtype, devices, hlo)
                         for a, hlo in zip(out_avals, hlo_out)]
        # A ShardedArray whose whole array is laid out so is taken as it is: its layout describes its own blocks
        # (the outputs of a call feed the next one so). With host callbacks, the Python path runs the program (it
        # keeps the runtime token).
        self.native_in = None if host_callbacks else [
            None if k in decided_per_call else hlo for k, hlo in enumerate(self.hlo_in)]
        self.leading = [self.argument(value, k) for k, value in enumerate(leading_values)]

    def argument(self, value, k):
        """The raw multi-device array for argument `k`. Every way a program over several devices can be handed
        a wrong argument is ruled out here, before it runs: jaxlib, having reported such an error, crashes
        the process (a deleted block, a block of another shape)."""
        aval, sharding = self.in_avals[k], self.in_shardings[k]
        if type(value) is ShardedArray and value._sharding is sharding and value._parts is None:
            # (an output of a call laid out as this program takes it, alive: the checks below, answered at once)
            whole, layout = value._whole, value._whole_layout
            if (layout is not None and layout[0] is self.hlo_in[k] and layout[1] == self.devices
                    and (value.aval is aval or value.aval == aval) and not whole.is_deleted()):
                return whole
        if type(value) is ShardedArray and value.aval.dtype == aval.dtype and value.has_layout(sharding):
            if value.aval.shape != aval.shape:
                raise TypeError(f"argument of type {value.aval.str_short()} passed where {aval.str_short()} is "
                                "expected")
            value._check_alive()
            return value.whole(self.hlo_in[k], self.devices)
        host = np.asarray(value, dtype=aval.dtype)
        if host.shape != aval.shape:
            raise TypeError(f"argument of shape {host.shape} passed where {aval.str_short()} is expected")
        return xla.assemble(aval.shape, aval.dtype, self.devices, self.hlo_in[k],
                            block_buffers(host, sharding, self.backend))

    def run(self, arguments, values):
        """Runs on the raw `arguments` (made from `values` by `argument`, which checked them); returns the raw
        outputs."""
        return self.execute(self.compiled, arguments, self.handlers)

    def wrap(self, outputs):
        backend = self.backend
        return [ShardedArray(aval, None, backend, sharding, whole, layout) for aval, sharding, whole, layout in zip(
            self.out_avals, self.out_shardings, outputs, self.out_layouts)]


# The elementwise primitives whose operands broadcast (lax/elementwise.py): their operands' Explicit splits must
# agree, as JAX's types require.
_BROADCASTING_PRIMITIVES = frozenset((
    "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter", "and", "or", "xor", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "complex", "eq", "ne", "lt", "le", "gt", "ge", "polygamma"))


def check_operand_splits(program, in_shardings):
    """JAX's ShardingTypeError for a program of one broadcasting primitive (an eager operation, or a jit of one)
    on operands split over Explicit mesh axes in ways that do not combine. (numax's traced types carry no splits,
    so the operations inside a larger program are not checked.)"""
    if len(program.equations) != 1:
        return
    (eqn,) = program.equations
    if eqn.primitive.name in _BROADCASTING_PRIMITIVES and list(eqn.inputs) == list(program.invars):
        check_broadcasting_splits(eqn.primitive.name, [v.aval for v in eqn.inputs], in_shardings,
                                  eqn.outvars[0].aval)


class ShardedExecutable:
    """A program compiled for the devices of a mesh; runs on arguments' blocks, returns ShardedArrays."""

    def __init__(self, closed, name, mesh, in_shardings, out_shardings, reason=None, compiler_options=None,
                 asked_in_shardings=()):
        check_operand_splits(closed.program, in_shardings)
        self.name = name
        self.mesh = mesh
        self.devices = devices = tuple(mesh.devices.flat)
        # (position, sharding) of the arguments jit's in_shardings name: a committed argument must have it
        self.asked = [(k, s) for k, s in enumerate(asked_in_shardings) if s is not None]
        self.asked_positions = frozenset(k for k, _ in self.asked)
        self.backend = xla.backend_of_device(devices[0])
        self.in_avals, self.out_avals = closed.program.in_avals, closed.program.out_avals
        self.text, module, lowered, hoisted, self.in_shardings = lower_partitioned(
            closed, name, mesh, in_shardings, out_shardings, self.backend.platform)
        self.host_callbacks = module.host_callbacks
        self.compiled = xla.compile_module(self.text, self.backend, devices, module.host_callbacks,
                                           num_partitions=len(devices), spmd=True, compiler_options=compiler_options,
                                           log_as=(f"{name} for {len(devices)} devices", reason))
        # The layouts the compiled program takes and gives are XLA's: an argument whose sharding was not
        # annotated (not a NamedSharding) comes in as XLA chose, and is laid out so before each call.
        self.in_shardings = self._chosen(self.in_shardings, xla.parameter_shardings(self.compiled),
                                         lowered.program.in_avals)
        self.out_shardings = self._chosen(out_shardings, xla.output_shardings(self.compiled), self.out_avals)
        # The native path takes an argument as it is only where jit's in_shardings asked for nothing or for the
        # very sharding the program takes (then `check_committed` has nothing to say about a ShardedArray laid
        # out so).
        offset = len(hoisted)
        self.call = MultiDeviceCall(self.compiled, devices, lowered.program.in_avals, self.in_shardings,
                                    self.out_avals, self.out_shardings, module.host_callbacks, leading_values=hoisted,
                                    decided_per_call={offset + k for k, asked in self.asked
                                                      if asked is not self.in_shardings[offset + k]})
        self.const_arguments = self.call.leading
        # (the call the native path runs on a cache hit)
        self.native_call = None if self.call.native_in is None else self.call

    def _chosen(self, asked, chosen, avals):
        """Each value's sharding as the compiled program has it: the one asked for where XLA kept it, else the
        one XLA chose, described over the program's mesh."""
        shardings = []
        for k, (sharding, aval) in enumerate(zip(asked, avals)):
            if chosen is None:  # one device
                sharding = NamedSharding(self.mesh, P()) if sharding is None else sharding
            elif sharding is None or not xla.same_hlo_sharding(hlo_sharding(sharding, aval.ndim, self.devices),
                                                               chosen[k]):
                layout = xla.hlo_sharding_layout(chosen[k], aval.ndim)
                sharding = sharding_with_layout(self.mesh, aval.ndim, *layout)
            shardings.append(sharding)
        return shardings

    def check_committed(self, values):
        """jax's errors for committed arguments that the program cannot take as they are (see `argument` for
        what each call checks besides)."""
        for k, asked in self.asked:
            check_asked_sharding(values[k], asked, self.in_avals[k])
        devices, asked = self.devices, self.asked_positions
        for k, value in enumerate(values):
            if type(value) is Array and (value._device,) != devices and is_committed(value) and k not in asked:
                raise ValueError(incompatible_devices_message(
                    (f"an argument of shape {value.aval.str_short()}", (value._device,)),
                    (f"the computation over {len(devices)} devices", devices)))

    def run_on(self, values):
        self.check_committed(values)
        offset, call = len(self.const_arguments), self.call
        arguments = self.const_arguments + [call.argument(v, k) for k, v in enumerate(values, offset)]
        return call.run(arguments, values)

    def wrap_outputs(self, outputs):
        return self.call.wrap(outputs)

    def __call__(self, *args):
        return self.wrap_outputs(self.run_on(args))

    def as_text(self):
        return self.text

    def hlo_text(self):
        return self.compiled.get_hlo_text()


native_dispatch.configure_sharded(ShardedArray, MultiDeviceCall)
