# Code cells of jax-ml/jax docs/pallas/grid_blockspec.md at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=14 tags=[]
pl.pallas_call(some_kernel, grid=(n,))(...)

# %% line=18 tags=[]
for i in range(n):
  some_kernel(...)

# %% line=25 tags=[]
pl.pallas_call(some_kernel, grid=(n, m))(...)

# %% line=29 tags=[]
for i in range(n):
  for j in range(m):
    some_kernel(...)

# %% line=109 tags=[]
import jax

# %% line=110 tags=[]
from jax.experimental import pallas as pl

# %% line=111 tags=[]
def slices_for_invocation(x_shape: tuple[int, ...],
                          x_spec: pl.BlockSpec,
                          grid: tuple[int, ...],
                          invocation_indices: tuple[int, ...]) -> tuple[slice, ...]:
  assert len(invocation_indices) == len(grid)
  assert all(0 <= i < grid_size for i, grid_size in zip(invocation_indices, grid))
  block_indices = x_spec.index_map(*invocation_indices)
  assert len(x_shape) == len(x_spec.block_shape) == len(block_indices)
  elem_indices = []
  for x_size, block_size, block_idx in zip(x_shape, x_spec.block_shape, block_indices):
    start_idx = block_idx * block_size
    # At least one element of the block must be within bounds
    assert start_idx < x_size
    elem_indices.append(slice(start_idx, start_idx + block_size))
  return elem_indices

# %% line=131 tags=[]
slices_for_invocation(x_shape=(100, 100),
                      x_spec = pl.BlockSpec((10, 20), lambda i, j: (i, j)),
                      grid = (10, 5),
                      invocation_indices = (2, 4))

# %% line=138 tags=[]
slices_for_invocation(x_shape=(100, 100),
                      x_spec = pl.BlockSpec((10, 20), lambda i, j, k: (i, j)),
                      grid = (10, 5, 4),
                      invocation_indices = (2, 4, 0))

# %% line=145 tags=[]
slices_for_invocation(x_shape=(100, 90),
                      x_spec = pl.BlockSpec((10, 20), lambda i, j: (i, j)),
                      grid = (10, 5),
                      invocation_indices = (2, 4))

# %% line=160 tags=[]
def show_program_ids(x_shape, block_shape, grid,
                     index_map=lambda i, j: (i, j)):
  def program_ids_kernel(o_ref):  # Fill the output block with 10*program_id(1) + program_id(0)
    axes = 0
    for axis in range(len(grid)):
      axes += pl.program_id(axis) * 10**(len(grid) - 1 - axis)
    o_ref[...] = jnp.full(o_ref.shape, axes)
  res = pl.pallas_call(program_ids_kernel,
                       out_shape=jax.ShapeDtypeStruct(x_shape, dtype=np.int32),
                       grid=grid,
                       in_specs=[],
                       out_specs=pl.BlockSpec(block_shape, index_map),
                       interpret=True)()
  print(res)

# %% line=179 tags=[]
show_program_ids(x_shape=(8, 6), block_shape=(2, 3), grid=(4, 2),
                 index_map=lambda i, j: (i, j))

# %% line=191 tags=[]
show_program_ids(x_shape=(7, 5), block_shape=(2, 3), grid=(4, 2),
                 index_map=lambda i, j: (i, j))

# %% line=202 tags=[]
show_program_ids(x_shape=(1, 2), block_shape=(2, 3), grid=(1, 1),
                 index_map=lambda i, j: (i, j))

# %% line=221 tags=[]
show_program_ids(x_shape=(8, 6), block_shape=(2, 3), grid=(4, 2, 10),
                 index_map=lambda i, j, k: (i, j))

# %% line=242 tags=[]
def kernel(o_ref):
  assert o_ref.shape == (2,)
  o_ref[...] = jnp.full((2,), 10 * pl.program_id(1) + pl.program_id(0))

# %% line=245 tags=[]
pl.pallas_call(kernel,
               jax.ShapeDtypeStruct((3, 4), dtype=np.int32),
               out_specs=pl.BlockSpec((None, 2), lambda i, j: (i, j)),
               grid=(3, 2), interpret=True)()

# %% line=263 tags=[]
show_program_ids(x_shape=(4, 4), block_shape=None, grid=(2, 3),
                 index_map=None)

# %% line=270 tags=[]
show_program_ids(x_shape=(4, 4), block_shape=(4, 4), grid=(2, 3),
                 index_map=None)

# %% line=302 tags=[]
show_program_ids(x_shape=(8, 6), block_shape=(pl.Element(2), pl.Element(3)),
                 grid=(4, 2),
                 index_map=lambda i, j: (2*i, 3*j))

# %% line=315 tags=[]
show_program_ids(x_shape=(7, 7),
                 block_shape=(pl.Element(2, (1, 0)),
                              pl.Element(3, (2, 0))),
                 grid=(4, 3),
                 index_map=lambda i, j: (2*i, 3*j))
