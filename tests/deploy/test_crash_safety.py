"""The packaged config is crash-safe: kill -9 in the middle of a backlog,
restart, and every build arrives (repeats are exact duplicates).

The same run with the exporter's default in-memory queue loses builds
(`make bench-crash-queue` measures both); this test keeps CI short with a
smaller backlog and the packaged variant only.
"""

import tempfile
from pathlib import Path

from harness import collector as collector_mod
from .crash_queue_bench import run_variant


def test_packaged_config_loses_no_build_on_kill_9(corpus_dir):
    with tempfile.TemporaryDirectory(prefix="crash-safety-") as scratch:
        row = run_variant(collector_mod.binary_path(), "wait_for_result", builds=150, kill_after=40,
                          scratch=Path(scratch))
    print(row)
    assert row["at_kill"] < row["builds"], f"the backlog was done before the kill; nothing was tested: {row}"
    assert row["lost"] == 0 and row["complete"] == row["builds"], row
    assert row["exact"], f"a build arrived twice with different content: {row}"
    assert row["second_exit"] == 0, row
