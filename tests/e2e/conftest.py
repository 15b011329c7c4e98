"""Fixtures: a running collector (and the binary it runs). The OTLP sink
(`sink`), the watched diagnostics directory (`diag`) and `corpus_dir` come
from tests/conftest.py.

Each test gets its own of each; all of them are stopped in teardown, pass or fail.
"""

import os
import time

import pytest

from harness import collector as collector_mod

# After the collector reports healthy, wait this long before adding builds.
# Builds are added while it runs (not before it starts) so the tests do not
# depend on the receiver's start_at/max_age defaults for pre-existing builds
# (corpus timestamps lie in the past); the pause keeps a receiver whose first
# scan runs asynchronously after Start from taking them for pre-existing.
STARTUP_GRACE_S = max(1.0, 5 * collector_mod.POLL_INTERVAL_S)


@pytest.fixture(scope="session")
def collector_binary():
    try:
        return collector_mod.binary_path()
    except collector_mod.CollectorMissing as exc:
        missing = str(exc)
    # A missing binary is a failed build, not a reason to skip; the override
    # exists only for developing the harness before the binary exists.
    if os.environ.get("CT_E2E_ALLOW_MISSING_COLLECTOR") == "1":
        pytest.skip(f"{missing} (CT_E2E_ALLOW_MISSING_COLLECTOR=1)")
    pytest.fail(missing, pytrace=False)


@pytest.fixture
def collector(collector_binary, corpus_dir, sink, diag, tmp_path):
    """A healthy collector watching `diag` and exporting to `sink`."""
    proc = collector_mod.Collector(collector_binary, tmp_path / "collector",
                                   include=[diag], exporter_endpoint=sink.endpoint)
    proc.start()
    try:
        time.sleep(STARTUP_GRACE_S)
        yield proc
    finally:
        code = proc.stop()
        # Shown by pytest only when the test failed.
        print(f"collector exit status {code}\n{proc.describe(lines=80)}")
    # A collector that cannot shut down cleanly on SIGTERM (hung Shutdown,
    # panic) is a bug of its own, reported as an error of this test.
    assert not proc.killed, f"collector ignored SIGTERM and was killed\n{proc.describe()}"
    how = "after SIGTERM" if proc.terminated else "by itself, before teardown"
    assert code == 0, f"collector exited with status {code} {how}\n{proc.describe()}"
