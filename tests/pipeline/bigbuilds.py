"""Synthetic large builds and how they appear in a watched directory.

The timing.json of an N-rule build is the benchmarks' input
(rust/bench/inputs.py: the corpus's gen_timing.py, seed 1, checked against
pinned checksums, cached under target/bench-inputs). It has six phases and
every rule anchored, so its trace has N + 7 spans.
"""

import os
import re
import shutil
from collections import namedtuple
from pathlib import Path

from harness import ctotel_ids, reference
from harness.bench_inputs import inputs

GENERATED_PHASES = 6
# Checked against a full count of the file up to this size; above it the
# count is the generator's documented shape (parsing 600 MB of JSON in
# Python takes several GB).
COUNT_CHECK_MAX_RULES = 100_000

Build = namedtuple("Build", "rules timing expected_spans timestamp invocation_id")


def generated(rules):
    """The N-rule build's timing.json (made once, then cached)."""
    info = inputs.ensure(rules)
    timing = Path(info["file"])
    expected = rules + GENERATED_PHASES + 1
    if rules <= COUNT_CHECK_MAX_RULES:
        counted = reference.timing_event_count(timing)
        assert counted == expected, f"{timing}: {counted} events, the generator's shape gives {expected}"
    return Build(rules, timing, expected, timestamp_of(timing), inputs.INVOCATION_ID)


def timestamp_of(timing):
    """The `timestamp` string of a timing.json (near its start)."""
    with open(timing, "rb") as f:
        head = f.read(4096).decode("utf-8", "replace")
    m = re.search(r'"timestamp":\s*"([^"]+)"', head)
    assert m, f"{timing}: no timestamp in its first 4 KiB"
    return m.group(1)


def stage(build, diag):
    """Lays the build out as an invocation directory next to `diag`
    (hard link when the file system allows, else a copy), ready to be
    renamed into it; returns the staged directory."""
    staged = Path(str(diag) + ".staging") / build.invocation_id
    staged.mkdir(parents=True)
    try:
        os.link(build.timing, staged / "timing.json")
    except OSError:
        shutil.copyfile(build.timing, staged / "timing.json")
    return staged


def publish(staged, diag):
    """Renames a staged invocation directory into the watched one, as a
    finished build appears; returns its path there."""
    final = Path(diag) / staged.name
    os.rename(staged, final)
    return final


def trace_id(host_name, invocation_dir, timestamp):
    """The build's trace id (ctotel/v1), as hex."""
    return ctotel_ids.expected_trace_id(host_name, os.path.realpath(invocation_dir), timestamp).hex()
