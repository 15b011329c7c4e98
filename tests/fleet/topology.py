"""The whole fleet on loopback, started and stopped in dependency order:

    agents (8 × otelcol-compiletools, packaged config)
        │ OTLP/HTTP, one endpoint
        ▼
    lb (otelcol-gateway, config-lb.yaml: load_balancing, static ring)
        │ OTLP/gRPC, by trace id (metrics by resource)
        ▼
    backends (3 × otelcol-gateway, config-backend.yaml)
        │ traces: OTLP/gRPC            │ metrics, logs: OTLP/HTTP
        ▼                              ▼
    TCP proxy (a process; cut for     OtlpSink (the test)
      the outage)
        ▼
    Jaeger v2 (in-memory)

    Prometheus ── scrapes ──► every agent's prometheus exporter
"""

import os
import threading
from collections import namedtuple
from pathlib import Path

from harness.collector import free_port
from harness.otlp_sink import OtlpSink
from harness.tcp_proxy import ProxyProcess

from . import agents as agents_mod
from . import gateways, totals, traces

Binaries = namedtuple("Binaries", "agent gateway jaeger prometheus dump")
BACKENDS = 3


def host_name(i):
    return f"fleet-host-{i + 1:02d}"


def _in_parallel(calls):
    """Runs the calls on threads; raises the first failure after all ended."""
    errors = []

    def run(call):
        try:
            call()
        except BaseException as exc:  # re-raised below, in this thread
            errors.append(exc)
    threads = [threading.Thread(target=run, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


class Fleet:
    def __init__(self, binaries, root, agents, restarted_hosts, fault=None):
        """`restarted_hosts`: the hosts whose agent the test will restart
        (each gets a second exporter port, see agents.py)."""
        root = Path(os.path.realpath(root))
        self.root = root
        self.binaries = binaries
        self.sink = OtlpSink()
        self.jaeger = traces.FleetJaeger(binaries.jaeger, root / "jaeger")
        self.proxy = ProxyProcess(("127.0.0.1", int(self.jaeger.otlp_grpc.rsplit(":", 1)[1])))
        self.fault = fault
        self.backends = []
        self.lb = None
        self.agents = []
        self.prometheus = None
        self.proxy_stats = {}
        self._agent_count = agents
        self._restarted = set(restarted_hosts)

    def start(self):
        self.jaeger.start(health_timeout=60)
        self.proxy.start()
        self.sink.start()
        self.backends = [gateways.backend(self.binaries.gateway, self.root / "gateways", i + 1,
                                          self.proxy.endpoint, self.sink.endpoint, self.fault)
                         for i in range(BACKENDS)]
        _in_parallel([b.start for b in self.backends])
        self.lb = gateways.lb(self.binaries.gateway, self.root / "gateways", self.backends)
        self.lb.start()
        self.agents = [agents_mod.Agent(self.binaries.agent, self.root / "hosts" / host_name(i), host_name(i),
                                        self.lb.http_endpoint,
                                        lifetimes=2 if host_name(i) in self._restarted else 1)
                       for i in range(self._agent_count)]
        _in_parallel([a.start for a in self.agents])
        self.prometheus = totals.FleetPrometheus(self.binaries.prometheus, self.root / "prometheus",
                                                 free_port(), self.agents)
        self.prometheus.start()
        return self

    def agent(self, host):
        return next(a for a in self.agents if a.host_name == host)

    def stop(self):
        """Stops whatever was started, agents first; returns {name: [exit
        code of each lifetime]} of the collectors."""
        codes = {a.host_name: a.stop() for a in self.agents}
        if self.lb is not None:
            codes["lb"] = self.lb.stop()
        codes.update({b.name: b.stop() for b in self.backends})
        if self.prometheus is not None:
            self.prometheus.stop()
        self.proxy_stats = self.proxy.stop()
        self.sink.stop()
        codes["jaeger"] = [self.jaeger.stop()]
        return codes

    def describe(self, lines=15):
        parts = [f"{a.host_name}:\n{a.proc.describe(lines)}" for a in self.agents if a.lifetimes]
        parts += [f"{g.name}:\n{g.proc.describe(lines)}" for g in [self.lb, *self.backends] if g and g.lifetimes]
        return "\n\n".join(parts)
