"""Corpus builds for the deployment tests, and judging their arrival."""

from harness import checks
from harness import diagdir
from harness import reference

# Complete references (one span per timing.json event) on three backends
# and a failed build.
CASES = [
    "01-geom-shake-cold",
    "09-textkit-shake-no-ccache",
    "12-geom-ninja-cold-native-flock",
    "10-textkit-broken-shake-compile-error",
]


def expected_spans(case):
    ref = reference.reference_spans(case)
    events = reference.timing_event_count(reference.invocation_dir(case) / "timing.json")
    assert len(ref) == events, f"{case}: reference has {len(ref)} spans for {events} events"
    return ref


def add_builds(diag, cases):
    """Publish each case's build into `diag`; {invocation id: case}."""
    return {diagdir.add_build(diag, reference.invocation_dir(c)).name: c for c in cases}


def assert_every_build_arrived(sink, added, collector, host_name=None):
    """Each added build arrived once, as one trace like ct-cake's own."""
    want = {inv: expected_spans(case) for inv, case in added.items()}
    spans = checks.wait_for_spans(sink, sum(len(r) for r in want.values()), collector)
    per_build = {}
    for tid, trace in checks.by_trace(spans).items():
        invocations = {r.get("ct.invocation_id") for r, _ in trace}
        assert len(invocations) == 1, f"trace {tid} mixes builds {invocations}"
        inv = invocations.pop()
        assert inv not in per_build, f"build {inv} arrived as two traces"
        per_build[inv] = trace
    assert set(per_build) == set(want), (
        f"builds at the sink {sorted(per_build)}, added {sorted(want)}\n{checks.summary(sink)}")
    for inv, trace in per_build.items():
        checks.assert_trace_like_reference(trace, want[inv])
        if host_name is not None:
            assert {r.get("host.name") for r, _ in trace} == {host_name}
    return per_build
