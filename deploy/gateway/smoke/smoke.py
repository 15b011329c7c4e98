#!/usr/bin/env python3
"""Gateway smoke on loopback (issue 26):

    agent (otelcol-compiletools, N copies of a corpus build)
      -> otlp_http -> 1 lb gateway (config-lb.yaml, static resolver)
      -> otlp_grpc, by trace id -> K backend gateways (config-backend.yaml)
      -> otlp_http (JSON) -> the smoke's sink, which notes the gateway

Checks that every build's trace landed whole (each span once, one root, no
orphan) on exactly one backend gateway, and reports how the traces spread,
the wall time and each process's CPU and peak RSS. With --load-builds it
then sends that many more builds straight to the lb gateway (loadgen.py)
and reports what it absorbed.

Every loop is bounded by --timeout; every process listens on 127.0.0.1 and
is stopped by its pid. Exit status 0 only if every check passed.
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import loadgen  # noqa: E402
import wholeness  # noqa: E402
from otlp_json_sink import GATEWAY_HEADER, Sink  # noqa: E402
from processes import Process, free_port  # noqa: E402

GATEWAY_DIR = HERE.parent
HOST_NAME = "gateway-smoke-host"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gateway", required=True, help="the otelcol-gateway binary")
    p.add_argument("--agent", required=True, help="the otelcol-compiletools binary")
    p.add_argument("--dump", required=True, help="the ct-otel-dump binary (the builds' expected spans)")
    p.add_argument("--case", required=True, help="a corpus case directory (its diagnostics/ is copied)")
    p.add_argument("--workdir", required=True, help="scratch directory (emptied first)")
    p.add_argument("--builds", type=int, default=30, help="copies of the build the agent sends")
    p.add_argument("--backends", type=int, default=3)
    p.add_argument("--request-spans", type=int, default=8,
                   help="the agent's max_request_spans: small, so that each build is several "
                        "requests that only trace-id routing keeps together")
    p.add_argument("--lb-config", default=str(GATEWAY_DIR / "config-lb.yaml"),
                   help="the lb gateway's config (another one shows the smoke failing)")
    p.add_argument("--timeout", type=float, default=180, help="seconds to wait for delivery")
    p.add_argument("--load-builds", type=int, default=0, help="builds loadgen sends after the smoke (0: none)")
    p.add_argument("--load-seconds", type=float, default=60, help="loadgen's time limit")
    p.add_argument("--load-senders", type=int, default=4, help="loadgen's concurrent HTTP connections")
    p.add_argument("--load-request-spans", type=int, default=128,
                   help="max_request_spans of the agent whose requests loadgen replays (128: the default)")
    p.add_argument("--kill", choices=("lb", "backend"),
                   help="kill -9 the lb gateway or one backend once a quarter of the spans arrived, "
                        "restart it 2 s later on the same ports; every build must still arrive whole")
    p.add_argument("--report", help="write the report (JSON) here too")
    return p.parse_args()


def lay_out_builds(case, diag, count, first=0):
    """`count` copies of the case's invocation directory under `diag`,
    named like ct-cake's (timestamp-pid, pids from 30000 + `first`); each
    path gives its own trace id."""
    sources = sorted(p for p in (Path(case) / "diagnostics").iterdir() if (p / "timing.json").exists())
    if not sources:
        raise SystemExit(f"no finished build under {case}/diagnostics")
    stamp = sources[0].name.split("-")[0]
    builds = []
    for i in range(count):
        target = diag / f"{stamp}-{30000 + first + i}"
        shutil.copytree(sources[0], target)  # copy2: keeps modification times
        builds.append(target)
    return builds


def expected_spans(dump, builds):
    """trace id -> set of span ids, as the agent will send each build."""
    expected = {}
    for build in builds:
        out = subprocess.run([dump, "-host-name", HOST_NAME, "-signals", "traces", str(build)],
                             check=True, capture_output=True, text=True, timeout=60).stdout
        for line in out.splitlines():
            doc = json.loads(line)
            for rs in doc.get("resourceSpans") or []:
                for ss in rs.get("scopeSpans") or []:
                    for span in ss["spans"]:
                        expected.setdefault(span["traceId"], set()).add(span["spanId"])
    return expected


def backend_gateway(binary, workdir, name, sink, grpc_address=None):
    """A backend exporting to `sink`, its OTLP/gRPC on `grpc_address`
    (host:port; default a free port of 127.0.0.1)."""
    grpc_address = grpc_address or f"127.0.0.1:{free_port()}"
    health = free_port()
    env = {
        "GATEWAY_OTLP_GRPC_ENDPOINT": grpc_address,
        "GATEWAY_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{free_port()}",
        "GATEWAY_HEALTH_ENDPOINT": f"127.0.0.1:{health}",
        "GATEWAY_METRICS_PORT": str(free_port()),
        "GATEWAY_EXPORT_ENDPOINT": sink.endpoint,
        "GATEWAY_EXPORT_ENCODING": "json",
        "GATEWAY_EXPORT_HEADERS": json.dumps({GATEWAY_HEADER: name}),
    }
    argv = [binary, "--config", GATEWAY_DIR / "config-backend.yaml"]
    return Process(name, argv, workdir, env, health), grpc_address


def lb_gateway(binary, workdir, backends, config, resolver=None, wrapper=()):
    """The lb in front of `backends` (static resolver) or with `resolver`
    (the load_balancing exporter's resolver block); `wrapper` prefixes its
    command line."""
    http, health, metrics = free_port(), free_port(), free_port()
    env = {
        "GATEWAY_OTLP_GRPC_ENDPOINT": f"127.0.0.1:{free_port()}",
        "GATEWAY_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{http}",
        "GATEWAY_HEALTH_ENDPOINT": f"127.0.0.1:{health}",
        "GATEWAY_METRICS_PORT": str(metrics),
        "GATEWAY_BACKENDS": json.dumps(resolver or {"static": {"hostnames": backends}}),
    }
    argv = [*wrapper, binary, "--config", config]
    return Process("lb", argv, workdir, env, health), f"http://127.0.0.1:{http}", metrics


def agent(binary, workdir, diag, lb_http, request_spans, name="agent", signals=("traces", "metrics", "logs"),
          **exporter_extra):
    """The agent as packaged (otlp_http, wait_for_result), on `diag`."""
    health = free_port()
    exporter = {"endpoint": lb_http, "sending_queue": {"wait_for_result": True},
                "retry_on_failure": {"initial_interval": "200ms", "max_interval": "2s", "max_elapsed_time": "60s"},
                **exporter_extra}
    config = {
        "receivers": {"compiletools": {"include": [str(diag)], "start_at": "beginning",
                                       "poll_interval": "200ms", "host_name": HOST_NAME,
                                       "max_request_spans": request_spans}},
        "exporters": {"otlp_http": exporter},
        "extensions": {"health_check": {"endpoint": f"127.0.0.1:{health}"}},
        "service": {
            "extensions": ["health_check"],
            "telemetry": {"metrics": {"level": "none"}},
            "pipelines": {sig: {"receivers": ["compiletools"], "exporters": ["otlp_http"]}
                          for sig in signals},
        },
    }
    path = Path(workdir) / f"{name}.yaml"
    path.write_text(json.dumps(config, indent=2) + "\n")  # JSON is YAML
    return Process(name, [binary, "--config", path], workdir, {}, health)


def capture_agent_requests(args, work):
    """The agent's own protobuf trace requests of one copy of the build,
    uncompressed, for loadgen: (bodies, trace id hex, span ids)."""
    diag = work / "capture-diag"
    diag.mkdir()
    builds = lay_out_builds(args.case, diag, 1)
    (trace_id, span_ids), = expected_spans(args.dump, builds).items()
    requests = -(-len(span_ids) // args.load_request_spans)
    sink = Sink(0, capture=True).start()
    proc = agent(args.agent, work, diag, sink.endpoint, args.load_request_spans, name="capture-agent",
                 signals=("traces",), compression="none")
    try:
        proc.start()
        if not wait_until(lambda: len(sink.tally.captured) >= requests, args.timeout, [proc]):
            raise RuntimeError(f"the agent sent {len(sink.tally.captured)} of {requests} requests")
    finally:
        proc.stop()
        sink.stop()
    kinds = {ctype for ctype, _body in sink.tally.captured}
    if kinds != {"application/x-protobuf"}:
        raise RuntimeError(f"captured {kinds}, want application/x-protobuf")
    return [body for _ctype, body in sink.tally.captured[:requests]], trace_id, span_ids


def crash_and_restart(args, victim, expected, sink, alive):
    """kill -9 `victim` once a quarter of the expected spans arrived, then
    start it again with the same command line and ports."""
    want = sum(len(v) for v in expected.values()) // 4
    others = [p for p in alive if p is not victim]
    if not wait_until(lambda: sink.tally.span_count() >= want, args.timeout, others):
        raise RuntimeError("a quarter of the spans never arrived; nothing to kill into")
    at = sink.tally.span_count()
    victim.kill()
    time.sleep(2)
    victim.start()
    return {"killed": victim.name, "spans_at_sink_when_killed": at,
            "spans_expected": sum(len(v) for v in expected.values())}


def measure(processes):
    return {p.name: {"cpu_s": round(p.cpu_seconds(), 2), "peak_rss_mib": round(p.peak_rss_mib(), 1)}
            for p in processes if p.running()}


def wait_until(predicate, timeout, alive):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        for p in alive:
            if not p.running():
                raise RuntimeError(f"{p.name} exited early:\n{p.tail()}")
        time.sleep(0.25)
    return predicate()


def fresh_workdir(path):
    """The emptied scratch directory and its diagnostics parent `diag/`."""
    work = Path(path).resolve()
    shutil.rmtree(work, ignore_errors=True)
    diag = work / "diag"
    diag.mkdir(parents=True)
    return work, diag


def write_report(report, path=None):
    """Print the report (JSON), and write it to `path` too."""
    text = json.dumps(report, indent=2)
    print(text)
    if path:
        Path(path).write_text(text + "\n")


def main():
    args = parse_args()
    work, diag = fresh_workdir(args.workdir)
    builds = lay_out_builds(args.case, diag, args.builds)
    expected = expected_spans(args.dump, builds)
    report = {"builds": len(builds), "spans_per_build": sorted({len(v) for v in expected.values()}),
              "max_request_spans": args.request_spans, "backends": args.backends}

    sink = Sink(0).start()
    started = []
    try:
        backends = []
        for i in range(args.backends):
            proc, grpc = backend_gateway(args.gateway, work, f"b{i + 1}", sink)
            started.append(proc.start())
            backends.append(grpc)
        lb, lb_http, _lb_metrics = lb_gateway(args.gateway, work, backends, args.lb_config)
        started.append(lb.start())
        gateways = list(started)

        t0 = time.monotonic()
        cpu0 = {p.name: p.cpu_seconds() for p in gateways}
        ag = agent(args.agent, work, diag, lb_http, args.request_spans)
        started.append(ag.start())
        if args.kill:
            report["kill"] = crash_and_restart(args, lb if args.kill == "lb" else gateways[0], expected, sink, started)
        done = wait_until(lambda: wholeness.complete(expected, sink.tally.traces_by_gateway()),
                          args.timeout, started)
        elapsed = time.monotonic() - t0
        arrived = sink.tally.traces_by_gateway()
        problems = wholeness.trace_problems(expected, arrived, duplicates_allowed=bool(args.kill))
        if not done:
            problems.insert(0, f"not every span arrived within {args.timeout:.0f} s")
        report["smoke"] = {
            "seconds_agent_start_to_last_span": round(elapsed, 2),
            "traces_per_backend": {gw: len(t) for gw, t in sorted(arrived.items())},
            "requests_per_backend": {gw: dict(r) for gw, r in sorted(sink.tally.requests.items())},
            "gateway_cpu_s": {p.name: round(p.cpu_seconds() - cpu0[p.name], 2) for p in gateways},
            "processes": measure(started),
            "duplicate_spans": wholeness.duplicate_spans(arrived),
            "problems": problems,
        }
        ag.stop()

        if args.load_builds and not problems:
            bodies, trace_id, span_ids = capture_agent_requests(args, work)
            report["load"] = loadgen.run(
                lb_http, bodies, trace_id, span_ids, args.load_builds, args.load_seconds,
                args.load_senders, sink, gateways, args.timeout)
            problems.extend(report["load"].pop("problems"))
    finally:
        for p in reversed(started):
            p.stop()
        sink.stop()

    write_report(report, args.report)
    all_problems = report.get("smoke", {}).get("problems", []) + report.get("load", {}).get("problems", [])
    print("gateway smoke:", "passed" if not all_problems else f"FAILED ({len(all_problems)} problems)")
    return 0 if not all_problems else 1


if __name__ == "__main__":
    sys.exit(main())
