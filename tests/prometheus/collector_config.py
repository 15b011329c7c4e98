"""The collector configuration of the dashboard test: the compiletools
receiver's metrics to the prometheus exporter (what Prometheus scrapes) and,
like its traces, to an OTLP sink, so the test knows when a build's metrics
were handed over and which trace and span ids exemplars may point at.

The compile history is on (ct.cache.time_saved) and builds are read one at
a time, oldest first, so a cache hit always finds its target's earlier
compile; a logs pipeline turns live builds on (ct.build.running,
ct.live.compiles)."""

import json

from harness.collector import HOST_NAME, POLL_INTERVAL_S

PIPELINE_NAME = "corpus"
LIVE_INTERVAL_S = 0.2


def _q(text):
    # A JSON string is a valid YAML double-quoted scalar: safe for any path.
    return json.dumps(str(text))


def render(diag, statslogs, sink_endpoint, prometheus_endpoint, health_port):
    """`statslogs`: [(glob of invocation dirs, statslog path)] for builds
    whose ccache statslog was written outside the invocation directory."""
    mappings = "".join(f"        - include: {_q(glob)}\n          path: {_q(path)}\n"
                       for glob, path in statslogs)
    return f"""\
receivers:
  compiletools:
    include: [{_q(diag)}]
    poll_interval: {int(POLL_INTERVAL_S * 1000)}ms
    host_name: {_q(HOST_NAME)}
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
{mappings}exporters:
  prometheus:
    endpoint: {_q(prometheus_endpoint)}
    # OpenMetrics is the exposition format that carries exemplars.
    enable_open_metrics: true
    # As deploy/grafana/README.md recommends.
    metric_expiration: 24h
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
      receivers: [compiletools]
      exporters: [otlp_http]
    metrics:
      receivers: [compiletools]
      exporters: [prometheus, otlp_http]
    logs:
      receivers: [compiletools]
      exporters: [otlp_http]
"""
