# Code cells of jax-ml/jax docs/random-numbers.md at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=38 tags=[]
import numpy as np
np.random.seed(0)

# %% line=47 tags=[]
print(np.random.random())
print(np.random.random())
print(np.random.random())

# %% line=58 tags=[]
def print_truncated_random_state():
  """To avoid spamming the outputs, print only part of the state."""
  full_random_state = np.random.get_state()
  print(str(full_random_state)[:460], '...')

print_truncated_random_state()

# %% line=69 tags=[]
np.random.seed(0)
print_truncated_random_state()

# %% line=74 tags=[]
_ = np.random.uniform()
print_truncated_random_state()

# %% line=81 tags=[]
np.random.seed(0)
print(np.random.uniform(size=3))

# %% line=88 tags=[]
np.random.seed(0)
print("individually:", np.stack([np.random.uniform() for _ in range(3)]))

np.random.seed(0)
print("all at once: ", np.random.uniform(size=3))

# %% line=108 tags=[]
import numpy as np

np.random.seed(0)

def bar(): return np.random.uniform()
def baz(): return np.random.uniform()

def foo(): return bar() + 2 * baz()

print(foo())

# %% line=132 tags=[]
from jax import random

key = random.key(42)
print(key)

# %% line=149 tags=[]
print(random.normal(key))
print(random.normal(key))

# %% line=161 tags=[]
for i in range(3):
  new_key, subkey = random.split(key)
  del key  # The old key is consumed by split() -- we must never use it again.

  val = random.normal(subkey)
  del subkey  # The subkey is consumed by normal().

  print(f"draw {i}: {val}")
  key = new_key  # new_key is safe to use in the next iteration.

# %% line=186 tags=[]
key, subkey = random.split(key)

# %% line=193 tags=[]
key, *forty_two_subkeys = random.split(key, num=43)

# %% line=206 tags=[]
key = random.key(42)
subkeys = random.split(key, 3)
sequence = np.stack([random.normal(subkey) for subkey in subkeys])
print("individually:", sequence)

key = random.key(42)
print("all at once: ", random.normal(key, shape=(3,)))

# %% line=220 tags=[]
import jax
print("vectorized:", jax.vmap(random.normal)(subkeys))
