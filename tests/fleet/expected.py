"""What each played build must become, from ct-otel-dump run on the build
where it landed, with its host's host_name: the exact trace id and every
span (id, parent, name, start, duration), plus the build metrics' inputs
(compile rules by cache layer, failed or not), counted from those spans the
way the core counts them (rust/src/otlp/build_metrics.rs): compile rules
below no other rule, a layer outside the four known ones counts as other.

The dumps run in a worker process while the fleet plays, at low priority.
"""

import json
import multiprocessing
import subprocess
import time
from collections import Counter, namedtuple
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

CACHE_LAYERS = ("cas", "ccache", "compiled", "other")
DUMP_TIMEOUT_S = 300

# spans: {span id hex: Span}; compiles: Counter by layer (empty: no rule).
# variant, pipeline: the resource's ct.variant, cicd.pipeline.name ("" if
# none); duration_s: the root span's (the run duration metric's value).
Expected = namedtuple("Expected", "trace_id spans compiles failed variant pipeline duration_s")
Span = namedtuple("Span", "parent name start_us duration_us")


def _attrs(span):
    return {a["key"]: next(iter(a["value"].values()), None) for a in span.get("attributes", [])}


def parse_dump(lines):
    """Expected from ct-otel-dump's JSON lines (traces, then metrics)."""
    spans, rule_type, layer, trace_ids = {}, {}, {}, set()
    root_result = None
    resource, root_duration_s = {}, None
    for line in lines:
        doc = json.loads(line)
        for rs in doc.get("resourceSpans", []):
            resource = _attrs(rs.get("resource", {}))
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    trace_ids.add(s["traceId"])
                    start, end = int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"])
                    parent = s.get("parentSpanId", "")
                    spans[s["spanId"]] = Span(parent, s["name"], start // 1000, (end - start) // 1000)
                    a = _attrs(s)
                    if "ct.rule_type" in a:
                        rule_type[s["spanId"]] = a["ct.rule_type"]
                        layer[s["spanId"]] = a.get("ct.rule.cache_layer")
                    if not parent:
                        root_result = a.get("cicd.pipeline.result")
                        root_duration_s = (end - start) / 1e9
    if len(trace_ids) != 1:
        raise AssertionError(f"ct-otel-dump gave {len(trace_ids)} trace ids")
    compiles = Counter()
    for sid, kind in rule_type.items():
        if kind != "compile" or _below_a_rule(sid, spans, rule_type):
            continue
        compiles[layer[sid] if layer[sid] in CACHE_LAYERS else "other"] += 1
    if rule_type:
        for layer_name in CACHE_LAYERS:
            compiles.setdefault(layer_name, 0)
    return Expected(trace_ids.pop(), spans, compiles, root_result == "failure",
                    resource.get("ct.variant") or "", resource.get("cicd.pipeline.name") or "",
                    root_duration_s)


def _below_a_rule(span_id, spans, rule_type):
    parent = spans[span_id].parent
    while parent:
        if parent in rule_type:
            return True
        parent = spans[parent].parent if parent in spans else ""
    return False


def dump(binary, host, path):
    """Expected of the build at `path` on `host` (runs in a worker process)."""
    out = subprocess.run(["nice", "-n", "10", str(binary), "-host-name", host, str(path)],
                         capture_output=True, text=True, timeout=DUMP_TIMEOUT_S, check=False)
    if out.returncode != 0:
        raise AssertionError(f"ct-otel-dump {path}: exit {out.returncode}: {out.stderr[-2000:]}")
    return parse_dump(out.stdout.splitlines())


class DumpWorker:
    """Dumps every build handed to add() in a worker process: parsing a
    100k-span dump holds a Python interpreter for seconds, which must not
    stall the test's own threads (the player, the fault timing)."""

    def __init__(self, binary):
        self.binary = binary
        self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        self._futures = {}      # trace id -> Future of Expected

    def add(self, build):
        self._futures[build.trace_id] = self._pool.submit(dump, self.binary, build.host, build.path)

    def finish(self, timeout):
        """Waits for every dump; returns {trace id: Expected or the exception}."""
        deadline = time.monotonic() + timeout
        results = {}
        try:
            for tid, future in self._futures.items():
                try:
                    results[tid] = future.result(timeout=max(0.0, deadline - time.monotonic()))
                except FutureTimeout:
                    raise AssertionError(f"ct-otel-dump still busy after {timeout} s") from None
                except Exception as exc:  # reported by the caller, per build
                    results[tid] = exc
        finally:
            self.close()
        return results

    def close(self):
        self._pool.shutdown(wait=False, cancel_futures=True)
