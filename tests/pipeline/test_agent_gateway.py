"""A large build through the standard agent -> gateway topology.

agent (our receiver -> otlp_grpc, wait_for_result) -> gateway (otlp
receiver at its defaults: 4 MiB per gRPC message -> otlp_http) -> sink.
One request of a 100k-rule build is ~45 MB, ten times what the gateway
takes: the build arrives whole only because the receiver cuts it into
requests of max_request_spans spans.
"""

import statistics
import time

from harness.otlp_sink import OtlpSink

from . import bigbuilds, topology, wholetrace

# Builds are added this long after both collectors are healthy (the
# receiver's first poll has run: the build is new, not pre-existing).
STARTUP_GRACE_S = 1.0
QUIET_S = 3.0


def arrival_timeout_s(rules):
    return 120 + rules / 2000  # 100k: 170 s, 1M: 620 s; seconds are expected


def test_large_build_arrives_whole_through_a_default_grpc_hop(collector_binary, big_build, diag, tmp_path,
                                                              record_result):
    staged = bigbuilds.stage(big_build, diag)
    with OtlpSink(summarize=wholetrace.summarize_request) as sink:
        gateway, gateway_grpc = topology.gateway(collector_binary, tmp_path / "gateway", sink_endpoint=sink.endpoint)
        agent = topology.agent(collector_binary, tmp_path / "agent", [diag], gateway_grpc)
        gateway.start()
        try:
            agent.start()
            try:
                time.sleep(STARTUP_GRACE_S)
                t0 = time.monotonic()
                inv = bigbuilds.publish(staged, diag)
                span_total = lambda: sum(len(r.message.spans) for r in sink.requests("traces"))  # noqa: E731
                sink.wait_for(lambda: span_total() >= big_build.expected_spans or topology.gave_up(agent),
                              arrival_timeout_s(big_build.rules))
                sink.wait_quiet(QUIET_S, 60)
                peak_rss = agent.peak_rss_mib()
                gateway_rss = gateway.peak_rss_mib()
            finally:
                agent_code = agent.stop()
        finally:
            gateway_code = gateway.stop()
        requests = sink.requests("traces")

    spans = [s for r in requests for s in r.message.spans]
    sizes = [r.message.bytes for r in requests]
    numbers = {
        "rules": big_build.rules, "spans_expected": big_build.expected_spans, "spans_received": len(spans),
        "timing_json_bytes": big_build.timing.stat().st_size,
        "rename_to_last_span_s": round(max((r.arrived_at for r in requests), default=t0) - t0, 2),
        "agent_peak_rss_mib": round(peak_rss, 1), "gateway_peak_rss_mib": round(gateway_rss, 1),
        "requests": len(requests),
        "request_bytes_max": max(sizes, default=0),
        "request_bytes_median": int(statistics.median(sizes)) if sizes else 0,
        "request_bytes_total": sum(sizes),
    }
    record_result(numbers)

    context = f"{numbers}\nagent:\n{agent.describe()}\ngateway:\n{gateway.describe()}"
    want_trace = bigbuilds.trace_id(topology.AGENT_HOST_NAME, inv, big_build.timestamp)
    found = wholetrace.problems(spans, big_build.expected_spans, want_trace)
    assert not found, f"the build did not arrive whole: {found}\n{context}"
    assert len(spans) == big_build.expected_spans, f"{len(spans)} spans received\n{context}"
    assert numbers["request_bytes_max"] <= 4 * 1024 * 1024, context
    for proc, code in ((agent, agent_code), (gateway, gateway_code)):
        assert code == 0 and not proc.killed, f"exit status {code}\n{context}"
        assert "larger than max" not in proc.stderr_text(), context
