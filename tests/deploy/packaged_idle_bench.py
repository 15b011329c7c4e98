#!/usr/bin/env python3
"""Idle cost of the packaged service: RSS and CPU with N finished builds watched.

    make bench-packaged-idle                    # or:
    PYTHONPATH=tests .venv/bin/python -m deploy.packaged_idle_bench [--builds 10000] [--window 60]

The collector runs exactly as the package runs it — deploy/packages/config.yaml
with the packaged EnvironmentFile's values (poll_interval 5 s, start_at end,
file_storage checkpoints, the otlp_http exporter with wait_for_result) —
with only the include glob, the endpoint, the ports and the state directory
moved into scratch space. N builds (corpus case 02, a no-op build) exist
before the start; the first poll records them as seen. After a settling
period, RSS is read and CPU is summed over the window.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from harness import bench_builds
from harness import collector as collector_mod
from harness.otlp_sink import OtlpSink
from harness.service import ServiceCollector, read_environment_file

REPO = Path(__file__).resolve().parents[2]
PACKAGES = REPO / "deploy" / "packages"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builds", type=int, default=10_000)
    ap.add_argument("--settle", type=float, default=20.0, help="seconds after start before measuring")
    ap.add_argument("--window", type=float, default=60.0, help="seconds of CPU measurement")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="packaged-idle-") as t, OtlpSink() as sink:
        tmp = Path(t)
        diag = tmp / "diag"
        diag.mkdir()
        bench_builds.make_builds(diag, args.builds, bench_builds.timing_bytes("02-geom-shake-noop"))
        health = collector_mod.free_port()
        env = {**read_environment_file(PACKAGES / "otelcol-compiletools.env"),
               "PATH": "/usr/bin:/bin",
               "OTELCOL_COMPILETOOLS_OTLP_ENDPOINT": sink.endpoint,
               "OTELCOL_COMPILETOOLS_INCLUDE": str(diag),
               "OTELCOL_COMPILETOOLS_HEALTH_ENDPOINT": f"127.0.0.1:{health}",
               "OTELCOL_COMPILETOOLS_METRICS_PORT": str(collector_mod.free_port())}
        argv = [collector_mod.binary_path(), "--config", PACKAGES / "config.yaml",
                f"--set=extensions.file_storage.directory={tmp / 'state' / 'file_storage'}",
                f"--set=receivers.compiletools.capture.directory={tmp / 'state' / 'capture'}"]
        c = ServiceCollector(argv, tmp / "collector", health, env=env).start()
        try:
            time.sleep(args.settle)
            cpu0, _ = bench_builds.proc_stats(c.proc.pid)
            time.sleep(args.window)
            cpu1, rss = bench_builds.proc_stats(c.proc.pid)
            anon = bench_builds.proc_stats.anon_kib
        finally:
            c.stop()
        sent = len(sink.requests())
    print(f"packaged idle: {args.builds} finished builds watched (poll_interval 5s, file_storage): "
          f"RSS {rss / 1024:.1f} MiB (anonymous {anon / 1024:.1f} MiB), "
          f"CPU {100 * (cpu1 - cpu0) / args.window:.2f}% of one core over {args.window:.0f} s; "
          f"{sent} export requests (start_at end: 0 expected)")
    return 0 if sent == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
