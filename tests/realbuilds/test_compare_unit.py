"""compare.py's own building blocks (no build, no collector needed)."""

import pytest

from . import compare


def test_trace_and_span_ids_follow_the_published_vectors():
    # README.md "Deterministic IDs" test vectors
    tid = compare.expected_trace_id("vm", "/home/dev/runs/01-geom-shake-cold/diag/20261130T034340-24175",
                                    "2026-11-30T03:43:45.418084+00:00")
    assert tid.hex() == "0f3d7890ecf972a576c8476ff3fb263a"
    assert compare.expected_trace_id("", "", "").hex() == "b1d90b22e5d462a9a1357adecd18d508"
    assert compare.expected_trace_id("build-host-01.example", "/var/tmp/ct/20260101T000000-1",
                                     "2026-01-01T00:00:00+00:00").hex() == "5bf301b232d4ceda5a807f3d6a3c2faa"
    assert compare.expected_span_id(tid, ()).hex() == "5e65710d95e8d4b2"
    assert compare.expected_span_id(tid, (0,)).hex() == "6403bbd657236d24"
    assert compare.expected_span_id(tid, (4, 2)).hex() == "394a0814fc644676"
    assert compare.expected_span_id(tid, (4294967295, 0, 7)).hex() == "599da7edcf07a857"


def test_statslog_blocks_give_each_source_its_primary_outcome(tmp_path):
    p = tmp_path / "ccache.statslog"
    p.write_text("# \ncalled_for_preprocessing\n# /w/src/a.cpp\ndirect_cache_miss\ncache_miss\n"
                 "local_storage_write\n# /w/src/b.cpp\ndirect_cache_hit\n# /w/src/c.cpp\ncompile_failed\n"
                 "# /w/src/a.cpp\r\npreprocessed_cache_hit\r\nbad line\n")
    blocks = compare.statslog_blocks(str(p))
    assert blocks["/w/src/a.cpp"] == ["cache_miss", "preprocessed_cache_hit"]
    assert blocks["/w/src/b.cpp"] == ["direct_cache_hit"]
    assert blocks["/w/src/c.cpp"] == [None]
    assert blocks[""] == [None]


def test_anchored_event_count_skips_unanchored_rules():
    doc = {"start_s": 100.0, "total_elapsed_s": 10.0, "phases": [
        {"name": "build_execution", "start_s": 100.5, "end_s": 109.0, "rules": [
            {"name": "a.cpp", "rule_type": "compile", "start_s": 101.0, "end_s": 102.0},
            {"name": "b.cpp", "rule_type": "compile", "start_s": 0.0, "end_s": 1.0},
            {"name": "c.cpp", "rule_type": "compile", "start_s": -5.0, "end_s": 102.0}]}]}
    assert compare.anchored_event_count(doc) == 3
    assert compare.timing_paths(doc) == [(), (0,), (0, 0), (0, 1), (0, 2)]


def test_every_intended_difference_is_documented_once():
    ids = [d[0] for d in compare.INTENDED_DIFFERENCES]
    assert len(ids) == len(set(ids))
    assert all(len(d) == 4 and all(d) for d in compare.INTENDED_DIFFERENCES)


def _analytics_trace(mutate=None):
    """The README's worked example (rust/tests/analytics.rs): a → b → c with
    fillers, as our spans would carry it; `mutate(spans)` changes it."""
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.common.v1 import common_pb2

    s = 1_000_000_000
    req = trace_service_pb2.ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.add(key="ct.backend", value=common_pb2.AnyValue(string_value="shake"))
    ss = rs.scope_spans.add()

    def span(name, sid, parent, start, end, attrs=()):
        sp = ss.spans.add(name=name, span_id=bytes([sid] * 8), parent_span_id=parent,
                          start_time_unix_nano=start, end_time_unix_nano=end)
        for k, v in attrs:
            kv = sp.attributes.add(key=k)
            if isinstance(v, bool):
                kv.value.bool_value = v
            elif isinstance(v, int):
                kv.value.int_value = v
            elif isinstance(v, float):
                kv.value.double_value = v
            elif isinstance(v, list):
                for x in v:
                    kv.value.array_value.values.add(string_value=x)
            else:
                kv.value.string_value = v
        return sp

    top = ["b", "a", "c", "f3", "f2", "f4", "f1"]
    span(compare.ROOT, 1, b"", 100 * s, 110 * s, [
        ("ct.build.cas_avoided_count", 0), ("ct.build.parallelism.avg", 1.75),
        ("ct.build.parallelism.max", 3), ("ct.build.critical_path_s", 8.0),
        ("ct.build.critical_path.method", "estimate"),
        ("ct.build.top_weighted_rules", [f"compile.d/{n}.cpp" for n in top])])
    phase = span("phase.build_execution", 2, bytes([1] * 8), 101 * s, 109 * s)
    rules = [("f1", 101, 102, 1 / 3, False), ("a", 101, 104, 1 / 3 + 0.5 + 1, True),
             ("f2", 101, 103, 1 / 3 + 0.5, False), ("f3", 104, 106, 1.0, False),
             ("b", 104, 107, 2.0, True), ("f4", 107, 108, 0.5, False), ("c", 107, 109, 1.5, True)]
    for i, (n, a, b, w, on_path) in enumerate(rules):
        attrs = [("ct.rule_type", "compile"), ("ct.rule.weighted_s", w)]
        if on_path:
            attrs.append(("ct.critical_path", True))
        span(f"compile.d/{n}.cpp", 10 + i, phase.span_id, a * s, b * s, attrs)
    if mutate:
        mutate(ss.spans)
    return compare.spans_of([("001-traces.pb", "traces", req)])


def _analytics_problems(mutate=None):
    rep = compare.Report("analytics")
    compare._check_analytics(rep, _analytics_trace(mutate))
    return [t for c, t in rep.problems if c == "analytics"]


def test_analytics_checker_accepts_the_worked_example_and_rejects_changes():
    assert _analytics_problems() == []

    def attr(spans, name, key):
        sp = next(x for x in spans if x.name == name)
        return next(kv for kv in sp.attributes if kv.key == key)

    def heavier(spans):
        attr(spans, "compile.d/a.cpp", "ct.rule.weighted_s").value.double_value += 0.25

    def off_path(spans):
        sp = next(x for x in spans if x.name == "compile.d/b.cpp")
        del sp.attributes[-1]

    def on_phase(spans):
        spans[1].attributes.add(key="ct.rule.weighted_s").value.double_value = 1.0

    def more_at_once(spans):
        attr(spans, compare.ROOT, "ct.build.parallelism.max").value.int_value = 2

    def not_trailing(spans):
        sp = next(x for x in spans if x.name == "compile.d/f1.cpp")
        sp.attributes.add(key="late").value.string_value = "x"

    def no_average(spans):
        spans[1].name = "phase.other"

    def unknown_method(spans):
        attr(spans, compare.ROOT, "ct.build.critical_path.method").value.string_value = "guess"

    def exact_without_drag(spans):
        attr(spans, compare.ROOT, "ct.build.critical_path.method").value.string_value = "ninja_graph"

    def drag_on_an_estimate(spans):
        sp = next(x for x in spans if x.name == "compile.d/a.cpp")
        sp.attributes.add(key="ct.rule.drag_s").value.double_value = 1.0

    for change in (heavier, off_path, on_phase, more_at_once, not_trailing, no_average,
                   unknown_method, exact_without_drag, drag_on_an_estimate):
        assert _analytics_problems(change), f"{change.__name__} went unnoticed"


def test_analytics_checker_accepts_an_exact_path_with_drag():
    """The worked example read through a graph a → b → c: path length is
    the sum of the three rules (3 + 3 + 2 s), each path rule has a drag."""
    def exact(spans):
        root = next(x for x in spans if x.name == compare.ROOT)
        for kv in root.attributes:
            if kv.key == "ct.build.critical_path.method":
                kv.value.string_value = "ninja_graph"
        for name, drag in (("a", 1.0), ("b", 1.0), ("c", 1.0)):
            sp = next(x for x in spans if x.name == f"compile.d/{name}.cpp")
            sp.attributes.add(key="ct.rule.drag_s").value.double_value = drag

    assert _analytics_problems(exact) == []

    def too_much_drag(spans):
        exact(spans)
        sp = next(x for x in spans if x.name == "compile.d/c.cpp")
        sp.attributes[-1].value.double_value = 2.5

    assert _analytics_problems(too_much_drag)


def _per_tu_problems(blocks, layer, outcome, source="/w/src/a.cpp"):
    attrs = {"ct.rule_type": ("string", "compile"), "ct.source": ("string", source)}
    if layer is not None:
        attrs["ct.rule.cache_layer"] = ("string", layer)
    if outcome is not None:
        attrs["ct.ccache.outcome"] = ("string", outcome)
    span = compare.SpanRec(None, None, None, attrs, None, None)
    rep = compare.Report("unit")
    compare._check_per_tu(rep, "compile.a.cpp", span, span, blocks)
    return rep.problems


def test_per_tu_attribution_must_be_the_last_block_of_the_source():
    # a TU compiled twice (or an explicit statslog spanning builds): the
    # last block decides, an earlier block's outcome is wrong
    blocks = {"/w/src/a.cpp": ["cache_miss", "direct_cache_hit"]}
    assert _per_tu_problems(blocks, "ccache", "direct_cache_hit") == []
    assert _per_tu_problems(blocks, "compiled", "cache_miss")
    assert _per_tu_problems(blocks, "compiled", "direct_cache_hit")  # layer of another outcome
    assert _per_tu_problems(blocks, "other", None)


def test_per_tu_last_block_without_outcome_leaves_other():
    blocks = {"/w/src/a.cpp": ["direct_cache_hit", None]}
    assert _per_tu_problems(blocks, "other", None) == []
    assert _per_tu_problems(blocks, "ccache", "direct_cache_hit")
    # no block at all: other too
    assert _per_tu_problems({}, "other", None) == []
    assert _per_tu_problems({}, "compiled", "cache_miss")


class _Span:
    def __init__(self, start, end, name=compare.ROOT, parent=b""):
        self.name, self.parent_span_id = name, parent
        self.start_time_unix_nano, self.end_time_unix_nano = start, end


def _rec(span):
    return compare.SpanRec(None, None, span, {}, (span.name, None), None)


def test_timestamps_parse_to_exact_unix_ns():
    assert compare.iso_ns("2026-11-30T03:43:45.418084+00:00") == 1796010225418084000
    assert compare.iso_ns("2026-11-30T04:43:45.418084+01:00") == 1796010225418084000
    with pytest.raises(ValueError):
        compare.iso_ns("2026-11-30T03:43:45")


def test_our_root_must_end_at_the_timestamp():
    end = compare.iso_ns("2026-11-30T03:43:45.418084+00:00")
    timing = {"timestamp": "2026-11-30T03:43:45.418084+00:00"}
    for shift, bad in ((0, False), (900, False), (1_500, True), (-10**9, True)):
        rep = compare.Report("unit")
        compare._check_end_anchor(rep, [_rec(_Span(end - 10**9, end + shift))], timing)
        assert bool(rep.problems) == bad, (shift, rep.problems)


def test_stamping_delay_is_bounded_and_late_only():
    # A 1 s build: late by up to 10 ms, early by up to 5 µs + 500 ppm of 1 s
    # (the wall clock's slew); a 10 ms build: early by 5 µs + 5 µs only.
    for delay, duration, bad in ((6_000, 10**9, False), (900_000, 10**9, False), (-1_000, 10**9, False),
                                 (-6_000, 10**9, False), (-505_000, 10**9, False), (-506_000, 10**9, True),
                                 (-10_000, 10**7, False), (-10_001, 10**7, True),
                                 (compare.STAMPING_DELAY_MAX_NS + 1, 10**9, True)):
        rep = compare.Report("unit")
        pair = (_rec(_Span(10**9 + delay, 10**9 + duration + delay)), _rec(_Span(10**9, 10**9 + duration)))
        assert compare._stamping_delay(rep, [pair]) == delay
        assert bool(rep.problems) == bad, (delay, rep.problems)


def test_expected_result_reads_the_phases():
    def doc(*names, root_rule=False):
        phases = [{"name": n} for n in names]
        if root_rule:
            phases.append({"name": "late.o", "rule_type": "compile"})
        return {"phases": phases}

    full = ("target_discovery", "prebuild_scripts", "build_graph", "generate", "build_execution", "postbuild_scripts")
    assert compare.expected_result(doc(*full)) == ("success", None)
    assert compare.expected_result(doc(*full, root_rule=True)) == ("success", None)
    assert compare.expected_result(doc(*full[:5])) == ("failure", "build_execution")
    assert compare.expected_result(doc(*full[:2])) == ("failure", "prebuild_scripts")
    assert compare.expected_result(doc("target_discovery", "build_graph", "generate")) is None  # clean
    assert compare.expected_result(doc("target_discovery")) is None  # --filelist
    assert compare.expected_result(doc()) is None


def test_test_case_names_are_read_off_the_target():
    cas = ("/p/cas-exedir/ccache-gcc.cxx17.debug/a9/test_vec_"
           "a91713b1376909ae20a4dc93e2e4720a28c51ce6b28c89c2cba967b7d231c428.exe.e3b0c44298fc1c14.result")
    assert compare._test_case_name(cas) == "test_vec"
    assert compare._test_case_name("bin/gcc.debug/test_parse.result") == "test_parse"
    assert compare._test_case_name("test_hull") == "test_hull"
