"""Make the end-to-end harness (tests/e2e: otlp.py, otlp_sink.py,
collector.py) importable from here; it is reused, not copied."""

import sys
from pathlib import Path

E2E_DIR = Path(__file__).resolve().parents[1] / "e2e"
if str(E2E_DIR) not in sys.path:
    sys.path.insert(0, str(E2E_DIR))
