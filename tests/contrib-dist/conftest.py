"""Fixtures of the contrib-distribution test; the e2e harness (sink,
collector process, corpus access) is reused from tests/e2e."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

import collector as collector_mod  # noqa: E402
import reference  # noqa: E402
from otlp_sink import OtlpSink  # noqa: E402


@pytest.fixture(scope="session")
def corpus_dir():
    path = reference.corpus_dir()
    if not (path / "cases").is_dir():
        pytest.fail(f"corpus not found at {path}; set CT_CORPUS_DIR", pytrace=False)
    return path


@pytest.fixture(scope="session")
def contrib_binary():
    """The ocb build of deploy/contrib-distribution (OTELCOL_BIN); a missing
    binary is a failed build, never a skip."""
    try:
        return collector_mod.binary_path()
    except collector_mod.CollectorMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def build_sink():
    """Receives what the compiletools receiver sends."""
    with OtlpSink() as s:
        yield s


@pytest.fixture
def contrib_sink():
    """Receives what the contrib receivers send; kept apart, because
    host metrics arrive every second and would never let the build sink
    fall quiet."""
    with OtlpSink() as s:
        yield s
