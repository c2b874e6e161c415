"""numax's own modules depend on each other one way: no import circles, and core and lowering stay below the layers
that use them.

The graph is read from the sources without importing anything (each import statement parsed with `ast`): every
`import` and `from ... import` anywhere in a module (at the top, or inside a function, where a circle hides from the
import system but not from a reader), relative imports resolved, plus the child modules a package defers with
`defer_imports` (they load on first attribute access, so the package depends on them as a function-local import
would). Imports built from strings at run time (`importlib.import_module(f"...")`) are not seen.
"""

import ast
import bisect
import fnmatch
import itertools
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Source folder -> the package name it installs as (pyproject's package-dir).
PACKAGE_DIRS = {"numax": "numax", "core": "numax.core", "lax": "numax.lax", "transforms": "numax.transforms",
                "lowering": "numax.lowering"}

# Imports that close a circle and stay, each with its reason: (importer patterns, imported patterns, reason), the
# patterns `fnmatch`'s over module names. The graph less these imports must have no circle, and each entry must still
# close one (or it is stale and goes).
_LAX_FAMILIES = ("numax.lax.elementwise", "numax.lax.conversions", "numax.lax.shapes", "numax.lax.reductions",
                 "numax.lax.slicing", "numax.lax.gather_scatter")
ALLOWED_BACK_EDGES = [
    (("numax.lax.ad", "numax.lax.batching"), ("numax.lax.*",),
     "lax's rule tables: the generic JVP and batching rules call lax ops when they run, and each primitive module "
     "imports ad and batching to register its rules"),
    (_LAX_FAMILIES, _LAX_FAMILIES,
     "lax's rule tables: each primitive family's rules use the others' ops (a reduction's JVP broadcasts, a "
     "slice's transpose pads), as jax keeps them in one lax.py"),
    (("numax.core.pytree",), ("numax.core.pytree_errors",),
     "pytree_errors writes jax's mismatch messages from pytree's internals; pytree loads it only to raise"),
    (("numax.transforms.checkify",), ("numax.transforms.checkify_calls",),
     "checkify installs its rules for custom_jvp/vjp, pmap and shard_map from checkify_calls at its first use, "
     "so that importing checkify loads none of those transforms"),
    (("numax.numpy._*",), ("numax.numpy._*",),
     "numax.numpy's modules call each other's functions through function-local imports (ufuncs, shapes, "
     "indexing, reductions, creation); ordering them in layers is a refactor of its own"),
    (("numax.numpy._array_api", "numax.numpy._pad"), ("numax.numpy",),
     "`__array_namespace__` returns the numax.numpy package itself, and pad uses it as numpy's stand-in (`xp`)"),
    (("numax.experimental.multihost_utils",), ("numax",),
     "written over numax's public namespace (numax.jit, numax.devices, ...), as user code is"),
    (("numax.numpy._creation", "numax.numpy._logic", "numax.numpy._shape"), ("numax.random",),
     "astype, where and concatenate of typed PRNG key arrays go through numax.random's key data, and "
     "numax.random builds on numax.numpy"),
]

# Lower layers must not reach up: layer -> the layers it must not import ("surface" is numax/ itself, what users
# import). Both rules hold today, with no exception.
LAYERS = ("core", "lax", "transforms", "lowering")
FORBIDDEN_LAYERS = {"core": ("lax", "transforms", "lowering", "surface"), "lowering": ("transforms", "surface")}


def layer_of(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "surface"


def module_files():
    """{module name: (path, is package)} for every numax module."""
    modules = {}
    for folder, package in PACKAGE_DIRS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join((package, *(parts[:-1] if is_package else parts)))
            modules[name] = (path, is_package)
    return modules


def imported_names(tree, name, is_package, modules):
    """The numax modules that module `name` imports anywhere in its source `tree`."""
    package = name if is_package else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                # `from package import child` imports the child module; any other name comes from `base` itself.
                targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", "").endswith("defer_imports")
              and len(node.args) == 2 and isinstance(node.args[1], ast.Dict)):
            targets.update(f"{package}.{key.value}" for key in node.args[1].keys)
    found = set()
    for target in targets:
        # `import numax.lax.shapes` names a module; resolve a dotted name to the longest numax module it names.
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


# An import statement at the start of a line, at any indentation (a parenthesized name list may span lines and hold
# comments), and a package's `defer_imports(globals(), {...})` call.
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\((?:[^)#]|#[^\n]*)*\)|[^\n]*)"
                     r"|import[ \t]+[^\n]*)", re.M)
_DEFER = re.compile(r"\w*defer_imports\(globals\(\),\s*\{.*?\}\)", re.S)


def import_statements(source):
    """The import statements and `defer_imports` calls of `source`, as an `ast.Module`: each one found by a regular
    expression and parsed alone, several times faster than parsing whole modules (a test below checks that both
    find the same imports). Matches inside triple-quoted strings (docstring examples) are skipped."""
    quotes = [match.start() for match in re.finditer('"""|\'\'\'', source)]
    body = []
    for match in itertools.chain(_IMPORT.finditer(source), _DEFER.finditer(source)):
        if bisect.bisect(quotes, match.start()) % 2 == 0:
            body.extend(ast.parse(match.group().strip()).body)
    return ast.Module(body=body, type_ignores=[])


def import_graph(parse=import_statements):
    """{module: the numax modules it imports}; `parse(source)` gives the statements to read."""
    modules = module_files()
    return {name: imported_names(parse(path.read_text()), name, is_package, modules)
            for name, (path, is_package) in modules.items()}


def circles(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative), sorted."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(tuple(sorted(component)))
    return sorted(components)


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_graph_sees_imports_of_every_kind(graph):
    """The checker finds a top-level import, a function-local one, a relative `from . import child` and a
    deferred child module, so an empty answer below means no circles, not a blind reader."""
    assert "numax.core.avals" in graph["numax.lowering.dispatch"]
    assert "numax.core.evaluation" in graph["numax.lowering.dispatch"]  # imported inside a method
    assert "numax.lowering.xla" in graph["numax.lowering.dispatch"]  # `from . import xla`
    assert "numax.random" in graph["numax"]  # deferred with defer_imports
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]


def _allowed_by(entry, importer, imported):
    importers, importeds, _ = entry
    return (any(fnmatch.fnmatchcase(importer, pattern) for pattern in importers)
            and any(fnmatch.fnmatchcase(imported, pattern) for pattern in importeds))


# Modules whose imports take every form: top-level, function-local, parenthesized over lines with comments, relative
# at several levels, `import a.b as c`, deferred.
_SAMPLE = ("numax", "numax.numpy", "numax.lowering.dispatch", "numax.transforms.checkify", "numax.lax.shapes",
           "numax.export._format", "numax.numpy._pad")


def test_fast_reading_finds_what_parsing_finds():
    modules = module_files()
    for name in _SAMPLE:
        path, is_package = modules[name]
        source = path.read_text()
        assert (imported_names(import_statements(source), name, is_package, modules)
                == imported_names(ast.parse(source), name, is_package, modules)), name


def test_fast_reading_skips_code_in_docstrings():
    source = '''"""An example:

    import numax.lax
"""

from numax import nn
'''
    modules = {"numax": None, "numax.lax": None, "numax.nn": None, "numax.example": None}
    assert imported_names(import_statements(source), "numax.example", False, modules) == {"numax.nn"}


def test_no_import_circles(graph):
    pruned = {importer: {imported for imported in targets
                         if not any(_allowed_by(entry, importer, imported) for entry in ALLOWED_BACK_EDGES)}
              for importer, targets in graph.items()}
    assert circles(pruned) == [], "new import circles: break them, or list them in ALLOWED_BACK_EDGES with a reason"


@pytest.mark.parametrize("entry", ALLOWED_BACK_EDGES, ids=lambda entry: entry[0][0])
def test_allowed_back_edges_still_close_circles(graph, entry):
    circle_of = {module: index for index, circle in enumerate(circles(graph)) for module in circle}
    closing = [(importer, imported) for importer, targets in graph.items() for imported in targets
               if _allowed_by(entry, importer, imported) and importer in circle_of
               and circle_of[importer] == circle_of.get(imported)]
    assert closing != [], "stale ALLOWED_BACK_EDGES entry: it closes no circle today"


@pytest.mark.parametrize("lower", sorted(FORBIDDEN_LAYERS))
def test_lower_layers_do_not_import_upper_ones(graph, lower):
    reaching_up = sorted((importer, imported) for importer, targets in graph.items() if layer_of(importer) == lower
                         for imported in targets if layer_of(imported) in FORBIDDEN_LAYERS[lower])
    assert reaching_up == [], "a lower layer imports an upper one"
