#!/usr/bin/env python3
"""Our clang -ftime-trace ingestion against ClangBuildAnalyzer's, side by
side on one generated set of traces (`make bench-time-trace`).

The set: at least --tus translation units made from the corpus' real
traces (../shared/corpus/time-trace): each TU is one corpus trace, its
times scaled by a random factor in [0.5, 2]; to get realistic sizes, 12 %
of the TUs join 10 traces and 3 % join 60 (one compile after another under
one ExecuteCompiler, as a large TU of many headers and templates), which
gives files from a few KB to about a MB. Seeded: the same set every run.

Timed, each --rounds times, best kept, in one run:
  * ClangBuildAnalyzer --all DIR out.bin (its parse) and --analyze out.bin;
  * our time_trace_rollup example --bench (parse + rollup, from disk).

    python3 tests/tools/bench_time_trace.py --cba PATH --ours PATH [--tus N] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "time-trace"


def corpus_traces(corpus: Path) -> list[dict]:
    traces = []
    for path in sorted(corpus.glob("*/traces/**/*.json")):
        traces.append(json.loads(path.read_text()))
    if not traces:
        sys.exit(f"no corpus traces under {corpus}")
    return traces


def scaled(events: list[dict], factor: float, offset: int) -> list[dict]:
    out = []
    for e in events:
        e = dict(e)
        if isinstance(e.get("ts"), int):
            e["ts"] = int(e["ts"] * factor) + offset
        if isinstance(e.get("dur"), int):
            e["dur"] = int(e["dur"] * factor)
        out.append(e)
    return out


def compile_of(events: list[dict]) -> dict:
    return max((e for e in events if e.get("name") == "ExecuteCompiler"), key=lambda e: e.get("dur", 0))


def make_tu(parts: list[dict], rng: random.Random) -> dict:
    """One TU from `parts` traces, each scaled, one after another."""
    if len(parts) == 1:
        t = parts[0]
        return {
            "traceEvents": scaled(t["traceEvents"], rng.uniform(0.5, 2.0), 0),
            "beginningOfTime": t.get("beginningOfTime", 0),
        }
    events, offset = [], 0
    for t in parts:
        ev = scaled(t["traceEvents"], rng.uniform(0.5, 2.0), offset)
        whole = compile_of(ev)
        # Complete events of the compile only (no metadata, no Total ...).
        events += [e for e in ev if e.get("ph") == "X" and e is not whole and not e["name"].startswith("Total ")]
        offset = whole["ts"] + whole["dur"] + 1
    events.append({"pid": 1, "tid": 0, "ph": "X", "ts": 0, "dur": offset, "name": "ExecuteCompiler"})
    return {"traceEvents": events, "beginningOfTime": parts[0].get("beginningOfTime", 0)}


def generate(out: Path, tus: int, seed: int) -> tuple[int, int]:
    rng = random.Random(seed)
    traces = corpus_traces(CORPUS)
    if out.exists():
        shutil.rmtree(out)
    total = 0
    for k in range(tus):
        roll = rng.random()
        n = 60 if roll < 0.03 else 10 if roll < 0.15 else 1
        tu = make_tu([rng.choice(traces) for _ in range(n)], rng)
        path = out / f"{k % 256:02x}" / f"tu{k:05d}.o.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(tu, separators=(",", ":"))
        path.write_text(text)
        total += len(text)
    return tus, total


def best_of(rounds: int, cmd: list[str], cwd: Path) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cba", required=True, type=Path, help="the ClangBuildAnalyzer binary")
    ap.add_argument("--ours", required=True, type=Path, help="the time_trace_rollup example binary")
    ap.add_argument("--tus", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--out", type=Path, default=Path("_build/bench-time-trace"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    traces = args.out / "traces"
    files, total = generate(traces, args.tus, args.seed)
    mb = total / 1e6
    cba_all = best_of(args.rounds, [str(args.cba.resolve()), "--all", "traces", "cba.bin"], args.out)
    cba_analyze = best_of(args.rounds, [str(args.cba.resolve()), "--analyze", "cba.bin"], args.out)
    bench = subprocess.run(
        [str(args.ours.resolve()), "--bench", "--rounds", str(args.rounds), "traces"],
        cwd=args.out, check=True, capture_output=True, text=True,
    ).stdout
    # The example prints "... from disk ... <MB/s> MB/s" lines; take the disk one.
    disk = next((l for l in bench.splitlines() if "disk" in l), bench.strip())
    ours_s = best_of(args.rounds, [str(args.ours.resolve()), "traces"], args.out)
    print(f"{files} TUs, {mb:.1f} MB of traces (seed {args.seed}), best of {args.rounds}\n")
    print("| | wall s | MB/s |")
    print("|---|---|---|")
    print(f"| ClangBuildAnalyzer --all (parse) | {cba_all:.3f} | {mb / cba_all:.0f} |")
    print(f"| ClangBuildAnalyzer --all + --analyze | {cba_all + cba_analyze:.3f} | {mb / (cba_all + cba_analyze):.0f} |")
    print(f"| ours: time_trace_rollup (parse + rollup + report) | {ours_s:.3f} | {mb / ours_s:.0f} |")
    print(f"\nours --bench: {disk.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
