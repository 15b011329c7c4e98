"""Waiting for and judging what the collector delivered to the sink."""

from collections import Counter

from .collector import POLL_INTERVAL_S

# A build must reach the sink well within this (the design target is
# poll_interval + 200 ms; the margin absorbs a slow CI machine).
ARRIVAL_TIMEOUT_S = 30.0
# "The span count stopped growing": no request for this long. Five poll
# intervals give a re-emitting receiver several chances to show itself.
QUIET_S = max(1.0, 5 * POLL_INTERVAL_S)


def summary(sink):
    """What arrived, per trace, for failure messages."""
    per_trace = Counter()
    invocations = {}
    for resource, span in sink.spans():
        tid = span.trace_id.hex()
        per_trace[tid] += 1
        invocations[tid] = resource.get("ct.invocation_id")
    lines = [f"  trace {t}: {n} spans, ct.invocation_id={invocations[t]!r}"
             for t, n in sorted(per_trace.items())]
    rejected = sink.rejected()
    return (f"sink received {len(sink.requests())} requests, {sum(per_trace.values())} spans"
            + (f", rejected {rejected}" if rejected else "") + "\n" + "\n".join(lines))


def wait_for_spans(sink, expected, collector=None, timeout=ARRIVAL_TIMEOUT_S):
    """Wait until at least `expected` spans arrived and then nothing more
    for QUIET_S; returns every span received, as (resource attrs, span)."""
    def context():  # computed at failure time, so it shows the final state
        return summary(sink) + ("\n" + collector.describe() if collector else "")

    # Stop waiting early if the collector died: its exit is the real failure.
    dead = (lambda: not collector.running()) if collector else (lambda: False)
    sink.wait_for(lambda: len(sink.spans()) >= expected or dead(), timeout)
    assert not dead(), (f"collector exited with status {collector.proc.returncode}\n"
                        f"{context()}")
    arrived = len(sink.spans()) >= expected
    assert arrived, (f"only {len(sink.spans())} of {expected} expected spans arrived "
                     f"within {timeout:.0f} s\n{context()}")
    assert sink.wait_quiet(QUIET_S, timeout), (
        f"requests still arriving after {timeout:.0f} s (re-sending?)\n{context()}")
    return sink.spans()


def by_trace(spans):
    """{trace id hex: [(resource attrs, span), ...]}"""
    traces = {}
    for resource, span in spans:
        traces.setdefault(span.trace_id.hex(), []).append((resource, span))
    return traces


def _names_with_parents(spans):
    """Multiset of (span name, parent span name); parent None for roots."""
    by_id = {s.span_id: s for _, s in spans}
    return Counter((s.name, by_id[s.parent_span_id].name if s.parent_span_id else None)
                   for _, s in spans)


def _diff(got, want):
    missing, extra = want - got, got - want
    return f"missing {dict(missing)}, unexpected {dict(extra)}"


def assert_trace_like_reference(spans, ref_spans):
    """One complete build trace whose span set and tree match ct-cake's own."""
    got_names = Counter(s.name for _, s in spans)
    want_names = Counter(s.name for _, s in ref_spans)
    assert len(spans) == len(ref_spans), (
        f"{len(spans)} spans, reference has {len(ref_spans)}: {_diff(got_names, want_names)}")
    assert got_names == want_names, _diff(got_names, want_names)

    trace_ids = {s.trace_id for _, s in spans}
    assert len(trace_ids) == 1, f"spans spread over {len(trace_ids)} traces"
    assert len({s.span_id for _, s in spans}) == len(spans), "duplicate span ids"

    roots = [s for _, s in spans if not s.parent_span_id]
    assert [r.name for r in roots] == ["compiletools.build"], (
        f"expected exactly one root compiletools.build, got {[r.name for r in roots]}")
    ids = {s.span_id for _, s in spans}
    orphans = [s.name for _, s in spans if s.parent_span_id and s.parent_span_id not in ids]
    assert not orphans, f"spans whose parent is not in the trace: {orphans}"

    got_tree, want_tree = _names_with_parents(spans), _names_with_parents(ref_spans)
    assert got_tree == want_tree, f"(span, parent) pairs differ: {_diff(got_tree, want_tree)}"
