"""The compile history through the real collector and file_storage.

One collector process sees corpus case 01 (geom, cold: every TU a ccache
miss) and stops; a second process on the same storage sees case 03 (the
same targets, every TU a ccache hit, its statslog mapped by
capture.statslogs). The hits' time saved can only come from the history the
first process saved: each compile span of case 03 must carry
ct.rule.time_saved_s = the target's duration in case 01 − its duration in
case 03 (read here straight off the two timing.json files), the root their
sum, and ct.cache.time_saved the same sum on its ccache point.
"""

import json
import math

from harness import collector as collector_mod
from harness import diagdir
from harness import reference

COLD, HIT = "01-geom-shake-cold", "03-geom-shake-ccache-hit"


def _compile_durations(case):
    doc = json.loads((reference.invocation_dir(case) / "timing.json").read_text())
    out = {}

    def walk(events):
        for e in events or []:
            if e.get("rule_type") == "compile":
                out[e["target"]] = e["end_s"] - e["start_s"]
            else:
                walk(e.get("rules"))

    walk(doc["phases"])
    return out


def _attrs(span):
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in span.attributes}


def _run(collector_binary, workdir, diag, sink, storage, extra, add_case, until):
    proc = collector_mod.Collector(collector_binary, workdir, include=[diag],
                                   exporter_endpoint=sink.endpoint,
                                   receiver_extra=extra, storage_dir=storage)
    proc.start()
    try:
        diagdir.add_build(diag, reference.invocation_dir(add_case))
        assert sink.wait_for(until, 60), f"{add_case} did not arrive\n{proc.describe()}"
    finally:
        code = proc.stop()
    assert code == 0, proc.describe()


def test_time_saved_from_a_history_kept_across_a_restart(collector_binary, corpus_dir, sink, diag, tmp_path):
    storage = tmp_path / "storage"
    statslog = reference.case_dir(HIT) / "ccache.statslog"
    extra = {
        "start_at": "beginning",
        "history": {"enabled": True},
        "capture": {"statslogs": [{"include": str(diag / "*"), "path": str(statslog)}]},
    }
    roots = lambda: [s for _, s in sink.spans() if not s.parent_span_id]  # noqa: E731

    _run(collector_binary, tmp_path / "c1", diag, sink, storage,
         {**extra, "capture": {"statslogs": []}}, COLD, lambda: len(roots()) >= 1)
    cold_spans = [s for _, s in sink.spans()]
    assert not any("ct.rule.time_saved_s" in _attrs(s) for s in cold_spans)

    _run(collector_binary, tmp_path / "c2", diag, sink, storage, extra, HIT, lambda: len(roots()) >= 2)
    assert sink.wait_quiet(1.0, 20)
    # Case 01 was not read again by the second process: the time saved
    # below can only come from the saved history.
    assert len(roots()) == 2, "the first build was sent again after the restart"
    hit_id = reference.invocation_dir(HIT).name
    hit_root = [s for r, s in sink.spans() if not s.parent_span_id and r.get("ct.invocation_id") == hit_id]
    assert len(hit_root) == 1, [r.get("ct.invocation_id") for r, s in sink.spans() if not s.parent_span_id]
    spans = [s for _, s in sink.spans() if s.trace_id == hit_root[0].trace_id]
    before, after = _compile_durations(COLD), _compile_durations(HIT)
    total, hits = 0.0, 0
    for s in spans:
        a = _attrs(s)
        if a.get("ct.rule_type") != "compile":
            continue
        assert a.get("ct.rule.cache_layer") == "ccache", a
        # The same object key as in case 01 (the CAS was removed, ccache
        # kept): a CAS miss ccache served, the object evicted.
        assert a.get("ct.rule.cas_miss_reason") == "evicted", a
        assert "ct.rule.rebuild_reason" not in a, a
        want = before[a["ct.target"]] - after[a["ct.target"]]
        assert math.isclose(a["ct.rule.time_saved_s"], want, abs_tol=1e-6), (a["ct.target"], a, want)
        total += a["ct.rule.time_saved_s"]
        hits += 1
    assert hits == len(after) > 0
    root = _attrs(hit_root[0])
    assert math.isclose(root["ct.build.time_saved_s"], total, abs_tol=1e-6)
    assert root["ct.build.rebuild.ccache_served"] == hits
    assert root["ct.build.rebuild.evicted"] == 0
    # Linked to case 01's root: the previous build of the same host, variant
    # and pipeline, found in the history the first process saved.
    cold_root = [s for r, s in sink.spans() if not s.parent_span_id and r.get("ct.invocation_id") != hit_id]
    assert [(ln.trace_id, ln.span_id) for ln in hit_root[0].links] == \
        [(cold_root[0].trace_id, cold_root[0].span_id)]
    points = [p for name, p in sink.data_points() if name == "ct.cache.time_saved"]
    assert len(points) == 1, points
    layer = {kv.key: kv.value.string_value for kv in points[0].attributes}
    # The host's shared series (the default metric identity): the layer
    # plus the build's keys, no per-build identity.
    assert layer.pop("ct.rule.cache_layer") == "ccache", layer
    assert set(layer) <= {"ct.variant", "cicd.pipeline.name"}, layer
    assert "ct.variant" in layer, layer
    assert math.isclose(points[0].as_double, total, abs_tol=1e-6)
    # ct.rebuilds: case 01 compiled every TU (new), case 03 none (ccache).
    reasons = ("new", "source_changed", "headers_changed", "flags_changed", "evicted", "not_cas")
    rebuilds = [({kv.key: kv.value.string_value for kv in p.attributes}["ct.rule.rebuild_reason"], p.as_int)
                for name, p in sink.data_points() if name == "ct.rebuilds"]
    assert rebuilds == [(r, len(before) if r == "new" else 0) for r in reasons] + [(r, 0) for r in reasons], \
        rebuilds
