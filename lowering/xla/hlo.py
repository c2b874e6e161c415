"""StableHLO modules through jaxlib's MLIR bindings: parsing and verifying what numax generated, refining a
module's dynamic shapes for XLA, converting to XLA's HLO (its text, its cost estimates), and StableHLO portable
artifacts (numax.export's serialized modules). The bindings cost ~60 ms to import, so they load on the first
parse."""

import functools
import re

from . import _jaxlib

_jax = xc = None  # jaxlib's runtime, set when it loads (_jaxlib.load_jaxlib)


class LoweringError(Exception):
    """numax produced a StableHLO module that does not verify: a numax bug, reported with the module."""


class ArtifactError(ValueError):
    """Bytes that are not a StableHLO portable artifact this jaxlib can read."""


@functools.lru_cache(maxsize=1)
def _mlir_context():
    with _jaxlib.lock:  # one context for every thread
        return _make_mlir_context()


def _make_mlir_context():
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, sdy, stablehlo

    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    context = ir.Context()
    context.append_dialect_registry(registry)
    context.load_all_available_dialects()
    stablehlo.register_dialect(context)
    chlo.register_dialect(context)
    sdy.register_dialect(context)
    return context


def parse_module(text: str):
    """Parses and verifies a StableHLO module; a failure is a numax bug, raised with the module text."""
    from jaxlib.mlir import ir

    context = _mlir_context()
    with context:
        try:
            return ir.Module.parse(text)
        except ir.MLIRError as error:
            details = "\n".join(str(d) for d in error.error_diagnostics)
            raise LoweringError(
                f"numax generated an invalid StableHLO module (this is a numax bug): {details}\n{_numbered(text)}"
            ) from None


def _numbered(text):
    return "\n".join(f"{i + 1:4d} {line}" for i, line in enumerate(text.splitlines()))


_DYNAMIC_TENSOR = re.compile(r"tensor<(?:\d+x)*\?")  # a type with a dynamic dimension


def compilable_module(text: str):
    """The parsed and verified module as XLA compiles it: its dynamic shapes, if any, refined to static ones."""
    return parse_module(text) if not _DYNAMIC_TENSOR.search(text) else refined_module(text)


def refined_module(text: str):
    """The parsed module with every dynamic shape refined to a static one, from the static types of `main`'s
    arguments (a module that calls a shape-polymorphic export): what XLA can compile."""
    from jaxlib.mlir import ir

    parse_module(text)  # verifies, with numax's error for an invalid module
    refined = _jax.mlir.refine_polymorphic_shapes(text.encode(), enable_shape_assertions=True,
                                                          validate_static_shapes=True)
    with _mlir_context():
        return ir.Module.parse(refined)


def hlo_computation(text: str):
    """The StableHLO module `text` converted to an XLA HLO computation (jaxlib's XlaComputation: `as_hlo_text()`,
    `as_hlo_module()`), what jax's `Lowered.compiler_ir(dialect="hlo")` returns."""
    _jaxlib.load_jaxlib()
    return _jax.mlir.mlir_module_to_xla_computation(text, use_tuple_args=False)


def hlo_cost_analysis(backend, text: str):
    """XLA's cost estimates of the StableHLO module `text` before optimization (a dict: 'flops',
    'transcendentals', 'bytes accessed', ...), as jax's `Lowered.cost_analysis()`; None on a runtime reached
    through the PJRT C API (jax's gives none there either: compile and ask the executable)."""
    if "PJRT C API" in backend.client.platform_version:
        return None
    module = hlo_computation(text).as_hlo_module()  # (loads jaxlib's runtime module first)
    return _jax.hlo_module_cost_analysis(backend.client, module)


def hlo_text(text: str, debug_info=False):
    """The HLO text of the StableHLO module `text`, printed with XLA's short parsable options as jax's
    `Lowered.as_text(dialect="hlo")`."""
    computation = hlo_computation(text)
    try:
        from jaxlib import _hlo as hlo
    except ImportError:  # older jaxlib: the printing options live in the runtime module
        hlo = _jax
    options = hlo.HloPrintOptions.short_parsable()
    options.print_metadata = debug_info
    return computation.as_hlo_module().to_string(options)


# --- StableHLO portable artifacts (numax.export) ----------------------------------------------------
def serialize_portable_artifact(text: str) -> bytes:
    """A module's StableHLO portable artifact (versioned MLIR bytecode), targeting this jaxlib's StableHLO
    version: later jaxlibs read it (StableHLO keeps backward compatibility for years). A module with Shardy meshes
    is serialized as jax serializes one, with the Shardy dialect beside VHLO (which the plain serializer refuses
    and `deserialize_portable_artifact` reads)."""
    from jaxlib.mlir.dialects import stablehlo

    if "sdy.mesh" in text:
        _jaxlib.load_jaxlib()
        return bytes(_jax.mlir.serialize_portable_artifact(text, stablehlo.get_current_version(), True))
    module = parse_module(text)
    with _mlir_context():
        return bytes(stablehlo.serialize_portable_artifact_str(str(module), stablehlo.get_current_version()))


def deserialize_portable_artifact(artifact: bytes) -> str:
    """The module text of a portable artifact, upgraded to this jaxlib's StableHLO."""
    from jaxlib.mlir.dialects import stablehlo

    context = _mlir_context()
    with context:
        try:
            return str(stablehlo.deserialize_portable_artifact(context, artifact))
        except Exception as error:  # jaxlib raises a bare exception type for unreadable bytecode
            raise ArtifactError(f"not a readable StableHLO portable artifact: {error}") from None


def private_functions(text: str, prefix: str) -> str:
    """The functions of a module as private functions named `prefix` + their name (calls inside renamed too),
    to be pasted into another module and called from it."""
    from jaxlib.mlir import ir

    module = parse_module(text)
    with _mlir_context():
        functions = [op for op in module.body.operations if op.operation.name == "func.func"]
        for function in functions:
            old = ir.StringAttr(function.attributes["sym_name"]).value
            ir.SymbolTable.replace_all_symbol_uses(old, prefix + old, module.operation)
            ir.SymbolTable.set_symbol_name(function, prefix + old)
            function.attributes["sym_visibility"] = ir.StringAttr.get("private")
        return "\n".join(str(function) for function in functions)
