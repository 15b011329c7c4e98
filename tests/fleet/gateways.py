"""The gateway tier of the fleet: one lb and N backends of otelcol-gateway,
each run with its shipped config from deploy/gateway/ and only what a site
sets: the GATEWAY_* environment (ports on 127.0.0.1, the static backend
ring, the export endpoint) and, on the backends, command-line overrides
that send metrics and logs to the test's OTLP sink (Jaeger takes traces
only).

A backend keeps its ports over a restart, so the lb's static ring finds
it again, as a pod behind a fixed address would be.
"""

from pathlib import Path

from harness import packaged
from harness.collector import free_port
from harness.service import ServiceCollector

from . import usage

REPO = Path(__file__).resolve().parents[2]
GATEWAY_DIR = REPO / "deploy" / "gateway"
LB_CONFIG = GATEWAY_DIR / "config-lb.yaml"
BACKEND_CONFIG = GATEWAY_DIR / "config-backend.yaml"

# CT_FLEET_FAULT=backend-batch: a batch processor in the backends' traces
# pipeline. It acknowledges before the export happened, so a backend killed
# with spans in it loses them: the test must then fail (README of
# deploy/gateway, "Delivery").
BATCH_FAULT = ["--set=processors.batch.timeout=2s",
               "--set=service.pipelines.traces.processors=[memory_limiter, batch]"]


class Gateway:
    """One otelcol-gateway instance; start() and restart() make a fresh
    process on the same ports (a new log file per lifetime)."""

    def __init__(self, binary, workdir, name, config, env, extra=()):
        self.binary = Path(binary)
        self.workdir = Path(workdir)
        self.name = name
        self.config = config
        self.health_port = free_port()
        self.metrics_port = free_port()
        self.grpc_port = free_port()
        self.http_port = free_port()
        self.env = {"PATH": "/usr/bin:/bin",
                    "GATEWAY_OTLP_GRPC_ENDPOINT": f"127.0.0.1:{self.grpc_port}",
                    "GATEWAY_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{self.http_port}",
                    "GATEWAY_HEALTH_ENDPOINT": f"127.0.0.1:{self.health_port}",
                    "GATEWAY_METRICS_HOST": "127.0.0.1",
                    "GATEWAY_METRICS_PORT": str(self.metrics_port),
                    **env}
        self.extra = list(extra)
        self.lifetimes = []   # every ServiceCollector this gateway ran as
        self.usage = usage.Usage()

    @property
    def proc(self):
        return self.lifetimes[-1]

    @property
    def grpc_endpoint(self):
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def http_endpoint(self):
        return f"http://127.0.0.1:{self.http_port}"

    def start(self):
        n = len(self.lifetimes) + 1
        argv = [self.binary, "--config", self.config, *self.extra]
        proc = ServiceCollector(argv, self.workdir / f"{self.name}-run{n}", self.health_port,
                                env=self.env, config_path=self.config)
        proc.metrics_port = self.metrics_port
        self.lifetimes.append(proc)
        proc.start(health_timeout=60)
        return self

    def kill(self):
        """SIGKILL, as a crash; its CPU and peak RSS are noted first."""
        self.usage.note_final(self.proc)
        self.proc.kill()

    def self_metric(self, name):
        """Sum of one of the gateway's own metrics (None if unreachable)."""
        return packaged.self_metric(self.proc, name)

    def stop(self):
        """Stops the live lifetime (noting its usage); exit codes of all."""
        if self.lifetimes and self.proc.running():
            self.usage.note_final(self.proc)
        return [p.stop() for p in self.lifetimes]


def backend(binary, workdir, index, jaeger_endpoint, sink_endpoint, fault=None):
    """A backend: traces over OTLP/gRPC to `jaeger_endpoint` (the proxy),
    metrics and logs over OTLP/HTTP to the sink."""
    env = {"GATEWAY_EXPORTER": "otlp_grpc",
           "GATEWAY_EXPORT_ENDPOINT": jaeger_endpoint,
           "GATEWAY_EXPORT_INSECURE": "true"}
    extra = [f"--set=exporters.otlp_http.endpoint={sink_endpoint}",
             "--set=service.pipelines.metrics.exporters=[otlp_http]",
             "--set=service.pipelines.logs.exporters=[otlp_http]"]
    if fault == "backend-batch":
        extra += BATCH_FAULT
    return Gateway(binary, workdir, f"backend{index}", BACKEND_CONFIG, env, extra)


def lb(binary, workdir, backends):
    """The lb: the static resolver over the backends' gRPC endpoints."""
    ring = ", ".join(b.grpc_endpoint for b in backends)
    env = {"GATEWAY_BACKENDS": f"{{static: {{hostnames: [{ring}]}}}}"}
    return Gateway(binary, workdir, "lb", LB_CONFIG, env)
