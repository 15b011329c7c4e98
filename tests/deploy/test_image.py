"""The container image of `make image` (buildah, no daemon, no registry):
its configuration, its size, and the collector inside it delivering corpus
builds to a sink on this machine — once with the image's own (packaged)
config, once as the Kubernetes DaemonSet runs it."""

import hashlib
import os
import re
from pathlib import Path

import yaml

from harness import collector as collector_mod
from harness.service import ServiceCollector

from . import builds, deploy_report
from .conftest import require_root
from .image import WorkingContainer, buildah, image_config, require_image

REPO = Path(__file__).resolve().parents[2]
CONFIG = "/etc/otelcol-compiletools/config.yaml"
UID = 10001
CONTAINER_WARNING = "host_name is not set and this looks like a container"


def test_image_runs_as_non_root_with_the_packaged_config(collector_binary):
    require_root()
    name = require_image()
    config = image_config(name)
    assert config["User"] == f"{UID}:{UID}"
    assert config["Entrypoint"] == ["/usr/bin/otelcol-compiletools"]
    assert config["Cmd"] == ["--config", CONFIG]
    assert not config.get("Volumes"), "a VOLUME would shadow the state mount"
    with WorkingContainer(name) as ctr:
        assert ctr.read(CONFIG) == (REPO / "deploy/packages/config.yaml").read_text()
        sums = ctr.run(["sha256sum", "/usr/bin/otelcol-compiletools"]).stdout.split()
        assert sums and sums[0] == hashlib.sha256(Path(collector_binary).read_bytes()).hexdigest(), (
            "the image's binary is not the one `make collector` built")
        # glibc runtime: the cgo binary's libraries resolve inside the image.
        ldd = ctr.run(["ldd", "/usr/bin/otelcol-compiletools"])
        assert ldd.returncode == 0 and "not found" not in ldd.stdout, ldd.stdout + ldd.stderr
        assert ctr.run(["test", "-s", "/etc/ssl/certs/ca-certificates.crt"]).returncode == 0, (
            "no CA certificates: OTLP over HTTPS would fail")


def test_image_size_is_reported(tmp_path):
    require_root()
    name = require_image()
    listed = buildah("images", "--format", "{{.Size}}", name).stdout.strip()
    archive = tmp_path / "image.tar"
    buildah("push", "--quiet", name, f"oci-archive:{archive}")
    deploy_report.record("image size", f"{listed} (buildah images); {archive.stat().st_size / 1e6:.1f} MB as a "
                                       f"compressed OCI archive")
    assert archive.stat().st_size > 1_000_000


def _container_collector(ctr, workdir, volumes, env, command=None):
    health = collector_mod.free_port()
    env = {"OTELCOL_COMPILETOOLS_HEALTH_ENDPOINT": f"127.0.0.1:{health}",
           "OTELCOL_COMPILETOOLS_METRICS_PORT": str(collector_mod.free_port()), **env}
    command = command or ["/usr/bin/otelcol-compiletools", "--config", CONFIG]
    argv = ctr.run_argv(command, volumes=volumes, env=env)
    return ServiceCollector(argv, workdir, health, env={"PATH": os.environ["PATH"]}, wrapped=True)


def _stop_cleanly(service):
    code = service.stop()
    assert not service.killed and code == 0, f"exit {code}\n{service.describe()}"


def test_image_delivers_case01_and_warns_about_the_container_host_name(sink, tmp_path, corpus_dir):
    require_root()
    name = require_image()
    diag = tmp_path / "diagnostics"
    diag.mkdir()
    with WorkingContainer(name) as ctr:
        # The packaged config's default include is /var/tmp/ct-diagnostics.
        service = _container_collector(
            ctr, tmp_path / "collector", volumes=[(diag, "/var/tmp/ct-diagnostics", "ro")],
            env={"OTELCOL_COMPILETOOLS_OTLP_ENDPOINT": sink.endpoint})
        service.start()
        try:
            added = builds.add_builds(diag, [builds.CASES[0]])
            per_build = builds.assert_every_build_arrived(sink, added, service)
        finally:
            _stop_cleanly(service)
    log = service.stderr_text()
    warning = next((ln for ln in log.splitlines() if CONTAINER_WARNING in ln), None)
    assert warning, f"no container host-name warning at start\n{service.describe()}"
    # The warning names the host name the builds then carry: the container's.
    (trace,) = per_build.values()
    host = {r.get("host.name") for r, _ in trace}.pop()
    assert re.search(rf'"host.name":\s*"{re.escape(host)}"', warning), warning


def test_image_runs_the_daemonset_config_on_host_mounts(sink, tmp_path, corpus_dir):
    """The DaemonSet's pod, approximated with buildah run: its ConfigMap's
    config, its hostPath mounts at their own paths, its init container's
    command, the node name from the environment."""
    require_root()
    name = require_image()
    k8s = REPO / "deploy" / "kubernetes"
    config_dir = tmp_path / "etc"
    config_dir.mkdir()
    config_map = yaml.safe_load((k8s / "configmap.yaml").read_text())
    (config_dir / "config.yaml").write_text(config_map["data"]["config.yaml"])
    daemonset = yaml.safe_load((k8s / "daemonset.yaml").read_text())
    pod = daemonset["spec"]["template"]["spec"]
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    nodes = {}  # hostPath on the "node" -> a directory of this test
    for vol, path in host_paths.items():
        nodes[path] = tmp_path / "node" / vol
        nodes[path].mkdir(parents=True)

    def mounts(container):
        out = []
        for m in container["volumeMounts"]:
            vol = next(v for v in pod["volumes"] if v["name"] == m["name"])
            src = config_dir if "configMap" in vol else nodes[vol["hostPath"]["path"]]
            out.append((src, m["mountPath"], "ro") if m.get("readOnly") else (src, m["mountPath"]))
        return out

    (init,) = pod["initContainers"]
    (agent,) = pod["containers"]
    builds_root = nodes["/srv/ct-builds"]
    with WorkingContainer(name) as ctr:
        prepared = ctr.run(init["command"], volumes=mounts(init), user="0:0")
        assert prepared.returncode == 0, prepared.stderr
        capture = builds_root / ".otelcol-compiletools-capture"
        assert capture.stat().st_uid == UID, "the init container did not hand the capture directory over"

        env = {"K8S_NODE_NAME": "node-under-test", "OTELCOL_COMPILETOOLS_OTLP_ENDPOINT": sink.endpoint}
        health = collector_mod.free_port()
        # Ports of the pod's own network namespace, moved off this machine's
        # shared ones: the health check, and the internal metrics (8888).
        command = ["/usr/bin/otelcol-compiletools", *agent["args"],
                   f"--set=extensions.health_check.endpoint=127.0.0.1:{health}",
                   "--set=service.telemetry.metrics.level=none"]
        argv = ctr.run_argv(command, volumes=mounts(agent), env=env)
        # The agent container's own user is the image's (10001).
        service = ServiceCollector(argv, tmp_path / "collector", health, env={"PATH": os.environ["PATH"]},
                                   wrapped=True)
        service.start()
        try:
            diag_a = builds_root / "diagnostics"
            diag_b = builds_root / "geom" / "bin" / "gcc.debug" / "diagnostics"
            for d in (diag_a, diag_b):
                d.mkdir(parents=True)
            added = {**builds.add_builds(diag_a, [builds.CASES[0]]),
                     **builds.add_builds(diag_b, [builds.CASES[1]])}
            builds.assert_every_build_arrived(sink, added, service, host_name="node-under-test")
        finally:
            _stop_cleanly(service)
    assert CONTAINER_WARNING not in service.stderr_text(), "warned although host_name is set"
    stored = list((nodes["/var/lib/otelcol-compiletools"] / "file_storage").iterdir())
    assert stored, "no checkpoints on the node's state hostPath"
