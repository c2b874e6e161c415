# Code cells of jax-ml/jax docs/export/export.md at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=28 tags=[]
import re

# %% line=29 tags=[]
import numpy as np

# %% line=30 tags=[]
import jax

# %% line=31 tags=[]
from jax import export

# %% line=33 tags=[]
def f(x): return 2 * x * x

# %% line=36 tags=[]
exported: export.Exported = export.export(jax.jit(f))(
   jax.ShapeDtypeStruct((), np.float32))

# %% line=40 tags=[]
print(re.search(r".*@main.*", exported.mlir_module()).group(0))

# %% line=44 tags=[]
serialized: bytearray = exported.serialize()

# %% line=48 tags=[]
rehydrated_exp: export.Exported = export.deserialize(serialized)

# %% line=50 tags=[]
def callee(y):
 return 3. * rehydrated_exp.call(y * 4.)

# %% line=53 tags=[]
callee(1.)

# %% line=81 tags=[]
import jax

# %% line=82 tags=[]
from jax import export

# %% line=83 tags=[]
from typing import Callable

# %% line=85 tags=[]
def f(x): return 7 * x * x * x

# %% line=88 tags=[]
blob: bytearray = export.export(jax.jit(f))(1.).serialize(vjp_order=3)

# %% line=89 tags=[]
rehydrated_f: Callable = export.deserialize(blob).call

# %% line=91 tags=[]
rehydrated_f(0.1)  # 7 * 0.1^3

# %% line=94 tags=[]
jax.grad(rehydrated_f)(0.1)  # 7*3 * 0.1^2

# %% line=97 tags=[]
jax.grad(jax.grad(rehydrated_f))(0.1)  # 7*3*2 * 0.1

# %% line=100 tags=[]
jax.grad(jax.grad(jax.grad(rehydrated_f)))(0.1)  # 7*3*2

# %% line=103 tags=["raises-exception"]
jax.grad(jax.grad(jax.grad(jax.grad(rehydrated_f))))(0.1)  # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=190 tags=[]
import jax

# %% line=191 tags=[]
from jax import export

# %% line=192 tags=[]
from jax import lax

# %% line=193 tags=[]
from jax._src import core

# %% line=194 tags=[]
from jax._src.interpreters import mlir

# %% line=196 tags=[]
new_prim = core.Primitive("new_prim")

# %% line=197 tags=[]
_ = new_prim.def_abstract_eval(lambda x: x)

# %% line=198 tags=[]
_ = mlir.register_lowering(new_prim, lambda ctx, o: mlir.custom_call("my_new_prim", operands=[o], result_types=[o.type]).results)

# %% line=199 tags=[]
print(jax.jit(new_prim.bind).lower(1.).compiler_ir())

# %% line=208 tags=["raises-exception"]
export.export(jax.jit(new_prim.bind))(1.)  # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=213 tags=[]
exp = export.export(
   jax.jit(new_prim.bind),
   disabled_checks=[export.DisabledSafetyCheck.custom_call("my_new_prim")])(1.)

# %% line=229 tags=[]
from jax import export

# %% line=230 tags=[]
export.default_export_platform()

# %% line=247 tags=[]
import jax

# %% line=248 tags=[]
from jax import export

# %% line=249 tags=[]
from jax import lax

# %% line=253 tags=[]
exp = export.export(jax.jit(lax.cos), platforms=['tpu'])(1.)

# %% line=257 tags=["raises-exception"]
exp.call(1.)  # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=266 tags=[]
exp_unsafe = export.export(jax.jit(lax.cos),
   platforms=['tpu'],
   disabled_checks=[export.DisabledSafetyCheck.platform()])(1.)

# %% line=270 tags=[]
exp_unsafe.call(1.)

# %% line=274 tags=[]
exp_multi = export.export(jax.jit(lax.cos),
   platforms=['tpu', 'cpu', 'cuda'])(1.)

# %% line=276 tags=[]
exp_multi.call(1.)

# %% line=290 tags=[]
import jax

# %% line=291 tags=[]
from jax import export

# %% line=292 tags=[]
from jax import lax

# %% line=294 tags=[]
def f(x):
  for i in range(1000):
    x = jnp.cos(x)
  return x

# %% line=299 tags=[]
exp_single = export.export(jax.jit(f))(1.)

# %% line=300 tags=[]
len(exp_single.mlir_module_serialized)  # doctest: +SKIP

# %% line=303 tags=[]
exp_multi = export.export(jax.jit(f),
                          platforms=["cpu", "tpu", "cuda"])(1.)

# %% line=305 tags=[]
len(exp_multi.mlir_module_serialized)  # doctest: +SKIP

# %% line=337 tags=[]
import jax

# %% line=338 tags=[]
from jax import export

# %% line=339 tags=[]
from jax.sharding import AbstractMesh, Mesh, NamedSharding

# %% line=340 tags=[]
from jax.sharding import PartitionSpec as P

# %% line=343 tags=[]
export_mesh = AbstractMesh((4,), ("a",))

# %% line=345 tags=[]
def f(x):
  return x.T

# %% line=348 tags=[]
exp = export.export(jax.jit(f))(
   jax.ShapeDtypeStruct((32,), dtype=np.int32,
                        sharding=NamedSharding(export_mesh, P("a"))))

# %% line=353 tags=[]
exp.nr_devices

# %% line=358 tags=[]
exp.in_shardings_jax(export_mesh)

# %% line=362 tags=[]
concrete_devices = jax.local_devices()[:4]

# %% line=363 tags=[]
concrete_mesh = Mesh(concrete_devices, ("a",))

# %% line=364 tags=[]
exp2 = export.export(jax.jit(f))(
   jax.ShapeDtypeStruct((32,), dtype=np.int32,
                        sharding=NamedSharding(concrete_mesh, P("a"))))

# %% line=369 tags=[]
arg = jax.device_put(jnp.arange(8 * 4),
                     NamedSharding(concrete_mesh, P("a")))

# %% line=372 tags=[]
res1 = exp.call(arg)

# %% line=374 tags=[]
[f"device={s.device} index={s.index}" for s in res1.addressable_shards[:2]]

# %% line=380 tags=[]
other_mesh = Mesh(np.array(jax.local_devices()[2:6]).reshape((2, 2)), ("b", "c"))

# %% line=381 tags=[]
res2 = exp.call(jax.device_put(arg,
                               NamedSharding(other_mesh, P("b"))))

# %% line=387 tags=[]
[f"device={s.device} index={s.index}" for s in res2.addressable_shards[:2]]

# %% line=396 tags=[]
import jax

# %% line=397 tags=[]
from jax import export

# %% line=398 tags=[]
from jax.sharding import Mesh, NamedSharding

# %% line=399 tags=[]
from jax.sharding import PartitionSpec as P

# %% line=401 tags=[]
export_devices = jax.local_devices()

# %% line=402 tags=[]
export_mesh = Mesh(np.array(export_devices), ("a",))

# %% line=403 tags=[]
def f(x):
  return x.T

# %% line=406 tags=[]
exp = export.export(jax.jit(f))(
   jax.ShapeDtypeStruct((4 * len(export_devices),), dtype=np.int32,
                        sharding=NamedSharding(export_mesh, P("a"))))

# %% line=410 tags=[]
arg = jnp.arange(4 * len(export_devices))

# %% line=411 tags=["raises-exception"]
exp.call(arg)  # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=421 tags=[]
import jax

# %% line=422 tags=[]
from jax import export

# %% line=423 tags=[]
from jax.sharding import Mesh, NamedSharding

# %% line=424 tags=[]
from jax.sharding import PartitionSpec as P

# %% line=426 tags=[]
export_devices = jax.local_devices()

# %% line=427 tags=[]
export_mesh = Mesh(np.array(export_devices), ("a",))

# %% line=428 tags=[]
def f(x):
  return x.T

# %% line=432 tags=[]
exp = export.export(jax.jit(f))(
   jax.ShapeDtypeStruct((4 * len(export_devices),), dtype=np.int32,
                        sharding=NamedSharding(export_mesh, P("a"))))

# %% line=437 tags=[]
calling_mesh = Mesh(np.array(export_devices[::-1]), ("a",))

# %% line=440 tags=[]
arg = jnp.arange(4 * len(export_devices))

# %% line=441 tags=[]
sharded_arg = jax.device_put(arg, exp.in_shardings_jax(calling_mesh)[0])

# %% line=442 tags=[]
res = exp.call(sharded_arg)

# %% line=452 tags=[]
import jax

# %% line=453 tags=[]
from jax import export

# %% line=454 tags=[]
from jax.sharding import Mesh, NamedSharding

# %% line=455 tags=[]
from jax.sharding import PartitionSpec as P

# %% line=457 tags=[]
def f(x):
  return jnp.cos(x)

# %% line=460 tags=[]
arg = jnp.arange(4)

# %% line=461 tags=[]
exp = export.export(jax.jit(f))(arg)

# %% line=462 tags=[]
exp.in_avals

# %% line=465 tags=[]
exp.nr_devices

# %% line=469 tags=[]
calling_mesh = Mesh(jax.local_devices()[:4], ("b",))

# %% line=472 tags=[]
sharded_arg = jax.device_put(arg,
                             NamedSharding(calling_mesh, P("b")))

# %% line=474 tags=[]
res = exp.call(sharded_arg)

# %% line=487 tags=[]
from jax import export

# %% line=488 tags=[]
exp: export.Exported = export.export(jnp.cos)(1.)

# %% line=489 tags=[]
exp.calling_convention_version

# %% line=500 tags=[]
from jax import export

# %% line=501 tags=[]
(export.minimum_supported_calling_convention_version, export.maximum_supported_calling_convention_version)

# %% line=504 tags=[]
from jax._src import config

# %% line=505 tags=[]
with config.jax_export_calling_convention_version(10):
 exp = export.export(jnp.cos)(1.)
 exp.calling_convention_version

# %% line=744 tags=[]
from jax._src import config
from jax._src.lib import version as jaxlib_version

def my_lowering_rule(ctx: LoweringRuleContext, ...):
  if ctx.is_forward_compat() or jaxlib_version < (0, 4, 31):
    # this is the old lowering, using target T, while we
    # are in forward compatibility mode for T, or we
    # are in OSS and are using an old jaxlib.
    return hlo.custom_call("T", ...)
  else:
    # This is the new lowering, using target T_NEW, for
    # when we use a jaxlib with version `>= (0, 4, 31)`
    # (or when this is internal usage), and also we are
    # in JIT mode.
    return hlo.custom_call("T_NEW", ...)
