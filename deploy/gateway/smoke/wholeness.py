"""Did every build's trace land whole, on exactly one backend gateway?

`expected` maps trace id -> the set of span ids the agent sends for that
build (from ct-otel-dump); `arrived` is the sink's tally by gateway.
"""

from collections import Counter


def trace_problems(expected, arrived, duplicates_allowed=False):
    """[] when every expected trace is whole on exactly one gateway and
    nothing else arrived; otherwise one line per problem. After a crash
    the agent sends again what was not acknowledged: `duplicates_allowed`
    then accepts a span arriving twice (the agent's ids are deterministic,
    so a second copy is the same span)."""
    problems = []
    where = {}
    for gateway, traces in arrived.items():
        for trace_id in traces:
            where.setdefault(trace_id, []).append(gateway)
    for trace_id in sorted(set(where) - set(expected)):
        problems.append(f"unexpected trace {trace_id} on {where[trace_id]}")
    for trace_id, span_ids in sorted(expected.items()):
        gateways = where.get(trace_id, [])
        if len(gateways) != 1:
            problems.append(f"trace {trace_id} on {len(gateways)} gateways: {sorted(gateways)}")
            continue
        spans = arrived[gateways[0]][trace_id]
        problems.extend(f"trace {trace_id}: {p}" for p in _whole(spans, span_ids, duplicates_allowed))
    return problems


def duplicate_spans(arrived):
    """How many spans arrived more than once, over every trace."""
    return sum(n - 1 for traces in arrived.values() for spans in traces.values()
               for n in Counter(s for s, _p in spans).values() if n > 1)


def _whole(spans, expected_ids, duplicates_allowed):
    found = []
    counts = Counter(span_id for span_id, _parent in spans)
    twice = sum(n - 1 for n in counts.values() if n > 1)
    if twice and not duplicates_allowed:
        found.append(f"{twice} spans arrived more than once")
    if set(counts) != expected_ids:
        missing, extra = expected_ids - set(counts), set(counts) - expected_ids
        found.append(f"{len(missing)} spans missing, {len(extra)} not of the build")
    roots = [s for s, parent in spans if not parent]
    if len(set(roots)) != 1:
        found.append(f"{len(set(roots))} roots")
    orphans = {s for s, parent in spans if parent and parent not in counts}
    if orphans:
        found.append(f"{len(orphans)} spans whose parent never arrived")
    return found


def complete(expected, arrived):
    """True once every expected span id is somewhere at the sink (the
    smoke then stops waiting and checks the details)."""
    seen = {}
    for traces in arrived.values():
        for trace_id, spans in traces.items():
            seen.setdefault(trace_id, set()).update(s for s, _p in spans)
    return all(span_ids <= seen.get(trace_id, set()) for trace_id, span_ids in expected.items())
