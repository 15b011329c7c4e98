#!/usr/bin/env python3
"""The fault campaign of issue 13 against the real collector.

    make chaos              # full: 1,000-build kill -9 storm with 10 kills, 60 s outage,
                            # 1,000 unreadable builds, state disk full and read-only
    make test-chaos-fast    # the subset `make test` runs (pytest tests/chaos)
    PYTHONPATH=tests .venv/bin/python -m chaos.chaos [--fast] [--only kill,outage,perm,disk,identity,hostile,shared]

Prints the table fault x builds sent x delivered x lost x duplicates x
warnings and writes it to _build/chaos/results.md (and .json).
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

from harness import packaged

from . import scenarios, shared_host, shared_host_links

FULL = {"kill": dict(backlog=1000, added=200, kills=10), "outage": dict(backlog=300, down_s=60.0),
        "hostile": dict(good=20), "perm": dict(unreadable=1000, good=20),
        "disk": dict(backlog=300, later=50)}
# Issue 22's shared-host faults (shared_host.py).
SHARED_FULL = {"fd": dict(files=25000, nofile=4096), "sparse": dict(sparse_gib=10, tmpfs="2g"),
               "bigreq": dict(builds=6, blocks=1000), "many": dict(builds=2000, statslog_mib=4), "graph_mib": 250}
SHARED_FAST = {"fd": dict(files=3000, nofile=1024), "sparse": dict(sparse_gib=4, tmpfs="1g"),
               "bigreq": dict(builds=6, blocks=1000), "many": dict(builds=300, statslog_mib=1), "graph_mib": 128}
FAST = {"kill": dict(backlog=120, added=30, kills=3), "outage": dict(backlog=60, down_s=10.0),
        "hostile": dict(good=5), "perm": dict(unreadable=100, good=5),
        "disk": dict(backlog=40, later=10)}


def hostile_rows(h):
    rows = [scenarios.row(f"hostile: {c['case']}", 1, int(c["sent"]), 0, 0, c["warnings"],
                          f"expect {c['expect']}") for c in h["cases"]]
    rows.append(scenarios.row(f"hostile: good builds beside {len(h['cases'])} cases", h["good_sent"],
                              h["good_delivered"], h["good_sent"] - h["good_delivered"], 0, 0,
                              f"peak RSS {h['peak_rss_kib']} KiB; alive {h['alive']}; exit {h['exit']}"))
    return rows


def permission_rows(p):
    pp = p["per_path"]
    most = max(pp.values())
    notes = (f"log lines per poll once seen: {p['steady_lines_per_poll']:.2f}; most warnings for one path: {most}; "
             f"closed parent: {pp['closed parent']}, CAS shard: {pp['CAS shard']}; "
             f"path_problems {p['path_problems']}, parse_failures {p['parse_failures']}")
    fixed = (f"delivered {p['fix_to_delivery_s']:g} s after the fix (retried on the retry_on_failure backoff); "
             "warnings: those of the row above, none new")
    return [scenarios.row(f"non-root: {p['unreadable']} unreadable builds (timing.json / dir 000), "
                          "parent and CAS shard 000", p["good_sent"], p["good_delivered"],
                          p["good_sent"] - p["good_delivered"], 0, p["total_warnings"], notes),
            scenarios.row(f"non-root: the {p['unreadable']} unreadable builds' permissions fixed",
                          p["unreadable"], p["bad_delivered_after_fix"], p["unreadable"] - p["bad_delivered_after_fix"],
                          p["duplicates_after_fix"], 0, fixed)]


def shared_host_table(rows):
    head = ("| fault | builds sent | delivered | lost | foreign bytes read | peak RSS KiB | peak fds | notes |\n"
            "|---|---|---|---|---|---|---|---|\n")
    return head + "".join(
        f"| {r['fault']} | {r['sent']} | {r['delivered']} | {r['lost']} | {r['foreign_bytes']} | "
        f"{r['peak_rss_kib'] if r['peak_rss_kib'] is not None else '-'} | "
        f"{r['peak_fds'] if r['peak_fds'] is not None else '-'} | {r['notes']} |\n" for r in rows)


def write_shared_results(rows, name):
    out = packaged.REPO / "_build" / "chaos"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(shared_host_table(rows))
    (out / f"{name}.json").write_text(json.dumps(rows, indent=1, default=str))
    return out / f"{name}.md"


def run_shared(binary, sizes, scratch):
    """Every scenario of shared_host.py, one row each."""
    return [shared_host.fd_starvation(binary, scratch, **sizes["fd"]),
            shared_host.swapped_dir(binary, scratch, "invocation"),
            shared_host.swapped_dir(binary, scratch, "bindir"),
            shared_host.sparse_copy(binary, scratch, **sizes["sparse"]),
            shared_host.big_requests(binary, scratch, **sizes["bigreq"]),
            shared_host.many_builds_shutdown(binary, scratch, **sizes["many"]),
            shared_host.recreated_dir(binary, scratch),
            shared_host.graph_memory(binary, scratch, sizes["graph_mib"], "continuations"),
            shared_host.graph_memory(binary, scratch, sizes["graph_mib"], "nuls"),
            shared_host.abandoned_capture(binary, scratch),
            shared_host.validation(binary, scratch),
            shared_host_links.swapped_git(binary, scratch, "dotgit"),
            shared_host_links.swapped_git(binary, scratch, "refs"),
            shared_host_links.swapped_cas_store(binary, scratch),
            shared_host_links.foreign_time_traces(binary, scratch)]


def hostile_mismatches(h):
    """Cases whose outcome is not the one the table expects."""
    bad = []
    for c in h["cases"]:
        ok = {"refused": not c["sent"] and c["warnings"] >= 1,
              "sent": c["sent"] and c["warnings"] >= 1,
              "read": c["sent"],
              "ignored": not c["sent"]}[c["expect"]]
        if not ok:
            bad.append(c)
    return bad


def table(rows):
    head = "| fault | builds sent | delivered | lost | duplicates | warnings | notes |\n|---|---|---|---|---|---|---|\n"
    return head + "".join(
        f"| {r['fault']} | {r['sent']} | {r['delivered']} | {r['lost']} | {r['duplicates']} | {r['warnings']} | {r['notes']} |\n"
        for r in rows)


def write_results(rows, name):
    out = packaged.REPO / "_build" / "chaos"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(table(rows))
    (out / f"{name}.json").write_text(json.dumps(rows, indent=1))
    return out / f"{name}.md"


def run(binary, sizes, only, scratch):
    rows, hostile = [], None
    if "kill" in only:
        rows.append(scenarios.kill_storm(binary, scratch, **sizes["kill"]))
    if "outage" in only:
        for variant in ("packaged", "memory"):
            rows.append(scenarios.outage(binary, scratch, variant=variant, **sizes["outage"]))
    if "perm" in only:
        rows += permission_rows(scenarios.permissions(binary, scratch, **sizes["perm"]))
    if "disk" in only:
        for mode in ("full", "ro"):
            rows.append(scenarios.disk_fault(binary, scratch, mode=mode, **sizes["disk"]))
    if "identity" in only:
        rows += scenarios.identity(binary, scratch)
    if "hostile" in only:
        hostile = scenarios.hostile(binary, scratch, **sizes["hostile"])
        rows += hostile_rows(hostile)
    return rows, hostile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fast", action="store_true")
    ap.add_argument("--only", default="kill,outage,perm,disk,identity,hostile,shared")
    args = ap.parse_args()
    binary = packaged.collector_mod.binary_path()
    only = args.only.split(",")
    with tempfile.TemporaryDirectory(prefix="chaos-") as scratch:
        rows, hostile = run(binary, FAST if args.fast else FULL, only, Path(scratch))
        shared = run_shared(binary, SHARED_FAST if args.fast else SHARED_FULL, Path(scratch)) if "shared" in only else []
    print(table(rows))
    print(f"written to {write_results(rows, 'fast' if args.fast else 'results')}")
    if shared:
        print(shared_host_table(shared))
        print(f"written to {write_shared_results(shared, 'shared-host-fast' if args.fast else 'shared-host')}")
    if hostile is not None:
        for c in hostile_mismatches(hostile):
            print(f"UNEXPECTED: {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
