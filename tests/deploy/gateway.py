"""Helpers of the gateway's deployment tests: the environment of one
gateway instance on free loopback ports, and a corpus build sent by an
agent through gateways to the sink."""

from pathlib import Path

from harness import collector as collector_mod

from . import builds


def instance_env(role, **extra):
    """GATEWAY_* variables of one instance of `role` on free loopback ports;
    returns (env, {"grpc", "http", "health"} ports)."""
    ports = {name: collector_mod.free_port() for name in ("grpc", "http", "health", "metrics")}
    env = {
        "GATEWAY_ROLE": role,
        "GATEWAY_OTLP_GRPC_ENDPOINT": f"127.0.0.1:{ports['grpc']}",
        "GATEWAY_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{ports['http']}",
        "GATEWAY_HEALTH_ENDPOINT": f"127.0.0.1:{ports['health']}",
        "GATEWAY_METRICS_HOST": "127.0.0.1",
        "GATEWAY_METRICS_PORT": str(ports["metrics"]),
        **extra,
    }
    return env, ports


def static_backends(*grpc_ports):
    """GATEWAY_BACKENDS of an lb layer in front of these backends."""
    hosts = ", ".join(f"127.0.0.1:{p}" for p in grpc_ports)
    return f"{{static: {{hostnames: [{hosts}]}}}}"


def assert_agent_build_arrives(collector_binary, workdir, http_port, sink, gateways):
    """An agent (the e2e harness's config) sends corpus build 01 to the
    gateway listening on `http_port`; it arrives at the sink whole, once.
    `gateways` are the services on the path (for their logs on failure)."""
    diag = Path(workdir) / "diagnostics"
    diag.mkdir(parents=True)
    agent = collector_mod.Collector(collector_binary, Path(workdir) / "agent", [str(diag)],
                                    f"http://127.0.0.1:{http_port}")
    agent.start()
    try:
        added = builds.add_builds(diag, [builds.CASES[0]])
        try:
            builds.assert_every_build_arrived(sink, added, agent)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n" + "\n".join(g.describe() for g in gateways)) from None
    finally:
        agent.stop()


def assert_lb_and_backend_deliver(lb, backend, collector_binary, workdir, lb_http_port, sink, check_running=None):
    """Start `backend`, then `lb` (services); `check_running(lb)` if given;
    an agent's build through both arrives at the sink; both stop cleanly."""
    backend.start()
    try:
        lb.start()
        try:
            if check_running is not None:
                check_running(lb)
            assert_agent_build_arrives(collector_binary, workdir, lb_http_port, sink, [lb, backend])
        finally:
            lb_code = lb.stop()
    finally:
        backend_code = backend.stop()
    assert (lb_code, backend_code) == (0, 0) and not (lb.killed or backend.killed), (
        f"exits lb {lb_code}, backend {backend_code}\n{lb.describe()}\n{backend.describe()}")
