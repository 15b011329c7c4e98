"""Builds land whole in a real trace backend: Jaeger v2 as the last hop.

agent (our receiver -> otlp_grpc, wait_for_result) -> gateway (otlp
receiver at its defaults -> otlp_grpc) -> Jaeger (its OTLP gRPC receiver at
its defaults, in-memory storage). Judged only through Jaeger's query API
(/api/traces/<trace id>): span count, one trace, every parent present.
"""

import time
from collections import Counter

import pytest

from harness import reference

from . import bigbuilds, topology, wholetrace

CORPUS_CASES = ["01-geom-shake-cold", "09-textkit-shake-no-ccache", "10-textkit-broken-shake-compile-error",
                "12-geom-ninja-cold-native-flock", "16-geom-make-cold-native-flock"]
STARTUP_GRACE_S = 1.0
# A complete trace must stay so: no span may come twice after this long.
QUIET_S = 3.0


@pytest.fixture(scope="module")
def path_to_jaeger(collector_binary, jaeger_binary, tmp_path_factory):
    """Jaeger, the gateway in front of it and the agent, watching `diag`."""
    tmp = tmp_path_factory.mktemp("jaeger-path", numbered=True)
    diag = tmp.resolve() / "diag"
    diag.mkdir()
    jaeger = topology.Jaeger(jaeger_binary, tmp / "jaeger")
    gateway, gateway_grpc = topology.gateway(collector_binary, tmp / "gateway", jaeger_grpc=jaeger.otlp_grpc)
    agent = topology.agent(collector_binary, tmp / "agent", [diag], gateway_grpc)
    started = []
    try:
        for proc in (jaeger, gateway, agent):
            proc.start(health_timeout=60)
            started.append(proc)
        time.sleep(STARTUP_GRACE_S)
        yield diag, jaeger, agent
    finally:
        codes = [(p, p.stop()) for p in reversed(started)]
        for p, code in codes:
            print(f"{p.binary.name} exit status {code}\n{p.describe(lines=30)}")
    for p, code in codes:
        assert code == 0 and not p.killed, f"{p.binary.name} exit status {code}\n{p.describe()}"


def wait_whole(jaeger, agent, trace_id, expected, timeout, t0):
    """Polls Jaeger until the trace has `expected` spans (a 100k-span trace
    is ~100 MB of JSON: the interval grows), then once more after QUIET_S;
    returns (the spans as SpanKeys, seconds from t0 until complete)."""
    interval = 0.2
    spans = []
    while time.monotonic() - t0 < timeout and not topology.gave_up(agent):
        spans = wholetrace.jaeger_spans(jaeger.trace(trace_id, timeout=timeout))
        if len(spans) >= expected:
            break
        time.sleep(interval)
        interval = min(interval * 2, 5.0)
    took = time.monotonic() - t0
    time.sleep(QUIET_S)
    return wholetrace.jaeger_spans(jaeger.trace(trace_id, timeout=timeout)), took


def test_corpus_builds_land_whole_in_jaeger(path_to_jaeger):
    diag, jaeger, agent = path_to_jaeger
    published = {}
    for case in CORPUS_CASES:
        src = reference.invocation_dir(case)
        ref = reference.reference_spans(case)
        # Only a complete reference (one span per event) defines "expected".
        assert len(ref) == reference.timing_event_count(src / "timing.json"), f"{case}: incomplete reference"
        staged = bigbuilds.stage(bigbuilds.Build(0, src / "timing.json", len(ref), None, src.name), diag)
        inv = bigbuilds.publish(staged, diag)
        tid = bigbuilds.trace_id(topology.AGENT_HOST_NAME, inv, bigbuilds.timestamp_of(src / "timing.json"))
        published[case] = (tid, ref, time.monotonic())

    for case, (tid, ref, t0) in published.items():
        spans, _ = wait_whole(jaeger, agent, tid, len(ref), 60, t0)
        found = wholetrace.problems(spans, len(ref), tid)
        assert not found, f"{case}: trace {tid} in Jaeger is not whole: {found}\nagent:\n{agent.describe()}"
        got = Counter(s["operationName"] for s in jaeger.trace(tid))
        assert got == Counter(s.name for _, s in ref), f"{case}: span names differ from ct-cake's export"


def test_large_build_lands_whole_in_jaeger(path_to_jaeger, jaeger_build, record_result):
    diag, jaeger, agent = path_to_jaeger
    staged = bigbuilds.stage(jaeger_build, diag)
    t0 = time.monotonic()
    inv = bigbuilds.publish(staged, diag)
    tid = bigbuilds.trace_id(topology.AGENT_HOST_NAME, inv, jaeger_build.timestamp)
    timeout = 120 + jaeger_build.rules / 1000
    spans, took = wait_whole(jaeger, agent, tid, jaeger_build.expected_spans, timeout, t0)
    numbers = {"rules": jaeger_build.rules, "spans_expected": jaeger_build.expected_spans,
               "spans_in_jaeger": len(spans), "rename_to_whole_in_jaeger_s": round(took, 1),
               "agent_peak_rss_mib": round(agent.peak_rss_mib(), 1),
               "jaeger_peak_rss_mib": round(jaeger.peak_rss_mib(), 1)}
    record_result(numbers)
    found = wholetrace.problems(spans, jaeger_build.expected_spans, tid)
    assert not found, f"trace {tid} in Jaeger is not whole: {found}\n{numbers}\nagent:\n{agent.describe()}"
    assert len(spans) == jaeger_build.expected_spans, f"{len(spans)} spans in Jaeger\n{numbers}"
