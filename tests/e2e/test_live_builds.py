"""Live builds through the real collector (issue 16): a build played over
time — statslog blocks appended one by one, make timing lines, ninja log
lines — reaches the OTLP sink as log records while it runs, before its
timing.json exists; its ct.build.end record follows the trace and carries
the trace's id and root span id.

The test also measures the latency from a statslog block being appended to
its record arriving at the sink (printed; README "Live builds").
CT_LIVE_INTERVAL and CT_LIVE_POLL_INTERVAL set the receiver's live.interval
and poll_interval (here 100ms and 200ms by default; the receiver's defaults
are 1s and 5s), CT_LIVE_BLOCK_PAUSE_S the pause between two blocks.
"""

import os
import re
import shutil
import statistics
import time

import pytest

from harness import otlp
from harness import reference
from harness.collector import Collector

CASE01 = "01-geom-shake-cold"
LIVE_INTERVAL = os.environ.get("CT_LIVE_INTERVAL", "100ms")
POLL_INTERVAL = os.environ.get("CT_LIVE_POLL_INTERVAL", "200ms")
BLOCK_PAUSE_S = float(os.environ.get("CT_LIVE_BLOCK_PAUSE_S", "0.1"))
ARRIVAL_TIMEOUT_S = 30


@pytest.fixture
def live(collector_binary, sink, diag, tmp_path):
    """A collector with a logs pipeline; the build's cwd and bindir, mapped
    to its invocation directories by live.files (the builds use
    DIAGNOSTICS_DIR, so the default layout does not apply)."""
    cwd = tmp_path / "cwd"
    bindir = cwd / "bin" / "gcc.debug"
    bindir.mkdir(parents=True)
    extra = {"poll_interval": POLL_INTERVAL, "live": {"interval": LIVE_INTERVAL, "files": [
        {"include": f"{diag}/*", "make_timing_dir": str(bindir), "ninja_log": str(cwd / ".ninja_log")}]}}
    proc = Collector(collector_binary, tmp_path / "collector", include=[diag],
                     exporter_endpoint=sink.endpoint, receiver_extra=extra, logs=True)
    proc.start()
    try:
        yield proc, cwd, bindir
    finally:
        code = proc.stop()
        print(f"collector exit status {code}\n{proc.describe(lines=60)}")
    assert code == 0 and not proc.killed, proc.describe()


def log_records(sink):
    """(resource attrs, record attrs, record, arrived_at) of every log record."""
    out = []
    for req in sink.requests("logs"):
        for rl in req.message.resource_logs:
            resource = otlp.attributes(rl.resource.attributes)
            for sl in rl.scope_logs:
                for r in sl.log_records:
                    out.append((resource, otlp.attributes(r.attributes), r, req.arrived_at))
    return out


def events(sink, name, file=None):
    return [x for x in log_records(sink)
            if x[2].event_name == name and (file is None or x[1].get("ct.live.file") == file)]


def statslog_blocks(case):
    """The case's statslog split into its blocks (each a `# <source>` header
    and its event lines), as ccache appends them."""
    text = (reference.case_dir(case) / "ccache.statslog").read_bytes()
    starts = [m.start() for m in re.finditer(rb"(?m)^#", text)]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def append(path, data):
    with open(path, "ab") as f:
        f.write(data)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def test_played_build_progress_before_timing_then_end_linked_to_trace(live, sink, diag):
    _, cwd, bindir = live
    append(cwd / ".ninja_log", b"# ninja log v5\n1\t2\t0\told.o\tab\n")  # an earlier build's
    pid = os.getpid()  # alive: the build counts as running
    build = diag / f"20261130T034340-{pid}"
    build.mkdir()
    statslog = build / "ccache.statslog"

    blocks = statslog_blocks(CASE01)
    appended = []
    for block in blocks:
        append(statslog, block)
        appended.append(time.monotonic())
        time.sleep(BLOCK_PAUSE_S)
    make_log = bindir / f".ct-make-timing.{pid}.987654.jsonl"
    append(make_log, b'{"target":"/o/a.o","start_ns":1796009765464839000,"end_ns":1796009765542899000}\n')
    append(make_log, b'{"target":"/o/app","start_ns":1796009765600000000,"end_ns":1796009765700000000}\n')
    append(cwd / ".ninja_log", b"10\t20\t0\tobj/x.o\t1\n20\t35\t0\tbin/x\t2\n")

    assert sink.wait_for(lambda: len(events(sink, "ct.rule.finished", "statslog")) == len(blocks)
                         and len(events(sink, "ct.rule.finished", "make")) == 2
                         and len(events(sink, "ct.rule.finished", "ninja")) == 2, ARRIVAL_TIMEOUT_S), \
        f"live records: {[(x[2].event_name, x[1].get('ct.live.file')) for x in log_records(sink)]}"
    assert not (build / "timing.json").exists()
    assert len(events(sink, "ct.build.start")) == 1
    assert not sink.requests("traces"), "a trace before timing.json"

    # The records are the blocks, in order, each with its source and outcome.
    compiles = events(sink, "ct.rule.finished", "statslog")
    for block, (resource, attrs, rec, _) in zip(blocks, compiles):
        header = block.split(b"\n", 1)[0][1:].strip().decode()
        assert attrs.get("ct.source", "") == header
        assert attrs["ct.invocation_id"] == build.name
        assert resource["cicd.pipeline.run.id"] == build.name
        assert len(rec.trace_id) == 0, "no trace context before the end"
    latencies = [x[3] - t for x, t in zip(compiles, appended)]
    print(f"\nlive.interval {LIVE_INTERVAL}, poll_interval {POLL_INTERVAL}: statslog block appended -> record at the sink, "
          f"{len(latencies)} blocks: median {statistics.median(latencies) * 1000:.0f} ms, "
          f"p99 {percentile(latencies, 0.99) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")
    make = sorted(x[1]["ct.target"] for x in events(sink, "ct.rule.finished", "make"))
    assert make == ["/o/a.o", "/o/app"]
    ninja = sorted(x[1]["ct.target"] for x in events(sink, "ct.rule.finished", "ninja"))
    assert ninja == ["bin/x", "obj/x.o"], "only this build's ninja edges"

    # The build ends: timing.json by rename, then ct-cake deletes its statslog.
    staged = build / ".tmp.timing.json.abcdefgh.1"
    shutil.copyfile(reference.invocation_dir(CASE01) / "timing.json", staged)
    os.rename(staged, build / "timing.json")
    statslog.unlink()
    assert sink.wait_for(lambda: len(events(sink, "ct.build.end")) == 1 and sink.spans(), ARRIVAL_TIMEOUT_S)
    sink.wait_quiet(1.0, 10)

    roots = [s for _, s in sink.spans() if not s.parent_span_id]
    assert len(roots) == 1
    (_, attrs, end, _), = events(sink, "ct.build.end")
    assert end.trace_id == roots[0].trace_id and end.span_id == roots[0].span_id
    assert attrs["ct.build.abandoned"] is False
    assert len(events(sink, "ct.build.start")) == 1
    assert len(events(sink, "ct.rule.finished", "statslog")) == len(blocks), "progress sent twice"

    points = sink.data_points()
    running = [p.as_int for n, p in points if n == "ct.build.running"]
    assert 1 in running and running[-1] == 0, running
    misses = [p.as_int for n, p in points if n == "ct.live.compiles"
              and otlp.attributes(p.attributes).get("ct.ccache.outcome") == "cache_miss"]
    expected_misses = sum(1 for b in blocks if b"\ncache_miss" in b)
    assert misses and misses[-1] == expected_misses
