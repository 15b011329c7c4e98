"""What every chaos scenario (tests/chaos) and the soak (tests/soak) share:
the packaged collector on a scratch state directory, builds written the way
ct-cake finishes them, and what the sink received, per build."""

import os
import pwd
import shutil
import subprocess
import tempfile
import urllib.request
from collections import defaultdict
from pathlib import Path

from . import collector as collector_mod
from . import reference
from .service import ServiceCollector, read_environment_file

REPO = Path(__file__).resolve().parents[2]
PACKAGES = REPO / "deploy" / "packages"
CASE = "01-geom-shake-cold"
HOST = "chaos-host"


def case_timing():
    return (reference.invocation_dir(CASE) / "timing.json").read_bytes()


def spans_per_build():
    return len(reference.reference_spans(CASE))


def build_name(i, hour=10):
    """Invocation ids in ct-cake's format, oldest first by i (i < 50,000)."""
    return f"20261130T{hour + i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}-{1000 + i}"


def finish_build(diag, name, timing=None, statslog=None):
    """A running build's directory (with a live statslog if given), then
    timing.json renamed in, as ct-cake does; the statslog is left for the
    caller to delete (ct-cake deletes it right after)."""
    d = Path(diag) / name
    d.mkdir()
    if statslog is not None:
        (d / "ccache.statslog").write_text(statslog)
    tmp = d / f".tmp.timing.json.{name}"
    tmp.write_bytes(timing if timing is not None else case_timing())
    os.rename(tmp, d / "timing.json")
    return d


def start_packaged(binary, work, state, diag, sink, extra=(), poll="200ms", user=None, capture=None):
    """The packaged config (deploy/packages), its state moved into `state`;
    `diag` is one include glob or a list of them; run as `user` if given."""
    health = collector_mod.free_port()
    metrics = collector_mod.free_port()
    include = str(diag) if isinstance(diag, (str, Path)) else "[" + ", ".join(map(str, diag)) + "]"
    env = {**read_environment_file(PACKAGES / "otelcol-compiletools.env"),
           "PATH": "/usr/bin:/bin",
           "OTELCOL_COMPILETOOLS_OTLP_ENDPOINT": sink.endpoint,
           "OTELCOL_COMPILETOOLS_INCLUDE": include,
           "OTELCOL_COMPILETOOLS_HOST_NAME": HOST,
           "OTELCOL_COMPILETOOLS_HEALTH_ENDPOINT": f"127.0.0.1:{health}",
           "OTELCOL_COMPILETOOLS_METRICS_PORT": str(metrics)}
    argv = [binary, "--config", PACKAGES / "config.yaml",
            f"--set=extensions.file_storage.directory={state / 'file_storage'}",
            f"--set=receivers.compiletools.capture.directory={capture or state / 'capture'}",
            f"--set=receivers.compiletools.poll_interval={poll}",
            "--set=receivers.compiletools.settle_timeout=1s",
            "--set=receivers.compiletools.start_at=beginning",
            # The collector's default log sampling keeps 10 lines of a
            # message per second, then every 100th: with it on, a burst of
            # bad builds shows only its first 10 warnings. Off, so each
            # warning can be counted (the counts are self-metrics anyway).
            "--set=service.telemetry.logs.sampling.enabled=false", *extra]
    proc = ServiceCollector(argv, work, health, env=env, user=user, config_path=PACKAGES / "config.yaml")
    proc.metrics_port = metrics
    return proc.start()


def peak_rss_kib(proc):
    """VmHWM of a running collector, KiB (None once it exited)."""
    try:
        for line in Path(f"/proc/{proc.collector_pid()}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, TypeError):
        return None
    return None


class Deliveries:
    """What arrived, per build (ct.invocation_id), from one or more sinks."""

    def __init__(self, sinks):
        self.copies = defaultdict(list)      # (trace id, span id) -> serialized copies
        self.trace_ids = defaultdict(set)    # invocation id -> trace ids
        for sink in sinks:
            for res, span in sink.spans():
                self.copies[(span.trace_id, span.span_id)].append(span.SerializeToString(deterministic=True))
                self.trace_ids[res.get("ct.invocation_id")].add(span.trace_id)

    def delivered(self, names):
        per_trace = defaultdict(int)
        for (tid, _sid) in self.copies:
            per_trace[tid] += 1
        want = spans_per_build()
        return {n for n in names
                if any(per_trace[t] == want for t in self.trace_ids.get(n, ()))}

    def duplicates(self):
        """Builds whose spans arrived more than once, and whether every
        copy was byte-identical."""
        repeated = {k: v for k, v in self.copies.items() if len(v) > 1}
        builds = {tid for tid, _ in repeated}
        exact = all(all(c == v[0] for c in v) for v in repeated.values())
        return len(builds), exact

    def resent_with_other_ids(self):
        return sum(1 for ids in self.trace_ids.values() if len(ids) > 1)


def warning_lines(procs, needle):
    return sum(1 for p in procs for line in p.stderr_text().splitlines()
               if needle in line and "warn" in line.lower())


def rmtree(path):
    shutil.rmtree(path, ignore_errors=True)


CHAOS_USER = "ctchaos"


def ensure_user(name=CHAOS_USER):
    """A system user without a home to run the collector as (CI runs as
    root, which reads everything); created once, reused after."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                       check=True)
    return name


def scratch_for_others(prefix):
    """A scratch directory the chaos user can reach: pytest's and
    tempfile's own are 0700 under root."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    root.chmod(0o755)
    return root


def self_metric(proc, name):
    """The sum of a self-metric's series on the collector's Prometheus
    endpoint (None if it cannot be scraped)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{proc.metrics_port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    total = 0.0
    for line in text.splitlines():
        if line.startswith(f"otelcol_{name}") and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total
