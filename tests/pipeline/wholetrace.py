"""Is a build's trace whole at the end of a pipeline?

Whole: every span exactly once (nothing lost, nothing twice), one trace id,
one root, and every parent among the spans. The spans are compact
(trace id, span id, parent span id) triples, from the sink's requests or
from Jaeger's query API, so a 1M-span build fits in memory.
"""

from collections import Counter, namedtuple

SpanKey = namedtuple("SpanKey", "trace_id span_id parent_id")
# One traces request at the sink: its encoded size and its spans.
RequestSummary = namedtuple("RequestSummary", "bytes spans")


def summarize_request(signal, message):
    """OtlpSink summarize hook: keep a request's size and span triples."""
    if signal != "traces":
        return RequestSummary(message.ByteSize(), [])
    spans = [SpanKey(s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex())
             for rs in message.resource_spans for ss in rs.scope_spans for s in ss.spans]
    return RequestSummary(message.ByteSize(), spans)


def jaeger_spans(spans):
    """SpanKeys of spans from Jaeger's /api/traces (parent: CHILD_OF)."""
    out = []
    for s in spans:
        parents = [r["spanID"] for r in s.get("references") or [] if r.get("refType") == "CHILD_OF"]
        out.append(SpanKey(s["traceID"], s["spanID"], parents[0] if parents else ""))
    return out


def problems(spans, expected, trace_id=None):
    """What keeps `spans` from being one whole trace of `expected` spans
    (and of `trace_id`, if given); [] when whole."""
    found = []
    ids = Counter(s.span_id for s in spans)
    twice = sum(n - 1 for n in ids.values() if n > 1)
    if len(ids) != expected:
        found.append(f"{len(ids)} distinct spans, the build has {expected}")
    if twice:
        found.append(f"{twice} spans arrived more than once")
    traces = Counter(s.trace_id for s in spans)
    if len(traces) != 1:
        found.append(f"{len(traces)} trace ids: {dict(traces.most_common(3))}")
    elif trace_id is not None and trace_id not in traces:
        found.append(f"trace id {next(iter(traces))}, want {trace_id}")
    roots = [s for s in spans if not s.parent_id]
    if len(roots) != 1:
        found.append(f"{len(roots)} roots")
    orphans = sum(1 for s in spans if s.parent_id and s.parent_id not in ids)
    if orphans:
        found.append(f"{orphans} spans whose parent never arrived")
    return found
