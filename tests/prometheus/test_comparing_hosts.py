"""The "Comparing hosts" and "Clang (-ftime-trace)" panels give the exact
answer the builds the test fed imply, not just some data.

Each query is the panel's (from the dashboard JSON), evaluated at the last
scrape with `$window` reaching back exactly to the first scrape after the
first wave had arrived. Both ends are then samples of every series (one
target: every sample of a scrape has its timestamp; Debian's Prometheus 2.x
range selectors include their start), so increase() does not extrapolate
and is exactly what the later waves added. The expected values come from
the later waves' builds as the collector sent them (root spans, compile
spans, clang header records), from the CAS stores the test wrote (waste by
formats.md §6.2) and from ClangBuildAnalyzer's output for the same traces.
"""

import math
from collections import Counter, defaultdict

import pytest

from harness import otlp

from . import collector_config, dashboard, hosts

DASHBOARD = dashboard.load()
REASONS = ("new", "source_changed", "headers_changed", "flags_changed", "evicted", "not_cas")
TIME_TRACE_VARIANT = "clang.cxx17.debug.time-trace"


def _query(title, ref="A"):
    found = [q for q in dashboard.queries(DASHBOARD) if q.panel == title and q.ref == ref]
    assert len(found) == 1, f"panel {title!r} query {ref}: {len(found)} found"
    return found[0]


def _exact(scenario, title, ref="A"):
    """[(labels, value)] of the panel query over the later waves exactly."""
    assert scenario.first_wave_scraped < scenario.last_scraped
    window = f"{round((scenario.last_scraped - scenario.first_wave_scraped) * 1000)}ms"
    q = _query(title, ref)
    result = scenario.prometheus.query(q.promql(DASHBOARD, window), at=scenario.last_scraped)["result"]
    assert result, f"panel {title!r} query {ref} returned nothing:\n  {q.promql(DASHBOARD, window)}"
    return [(r["metric"], float(r["value"][1])) for r in result]


def _by(points, *labels):
    return {tuple(m.get(k, "") for k in labels): v for m, v in points if not math.isnan(v)}


class Later:
    """The builds of the waves after the first, as the collector sent them."""

    def __init__(self, scenario):
        later = set().union(*scenario.wave_traces[1:])
        self.roots = []        # (resource, attributes, span)
        self.compiles = []     # (resource, attributes)
        for res, span in scenario.sink.spans():
            if span.trace_id.hex() not in later:
                continue
            attrs = otlp.attributes(span.attributes)
            if not span.parent_span_id:
                self.roots.append((res, attrs, span))
            elif attrs.get("ct.rule_type") == "compile":
                self.compiles.append((res, attrs))
        self.header_records = []
        for req in scenario.sink.requests("logs"):
            for rl in req.message.resource_logs:
                for sl in rl.scope_logs:
                    for rec in sl.log_records:
                        if rec.event_name == "ct.clang.header" and rec.trace_id.hex() in later:
                            self.header_records.append(otlp.attributes(rec.attributes))
        assert {r.get("host.name") for r, _, _ in self.roots} == {hosts.FIRST_HOST, hosts.SECOND_HOST}, (
            "both hosts' later builds must have arrived")


@pytest.fixture(scope="module")
def later(scenario):
    return Later(scenario)


def _variant(resource, attrs):
    return attrs.get("ct.variant") or resource.get("ct.variant")


def test_cache_misses_by_host_and_variant(scenario, later):
    compiles, misses = Counter(), Counter()
    for res, attrs in later.compiles:
        key = (res["host.name"], _variant(res, attrs))
        compiles[key] += 1
        misses[key] += attrs.get("ct.rule.cache_layer") not in ("cas", "ccache")
    want = {k: misses[k] / n for k, n in compiles.items()}
    points = _exact(scenario, "Cache misses by host and variant")
    got = _by(points, "host_name", "ct_variant")
    assert got == pytest.approx(want, rel=1e-12), (got, want)
    # The second host only ran cold builds of the first host's variant: it
    # misses more, and the panel puts it first (sort_desc).
    variant = hosts.CAS_VARIANT
    assert got[(hosts.SECOND_HOST, variant)] == 1.0
    assert got[(hosts.FIRST_HOST, variant)] < 1.0
    values = [v for _, v in points if not math.isnan(v)]
    assert values == sorted(values, reverse=True), f"not most missing first: {points}"


def test_slowest_hosts_per_pipeline_and_variant(scenario, later):
    total, count = Counter(), Counter()
    for res, attrs, span in later.roots:
        if attrs.get("cicd.pipeline.result") == "failure":
            continue
        pipeline = attrs.get("cicd.pipeline.name") or res.get("cicd.pipeline.name")
        key = (pipeline, _variant(res, attrs), res["host.name"])
        total[key] += (span.end_time_unix_nano - span.start_time_unix_nano) / 1e9
        count[key] += 1
    want = {k: total[k] / n for k, n in count.items()}
    assert {k[0] for k in want} == {collector_config.PIPELINE_NAME}
    points = _exact(scenario, "Slowest hosts per pipeline and variant")
    got = _by(points, "cicd_pipeline_name", "ct_variant", "host_name")
    assert got == pytest.approx(want, rel=1e-9), (got, want)
    pipeline, variant = collector_config.PIPELINE_NAME, hosts.CAS_VARIANT
    assert got[(pipeline, variant, hosts.SECOND_HOST)] != got[(pipeline, variant, hosts.FIRST_HOST)]
    values = [v for _, v in points if not math.isnan(v)]
    assert values == sorted(values, reverse=True), f"not slowest first: {points}"


def test_rebuild_reasons_by_host(scenario, later):
    want = {(h, r): 0 for h in (hosts.FIRST_HOST, hosts.SECOND_HOST) for r in REASONS}
    for res, attrs in later.compiles:
        reason = attrs.get("ct.rule.rebuild_reason")
        if reason is not None:
            want[(res["host.name"], reason)] += 1
    got = _by(_exact(scenario, "Rebuild reasons by host"), "host_name", "ct_rule_rebuild_reason")
    assert got == pytest.approx(want, abs=1e-9), (got, want)
    # What the test did (hosts.py): the clang build is a fresh clone each
    # wave, its 29 compiles (ClangBuildAnalyzer's "Compilation (29 times)")
    # new; every other compile that ran recompiled the key of the first
    # wave with no object in a CAS: evicted.
    clang_compiles = hosts.time_trace_reference()["compilations"]
    assert got[(hosts.SECOND_HOST, "new")] == clang_compiles
    assert got[(hosts.FIRST_HOST, "new")] == 0
    assert got[(hosts.FIRST_HOST, "evicted")] > 0 and got[(hosts.SECOND_HOST, "evicted")] > 0
    assert {r for (_, r), n in got.items() if n} == {"new", "evicted"}, got


def test_cas_store_waste_per_host(scenario):
    stores = scenario.cas_stores
    points = _exact(scenario, "CAS store waste per host", "A")
    assert _by(points, "host_name") == {(h,): s.wasted_bytes for h, s in stores.items()}, points
    shares = _exact(scenario, "CAS store waste share per host")
    assert _by(shares, "host_name") == pytest.approx(
        {(h,): s.wasted_bytes / s.total_bytes for h, s in stores.items()}, rel=1e-12)
    # sort_desc: the most wasting host first, by bytes and by share, which
    # the stores make two different hosts (hosts.CAS_GROUPS).
    assert [m["host_name"] for m, _ in points] == [hosts.SECOND_HOST, hosts.FIRST_HOST], points
    assert [m["host_name"] for m, _ in shares] == [hosts.FIRST_HOST, hosts.SECOND_HOST], shares


def _clang_root(later):
    roots = [(res, attrs) for res, attrs, _ in later.roots if "ct.build.clang.frontend_s" in attrs]
    assert len(roots) == 1, f"one later build with clang traces expected, got {len(roots)}"
    return roots[0]


def test_clang_frontend_vs_backend_time(scenario, later):
    res, attrs = _clang_root(later)
    assert res["host.name"] == hosts.SECOND_HOST and _variant(res, attrs) == TIME_TRACE_VARIANT
    ref = hosts.time_trace_reference()
    for ref_id, key, cba in (("A", "ct.build.clang.frontend_s", ref["frontend_s"]),
                             ("B", "ct.build.clang.backend_s", ref["backend_s"])):
        got = _by(_exact(scenario, "Clang frontend vs backend time", ref_id), "ct_variant")
        assert got == pytest.approx({(TIME_TRACE_VARIANT,): attrs[key]}, rel=1e-9), (ref_id, got)
        # ClangBuildAnalyzer prints the Time summary to 0.1 s.
        assert abs(got[(TIME_TRACE_VARIANT,)] - cba) <= 0.05 + 1e-9, (ref_id, got, cba)


def test_top_headers_by_parse_time(scenario, later):
    parse = defaultdict(float)
    for rec in later.header_records:
        parse[rec["ct.header.path"]] += rec["ct.header.parse_s"]
    got = _by(_exact(scenario, "Top headers by parse time"), "ct_header_path")
    ranked = sorted(got, key=got.get, reverse=True)
    cba = hosts.time_trace_reference()["headers"]
    assert [p for (p,) in ranked] == [p for p, _ in cba], (
        f"the panel's headers, most expensive first, are not ClangBuildAnalyzer's Expensive headers:\n"
        f"  got {ranked}\n  want {cba}")
    for (path,), seconds in got.items():
        assert seconds == pytest.approx(parse[path], rel=1e-9), path
    for path, ms in cba:
        assert abs(got[(path,)] * 1000 - ms) <= 1.0, (path, got[(path,)], ms)
