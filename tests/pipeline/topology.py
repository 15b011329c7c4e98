"""The processes of a real delivery path: agent, gateway, Jaeger.

    agent   : otelcol-compiletools, our receiver -> otlp_grpc exporter
              (sending_queue.wait_for_result: a checkpoint means "the
              gateway has it")
    gateway : otelcol-compiletools, otlp receiver at its defaults (gRPC,
              4 MiB max message) -> otlp_http to the test sink, or
              otlp_grpc to Jaeger
    jaeger  : Jaeger v2 with in-memory storage; its OTLP gRPC receiver is at
              its defaults too, the query API answers /api/traces/<id>

Every port is a free one on 127.0.0.1, chosen when the process is made.
Process handling (health probe, SIGTERM then SIGKILL, logs) is the e2e
harness's (tests/harness/collector.py); only the configs differ.
"""

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

from harness import collector as e2e_collector
from harness.collector import free_port

AGENT_HOST_NAME = "pipeline-host"


class ConfiguredCollector(e2e_collector.Collector):
    """A collector process (ours, or Jaeger, which is a collector
    distribution too) with a config given as a dict; `health_port` is
    where its health check answers."""

    def __init__(self, binary, workdir, config, health_port):
        super().__init__(binary, workdir, include=[], exporter_endpoint="http://unused")
        self.health_port = health_port
        # JSON is valid YAML.
        self.config_path.write_text(json.dumps(config, indent=2) + "\n")

    def peak_rss_mib(self):
        """The process's peak resident set (VmHWM) so far, in MiB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM in /proc status")


def _quiet_service(pipelines, extensions=("health_check",)):
    # No self-telemetry endpoint: the default one (:8888) would clash
    # between the processes.
    return {"extensions": list(extensions), "telemetry": {"metrics": {"level": "none"}},
            "pipelines": pipelines}


# A 1M-rule build (609 MB of timing.json, 1,000,007 events) is over the
# receiver's default limits (256 MiB, 1,000,000 events): README, Large builds.
LARGE_BUILD_LIMITS = {"max_file_size": 1 << 30, "max_events": 2_000_000}


def agent(binary, workdir, include, gateway_grpc, receiver_extra=None):
    """Our receiver, exporting over gRPC to the gateway; each Consume
    returns when the gateway accepted the request."""
    health = free_port()
    receiver = {"include": [str(p) for p in include], "poll_interval": "200ms",
                "host_name": AGENT_HOST_NAME, "limits": LARGE_BUILD_LIMITS, **(receiver_extra or {})}
    config = {
        "receivers": {"compiletools": receiver},
        "exporters": {"otlp_grpc": {
            "endpoint": gateway_grpc,
            "tls": {"insecure": True},
            "sending_queue": {"wait_for_result": True},
            "retry_on_failure": {"initial_interval": "200ms", "max_interval": "2s", "max_elapsed_time": "120s"},
        }},
        "extensions": {"health_check": {"endpoint": f"127.0.0.1:{health}"}},
        "service": _quiet_service({"traces": {"receivers": ["compiletools"], "exporters": ["otlp_grpc"]}}),
    }
    return ConfiguredCollector(binary, workdir, config, health)


def gateway(binary, workdir, sink_endpoint=None, jaeger_grpc=None, exporter_extra=None):
    """An otlp receiver at its defaults (only the port is chosen) that
    forwards to the test sink (otlp_http) or to Jaeger (otlp_grpc).
    Returns (process, its OTLP gRPC endpoint)."""
    health, grpc = free_port(), f"127.0.0.1:{free_port()}"
    if sink_endpoint is not None:
        name, exporter = "otlp_http", {"endpoint": sink_endpoint}
    else:
        name, exporter = "otlp_grpc", {"endpoint": jaeger_grpc, "tls": {"insecure": True}}
    exporter.update(exporter_extra or {})
    config = {
        "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": grpc}}}},
        "exporters": {name: exporter},
        "extensions": {"health_check": {"endpoint": f"127.0.0.1:{health}"}},
        "service": _quiet_service({"traces": {"receivers": ["otlp"], "exporters": [name]}}),
    }
    return ConfiguredCollector(binary, workdir, config, health), grpc


class Jaeger(ConfiguredCollector):
    """Jaeger v2, in-memory storage, every port moved to a free one."""

    def __init__(self, binary, workdir):
        health = free_port()
        self.otlp_grpc = f"127.0.0.1:{free_port()}"
        self.query_url = f"http://127.0.0.1:{free_port()}"
        config = {
            "extensions": {
                "jaeger_storage": {"backends": {"memory_store": {"memory": {"max_traces": 1000}}}},
                # Tracing of the query service itself would export to
                # localhost:4317 (not ours) and stall Jaeger's shutdown.
                "jaeger_query": {"storage": {"traces": "memory_store"}, "enable_tracing": False,
                                 "http": {"endpoint": self.query_url.removeprefix("http://")},
                                 "grpc": {"endpoint": f"127.0.0.1:{free_port()}"}},
                "healthcheckv2": {"use_v2": True, "http": {"endpoint": f"127.0.0.1:{health}"}},
            },
            "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": self.otlp_grpc}}}},
            # Jaeger's own all-in-one pipeline: batch, then storage.
            "processors": {"batch": {}},
            "exporters": {"jaeger_storage_exporter": {"trace_storage": "memory_store"}},
            "service": _quiet_service(
                {"traces": {"receivers": ["otlp"], "processors": ["batch"],
                            "exporters": ["jaeger_storage_exporter"]}},
                extensions=("jaeger_storage", "jaeger_query", "healthcheckv2")),
        }
        super().__init__(binary, workdir, config, health)

    def _wait_healthy(self, timeout):
        # healthcheckv2 answers on /status.
        url = f"http://127.0.0.1:{self.health_port}/status"
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"jaeger exited with status {self.proc.returncode}\n{self.describe()}")
            try:
                with urllib.request.urlopen(url, timeout=1.0) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError) as exc:
                last = repr(exc)
            time.sleep(0.2)
        raise AssertionError(f"jaeger not healthy at {url} after {timeout:.0f} s (last: {last})\n{self.describe()}")

    def trace(self, trace_id_hex, timeout=30):
        """The trace's spans as Jaeger's query API returns them ([] if none)."""
        url = f"{self.query_url}/api/traces/{trace_id_hex}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                doc = json.load(resp)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return []
            raise
        return [span for trace in doc.get("data") or [] for span in trace["spans"]]


# What the receiver logs when a build will not be (completely) sent.
GIVE_UP_LOGS = ("cannot read build; skipping it", "dropping it", "dropping build")


def gave_up(agent):
    """The agent exited, or its receiver refused or dropped a build
    (nothing more of it will come): stop waiting for spans."""
    log = agent.stderr_text()
    return not agent.running() or any(msg in log for msg in GIVE_UP_LOGS)
