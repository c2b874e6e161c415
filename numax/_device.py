"""`numax.Device`: the class of the devices `numax.devices()` returns (jaxlib's, as `jax.Device` is), for
`isinstance` checks and annotations. Loaded on first use, since it loads jaxlib's runtime."""

from numax.lowering import xla

xla.load_jaxlib()
Device = xla.xc.Device
