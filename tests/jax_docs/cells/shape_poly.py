# Code cells of jax-ml/jax docs/export/shape_poly.md at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=17 tags=[]
import jax

# %% line=18 tags=[]
from jax import export

# %% line=19 tags=[]
from jax import numpy as jnp

# %% line=20 tags=[]
def f(x):  # f: f32[a, b]
  return jnp.concatenate([x, x], axis=1)

# %% line=24 tags=[]
a, b = export.symbolic_shape("a, b")

# %% line=27 tags=[]
x_shape = (a, b)

# %% line=28 tags=[]
x_shape

# %% line=32 tags=[]
exp: export.Exported = export.export(jax.jit(f))(
    jax.ShapeDtypeStruct(x_shape, jnp.int32))

# %% line=34 tags=[]
exp.in_avals

# %% line=36 tags=[]
exp.out_avals

# %% line=40 tags=[]
res = exp.call(np.ones((3, 4), dtype=np.int32))

# %% line=41 tags=[]
res.shape

# %% line=63 tags=[]
def f1(x, y): # x: f32[a, 1], y : f32[a, 4]
 return x + y

# %% line=67 tags=[]
x = np.ones((3, 1), dtype=np.int32)

# %% line=68 tags=[]
y = np.ones((3, 4), dtype=np.int32)

# %% line=69 tags=[]
args_specs = export.symbolic_args_specs((x, y), "a, ...")

# %% line=70 tags=[]
exp = export.export(jax.jit(f1))(* args_specs)

# %% line=71 tags=[]
exp.in_avals

# %% line=151 tags=[]
f = lambda x: jnp.reshape(x, (x.shape[0] * x.shape[1],))

# %% line=152 tags=[]
arg_spec = jax.ShapeDtypeStruct(export.symbolic_shape("b, 4"), jnp.int32)

# %% line=153 tags=[]
exp = export.export(jax.jit(f))(arg_spec)

# %% line=154 tags=[]
exp.out_avals

# %% line=165 tags=[]
exp = export.export(jax.jit(lambda x: jnp.array(x.shape[0]) + x))(
    jax.ShapeDtypeStruct(export.symbolic_shape("b"), np.int32))

# %% line=167 tags=[]
exp.call(jnp.arange(3, dtype=np.int32))

# %% line=170 tags=["raises-exception"]
exp = export.export(jax.jit(lambda x: x.reshape(jnp.array(x.shape[0]) + 2)))(
    jax.ShapeDtypeStruct(export.symbolic_shape("b"), np.int32))  # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=186 tags=[]
exp = export.export(jax.jit(
    lambda x: (5. + x.shape[0],
               x.shape[0] - np.arange(5, dtype=jnp.int32),
               x + x.shape[0] + jnp.sin(x.shape[0]))))(
    jax.ShapeDtypeStruct(export.symbolic_shape("b"), jnp.int32))

# %% line=191 tags=[]
exp.out_avals

# %% line=196 tags=[]
exp.call(jnp.ones((3,), jnp.int32))

# %% line=207 tags=[]
exp = export.export(jax.jit(
    lambda x: jnp.sum(x, axis=0) / x.shape[0]))(
    jax.ShapeDtypeStruct(export.symbolic_shape("b, c"), jnp.int32))

# %% line=210 tags=[]
exp.call(jnp.arange(12, dtype=jnp.int32).reshape((3, 4)))

# %% line=223 tags=[]
v, = export.symbolic_shape("v,")

# %% line=224 tags=["raises-exception"]
export.export(jax.jit(lambda x, y: x + y))(      # doctest: +IGNORE_EXCEPTION_DETAIL
    jax.ShapeDtypeStruct((v,), dtype=np.int32),  # doctest: +IGNORE_EXCEPTION_DETAIL
    jax.ShapeDtypeStruct((4,), dtype=np.int32))  # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=230 tags=["raises-exception"]
export.export(jax.jit(lambda x: jnp.matmul(x, x)))(  # doctest: +IGNORE_EXCEPTION_DETAIL
    jax.ShapeDtypeStruct((v, 4), dtype=np.int32))    # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=264 tags=["raises-exception"]
export.export(jax.jit(lambda x: 0 if x.shape[0] + 1 >= x.shape[1] else 1))(
    jax.ShapeDtypeStruct(export.symbolic_shape("a, b"), dtype=np.int32))  # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=315 tags=[]
_ = export.export(jax.jit(lambda x: x[0:16]))(
   jax.ShapeDtypeStruct(export.symbolic_shape("b + 15"), dtype=np.int32))

# %% line=327 tags=[]
a, b = export.symbolic_shape("a, b",
                             constraints=("a >= b", "b >= 16"))

# %% line=329 tags=[]
_ = export.export(jax.jit(lambda x: x[:x.shape[1], :16]))(
   jax.ShapeDtypeStruct((a, b), dtype=np.int32))

# %% line=362 tags=[]
a, b, c, d = export.symbolic_shape("a, b, c, d",
                                   constraints=("a * b == c + d",))

# %% line=364 tags=[]
2 * b * a

# %% line=367 tags=[]
a * b * b

# %% line=383 tags=[]
b, = export.symbolic_shape("b")

# %% line=384 tags=[]
f = lambda x: lax.slice_in_dim(x, 0, x.shape[0] % 3)

# %% line=385 tags=["raises-exception"]
export.export(jax.jit(f))(
    jax.ShapeDtypeStruct((b,), dtype=np.int32))  # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=404 tags=[]
b, = export.symbolic_shape("b",
                           constraints=["b >= mod(b, 3)"])

# %% line=406 tags=[]
f = lambda x: lax.slice_in_dim(x, 0, x.shape[0] % 3)

# %% line=407 tags=[]
_ = export.export(jax.jit(f))(
    jax.ShapeDtypeStruct((b,), dtype=np.int32))

# %% line=428 tags=[]
a1, = export.symbolic_shape("a,")

# %% line=429 tags=[]
a2, = export.symbolic_shape("a,", constraints=("a >= 8",))

# %% line=431 tags=["raises-exception"]
a1 + a2  # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=447 tags=[]
a, = export.symbolic_shape("a,", constraints=("a >= 8",))

# %% line=448 tags=[]
b, = export.symbolic_shape("b,", scope=a.scope)  # Reuse the scope of `a`

# %% line=450 tags=[]
a + b  # Allowed

# %% line=458 tags=[]
my_scope = export.SymbolicScope()

# %% line=459 tags=[]
c, = export.symbolic_shape("c", scope=my_scope)

# %% line=460 tags=[]
d, = export.symbolic_shape("d", scope=my_scope)

# %% line=461 tags=[]
c + d  # Allowed

# %% line=510 tags=[]
def my_top_k(k, x):  # x: i32[4, 10], k <= 10
  return lax.top_k(x, k)[0]  # : i32[4, 3]

# %% line=512 tags=[]
x = np.arange(40, dtype=np.int32).reshape((4, 10))

# %% line=515 tags=[]
exp_static_k = export.export(jax.jit(my_top_k, static_argnums=0))(3, x)

# %% line=516 tags=[]
exp_static_k.in_avals[0]

# %% line=519 tags=[]
exp_static_k.out_avals[0]

# %% line=523 tags=[]
exp_static_k.call(x)

# %% line=530 tags=[]
k, = export.symbolic_shape("k", constraints=["k <= 10"])

# %% line=531 tags=["raises-exception"]
export.export(jax.jit(my_top_k, static_argnums=0))(k, x)  # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=546 tags=[]
def my_top_k_with_dimensions(dimensions, x):  # dimensions: i32[0, k], x: i32[4, 10]
  return my_top_k(dimensions.shape[1], x)

# %% line=548 tags=[]
exp = export.export(jax.jit(my_top_k_with_dimensions))(
    jax.ShapeDtypeStruct((0, k), dtype=np.int32),
    x)

# %% line=551 tags=[]
exp.in_avals

# %% line=554 tags=[]
exp.out_avals[0]

# %% line=558 tags=[]
exp.call(np.zeros((0, 3), dtype=np.int32), x)

# %% line=571 tags=[]
a, = export.symbolic_shape("a")

# %% line=572 tags=["raises-exception"]
export.export(jax.jit(lambda x: x.shape[0]))(
   jax.ShapeDtypeStruct((a * a,), dtype=np.int32))  # doctest: +IGNORE_EXCEPTION_DETAIL

# %% line=601 tags=[]
def f(x):  # x: f32[b, b, 2*d]
  return x

# %% line=603 tags=[]
exp = export.export(jax.jit(f))(
    jax.ShapeDtypeStruct(export.symbolic_shape("b, b, 2*d"), dtype=np.int32))

# %% line=605 tags=["raises-exception"]
exp.call(np.ones((3, 3, 5), dtype=np.int32))  # doctest: +IGNORE_EXCEPTION_DETAIL
