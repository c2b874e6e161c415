"""`numax.experimental.pallas.tpu` (`jax.experimental.pallas.tpu`): the TPU memory spaces a BlockSpec may name
(`memory_space=pltpu.SMEM`). numax has no TPU backend: kernels naming them run where any kernel runs (interpret mode),
where the memory space changes nothing."""

import enum


class MemorySpace(enum.Enum):
    """Where a TPU kernel keeps a block: anywhere (`ANY`, left in HBM), vector memory, scalar memory, or HBM."""

    ANY = "any"
    VMEM = "vmem"
    SMEM = "smem"
    HBM = "hbm"


ANY, VMEM, SMEM, HBM = MemorySpace.ANY, MemorySpace.VMEM, MemorySpace.SMEM, MemorySpace.HBM
