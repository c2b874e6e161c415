# Code cells of jax-ml/jax docs/aot.md at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=43 tags=[]
import jax

# %% line=45 tags=[]
def f(x, y): return 2 * x + y

# %% line=46 tags=[]
x, y = 3, 4

# %% line=48 tags=[]
traced = jax.jit(f).trace(x, y)

# %% line=51 tags=[]
print(traced.jaxpr)

# %% line=57 tags=[]
lowered = traced.lower()

# %% line=60 tags=[]
print(lowered.as_text())

# %% line=70 tags=[]
compiled = lowered.compile()

# %% line=73 tags=[]
compiled.cost_analysis()['flops']

# %% line=77 tags=[]
compiled(x, y)

# %% line=95 tags=[]
i32_scalar = jax.ShapeDtypeStruct((), jnp.dtype('int32'))

# %% line=96 tags=[]
jax.jit(f).trace(i32_scalar, i32_scalar).lower().compile()(x, y)

# %% line=111 tags=[]
x_1d = y_1d = jnp.arange(3)

# %% line=112 tags=["raises-exception"]
jax.jit(f).trace(i32_scalar, i32_scalar).lower().compile()(x_1d, y_1d)  # doctest: +IGNORE_EXCEPTION_DETAIL


# %% line=119 tags=[]
x_f = y_f = jnp.float32(72.)

# %% line=120 tags=["raises-exception"]
jax.jit(f).trace(i32_scalar, i32_scalar).lower().compile()(x_f, y_f)  # doctest: +IGNORE_EXCEPTION_DETAIL


# %% line=141 tags=[]
lowered_with_x = jax.jit(f, static_argnums=0).trace(7, 8).lower()

# %% line=144 tags=[]
print(lowered_with_x.as_text())

# %% line=153 tags=[]
lowered_with_x.compile()(5)

# %% line=169 tags=["raises-exception"]
jax.jit(f, static_argnums=0).trace(i32_scalar, i32_scalar)  # doctest: +SKIP

# %% line=173 tags=[]
jax.jit(f, static_argnums=0).trace(10, i32_scalar).lower().compile()(5)

# %% line=191 tags=[]
def g(x):
  assert x.shape == (3, 2)
  return x @ jnp.ones(2)

# %% line=195 tags=[]
def make_z(*shape):
  return jnp.arange(np.prod(shape)).reshape(shape)

# %% line=198 tags=[]
z, zs = make_z(3, 2), make_z(4, 3, 2)

# %% line=200 tags=[]
g_jit = jax.jit(g)

# %% line=201 tags=[]
g_aot = jax.jit(g).trace(z).lower().compile()

# %% line=203 tags=[]
jax.vmap(g_jit)(zs)

# %% line=209 tags=["raises-exception"]
jax.vmap(g_aot)(zs)  # doctest: +SKIP
