"""The large generated build with clang `-ftime-trace` files beside its
CAS objects, as compiletools' `time-trace` axis leaves them with the shake
backend (docs/time-trace.md): `<object>.<ct-cake pid>.<4 hex>.json`, the
pid being the invocation id's suffix.

The build's timing.json (bigbuilds.generated) names its objects under
`/home/dev/ws/bigproj`; a copy with that prefix moved into the test's own
directory is what the agent reads, so the objects' directories exist and
the traces can lie beside them. Each trace is one of the corpus' real
clang traces (corpus/time-trace), its times scaled by a random factor in
[0.5, 2] (bench_time_trace.py's recipe), shrunk further where needed so
its compile fits in the rule, and placed from `beginningOfTime` inside the
rule's wall-clock window (formats.md §2.8's reconstruction). Seeded: the
same set every run.

What the trace must then hold is counted from the files by
`harness.clang_truth` (not by the receiver): per traced compile, its events
of at least `time_trace.min_event_duration` (50 ms), at most
`max_spans_per_compile` (100), over the build at most
`max_spans_per_build` (100,000); plus the build's own rules + 7 spans.
"""

import json
import random
from collections import namedtuple
from datetime import datetime
from pathlib import Path

from harness import clang_truth

CORPUS_TRACES = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "time-trace"
ORIGINAL_ROOT = "/home/dev/ws/bigproj"
MIN_EVENT_US = 50_000
MAX_SPANS_PER_COMPILE = 100
MAX_SPANS_PER_BUILD = 100_000
FIT = 0.8            # a trace's compile takes at most this share of its rule

TracedBuild = namedtuple("TracedBuild", "rules timing expected_spans clang_spans traces trace_bytes "
                                        "timestamp invocation_id")


def corpus_traces():
    docs = [json.loads(p.read_text()) for p in sorted(CORPUS_TRACES.glob("*/traces/**/*.json"))]
    assert docs, f"no corpus traces under {CORPUS_TRACES}"
    return docs


def wall_clock(doc):
    """m (timing.json's monotonic seconds) -> wall-clock µs since the epoch."""
    t_end = datetime.fromisoformat(doc["timestamp"]).timestamp()
    m_end = doc["start_s"] + doc["total_elapsed_s"]
    return lambda m: int(round((t_end - (m_end - m)) * 1e6))


def scaled_trace(template, factor, begin_us):
    """The template's events with times scaled by `factor`, its compile
    starting at `begin_us` (wall clock)."""
    events = []
    for e in template["traceEvents"]:
        e = dict(e)
        if isinstance(e.get("ts"), int):
            e["ts"] = int(e["ts"] * factor)
        if isinstance(e.get("dur"), int):
            e["dur"] = int(e["dur"] * factor)
        events.append(e)
    compile_start = min(e["ts"] for e in events if e.get("name") == "ExecuteCompiler")
    return {"traceEvents": events, "beginningOfTime": begin_us - compile_start}


def generate(big_build, root, pid, every=4, first=64, seed=1):
    """Writes root/timing.json (the build, paths moved under root) and the
    traces of the first `first` compiles and every `every`-th one after
    (the receiver looks no further than 16 compiles without a trace)."""
    rng = random.Random(seed)
    templates = corpus_traces()
    new_root = str(Path(root) / "bigproj")
    text = big_build.timing.read_text()
    assert ORIGINAL_ROOT in text and '"' not in new_root and "\\" not in new_root
    text = text.replace(ORIGINAL_ROOT, new_root)
    Path(root).mkdir(parents=True, exist_ok=True)
    timing = Path(root) / "timing.json"
    timing.write_text(text)
    doc = json.loads(text)
    wall = wall_clock(doc)
    compiles = [r for phase in doc["phases"] for r in phase.get("rules", [])
                if r.get("rule_type") == "compile" and not r.get("metadata", {}).get("cas.hit")]
    clang_spans, traces, trace_bytes = 0, 0, 0
    for i, rule in enumerate(compiles):
        if i >= first and i % every:
            continue
        template = rng.choice(templates)
        compile_us = max(e["dur"] for e in template["traceEvents"] if e.get("name") == "ExecuteCompiler")
        rule_us = (rule["end_s"] - rule["start_s"]) * 1e6
        factor = min(rng.uniform(0.5, 2.0), FIT * rule_us / compile_us)
        begin = wall(rule["start_s"]) + int(rule_us * (1 - FIT) / 2)
        trace = scaled_trace(template, factor, begin)
        _, events = clang_truth.read_doc(trace)
        picked = min(MAX_SPANS_PER_COMPILE, sum(1 for e in events if e.dur >= MIN_EVENT_US))
        clang_spans += min(picked, MAX_SPANS_PER_BUILD - clang_spans)
        path = Path(f"{rule['target']}.{pid}.{rng.randrange(1 << 16):04x}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps(trace, separators=(",", ":"))
        path.write_text(body)
        traces += 1
        trace_bytes += len(body)
    return TracedBuild(big_build.rules, timing, big_build.expected_spans + clang_spans, clang_spans, traces,
                       trace_bytes, big_build.timestamp, big_build.invocation_id)
