"""The gateway's image of `make image-gateway` (buildah, on the agent's
Debian base): its configuration, and both roles running from it — an
agent's build through an lb container and a backend container to a sink on
this machine."""

import hashlib
import os
from pathlib import Path

from harness.service import ServiceCollector

from . import deploy_report, gateway
from .conftest import require_root
from .image import WorkingContainer, buildah, gateway_image_name, image_config, require_image

REPO = Path(__file__).resolve().parents[2]
ETC = "/etc/otel-gateway"
UID = 10001


def _image():
    return require_image(gateway_image_name(), target="image-gateway")


def test_gateway_image_runs_as_non_root_with_the_repository_configs():
    require_root()
    name = _image()
    config = image_config(name)
    assert config["User"] == f"{UID}:{UID}"
    assert config["Entrypoint"] == ["/usr/bin/otelcol-gateway"]
    assert config["Cmd"] == ["--config", f"{ETC}/config-backend.yaml"]
    binary = Path(os.environ.get("GATEWAY_BIN") or REPO / "_build/otelcol-gateway/otelcol-gateway")
    with WorkingContainer(name) as ctr:
        for conf in ("config-lb.yaml", "config-backend.yaml", "config-backend-sampling.yaml"):
            assert ctr.read(f"{ETC}/{conf}") == (REPO / "deploy/gateway" / conf).read_text(), conf
        sums = ctr.run(["sha256sum", "/usr/bin/otelcol-gateway"]).stdout.split()
        assert sums and sums[0] == hashlib.sha256(binary.read_bytes()).hexdigest(), (
            "the image's binary is not the one `make gateway` built")
        assert ctr.run(["test", "-s", "/etc/ssl/certs/ca-certificates.crt"]).returncode == 0
    size = buildah("images", "--format", "{{.Size}}", name).stdout.strip()
    deploy_report.record("gateway image size", f"{size} (buildah images)")


def _container_gateway(ctr, workdir, role, env, ports):
    command = ["/usr/bin/otelcol-gateway", "--config", f"{ETC}/config-{role}.yaml"]
    argv = ctr.run_argv(command, env=env)
    return ServiceCollector(argv, workdir, ports["health"], env={"PATH": os.environ["PATH"]}, wrapped=True,
                            executable="otelcol-gateway")


def test_gateway_image_roles_forward_an_agent_build(sink, collector_binary, tmp_path):
    require_root()
    name = _image()
    backend_env, backend_ports = gateway.instance_env("backend", GATEWAY_EXPORT_ENDPOINT=sink.endpoint)
    lb_env, lb_ports = gateway.instance_env("lb", GATEWAY_BACKENDS=gateway.static_backends(backend_ports["grpc"]))
    with WorkingContainer(name) as backend_ctr, WorkingContainer(name) as lb_ctr:
        backend = _container_gateway(backend_ctr, tmp_path / "backend", "backend", backend_env, backend_ports)
        lb = _container_gateway(lb_ctr, tmp_path / "lb", "lb", lb_env, lb_ports)
        gateway.assert_lb_and_backend_deliver(lb, backend, collector_binary, tmp_path / "agent", lb_ports["http"],
                                              sink)
