"""Fixtures of the deployment tests; the e2e harness (sink, collector
process, corpus access) is reused from tests/e2e."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

import collector as collector_mod  # noqa: E402
import reference  # noqa: E402
from otlp_sink import OtlpSink  # noqa: E402


def require_root():
    """Installing packages and running as another user need root. CI runs
    as root; elsewhere these tests are skipped rather than half-run."""
    if os.geteuid() == 0:
        return
    if os.environ.get("CI"):
        pytest.fail("deployment tests must run as root in CI", pytrace=False)
    pytest.skip("needs root (installs a package, switches users)")


@pytest.fixture(scope="session")
def corpus_dir():
    path = reference.corpus_dir()
    if not (path / "cases").is_dir():
        pytest.fail(f"corpus not found at {path}; set CT_CORPUS_DIR", pytrace=False)
    return path


@pytest.fixture
def sink():
    with OtlpSink() as s:
        yield s


@pytest.fixture(scope="session")
def collector_binary():
    try:
        return collector_mod.binary_path()
    except collector_mod.CollectorMissing as exc:
        pytest.fail(str(exc), pytrace=False)
