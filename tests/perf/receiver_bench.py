"""Receiver measurements with the real collector process (issue: receiver in production).

  idle      : RSS and CPU per poll with N finished invocation directories watched
  latency   : timing.json rename -> span at the sink, median and max over N builds
  backlog   : throughput of a backlog of N builds present at start

Run from the repository root after `make collector venv`:
  PYTHONPATH=tests .venv/bin/python -m perf.receiver_bench [idle|latency|backlog|all]
Numbers depend on the machine; run them side by side when comparing.
"""

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import bench_builds
from harness import collector as collector_mod
from harness.otlp_sink import OtlpSink

def _collector(tmp, diag, sink, **extra):
    c = collector_mod.Collector(collector_mod.binary_path(), tmp / f"c-{time.monotonic_ns()}",
                                include=[diag], exporter_endpoint=sink.endpoint,
                                receiver_extra=extra)
    return c.start()


def idle(n=10_000, poll_s=1.0, window_s=30.0):
    with tempfile.TemporaryDirectory() as t, OtlpSink() as sink:
        tmp = Path(t)
        diag = tmp / "diag"
        diag.mkdir()
        bench_builds.make_builds(diag, n, bench_builds.timing_bytes("02-geom-shake-noop"))
        c = _collector(tmp, diag, sink, poll_interval=f"{int(poll_s * 1000)}ms", start_at="end")
        try:
            time.sleep(5 * poll_s)  # first poll records every existing build as seen
            cpu0, _ = bench_builds.proc_stats(c.proc.pid)
            time.sleep(window_s)
            cpu1, rss = bench_builds.proc_stats(c.proc.pid)
        finally:
            c.stop()
        polls = window_s / poll_s
        print(f"idle: {n} finished builds watched, poll_interval {poll_s}s: "
              f"RSS {rss / 1024:.1f} MiB (anonymous {bench_builds.proc_stats.anon_kib / 1024:.1f} MiB; the rest is the "
              f"binary's file-backed pages), CPU {1000 * (cpu1 - cpu0) / polls:.1f} ms per poll "
              f"({100 * (cpu1 - cpu0) / window_s:.2f}% of one core)")


def latency(n=100, poll_s=0.2):
    data = bench_builds.timing_bytes("01-geom-shake-cold")
    with tempfile.TemporaryDirectory() as t, OtlpSink() as sink:
        tmp = Path(t)
        diag = tmp / "diag"
        diag.mkdir()
        c = _collector(tmp, diag, sink, poll_interval=f"{int(poll_s * 1000)}ms")
        lat = []
        try:
            time.sleep(1.0)
            for i in range(n):
                d = diag / f"20261130T120000-{20000 + i}"
                d.mkdir()
                tmpf = d / ".tmp.timing.json.bench0000.1"
                tmpf.write_bytes(data)
                before = len(sink.requests("traces"))
                t0 = time.monotonic()
                os.rename(tmpf, d / "timing.json")
                want = d.name
                ok = sink.wait_for(lambda: any(
                    r.signal == "traces" and _has_invocation(r, want)
                    for r in sink.requests("traces")[before:]), 10)
                assert ok, f"build {want} did not arrive"
                arrived = min(r.arrived_at for r in sink.requests("traces")[before:] if _has_invocation(r, want))
                lat.append(arrived - t0)
                time.sleep(0.05 + (i % 7) * 0.023)  # spread renames over the poll phase
        finally:
            c.stop()
        lat_ms = sorted(1000 * x for x in lat)
        print(f"latency: {n} builds, poll_interval {poll_s * 1000:.0f} ms (exporter without batching): "
              f"median {statistics.median(lat_ms):.0f} ms, p90 {lat_ms[int(0.9 * n) - 1]:.0f} ms, "
              f"max {lat_ms[-1]:.0f} ms (target: poll_interval + 200 ms = {poll_s * 1000 + 200:.0f} ms)")


def _has_invocation(received, inv):
    for rs in received.message.resource_spans:
        for kv in rs.resource.attributes:
            if kv.key == "ct.invocation_id" and kv.value.string_value == inv:
                return True
    return False


def backlog(n=2000):
    data = bench_builds.timing_bytes("01-geom-shake-cold")
    with tempfile.TemporaryDirectory() as t, OtlpSink() as sink:
        tmp = Path(t)
        diag = tmp / "diag"
        diag.mkdir()
        bench_builds.make_builds(diag, n, data)
        t0 = time.monotonic()
        c = _collector(tmp, diag, sink, poll_interval="200ms", start_at="beginning",
                       max_builds_per_poll=n, max_concurrent_builds=2)
        try:
            def traces():
                return {s.trace_id for _, s in sink.spans()}
            ok = sink.wait_for(lambda: len(sink.requests("traces")) >= n and len(traces()) >= n, 600)
            elapsed = time.monotonic() - t0
            _, rss = bench_builds.proc_stats(c.proc.pid)
        finally:
            c.stop()
        assert ok, "backlog did not drain"
        spans = len(sink.spans())
        print(f"backlog: {n} builds ({spans} spans) from collector start to the last span at the sink in "
              f"{elapsed:.1f} s = {n / elapsed:.0f} builds/s, {spans / elapsed:.0f} spans/s; RSS after {rss / 1024:.0f} MiB")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    for name, fn in (("idle", idle), ("latency", latency), ("backlog", backlog)):
        if what in (name, "all"):
            fn()
