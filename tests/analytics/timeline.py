#!/usr/bin/env python3
"""Renders one build as the receiver's core sees it: a timeline of its rules
with the critical path highlighted, and the parallelism profile below.

The build goes through the core (`rust/examples/process_one`, which calls
`process_build` exactly as the receiver does); the picture is drawn from the
OTLP spans it returns, so every value in it — rule times, `ct.critical_path`,
`ct.rule.drag_s`, the root's `ct.build.*` analytics — is the core's output.

    .venv/bin/python tests/analytics/timeline.py INVOCATION_DIR --out OUT.png \\
        [--build-graph path/to/build.ninja] [--title TEXT]

The README's picture is the real ct-cake ninja build of tests/realbuilds
(scenario ninja-warm, the last run in its workspace, so build.ninja is still
that build's):

    .venv/bin/python -m pytest -q tests/realbuilds -k ninja-warm
    .venv/bin/python tests/analytics/timeline.py \\
        _build/realbuilds/work/ws/ninja/diag-post/ninja-warm/2* \\
        --build-graph _build/realbuilds/work/ws/ninja/build.ninja \\
        --out tests/analytics/timeline.png --title "real ct-cake ninja build (tests/realbuilds ninja-warm)"

Without --build-graph (any corpus case, e.g. 12-geom-ninja-cold-native-flock)
the path is the timing estimate.

Needs matplotlib (tests/requirements.txt) and cargo.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def attrs(span):
    out = {}
    for kv in span.attributes:
        v = kv.value
        kind = v.WhichOneof("value")
        if kind == "array_value":
            out[kv.key] = [x.string_value for x in v.array_value.values]
        else:
            out[kv.key] = getattr(v, kind) if kind else None
    return out


def process(invocation_dir, build_graph):
    """The build's spans, from the core."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "traces.pb")
        cmd = ["cargo", "run", "--quiet", "--release", "--example", "process_one", "--",
               invocation_dir, "--out", out, "--summary"]
        if build_graph:
            cmd += ["--build-graph", build_graph]
        subprocess.run(cmd, cwd=REPO, check=True, stdout=sys.stderr)
        req = trace_service_pb2.ExportTraceServiceRequest()
        with open(out, "rb") as f:
            req.ParseFromString(f.read())
    return [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]


def lanes(rules):
    """Each rule in the first lane free at its start (rules sorted by start)."""
    free_at = []
    placed = []
    for r in rules:
        for i, t in enumerate(free_at):
            if t <= r["start"]:
                free_at[i] = r["end"]
                placed.append(i)
                break
        else:
            free_at.append(r["end"])
            placed.append(len(free_at) - 1)
    return placed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("invocation_dir")
    ap.add_argument("--out", required=True)
    ap.add_argument("--build-graph")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()

    spans = process(os.path.abspath(a.invocation_dir), a.build_graph)
    root = next(s for s in spans if not s.parent_span_id)
    ra = attrs(root)
    t0 = root.start_time_unix_nano
    rules = []
    for s in spans:
        sa = attrs(s)
        if "ct.rule.weighted_s" not in sa:  # only the rules the analytics count
            continue
        rules.append({"name": s.name, "start": (s.start_time_unix_nano - t0) / 1e9,
                      "end": (s.end_time_unix_nano - t0) / 1e9, "type": sa.get("ct.rule_type", ""),
                      "path": bool(sa.get("ct.critical_path")), "drag": sa.get("ct.rule.drag_s")})
    if not rules:
        sys.exit("the build has no counted rules: nothing to draw")
    rules.sort(key=lambda r: (r["start"], r["end"]))
    lane_of = lanes(rules)

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 5.2), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1.2]})
    colors = {"compile": "#9bb7d4", "link": "#b9a3d0", "symlink": "#c8c8c8", "mkdir": "#dedede",
              "test": "#a8d5a2"}
    for r, lane in zip(rules, lane_of):
        on = r["path"]
        top.barh(lane, max(r["end"] - r["start"], 0.002), left=r["start"], height=0.8,
                 color="#d62728" if on else colors.get(r["type"], "#bbbbbb"),
                 edgecolor="#7f1010" if on else "none", linewidth=0.6, zorder=3 if on else 2)
        if on and r["drag"] is not None and r["drag"] > 0:
            top.text(r["end"], lane, f" {r['drag']:.2f}s", va="center", fontsize=6, color="#7f1010")
    top.invert_yaxis()
    top.set_ylabel("rules (packed into lanes)")
    top.set_yticks([])
    method = ra.get("ct.build.critical_path.method", "estimate")
    from matplotlib.patches import Patch
    handles = [Patch(color="#d62728", label=f"critical path ({method}): {ra['ct.build.critical_path_s']:.2f} s")]
    handles += [Patch(color=c, label=t) for t, c in colors.items() if any(r["type"] == t for r in rules)]
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.95), ncol=len(handles), fontsize=7,
               frameon=False)

    # Parallelism profile: rules running at each instant (half-open intervals).
    events = sorted([(r["start"], 1) for r in rules] + [(r["end"], -1) for r in rules],
                    key=lambda e: (e[0], e[1]))
    xs, ys, running = [0.0], [0], 0
    for t, d in events:
        xs.append(t)
        ys.append(running)
        running += d
        xs.append(t)
        ys.append(running)
    bottom.fill_between(xs, ys, step=None, color="#4c72b0", alpha=0.6, linewidth=0)
    avg = ra.get("ct.build.parallelism.avg")
    if avg is not None:
        bottom.axhline(avg, color="#333333", linestyle="--", linewidth=0.8,
                       label=f"parallelism.avg {avg:.2f}")
    bottom.set_ylabel("running")
    bottom.set_xlabel("seconds since the build started")
    bottom.set_ylim(0, max(ys) + 1)
    bottom.legend(loc="upper right", fontsize=7,
                  title=f"parallelism.max {ra.get('ct.build.parallelism.max')}", title_fontsize=7)

    name = a.title or os.path.basename(os.path.normpath(a.invocation_dir))
    fig.suptitle(f"{name}: {len(rules)} rules, {method} critical path highlighted (drag after each path rule)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    fig.savefig(a.out, dpi=110)
    print(f"{a.out}: {len(rules)} rules, {sum(r['path'] for r in rules)} on the path ({method})")


if __name__ == "__main__":
    main()
