"""`python run_cases.py {jax,numax} CASE_MODULE.py OUT_DIR`: runs every case of an ecosystem case module in this
process, on jax or on numax under the switch, and writes OUT_DIR/results.npz (every array leaf, under
"<case>/<leaf path>") and OUT_DIR/report.json: "cases" ({case: {"error", "error_types" (the error's class and its
bases), "leaves", "tolerances", "seconds"}}) and "jax_package_modules" (the modules loaded from jax's own package,
which under the switch must be none)."""

import importlib.util
import json
import os
import sys
import time
import traceback


def _leaf_name(path):
    return "".join(str(part) for part in path) or "<root>"


def main(side, module_path, out_dir):
    if side == "numax":
        import numax.compat

        numax.compat.install()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import numpy as np

    spec = importlib.util.spec_from_file_location("ecosystem_cases", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import jax  # numax under the switch
    from ecosystem_case import CASES

    arrays, report = {}, {}
    for name, (function, tolerances) in CASES.items():
        start = time.perf_counter()
        entry = report[name] = {"tolerances": tolerances, "error": None, "leaves": []}
        try:
            leaves = jax.tree_util.tree_flatten_with_path(function())[0]
            for path, leaf in leaves:
                key = f"{name}/{_leaf_name(path)}"
                arrays[key] = np.asarray(leaf)
                entry["leaves"].append(key)
        except Exception as error:  # recorded: the test compares it with the other side's outcome
            entry["error"] = f"{type(error).__name__}: {error}"
            entry["error_types"] = [cls.__name__ for cls in type(error).__mro__]
            entry["traceback"] = traceback.format_exc(limit=-8)
        entry["seconds"] = time.perf_counter() - start
    jax_package = os.path.dirname(importlib.util.find_spec("jaxlib").origin).replace("jaxlib", "jax")
    from_jax = sorted(name for name, loaded in sys.modules.items()
                      if (getattr(loaded, "__file__", None) or "").startswith(jax_package + os.sep))
    np.savez(os.path.join(out_dir, "results.npz"), **arrays)
    with open(os.path.join(out_dir, "report.json"), "w") as file:
        json.dump({"cases": report, "jax_package_modules": from_jax}, file)


if __name__ == "__main__":
    main(*sys.argv[1:])
