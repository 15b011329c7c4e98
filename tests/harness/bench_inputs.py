"""The benchmarks' generator of synthetic timing.json inputs,
rust/bench/inputs.py, reused (not copied) by the suites that need a build of
N rules. It is a script of the Rust benchmarks, not a module of this
package, so it is loaded from its file rather than found on the import path.
"""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "rust" / "bench" / "inputs.py"


def _load():
    spec = importlib.util.spec_from_file_location("rust_bench_inputs", SCRIPT)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the benchmark inputs generator {SCRIPT}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


inputs = _load()
