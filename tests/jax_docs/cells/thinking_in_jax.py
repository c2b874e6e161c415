# Code cells of jax-ml/jax docs/notebooks/thinking_in_jax.md at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=65 tags=[]
import jax.numpy as jnp

# %% line=71 tags=[]
import matplotlib.pyplot as plt

x_jnp = jnp.linspace(0, 10, 1000)
y_jnp = 2 * jnp.sin(x_jnp) * jnp.cos(x_jnp)
plt.plot(x_jnp, y_jnp);

# %% line=87 tags=[]
import numpy as np
import jax.numpy as jnp

x_np = np.linspace(0, 10, 1000)
x_jnp = jnp.linspace(0, 10, 1000)

# %% line=98 tags=[]
type(x_np)

# %% line=105 tags=[]
type(x_jnp)

# %% line=118 tags=[]
# NumPy: mutable arrays
x = np.arange(10)
x[0] = 10
print(x)

# %% line=132 tags=[]
%xmode minimal

# %% line=140 tags=["raises-exception"]
# JAX: immutable arrays
x = jnp.arange(10)
x[0] = 10

# %% line=153 tags=[]
y = x.at[0].set(10)
print(x)
print(y)

# %% line=184 tags=[]
import jax
import jax.numpy as jnp

x = jnp.arange(5)
isinstance(x, jax.Array)

# %% line=201 tags=[]
x.devices()

# %% line=207 tags=[]
x.sharding

# %% line=232 tags=[]
import jax.numpy as jnp

def norm(X):
  X = X - X.mean(0)
  return X / X.std(0)

# %% line=243 tags=[]
from jax import jit
norm_compiled = jit(norm)

# %% line=250 tags=[]
np.random.seed(1701)
X = jnp.array(np.random.rand(10000, 10))
np.allclose(norm(X), norm_compiled(X), atol=1E-6)

# %% line=258 tags=[]
%timeit norm(X).block_until_ready()
%timeit norm_compiled(X).block_until_ready()

# %% line=267 tags=[]
def get_negatives(x):
  return x[x < 0]

x = jnp.array(np.random.randn(10))
get_negatives(x)

# %% line=278 tags=["raises-exception"]
jit(get_negatives)(x)

# %% line=299 tags=[]
from jax import grad

def sum_logistic(x):
  return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))

x_small = jnp.arange(3.)
derivative_fn = grad(sum_logistic)
print(derivative_fn(x_small))

# %% line=312 tags=[]
def first_finite_differences(f, x, eps=1E-3):
  return jnp.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps)
                   for v in jnp.eye(len(x))])

print(first_finite_differences(sum_logistic, x_small))

# %% line=323 tags=[]
print(grad(jit(grad(jit(grad(sum_logistic)))))(1.0))

# %% line=330 tags=[]
from jax import jacobian
print(jacobian(jnp.exp)(x_small))

# %% line=341 tags=[]
from jax import jacfwd, jacrev
def hessian(fun):
  return jit(jacfwd(jacrev(fun)))
print(hessian(sum_logistic)(x_small))

# %% line=369 tags=[]
from jax import random

key = random.key(1701)
key1, key2 = random.split(key)
mat = random.normal(key1, (150, 100))
batched_x = random.normal(key2, (10, 100))

def apply_matrix(x):
  return jnp.dot(mat, x)

# %% line=384 tags=[]
def naively_batched_apply_matrix(v_batched):
  return jnp.stack([apply_matrix(v) for v in v_batched])

print('Naively batched')
%timeit naively_batched_apply_matrix(batched_x).block_until_ready()

# %% line=395 tags=[]
import numpy as np

@jit
def batched_apply_matrix(batched_x):
  return jnp.dot(batched_x, mat.T)

np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                           batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)
print('Manually batched')
%timeit batched_apply_matrix(batched_x).block_until_ready()

# %% line=411 tags=[]
from jax import vmap

@jit
def vmap_batched_apply_matrix(batched_x):
  return vmap(apply_matrix)(batched_x)

np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                           vmap_batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)
print('Auto-vectorized with vmap')
%timeit vmap_batched_apply_matrix(batched_x).block_until_ready()

# %% line=442 tags=[]
from jax import random

key = random.key(43)
print(key)

# %% line=451 tags=[]
print(random.normal(key))
print(random.normal(key))

# %% line=460 tags=[]
for i in range(3):
  new_key, subkey = random.split(key)
  del key  # The old key is consumed by split() -- we must never use it again.

  val = random.normal(subkey)
  del subkey  # The subkey is consumed by normal().

  print(f"draw {i}: {val}")
  key = new_key  # new_key is safe to use in the next iteration.

# %% line=488 tags=[]
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
  print("print(x) ->", x)
  y = jnp.sin(x)
  print("print(y) ->", y)
  return y

result = f(2.)

# %% line=504 tags=[]
@jax.jit
def f(x):
  jax.debug.print("jax.debug.print(x) -> {x}", x=x)
  y = jnp.sin(x)
  jax.debug.print("jax.debug.print(y) -> {y}", y=y)
  return y

result = f(2.)
