"""Fixtures of the contrib-distribution test, built on tests/harness
(sink, collector process); `corpus_dir` is the shared one of
tests/conftest.py."""

import pytest

from harness import collector as collector_mod
from harness.otlp_sink import OtlpSink


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
