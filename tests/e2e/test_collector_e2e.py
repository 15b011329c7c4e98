"""End to end: real ct-cake builds -> otelcol-compiletools process -> OTLP/HTTP sink.

Expected values come from the corpus: the span set ct-cake's own exporter
sent for the same build (reference/001-traces.pb), which the design requires
us to reproduce (design.md §2) for builds without unanchored rules.
"""

import time

import pytest

from harness import checks
from harness import diagdir
from harness import reference
from harness.collector import HOST_NAME, POLL_INTERVAL_S

CASE01 = "01-geom-shake-cold"


def expected_spans(case):
    """ct-cake's spans for the case, after checking they are complete: one
    span per event of timing.json (no span lost by ct-cake, none unanchored)."""
    ref = reference.reference_spans(case)
    events = reference.timing_event_count(reference.invocation_dir(case) / "timing.json")
    assert len(ref) == events, (
        f"{case}: reference has {len(ref)} spans for {events} events; "
        f"not usable as an expectation")
    return ref


def test_case01_span_count_and_names_match_reference(collector, sink, diag):
    ref = expected_spans(CASE01)
    build = diagdir.add_build(diag, reference.invocation_dir(CASE01))

    spans = checks.wait_for_spans(sink, len(ref), collector)

    checks.assert_trace_like_reference(spans, ref)
    ref_resource = ref[0][0]
    for resource, _ in spans:
        assert resource.get("ct.invocation_id") == build.name
        assert resource.get("host.name") == HOST_NAME
        assert resource.get("ct.backend") == ref_resource["ct.backend"] == "shake"
        assert resource.get("ct.variant") == ref_resource["ct.variant"]
        assert resource.get("service.namespace") == "compiletools"
        assert resource.get("service.name") == "compiletools"
        # <host.name>:<pid>, the pid being the invocation id's suffix.
        assert resource.get("service.instance.id") == f"{HOST_NAME}:{build.name.rsplit('-', 1)[1]}"


@pytest.mark.parametrize("case", [
    "09-textkit-shake-no-ccache",
    "12-geom-ninja-cold-native-flock",
    "16-geom-make-cold-native-flock",
    "10-textkit-broken-shake-compile-error",
])
def test_span_names_match_reference(case, collector, sink, diag):
    ref = expected_spans(case)
    diagdir.add_build(diag, reference.invocation_dir(case))

    spans = checks.wait_for_spans(sink, len(ref), collector)

    checks.assert_trace_like_reference(spans, ref)


def test_case01_span_times_match_reference(collector, sink, diag):
    """Wall-clock reconstruction survives the pipeline: ct-cake's exporter and
    the spec's formula agree to ~10 µs on this build (corpus README); 1 ms
    still catches unit, anchor and rounding mistakes."""
    ref = expected_spans(CASE01)
    diagdir.add_build(diag, reference.invocation_dir(CASE01))
    spans = checks.wait_for_spans(sink, len(ref), collector)

    def unique_by_name(items):
        counts = {}
        for _, s in items:
            counts.setdefault(s.name, []).append(s)
        return {name: ss[0] for name, ss in counts.items() if len(ss) == 1}

    got, want = unique_by_name(spans), unique_by_name(ref)
    assert len(want) > len(ref) // 2, "too few uniquely named spans to compare"
    tolerance_ns = 1_000_000
    for name, w in want.items():
        g = got[name]
        assert abs(g.start_time_unix_nano - w.start_time_unix_nano) <= tolerance_ns, (
            f"{name}: start {g.start_time_unix_nano} vs reference {w.start_time_unix_nano}")
        assert abs(g.end_time_unix_nano - w.end_time_unix_nano) <= tolerance_ns, (
            f"{name}: end {g.end_time_unix_nano} vs reference {w.end_time_unix_nano}")


def _wait_for_log_line(collector, needle, timeout):
    """The first stderr line that mentions `needle` and is a warning, or None."""
    deadline = time.monotonic() + timeout
    while True:
        for line in collector.stderr_text().splitlines():
            if needle in line and "warn" in line.lower():
                return line
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def test_malformed_timing_json_warns_and_other_builds_still_arrive(collector, sink, diag):
    ref = expected_spans(CASE01)
    truncated = diagdir.add_truncated_build(diag, "20261130T000000-1")
    unreadable, how = diagdir.add_unreadable_build(diag, "20261130T000001-2")
    good = diagdir.add_build(diag, reference.invocation_dir(CASE01))

    spans = checks.wait_for_spans(sink, len(ref), collector)
    good_spans = [(r, s) for r, s in spans if r.get("ct.invocation_id") == good.name]
    checks.assert_trace_like_reference(good_spans, ref)

    for bad, what in [(truncated, "truncated timing.json"), (unreadable, how)]:
        path = str(bad / "timing.json")
        line = _wait_for_log_line(collector, path, timeout=checks.ARRIVAL_TIMEOUT_S)
        assert line, (f"no warning naming {path} ({what}) in the collector log\n"
                      f"{collector.describe()}")
    assert collector.running(), f"collector died on bad input\n{collector.describe()}"


def test_each_build_emitted_once(collector, sink, diag):
    cases = [CASE01, "09-textkit-shake-no-ccache"]
    want = {}
    for case in cases:
        want[diagdir.add_build(diag, reference.invocation_dir(case)).name] = len(expected_spans(case))

    checks.wait_for_spans(sink, sum(want.values()), collector)
    # Both arrived; give the receiver three more polls to (wrongly) re-send.
    time.sleep(3 * POLL_INTERVAL_S)
    assert sink.wait_quiet(checks.QUIET_S, checks.ARRIVAL_TIMEOUT_S)

    traces = checks.by_trace(sink.spans())
    got = {}
    for tid, spans in traces.items():
        invocations = {r.get("ct.invocation_id") for r, _ in spans}
        assert len(invocations) == 1, f"trace {tid} mixes builds {invocations}"
        invocation = invocations.pop()
        assert invocation not in got, f"build {invocation} was emitted as two traces"
        got[invocation] = len(spans)
        assert len({s.span_id for _, s in spans}) == len(spans), f"trace {tid} repeats span ids"
    assert got == want, f"spans per build {got}, expected {want}\n{checks.summary(sink)}"
