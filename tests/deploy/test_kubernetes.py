"""deploy/kubernetes: the ConfigMap's config passes the collector's own
`validate`, and the DaemonSet mounts what that config needs the way the
issue asks (the run of this pod in the image is in test_image.py)."""

import os
import re
import subprocess
from pathlib import Path, PurePosixPath

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "kubernetes"


def manifests():
    docs = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs[doc["kind"]] = doc
    return docs


@pytest.fixture(scope="module")
def k8s():
    docs = manifests()
    assert {"Namespace", "ConfigMap", "DaemonSet"} <= set(docs), sorted(docs)
    config = yaml.safe_load(docs["ConfigMap"]["data"]["config.yaml"])
    pod = docs["DaemonSet"]["spec"]["template"]["spec"]
    (agent,) = pod["containers"]
    return docs, config, pod, agent


def _env_of(container):
    """The container's literal env values; downward-API fields get a
    stand-in value, as the kubelet would fill in."""
    env = {}
    for e in container.get("env", []):
        env[e["name"]] = e.get("value", f"stand-in-for-{e['name'].lower()}")
    return env


def test_configmap_config_validates(k8s, collector_binary, tmp_path):
    docs, _, _, agent = k8s
    config = tmp_path / "config.yaml"
    config.write_text(docs["ConfigMap"]["data"]["config.yaml"])
    env = {"PATH": os.environ["PATH"], **_env_of(agent)}
    ok = subprocess.run([str(collector_binary), "validate", "--config", str(config)],
                        capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    # The same validate rejects the config when a value it checks is wrong.
    broken = config.read_text().replace("kind: pch", "kind: pchx")
    config.write_text(broken)
    bad = subprocess.run([str(collector_binary), "validate", "--config", str(config)],
                         capture_output=True, text=True, env=env)
    assert bad.returncode != 0 and "pchx" in bad.stderr, bad.stderr


def _mount_of(path, pod, container):
    """(volumeMount, volume) whose mountPath holds `path` (longest match)."""
    best = None
    for m in container["volumeMounts"]:
        if PurePosixPath(path).is_relative_to(m["mountPath"]):
            if best is None or len(m["mountPath"]) > len(best["mountPath"]):
                best = m
    assert best is not None, f"{path} is on no volume of the container"
    volume = next(v for v in pod["volumes"] if v["name"] == best["name"])
    return best, volume


def _glob_root(pattern):
    """The literal directory prefix of a glob."""
    parts = []
    for part in PurePosixPath(pattern).parts:
        if re.search(r"[*?\[{]", part):
            break
        parts.append(part)
    return str(PurePosixPath(*parts))


def test_daemonset_mounts_builds_capture_and_state_on_host_paths(k8s):
    _, config, pod, agent = k8s
    receiver = config["receivers"]["compiletools"]

    # Every watched path and CAS pool is a hostPath mounted at its own path:
    # paths in the traces (and the trace ids) match a host-installed agent's.
    watched = [_glob_root(p) for p in receiver["include"]] + [p["path"] for p in receiver["cas"]["pools"]]
    for path in watched:
        mount, volume = _mount_of(path, pod, agent)
        assert "hostPath" in volume, f"{path} is not on a hostPath"
        assert volume["hostPath"]["path"] == mount["mountPath"], f"{path}: mounted at another path"

    # Captures are hard links: capture.directory on the builds' very mount,
    # which must be writable for them.
    capture_mount, _ = _mount_of(receiver["capture"]["directory"], pod, agent)
    for pattern in receiver["include"]:
        assert _mount_of(_glob_root(pattern), pod, agent)[0] is capture_mount, (
            f"{pattern} and capture.directory are on different mounts")
    assert not capture_mount.get("readOnly"), "the capture directory's mount is read-only"

    # Checkpoints on the node, so a new pod resumes.
    storage_dir = config["extensions"]["file_storage"]["directory"]
    mount, volume = _mount_of(storage_dir, pod, agent)
    assert "hostPath" in volume and not mount.get("readOnly"), "file_storage is not on a writable hostPath"
    assert receiver["storage"] == "file_storage"

    # The init container hands both directories to the agent's user.
    (init,) = pod["initContainers"]
    uid = str(pod["securityContext"]["runAsUser"])
    assert init["command"][:1] == ["install"] and uid in init["command"]
    assert _mount_of(storage_dir, pod, agent)[0]["mountPath"] in init["command"]
    assert receiver["capture"]["directory"] in init["command"]


def test_host_name_is_the_node_name_and_delivery_is_crash_safe(k8s):
    docs, config, pod, agent = k8s
    receiver = config["receivers"]["compiletools"]
    assert receiver["host_name"] == "${env:K8S_NODE_NAME}"
    node = next(e for e in agent["env"] if e["name"] == "K8S_NODE_NAME")
    assert node["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"

    assert config["exporters"]["otlp_http"]["sending_queue"]["wait_for_result"] is True
    for pipeline in config["service"]["pipelines"].values():
        assert "batch" not in pipeline.get("processors", []), "batch returns before the export"

    # The ConfigMap is what the agent reads, at the packaged path.
    config_mount = next(m for m in agent["volumeMounts"] if m["mountPath"] == "/etc/otelcol-compiletools")
    volume = next(v for v in pod["volumes"] if v["name"] == config_mount["name"])
    assert volume["configMap"]["name"] == docs["ConfigMap"]["metadata"]["name"]
    assert agent["args"] == ["--config", "/etc/otelcol-compiletools/config.yaml"]
    assert docs["ConfigMap"]["metadata"]["namespace"] == docs["DaemonSet"]["metadata"]["namespace"] \
        == docs["Namespace"]["metadata"]["name"]

    # The image's non-root user (Dockerfile: USER 10001:10001).
    dockerfile = (REPO / "deploy" / "container" / "Dockerfile").read_text()
    user = re.search(r"^USER (\d+):(\d+)$", dockerfile, re.M)
    assert user and pod["securityContext"]["runAsUser"] == int(user.group(1))
    assert pod["securityContext"]["runAsNonRoot"] is True
