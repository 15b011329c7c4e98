"""The collector configuration of the dashboard test: the compiletools
receiver's metrics to the prometheus exporter (what Prometheus scrapes) and,
like its traces, to an OTLP sink, so the test knows when a build's metrics
were handed over and which trace and span ids exemplars may point at.

The compile history is on (ct.cache.time_saved) and builds are read one at
a time, oldest first, so a cache hit always finds its target's earlier
compile; a logs pipeline turns live builds on (ct.build.running,
ct.live.compiles).

Two hosts, for the "Comparing hosts" row: one receiver per host, each with
its own host_name, diagnostics tree and CAS store, in one collector, so
their series come through one exporter and one scrape (every sample of a
scrape has the same timestamp, which the exact-value test relies on). The
exporter turns resource attributes into labels (host.name → host_name),
as deploy/grafana/README.md recommends."""

import json
from dataclasses import dataclass, field

from harness.collector import POLL_INTERVAL_S

PIPELINE_NAME = "corpus"
LIVE_INTERVAL_S = 0.2
CAS_INTERVAL_MS = 500


@dataclass
class Host:
    """One receiver: `statslogs` are [(glob of invocation dirs, statslog
    path)] for builds whose ccache statslog was written outside the
    invocation directory; `cas_cells` [(kind, cell path)] it scans."""
    name: str
    receiver_id: str
    diag: object
    statslogs: list = field(default_factory=list)
    cas_cells: list = field(default_factory=list)


def _q(text):
    # A JSON string is a valid YAML double-quoted scalar: safe for any path.
    return json.dumps(str(text))


def _receiver(host):
    mappings = "".join(f"        - include: {_q(glob)}\n          path: {_q(path)}\n"
                       for glob, path in host.statslogs) or "        []\n"
    stores = "".join(f"      - {{kind: {kind}, path: {_q(path)}}}\n" for kind, path in host.cas_cells)
    cas = (f"    cas:\n      stores:\n{stores}      initial_delay: 0s\n"
           f"      collection_interval: {CAS_INTERVAL_MS}ms\n") if host.cas_cells else ""
    return f"""\
  {host.receiver_id}:
    include: [{_q(host.diag)}]
    poll_interval: {int(POLL_INTERVAL_S * 1000)}ms
    host_name: {_q(host.name)}
    # A name of its own rather than the temporary directory's path, which
    # would end up in the picture.
    pipeline_name: {_q(PIPELINE_NAME)}
    max_concurrent_builds: 1
    history:
      enabled: true
    live:
      interval: {int(LIVE_INTERVAL_S * 1000)}ms
    capture:
      statslogs:
{mappings}{cas}"""


def render(hosts, sink_endpoint, prometheus_endpoint, health_port):
    receivers = "".join(_receiver(h) for h in hosts)
    ids = ", ".join(h.receiver_id for h in hosts)
    return f"""\
receivers:
{receivers}exporters:
  prometheus:
    endpoint: {_q(prometheus_endpoint)}
    # OpenMetrics is the exposition format that carries exemplars.
    enable_open_metrics: true
    # As deploy/grafana/README.md recommends.
    metric_expiration: 24h
    resource_to_telemetry_conversion:
      enabled: true
  otlp_http:
    endpoint: {_q(sink_endpoint)}
    timeout: 5s
    retry_on_failure:
      initial_interval: 100ms
      max_interval: 500ms
      max_elapsed_time: 10s
extensions:
  health_check:
    endpoint: {_q(f"127.0.0.1:{health_port}")}
service:
  extensions: [health_check]
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [{ids}]
      exporters: [otlp_http]
    metrics:
      receivers: [{ids}]
      exporters: [prometheus, otlp_http]
    logs:
      receivers: [{ids}]
      exporters: [otlp_http]
"""
