"""Judging the builds at the end of the path, in Jaeger.

Jaeger's query API removes exact duplicate spans by default (its
DedupeBySpanHash adjuster); `?raw=true` turns its adjusters off, so every
copy the backends stored is seen and can be counted. A copy's content is
the span as Jaeger returns it with its process (the resource) in place of
the process id, which is only a key within one answer.
"""

import json
import urllib.error
import urllib.request
from collections import defaultdict, namedtuple

from pipeline import topology

# whole: every expected span, nothing else, parents present, content as
# expected, all copies alike. The counts say what is wrong otherwise.
Verdict = namedtuple("Verdict", "whole copies distinct missing unexpected mismatched differing orphans roots")

MAX_TRACES = 5000


class FleetJaeger(topology.Jaeger):
    """The pipeline suite's Jaeger v2 (in-memory), holding more traces."""

    def __init__(self, binary, workdir):
        super().__init__(binary, workdir)
        config = json.loads(self.config_path.read_text())
        config["extensions"]["jaeger_storage"]["backends"]["memory_store"]["memory"]["max_traces"] = MAX_TRACES
        self.config_path.write_text(json.dumps(config, indent=2) + "\n")

    def raw_trace(self, trace_id, timeout=120):
        """Every stored copy of every span of the trace: [(span id, content
        dict)], [] when Jaeger has none."""
        url = f"{self.query_url}/api/traces/{trace_id}?raw=true"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                doc = json.load(resp)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return []
            raise
        out = []
        for trace in doc.get("data") or []:
            processes = trace.get("processes") or {}
            for span in trace["spans"]:
                content = dict(span)
                content["process"] = processes.get(content.pop("processID", None))
                out.append((span["spanID"], content))
        return out


def distinct_spans(copies):
    return len({sid for sid, _ in copies})


def _parent(content):
    refs = [r["spanID"] for r in content.get("references") or [] if r.get("refType") == "CHILD_OF"]
    return refs[0] if refs else ""


def judge(copies, expected):
    """The Verdict of a trace's copies from Jaeger against the Expected of
    the build (expected.py)."""
    by_id = defaultdict(list)
    for sid, content in copies:
        by_id[sid].append(content)
    want = expected.spans
    missing = sum(1 for sid in want if sid not in by_id)
    unexpected = sum(1 for sid in by_id if sid not in want)
    mismatched = differing = 0
    for sid, contents in by_id.items():
        first = contents[0]
        if any(json.dumps(c, sort_keys=True) != json.dumps(first, sort_keys=True) for c in contents[1:]):
            differing += 1
        exp = want.get(sid)
        if exp is not None and (_parent(first), first["operationName"], first["startTime"],
                                first["duration"]) != (exp.parent, exp.name, exp.start_us, exp.duration_us):
            mismatched += 1
    orphans = sum(1 for contents in by_id.values() if _parent(contents[0]) and _parent(contents[0]) not in by_id)
    roots = sum(1 for contents in by_id.values() if not _parent(contents[0]))
    whole = (missing == unexpected == mismatched == differing == orphans == 0 and roots == 1)
    return Verdict(whole, len(copies), len(by_id), missing, unexpected, mismatched, differing, orphans, roots)


def duplicate_spans(verdict):
    """Copies beyond the first of each span."""
    return verdict.copies - verdict.distinct


def describe(verdict):
    parts = [f"{verdict.distinct} distinct spans in {verdict.copies} copies"]
    for name in ("missing", "unexpected", "mismatched", "differing", "orphans"):
        n = getattr(verdict, name)
        if n:
            parts.append(f"{n} {name}")
    if verdict.roots != 1:
        parts.append(f"{verdict.roots} roots")
    return ", ".join(parts)
