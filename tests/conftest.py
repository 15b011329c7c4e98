"""What every suite under tests/ shares: the fixtures several of them used
to define alike, and each suite's per-test time cap.

A suite's own conftest.py overrides a fixture of the same name here (e2e
does for `collector_binary`)."""

import os
from pathlib import Path

import pytest

from harness import collector as collector_mod
from harness import reference
from harness.otlp_sink import OtlpSink

TESTS = Path(__file__).resolve().parent

# Per-test cap (pytest-timeout) of the suites whose single tests run longer
# than the default of pytest.ini (180 s): real ct-cake builds, a package
# install, a 1M-rule build through two collectors.
SUITE_TIMEOUT_S = {
    "casreal": 900,
    "deploy": 300,
    "pipeline": 1200,
    "prometheus": 300,
    "realbuilds": 900,
}


def pytest_collection_modifyitems(config, items):
    # --timeout and PYTEST_TIMEOUT win over the configured cap, as they did
    # over each suite's own pytest.ini; a test's own timeout marker wins too.
    if config.getoption("timeout") is not None or os.environ.get("PYTEST_TIMEOUT"):
        return
    for item in items:
        try:
            suite = Path(item.path).resolve().relative_to(TESTS).parts[0]
        except ValueError:
            continue
        cap = SUITE_TIMEOUT_S.get(suite)
        if cap is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(cap))


@pytest.fixture(scope="session")
def corpus_dir():
    path = reference.corpus_dir()
    if not (path / "cases").is_dir():
        pytest.fail(f"corpus not found at {path}; set CT_CORPUS_DIR", pytrace=False)
    return path


@pytest.fixture(scope="session")
def collector_binary():
    """The collector under test (OTELCOL_BIN); a missing binary is a failed
    build, never a skip."""
    try:
        return collector_mod.binary_path()
    except collector_mod.CollectorMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def sink():
    with OtlpSink() as s:
        yield s


@pytest.fixture
def diag(tmp_path):
    """The watched diagnostics parent, as a canonical path: the receiver
    reports canonical paths and trace ids hash them, so a symlinked tmp dir
    must not confuse asserts."""
    path = Path(os.path.realpath(tmp_path)) / "diag"
    path.mkdir()
    return path
