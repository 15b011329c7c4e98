"""The dashboard's "Comparing hosts" panels on the fleet's 8 hosts: each
panel's query as the dashboard JSON has it (tests/prometheus/dashboard.py
substitutes the variables at "All"), evaluated once against the run's
Prometheus and compared with what the played builds imply.

The one change to a query: its `increase(X[w])` becomes
`last_over_time(X[w])`. Every agent lifetime is a target of its own
(agents.py) whose counters start at its first build, and Prometheus cannot
count the build that creates a series (deploy/grafana/README.md), so
increase() over the run would miss a lifetime's first build of each label
set and extrapolate the rest. A lifetime's last total is what increase()
from zero would give; the panel's selectors, grouping, ratio and sort
order are the dashboard's own.

Not checked here, because the fleet has no data for them: "Rebuild reasons
by host" (the packaged agent config leaves `history` off, so no agent
emits ct.rebuilds: the check is that the panel is empty, and it fails once
history is on, to be replaced by real values) and the two CAS waste panels
(the packaged config scans no CAS store).
"""

import math
import re
from collections import defaultdict

import pytest

from prometheus import dashboard

CACHE_MISSES = "Cache misses by host and variant"
SLOWEST = "Slowest hosts per pipeline and variant"
REBUILD_REASONS = "Rebuild reasons by host"
HIT_LAYERS = ("cas", "ccache")


def _panel_query(dash, title):
    found = [q for q in dashboard.queries(dash) if q.panel == title]
    if len(found) != 1:
        raise AssertionError(f"dashboard panel {title!r}: {len(found)} queries, want 1")
    return found[0]


def as_totals(promql):
    """`promql` with each increase() over a range made the range's last
    total (see the module doc)."""
    out, n = re.subn(r"\bincrease\(", "last_over_time(", promql)
    if not n:
        raise AssertionError(f"no increase() to replace in {promql!r}")
    return out


def _evaluate(prometheus, dash, title, window_s):
    q = _panel_query(dash, title)
    expr = q.promql(dash, f"{window_s}s")
    if "increase(" in expr:
        expr = as_totals(expr)
    return expr, [(r["metric"], float(r["value"][1])) for r in prometheus.query(expr)["result"]]


def _by(points, *labels):
    return {tuple(m.get(k, "") for k in labels): v for m, v in points if not math.isnan(v)}


def expected_cache_misses(played, expected):
    """{(host, variant): compiles not served by cas or ccache / compiles}."""
    misses, compiles = defaultdict(int), defaultdict(int)
    for b in played:
        exp = expected[b.trace_id]
        key = (b.host, exp.variant)
        compiles[key] += sum(exp.compiles.values())
        misses[key] += sum(n for layer, n in exp.compiles.items() if layer not in HIT_LAYERS)
    return {k: misses[k] / n for k, n in compiles.items() if n}


def expected_slowest(played, expected):
    """{(pipeline, variant, host): mean duration (s) of the builds that did
    not fail}."""
    total, count = defaultdict(float), defaultdict(int)
    for b in played:
        exp = expected[b.trace_id]
        if exp.failed:
            continue
        key = (exp.pipeline, exp.variant, b.host)
        total[key] += exp.duration_s
        count[key] += 1
    return {k: total[k] / n for k, n in count.items()}


def _ranked(points, labels):
    """Problems with the panel's order: sort_desc puts the largest first."""
    values = [v for _, v in points if not math.isnan(v)]
    if values != sorted(values, reverse=True):
        return [f"not largest first: {[(tuple(m.get(k, '') for k in labels), v) for m, v in points]}"]
    return []


def _compare(title, got, want, rel):
    problems = []
    for key in sorted(set(got) | set(want)):
        g, w = got.get(key), want.get(key)
        if g is None or w is None or g != pytest.approx(w, rel=rel):
            problems.append(f"{title}: {key} = {g}, the played builds give {w}")
    return problems


def check(prometheus, played, expected, window_s, dash=None):
    """Returns (problems, summary) of the checked panels; the summary
    gives each panel's values in the panel's order."""
    dash = dash or dashboard.load()
    problems, summary = [], {}

    labels = ("host_name", "ct_variant")
    expr, points = _evaluate(prometheus, dash, CACHE_MISSES, window_s)
    got = _by(points, *labels)
    problems += _compare(CACHE_MISSES, got, expected_cache_misses(played, expected), rel=1e-12)
    problems += [f"{CACHE_MISSES}: {p}" for p in _ranked(points, labels)]
    summary[CACHE_MISSES] = {"query": expr, "values": [(list(k), round(v, 6)) for k, v in got.items()]}

    labels = ("cicd_pipeline_name", "ct_variant", "host_name")
    expr, points = _evaluate(prometheus, dash, SLOWEST, window_s)
    got = _by(points, *labels)
    # The root span's duration from the dump is in whole microseconds.
    problems += _compare(SLOWEST, got, expected_slowest(played, expected), rel=1e-6)
    problems += [f"{SLOWEST}: {p}" for p in _ranked(points, labels)]
    summary[SLOWEST] = {"query": expr, "values": [(list(k), round(v, 6)) for k, v in got.items()]}

    expr, points = _evaluate(prometheus, dash, REBUILD_REASONS, window_s)
    if points:
        problems.append(f"{REBUILD_REASONS}: the agents now emit ct.rebuilds ({len(points)} series): "
                        f"assert its values against the played builds (host_panels.py)")
    summary[REBUILD_REASONS] = {"query": expr, "values": "empty: history is off in the packaged config"}
    return problems, summary
