"""One build through the standard agent -> gateway topology, and whether
it arrived whole: the shared run of test_agent_gateway.py (the large
generated build) and test_time_trace_hop.py (the same build with clang
traces beside its objects).

agent (our receiver -> otlp_grpc, wait_for_result) -> gateway (otlp
receiver at its defaults: 4 MiB per gRPC message -> otlp_http) -> sink.
"""

import statistics
import time

from harness.otlp_sink import OtlpSink

from . import bigbuilds, topology, wholetrace

# Builds are added this long after both collectors are healthy (the
# receiver's first poll has run: the build is new, not pre-existing).
STARTUP_GRACE_S = 1.0
QUIET_S = 3.0
MAX_GRPC_MESSAGE = 4 * 1024 * 1024   # the gateway's otlp receiver default


def arrival_timeout_s(rules):
    return 120 + rules / 2000  # 100k: 170 s, 1M: 620 s; seconds are expected


class Run:
    """What one build's trip gave: the numbers, the spans at the sink, the
    processes (stopped) and their exit codes."""

    def __init__(self, build, inv, numbers, spans, agent, agent_code, gateway, gateway_code):
        self.build, self.inv, self.numbers, self.spans = build, inv, numbers, spans
        self.agent, self.agent_code, self.gateway, self.gateway_code = agent, agent_code, gateway, gateway_code

    def context(self):
        return f"{self.numbers}\nagent:\n{self.agent.describe()}\ngateway:\n{self.gateway.describe()}"

    def assert_whole(self):
        context = self.context()
        want_trace = bigbuilds.trace_id(topology.AGENT_HOST_NAME, self.inv, self.build.timestamp)
        found = wholetrace.problems(self.spans, self.build.expected_spans, want_trace)
        assert not found, f"the build did not arrive whole: {found}\n{context}"
        assert len(self.spans) == self.build.expected_spans, f"{len(self.spans)} spans received\n{context}"
        assert self.numbers["request_bytes_max"] <= MAX_GRPC_MESSAGE, context
        for proc, code in ((self.agent, self.agent_code), (self.gateway, self.gateway_code)):
            assert code == 0 and not proc.killed, f"exit status {code}\n{context}"
            assert "larger than max" not in proc.stderr_text(), context


def through_default_grpc_hop(collector_binary, build, diag, tmp_path, summarize=wholetrace.summarize_request):
    """Stages `build` (rules, timing, expected_spans, timestamp,
    invocation_id), runs the gateway and the agent, renames the build into
    `diag` and waits until its spans arrived (or the agent gave up).
    `summarize`: the sink's hook; it must give wholetrace.RequestSummary."""
    staged = bigbuilds.stage(build, diag)
    with OtlpSink(summarize=summarize) as sink:
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
                sink.wait_for(lambda: span_total() >= build.expected_spans or topology.gave_up(agent),
                              arrival_timeout_s(build.rules))
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
        "rules": build.rules, "spans_expected": build.expected_spans, "spans_received": len(spans),
        "timing_json_bytes": build.timing.stat().st_size,
        "rename_to_last_span_s": round(max((r.arrived_at for r in requests), default=t0) - t0, 2),
        "agent_peak_rss_mib": round(peak_rss, 1), "gateway_peak_rss_mib": round(gateway_rss, 1),
        "requests": len(requests),
        "request_bytes_max": max(sizes, default=0),
        "request_bytes_median": int(statistics.median(sizes)) if sizes else 0,
        "request_bytes_total": sum(sizes),
    }
    return Run(build, inv, numbers, spans, agent, agent_code, gateway, gateway_code)
