"""A distribution made by someone else: ocb takes our receiver by `gomod:`
(the committed module files with their prebuilt Rust library; no Rust
build) next to contrib's filelog and hostmetrics receivers. A corpus build
must arrive whole, and the contrib receivers must work beside ours.
"""

import os
import subprocess
import time
from pathlib import Path

import pytest

from harness import checks
from harness import collector as collector_mod
from harness import diagdir, otlp, reference
from harness.collector import HOST_NAME

import contrib_config  # pytest puts this folder on the path: "contrib-dist" is no package name

CASE01 = "01-geom-shake-cold"
RECEIVER_MODULE = "github.com/compiletools-otel/compiletoolsreceiver"
LOG_LINE = "contrib distribution: filelog reads this line"
# After the collector reports healthy, before a build is added (as tests/e2e).
STARTUP_GRACE_S = max(1.0, 5 * collector_mod.POLL_INTERVAL_S)


@pytest.fixture
def contrib_collector(contrib_binary, corpus_dir, build_sink, contrib_sink, tmp_path):
    """The contrib distribution, healthy, watching its own diagnostics
    parent and log file; yields (collector, diag)."""
    diag = Path(os.path.realpath(tmp_path)) / "diag"
    diag.mkdir()
    log_file = tmp_path / "app.log"
    log_file.write_text(LOG_LINE + "\n")
    proc = collector_mod.Collector(contrib_binary, tmp_path / "collector",
                                   include=[diag], exporter_endpoint=build_sink.endpoint)
    # The harness wrote a config for our own distribution's components;
    # this one has others (file_log, host_metrics, two exporters).
    proc.config_path.write_text(contrib_config.render(
        diag, log_file, build_sink.endpoint, contrib_sink.endpoint, proc.health_port))
    proc.start()
    try:
        time.sleep(STARTUP_GRACE_S)
        yield proc, diag
    finally:
        code = proc.stop()
        print(f"collector exit status {code}\n{proc.describe(lines=80)}")
    assert not proc.killed, f"collector ignored SIGTERM and was killed\n{proc.describe()}"
    assert code == 0, f"collector exited with status {code}\n{proc.describe()}"


def test_components_are_ours_and_contribs(contrib_binary):
    out = subprocess.run([str(contrib_binary), "components"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    for name, module in [
        ("compiletools", RECEIVER_MODULE),
        ("file_log", "opentelemetry-collector-contrib/receiver/filelogreceiver v0.165.1"),
        ("host_metrics", "opentelemetry-collector-contrib/receiver/hostmetricsreceiver v0.165.1"),
    ]:
        assert f"- name: {name}\n" in out, f"receiver {name} missing from `components`:\n{out}"
        assert module in out, f"module {module} missing from `components`:\n{out}"


def test_case01_arrives_whole_beside_contrib_receivers(contrib_collector, build_sink, contrib_sink):
    proc, diag = contrib_collector
    ref = reference.reference_spans(CASE01)
    events = reference.timing_event_count(reference.invocation_dir(CASE01) / "timing.json")
    assert len(ref) == events, f"{CASE01}: reference has {len(ref)} spans for {events} events"

    build = diagdir.add_build(diag, reference.invocation_dir(CASE01))
    spans = checks.wait_for_spans(build_sink, len(ref), proc)

    checks.assert_trace_like_reference(spans, ref)
    assert {r.get("ct.invocation_id") for r, _ in spans} == {build.name}
    assert {r.get("host.name") for r, _ in spans} == {HOST_NAME}

    def log_bodies():
        return [otlp.any_value(rec.body) for r in contrib_sink.requests("logs")
                for rl in r.message.resource_logs for sl in rl.scope_logs for rec in sl.log_records]

    def host_points():
        return [name for name, _ in contrib_sink.data_points() if name == contrib_config.HOST_METRIC]

    arrived = contrib_sink.wait_for(lambda: LOG_LINE in log_bodies() and host_points(),
                                    checks.ARRIVAL_TIMEOUT_S)
    assert arrived, (f"contrib receivers: log bodies {log_bodies()}, "
                     f"{len(host_points())} {contrib_config.HOST_METRIC} points\n{proc.describe()}")
