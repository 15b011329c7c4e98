#!/usr/bin/env python3
"""Differential check of one real build: what our collector sent against
what ct-cake's own exporter sent for the same build.

    PYTHONPATH=tests python -m realbuilds.compare OUT/<scenario> [OUT/<scenario> ...]   # exit 1 on any problem

Input is a case directory (written by tests/realbuilds, read-only here):

    case.json                      backend, scenario, argv, exit code, statslog mode/path,
                                   invocation_id, invocation_dir (canonical), host_name
    diagnostics/<invocation-id>/   what ct-cake left in the invocation directory
    reference/NNN-traces.pb|NNN-metrics.pb   the raw bodies ct-cake sent (arrival order)
    ours/NNN-traces.pb|NNN-metrics.pb        what our collector sent for this build
    ccache.statslog                explicit mode: the statslog file after the build
    captured/ccache.statslog, captured/rule_outcomes.log
                                   auto mode: the transient files, hard-linked by the
                                   harness while ct-cake ran (ground truth for per-TU
                                   attribution; independent of the receiver)

Until the Rust checker (rust/tests/common/reference.rs) becomes a CLI, this
is the comparison. It is strict: every difference that is not one of
INTENDED_DIFFERENCES below is reported as a problem.
"""

import datetime
import json
import math
import os
import re
import sys
from collections import Counter, defaultdict, namedtuple

from harness import otlp  # decoding with the real OTLP classes
# The deterministic id scheme (README "Deterministic IDs", design.md §3).
from harness.ctotel_ids import expected_span_id, expected_trace_id

# ---------------------------------------------------------------------------
# THE list of intended differences between our output and ct-cake's. Nothing
# else may differ. Each entry: (id, where it is decided, what differs, how the
# comparison below treats it). The code refers to entries by id (`_INTENDED`).
INTENDED_DIFFERENCES = (
    # design.md §2 fix 1 "Nothing dropped": ct-cake's BatchSpanProcessor
    # drops spans above ~2k per build (formats.md §3.3); we deliver every anchored
    # event of timing.json.
    ("nothing_dropped", "design.md §2 fix 1",
     "the reference may lack spans of a big build",
     "ours must hold one span per anchored timing.json event; a span missing from the "
     "reference is tolerated only when the reference has fewer spans than that"),
    # design.md §2 fix 2 "Root aggregates recomputed": timing.json never
    # stores root metadata; we recompute ct.build.* and ct.ccache.* from the
    # rules and the statslog we hold. Same formulas, so the same values.
    ("root_aggregates_recomputed", "design.md §2 fix 2",
     "our root ct.build.* / ct.ccache.* come from a recomputation, not from ct-cake's memory",
     "no relaxation: the values must be equal to ct-cake's"),
    # design.md §2 fix 3 "Time": we anchor wall time at the build's end
    # (`timestamp`), ct-cake at BuildTimer creation; every span of a build
    # differs by the same stamping delay δ (formats.md §2.8: the time ct-cake took
    # between stamping the root end and reading the wall clock; ~6 µs, more
    # when ct-cake is descheduled then, as on a loaded machine) plus ct-cake's
    # 256 ns quantisation.
    ("time_anchored_at_end", "design.md §2 fix 3",
     "span start/end differ by δ, the same for every span of a build",
     "our root must end at timing.json's `timestamp` (1 µs); δ = our root start minus the "
     "reference's must lie in [-(TIME_RESIDUAL_NS + CLOCK_SLEW_PPM × the build's duration), "
     "STAMPING_DELAY_MAX_NS]; every span time must "
     "equal the reference's + δ within TIME_RESIDUAL_NS"),
    # design.md §2 fix 4 "Metrics sent once": ct-cake flushes and shuts its
    # reader down, so every metric snapshot arrives twice (formats.md §3.5).
    ("metrics_sent_once", "design.md §2 fix 4",
     "the reference holds each ccache metric snapshot twice",
     "ours must hold exactly one snapshot; it is compared with the reference's first"),
    # design.md §2 "ccache metrics": start time = build start, time = build
    # end; ct-cake stamps the moment of export (and each send differently).
    ("metric_timestamps_are_build_bounds", "design.md §2 ccache metrics",
     "metric data point timestamps",
     "not compared with the reference; ours must equal our root span's start / end "
     "(a gauge point may leave its start at 0, as ct-cake's do)"),
    # design.md §2 fix 5 / §3 "Deterministic IDs": our trace and span ids are
    # SHA-256 derived (scheme ctotel/v1), ct-cake's are random.
    ("deterministic_ids", "design.md §2 fix 5, §3",
     "trace_id / span_id / parent_span_id values",
     "spans are matched by (name, ct.target) and parent structure, never by id; our ids "
     "are checked against the ctotel/v1 scheme instead"),
    # design.md §2 fix 6 "Lenient decoding": lone-surrogate escapes and
    # invalid UTF-8 in timing.json become U+FFFD in our strings.
    ("lenient_decoding", "design.md §2 fix 6",
     "string values where the input held an undecodable sequence",
     "a string is equal if it matches after replacing lone surrogates by U+FFFD"),
    # design.md §2 fix 7 "metrics-as-spans": our ct.ccache.snapshot span is a
    # child of the build's root span, timed at the build's end; ct-cake's is
    # the root of a trace of its own, timed at export, with the metrics
    # resource (ct.invocation_id = root trace id).
    ("metrics_as_spans_placement", "design.md §2 fix 7",
     "parent, trace, resource and times of ct.ccache.snapshot",
     "attributes and scope compared; ours must be a child of our root, ending at its end"),
    # design.md §2 "Per-TU ccache attribution": where a compile rule's source
    # matches a statslog block we set ct.rule.cache_layer = ccache (direct or
    # preprocessed hit) / compiled (miss) and ct.ccache.outcome = the primary
    # event; ct-cake always leaves `other` (formats.md §2.6).
    ("per_tu_cache_layer", "design.md §2 per-TU ccache attribution",
     "ct.rule.cache_layer and ct.ccache.outcome on compile rules",
     "where the reference says `other`, ours must carry exactly what the last statslog "
     "block (captured by the harness) for that source says; elsewhere equal"),
    # design.md §2 "ccache metrics": resource as the trace, with
    # ct.invocation_id = the trace id in hex. Each side uses its own trace id.
    ("metrics_invocation_id_is_trace_id", "design.md §2 ccache metrics",
     "ct.invocation_id on the metrics resource",
     "ours must be our build trace's id, the reference's ct-cake's root trace id"),
    # Not build data: the Python SDK describes itself (telemetry.sdk.*).
    ("telemetry_sdk_resource", "formats.md §3.1",
     "telemetry.sdk.* resource attributes (added by ct-cake's SDK)",
     "ignored on both sides"),
    # Not build data: OTLP Span.flags bits 8-9 (HAS_IS_REMOTE / IS_REMOTE)
    # describe the SDK's parent context; ct-cake's SDK sets 0x100.
    ("span_flags_context_bits", "OTLP Span.flags",
     "Span.flags bits 8-9",
     "ignored; the W3C trace-flags byte (bits 0-7) is compared"),
    # Issue 15 / README "Build analytics": attributes ct-cake does not
    # compute. Root: ct.build.parallelism.avg (with a build_execution phase),
    # ct.build.parallelism.max, ct.build.critical_path_s,
    # ct.build.top_weighted_rules; rules below no other rule:
    # ct.rule.weighted_s and, on the critical path only, ct.critical_path.
    ("build_analytics_additions", "issue 15, README Build analytics",
     "analytics keys on our root and rule spans, absent from the reference",
     "ours must carry them exactly where documented, as the trailing keys in the documented "
     "order and types, and their values must hold the invariants (weighted times sum to the "
     "busy time, most rules at once, the path is a chain in time of the flagged length); "
     "they are removed before the attribute comparison"),
    # Issue 14 / README "Standard names": OpenTelemetry CI/CD and VCS
    # semantic-convention keys beside ct-cake's. Resource: cicd.pipeline.name,
    # cicd.pipeline.run.id (= ct.invocation_id; not on the metrics resource),
    # cicd.worker.id/name (= host.name), vcs.* (revision = git.commit.sha).
    # Root: cicd.pipeline.action.name = BUILD, cicd.pipeline.result and
    # error.type as timing.json's phases decide; rules:
    # cicd.pipeline.task.name (= ct.target), cicd.pipeline.task.type,
    # cicd.pipeline.task.run.id (= the span id), cicd.pipeline.task.run.result
    # and test.case.* where the build decides them (issue 23); the phase a
    # failed build stopped in: error.type. A failed build's root and that
    # phase have status ERROR.
    ("semconv_additions", "issues 14 and 23, docs/telemetry.md Standard names",
     "cicd.* / vcs.* / error.type / test.case.* keys on our resource, root, phase and rule spans, and "
     "status ERROR on a failed build's root and stopped phase, absent from the reference",
     "ours must carry them exactly where documented, as the trailing keys (after the analytics), "
     "with the documented values: the result from an independent reading of timing.json's phases, "
     "which must agree with ct-cake's exit code; they are removed before the attribute comparison"),
)
_INTENDED = {d[0] for d in INTENDED_DIFFERENCES}

TIME_TOLERANCE_NS = 50_000          # our own points / snapshot span against our root: 50 µs
TIME_RESIDUAL_NS = 5_000            # time_anchored_at_end: a span vs the reference, δ taken out
STAMPING_DELAY_MAX_NS = 10_000_000  # time_anchored_at_end: largest δ (a descheduled ct-cake)
# time_anchored_at_end: the wall clock may run slower than the monotonic one
# between the build's start (ct-cake's anchor) and its end (ours) — NTP
# slewing, or a VM's clock being corrected, by at most the kernel's maximum
# slew of 500 ppm (formats.md §2.8) — which shifts our anchor *earlier* by up to
# that rate × the build's duration. Measured here: −19.7 µs on a ~12 s
# ninja build under load.
CLOCK_SLEW_PPM = 500
# build_analytics_additions, in the order they are written.
ANALYTICS_ROOT_KEYS = ("ct.build.parallelism.avg", "ct.build.parallelism.max",
                       "ct.build.critical_path_s", "ct.build.critical_path.method",
                       "ct.build.top_weighted_rules")
ANALYTICS_RULE_KEYS = ("ct.rule.weighted_s", "ct.critical_path", "ct.rule.drag_s")
PATH_METHODS = ("estimate", "ninja_graph", "make_graph")
ANALYTICS_KEYS = ANALYTICS_ROOT_KEYS + ANALYTICS_RULE_KEYS
ANALYTICS_TOP_N = 10
# semconv_additions, in the order they are written.
SEMCONV_ROOT_KEYS = ("cicd.pipeline.action.name", "cicd.pipeline.result", "error.type")
SEMCONV_RULE_KEYS = ("cicd.pipeline.task.name", "cicd.pipeline.task.type", "cicd.pipeline.task.run.id",
                     "cicd.pipeline.task.run.result", "test.case.name", "test.case.result.status")
STATUS_CODE_ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR
SEMCONV_SPAN_KEYS = SEMCONV_ROOT_KEYS + SEMCONV_RULE_KEYS
SEMCONV_RESOURCE_KEYS = ("cicd.pipeline.name", "cicd.pipeline.run.id", "cicd.worker.id", "cicd.worker.name",
                         "vcs.repository.url.full", "vcs.provider.name", "vcs.ref.head.name",
                         "vcs.ref.head.type", "vcs.ref.head.revision")
# Clock resolution the critical path tolerates (formats.md §2.4: ninja logs ms).
PATH_TOLERANCE_NS = {"ninja": 1_000_000}
PATH_TOLERANCE_DEFAULT_NS = 1_000
ROOT = "compiletools.build"
SNAPSHOT = "ct.ccache.snapshot"
PRIMARY_EVENTS = ("direct_cache_hit", "preprocessed_cache_hit", "cache_miss")
LAYER_OF_PRIMARY = {"direct_cache_hit": "ccache", "preprocessed_cache_hit": "ccache", "cache_miss": "compiled"}


def intended(name):
    assert name in _INTENDED, name
    return name


# ---------------------------------------------------------------------------
# decoding

def typed(value):
    """AnyValue -> a hashable, type-tagged value (1 and 1.0 differ)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return ("array", tuple(typed(v) for v in value.array_value.values))
    if kind == "kvlist_value":
        return ("kvlist", tuple(sorted((kv.key, typed(kv.value)) for kv in value.kvlist_value.values)))
    return (kind.replace("_value", ""), getattr(value, kind))


def typed_attrs(key_values):
    out = {}
    for kv in key_values:
        out[kv.key] = typed(kv.value)
    return out


def show(t):
    if t is None:
        return "<absent>"
    kind, v = t
    if kind == "array":
        return "[" + ", ".join(show(x) for x in v) + "]"
    if kind == "double":
        return repr(v) + "(double)"
    if kind == "int":
        return f"{v}(int)"
    return repr(v)


def plain(t):
    return None if t is None else (t[1] if t[0] != "array" else [plain(x) for x in t[1]])


def read_requests(dirpath):
    """[(file name, signal, decoded request)] in file-name (= arrival) order."""
    out = []
    if not os.path.isdir(dirpath):
        return out
    for name in sorted(os.listdir(dirpath)):
        m = re.fullmatch(r"(\d+)-(traces|metrics|logs)\.pb", name)
        if m:
            with open(os.path.join(dirpath, name), "rb") as f:
                out.append((name, m.group(2), otlp.decode(m.group(2), f.read())))
    return out


SpanRec = namedtuple("SpanRec", "resource scope span attrs key file")


def spans_of(requests):
    out = []
    for fname, sig, msg in requests:
        if sig != "traces":
            continue
        for rs in msg.resource_spans:
            res = typed_attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                scope = (ss.scope.name, ss.scope.version)
                for s in ss.spans:
                    attrs = typed_attrs(s.attributes)
                    out.append(SpanRec(res, scope, s, attrs, (s.name, plain(attrs.get("ct.target"))), fname))
    return out


MetricRec = namedtuple("MetricRec", "resource scope metric file")


def metrics_of(requests):
    out = []
    for fname, sig, msg in requests:
        if sig != "metrics":
            continue
        for rm in msg.resource_metrics:
            res = typed_attrs(rm.resource.attributes)
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    out.append(MetricRec(res, (sm.scope.name, sm.scope.version), m, fname))
    return out


def timing_paths(doc):
    """Index path of every event of a timing.json (root = ())."""
    paths = [()]

    def walk(events, prefix):
        for i, e in enumerate(events):
            if not isinstance(e, dict):
                continue
            p = prefix + (i,)
            paths.append(p)
            kids = e.get("children") if "rule_type" in e else e.get("rules")
            if isinstance(kids, list):
                walk(kids, p)
    walk(doc.get("phases") or [], ())
    return paths


def anchored_event_count(doc):
    """Spans a complete export of this timing.json has (design.md §2 fix 3 skips)."""
    start = float(doc.get("start_s") or 0.0)
    end = start + float(doc.get("total_elapsed_s") or 0.0)

    def count(events):
        n = 0
        for e in events:
            if not isinstance(e, dict):
                continue
            if "rule_type" in e:
                s = e.get("start_s", 0.0)
                en = e.get("end_s", s + e.get("elapsed_s", 0.0))
                if s == 0.0 or s < start - 1.0 or en > end + 1.0:
                    continue  # unanchored: skipped with its subtree
                n += 1 + count(e.get("children") or [])
            else:
                n += 1 + count(e.get("rules") or [])
        return n
    return 1 + count(doc.get("phases") or [])


# ---------------------------------------------------------------------------
# statslog ground truth (formats.md §4.2/§4.3, blocks by `# <source>` header)

_PY_WS = re.compile(r"[\s\x1c-\x1f\x85\xa0]")


def statslog_blocks(path):
    """{source path: [primary event or None per block]} in file order."""
    blocks = defaultdict(list)
    if not path or not os.path.isfile(path):
        return blocks
    with open(path, encoding="utf-8", errors="replace", newline=None) as f:
        text = f.read()
    current, primary = None, None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            if current is not None:
                blocks[current].append(primary)
            current, primary = line[1:].strip(), None
            continue
        if not line or _PY_WS.search(line):
            continue
        if current is not None and primary is None and line in PRIMARY_EVENTS:
            primary = line
    if current is not None:
        blocks[current].append(primary)
    return blocks


# ---------------------------------------------------------------------------
# the comparison

class Report:
    def __init__(self, case):
        self.case = case
        self.problems = []   # (category, text)
        self.notes = []

    def bad(self, category, text):
        self.problems.append((category, text))

    def note(self, text):
        self.notes.append(text)

    @property
    def ok(self):
        return not self.problems

    def categories(self):
        return Counter(c for c, _ in self.problems)

    def text(self, limit=60):
        lines = [f"{self.case}: {'OK' if self.ok else f'{len(self.problems)} problem(s)'}"]
        for c, t in self.problems[:limit]:
            lines.append(f"  [{c}] {t}")
        if len(self.problems) > limit:
            lines.append(f"  ... {len(self.problems) - limit} more")
        for n in self.notes:
            lines.append(f"  note: {n}")
        return "\n".join(lines)


def _lenient_equal(ours, ref):
    """lenient_decoding: U+FFFD where the input had a lone surrogate."""
    if ours == ref:
        return True
    if ours is None or ref is None or ours[0] != "string" or ref[0] != "string":
        return False
    return ours[1] == re.sub(r"[\ud800-\udfff]", "\ufffd", ref[1])


def _strip_sdk(res):
    return {k: v for k, v in res.items() if not k.startswith("telemetry.sdk.")}  # telemetry_sdk_resource


def _compare_attr_maps(rep, category, what, ours, ref, skip=()):
    for k in sorted(set(ours) | set(ref)):
        if k in skip:
            continue
        if not _lenient_equal(ours.get(k), ref.get(k)):
            rep.bad(category, f"{what}: {k} = {show(ours.get(k))} (ours) vs {show(ref.get(k))} (reference)")


def _root_trace(spans, iid):
    """(trace id, [spans]) of the build trace whose resource names `iid`."""
    roots = [s for s in spans if s.span.name == ROOT and not s.span.parent_span_id
             and plain(s.resource.get("ct.invocation_id")) == iid]
    if not roots:
        return None, []
    tid = roots[0].span.trace_id
    return tid, [s for s in spans if s.span.trace_id == tid]


def load_case(case_dir):
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    iid = case.get("invocation_id")
    timing = None
    tpath = os.path.join(case_dir, "diagnostics", iid or "-", "timing.json")
    if iid and os.path.isfile(tpath):
        with open(tpath, encoding="utf-8", errors="surrogateescape") as f:
            timing = json.load(f)
    return case, timing


def ground_truth_statslog(case_dir, case):
    """The statslog the receiver should have used for this build."""
    for p in (os.path.join(case_dir, "ccache.statslog"), os.path.join(case_dir, "captured", "ccache.statslog")):
        if os.path.isfile(p):
            return p
    return None


def compare_case(case_dir):
    rep = Report(os.path.basename(os.path.normpath(case_dir)))
    case, timing = load_case(case_dir)
    iid = case.get("invocation_id")
    if not iid:
        rep.bad("build", f"no single invocation directory: {case.get('invocation_ids')}")
        return rep
    if timing is None:
        rep.bad("build", "no timing.json in the invocation directory")
        return rep
    if case.get("expect_failure") and case.get("exit_code") == 0:
        rep.bad("build", "the failing build exited 0")
    if not case.get("expect_failure") and case.get("exit_code") != 0:
        rep.bad("build", f"ct-cake exited {case.get('exit_code')}")

    ref_reqs = read_requests(os.path.join(case_dir, "reference"))
    our_reqs = read_requests(os.path.join(case_dir, "ours"))
    ref_spans, our_spans = spans_of(ref_reqs), spans_of(our_reqs)
    ref_tid, ref_trace = _root_trace(ref_spans, iid)
    our_tid, our_trace = _root_trace(our_spans, iid)
    if ref_tid is None:
        rep.bad("reference", "ct-cake's export has no compiletools.build root for this invocation")
        return rep
    if our_tid is None:
        rep.bad("delivery", f"our collector sent no trace for {iid} "
                f"({len(our_spans)} spans, {len(metrics_of(our_reqs))} metrics in ours/)")
        return rep

    # metrics-as-spans: ct-cake's snapshot is its own trace (metrics resource)
    ref_snap = [s for s in ref_spans if s.span.name == SNAPSHOT
                and plain(s.resource.get("ct.invocation_id")) == ref_tid.hex()]
    our_snap = [s for s in our_trace if s.span.name == SNAPSHOT]
    our_build = [s for s in our_trace if s.span.name != SNAPSHOT]
    stray = [s for s in our_spans if s.span.trace_id != our_tid]
    if stray:
        rep.bad("delivery", f"{len(stray)} span(s) of this build outside its trace: "
                f"{sorted(Counter(s.span.name for s in stray))[:5]}")

    expected_spans = anchored_event_count(timing)
    _check_delivery(rep, our_build, expected_spans)
    ref_complete = len(ref_trace) >= expected_spans
    if not ref_complete:
        rep.note(f"reference incomplete ({len(ref_trace)} of {expected_spans} spans): "
                 f"{intended('nothing_dropped')}")

    # resource and scope
    _compare_attr_maps(rep, "resource", "trace resource", _strip_sdk(our_build[0].resource),
                       _strip_sdk(ref_trace[0].resource), skip=SEMCONV_RESOURCE_KEYS)  # semconv_additions
    for s in our_build:
        if s.resource != our_build[0].resource:
            rep.bad("resource", f"span {s.span.name} has a different resource")
            break
    ref_scopes = Counter(s.scope for s in ref_trace)
    our_scopes = Counter(s.scope for s in our_build)
    if set(ref_scopes) != set(our_scopes):
        rep.bad("scope", f"trace scopes {sorted(our_scopes)} (ours) vs {sorted(ref_scopes)} (reference)")

    # span set, structure, attributes, times
    pairs = _pair_spans(rep, our_build, ref_trace, ref_complete)
    blocks = statslog_blocks(ground_truth_statslog(case_dir, case))
    _check_end_anchor(rep, our_build, timing)
    _check_pairs(rep, pairs, our_build, ref_trace, blocks, _stamping_delay(rep, pairs))
    _check_analytics(rep, our_build)
    _check_semconv(rep, our_build, timing, case)
    _check_ids(rep, case, timing, our_tid, our_build)

    # ccache snapshots as spans
    if ref_snap or our_snap:
        _check_snapshot_spans(rep, our_snap, ref_snap, our_build)

    # metrics
    _check_metrics(rep, metrics_of(our_reqs), metrics_of(ref_reqs), our_tid, ref_tid,
                   our_build, ref_trace)
    return rep


def _check_delivery(rep, our_build, expected):
    ids = Counter(s.span.span_id for s in our_build)
    dup = [i.hex() for i, n in ids.items() if n > 1]
    if dup:
        rep.bad("delivery", f"{len(dup)} span id(s) delivered more than once (sent twice?)")
    roots = [s for s in our_build if not s.span.parent_span_id]
    if len(roots) != 1 or roots[0].span.name != ROOT:
        rep.bad("structure", f"ours has roots {[r.span.name for r in roots]}, expected one {ROOT}")
    if len(ids) != expected:
        rep.bad("delivery", f"ours has {len(ids)} distinct spans, timing.json has {expected} anchored events "
                f"({intended('nothing_dropped')})")


def _by_key(spans):
    out = defaultdict(list)
    for s in spans:
        out[s.key].append(s)
    for v in out.values():
        v.sort(key=lambda s: (s.span.start_time_unix_nano, s.span.end_time_unix_nano))
    return out


def _pair_spans(rep, ours, ref, ref_complete):
    """Match spans by (name, ct.target); duplicates of a key pair in start order."""
    o, r = _by_key(ours), _by_key(ref)
    pairs = []
    for key in sorted(set(o) | set(r), key=lambda k: (k[0], str(k[1]))):
        a, b = o.get(key, []), r.get(key, [])
        if len(a) != len(b):
            if len(a) < len(b):
                rep.bad("spans", f"missing in ours: {len(b) - len(a)} x {key[0]} (ct.target={key[1]})")
            elif ref_complete:
                rep.bad("spans", f"extra in ours: {len(a) - len(b)} x {key[0]} (ct.target={key[1]})")
        pairs.extend(zip(a, b))
    return pairs


def iso_ns(timestamp):
    """Unix ns of an ISO 8601 timestamp with a UTC offset (µs resolution)."""
    dt = datetime.datetime.fromisoformat(timestamp)
    if dt.tzinfo is None:
        raise ValueError(f"{timestamp!r} has no UTC offset")
    d = dt - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (d.days * 86_400 + d.seconds) * 1_000_000_000 + d.microseconds * 1_000


def _check_end_anchor(rep, ours, timing):
    """time_anchored_at_end: our root ends at timing.json's `timestamp`."""
    ts = timing.get("timestamp")
    try:
        want = iso_ns(ts)
    except (TypeError, ValueError) as exc:
        rep.bad("times", f"timing.json timestamp {ts!r}: {exc}")
        return
    for s in ours:
        if s.span.name == ROOT and not s.span.parent_span_id and abs(s.span.end_time_unix_nano - want) > 1_000:
            rep.bad("times", f"our root ends {(s.span.end_time_unix_nano - want) / 1000:+.1f} µs off "
                    f"timing.json's timestamp {ts}")


def _stamping_delay(rep, pairs):
    """time_anchored_at_end: δ, the shift every span of ours has against the
    reference, measured at the root's start (0 without a root pair)."""
    intended("time_anchored_at_end")
    roots = [(o, r) for o, r in pairs if o.span.name == ROOT and not o.span.parent_span_id]
    if not roots:
        return 0
    o, r = roots[0]
    delay = o.span.start_time_unix_nano - r.span.start_time_unix_nano
    duration = max(0, r.span.end_time_unix_nano - r.span.start_time_unix_nano)
    lowest = -(TIME_RESIDUAL_NS + duration * CLOCK_SLEW_PPM // 1_000_000)
    if not lowest <= delay <= STAMPING_DELAY_MAX_NS:
        rep.bad("times", f"our trace is {delay / 1000:+.1f} µs off the reference's; ct-cake's stamping delay "
                f"lies in [{lowest / 1000:.0f} µs, {STAMPING_DELAY_MAX_NS / 1e6:.0f} ms] (5 µs, plus "
                f"{CLOCK_SLEW_PPM} ppm of the build's {duration / 1e9:.1f} s for the wall clock's slew)")
    elif delay > TIME_TOLERANCE_NS:
        rep.note(f"ct-cake's stamping delay was {delay / 1000:.1f} µs (descheduled?); "
                 "span times compared with it taken out")
    return delay


def _check_pairs(rep, pairs, ours, ref, blocks, delay):
    o_by_id = {s.span.span_id: s for s in ours}
    r_by_id = {s.span.span_id: s for s in ref}
    name_count = Counter(s.span.name for s in ours)
    for o, r in pairs:
        what = o.span.name
        if name_count[what] > 1 and "ct.target" in o.attrs:   # same name: tell them apart
            what += f" (ct.target={plain(o.attrs['ct.target'])})"
        # parent structure (deterministic_ids: by key, not by id)
        op = o_by_id.get(o.span.parent_span_id)
        rp = r_by_id.get(r.span.parent_span_id)
        okey = op.key if op else (None if not o.span.parent_span_id else "<parent not in trace>")
        rkey = rp.key if rp else (None if not r.span.parent_span_id else "<parent not in trace>")
        if okey != rkey:
            rep.bad("structure", f"{what}: parent {okey} (ours) vs {rkey} (reference)")
        # kind, status, events, links, trace flags
        if o.span.kind != r.span.kind:
            rep.bad("span", f"{what}: kind {o.span.kind} vs {r.span.kind}")
        # semconv_additions: a failed build's root and stopped phase are
        # ERROR; _check_semconv checks where ERROR is, and nowhere else.
        if o.span.status.code != STATUS_CODE_ERROR and \
                (o.span.status.code, o.span.status.message) != (r.span.status.code, r.span.status.message):
            rep.bad("span", f"{what}: status {o.span.status} vs {r.span.status}")
        if len(o.span.events) != len(r.span.events) or len(o.span.links) != len(r.span.links):
            rep.bad("span", f"{what}: events/links {len(o.span.events)}/{len(o.span.links)} "
                    f"vs {len(r.span.events)}/{len(r.span.links)}")
        if (o.span.flags & 0xFF) != (r.span.flags & 0xFF):  # span_flags_context_bits: only bits 0-7
            rep.bad("span", f"{what}: trace flags {o.span.flags & 0xFF:#x} vs {r.span.flags & 0xFF:#x}")
        if o.span.dropped_attributes_count != r.span.dropped_attributes_count:
            rep.bad("span", f"{what}: dropped_attributes_count {o.span.dropped_attributes_count} "
                    f"vs {r.span.dropped_attributes_count}")
        # times (time_anchored_at_end): the build's δ taken out
        for field in ("start_time_unix_nano", "end_time_unix_nano"):
            d = getattr(o.span, field) - getattr(r.span, field)
            if abs(d - delay) > TIME_RESIDUAL_NS:
                rep.bad("times", f"{what}: {field} differs by {d / 1000:+.1f} µs, {(d - delay) / 1000:+.1f} µs "
                        f"beyond the build's stamping delay {delay / 1000:+.1f} µs (> {TIME_RESIDUAL_NS / 1000:.0f} µs)")
        # attributes
        # build_analytics_additions: checked by _check_analytics over all our spans
        skip = tuple(k for k in o.attrs if k in ANALYTICS_KEYS + SEMCONV_SPAN_KEYS and k not in r.attrs)
        if o.attrs.get("ct.rule_type") == ("string", "compile") and r.attrs.get("ct.rule.cache_layer") == ("string", "other"):
            skip += ("ct.rule.cache_layer", "ct.ccache.outcome")
            _check_per_tu(rep, what, o, r, blocks)
        if o.span.name == ROOT and not o.span.parent_span_id:
            _check_root(rep, o, r)
            skip += tuple(k for k in set(o.attrs) | set(r.attrs) if k.startswith(("ct.build.", "ct.ccache.")))
        _compare_attr_maps(rep, "attributes", what, o.attrs, r.attrs, skip=skip)


def _check_root(rep, o, r):
    """root_aggregates_recomputed: equal values, no relaxation (the analytics
    additions, absent from the reference, are _check_analytics's)."""
    keys = sorted(k for k in set(o.attrs) | set(r.attrs) if k.startswith(("ct.build.", "ct.ccache."))
                  and not (k in ANALYTICS_ROOT_KEYS and k not in r.attrs))
    for k in keys:
        if not _lenient_equal(o.attrs.get(k), r.attrs.get(k)):
            rep.bad("root-aggregates", f"root {k} = {show(o.attrs.get(k))} (ours) vs {show(r.attrs.get(k))} (reference)")


def _union_ns(intervals):
    """Total length of the union of [start, end) intervals."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def _most_at_once(intervals):
    """Most intervals running at one instant: half-open, a zero-length one
    runs for an instant right after those that end at its time."""
    events = []
    for s, e in intervals:
        if e > s:
            events += [(s, 1, 1), (e, 0, -1)]
        else:
            events += [(s, 1, 1), (s, 2, -1)]
    running = best = 0
    for _, _, d in sorted(events):
        running += d
        best = max(best, running)
    return best


def expected_result(timing):
    """semconv_additions: the result timing.json's phases decide (README
    "Standard names"), read independently of the core: (result, error.type)
    or None."""
    phases = [e.get("name") for e in timing.get("phases", []) if "rule_type" not in e]
    if not phases:
        return None
    if phases[-1] == "postbuild_scripts":
        return ("success", None)
    if "prebuild_scripts" in phases:
        return ("failure", phases[-1])
    return None


def _check_semconv(rep, ours, timing, case):
    """semconv_additions: resource keys, the root's pipeline run keys, the
    rules' task keys; each only where documented, last, with its value."""
    intended("semconv_additions")
    if not ours:
        return
    res = ours[0].resource
    want = {"cicd.pipeline.run.id": res.get("ct.invocation_id"),
            "cicd.worker.id": res.get("host.name"), "cicd.worker.name": res.get("host.name")}
    for k, v in want.items():
        if v is None or res.get(k) != v:
            rep.bad("semconv", f"resource {k} = {show(res.get(k))}, expected {show(v)}")
    name = res.get("cicd.pipeline.name")
    if name is None or name[0] != "string" or not name[1]:
        rep.bad("semconv", f"resource cicd.pipeline.name = {show(name)}, expected a non-empty string")
    if "git.commit.sha" in res or "vcs.ref.head.revision" in res:
        if res.get("vcs.ref.head.revision") != res.get("git.commit.sha"):
            rep.bad("semconv", "vcs.ref.head.revision differs from git.commit.sha")
    result = expected_result(timing)
    exit_code = case.get("exit_code")
    if result is not None and exit_code is not None and (result[0] == "success") != (exit_code == 0):
        rep.bad("semconv", f"the phases say {result[0]}, ct-cake exited {exit_code}")

    def tail(s):
        order = [kv.key for kv in s.span.attributes]
        n = 0
        while n < len(order) and order[len(order) - 1 - n] in SEMCONV_SPAN_KEYS:
            n += 1
        if any(k in SEMCONV_SPAN_KEYS for k in order[:len(order) - n]):
            rep.bad("semconv", f"{s.span.name}: semantic-convention keys not at the end: {order}")
        return [(k, plain(s.attrs.get(k))) for k in order[len(order) - n:]]

    root_ids = {s.span.span_id for s in ours if not s.span.parent_span_id}
    succeeded = result is not None and result[0] == "success"
    stopped_in = result[1] if result is not None else None
    for s in ours:
        failed_here = None
        if not s.span.parent_span_id:
            want = [("cicd.pipeline.action.name", "BUILD")]
            if result is not None:
                want.append(("cicd.pipeline.result", result[0]))
                if result[1] is not None:
                    want.append(("error.type", result[1]))
            failed_here = stopped_in
        elif "ct.rule_type" in s.attrs:
            target = plain(s.attrs.get("ct.target"))
            want = [("cicd.pipeline.task.name", target)] if target else []
            test = plain(s.attrs.get("ct.rule_type")) == "test"
            want.append(("cicd.pipeline.task.type", "test" if test else "build"))
            want.append(("cicd.pipeline.task.run.id", s.span.span_id.hex()))
            if not test or succeeded:
                want.append(("cicd.pipeline.task.run.result", "success"))
            if test and succeeded and target:
                want.append(("test.case.name", _test_case_name(target)))
                want.append(("test.case.result.status", "pass"))
        elif s.span.parent_span_id in root_ids and stopped_in is not None and s.span.name == f"phase.{stopped_in}":
            want = [("error.type", stopped_in)]
            failed_here = stopped_in
        else:
            want = []
        got = tail(s)
        if got != want:
            rep.bad("semconv", f"{s.span.name}: {got} (trailing), expected {want}")
        status = (s.span.status.code, s.span.status.message)
        want_status = (STATUS_CODE_ERROR, f"build failed in {failed_here}") if failed_here else (0, "")
        if status != want_status:
            rep.bad("semconv", f"{s.span.name}: status {status}, expected {want_status}")


def _test_case_name(target):
    """test.case.name read off a test rule's target, independently of the
    core: the file name up to the CAS hash (`_` + 64 hex digits + `.`), else
    up to `.exe`, else without `.result`."""
    name = target.rsplit("/", 1)[-1]
    m = re.search(r"_[0-9a-fA-F]{64}\.", name)
    if m:
        return name[:m.start()]
    name = name[:-len(".result")] if name.endswith(".result") else name
    return name.split(".exe", 1)[0]


def _check_analytics(rep, ours):
    """build_analytics_additions: where the keys are, their order and types,
    and the invariants their values must hold (README "Build analytics")."""
    intended("build_analytics_additions")
    by_id = {s.span.span_id: s for s in ours}
    is_rule = lambda s: "ct.rule_type" in s.attrs  # noqa: E731

    def counted(s):
        p = by_id.get(s.span.parent_span_id)
        while p is not None:
            if is_rule(p):
                return False
            p = by_id.get(p.span.parent_span_id)
        return is_rule(s)

    rules = [s for s in ours if counted(s)]
    roots = [s for s in ours if not s.span.parent_span_id]
    backend = plain(ours[0].resource.get("ct.backend")) if ours else None
    tol = PATH_TOLERANCE_NS.get(backend, PATH_TOLERANCE_DEFAULT_NS)

    def trailing(s, allowed):
        order = [kv.key for kv in s.span.attributes]
        while order and order[-1] in SEMCONV_SPAN_KEYS:  # semconv_additions come last
            order.pop()
        n = 0
        while n < len(order) and order[len(order) - 1 - n] in allowed:
            n += 1
        head, tail = order[:len(order) - n], order[len(order) - n:]
        if any(k in ANALYTICS_KEYS for k in head):
            rep.bad("analytics", f"{s.span.name}: analytics keys not at the end: {order}")
        return tuple(tail)

    for s in ours:
        if s in rules or (s in roots and s.span.name == ROOT):
            continue
        if any(k in s.attrs for k in ANALYTICS_KEYS):
            rep.bad("analytics", f"{s.span.name}: analytics keys on a span that is no counted rule or root")
    weighted_sum = 0.0
    for s in rules:
        tail = trailing(s, ANALYTICS_RULE_KEYS)
        w = s.attrs.get("ct.rule.weighted_s")
        flag = s.attrs.get("ct.critical_path")
        drag = s.attrs.get("ct.rule.drag_s")
        if tail not in (ANALYTICS_RULE_KEYS[:1], ANALYTICS_RULE_KEYS[:2], ANALYTICS_RULE_KEYS) or w is None \
                or w[0] != "double" or w[1] < 0 or (flag is not None and flag != ("bool", True)) \
                or (drag is not None and (drag[0] != "double" or drag[1] < 0)):
            rep.bad("analytics", f"{s.span.name}: rule analytics {tail} = {show(w)}, {show(flag)}")
            continue
        weighted_sum += w[1]
    if not roots:
        return
    root = roots[0]
    tail = trailing(root, ANALYTICS_ROOT_KEYS)
    if not rules:
        if tail:
            rep.bad("analytics", f"root has {tail} but no rule span counts")
        return
    if tail not in (ANALYTICS_ROOT_KEYS, ANALYTICS_ROOT_KEYS[1:]):
        rep.bad("analytics", f"root analytics keys {tail}, expected {ANALYTICS_ROOT_KEYS} (avg optional)")
        return
    times = [(s.span.start_time_unix_nano, s.span.end_time_unix_nano) for s in rules]
    busy_s = _union_ns(times) / 1e9
    if not math.isclose(weighted_sum, busy_s, rel_tol=1e-9, abs_tol=1e-9):
        rep.bad("analytics", f"weighted times sum to {weighted_sum} s, the rules were busy {busy_s} s")
    most = root.attrs.get("ct.build.parallelism.max")
    if most != ("int", _most_at_once(times)):
        rep.bad("analytics", f"root ct.build.parallelism.max = {show(most)}, the spans say {_most_at_once(times)}")
    execution = [s for s in ours if s.span.name == "phase.build_execution" and s.span.parent_span_id == root.span.span_id]
    wall = execution[0].span.end_time_unix_nano - execution[0].span.start_time_unix_nano if execution else 0
    avg = root.attrs.get("ct.build.parallelism.avg")
    want_avg = sum(e - s for s, e in times) / wall if wall > 0 else None
    if (avg is None) != (want_avg is None) or (avg is not None and (avg[0] != "double"
                                                                   or not math.isclose(avg[1], want_avg, rel_tol=1e-9))):
        rep.bad("analytics", f"root ct.build.parallelism.avg = {show(avg)}, expected {want_avg}")
    path = sorted((s for s in rules if "ct.critical_path" in s.attrs), key=lambda s: s.span.start_time_unix_nano)
    length = root.attrs.get("ct.build.critical_path_s")
    method = root.attrs.get("ct.build.critical_path.method")
    if method is None or method[0] != "string" or method[1] not in PATH_METHODS:
        rep.bad("analytics", f"root ct.build.critical_path.method = {show(method)}")
        return
    exact = method[1] != "estimate"
    if any(("ct.rule.drag_s" in s.attrs) != (exact and "ct.critical_path" in s.attrs) for s in rules):
        rep.bad("analytics", f"ct.rule.drag_s must be on exactly the path rules of an exact path ({method[1]})")
    if not path:
        rep.bad("analytics", "rules ran but no ct.critical_path rule")
    elif exact:
        # Without the graph: a dependency ends before its dependent starts
        # (a chain in time), the length is the sum of the path rules'
        # durations, never longer than the build, each drag within its rule.
        for p, q in zip(path, path[1:]):
            if p.span.end_time_unix_nano > q.span.start_time_unix_nano + tol:
                rep.bad("analytics", f"exact path step {p.span.name} -> {q.span.name} is not a chain in time")
        want = sum(s.span.end_time_unix_nano - s.span.start_time_unix_nano for s in path) / 1e9
        if length is None or length[0] != "double" or not math.isclose(length[1], want, abs_tol=1e-9):
            rep.bad("analytics", f"root ct.build.critical_path_s = {show(length)}, the exact path's rules take {want} s")
        if want > (root.span.end_time_unix_nano - root.span.start_time_unix_nano) / 1e9:
            rep.bad("analytics", f"the exact critical path ({want} s) is longer than the build")
        for s in path:
            d = s.attrs.get("ct.rule.drag_s")
            if d is not None and d[1] > (s.span.end_time_unix_nano - s.span.start_time_unix_nano) / 1e9 + 1e-9:
                rep.bad("analytics", f"{s.span.name}: drag {d[1]} s exceeds its duration")
    else:
        first, last = path[0].span, path[-1].span
        if last.end_time_unix_nano != max(e for _, e in times):
            rep.bad("analytics", f"the critical path ends with {path[-1].span.name}, not with a rule that finished last")
        def latest_end_before(q):
            """Latest end of a rule that started before q and ended by q's start (± tol)."""
            ends = [e for s, e in times if s < q.start_time_unix_nano and e <= q.start_time_unix_nano + tol]
            return max(ends, default=None)

        if latest_end_before(first) is not None:
            rep.bad("analytics", f"the critical path's first rule {path[0].span.name} has a predecessor")
        for p, q in zip(path, path[1:]):
            if not (p.span.start_time_unix_nano < q.span.start_time_unix_nano
                    and p.span.end_time_unix_nano <= q.span.start_time_unix_nano + tol):
                rep.bad("analytics", f"critical path step {p.span.name} -> {q.span.name} is not a chain in time")
            elif latest_end_before(q.span) != p.span.end_time_unix_nano:
                rep.bad("analytics", f"critical path step {p.span.name} -> {q.span.name}: another rule "
                        f"finished later before {q.span.name} started")
        want = (last.end_time_unix_nano - first.start_time_unix_nano) / 1e9
        if length is None or length[0] != "double" or not math.isclose(length[1], want, abs_tol=1e-9):
            rep.bad("analytics", f"root ct.build.critical_path_s = {show(length)}, the flagged path is {want} s")
        if want > (root.span.end_time_unix_nano - root.span.start_time_unix_nano) / 1e9:
            rep.bad("analytics", f"the critical path ({want} s) is longer than the build")
    top = root.attrs.get("ct.build.top_weighted_rules")
    names = {s.span.name for s in rules}
    if top is None or top[0] != "array" or len(top[1]) != min(ANALYTICS_TOP_N, len(rules)) \
            or any(v[0] != "string" or v[1] not in names for v in top[1]):
        rep.bad("analytics", f"root ct.build.top_weighted_rules = {show(top)}")


def _check_per_tu(rep, what, o, r, blocks):
    """per_tu_cache_layer: the statslog decides ccache / compiled / other.

    Several blocks for one source (an explicit statslog spanning builds, a TU
    compiled twice): the last block decides, as in the receiver
    (rust/src/statslog/attribution.rs); a last block without an outcome
    leaves `other` even when an earlier block had one.
    """
    intended("per_tu_cache_layer")
    source = plain(o.attrs.get("ct.source"))
    candidates = blocks.get(source, []) if source else []
    last = candidates[-1] if candidates else None
    layer = plain(o.attrs.get("ct.rule.cache_layer"))
    outcome = plain(o.attrs.get("ct.ccache.outcome"))
    if last is None:
        if layer != "other" or outcome is not None:
            why = "the last statslog block has no outcome" if candidates else "no statslog block"
            rep.bad("per-tu", f"{what}: {why} for {source!r}, "
                    f"but ours says cache_layer={layer!r} outcome={outcome!r} (expected 'other', no outcome)")
        return
    if outcome != last or layer != LAYER_OF_PRIMARY[last]:
        rep.bad("per-tu", f"{what}: ours cache_layer={layer!r} outcome={outcome!r}, the last statslog block "
                f"of {len(candidates)} says cache_layer={LAYER_OF_PRIMARY[last]!r} outcome={last!r}")
    for k in ("ct.rule.cache_layer", "ct.ccache.outcome"):
        t = o.attrs.get(k)
        if t is not None and t[0] != "string":
            rep.bad("per-tu", f"{what}: {k} is {t[0]}, expected a string")


def _check_ids(rep, case, timing, our_tid, ours):
    """deterministic_ids: our ids follow the ctotel/v1 scheme."""
    host = plain(ours[0].resource.get("host.name")) or ""
    inv_dir = case.get("invocation_dir") or ""
    want_tid = expected_trace_id(host, inv_dir, str(timing.get("timestamp", "")))
    if our_tid != want_tid:
        rep.bad("ids", f"trace id {our_tid.hex()} is not the ctotel/v1 id {want_tid.hex()} "
                f"(host {host!r}, dir {inv_dir!r}, timestamp {timing.get('timestamp')!r})")
        return
    allowed = {expected_span_id(our_tid, p): p for p in timing_paths(timing)}
    root = [s for s in ours if not s.span.parent_span_id]
    if root and root[0].span.span_id != expected_span_id(our_tid, ()):
        rep.bad("ids", "root span id is not the ctotel/v1 id of path []")
    for i, ph in enumerate(timing.get("phases") or []):
        if isinstance(ph, dict) and "rule_type" not in ph:
            want = expected_span_id(our_tid, (i,))
            got = [s for s in ours if s.span.span_id == want]
            if not got or got[0].span.name != f"phase.{ph.get('name')}":
                rep.bad("ids", f"phase {ph.get('name')} does not carry the ctotel/v1 id of path [{i}]")
    foreign = [s.span.name for s in ours if s.span.span_id not in allowed]
    if foreign:
        rep.bad("ids", f"{len(foreign)} span id(s) are no ctotel/v1 id of any timing.json event: {foreign[:3]}")


def _check_snapshot_spans(rep, our_snap, ref_snap, our_build):
    intended("metrics_as_spans_placement")
    if len(ref_snap) > 1:
        rep.note(f"reference has {len(ref_snap)} {SNAPSHOT} spans; compared with the first")
    if not ref_snap:
        rep.bad("snapshot-span", f"ours has {len(our_snap)} {SNAPSHOT} span(s), the reference none")
        return
    if len(our_snap) != 1:
        rep.bad("snapshot-span", f"ours has {len(our_snap)} {SNAPSHOT} spans, expected 1")
        if not our_snap:
            return
    o, r = our_snap[0], ref_snap[0]
    root = [s for s in our_build if not s.span.parent_span_id]
    if root:
        root = root[0]
        if o.span.parent_span_id != root.span.span_id:
            rep.bad("snapshot-span", f"{SNAPSHOT} is not a child of our root span")
        if abs(o.span.end_time_unix_nano - root.span.end_time_unix_nano) > TIME_TOLERANCE_NS:
            rep.bad("snapshot-span", f"{SNAPSHOT} does not end at the build's end")
    if o.scope != r.scope:
        rep.bad("snapshot-span", f"{SNAPSHOT} scope {o.scope} vs {r.scope}")
    if o.span.kind != r.span.kind:
        rep.bad("snapshot-span", f"{SNAPSHOT} kind {o.span.kind} vs {r.span.kind}")
    _compare_attr_maps(rep, "snapshot-span", SNAPSHOT, o.attrs, r.attrs)


def _metric_shape(m):
    kind = m.WhichOneof("data")
    data = getattr(m, kind) if kind else None
    shape = {"type": kind, "description": m.description, "unit": m.unit}
    if kind == "sum":
        shape.update(monotonic=data.is_monotonic, temporality=data.aggregation_temporality)
    return shape, (list(data.data_points) if data is not None else [])


def _point_key(p):
    return tuple(sorted((kv.key, typed(kv.value)) for kv in p.attributes))


def _point_value(p):
    v = p.WhichOneof("value")
    return (v, getattr(p, v)) if v else None


def _check_metrics(rep, ours, ref, our_tid, ref_tid, our_build, ref_trace):
    ref_mine = [m for m in ref if plain(m.resource.get("ct.invocation_id")) == ref_tid.hex()]
    if len(ref_mine) != len(ref):
        rep.bad("reference", f"{len(ref) - len(ref_mine)} reference metric(s) not keyed by ct-cake's root trace id")
    # metrics_sent_once: ct-cake's snapshot arrives twice; take the first file
    ref_files = sorted({m.file for m in ref_mine})
    ref_first = [m for m in ref_mine if ref_files and m.file == ref_files[0]]
    if len(ref_files) > 2:
        rep.note(f"reference has {len(ref_files)} metric requests (2 expected)")
    if not ref_first and not ours:
        return
    if not ours:
        rep.bad("metrics", f"ours sent no metrics; the reference has {sorted({m.metric.name for m in ref_first})}")
        return
    if not ref_first:
        rep.bad("metrics", f"ours sent metrics {sorted({m.metric.name for m in ours})}, the reference none")
        return
    our_files = sorted({m.file for m in ours})
    names = Counter(m.metric.name for m in ours)
    if len(our_files) != 1 or any(n > 1 for n in names.values()):
        rep.bad("metrics", f"ours sent the snapshot more than once: {dict(names)} in {our_files} "
                f"({intended('metrics_sent_once')})")
    # resource: as the trace, ct.invocation_id = each side's own trace id
    intended("metrics_invocation_id_is_trace_id")
    o_res, r_res = _strip_sdk(ours[0].resource), _strip_sdk(ref_first[0].resource)
    if plain(o_res.get("ct.invocation_id")) != our_tid.hex():
        rep.bad("metrics", f"ours: metrics ct.invocation_id {show(o_res.get('ct.invocation_id'))} "
                f"is not our trace id {our_tid.hex()}")
    _compare_attr_maps(rep, "metrics", "metrics resource", o_res, r_res,
                       skip=("ct.invocation_id",) + SEMCONV_RESOURCE_KEYS)
    # semconv_additions: as the trace's resource, without the pipeline run
    # (opt-in on metrics by the CI/CD conventions)
    if "cicd.pipeline.run.id" in o_res:
        rep.bad("semconv", "the metrics resource carries cicd.pipeline.run.id")
    for k in SEMCONV_RESOURCE_KEYS:
        if k != "cicd.pipeline.run.id" and o_res.get(k) != our_build[0].resource.get(k):
            rep.bad("semconv", f"metrics resource {k} = {show(o_res.get(k))}, the trace's {show(our_build[0].resource.get(k))}")
    if any(m.resource != ours[0].resource for m in ours):
        rep.bad("metrics", "our metrics do not share one resource")
    # per metric
    o_by, r_by = defaultdict(list), defaultdict(list)
    for m in ours:
        o_by[m.metric.name].append(m)
    for m in ref_first:
        r_by[m.metric.name].append(m)
    if set(o_by) != set(r_by):
        rep.bad("metrics", f"metric names {sorted(o_by)} (ours) vs {sorted(r_by)} (reference)")
    root = [s for s in our_build if not s.span.parent_span_id]
    for name in sorted(set(o_by) & set(r_by)):
        o, r = o_by[name][0], r_by[name][0]
        if o.scope != r.scope:
            rep.bad("metrics", f"{name}: scope {o.scope} vs {r.scope}")
        o_shape, o_pts = _metric_shape(o.metric)
        r_shape, r_pts = _metric_shape(r.metric)
        for k in sorted(set(o_shape) | set(r_shape)):
            if o_shape.get(k) != r_shape.get(k):
                rep.bad("metrics", f"{name}: {k} {o_shape.get(k)!r} (ours) vs {r_shape.get(k)!r} (reference)")
        o_vals = Counter((_point_key(p), _point_value(p)) for p in o_pts)
        r_vals = Counter((_point_key(p), _point_value(p)) for p in r_pts)
        if o_vals != r_vals:
            missing = r_vals - o_vals
            extra = o_vals - r_vals
            rep.bad("metrics", f"{name}: data points differ: missing {_fmt_points(missing)}; extra {_fmt_points(extra)}")
        # metric_timestamps_are_build_bounds
        intended("metric_timestamps_are_build_bounds")
        if root:
            rs, re_ = root[0].span.start_time_unix_nano, root[0].span.end_time_unix_nano
            for p in o_pts:
                start_ok = abs(p.start_time_unix_nano - rs) <= TIME_TOLERANCE_NS
                if o_shape["type"] == "gauge" and p.start_time_unix_nano == 0:
                    start_ok = True  # a gauge has no start (ct-cake's synchronous gauges send 0 too)
                if not start_ok or abs(p.time_unix_nano - re_) > TIME_TOLERANCE_NS:
                    rep.bad("metrics", f"{name}: point times ({p.start_time_unix_nano}, {p.time_unix_nano}) are not "
                            f"the build's start/end ({rs}, {re_})")
                    break


def _fmt_points(c):
    if not c:
        return "none"
    parts = []
    for (key, val), n in sorted(c.items(), key=str):
        attrs = ",".join(f"{k}={plain(v)}" for k, v in key)
        parts.append(f"{{{attrs}}}={val[1] if val else None}" + (f" x{n}" if n > 1 else ""))
    return " ".join(parts)


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    bad = 0
    for d in argv:
        if not os.path.isfile(os.path.join(d, "case.json")):
            print(f"{d}: not a case directory (no case.json), skipped")
            continue
        rep = compare_case(d)
        print(rep.text())
        bad += not rep.ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
