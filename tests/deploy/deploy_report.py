"""Measurements the deployment tests make (sizes, times), collected in one
file that `make test-deploy` prints at the end."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REPORT = Path(os.environ.get("CT_DEPLOY_REPORT") or REPO / "_build" / "deploy" / "report.txt")


def record(key, value):
    """Set `key` to `value` in the report (one `key: value` line each)."""
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    lines = REPORT.read_text().splitlines() if REPORT.exists() else []
    lines = [ln for ln in lines if not ln.startswith(f"{key}: ")] + [f"{key}: {value}"]
    REPORT.write_text("\n".join(sorted(lines)) + "\n")
    print(f"{key}: {value}")
