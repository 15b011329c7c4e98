"""Load for the lb gateway: the agent's requests of one build, replayed as
many builds with fresh trace ids, straight over OTLP/HTTP.

The agent parses each build (and sends at most max_concurrent_builds at
once), so it cannot load a gateway by itself; this sends what the agent
sent — its protobuf requests of a real corpus build, captured, gzipped as
the agent's otlp_http exporter does by default — from a few keep-alive
connections. A trace id is 16 bytes in the protobuf; each build's copy has
its own. Bounded by a build count and a time limit.
"""

import gzip
import hashlib
import http.client
import resource
import threading
import time
import urllib.parse

import wholeness


def _sender(url, bodies_for, next_build, results, lock):
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        while True:
            index = next_build()
            if index is None:
                return
            for body in bodies_for(index):
                conn.request("POST", "/v1/traces", body=gzip.compress(body, 6),
                             headers={"Content-Type": "application/x-protobuf",
                                      "Content-Encoding": "gzip"})
                resp = conn.getresponse()
                resp.read()
                if resp.status != 200:
                    with lock:
                        results["refused"] += 1
                    break
            else:
                with lock:
                    results["sent"] += 1
    finally:
        conn.close()


def run(lb_http, bodies, template_id, span_ids, builds, seconds, senders, sink, gateways, timeout):
    """`bodies`: the build's captured protobuf trace requests; `template_id`
    its trace id (hex); `span_ids` the span ids (hex) of the build."""
    template = bytes.fromhex(template_id)
    if any(b.count(template) == 0 for b in bodies):
        raise ValueError("a captured request does not carry the build's trace id")
    # Like the agent's: hashes, so they spread over the ring as real ones do.
    trace_ids = [hashlib.sha256(b"loadgen/%d" % i).digest()[:16] for i in range(builds)]

    def bodies_for(i):
        return [b.replace(template, trace_ids[i]) for b in bodies]

    lock = threading.Lock()
    results = {"sent": 0, "refused": 0}
    counter = iter(range(builds))
    deadline = time.monotonic() + seconds

    def next_build():
        with lock:
            if time.monotonic() > deadline:
                return None
            return next(counter, None)

    spans_before = sink.tally.span_count()
    cpu0 = {p.name: p.cpu_seconds() for p in gateways}
    self0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    threads = [threading.Thread(target=_sender, args=(lb_http, bodies_for, next_build, results, lock))
               for _ in range(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + timeout)
    sent_s = time.monotonic() - t0
    want = spans_before + results["sent"] * len(span_ids)
    end = time.monotonic() + timeout
    while sink.tally.span_count() < want and time.monotonic() < end:
        time.sleep(0.1)
    wall = time.monotonic() - t0
    self1 = resource.getrusage(resource.RUSAGE_SELF)

    sent = results["sent"]
    expected = {trace_ids[i].hex(): span_ids for i in range(sent)}
    arrived = {gw: {tid: spans for tid, spans in traces.items() if tid in expected}
               for gw, traces in sink.tally.traces_by_gateway().items()}
    problems = wholeness.trace_problems(expected, arrived)
    if results["refused"]:
        problems.append(f"{results['refused']} builds refused by the lb gateway")
    cpu = {p.name: round(p.cpu_seconds() - cpu0[p.name], 2) for p in gateways}
    spans = sent * len(span_ids)
    return {
        "builds_sent": sent,
        "spans_sent": spans,
        "requests_per_build": len(bodies),
        "senders": senders,
        "seconds_sending": round(sent_s, 2),
        "seconds_to_last_span_at_sink": round(wall, 2),
        "builds_per_s": round(sent / wall, 1),
        "spans_per_s": round(spans / wall),
        "gateway_cpu_s": cpu,
        "lb_cpu_ms_per_1k_spans": round(1000 * cpu.get("lb", 0) / (spans / 1000), 1) if spans else None,
        "loadgen_and_sink_cpu_s": round((self1.ru_utime + self1.ru_stime) - (self0.ru_utime + self0.ru_stime), 2),
        "peak_rss_mib": {p.name: round(p.peak_rss_mib(), 1) for p in gateways},
        "traces_per_backend": {gw: len(t) for gw, t in sorted(arrived.items())},
        "problems": problems,
    }
