#!/usr/bin/env python3
"""Obj CAS store scans: ct-cache-report (compiletools 13.1.4) against ours.

    python3 rust/bench/cas_bench.py          # or: make bench-cas
    CAS_BENCH_1M=1 python3 rust/bench/cas_bench.py   # adds a 1,000,000-entry store
    CAS_BENCH_RUNS=5                          # runs per measurement (best of N)

Builds synthetic obj stores (`make_obj_store`: sparse objects with their
`.o.lock` sidecars, every 10th entry a macro variant) under
target/cas-bench/<entries>/ — kept between runs, they take a while to
create — and measures, each best of N:

  ct-cache-report, empty cell   interpreter start-up alone
  ct-cache-report warm / cold   `ct-cache-report --json` on the cell
  ours uncached cold / warm     `cas_scan obj CELL` (scan_set, no cache)
  ours cached, first scan cold  `cas_scan --cached`: the scan filling the cache
  ours cached, steady state     `cas_scan --cached --repeat 20`: rescans of an
                                unchanged store (scan_set with a ScanCache)

"cold" = after `sync; echo 3 > /proc/sys/vm/drop_caches` (needs root; if it
fails the rows say "not cold"). Wall time is the process's (fork to exit),
"scan" the in-process time of one scan (ours only); peak RSS from
`/usr/bin/time -v` (installed with apt-get if missing and root). Every run
must report the same five numbers as ct-cache-report: the script exits 1
otherwise. ct-cache-report runs from a venv at target/ct-venv with
compiletools==13.1.4 and configargparse==1.7 (1.9 crashes it), created here.
Results: a Markdown table on stdout and target/cas-bench/results.json.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
WORK = TARGET / "cas-bench"
VENV = TARGET / "ct-venv"
VARIANT = "gcc.cxx17.debug"
RUNS = int(os.environ.get("CAS_BENCH_RUNS", "5"))
STEADY_REPEAT = 20
PINS = {"compiletools": "13.1.4", "configargparse": "1.7"}
REPORT_KEYS = [
    "total-entries",
    "total-bytes",
    "unique-src-deps-count",
    "duplicated-groups-count",
    "wasted-bytes",
]
EXAMPLES = TARGET / "release" / "examples"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def fail(msg):
    log(f"cas_bench: FAIL: {msg}")
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


# ------------------------------------------------------------------ set-up


def ensure_time():
    if os.access("/usr/bin/time", os.X_OK):
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        log("installing /usr/bin/time (apt-get install -y time)")
        run(["apt-get", "install", "-y", "-qq", "time"], stdout=subprocess.DEVNULL)
    if not os.access("/usr/bin/time", os.X_OK):
        fail("/usr/bin/time missing: apt-get install -y time")


def ensure_venv():
    tool = VENV / "bin" / "ct-cache-report"
    check = [
        str(VENV / "bin" / "python"),
        "-c",
        "import importlib.metadata as m, json; "
        f"print(json.dumps({{k: m.version(k) for k in {list(PINS)!r}}}))",
    ]

    def pinned():
        try:
            got = json.loads(subprocess.run(check, capture_output=True, check=True, text=True).stdout)
        except (OSError, subprocess.CalledProcessError, ValueError):
            return False
        return got == PINS

    if not (tool.exists() and pinned()):
        log(f"creating {VENV} with " + " ".join(f"{k}=={v}" for k, v in PINS.items()))
        shutil.rmtree(VENV, ignore_errors=True)
        run([sys.executable, "-m", "venv", str(VENV)])
        run(
            [str(VENV / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
            + [f"{k}=={v}" for k, v in PINS.items()]
        )
        if not pinned():
            fail(f"{VENV}: could not install {PINS}")
    return tool


def build():
    log("building make_obj_store and cas_scan (release)")
    run(
        ["cargo", "build", "--release", "--locked", "-p", "compiletools-core",
         "--example", "make_obj_store", "--example", "cas_scan"],
        cwd=ROOT,
    )


def room_for(entries, where):
    """Free inodes and bytes for `entries` objects + locks (sparse files)."""
    st = os.statvfs(where)
    inodes_needed = 2 * entries + 10_000
    bytes_needed = entries * 300 + (1 << 30)  # directory blocks + inodes + slack
    return st.f_favail >= inodes_needed and st.f_bavail * st.f_frsize >= bytes_needed


def ensure_store(entries):
    base = WORK / str(entries)
    cell = base / "obj" / VARIANT
    done = base / ".complete"
    if not done.exists():
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        log(f"creating a {entries}-entry obj store in {cell} (kept for later runs)")
        t = time.perf_counter()
        run([str(EXAMPLES / "make_obj_store"), str(cell), str(entries)])
        log(f"  created in {time.perf_counter() - t:.0f} s")
        done.write_text("ok\n")
    # Shards modified within 2 s are never kept by the cache (racy rule):
    # the steady state needs them older.
    newest = max(p.stat().st_mtime for p in cell.iterdir())
    wait = newest + 2.5 - time.time()
    if wait > 0:
        time.sleep(wait)
    return cell


# ------------------------------------------------------------- measurement

_cold_ok = None


def drop_caches():
    """Returns whether the page, dentry and inode caches were dropped."""
    global _cold_ok
    if _cold_ok is False:
        return False
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        _cold_ok = True
    except OSError as e:
        log(f"cannot drop caches ({e}): 'cold' rows are NOT cold")
        _cold_ok = False
    return _cold_ok


def timed(cmd, cwd=None):
    """(wall seconds, peak RSS KiB, stdout) of one run under /usr/bin/time -v."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        full = ["/usr/bin/time", "-v", "-o", tf.name] + cmd
        t = time.perf_counter()
        p = subprocess.run(full, cwd=cwd, capture_output=True, text=True)
        wall = time.perf_counter() - t
        if p.returncode != 0:
            fail(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")
        rss = None
        for line in tf.read().splitlines():
            if "Maximum resident set size" in line:
                rss = int(line.rsplit(":", 1)[1])
        return wall, rss, p.stdout


def ct_numbers(out):
    report = json.loads(out)
    # only --cas-objdir: the flat legacy object; else the combined schema
    if "cas-objdir-report" in report:
        report = report["cas-objdir-report"]
    return {k: report[k] for k in REPORT_KEYS}


def measure(label, cmd, numbers, cold=False, cwd=None, scan_ms=None, check=None):
    """Best of RUNS: wall, in-process scan time (scan_ms(json)), max RSS."""
    walls, scans, rsss, results = [], [], [], []
    really_cold = cold
    for _ in range(RUNS):
        if cold:
            really_cold = drop_caches() and really_cold
        wall, rss, out = timed(cmd, cwd=cwd)
        got = numbers(out)
        results.append(got)
        walls.append(wall)
        rsss.append(rss)
        if scan_ms:
            doc = json.loads(out)
            scans.append(scan_ms(doc) / 1e3)
            if check:
                check(doc)
    if cold and not really_cold:
        label += " (not cold)"
    row = {
        "label": label,
        "cmd": " ".join(str(c) for c in cmd),
        "wall_s": min(walls),
        "walls_s": walls,
        "scan_s": min(scans) if scans else None,
        "peak_rss_kib": max(rsss),
        "numbers": results[0],
    }
    for r in results:
        if r != results[0]:
            fail(f"{label}: runs disagree: {results[0]} vs {r}")
    log(f"  {label}: wall {row['wall_s'] * 1e3:.1f} ms"
        + (f", scan {row['scan_s'] * 1e3:.2f} ms" if scans else "")
        + f", peak RSS {row['peak_rss_kib'] / 1024:.1f} MiB")
    return row


def ours_numbers(out):
    return json.loads(out)["report"]


def bench(entries, tool):
    cell = ensure_store(entries)
    empty = WORK / "empty" / "obj" / VARIANT
    empty.mkdir(parents=True, exist_ok=True)
    cwd = tempfile.mkdtemp(prefix="cas-bench-cwd-")  # outside any git work tree
    ct = [str(tool), f"--variant={VARIANT}", f"--cas-objdir={cell}", "--json"]
    scan = str(EXAMPLES / "cas_scan")
    log(f"{entries} entries: {cell}")

    rows = []
    # warm the caches and take the reference numbers
    _, _, out = timed(ct, cwd=cwd)
    ref = ct_numbers(out)
    rows.append(measure("ct-cache-report, empty cell (start-up)",
                        [str(tool), f"--variant={VARIANT}", f"--cas-objdir={empty}", "--json"],
                        lambda o: None, cwd=cwd))
    rows.append(measure("ct-cache-report warm", ct, ct_numbers, cwd=cwd))
    rows.append(measure("ct-cache-report cold", ct, ct_numbers, cold=True, cwd=cwd))
    elapsed = lambda d: d["elapsed_ms"]  # noqa: E731
    rows.append(measure("ours uncached cold", [scan, "obj", str(cell)], ours_numbers,
                        cold=True, scan_ms=elapsed))
    rows.append(measure("ours uncached warm", [scan, "obj", str(cell)], ours_numbers,
                        scan_ms=elapsed))
    rows.append(measure("ours cached, first scan cold", [scan, "obj", str(cell), "--cached"],
                        ours_numbers, cold=True, scan_ms=lambda d: d["fill_ms"]))

    def steady(doc):
        c = doc["cache"]
        if c["reused"] != c["shards"]:
            fail(f"steady state reused {c['reused']} of {c['shards']} shards: {c}")
        steady.cache = c

    rows.append(measure(f"ours cached, steady state (best of {STEADY_REPEAT} rescans)",
                        [scan, "obj", str(cell), "--cached", "--repeat", str(STEADY_REPEAT)],
                        ours_numbers, scan_ms=elapsed, check=steady))
    shutil.rmtree(cwd, ignore_errors=True)

    for row in rows[1:]:
        if row["numbers"] != ref:
            fail(f"{entries}: {row['label']} reports {row['numbers']}, ct-cache-report {ref}")
    ct_warm = rows[1]["wall_s"]
    ct_cold = rows[2]["wall_s"]
    for row in rows:
        best = row["scan_s"] if row["scan_s"] is not None else row["wall_s"]
        base = ct_cold if "cold" in row["label"] else ct_warm
        row["speedup_vs_ct_warm"] = ct_warm / best
        row["speedup_vs_ct_same_cache_state"] = base / best
        row["wall_speedup_vs_ct_warm"] = ct_warm / row["wall_s"]
    return {"entries": entries, "cell": str(cell), "numbers": ref, "rows": rows,
            "cache": getattr(steady, "cache", None), "cold_dropped": bool(_cold_ok)}


def table(result):
    lines = [
        f"### obj store, {result['entries']:,} entries "
        f"(total-bytes {result['numbers']['total-bytes']:,}, "
        f"unique {result['numbers']['unique-src-deps-count']:,}, "
        f"groups {result['numbers']['duplicated-groups-count']:,}) — best of {RUNS}",
        "",
        "| run | wall (process) | scan (in-process) | peak RSS | ct warm ÷ this | same-state ct ÷ this |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        scan = f"{r['scan_s'] * 1e3:.2f} ms" if r["scan_s"] is not None else "—"
        lines.append(
            f"| {r['label']} | {r['wall_s'] * 1e3:.1f} ms | {scan} | "
            f"{r['peak_rss_kib'] / 1024:.1f} MiB | {r['speedup_vs_ct_warm']:.1f}× | "
            f"{r['speedup_vs_ct_same_cache_state']:.1f}× |"
        )
    c = result["cache"]
    if c:
        lines += ["", f"Cache after the steady state: {c['cached_shards']} shards, "
                  f"{c['cached_buckets']:,} buckets, {c['cache_bytes'] / 1e6:.2f} MB "
                  f"({c['cache_bytes'] / result['entries']:.1f} bytes per entry)."]
    lines += ["", "Ratios use the in-process scan time for our rows (the receiver scans in-process) "
              "and the process wall time for ct-cache-report; 'same-state' compares cold with "
              "ct-cache-report cold, warm with warm."]
    return "\n".join(lines)


def main():
    ensure_time()
    build()
    tool = ensure_venv()
    sizes = [100_000]
    if os.environ.get("CAS_BENCH_1M") == "1":
        WORK.mkdir(parents=True, exist_ok=True)
        if (WORK / "1000000" / ".complete").exists() or room_for(1_000_000, WORK):
            sizes.append(1_000_000)
        else:
            log("CAS_BENCH_1M=1 but not enough free inodes/space: 1M store skipped")
    results = [bench(n, tool) for n in sizes]
    (WORK / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print("\n\n".join(table(r) for r in results))
    print(f"\n(raw results: {WORK / 'results.json'})")


if __name__ == "__main__":
    main()
