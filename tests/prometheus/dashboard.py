"""The Grafana dashboard (deploy/grafana/) as the queries Grafana would send.

Everything the test asserts is read from the dashboard JSON, so the test
cannot drift from it: each Prometheus panel's targets, with the dashboard's
variables replaced the way Grafana replaces them when every value is
selected ("All").
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "compiletools-builds.json"

# Metrics a panel queries that nothing emits yet, with who brings them. For
# each, the test asserts that Prometheus has no series of it (and that the
# panels using it return nothing and say PENDING in their description): when the
# metric arrives, the test fails until it is taken off this list.
PENDING_METRICS = {
    "ct_build_critical_path_seconds":
        "issue 15: no metric of the critical path yet (the root span has ct.build.critical_path_s); name guessed",
    "ct_cache_time_saved_seconds": "issue 15: ct.cache.time_saved, s, non-monotonic sum",
    "ct_build_running": "issue 16: ct.build.running, gauge",
    "ct_live_compiles_total": "issue 16: ct.live.compiles, counter by ct.ccache.outcome",
}


@dataclass
class Query:
    panel_id: int
    panel: str        # panel title
    row: str          # title of the row above the panel
    ref: str          # refId
    expr: str         # as written in the dashboard
    exemplar: bool

    def promql(self, dashboard, window):
        return substitute(self.expr, dashboard, window)

    def pending(self):
        """The pending metrics this query names (see PENDING_METRICS)."""
        return sorted(m for m in PENDING_METRICS
                      if re.search(rf"\b{re.escape(m)}(_bucket|_sum|_count)?\b", self.expr))


def load(path=DASHBOARD):
    return json.loads(Path(path).read_text())


def _panels_in_order(dashboard):
    """(row title, panel) for every panel, rows' nested panels included."""
    row = ""
    for panel in dashboard["panels"]:
        if panel.get("type") == "row":
            row = panel["title"]
            for inner in panel.get("panels", []):
                yield row, inner
        else:
            yield row, panel


def panels(dashboard):
    return [p for _, p in _panels_in_order(dashboard)]


def queries(dashboard):
    """Every target of every panel whose data source is the Prometheus one."""
    out = []
    for row, panel in _panels_in_order(dashboard):
        for target in panel.get("targets", []):
            ds = target.get("datasource") or panel.get("datasource") or {}
            if ds.get("type") != "prometheus":
                raise AssertionError(f"panel {panel['title']!r}: target {target.get('refId')} "
                                     f"has data source {ds}; the test checks Prometheus queries only")
            out.append(Query(panel["id"], panel["title"], row, target["refId"], target["expr"],
                             bool(target.get("exemplar"))))
    return out


def variables(dashboard):
    return {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}


def variable_queries(dashboard):
    """(name, metric, label) of each label_values(metric, label) variable."""
    out = []
    for name, var in variables(dashboard).items():
        if var["type"] != "query":
            continue
        m = re.fullmatch(r"\s*label_values\(\s*([A-Za-z_:][\w:]*)\s*,\s*(\w+)\s*\)\s*",
                         var["query"]["query"] if isinstance(var["query"], dict) else var["query"])
        if not m:
            raise AssertionError(f"variable {name}: only label_values(metric, label) is understood")
        out.append((name, m.group(1), m.group(2)))
    return out


# Grafana's own variables for a time range; the test's range replaces them.
_RANGE_VARIABLES = ("__rate_interval", "__interval", "__range")


def substitute(expr, dashboard, window):
    """`expr` as Grafana sends it with every query variable at "All" (its
    `allValue`) and the time variables (and the dashboard's `window`) set to
    `window` (e.g. "90s")."""
    dash_vars = variables(dashboard)

    def value(name):
        if name in _RANGE_VARIABLES or name == "window":
            return window
        var = dash_vars.get(name)
        if var is None or var["type"] != "query" or not var.get("includeAll"):
            raise AssertionError(f"{expr!r}: ${name} is not a query variable with an All value")
        return var["allValue"]
    out = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: value(m.group(1) or m.group(2)), expr)
    assert "$" not in out, f"unreplaced variable in {out!r}"
    return out
