#!/usr/bin/env python3
"""Checks the gateway's configs and Kubernetes manifests (make check-gateway-manifests).

- every YAML file here parses; every Kubernetes object has its kind, name
  and the gateway's namespace;
- kubernetes/configmap.yaml holds config-*.yaml verbatim (--write-configmap
  regenerates it from them);
- the objects fit together: selectors match pod labels, Services' target
  ports are container ports, the backend Service is headless, the lb
  layer's DNS resolver names it and its port, every --config is a
  ConfigMap key, and the agents' DaemonSet (deploy/kubernetes/) exports to
  the lb Service;
- with --gateway: the binary validates each role's config with the
  environment its Deployment gives it.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import yaml

HERE = Path(__file__).resolve().parent
KUBE = HERE / "kubernetes"
CONFIGMAP = KUBE / "configmap.yaml"
AGENT_DAEMONSET = HERE.parent / "kubernetes" / "daemonset.yaml"
NAMESPACE = "observability"
CONFIGS = ("config-lb.yaml", "config-backend.yaml", "config-backend-sampling.yaml")

CONFIGMAP_HEAD = """\
# The gateway's configurations, verbatim copies of deploy/gateway/config-*.yaml
# (make check-gateway-manifests fails when they differ; regenerate with
#   python3 deploy/gateway/check_manifests.py --write-configmap).
# Site settings are the Deployments' environment (lb.yaml, backend.yaml).
"""


def write_configmap():
    doc = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "otel-gateway", "namespace": NAMESPACE,
                        "labels": {"app.kubernetes.io/name": "otel-gateway"}},
           "data": {name: (HERE / name).read_text() for name in CONFIGS}}

    class Literal(yaml.SafeDumper):
        pass

    def literal(dumper, text):
        style = "|" if "\n" in text else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)

    Literal.add_representer(str, literal)
    CONFIGMAP.write_text(CONFIGMAP_HEAD + yaml.dump(doc, Dumper=Literal, sort_keys=False, width=1000, allow_unicode=True))


def load_objects():
    objects = []
    for path in sorted(KUBE.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                objects.append((path.name, doc))
    return objects


def by_kind(objects, kind):
    return {doc["metadata"]["name"]: doc for _f, doc in objects if doc.get("kind") == kind}


def check_objects(objects):
    problems = []
    for fname, doc in objects:
        for key in ("apiVersion", "kind", "metadata"):
            if key not in doc:
                problems.append(f"{fname}: an object without {key}")
        meta = doc.get("metadata", {})
        if doc.get("kind") != "Namespace" and meta.get("namespace") != NAMESPACE:
            problems.append(f"{fname}: {doc.get('kind')} {meta.get('name')} not in namespace {NAMESPACE}")
    return problems


def check_configmap(objects):
    maps = by_kind(objects, "ConfigMap")
    if "otel-gateway" not in maps:
        return ["no ConfigMap otel-gateway"]
    data = maps["otel-gateway"].get("data", {})
    problems = [f"ConfigMap otel-gateway: {name} differs from deploy/gateway/{name}"
                for name in CONFIGS if data.get(name) != (HERE / name).read_text()]
    problems += [f"ConfigMap otel-gateway: unknown key {k}" for k in data if k not in CONFIGS]
    for name in CONFIGS:
        yaml.safe_load(data.get(name, ""))  # raises on a config that does not parse
    return problems


def pod_spec(deployment):
    return deployment["spec"]["template"]["spec"]


def container_env(deployment):
    (container,) = pod_spec(deployment)["containers"]
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def check_wiring(objects):
    problems = []
    deployments = by_kind(objects, "Deployment")
    services = by_kind(objects, "Service")
    configmap_keys = set(by_kind(objects, "ConfigMap").get("otel-gateway", {}).get("data", {}))
    for name, dep in deployments.items():
        labels = dep["spec"]["template"]["metadata"]["labels"]
        if dep["spec"]["selector"]["matchLabels"].items() - labels.items():
            problems.append(f"Deployment {name}: selector does not match its pod labels")
        (container,) = pod_spec(dep)["containers"]
        args = container.get("args", [])
        config = args[args.index("--config") + 1] if "--config" in args else None
        if config is None or Path(config).name not in configmap_keys:
            problems.append(f"Deployment {name}: --config {config} is no key of the ConfigMap")
    for name, svc in services.items():
        selector = svc["spec"]["selector"]
        targets = [d for d in deployments.values()
                   if not selector.items() - d["spec"]["template"]["metadata"]["labels"].items()]
        if len(targets) != 1:
            problems.append(f"Service {name}: selects {len(targets)} Deployments")
            continue
        (container,) = pod_spec(targets[0])["containers"]
        port_names = {p["name"] for p in container.get("ports", [])}
        for port in svc["spec"]["ports"]:
            if port["targetPort"] not in port_names:
                problems.append(f"Service {name}: targetPort {port['targetPort']} is no container port")
    backend_svc = services.get("otel-gateway-backend", {})
    if backend_svc.get("spec", {}).get("clusterIP") != "None":
        problems.append("Service otel-gateway-backend must be headless (clusterIP: None)")
    lb = deployments.get("otel-gateway")
    if lb is None:
        return problems + ["no Deployment otel-gateway (lb)"]
    resolver = yaml.safe_load(container_env(lb).get("GATEWAY_BACKENDS", "{}")) or {}
    dns = resolver.get("dns", {})
    want_host = f"otel-gateway-backend.{NAMESPACE}.svc.cluster.local"
    if dns.get("hostname") != want_host:
        problems.append(f"lb resolver: hostname {dns.get('hostname')}, want {want_host}")
    backend_ports = {str(p["port"]) for p in backend_svc.get("spec", {}).get("ports", [])}
    if str(dns.get("port")) not in backend_ports:
        problems.append(f"lb resolver: port {dns.get('port')} is not a port of otel-gateway-backend")
    problems += check_agent_endpoint(services)
    return problems


def check_agent_endpoint(services):
    """The agents' DaemonSet must send to the lb Service, over a port it has."""
    daemonset = yaml.safe_load(AGENT_DAEMONSET.read_text())
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    url = urlsplit(env.get("OTELCOL_COMPILETOOLS_OTLP_ENDPOINT", ""))
    host_parts = (url.hostname or "").split(".")
    name, namespace = host_parts[0], host_parts[1] if len(host_parts) > 1 else None
    svc = services.get(name)
    if svc is None or namespace != NAMESPACE:
        return [f"agents export to {url.geturl()}, which is not a Service here"]
    if url.port not in {p["port"] for p in svc["spec"]["ports"]}:
        return [f"agents export to port {url.port}, not a port of Service {name}"]
    return []


def validate_with_binary(gateway, objects):
    """`otelcol-gateway validate` on each role with its Deployment's env."""
    problems = []
    deployments = by_kind(objects, "Deployment")
    roles = {"otel-gateway": [["config-lb.yaml"]],
             "otel-gateway-backend": [["config-backend.yaml"],
                                      ["config-backend.yaml", "config-backend-sampling.yaml"]]}
    for name, config_sets in roles.items():
        env = {**os.environ, **container_env(deployments[name])}
        for configs in config_sets:
            argv = [gateway, "validate"]
            for c in configs:
                argv += ["--config", str(HERE / c)]
            run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
            if run.returncode != 0:
                problems.append(f"{' + '.join(configs)} with {name}'s env: {run.stderr.strip()}")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gateway", help="the otelcol-gateway binary: validate each role too")
    p.add_argument("--write-configmap", action="store_true", help="regenerate kubernetes/configmap.yaml")
    args = p.parse_args()
    if args.write_configmap:
        write_configmap()
    for name in CONFIGS + ("ocb-manifest.yaml",):
        yaml.safe_load((HERE / name).read_text())
    objects = load_objects()
    problems = check_objects(objects) + check_configmap(objects) + check_wiring(objects)
    if args.gateway:
        problems += validate_with_binary(args.gateway, objects)
    for line in problems:
        print("check-gateway-manifests:", line)
    checked = len(objects)
    print(f"check-gateway-manifests: {checked} objects, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
