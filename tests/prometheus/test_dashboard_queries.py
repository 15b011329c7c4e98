"""Every query of the Grafana dashboard (deploy/grafana/compiletools-builds.json)
returns data from a real Prometheus that scraped the real collector after
corpus builds; the queries of metrics nobody emits yet (dashboard.PENDING_METRICS)
return nothing, and say so on their panels."""

import math

import pytest

from . import collector_config
from . import dashboard

DASHBOARD = dashboard.load()
QUERIES = dashboard.queries(DASHBOARD)
READY = [q for q in QUERIES if not q.pending()]
PENDING = [q for q in QUERIES if q.pending()]
STEP_S = 1


def _id(q):
    return f"{q.panel}:{q.ref}"


def _finite_points(result):
    """(labels, value) of every finite sample of a matrix result."""
    return [(s["metric"], float(v)) for s in result["result"] for _, v in s["values"]
            if math.isfinite(float(v))]


def _range(scenario, q):
    return scenario.prometheus.query_range(q.promql(DASHBOARD, scenario.window()),
                                           scenario.start, scenario.end, STEP_S)


def test_the_dashboard_has_queries_to_check():
    assert READY, "no panel query to check"
    ids = [p["id"] for p in dashboard.panels(DASHBOARD)]
    assert len(ids) == len(set(ids)), f"panel ids repeat: {ids}"


def test_pending_panels_say_so():
    """A panel that shows a pending metric says PENDING in its description,
    and only such a panel does: the dashboard itself tells what is missing."""
    for panel in dashboard.panels(DASHBOARD):
        if panel["type"] == "row":
            continue
        pending = [m for q in QUERIES if q.panel_id == panel["id"] for m in q.pending()]
        says = "PENDING" in panel.get("description", "")
        assert says == bool(pending), (
            f"panel {panel['title']!r}: pending metrics {pending}, "
            f"description {'says' if says else 'does not say'} PENDING")


@pytest.mark.parametrize("q", READY, ids=_id)
def test_panel_query_returns_data(scenario, q):
    result = _range(scenario, q)
    points = _finite_points(result)
    assert points, (f"panel {q.panel!r} ({q.row}) query {q.ref} returned no finite sample "
                    f"over the scenario:\n  {q.promql(DASHBOARD, scenario.window())}\n"
                    f"  result: {result['result'][:5]}")
    if "increase(" in q.expr or "rate(" in q.expr:
        # A counter that never grew between two scrapes gives 0 here: the
        # panel would show the builds as nothing happening.
        assert any(v > 0 for _, v in points), (
            f"panel {q.panel!r} query {q.ref}: the counters never grew between scrapes "
            f"(every sample is 0):\n  {q.promql(DASHBOARD, scenario.window())}")


@pytest.mark.parametrize("q", [q for q in READY if q.exemplar], ids=_id)
def test_panel_exemplars_point_into_the_builds_traces(scenario, q):
    """Grafana draws these exemplars and links them into the traces data
    source by their trace_id: each must be a span the collector sent."""
    # An exemplar keeps its span's time: the corpus builds ran hours or
    # days before the test, so the range reaches back to them.
    groups = scenario.prometheus.query_exemplars(q.promql(DASHBOARD, scenario.window()),
                                                 scenario.exemplars_from(), scenario.end)
    exemplars = [e for g in groups for e in g["exemplars"]]
    assert exemplars, f"panel {q.panel!r} query {q.ref}: no exemplars"
    spans = scenario.span_ids()
    for e in exemplars:
        key = (e["labels"].get("trace_id"), e["labels"].get("span_id"))
        assert key in spans, f"exemplar {e} is not a span the collector sent"
    # The totals keep growing over builds; the exemplars must follow the
    # builds too, not stay with the first ones.
    latest = scenario.wave_traces[-1]
    assert latest and {e["labels"]["trace_id"] for e in exemplars} & latest, (
        f"panel {q.panel!r}: no exemplar from the last wave of builds")


@pytest.mark.parametrize("name,metric,label", dashboard.variable_queries(DASHBOARD),
                         ids=lambda v: str(v))
def test_variable_has_values(scenario, name, metric, label):
    if metric in dashboard.PENDING_METRICS or any(
            metric.startswith(p) for p in dashboard.PENDING_METRICS):
        pytest.fail(f"variable {name} reads a pending metric {metric}")
    values = scenario.prometheus.label_values(label, metric, scenario.start, scenario.end)
    assert values, f"variable {name}: label_values({metric}, {label}) is empty"
    if label == "cicd_pipeline_name":
        assert values == [collector_config.PIPELINE_NAME], values


@pytest.mark.parametrize("q", PENDING, ids=_id)
def test_pending_panel_query_has_no_data_yet(scenario, q):
    """Nothing emits these metrics yet. When something does, this fails:
    take the metric off dashboard.PENDING_METRICS and PENDING off the panel."""
    for metric in q.pending():
        series = scenario.prometheus.series(f'{{__name__=~"{metric}(_bucket|_sum|_count)?"}}',
                                            scenario.start, scenario.end)
        assert not series, (f"{metric} is emitted now ({len(series)} series, e.g. {series[0]}): "
                            f"remove it from PENDING_METRICS ({dashboard.PENDING_METRICS[metric]}) "
                            f"and PENDING from panel {q.panel!r}")
    assert not _range(scenario, q)["result"], f"panel {q.panel!r}: data without its metrics?"
