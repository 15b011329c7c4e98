"""Make the reused test code importable from here: the e2e harness
(tests/e2e: collector process handling, the OTLP sink, the corpus), the
ctotel/v1 ID scheme (tests/realbuilds/compare.py) and the generator of
synthetic builds (rust/bench/inputs.py). Reused, not copied."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
for d in (REPO / "tests" / "e2e", REPO / "tests" / "realbuilds", REPO / "rust" / "bench"):
    if str(d) not in sys.path:
        sys.path.insert(0, str(d))
