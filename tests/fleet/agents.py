"""The fleet's build hosts: one otelcol-compiletools per host with the
packaged agent config (deploy/packages/config.yaml) and its
EnvironmentFile, adapted only as a site would: the EnvironmentFile's
variables (gateway endpoint, diagnostics glob, host name, local ports) and
command-line overrides for what a test host differs in (its state
directory, a shorter poll) plus the prometheus exporter that
deploy/grafana/README.md adds for the dashboard.

A restarted agent keeps its host name, diagnostics tree and state
directory (its checkpoints), as after a crash of the service. Its
prometheus exporter comes back on another port, which Prometheus scrapes
as a target of its own: each process lifetime's cumulative totals are then
a series of their own, whose last sample is exact, where one target would
show a counter reset that increase() can only estimate.
"""

import os
import urllib.request
from pathlib import Path

from harness import packaged
from harness.collector import free_port
from harness.service import ServiceCollector, read_environment_file

from . import usage

CONFIG = packaged.PACKAGES / "config.yaml"
ENV_FILE = packaged.PACKAGES / "otelcol-compiletools.env"
POLL = "500ms"


class Agent:
    def __init__(self, binary, root, host_name, gateway_endpoint, lifetimes=1):
        """`lifetimes`: how many process lifetimes to reserve a prometheus
        exporter port for (Prometheus' targets are fixed at its start)."""
        self.binary = Path(binary)
        self.host_name = host_name
        self.root = Path(os.path.realpath(root))
        self.diag = self.root / "diag"
        self.state = self.root / "state"
        for d in (self.diag, self.state):
            d.mkdir(parents=True, exist_ok=True)
        self.gateway_endpoint = gateway_endpoint
        self.health_port = free_port()
        self.metrics_port = free_port()          # the collector's own telemetry
        self.exporter_ports = [free_port() for _ in range(lifetimes)]
        self.lifetimes = []
        self.usage = usage.Usage()

    @property
    def proc(self):
        return self.lifetimes[-1]

    @property
    def exporter_port(self):
        return self.exporter_ports[len(self.lifetimes) - 1]

    def targets(self):
        """Prometheus targets of every lifetime: (address, lifetime number)."""
        return [(f"127.0.0.1:{p}", i + 1) for i, p in enumerate(self.exporter_ports)]

    def start(self):
        n = len(self.lifetimes) + 1
        if n > len(self.exporter_ports):
            raise AssertionError(f"{self.host_name}: no exporter port reserved for lifetime {n}")
        port = self.exporter_ports[n - 1]
        env = {**read_environment_file(ENV_FILE),
               "PATH": "/usr/bin:/bin",
               "OTELCOL_COMPILETOOLS_OTLP_ENDPOINT": self.gateway_endpoint,
               "OTELCOL_COMPILETOOLS_INCLUDE": str(self.diag),
               "OTELCOL_COMPILETOOLS_HOST_NAME": self.host_name,
               "OTELCOL_COMPILETOOLS_HEALTH_ENDPOINT": f"127.0.0.1:{self.health_port}",
               "OTELCOL_COMPILETOOLS_METRICS_PORT": str(self.metrics_port)}
        argv = [self.binary, "--config", CONFIG,
                f"--set=extensions.file_storage.directory={self.state / 'file_storage'}",
                f"--set=receivers.compiletools.capture.directory={self.state / 'capture'}",
                f"--set=receivers.compiletools.poll_interval={POLL}",
                "--set=receivers.compiletools.settle_timeout=1s",
                "--set=receivers.compiletools.start_at=beginning",
                "--set=service.telemetry.logs.sampling.enabled=false",
                f"--set=exporters.prometheus.endpoint=127.0.0.1:{port}",
                "--set=exporters.prometheus.metric_expiration=24h",
                # host.name -> host_name, as deploy/grafana/README.md says:
                # the totals and the "Comparing hosts" panels group by it.
                "--set=exporters.prometheus.resource_to_telemetry_conversion.enabled=true",
                "--set=service.pipelines.metrics.exporters=[otlp_http, prometheus]"]
        proc = ServiceCollector(argv, self.root / f"run{n}", self.health_port, env=env, config_path=CONFIG)
        proc.metrics_port = self.metrics_port
        self.lifetimes.append(proc)
        proc.start(health_timeout=60)
        return self

    def kill(self):
        self.usage.note_final(self.proc)
        self.proc.kill()

    def stop(self):
        if self.lifetimes and self.proc.running():
            self.usage.note_final(self.proc)
        return [p.stop() for p in self.lifetimes]

    def self_metric(self, name):
        """Sum of one of the collector's own metrics (None if unreachable)."""
        return packaged.self_metric(self.proc, name)

    def exporter_text(self):
        """The prometheus exporter's current exposition ('' if unreachable)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.exporter_port}/metrics", timeout=5) as r:
                return r.read().decode()
        except OSError:
            return ""
