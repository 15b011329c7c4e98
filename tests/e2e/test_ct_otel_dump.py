"""`ct-otel-dump DIR` (go-receiver/cmd/ct-otel-dump) against the real
collector: for the same build directory and host name, the dump's OTLP/JSON
holds the trace the collector sends, span for span."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness import checks
from harness import diagdir
from harness import reference
from harness.collector import HOST_NAME

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dump_binary():
    path = Path(os.environ.get("CT_OTEL_DUMP_BIN") or REPO / "_build" / "ct-otel-dump")
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} missing: run `make ct-otel-dump` (make test-e2e builds it)", pytrace=False)
    return path


def dumped_spans(binary, build_dir):
    """(trace id, span id, name) of every span in the dump's traces line."""
    out = subprocess.run([binary, "-host-name", HOST_NAME, str(build_dir)],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    lines = out.splitlines()
    traces = json.loads(lines[0])
    assert "resourceSpans" in traces, lines[0][:200]
    return [(s["traceId"], s["spanId"], s["name"])
            for rs in traces["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


@pytest.mark.parametrize("case", ["01-geom-shake-cold", "12-geom-ninja-cold-native-flock"])
def test_dump_is_what_the_collector_sends(case, dump_binary, collector, sink, diag):
    want = len(reference.reference_spans(case))
    build = diagdir.add_build(diag, reference.invocation_dir(case))
    sent = checks.wait_for_spans(sink, want, collector)
    dumped = dumped_spans(dump_binary, build)

    assert len(dumped) == len(sent) == want
    trace_ids = {t for t, _, _ in dumped}
    assert trace_ids == {s.trace_id.hex() for _, s in sent} and len(trace_ids) == 1
    assert sorted(dumped) == sorted((s.trace_id.hex(), s.span_id.hex(), s.name) for _, s in sent)
