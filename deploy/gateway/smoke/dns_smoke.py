#!/usr/bin/env python3
"""The lb layer's `dns` resolver on loopback (issue 26), as the Kubernetes
manifest configures it (kubernetes/lb.yaml: the headless Service's name,
its interval and timeout), with the ring changing under it:

    agent -> lb gateway (dns resolver) -> backends on 127.0.0.2, .3, .4
          (one port, like a headless Service's pods) -> the smoke's sink

The gateway is a static Go binary, so its resolver is Go's own: it reads
/etc/hosts before asking a DNS server, and re-reads the file when it
changes. The lb runs in a private mount namespace (`unshare --mount`, as
root) in which a file of this smoke is bind-mounted over /etc/hosts; the
smoke rewrites that file in place to add and remove "pods". So the
exporter's resolver code runs for real — periodic lookups, ring rebuilds,
exporters made and shut down per backend — but no DNS protocol is spoken
(no A-record TTLs, no NXDOMAIN, no resolver timeout): a stand-in DNS
server would need resolv.conf replaced the same way and is not done here.

Phases (each: new builds laid out for the agent, every trace whole on
exactly one backend, spans counted):
  3 backends  builds spread over more than one backend
  scale down  .4 leaves the hosts file; once each lb exporter's ring has 2
              backends (its own metric), backend 3 stops; nothing reaches it
  scale up    backend 3 starts again, .4 returns; once each ring has 3, new
              builds reach backend 3 too

Root only (mount namespaces); every wait bounded by --timeout.
"""

import argparse
import os
import re
import socket
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import smoke  # noqa: E402
import wholeness  # noqa: E402
from otlp_json_sink import Sink  # noqa: E402

ADDRESSES = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
# Bind the hosts file over /etc/hosts in a new mount namespace, then become
# the gateway (exec: the smoke's pid is the gateway's).
UNSHARE = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
           'mount --bind "$0" /etc/hosts && exec "$@"']


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gateway", required=True)
    p.add_argument("--agent", required=True)
    p.add_argument("--dump", required=True)
    p.add_argument("--case", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--builds", type=int, default=24, help="builds per phase")
    p.add_argument("--interval", help="the resolver's interval (default: kubernetes/lb.yaml's)")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--report")
    return p.parse_args()


def manifest_resolver():
    """The dns resolver of kubernetes/lb.yaml's GATEWAY_BACKENDS (flow YAML
    of plain keys: parsed without a YAML library)."""
    text = (smoke.GATEWAY_DIR / "kubernetes" / "lb.yaml").read_text()
    m = re.search(r"name: GATEWAY_BACKENDS\s+value: '\{dns: \{(.*)\}\}'", text)
    if not m:
        raise SystemExit("kubernetes/lb.yaml: no dns resolver in GATEWAY_BACKENDS")
    return {k.strip(): v.strip().strip('"') for k, v in (kv.split(":", 1) for kv in m.group(1).split(","))}


def port_free_on_all(addresses):
    """A port no process listens on at any of `addresses`."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind((addresses[0], 0))
            port = s.getsockname()[1]
        try:
            for a in addresses[1:]:
                with socket.socket() as s:
                    s.bind((a, port))
            return port
        except OSError:
            continue
    raise RuntimeError("no port free on every backend address")


def write_hosts(path, hostname, addresses):
    # In place (same inode): the bind mount shows the file, not the name.
    with open(path, "r+" if path.exists() else "w") as f:
        f.seek(0)
        f.truncate()
        f.write("127.0.0.1 localhost\n" + "".join(f"{a} {hostname}\n" for a in addresses))


def lb_metric(metrics_port, name):
    """The values of the lb's own metric `name` from the dns resolvers."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2) as resp:
        text = resp.read().decode()
    return [int(float(v)) for v in re.findall(rf'^{name}\{{[^}}]*resolver="dns"[^}}]*\}} (\S+)$', text, re.M)]


def ring_updates(metrics_port):
    """Ring changes so far, summed over the lb's three exporters (traces,
    logs, metrics: the resolver is their only attribute, so they share one
    series; the gauge of ring sizes would show only the last to record)."""
    return sum(lb_metric(metrics_port, "otelcol_loadbalancer_num_backend_updates"))


def wait_for_ring(metrics_port, size, updates_before, timeout, alive):
    """Seconds until each of the three exporters rebuilt its ring since
    `updates_before`, to `size` backends."""
    t0 = time.monotonic()
    if not smoke.wait_until(lambda: ring_updates(metrics_port) >= updates_before + 3
                            and lb_metric(metrics_port, "otelcol_loadbalancer_num_backends") == [size],
                            timeout, alive):
        raise RuntimeError(f"ring updates {ring_updates(metrics_port)} (before: {updates_before}), sizes "
                           f"{lb_metric(metrics_port, 'otelcol_loadbalancer_num_backends')}, want {size}")
    return round(time.monotonic() - t0, 1)


class Phase:
    """One batch of builds and what the sink got for them."""

    def __init__(self, args, diag, sink, first):
        self.builds = smoke.lay_out_builds(args.case, diag, args.builds, first=first)
        self.expected = smoke.expected_spans(args.dump, self.builds)
        self.sink = sink

    def arrived(self):
        return {gw: {t: s for t, s in traces.items() if t in self.expected}
                for gw, traces in self.sink.tally.traces_by_gateway().items()}

    def judge(self, timeout, alive):
        t0 = time.monotonic()
        done = smoke.wait_until(lambda: wholeness.complete(self.expected, self.arrived()), timeout, alive)
        arrived = self.arrived()
        problems = wholeness.trace_problems(self.expected, arrived)
        if not done:
            problems.insert(0, f"not every span arrived within {timeout:.0f} s")
        return {"builds": len(self.builds), "seconds": round(time.monotonic() - t0, 1),
                "traces_per_backend": {gw: len(t) for gw, t in sorted(arrived.items()) if t},
                "problems": problems}


def main():
    args = parse_args()
    if os.geteuid() != 0:
        # As tests/deploy: required in CI (root there), skipped elsewhere.
        print("gateway dns smoke: needs root (a mount namespace for /etc/hosts)", file=sys.stderr)
        return 1 if os.environ.get("CI") else 0
    work, diag = smoke.fresh_workdir(args.workdir)
    resolver = manifest_resolver()
    port = port_free_on_all(ADDRESSES)
    resolver = {**resolver, "port": str(port), **({"interval": args.interval} if args.interval else {})}
    hosts = work / "hosts"
    write_hosts(hosts, resolver["hostname"], ADDRESSES)
    report = {"resolver": resolver, "phases": {}}

    sink = Sink(0).start()
    started = []
    try:
        backends = []
        for i, address in enumerate(ADDRESSES):
            proc, _ = smoke.backend_gateway(args.gateway, work, f"b{i + 1}", sink, f"{address}:{port}")
            backends.append(proc)
            started.append(proc.start())
        lb, lb_http, lb_metrics = smoke.lb_gateway(args.gateway, work, None, smoke.GATEWAY_DIR / "config-lb.yaml",
                                                   resolver={"dns": resolver}, wrapper=[*UNSHARE, hosts])
        started.append(lb.start())
        report["ring_seconds_at_start"] = wait_for_ring(lb_metrics, 3, 0, args.timeout, started)
        ag = smoke.agent(args.agent, work, diag, lb_http, 8)
        started.append(ag.start())
        phases = report["phases"]

        phases["3 backends"] = Phase(args, diag, sink, 0).judge(args.timeout, started)
        if len(phases["3 backends"]["traces_per_backend"]) < 2:
            phases["3 backends"]["problems"].append("every build on one backend: no load balancing seen")

        updates = ring_updates(lb_metrics)
        write_hosts(hosts, resolver["hostname"], ADDRESSES[:2])
        report["ring_seconds_scale_down"] = wait_for_ring(lb_metrics, 2, updates, args.timeout, started)
        backends[2].stop()
        started.remove(backends[2])
        down = Phase(args, diag, sink, args.builds).judge(args.timeout, started)
        if "b3" in down["traces_per_backend"]:
            down["problems"].append("a build reached the removed backend")
        phases["scale down"] = down

        started.append(backends[2].start())
        updates = ring_updates(lb_metrics)
        write_hosts(hosts, resolver["hostname"], ADDRESSES)
        report["ring_seconds_scale_up"] = wait_for_ring(lb_metrics, 3, updates, args.timeout, started)
        up = Phase(args, diag, sink, 2 * args.builds).judge(args.timeout, started)
        if "b3" not in up["traces_per_backend"]:
            up["problems"].append("no build reached the returned backend")
        phases["scale up"] = up
        report["duplicate_spans"] = wholeness.duplicate_spans(sink.tally.traces_by_gateway())
    finally:
        for p in reversed(started):
            p.stop()
        sink.stop()

    smoke.write_report(report, args.report)
    problems = [p for phase in report["phases"].values() for p in phase["problems"]]
    if len(report["phases"]) < 3:
        problems.append("not every phase ran")
    print("gateway dns smoke:", "passed" if not problems else f"FAILED ({len(problems)} problems)")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
