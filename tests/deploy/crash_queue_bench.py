#!/usr/bin/env python3
"""kill -9 in the middle of a backlog, with each exporter queue: how many
builds arrive, how many twice.

    make bench-crash-queue                      # or:
    PYTHONPATH=tests .venv/bin/python -m deploy.crash_queue_bench [--builds 300] [--kill-after 115]

The collector runs the packaged config (deploy/packages/config.yaml with the
packaged EnvironmentFile's variables) with file_storage checkpoints, on a
backlog of BUILDS finished builds (corpus case 01 under distinct invocation
directories, start_at: beginning). It is killed with SIGKILL once KILL_AFTER
builds reached the OTLP sink, restarted on the same state, and left to finish.
Variants, differing only in the exporter's sending_queue:

  memory           the exporter's default in-memory queue (wait_for_result: false)
  wait_for_result  the packaged config: Consume returns after the export
  file_storage     a persistent queue in the same file_storage extension

A build counts as arrived when its trace reached the sink; a duplicate is a
build whose spans arrived more than once (exact: every copy byte-identical).
"""

import argparse
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from harness import collector as collector_mod
from harness import reference
from harness.otlp_sink import OtlpSink
from harness.service import ServiceCollector, read_environment_file

REPO = Path(__file__).resolve().parents[2]
PACKAGES = REPO / "deploy" / "packages"
CASE = "01-geom-shake-cold"

VARIANTS = {
    "memory": ["--set=exporters.otlp_http.sending_queue.wait_for_result=false"],
    "wait_for_result": [],
    "file_storage": ["--set=exporters.otlp_http.sending_queue.wait_for_result=false",
                     "--set=exporters.otlp_http.sending_queue.storage=file_storage"],
}


def make_backlog(diag, builds):
    src = reference.invocation_dir(CASE) / "timing.json"
    for i in range(builds):
        d = diag / f"20261130T{100000 + i:06d}-{2000 + i}"
        d.mkdir()
        shutil.copyfile(src, d / "timing.json")


def start_collector(binary, work, state, diag, sink, extra):
    health = collector_mod.free_port()
    env = {**read_environment_file(PACKAGES / "otelcol-compiletools.env"),
           "PATH": "/usr/bin:/bin",
           "OTELCOL_COMPILETOOLS_OTLP_ENDPOINT": sink.endpoint,
           "OTELCOL_COMPILETOOLS_INCLUDE": str(diag),
           "OTELCOL_COMPILETOOLS_HOST_NAME": "crash-bench",
           "OTELCOL_COMPILETOOLS_HEALTH_ENDPOINT": f"127.0.0.1:{health}",
           "OTELCOL_COMPILETOOLS_METRICS_PORT": str(collector_mod.free_port())}
    argv = [binary, "--config", PACKAGES / "config.yaml",
            # The packaged state directory, moved into this run's scratch space.
            f"--set=extensions.file_storage.directory={state / 'file_storage'}",
            f"--set=receivers.compiletools.capture.directory={state / 'capture'}",
            "--set=receivers.compiletools.start_at=beginning", *extra]
    proc = ServiceCollector(argv, work, health, env=env, config_path=PACKAGES / "config.yaml")
    return proc.start()


def run_variant(binary, name, builds, kill_after, scratch):
    root = Path(tempfile.mkdtemp(prefix=f"crash-{name}-", dir=scratch))
    diag, state = root / "diag", root / "state"
    diag.mkdir()
    make_backlog(diag, builds)
    spans_per_build = len(reference.reference_spans(CASE))
    with OtlpSink() as sink:
        def traces():
            return {s.trace_id for _, s in sink.spans()}

        first = start_collector(binary, root / "c1", state, diag, sink, VARIANTS[name])
        try:
            sink.wait_for(lambda: len(traces()) >= kill_after, 120)
        finally:
            first.kill()
        at_kill = len(traces())

        second = start_collector(binary, root / "c2", state, diag, sink, VARIANTS[name])
        try:
            # Done when every build arrived, or when nothing came for 10 s
            # (a lost build never comes); then 5 s more for late repeats.
            deadline = time.monotonic() + 180
            while len(traces()) < builds and time.monotonic() < deadline:
                if sink.wait_quiet(10.0, 1.0):
                    break
            sink.wait_quiet(5.0, 60)
        finally:
            code = second.stop()

        copies = defaultdict(list)
        for _, s in sink.spans():
            copies[(s.trace_id, s.span_id)].append(s.SerializeToString(deterministic=True))
    arrived = {tid for tid, _ in copies}
    repeated = {k: v for k, v in copies.items() if len(v) > 1}
    exact = all(all(c == v[0] for c in v) for v in repeated.values())
    complete = sum(1 for tid in arrived
                   if sum(1 for t, _ in copies if t == tid) == spans_per_build)
    shutil.rmtree(root, ignore_errors=True)
    return {"variant": name, "builds": builds, "at_kill": at_kill, "arrived": len(arrived),
            "complete": complete, "lost": builds - len(arrived),
            "duplicated_builds": len({tid for tid, _ in repeated}), "exact": exact,
            "second_exit": code}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builds", type=int, default=300)
    ap.add_argument("--kill-after", type=int, default=115)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    binary = collector_mod.binary_path()
    rows = []
    with tempfile.TemporaryDirectory(prefix="crash-queue-bench-") as scratch:
        for _ in range(args.rounds):
            for name in args.variants.split(","):
                row = run_variant(binary, name, args.builds, args.kill_after, Path(scratch))
                rows.append(row)
                print(f"{row['variant']:>16}: kill -9 after {row['at_kill']} builds at the sink; "
                      f"{row['arrived']}/{row['builds']} arrived ({row['complete']} complete), "
                      f"{row['lost']} lost, {row['duplicated_builds']} sent twice "
                      f"({'all exact' if row['exact'] else 'NOT exact'}); restart exit {row['second_exit']}",
                      flush=True)
    return 0 if all(r["exact"] and r["second_exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
