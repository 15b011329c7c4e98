"""One scenario for the whole module: the collector (this repo's build) with
the prometheus exporter, two receivers (two hosts, hosts.py), Debian's
Prometheus scraping it every second, and two waves of builds, so counters
and histograms have grown between scrapes (increase() needs two samples of
a series) and every dashboard query has something to show. The harness
pieces come from tests/harness."""

import datetime
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness import collector as collector_mod
from harness import diagdir, reference
from harness.otlp_sink import OtlpSink

from . import collector_config, hosts, prometheus_server

# The builds of each host: hosts.py.
WAVES = 2
# As tests/e2e: after the collector is healthy, before builds are added.
STARTUP_GRACE_S = max(1.0, 5 * collector_mod.POLL_INTERVAL_S)
ARRIVAL_TIMEOUT_S = 60.0
# Scrapes that must have happened after a wave's metrics were handed over.
SCRAPES_AFTER_WAVE = 3
# The build that runs during the whole scenario (no timing.json): case 01's
# statslog, half of its blocks before the first wave, the rest after it, so
# the live compiles counter grows between scrapes.
RUNNING_CASE = "01-geom-shake-cold"


@dataclass
class Scenario:
    prometheus: prometheus_server.Prometheus
    sink: OtlpSink
    collector: collector_mod.Collector
    start: float                      # Unix s, before the first build
    end: float = 0.0                  # Unix s, after the last scrape we wait for
    builds: list = field(default_factory=list)
    earliest_build: float = float("inf")  # Unix s, the earliest build's end
    wave_traces: list = field(default_factory=list)  # per wave, the trace ids it added
    cas_stores: dict = field(default_factory=dict)   # host -> hosts.CasStore
    # Scrape timestamps (Unix s) of the first scrape after the first wave
    # had arrived and of the last scrape: an increase() from the one to the
    # other is exactly the later waves' (test_comparing_hosts).
    first_wave_scraped: float = 0.0
    last_scraped: float = 0.0

    def window(self):
        """A range covering the whole scenario, as PromQL duration."""
        return f"{int(self.end - self.start) + 60}s"

    def exemplars_from(self):
        """Start of a range that holds every exemplar: they carry the time
        of their span, i.e. of the corpus builds (older than the test)."""
        return min(self.start, self.earliest_build) - 3600

    def trace_ids(self):
        return {span.trace_id.hex() for _, span in self.sink.spans()}

    def span_ids(self):
        return {(span.trace_id.hex(), span.span_id.hex()) for _, span in self.sink.spans()}


def _add_wave(work, host_diags, wave):
    """Adds the wave's builds of every host; returns [(invocation dir name,
    end in Unix s)]."""
    staged = [(host_diags[hosts.FIRST_HOST],
               hosts.copy_for_wave(reference.invocation_dir(c), work / "src", wave)) for c in hosts.CASES]
    staged += [(host_diags[hosts.SECOND_HOST],
                hosts.copy_for_wave(reference.invocation_dir(c), work / "src2", wave)) for c in hosts.SECOND_CASES]
    staged.append((host_diags[hosts.SECOND_HOST], hosts.stage_time_trace_build(work, wave)))
    added = []
    for diag, src in staged:
        build = diagdir.add_build(diag, src)
        stamp = json.loads((build / "timing.json").read_text())["timestamp"]
        added.append((build.name, datetime.datetime.fromisoformat(stamp).timestamp()))
    return added


def _last_scrape_time(prom):
    """The timestamp of the exporter's latest scrape, as its samples carry it."""
    result = prom.query("timestamp(up)")["result"]
    assert len(result) == 1, f"one scrape target expected: {result}"
    return float(result[0]["value"][1])


def _statslog_halves(case):
    """The case's statslog in two parts split at a block boundary."""
    text = (reference.case_dir(case) / "ccache.statslog").read_bytes()
    starts = [m.start() for m in re.finditer(rb"(?m)^#", text)]
    cut = starts[len(starts) // 2]
    return text[:cut], text[cut:]


def _start_running_build(diag):
    """An invocation directory of a build still running: named by this
    (live) process's PID, an auto statslog growing, no timing.json. Returns
    its statslog path."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
    running = diag / f"{stamp}-{os.getpid()}"
    running.mkdir()
    statslog = running / "ccache.statslog"
    statslog.write_bytes(_statslog_halves(RUNNING_CASE)[0])
    return statslog


def _live_compiles(sink):
    """The latest ct.live.compiles total (all outcomes) the sink received."""
    latest = None
    for req in sink.requests("metrics"):
        for rm in req.message.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == "ct.live.compiles":
                        latest = sum(p.as_int for p in m.sum.data_points)
    return latest


def _wait_live_compiles(sink, at_least, proc):
    ok = sink.wait_for(lambda: (_live_compiles(sink) or 0) >= at_least, ARRIVAL_TIMEOUT_S)
    assert ok, f"ct.live.compiles stayed at {_live_compiles(sink)}, want {at_least}\n{proc.describe()}"


def _wait_delivered(scenario, roots, proc):
    def delivered():
        return sum(1 for _, s in scenario.sink.spans() if not s.parent_span_id) >= roots
    assert scenario.sink.wait_for(lambda: delivered() or not proc.running(), ARRIVAL_TIMEOUT_S)
    assert proc.running(), f"collector exited\n{proc.describe()}"
    assert delivered(), f"fewer than {roots} builds arrived\n{proc.describe()}"
    # Not sink.wait_quiet(): the live metrics keep coming while a build runs.
    assert _builds_quiet(scenario.sink, max(1.0, 5 * collector_mod.POLL_INTERVAL_S), ARRIVAL_TIMEOUT_S), (
        f"builds' traces or metrics kept arriving\n{proc.describe()}")


def _build_requests(sink):
    """How many trace requests and build metrics requests (those with
    cicd.pipeline.run.duration) arrived: what a build sends."""
    metrics = sum(1 for r in sink.requests("metrics")
                  if any(m.name == "cicd.pipeline.run.duration" for rm in r.message.resource_metrics
                         for sm in rm.scope_metrics for m in sm.metrics))
    return len(sink.requests("traces")), metrics


def _builds_quiet(sink, quiet, timeout):
    """Until no build request (traces, build metrics) arrived for `quiet` s,
    to let duplicates or stragglers show up."""
    deadline = time.monotonic() + timeout
    last, since = _build_requests(sink), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = _build_requests(sink)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return True
    return False


def _wait_scraped(prom, after):
    """Until Prometheus has scraped the exporter SCRAPES_AFTER_WAVE times
    after `after` (Unix s), successfully."""
    deadline = time.monotonic() + 30 + SCRAPES_AFTER_WAVE * prometheus_server.SCRAPE_INTERVAL_S
    need = after + SCRAPES_AFTER_WAVE * prometheus_server.SCRAPE_INTERVAL_S
    last = None
    while time.monotonic() < deadline:
        targets = prom.targets()
        if targets:
            last = targets[0]
            scraped = datetime.datetime.fromisoformat(last["lastScrape"].replace("Z", "+00:00"))
            if last["health"] == "up" and scraped.timestamp() >= need:
                return
        time.sleep(0.5)
    raise AssertionError(f"the exporter was not scraped after {after}: {last}\n{prom.log_tail()}")


@pytest.fixture(scope="session")
def scenario(tmp_path_factory):
    try:
        prom_bin = prometheus_server.binary_path()
        col_bin = collector_mod.binary_path()
    except (prometheus_server.PrometheusMissing, collector_mod.CollectorMissing) as exc:
        pytest.fail(str(exc), pytrace=False)
    work = Path(os.path.realpath(tmp_path_factory.mktemp("prometheus")))
    diag = work / "diag"          # the first host's, as before the second one came
    host_diags = {hosts.FIRST_HOST: diag, hosts.SECOND_HOST: work / "diag2"}
    host_diags[hosts.SECOND_HOST].mkdir(parents=True)
    diag.mkdir()
    cas_stores = {h: hosts.write_cas_store(work / "cas", h) for h in host_diags}
    host_cases = {hosts.FIRST_HOST: hosts.CASES, hosts.SECOND_HOST: hosts.SECOND_CASES}
    receivers = []
    for n, (host, hdiag) in enumerate(host_diags.items()):
        # The corpus builds ran with --ccache-statslog outside their directories.
        statslogs = []
        for case in host_cases[host]:
            copy = work / "statslogs" / host / f"{case}.statslog"
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(reference.case_dir(case) / "ccache.statslog", copy)
            stamp = reference.invocation_dir(case).name.split("-")[0]
            statslogs.append((str(hdiag / f"{stamp}-*"), str(copy)))
        receivers.append(collector_config.Host(
            host, "compiletools" if n == 0 else f"compiletools/host{n + 1}", hdiag, statslogs,
            [("obj", cas_stores[host].cell)]))

    exporter_port = collector_mod.free_port()
    with OtlpSink() as sink:
        proc = collector_mod.Collector(col_bin, work / "collector", include=[diag],
                                       exporter_endpoint=sink.endpoint)
        proc.config_path.write_text(collector_config.render(
            receivers, sink.endpoint, f"127.0.0.1:{exporter_port}", proc.health_port))
        proc.start()
        prom = prometheus_server.Prometheus(prom_bin, work / "prometheus", collector_mod.free_port(),
                                            f"127.0.0.1:{exporter_port}")
        try:
            prom.start()
            time.sleep(STARTUP_GRACE_S)
            sc = Scenario(prom, sink, proc, start=time.time(), cas_stores=cas_stores)
            # The exporter must have been scraped once before the first wave
            # too: its series then start at the first wave's values.
            _wait_scraped(prom, sc.start)
            first, rest = _statslog_halves(RUNNING_CASE)
            blocks = first.count(b"\n#") + rest.count(b"\n#") + 1
            running = _start_running_build(diag)
            # The uncacheable last block of a half waits for the next block.
            _wait_live_compiles(sink, first.count(b"\n#"), proc)
            for wave in range(WAVES):
                added = _add_wave(work, host_diags, wave)
                sc.builds += [name for name, _ in added]
                sc.earliest_build = min([sc.earliest_build] + [end for _, end in added])
                _wait_delivered(sc, len(sc.builds), proc)
                sc.wave_traces.append(sc.trace_ids() - set().union(*sc.wave_traces))
                assert len(sc.wave_traces[-1]) == len(added), (
                    f"wave {wave}: {len(sc.wave_traces[-1])} new traces for {len(added)} builds")
                _wait_scraped(prom, time.time())
                if wave == 0:
                    sc.first_wave_scraped = _last_scrape_time(prom)
                    with open(running, "ab") as f:
                        f.write(rest)
                    _wait_live_compiles(sink, blocks - 1, proc)
                    _wait_scraped(prom, time.time())
            sc.end = time.time()
            sc.last_scraped = _last_scrape_time(prom)
            yield sc
            picture = os.environ.get("CT_DASHBOARD_PICTURE")
            if picture:
                from . import render_panels
                render_panels.render(sc, Path(picture))
        finally:
            prom.stop()
            code = proc.stop()
            print(f"collector exit status {code}\n{proc.describe(lines=60)}\n"
                  f"prometheus log:\n{prom.log_tail()}")
