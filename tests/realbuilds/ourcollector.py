"""Our collector (the ocb-built otelcol-compiletools) configured for real builds.

Reuses tests/harness/collector.py's process handling (start, health probe,
SIGTERM -> SIGKILL, logs); only the config differs: traces AND metrics
pipelines, the receiver's capture / statslog mapping / git commit options,
and host_name = the host name ct-cake itself reports (socket.gethostname()),
so host.name and service.instance.id can be compared with ct-cake's.
"""

import json
import socket

from harness import collector as e2e_collector

POLL_INTERVAL = "200ms"
SETTLE_TIMEOUT = "2s"


def host_name():
    """What ct-cake puts into host.name (compiletools uses socket.gethostname())."""
    return socket.gethostname()


def receiver_config(include, capture_dir, statslogs=(), start_at="beginning", git_max_lag="30s",
                    metrics_as_spans=False, build_graphs=()):
    return {
        "include": [str(p) for p in include],
        "poll_interval": POLL_INTERVAL,
        "settle_timeout": SETTLE_TIMEOUT,
        "start_at": start_at,
        "host_name": host_name(),
        "metrics_as_spans": metrics_as_spans,
        # The comparison is with ct-cake's own ccache metrics: its per-build
        # series (the compatibility switch) and none of the build metrics,
        # which ct-cake does not send (tests/e2e/test_build_metrics.py has those).
        "per_build_metric_identity": True,
        "metrics": {name: {"enabled": False} for name in (
            "cicd.pipeline.run.duration", "cicd.pipeline.run.errors", "ct.rule.duration", "ct.compiles",
            "ct.build.critical_path.duration", "ct.build.parallelism")},
        "git_commit": {"enabled": True, "max_lag": git_max_lag},
        "capture": {
            "enabled": True,
            # On the builds' filesystem: captures are hard links.
            "directory": str(capture_dir),
            "statslogs": [{"include": str(inc), "path": str(path)} for inc, path in statslogs],
        },
        # ct-cake's generated build.ninja / Makefile: the exact critical path.
        "analytics": {"build_graphs": [{"include": str(inc), "path": str(path)} for inc, path in build_graphs]},
    }


def render(receiver, exporter_endpoint, health_port):
    """The whole config as JSON, which is valid YAML."""
    return json.dumps({
        "receivers": {"compiletools": receiver},
        "exporters": {"otlp_http": {
            "endpoint": exporter_endpoint,
            "timeout": "30s",
            "retry_on_failure": {"enabled": True, "initial_interval": "100ms",
                                 "max_interval": "500ms", "max_elapsed_time": "20s"},
        }},
        "extensions": {"health_check": {"endpoint": f"127.0.0.1:{health_port}"}},
        "service": {
            "extensions": ["health_check"],
            "telemetry": {"metrics": {"level": "none"}},
            "pipelines": {
                "traces": {"receivers": ["compiletools"], "exporters": ["otlp_http"]},
                "metrics": {"receivers": ["compiletools"], "exporters": ["otlp_http"]},
            },
        },
    }, indent=2) + "\n"


class OurCollector(e2e_collector.Collector):
    def __init__(self, binary, workdir, receiver, exporter_endpoint):
        super().__init__(binary, workdir, include=receiver["include"], exporter_endpoint=exporter_endpoint)
        # Same process handling as the e2e harness, our own config.
        self.config_path.write_text(render(receiver, exporter_endpoint, self.health_port))
