"""One scenario for the whole module: the collector (this repo's build) with
the prometheus exporter, Debian's Prometheus scraping it every second, and
two waves of corpus builds, so counters and histograms have grown between
scrapes (increase() needs two samples of a series) and every dashboard
query has something to show. The harness pieces come from tests/e2e."""

import datetime
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

import collector as collector_mod  # noqa: E402
import collector_config  # noqa: E402
import diagdir  # noqa: E402
import prometheus_server  # noqa: E402
import reference  # noqa: E402
from otlp_sink import OtlpSink  # noqa: E402

# Shake cold (compiled), ccache hits, a CAS clone (CAS hits), a failed
# compile, ninja and make: every backend and cache layer of the corpus with
# rules, and a failure for the error panels.
CASES = (
    "01-geom-shake-cold",
    "03-geom-shake-ccache-hit",
    "04-geom-shake-shared-cas-clone",
    "10-textkit-broken-shake-compile-error",
    "12-geom-ninja-cold-native-flock",
    "16-geom-make-cold-native-flock",
)
WAVES = 2
WAVE_GAP_H = 1
# As tests/e2e: after the collector is healthy, before builds are added.
STARTUP_GRACE_S = max(1.0, 5 * collector_mod.POLL_INTERVAL_S)
ARRIVAL_TIMEOUT_S = 60.0
# Scrapes that must have happened after a wave's metrics were handed over.
SCRAPES_AFTER_WAVE = 3


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


def _copy_for_wave(src, dest_parent, wave):
    """A copy of a corpus invocation directory as a later build: wave 0 is
    the corpus build itself; wave w ends WAVE_GAP_H hours later and its
    directory has the wave in front of the PID, so it is a build of its own
    (own trace id) that the receiver orders after the earlier ones."""
    stamp, pid = src.name.split("-")
    dest = dest_parent / (src.name if wave == 0 else f"{stamp}-{wave}{pid}")
    shutil.copytree(src, dest)
    if wave:
        timing = dest / "timing.json"
        text = timing.read_text()
        old = json.loads(text)["timestamp"]
        new = (datetime.datetime.fromisoformat(old)
               + datetime.timedelta(hours=WAVE_GAP_H * wave)).isoformat()
        field = f'"timestamp": "{old}"'
        assert text.count(field) == 1, f"{timing}: no single {field}"
        timing.write_text(text.replace(field, f'"timestamp": "{new}"'))
    return dest


def _add_wave(diag, wave):
    """Adds the wave's builds; returns [(invocation dir name, end in Unix s)]."""
    added = []
    for case in CASES:
        staged = _copy_for_wave(reference.invocation_dir(case), diag.parent / "src", wave)
        build = diagdir.add_build(diag, staged)
        stamp = json.loads((build / "timing.json").read_text())["timestamp"]
        added.append((build.name, datetime.datetime.fromisoformat(stamp).timestamp()))
    return added


def _wait_delivered(scenario, roots, proc):
    def delivered():
        return sum(1 for _, s in scenario.sink.spans() if not s.parent_span_id) >= roots
    assert scenario.sink.wait_for(lambda: delivered() or not proc.running(), ARRIVAL_TIMEOUT_S)
    assert proc.running(), f"collector exited\n{proc.describe()}"
    assert delivered(), f"fewer than {roots} builds arrived\n{proc.describe()}"
    assert scenario.sink.wait_quiet(max(1.0, 5 * collector_mod.POLL_INTERVAL_S), ARRIVAL_TIMEOUT_S)


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
    diag = work / "diag"
    diag.mkdir()
    # The corpus builds ran with --ccache-statslog outside their directories.
    statslogs = []
    for case in CASES:
        copy = work / "statslogs" / f"{case}.statslog"
        copy.parent.mkdir(exist_ok=True)
        shutil.copyfile(reference.case_dir(case) / "ccache.statslog", copy)
        stamp = reference.invocation_dir(case).name.split("-")[0]
        statslogs.append((str(diag / f"{stamp}-*"), str(copy)))

    exporter_port = collector_mod.free_port()
    with OtlpSink() as sink:
        proc = collector_mod.Collector(col_bin, work / "collector", include=[diag],
                                       exporter_endpoint=sink.endpoint)
        proc.config_path.write_text(collector_config.render(
            diag, statslogs, sink.endpoint, f"127.0.0.1:{exporter_port}", proc.health_port))
        proc.start()
        prom = prometheus_server.Prometheus(prom_bin, work / "prometheus", collector_mod.free_port(),
                                            f"127.0.0.1:{exporter_port}")
        try:
            prom.start()
            time.sleep(STARTUP_GRACE_S)
            sc = Scenario(prom, sink, proc, start=time.time())
            # The exporter must have been scraped once before the first wave
            # too: its series then start at the first wave's values.
            _wait_scraped(prom, sc.start)
            for wave in range(WAVES):
                added = _add_wave(diag, wave)
                sc.builds += [name for name, _ in added]
                sc.earliest_build = min([sc.earliest_build] + [end for _, end in added])
                _wait_delivered(sc, len(sc.builds), proc)
                sc.wave_traces.append(sc.trace_ids() - set().union(*sc.wave_traces))
                assert len(sc.wave_traces[-1]) == len(CASES), (
                    f"wave {wave}: {len(sc.wave_traces[-1])} new traces for {len(CASES)} builds")
                _wait_scraped(prom, time.time())
            sc.end = time.time()
            yield sc
            picture = os.environ.get("CT_DASHBOARD_PICTURE")
            if picture:
                import render_panels
                render_panels.render(sc, Path(picture))
        finally:
            prom.stop()
            code = proc.stop()
            print(f"collector exit status {code}\n{proc.describe(lines=60)}\n"
                  f"prometheus log:\n{prom.log_tail()}")
