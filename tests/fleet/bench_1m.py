"""The largest build through the gateway tier at its default settings
(issue 26): one generated N-rule build (default 1,000,000) from an agent
through the lb and backend gateways to an OTLP sink, once, measured.

    agent (limits raised for the build, otlp_grpc, wait_for_result)
      -> lb (deploy/gateway/config-lb.yaml, static ring of BACKENDS)
      -> backends (config-backend.yaml, otlp_http proto to the sink)
      -> OtlpSink keeping (trace, span, parent) triples

Every gateway runs its shipped config with only ports and endpoints set
(the fleet's gateways.py), so "default gateway settings" is what a site
gets. Prints one JSON report: wall time from the build's rename to its last
span, CPU seconds and peak RSS of each process, requests and spans
delivered, and whether the trace is whole (every span once, one root,
every parent present). Exit status 1 if it is not.

    PYTHONPATH=tests python -m fleet.bench_1m --agent BIN --gateway BIN [--rules N]
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from harness.bench_builds import proc_stats
from harness.otlp_sink import OtlpSink
from pipeline import bigbuilds, topology, wholetrace

from . import gateways

STARTUP_GRACE_S = 1.0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agent", required=True, help="otelcol-compiletools")
    p.add_argument("--gateway", required=True, help="otelcol-gateway")
    p.add_argument("--rules", type=int, default=1_000_000)
    p.add_argument("--backends", type=int, default=3)
    p.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the last span")
    p.add_argument("--workdir", help="scratch directory (default: a temporary one)")
    p.add_argument("--report", help="write the report (JSON) here too")
    return p.parse_args()


def usage(pid):
    """CPU seconds and peak RSS of a live process."""
    cpu, _ = proc_stats(pid)
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return {"cpu_s": round(cpu, 1), "peak_rss_mib": round(int(line.split()[1]) / 1024, 1)}
    raise RuntimeError(f"no VmHWM for {pid}")


def run(args, work):
    build = bigbuilds.generated(args.rules)
    diag = work / "diag"
    diag.mkdir(parents=True)
    staged = bigbuilds.stage(build, diag)
    report = {"rules": build.rules, "spans_expected": build.expected_spans,
              "timing_json_bytes": build.timing.stat().st_size, "backends": args.backends}
    with OtlpSink(summarize=wholetrace.summarize_request) as sink:
        backends = [gateways.Gateway(args.gateway, work, f"backend{i + 1}", gateways.BACKEND_CONFIG,
                                     {"GATEWAY_EXPORT_ENDPOINT": sink.endpoint})
                    for i in range(args.backends)]
        lb = gateways.lb(args.gateway, work, backends)
        agent = topology.agent(args.agent, work / "agent", [diag], lb.grpc_endpoint)
        running = []
        try:
            for g in backends + [lb]:
                running.append(g.start())
            agent.start()
            time.sleep(STARTUP_GRACE_S)
            t0 = time.monotonic()
            inv = bigbuilds.publish(staged, diag)
            span_total = lambda: sum(len(r.message.spans) for r in sink.requests("traces"))  # noqa: E731
            sink.wait_for(lambda: span_total() >= build.expected_spans or topology.gave_up(agent), args.timeout)
            sink.wait_quiet(3.0, 60)
            requests = sink.requests("traces")
            report["rename_to_last_span_s"] = round(max((r.arrived_at for r in requests), default=t0) - t0, 1)
            procs = {"agent": agent.proc.pid, "lb": lb.proc.proc.pid,
                     **{b.name: b.proc.proc.pid for b in backends}}
            report["processes"] = {name: usage(pid) for name, pid in procs.items()}
        finally:
            agent.stop()
            for g in reversed(running):
                g.stop()
    spans = [s for r in requests for s in r.message.spans]
    report["requests"] = len(requests)
    report["spans_received"] = len(spans)
    report["request_bytes_max"] = max((r.message.bytes for r in requests), default=0)
    want = bigbuilds.trace_id(topology.AGENT_HOST_NAME, inv, build.timestamp)
    report["problems"] = wholetrace.problems(spans, build.expected_spans, want)
    return report


def main():
    args = parse_args()
    # The gateways run from / (ServiceCollector): absolute paths.
    args.agent, args.gateway = (str(Path(b).resolve()) for b in (args.agent, args.gateway))
    with tempfile.TemporaryDirectory(prefix="bench-fleet-1m-") as tmp:
        work = Path(args.workdir or tmp).resolve()
        report = run(args, work)
    text = json.dumps(report, indent=2)
    print(text)
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(text + "\n")
    print("bench-fleet-1m:", "whole" if not report["problems"] else f"NOT WHOLE: {report['problems']}")
    return 0 if not report["problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
