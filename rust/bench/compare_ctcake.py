#!/usr/bin/env python3
"""Side by side: ct-cake 13.1.4's own timing.json -> OTLP export path against
ours (`process_build`, traces only), on the same synthetic files.

    compare_ctcake.py [--rules 1000,10000,100000] [--runs 10] [--memory-only]
                      [--skip-ctcake] [--stream SPANS] [--venv DIR] [--out FILE]

1. A virtualenv (default `<target>/bench-venv`) with
   `pip install 'compiletools[otel]==13.1.4'`, made once.
2. The inputs through `inputs.py` (gen_timing.py, validated with
   compiletools' own BuildTimer the first time, checksums checked).
3. ct-cake, exactly as corpus/perf.md says: from the corpus directory,
   `CT_VENV=$VENV $VENV/bin/python scripts/bench_export.py --files ... --out ...`
   (memory and http mode, best of 3 per row, peak RSS of each child).
   `--memory-only` runs just the memory rows, each the very child command
   the driver runs for them (`/usr/bin/time -v $VENV/bin/python
   scripts/bench_export.py --one FILE --mode memory --repeat 3`).
4. Ours: `cargo build --release --example timing_once`, then per file one
   run under `/usr/bin/time -v` (peak RSS of a process that handles the file
   once) and one `--runs N` run (best and median of N in one process).
   With `--stream SPANS`, ours is the receiver's path instead: `open_build`
   and every chunk of at most SPANS spans (`timing_once --stream SPANS`).
5. A table, and all numbers as JSON (`<target>/bench-results/compare.json`).

Every number is wall time on this machine now: run on an otherwise idle
machine, or read them with the load averages printed alongside.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import inputs  # noqa: E402  (rust/bench/inputs.py)

CT_VERSION = "13.1.4"
RUST_DIR = os.path.dirname(HERE)
TIME = "/usr/bin/time"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def max_rss_kib(stderr):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(m.group(1)) if m else None


def loadavg():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def ensure_venv(venv):
    marker = os.path.join(venv, f".compiletools-{CT_VERSION}")
    py = os.path.join(venv, "bin", "python")
    if os.path.exists(marker) and os.path.exists(py):
        return py
    log(f"venv: {venv} with compiletools[otel]=={CT_VERSION}")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    f"compiletools[otel]=={CT_VERSION}"], check=True)
    open(marker, "w").close()
    return py


def ctcake_driver(py, venv, files, out):
    """perf.md's exact procedure: both modes, one child per row."""
    corpus = inputs.corpus_dir()
    env = dict(os.environ, CT_VENV=venv)
    cmd = [py, "scripts/bench_export.py", "--files", *files, "--out", out]
    log("ct-cake: (cd " + corpus + " && CT_VENV=" + venv + " " + " ".join(cmd) + ")")
    subprocess.run(cmd, cwd=corpus, env=env, check=True, stdout=sys.stderr)
    with open(out) as f:
        return json.load(f)


def ctcake_memory_only(py, venv, files):
    """The driver's memory rows only: the same child command, the same row."""
    corpus = inputs.corpus_dir()
    env = dict(os.environ, CT_VENV=venv)
    rows = []
    for path in files:
        cmd = [TIME, "-v", py, "scripts/bench_export.py", "--one", path, "--mode", "memory", "--repeat", "3"]
        log("ct-cake: (cd " + corpus + " && " + " ".join(cmd) + ")")
        p = subprocess.run(cmd, cwd=corpus, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            log(p.stdout + p.stderr)
            raise SystemExit(f"ct-cake child failed for {path}")
        runs = json.loads(p.stdout.strip().splitlines()[-1])
        best = min(runs, key=lambda r: r["total_s"])
        rows.append({
            "file": os.path.basename(path), "mode": "memory",
            "best_total_s": round(best["total_s"], 3),
            "best_load_s": round(min(r["load_s"] for r in runs), 3),
            "best_export_s": round(min(r["export_s"] for r in runs), 3),
            "all_total_s": [round(r["total_s"], 3) for r in runs],
            "peak_rss_mib": round(max_rss_kib(p.stderr) / 1024, 1),
            "spans_in_memory": runs[0]["spans"],
        })
    return rows


def build_example():
    cmd = ["cargo", "build", "--release", "--locked", "-p", "compiletools-core", "--example", "timing_once",
           "--message-format=json-render-diagnostics"]
    log("ours: " + " ".join(cmd[:-1]))
    p = subprocess.run(cmd, cwd=RUST_DIR, check=True, stdout=subprocess.PIPE, text=True)
    exe = None
    for line in p.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("target", {}).get("name") == "timing_once":
            exe = msg.get("executable") or exe
    if not exe:
        raise SystemExit("cargo did not report the timing_once executable")
    return exe


def ours(exe, inv_dir, runs, stream=None):
    mode = ["--stream", str(stream)] if stream else []
    p = subprocess.run([TIME, "-v", exe, inv_dir, "--runs", "1"] + mode, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"timing_once failed on {inv_dir}:\n{p.stderr}")
    once = json.loads(p.stdout.strip().splitlines()[-1])
    rss_kib = max_rss_kib(p.stderr)
    p = subprocess.run([exe, inv_dir, "--runs", str(runs)] + mode, capture_output=True, text=True, check=True)
    many = json.loads(p.stdout.strip().splitlines()[-1])
    return {
        "first_call_ms": once["best_ms"],
        "best_ms": many["best_ms"],
        "median_ms": many["median_ms"],
        "runs_ms": many["runs_ms"],
        "spans": many["spans"],
        "otlp_bytes": many["otlp_bytes"],
        "peak_rss_kib": rss_kib,
    }


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", default="1000,10000,100000")
    ap.add_argument("--runs", type=int, default=10, help="our repeats per file (best/median of N)")
    ap.add_argument("--memory-only", action="store_true", help="ct-cake memory rows only (skip http)")
    ap.add_argument("--skip-ctcake", action="store_true", help="only our side (no venv, no PyPI)")
    ap.add_argument("--stream", type=int, default=None, metavar="SPANS",
                    help="time open_build and its chunks of SPANS spans (the receiver's path), not process_build")
    ap.add_argument("--venv", default=os.path.join(inputs.target_dir(), "bench-venv"))
    ap.add_argument("--out", default=os.path.join(inputs.target_dir(), "bench-results", "compare.json"))
    a = ap.parse_args()
    if not os.path.exists(TIME):
        raise SystemExit(f"{TIME} is missing: apt-get install -y time")
    rules = [int(n.replace("_", "")) for n in a.rules.split(",") if n.strip()]
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    started = {"utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "loadavg": loadavg(), "cpus": os.cpu_count()}

    venv = os.path.abspath(a.venv)
    py = None if a.skip_ctcake else ensure_venv(venv)
    files = [inputs.ensure(n, python=py or sys.executable, validate=py is not None) for n in rules]
    for f in files:
        log(f"input: {f['file']} ({f['bytes']} bytes; {'; '.join(f['checks'])})")

    exe = build_example()
    rows_ours = {}
    for f in files:
        log(f"ours: {f['rules']} rules")
        rows_ours[f["rules"]] = ours(exe, f["invocation_dir"], a.runs, a.stream)
    after_ours = loadavg()

    ct = {}
    if not a.skip_ctcake:
        paths = [f["file"] for f in files]
        if a.memory_only:
            rows = ctcake_memory_only(py, venv, paths)
        else:
            rows = ctcake_driver(py, venv, paths, os.path.join(os.path.dirname(a.out), "ctcake-results.json"))
        for f in files:
            name = os.path.basename(f["file"])
            ct[f["rules"]] = {r["mode"]: r for r in rows if r["file"] == name}

    what = f"open_build + chunks of {a.stream} spans" if a.stream else "process_build"
    print(f"\nct-cake {CT_VERSION} export path vs {what} (traces only); {started['cpus']} CPUs, "
          f"load average {started['loadavg']} at start, {after_ours} after ours, {loadavg()} at end; "
          f"{started['utc']}")
    head = ("rules", "file MB", "ct-cake mem s", "ct-cake http s", "ours best ms", "ours median ms",
            "ratio (mem)", "our RSS MiB", "RSS/file", "ct-cake RSS MiB")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---:" for _ in head) + "|")
    results = []
    for f in files:
        n = f["rules"]
        o = rows_ours[n]
        mem = ct.get(n, {}).get("memory")
        http = ct.get(n, {}).get("http")
        mem_s = mem["best_total_s"] if mem else None
        ratio = mem_s * 1e3 / o["best_ms"] if mem_s else None
        rss_ratio = o["peak_rss_kib"] * 1024 / f["bytes"]
        print("| " + " | ".join([
            f"{n:,}", f"{f['bytes'] / 1e6:.1f}", fmt(mem_s, ".3f"),
            fmt(http["best_total_s"] if http else None, ".3f"),
            f"{o['best_ms']:.1f}", f"{o['median_ms']:.1f}", fmt(ratio, ".0f") + ("×" if ratio else ""),
            f"{o['peak_rss_kib'] / 1024:.1f}", f"{rss_ratio:.2f}×",
            fmt(mem["peak_rss_mib"] if mem else None, ".1f"),
        ]) + " |")
        results.append({"rules": n, "file": f["file"], "file_bytes": f["bytes"], "sha256": f["sha256"],
                        "ours": o, "ctcake": ct.get(n), "ratio_memory_best": ratio,
                        "peak_rss_over_file": rss_ratio})
    big = next((r for r in results if r["rules"] == 100_000), None)
    if big:
        o = big["ours"]
        print("\ndesign.md §7 targets at 100k rules:")
        print(f"  ≤ 150 ms:          best {o['best_ms']:.1f} ms, median {o['median_ms']:.1f} ms -> "
              f"{'met' if o['median_ms'] <= 150 else 'NOT met'} (median)")
        if big["ratio_memory_best"]:
            print(f"  ≥ 40× ct-cake mem: {big['ratio_memory_best']:.0f}× -> "
                  f"{'met' if big['ratio_memory_best'] >= 40 else 'NOT met'}")
        print(f"  RSS ≤ 2× file:     {big['peak_rss_over_file']:.2f}× -> "
              f"{'met' if big['peak_rss_over_file'] <= 2 else 'NOT met'}")
    with open(a.out, "w") as fh:
        json.dump({"started": started, "ended_loadavg": loadavg(), "ctcake_version": CT_VERSION, "stream": a.stream,
                   "rows": results}, fh, indent=2)
        fh.write("\n")
    log(f"\nresults: {a.out}")


if __name__ == "__main__":
    main()
