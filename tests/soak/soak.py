#!/usr/bin/env python3
"""Soak (issue 13, item 8): the packaged collector for a long time with a
build finished every second and a CAS store scanned every minute; its RSS,
goroutines, threads and open file descriptors sampled throughout, and every
build accounted for at the sink.

    make soak                       # 1 hour (part of `make e2e-full`, not of `make test`)
    CT_SOAK_SECONDS=240 make soak   # a short run, to check the harness

Settings (environment):
    CT_SOAK_SECONDS          how long builds are written (default 3600)
    CT_SOAK_BUILD_INTERVAL_S one build per this many seconds (default 1)
    CT_SOAK_CAS_INTERVAL_S   CAS scan interval, `cas.collection_interval` (default 60)
    CT_SOAK_SAMPLE_S         sampling interval (default: 60, at most a 30th of the run)
    CT_SOAK_KEEP_BUILDS      builds kept on disk; older ones are removed as a
                             diagnostics cleanup would, so the receiver's
                             checkpoints reach a steady state (default 600)
    CT_SOAK_OUT              where results go (default _build/soak)
    OTELCOL_BIN              the collector; `make soak` passes the soak build
                             (the shipped manifest plus the pprof extension)

Goroutines come from the pprof extension (/debug/pprof/goroutine) when the
collector has it; the shipped distribution does not, and its own telemetry
has no goroutine count, so with it only OS threads are sampled. The samples
go to _build/soak/samples.csv, the summary to _build/soak/results.md (and
.json). Exit status 1 when a build was lost or a resource grew beyond the
bounds below.
"""

import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

from harness import packaged
from harness import otlp
from harness.otlp_sink import OtlpSink

OUT = Path(os.environ.get("CT_SOAK_OUT") or packaged.REPO / "_build" / "soak")
STATSLOG = "# /s/a.cpp\ndirect_cache_hit\n"

# Bounds between the first sample after warm-up and the last one (taken with
# every build delivered): a leak of one descriptor or goroutine per build
# would exceed them within minutes; RSS moves with the Go heap's pacing, so
# its bound is coarse and its slope is reported beside it.
MAX_FD_GROWTH = 8
MAX_GOROUTINE_GROWTH = 16
MAX_RSS_GROWTH_KIB = 48 * 1024


def env_float(name, default):
    v = os.environ.get(name)
    return float(v) if v else default


class BuildTally:
    """What arrived, kept small: per invocation id, the spans per trace id
    (a 1-hour soak sends ~3,600 builds; whole requests are not kept)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.spans = defaultdict(lambda: defaultdict(int))   # invocation id -> trace id -> spans
        self.cas_points = 0
        self.cas_requests = 0   # a scan's gauges arrive in one request

    def summarize(self, kind, message):
        with self.lock:
            if kind == "traces":
                for rec in otlp.span_records(message):
                    inv = rec.resource.get("ct.invocation_id")
                    if inv is not None:
                        self.spans[inv][rec.span.trace_id.hex()] += 1
            elif kind == "metrics":
                n = sum(1 for name, _ in otlp.data_points(message) if name.startswith("ct.cas."))
                self.cas_points += n
                self.cas_requests += n > 0
        return None

    def delivered(self, names, want_spans):
        with self.lock:
            return {n for n in names if any(c >= want_spans for c in self.spans.get(n, {}).values())}

    def duplicated(self, want_spans):
        """Builds whose spans arrived more than once, and builds sent under
        more than one trace id."""
        with self.lock:
            dups = sum(1 for t in self.spans.values() if any(c > want_spans for c in t.values()))
            other_ids = sum(1 for t in self.spans.values() if len(t) > 1)
            return dups, other_ids


def cas_store(root):
    """An obj CAS cell with 32 shards of 8 objects each."""
    cell = root / "cas-objdir" / "gcc.debug"
    for s in range(32):
        shard = cell / f"{s:02x}"
        shard.mkdir(parents=True)
        for k in range(8):
            add_object(shard, s * 1000 + k)
    return cell


def add_object(shard, n):
    name = f"obj{n:06d}_{shard.name}2e522ad279_46f0458f99c663_{n:016x}.o"
    (shard / name).write_bytes(b"\0" * (64 + n % 512))


def sample(proc, pprof_port):
    """One reading of the collector's resources."""
    pid = proc.collector_pid()
    status = Path(f"/proc/{pid}/status").read_text()
    field = lambda k: int(re.search(rf"^{k}:\s+(\d+)", status, re.M).group(1))  # noqa: E731
    row = {"t_s": None, "rss_kib": field("VmRSS"), "hwm_kib": field("VmHWM"), "threads": field("Threads"),
           "fds": len(os.listdir(f"/proc/{pid}/fd")), "goroutines": None,
           "heap_alloc_bytes": packaged.self_metric(proc, "process_runtime_heap_alloc_bytes")}
    if pprof_port:
        with urllib.request.urlopen(f"http://127.0.0.1:{pprof_port}/debug/pprof/goroutine?debug=1", timeout=10) as r:
            first = r.readline().decode()
        row["goroutines"] = int(re.match(r"goroutine profile: total (\d+)", first).group(1))
    return row


def has_pprof(binary):
    out = subprocess.run([binary, "components"], capture_output=True, text=True, timeout=60).stdout
    return re.search(r"^\s*- name: pprof\b", out, re.M) is not None


def slope_per_hour(samples, key):
    pts = [(s["t_s"], s[key]) for s in samples if s[key] is not None]
    if len(pts) < 3:
        return None
    n = len(pts)
    mt = sum(t for t, _ in pts) / n
    mv = sum(v for _, v in pts) / n
    den = sum((t - mt) ** 2 for t, _ in pts)
    return None if den == 0 else sum((t - mt) * (v - mv) for t, v in pts) / den * 3600


def run():
    seconds = env_float("CT_SOAK_SECONDS", 3600)
    interval = env_float("CT_SOAK_BUILD_INTERVAL_S", 1.0)
    cas_interval = env_float("CT_SOAK_CAS_INTERVAL_S", 60)
    sample_s = env_float("CT_SOAK_SAMPLE_S", min(60.0, max(5.0, seconds / 30)))
    keep = int(env_float("CT_SOAK_KEEP_BUILDS", 600))
    warmup = max(60.0, seconds / 10)
    binary = packaged.collector_mod.binary_path()
    pprof = has_pprof(binary)
    OUT.mkdir(parents=True, exist_ok=True)

    root = Path(tempfile.mkdtemp(prefix="ct-soak-", dir="/tmp"))
    diag, state = root / "diag", root / "state"
    diag.mkdir()
    state.mkdir()
    cell = cas_store(root)
    pprof_port = packaged.collector_mod.free_port() if pprof else None
    extra = root / "soak.yaml"
    text = ("receivers:\n  compiletools:\n    cas:\n"
            f"      stores: [{{kind: obj, path: {cell}}}]\n"
            f"      initial_delay: 0s\n      collection_interval: {cas_interval:g}s\n")
    if pprof:
        text += (f"extensions:\n  pprof:\n    endpoint: 127.0.0.1:{pprof_port}\n"
                 "service:\n  extensions: [file_storage, health_check, pprof]\n")
    extra.write_text(text)

    tally = BuildTally()
    want_spans = packaged.spans_per_build()
    names, samples = [], []
    with OtlpSink(summarize=tally.summarize) as sink:
        proc = packaged.start_packaged(binary, root / "c", state, diag, sink, extra=[f"--config={extra}"], poll="1s")
        t0 = time.monotonic()

        def take():
            s = sample(proc, pprof_port)
            s["t_s"] = round(time.monotonic() - t0, 1)
            s["builds_sent"] = len(names)
            s["builds_arrived"] = len(tally.delivered(names, want_spans))
            samples.append(s)
            print(f"soak t={s['t_s']:7.1f}s rss={s['rss_kib']}KiB goroutines={s['goroutines']} "
                  f"threads={s['threads']} fds={s['fds']} sent={s['builds_sent']} arrived={s['builds_arrived']}",
                  flush=True)

        try:
            next_build = next_sample = next_cas_change = t0
            i = 0
            while time.monotonic() - t0 < seconds:
                now = time.monotonic()
                if now >= next_build:
                    name = packaged.build_name(i)
                    live = i % 10 == 0   # a live statslog, deleted after the rename as ct-cake does
                    d = packaged.finish_build(diag, name, statslog=STATSLOG if live else None)
                    if live:
                        time.sleep(0.02)
                        os.unlink(d / "ccache.statslog")
                    names.append(name)
                    if i >= keep:
                        packaged.rmtree(diag / names[i - keep])
                    i += 1
                    next_build += interval
                if now >= next_cas_change:   # the store changes between scans
                    add_object(cell / f"{i % 32:02x}", 100000 + i)
                    next_cas_change += cas_interval
                if now >= next_sample:
                    take()
                    next_sample += sample_s
                time.sleep(max(0.0, min(next_build, next_sample) - time.monotonic()))
            want = set(names)
            sink.wait_for(lambda: tally.delivered(want, want_spans) == want, 180)
            sink.wait_quiet(3.0, 60)
            take()
            scans = packaged.self_metric(proc, "receiver_compiletools_cas_scan_duration_count")
            scan_errors = packaged.self_metric(proc, "receiver_compiletools_cas_scan_errors")
            warnings = packaged.warning_lines([proc], "")
        finally:
            code = proc.stop()
    packaged.rmtree(root)

    arrived = tally.delivered(set(names), want_spans)
    dups, other_ids = tally.duplicated(want_spans)
    steady = [s for s in samples if s["t_s"] >= warmup] or samples
    first, last = steady[0], samples[-1]
    result = {
        "seconds": seconds, "build_interval_s": interval, "cas_interval_s": cas_interval,
        "warmup_s": warmup, "keep_builds": keep, "pprof": pprof, "exit": code,
        "builds_sent": len(names), "builds_arrived": len(arrived), "lost": len(names) - len(arrived),
        "duplicates": dups, "resent_with_other_ids": other_ids, "warnings": warnings,
        "cas_scans": scans, "cas_scan_errors": scan_errors, "cas_points_arrived": tally.cas_points,
        "cas_scans_arrived": tally.cas_requests,
        "start": first, "end": last,
        "slope_per_hour": {k: slope_per_hour(steady, k) for k in ("rss_kib", "goroutines", "threads", "fds")},
    }
    problems = []
    if result["lost"]:
        problems.append(f"{result['lost']} builds lost")
    if other_ids:
        problems.append(f"{other_ids} builds re-sent with other ids")
    if code != 0:
        problems.append(f"collector exit status {code}")
    if last["fds"] - first["fds"] > MAX_FD_GROWTH:
        problems.append(f"open fds grew {first['fds']} -> {last['fds']}")
    if pprof and last["goroutines"] - first["goroutines"] > MAX_GOROUTINE_GROWTH:
        problems.append(f"goroutines grew {first['goroutines']} -> {last['goroutines']}")
    if last["rss_kib"] - first["rss_kib"] > MAX_RSS_GROWTH_KIB:
        problems.append(f"RSS grew {first['rss_kib']} -> {last['rss_kib']} KiB")
    # initial_delay 0: a scan at the start and one per interval after
    expected_scans = 1 + int(seconds // cas_interval)
    if not scans or scans < expected_scans or tally.cas_requests < expected_scans:
        problems.append(f"CAS scans: {scans} run, {tally.cas_requests} arrived, want {expected_scans}")
    result["problems"] = problems
    write(result, samples)
    return result


def write(result, samples):
    with open(OUT / "samples.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(samples[0]))
        w.writeheader()
        w.writerows(samples)
    (OUT / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    s, e, sl = result["start"], result["end"], result["slope_per_hour"]
    fmt = lambda v: "n/a" if v is None else f"{v:+.1f}"  # noqa: E731
    lines = [
        f"soak: {result['seconds']:g} s, a build every {result['build_interval_s']:g} s, "
        f"CAS scan every {result['cas_interval_s']:g} s, last {result['keep_builds']} builds kept on disk",
        "",
        f"| | start (t={s['t_s']:g} s, after warm-up) | end (t={e['t_s']:g} s, all delivered) | slope per hour (after warm-up) |",
        "|---|---|---|---|",
        f"| RSS (KiB) | {s['rss_kib']} | {e['rss_kib']} | {fmt(sl['rss_kib'])} |",
        f"| goroutines (pprof) | {s['goroutines']} | {e['goroutines']} | {fmt(sl['goroutines'])} |",
        f"| OS threads | {s['threads']} | {e['threads']} | {fmt(sl['threads'])} |",
        f"| open fds | {s['fds']} | {e['fds']} | {fmt(sl['fds'])} |",
        "",
        f"builds sent {result['builds_sent']}, arrived {result['builds_arrived']}, lost {result['lost']}, "
        f"duplicates {result['duplicates']}, re-sent with other ids {result['resent_with_other_ids']}; "
        f"CAS scans {result['cas_scans']:g} (errors {result['cas_scan_errors']:g}), arrived "
        f"{result['cas_scans_arrived']} ({result['cas_points_arrived']} points); warnings {result['warnings']}; peak RSS {e['hwm_kib']} KiB",
        "problems: " + ("; ".join(result["problems"]) or "none"),
    ]
    (OUT / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(1 if run()["problems"] else 0)
