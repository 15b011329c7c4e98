"""Build metrics through the real collector: corpus builds -> otelcol-compiletools
-> an OTLP/HTTP sink and the collector's `prometheus` exporter.

What must hold (README "Build metrics"):
* the histograms arrive with exemplars whose trace and span ids are rule
  spans of the builds' traces, with those spans' durations (that each is
  the slowest of its bucket is checked on the corpus in
  rust/tests/build_metrics.rs);
* the series the host's builds share leave the receiver cumulative, and the
  Prometheus exporter shows the totals over every build (its count of
  `ct_rule_duration_seconds` is every rule span of every build), with the
  exemplars in its OpenMetrics exposition.
"""

import json
import re
import time
import urllib.request
from collections import Counter

from harness import collector as collector_mod
from harness import diagdir
from harness import otlp
from harness import reference
from harness.collector import HOST_NAME

# Two builds of the same project and variant, so they share series: a cold
# build (compiles) and one served by ccache.
CASES = ["01-geom-shake-cold", "03-geom-shake-ccache-hit"]
RULE_BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]


def _config(include, sink_endpoint, health_port, prom_port):
    """The harness config plus a prometheus exporter on the metrics pipeline."""
    return json.dumps({
        "receivers": {"compiletools": {
            "include": [str(include)],
            "poll_interval": f"{int(collector_mod.POLL_INTERVAL_S * 1000)}ms",
            "host_name": HOST_NAME,
            "pipeline_name": "geom",
            # One build at a time: the exporter then sees the totals grow.
            "max_concurrent_builds": 1,
        }},
        "exporters": {
            "otlp_http": {"endpoint": sink_endpoint, "timeout": "5s"},
            "prometheus": {"endpoint": f"127.0.0.1:{prom_port}", "enable_open_metrics": True,
                           "metric_expiration": "24h"},
        },
        "extensions": {"health_check": {"endpoint": f"127.0.0.1:{health_port}"}},
        "service": {
            "extensions": ["health_check"],
            "telemetry": {"metrics": {"level": "none"}},
            "pipelines": {
                "traces": {"receivers": ["compiletools"], "exporters": ["otlp_http"]},
                "metrics": {"receivers": ["compiletools"], "exporters": ["otlp_http", "prometheus"]},
            },
        },
    })


def _scrape(port):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                 headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.read().decode()


SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)'
                    r'(?: # \{(?P<ex>[^}]*)\} (?P<exv>\S+)(?: \S+)?)?$')


def _samples(text):
    """(name, labels dict, value, exemplar labels dict or None, exemplar value)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"unparsed exposition line: {line!r}"
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m["labels"] or ""))
        ex = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"', m["ex"])) if m["ex"] else None
        out.append((m["name"], labels, float(m["value"]), ex, float(m["exv"]) if m["exv"] else None))
    return out


def _rule_spans(span_records):
    """Rule spans below no other rule span, from the traces as received."""
    by_id = {r.span.span_id: r.span for r in span_records}
    def is_rule(span):
        return any(kv.key == "ct.rule_type" for kv in span.attributes)
    return [r.span for r in span_records
            if is_rule(r.span) and not (r.span.parent_span_id in by_id and is_rule(by_id[r.span.parent_span_id]))]


def _duration(span):
    return (span.end_time_unix_nano - span.start_time_unix_nano) / 1e9


def test_histograms_and_exemplars_arrive_and_prometheus_accumulates_builds(collector_binary, sink, diag, tmp_path):
    prom_port = collector_mod.free_port()
    proc = collector_mod.Collector(collector_binary, tmp_path / "collector", include=[diag],
                                   exporter_endpoint=sink.endpoint)
    proc.config_path.write_text(_config(diag, sink.endpoint, proc.health_port, prom_port))
    with proc:
        time.sleep(1.0)
        for case in CASES:
            diagdir.add_build(diag, reference.invocation_dir(case))

        def arrived():
            roots = [r for r in sink.span_records() if not r.span.parent_span_id]
            return len(roots) == len(CASES) and len(sink.requests("metrics")) == len(CASES)
        assert sink.wait_for(arrived, 60), f"builds did not arrive\n{proc.describe()}"
        exposition = _scrape(prom_port)

    spans = sink.span_records()
    rules = _rule_spans(spans)
    by_id = {r.span.span_id: r.span for r in spans}
    assert len(rules) > 50, f"only {len(rules)} rule spans"

    # OTLP at the sink: histograms with exemplars that are rule spans of the
    # builds, each the slowest of its bucket in its build.
    checked = 0
    for request in sink.requests("metrics"):
        for rm in request.message.resource_metrics:
            resource = otlp.attributes(rm.resource.attributes)
            assert resource["service.instance.id"] == HOST_NAME, resource
            assert "ct.invocation_id" not in resource, "per-build key on a shared resource"
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name != "ct.rule.duration":
                        continue
                    assert metric.histogram.aggregation_temporality == 2  # cumulative
                    for p in metric.histogram.data_points:
                        assert list(p.explicit_bounds) == RULE_BOUNDS
                        assert p.exemplars, "a ct.rule.duration point without exemplars"
                        for e in p.exemplars:
                            span = by_id.get(e.span_id)
                            assert span is not None and span.trace_id == e.trace_id, "exemplar is no span of the builds"
                            assert abs(_duration(span) - e.as_double) < 1e-9
                            checked += 1
    assert checked >= 5, f"{checked} exemplars checked"

    # Prometheus: totals over both builds.
    samples = _samples(exposition)
    def total(name, **match):
        return sum(v for n, labels, v, _, _ in samples
                   if n == name and all(labels.get(k) == w for k, w in match.items()))
    assert total("cicd_pipeline_run_duration_seconds_count", cicd_pipeline_name="geom") == len(CASES), exposition
    assert total("ct_rule_duration_seconds_count") == len(rules)
    assert abs(total("ct_rule_duration_seconds_sum") - sum(_duration(s) for s in rules)) < 1e-6
    compiles = Counter()
    for s in rules:
        attrs = otlp.attributes(s.attributes)
        if attrs.get("ct.rule_type") == "compile":
            layer = attrs.get("ct.rule.cache_layer")
            compiles[layer if layer in ("cas", "ccache", "compiled") else "other"] += 1
    for layer in ("cas", "ccache", "compiled", "other"):
        assert total("ct_compiles_total", ct_rule_cache_layer=layer) == compiles[layer], (layer, exposition)
    assert "cicd_pipeline_run_errors_total" not in exposition, "errors counted for successful builds"
    # Exemplars in the exposition point at spans the sink received.
    exemplars = [(ex, v) for n, _, _, ex, v in samples if n == "ct_rule_duration_seconds_bucket" and ex]
    assert exemplars, "no exemplar in the OpenMetrics exposition"
    trace_ids = {s.trace_id.hex() for s in by_id.values()}
    span_ids = {s.span_id.hex() for s in by_id.values()}
    for ex, _ in exemplars:
        assert ex.get("trace_id") in trace_ids and ex.get("span_id") in span_ids, ex
