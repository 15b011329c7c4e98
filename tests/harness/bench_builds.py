"""What the receiver benchmarks share (tests/perf/receiver_bench.py,
tests/deploy/packaged_idle_bench.py): finished corpus builds laid out in
bulk, and the CPU time and RSS of the collector process."""

import os

from . import reference

CLK_TCK = os.sysconf("SC_CLK_TCK")


def timing_bytes(case):
    return (reference.invocation_dir(case) / "timing.json").read_bytes()


def make_builds(diag, n, data, first=0):
    for i in range(first, first + n):
        d = diag / f"20261130T{100000 + i // 1000:06d}-{10000 + i}"
        d.mkdir()
        (d / "timing.json").write_bytes(data)


def proc_stats(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu_s = (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime
    rss_kib = anon_kib = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
            elif line.startswith("RssAnon:"):
                anon_kib = int(line.split()[1])
    proc_stats.anon_kib = anon_kib  # RSS minus the binary's file-backed pages
    return cpu_s, rss_kib
