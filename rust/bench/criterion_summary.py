#!/usr/bin/env python3
"""Prints the criterion results of `benches/timing_to_otlp.rs` as a table:
median (with its 95 % interval), mean, fastest sample, and MB/s of the input
(10^6 bytes per second of the median; criterion itself prints MiB/s).

    criterion_summary.py [--criterion-dir DIR] [--json OUT]

DIR defaults to `<target>/criterion` (`$CARGO_TARGET_DIR` or `<repo>/target`).
"""

import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inputs  # noqa: E402

GROUP = "timing_to_otlp"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--criterion-dir", default=os.path.join(inputs.target_dir(), "criterion"))
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for bench in glob.glob(os.path.join(a.criterion_dir, GROUP, "*", "*", "new", "benchmark.json")):
        new = os.path.dirname(bench)
        with open(bench) as f:
            meta = json.load(f)
        with open(os.path.join(new, "estimates.json")) as f:
            est = json.load(f)
        with open(os.path.join(new, "sample.json")) as f:
            sample = json.load(f)
        nbytes = (meta.get("throughput") or {}).get("Bytes")
        med = est["median"]
        fastest = min(t / i for t, i in zip(sample["times"], sample["iters"]))
        rows.append({
            "id": meta["full_id"], "function": meta["function_id"], "rules": int(meta["value_str"]),
            "file_bytes": nbytes, "samples": len(sample["iters"]), "iterations": int(sum(sample["iters"])),
            "median_ms": med["point_estimate"] / 1e6,
            "median_ci_ms": [med["confidence_interval"]["lower_bound"] / 1e6,
                             med["confidence_interval"]["upper_bound"] / 1e6],
            "mean_ms": est["mean"]["point_estimate"] / 1e6,
            "fastest_sample_ms": fastest / 1e6,
            "mb_per_s": nbytes / (med["point_estimate"] / 1e9) / 1e6 if nbytes else None,
        })
    if not rows:
        raise SystemExit(f"no criterion results under {os.path.join(a.criterion_dir, GROUP)}: run `make bench`")
    rows.sort(key=lambda r: (r["function"], r["rules"]))
    print(f"criterion {GROUP} ({os.cpu_count()} CPUs, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])} now)")
    print("| bench | rules | file MB | samples (iters) | median ms [95% CI] | mean ms | fastest sample ms | MB/s (median) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['function']} | {r['rules']:,} | {r['file_bytes'] / 1e6:.1f} | {r['samples']} ({r['iterations']}) | "
              f"{r['median_ms']:.2f} [{r['median_ci_ms'][0]:.2f}, {r['median_ci_ms'][1]:.2f}] | {r['mean_ms']:.2f} | "
              f"{r['fastest_sample_ms']:.2f} | {r['mb_per_s']:.0f} |")
    shares = analytics_shares(rows)
    if shares:
        print()
        print("build analytics' share of process_build (issue 15 target <= 15 %): "
              "analytics + encode_with_analytics - encode, medians")
        print("| rules | process_build ms | analytics ms | attributes ms | share |")
        print("|---:|---:|---:|---:|---:|")
        for s in shares:
            print(f"| {s['rules']:,} | {s['process_build_ms']:.2f} | {s['analytics_ms']:.2f} | "
                  f"{s['attributes_ms']:.2f} | {100 * s['share']:.1f} % |")
        print("(steps measured one after the other: on a loaded machine the attributes' difference is noise; "
              "the interleaved measurement is tests/perf.rs analytics_share_of_process_build)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)
            f.write("\n")


def analytics_shares(rows):
    """Per rule count with all four functions measured: the analytics'
    cost (computing them plus writing their attributes) over process_build."""
    med = {(r["function"], r["rules"]): r["median_ms"] for r in rows}
    out = []
    for rules in sorted({r["rules"] for r in rows}):
        need = [(f, rules) for f in ("process_build", "analytics", "encode", "encode_with_analytics")]
        if not all(k in med for k in need):
            continue
        attributes = med[("encode_with_analytics", rules)] - med[("encode", rules)]
        cost = med[("analytics", rules)] + attributes
        out.append({"rules": rules, "process_build_ms": med[("process_build", rules)],
                    "analytics_ms": med[("analytics", rules)], "attributes_ms": attributes,
                    "share": cost / med[("process_build", rules)]})
    return out


if __name__ == "__main__":
    main()
