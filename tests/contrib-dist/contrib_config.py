"""The configuration the contrib distribution runs with: our receiver and
both contrib receivers in one collector, each to its own sink."""

import json

from harness.collector import HOST_NAME, POLL_INTERVAL_S

HOST_METRIC = "system.memory.usage"


def _q(text):
    # A JSON string is a valid YAML double-quoted scalar: safe for any path.
    return json.dumps(str(text))


def render(diag, log_file, build_endpoint, contrib_endpoint, health_port):
    exporter = """
    timeout: 5s
    retry_on_failure:
      initial_interval: 100ms
      max_interval: 500ms
      max_elapsed_time: 10s"""
    return f"""\
receivers:
  compiletools:
    include: [{_q(diag)}]
    poll_interval: {int(POLL_INTERVAL_S * 1000)}ms
    host_name: {_q(HOST_NAME)}
  file_log:
    include: [{_q(log_file)}]
    start_at: beginning
  host_metrics:
    collection_interval: 1s
    scrapers:
      memory:
exporters:
  otlp_http/build:
    endpoint: {_q(build_endpoint)}{exporter}
  otlp_http/contrib:
    endpoint: {_q(contrib_endpoint)}{exporter}
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
      exporters: [otlp_http/build]
    metrics/build:
      receivers: [compiletools]
      exporters: [otlp_http/build]
    metrics/host:
      receivers: [host_metrics]
      exporters: [otlp_http/contrib]
    logs:
      receivers: [file_log]
      exporters: [otlp_http/contrib]
"""
