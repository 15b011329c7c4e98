"""Per-host build totals, as Prometheus has them and as the played builds
say they must be.

Prometheus (Debian's, as `make test-prometheus` runs it) scrapes every
agent's prometheus exporter each second; each agent process lifetime is a
target of its own (agents.py), so `last_over_time` of a cumulative series
is that lifetime's final total and the sum over lifetimes is the host's:

    sum by (host_name) (last_over_time(cicd_pipeline_run_duration_seconds_count[W]))

`host_name` is the metrics resource's `host.name`, the receiver's
`host_name`, which the agents' exporter turns into a label
(`resource_to_telemetry_conversion`, as deploy/grafana/README.md says).
"""

import datetime
import json
import time
from collections import Counter, defaultdict

from prometheus import prometheus_server

from .expected import CACHE_LAYERS

JOB = "fleet-agents"
HOST_LABEL = "host_name"
QUERIES = {
    "builds": "cicd_pipeline_run_duration_seconds_count",
    "errors": "cicd_pipeline_run_errors_total",
    "compiles": "ct_compiles_total",
}


def render_config(agents):
    """Every lifetime's exporter of every agent, labelled with its host
    and lifetime (for the reader only: the sums group by the data's own
    host label)."""
    groups = [{"targets": [address], "labels": {"fleet_host": a.host_name, "fleet_lifetime": str(n)}}
              for a in agents for address, n in a.targets()]
    interval = prometheus_server.SCRAPE_INTERVAL_S
    return (f"global:\n  scrape_interval: {interval}s\n  scrape_timeout: {interval}s\n"
            f"  evaluation_interval: {interval}s\n"
            f"scrape_configs:\n  - job_name: {JOB}\n    static_configs: {json.dumps(groups)}\n")


class FleetPrometheus(prometheus_server.Prometheus):
    def __init__(self, binary, workdir, port, agents):
        super().__init__(binary, workdir, port, target="unused:0")
        self.config_path.write_text(render_config(agents))

    def target(self, address):
        for t in self.targets():
            if t["scrapeUrl"].startswith(f"http://{address}/"):
                return t
        return None

    def value(self, metric, address, window_s=3600):
        """A lifetime's latest total of `metric` (all series summed)."""
        data = self.query(f'sum(last_over_time({metric}{{instance="{address}"}}[{window_s}s]))')
        return float(data["result"][0]["value"][1]) if data["result"] else 0.0

    def wait_value(self, metric, address, want, timeout):
        """Until Prometheus' latest total of a lifetime is `want`."""
        deadline = time.monotonic() + timeout
        got = None
        while time.monotonic() < deadline:
            got = self.value(metric, address)
            if got == want:
                return got
            time.sleep(0.25)
        raise AssertionError(f"Prometheus has {metric} = {got} for {address} after {timeout} s, want {want}")

    def wait_scraped_all(self, after, scrapes=2, timeout=30):
        """Until every target that is up was scraped `scrapes` times after
        `after` (Unix s)."""
        need = after + scrapes * prometheus_server.SCRAPE_INTERVAL_S
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stale = [t for t in self.targets() if t["health"] == "up"
                     and _unix(t["lastScrape"]) < need]
            if not stale:
                return
            time.sleep(0.5)
        raise AssertionError(f"targets not scraped after {after}: {stale}")

    def host_totals(self, window_s):
        """{host: {"builds": n, "errors": n, "compiles": Counter(layer)}}."""
        out = defaultdict(lambda: {"builds": 0, "errors": 0, "compiles": Counter()})
        for key, metric in QUERIES.items():
            by = f"{HOST_LABEL}, ct_rule_cache_layer" if key == "compiles" else HOST_LABEL
            data = self.query(f"sum by ({by}) (last_over_time({metric}[{window_s}s]))")
            for r in data["result"]:
                host = r["metric"].get(HOST_LABEL, "")
                n = round(float(r["value"][1]))
                if key == "compiles":
                    out[host]["compiles"][r["metric"].get("ct_rule_cache_layer", "")] += n
                else:
                    out[host][key] += n
        return dict(out)


def _unix(rfc3339):
    return datetime.datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def expected_totals(played, expected):
    """The same shape from the played builds and their dumps."""
    out = defaultdict(lambda: {"builds": 0, "errors": 0, "compiles": Counter()})
    for b in played:
        exp = expected[b.trace_id]
        host = out[b.host]
        host["builds"] += 1
        host["errors"] += int(exp.failed)
        host["compiles"].update(exp.compiles)
    for host in out.values():
        host["compiles"] = Counter({k: v for k, v in host["compiles"].items() if k in CACHE_LAYERS})
    return dict(out)


def differences(got, want):
    """[(host, what, got, want)] where the two disagree."""
    diffs = []
    for host in sorted(set(got) | set(want)):
        g = got.get(host, {"builds": 0, "errors": 0, "compiles": Counter()})
        w = want.get(host, {"builds": 0, "errors": 0, "compiles": Counter()})
        for key in ("builds", "errors"):
            if g[key] != w[key]:
                diffs.append((host, key, g[key], w[key]))
        for layer in sorted(set(g["compiles"]) | set(w["compiles"])):
            if g["compiles"].get(layer, 0) != w["compiles"].get(layer, 0):
                diffs.append((host, f"compiles[{layer}]", g["compiles"].get(layer, 0), w["compiles"].get(layer, 0)))
    return diffs
