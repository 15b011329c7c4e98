"""Live builds on real ct-cake builds (issue 16): a cold make build and a
cold ninja build of the `shapes` project, with an auto statslog, watched by
our collector with a logs pipeline. Live progress must arrive while the
build runs (before its timing.json was written), and every rule seen live
must appear in the build's final trace: each make recipe / ninja edge by
its target, each statslog compile by its source. The end record links to
the trace.

Run: .venv/bin/python -m pytest tests/realbuilds/test_live_realbuilds.py
(needs `tests/install-deps.sh realbuilds` and the collector, like the rest).
"""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from harness import ctrun, otlp, projects
from harness.otlp_sink import OtlpSink

from . import ourcollector

ARRIVAL_TIMEOUT_S = 60


def live_config(diag, ws, bindir, capture_dir, health_port, endpoint):
    receiver = ourcollector.receiver_config(include=[diag], capture_dir=capture_dir)
    receiver["live"] = {"interval": "200ms", "files": [
        {"include": f"{diag}/*", "make_timing_dir": str(bindir), "ninja_log": str(ws / ".ninja_log")}]}
    config = json.loads(ourcollector.render(receiver, endpoint, health_port))
    config["service"]["pipelines"]["logs"] = {"receivers": ["compiletools"], "exporters": ["otlp_http"]}
    return json.dumps(config, indent=2) + "\n"


def log_records(sink):
    out = []
    for req in sink.requests("logs"):
        for rl in req.message.resource_logs:
            for sl in rl.scope_logs:
                out.extend((otlp.attributes(r.attributes), r) for r in sl.log_records)
    return out


@pytest.mark.parametrize("backend", ["make", "ninja"])
def test_live_progress_of_a_real_build_is_in_its_trace(backend, ct_install, collector_binary, tmp_path):
    work = Path(os.path.realpath(tmp_path))
    project, _ = projects.make_project(str(work / "projects"), "shapes")
    ws = Path(projects.clone(project, str(work / "ws")))
    diag = work / "diag"
    diag.mkdir()
    bindir = ws / "bin" / "live"
    sink = OtlpSink().start()
    proc = ourcollector.OurCollector(collector_binary, work / "collector",
                                     {"include": [str(diag)]}, sink.endpoint)
    proc.config_path.write_text(live_config(diag, ws, bindir, work / "capture", proc.health_port, sink.endpoint))
    proc.start()
    try:
        time.sleep(0.5)
        argv = ["ct-cake", f"--variant={ctrun.VARIANT}", f"--backend={backend}", "--timing",
                f"--diagnostics-dir={diag}", "--ccache-statslog=auto", f"--bindir={bindir}"]
        env = ctrun.build_env(str(work), str(work / "ccache"))
        done = subprocess.run(argv, cwd=ws, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=ctrun.BUILD_TIMEOUT_S)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        (build,) = [d for d in diag.iterdir() if d.is_dir()]
        timing_written_ns = (build / "timing.json").stat().st_mtime_ns

        def ended():
            return sink.spans() and any(r.event_name == "ct.build.end" for _, r in log_records(sink))
        assert sink.wait_for(ended, ARRIVAL_TIMEOUT_S), f"no trace or end record; {len(log_records(sink))} records"
        sink.wait_quiet(1.0, 20)
    finally:
        code = proc.stop()
        sink.stop()
        print(f"collector exit status {code}\n{proc.describe(lines=40)}")

    spans = [s for _, s in sink.spans()]
    records = log_records(sink)
    (root,) = [s for s in spans if not s.parent_span_id]
    names = [r.event_name for _, r in records]
    assert names.count("ct.build.start") == 1 and names.count("ct.build.end") == 1, names
    (end,) = [r for _, r in records if r.event_name == "ct.build.end"]
    assert (end.trace_id, end.span_id) == (root.trace_id, root.span_id)

    rules = [(a, r) for a, r in records if r.event_name == "ct.rule.finished"]
    span_attrs = [otlp.attributes(s.attributes) for s in spans]
    trace_targets = {a.get("ct.target") for a in span_attrs} - {None}
    trace_sources = {a.get("ct.source") for a in span_attrs if a.get("ct.rule_type") == "compile"} - {None}
    file = "make" if backend == "make" else "ninja"
    live_targets = [a["ct.target"] for a, _ in rules if a.get("ct.live.file") == file]
    live_sources = [a["ct.source"] for a, _ in rules if a.get("ct.live.file") == "statslog" and a.get("ct.source")]
    print(f"\n{backend}: {len(live_targets)} {file} records, {len(live_sources)} statslog compiles live; "
          f"trace: {len(trace_targets)} targets, {len(trace_sources)} compile sources; "
          f"{sum(1 for _, r in rules if r.observed_time_unix_nano < timing_written_ns)} of {len(rules)} "
          f"rule records read before timing.json was written")
    assert live_targets and live_sources
    assert set(live_targets) <= trace_targets, sorted(set(live_targets) - trace_targets)
    assert set(live_sources) <= trace_sources, sorted(set(live_sources) - trace_sources)
    assert any(r.observed_time_unix_nano < timing_written_ns for _, r in rules), "no progress before the end"
    assert all(len(r.trace_id) == 0 for _, r in rules)
