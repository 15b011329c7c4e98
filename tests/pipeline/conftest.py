"""Fixtures: Jaeger, the large build, results; the collector binary and
the watched directory (`collector_binary`, `diag`) come from tests/conftest.py.

CT_PIPELINE_RULES (default 100000) sets the size of the large build,
CT_PIPELINE_JAEGER_RULES (default: the same) the one sent to Jaeger;
`make e2e-full` runs the suite with 1000000 (Jaeger: 100000) and keeps the
numbers in _build/pipeline-results/.
"""

import json
import os
from pathlib import Path

import pytest

from . import bigbuilds

REPO = Path(__file__).resolve().parents[2]
JAEGER_DEFAULT = REPO / "_build" / "tools" / "jaeger-v1.76.0"
RESULTS_DIR = REPO / "_build" / "pipeline-results"


@pytest.fixture(scope="session")
def jaeger_binary():
    path = Path(os.environ.get("JAEGER_BIN") or JAEGER_DEFAULT)
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"Jaeger binary {path} missing: `make jaeger` builds it (or set JAEGER_BIN)", pytrace=False)
    return path


@pytest.fixture(scope="session")
def big_build():
    return bigbuilds.generated(int(os.environ.get("CT_PIPELINE_RULES") or 100_000))


@pytest.fixture(scope="session")
def jaeger_build(big_build):
    """The large build for Jaeger: CT_PIPELINE_JAEGER_RULES, else the same
    as big_build. Jaeger held a 100k-span trace in ~0.9 GB, and its API
    answers with all spans as one JSON document that Python parses whole:
    at 1M spans, tens of GB between the two."""
    rules = int(os.environ.get("CT_PIPELINE_JAEGER_RULES") or big_build.rules)
    return big_build if rules == big_build.rules else bigbuilds.generated(rules)


@pytest.fixture
def record_result(request):
    """record_result(dict): prints the numbers and keeps them in
    _build/pipeline-results/<test>.json."""
    def record(numbers):
        print(json.dumps(numbers))
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        name = request.node.name.replace("/", "_").replace("[", "-").rstrip("]")
        (RESULTS_DIR / f"{name}.json").write_text(json.dumps(numbers, indent=2) + "\n")
    return record
