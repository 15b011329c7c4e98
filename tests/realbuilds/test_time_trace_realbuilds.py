"""clang's `-ftime-trace` inside every compile (issue 25, docs/time-trace.md)
on real ct-cake 13.1.4 builds with Debian's clang, on the shake, ninja and
make backends, and on ninja with `flock` hidden from PATH so every compile
runs through ct-lock-helper (`harness.ctrun.noflock_bin`).

Each case names its traces its own way (docs/time-trace.md, rust/src/
timetrace/locate.rs), checked here from the file system:

  shake            <object>.o.<ct-cake pid>.<4 hex>.json, new per compile
  ninja, make      <object>.o.compiletools.json, overwritten per compile
  ninja-lockhelper <object>.o.<helper pid>.<4 hex>.json, new per compile,
                   found by the rule's time window among every build's

Per case, one clone of the `shapes` project goes through three builds
with `--variant=clang.time-trace.cxx17.debug` (compiletools' own
`time-trace` axis), watched by our collector (traces and logs
pipelines, `time_trace` defaults):

  cold     every TU compiles and leaves a trace beside its CAS object
  noop     nothing changed: nothing compiles, nothing may be attached
  partial  src/stats.cpp edited: that TU compiles, every other object is a
           CAS hit (no compile ran, no new trace)
  recompile  ninja only: one unchanged TU's object deleted, its cold trace
           kept: the same object compiles again, so its directory holds
           the cold build's trace and this one's (lock helper: two names;
           flock: one file, rewritten) and only the time tells them apart.
           ct-cake 13.1.4's shake backend does not rebuild a deleted CAS
           object, and its make backend, its Makefile up to date, writes
           the rules' times to the previous invocation's log: that build
           has no rule to attach a trace to.

Each build's traces are copied aside as it ends: a flock trace is
rewritten by the next compile of its object.
Which trace files a build wrote is taken from the file system (new or
rewritten `*.o.*.json` under cas-objdir/ between before and after the
build), never from our output. What each build must carry is computed from
those files by `harness/clang_truth.py` (ClangBuildAnalyzer's rules, checked
against its real output in `test_clang_truth_unit.py`), not by our Rust code:

* every compile span that ran has exactly its trace's events of >= 50 ms
  (`time_trace.min_event_duration`) as descendants, with clang's names and
  details, nested inside their parents, placed from `beginningOfTime` with
  one shift per TU and inside the compile span; no clang span anywhere else;
* `ct.clang.frontend_s` / `ct.clang.backend_s` on each such compile span;
* the root's `ct.build.clang.frontend_s`, `backend_s`, `compilations`,
  `traces`, `top_headers`, `top_templates` as computed from the files;
* one `ct.clang.header` log record per root header (at most 50), linked
  to the root, with its inclusive parse time and include count;
* the no-op build: no compile span, no clang span, no `ct.build.clang.*`,
  no record.

Missing clang or ct-cake: skipped, or failed under CI=true (conftest.need).
Run: .venv/bin/python -m pytest tests/realbuilds/test_time_trace_realbuilds.py
(40-70 s on 2 cores; needs tests/install-deps.sh realbuilds and the collector).
"""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness import clang_truth, ctrun, otlp, projects
from harness.otlp_sink import OtlpSink

from . import ourcollector
from .conftest import need

VARIANT = "clang.time-trace.cxx17.debug"
ARRIVAL_TIMEOUT_S = 60
MIN_EVENT_US = 50_000          # time_trace.min_event_duration's default
MAX_SPANS_PER_COMPILE = 100    # time_trace.max_spans_per_compile's default
TOP_N = 10                     # time_trace.top_n
MAX_LOG_RECORDS = 50           # time_trace.max_log_records
MAX_SHIFT_NS = 2_000_000_000   # clang's clock vs the build's: tens of ms measured
TRACE_NAME = re.compile(r"^(?P<object>.+\.o)\.(?:(?P<pid>\d+)\.[0-9a-f]{4}|compiletools)\.json$")
# case -> (ct-cake backend, flock hidden, whose pid names the trace: "ct-cake",
# "helper" (any but ct-cake's) or None for `.compiletools.json`, whether the
# recompile step runs)
CASES = {
    "shake": ("shake", False, "ct-cake", False),
    "ninja": ("ninja", False, None, True),
    "make": ("make", False, None, False),
    "ninja-lockhelper": ("ninja", True, "helper", True),
}
COMPILING_STEPS = ["cold", "partial", "recompile"]


# ---------------------------------------------------------------- the builds

def trace_files(ws):
    """Every clang trace under cas-objdir/: path -> (inode, mtime, size)."""
    out = {}
    for p in (ws / "cas-objdir").rglob("*.json"):
        if TRACE_NAME.match(p.name):
            st = p.stat()
            out[p] = (st.st_ino, st.st_mtime_ns, st.st_size)
    return out


def object_of(trace):
    return str(trace.parent / TRACE_NAME.match(trace.name).group("object"))


class Build:
    def __init__(self, step, invocation, spans, records, traces, seconds):
        self.step = step
        self.invocation = invocation
        self.spans = spans
        self.records = records
        self.traces = traces        # object path -> the trace file this build wrote for it
        self.seconds = seconds
        (self.root,) = [s for s in spans if not s.parent_span_id]
        self.by_id = {s.span_id: s for s in spans}
        self.children = {}
        for s in spans:
            self.children.setdefault(s.parent_span_id, []).append(s)
        self.compiles = [s for s in spans if attrs(s).get("ct.rule_type") == "compile"]

    def descendants(self, span):
        out, todo = [], list(self.children.get(span.span_id, []))
        while todo:
            s = todo.pop()
            out.append(s)
            todo.extend(self.children.get(s.span_id, []))
        return out


def attrs(span):
    return otlp.attributes(span.attributes)


class Sequence:
    def __init__(self, case, work, binary):
        self.case = case
        self.backend, self.no_flock, self.named_by, self.recompiles = CASES[case]
        self.work = work
        project, _ = projects.make_project(str(work / "projects"), "shapes")
        self.ws = Path(projects.clone(project, str(work / "ws")))
        self.diag = work / "diag"
        self.diag.mkdir()
        self.sink = OtlpSink().start()
        self.proc = ourcollector.OurCollector(binary, work / "collector", {"include": [str(self.diag)]},
                                              self.sink.endpoint)
        receiver = ourcollector.receiver_config(include=[self.diag], capture_dir=work / "capture")
        config = json.loads(ourcollector.render(receiver, self.sink.endpoint, self.proc.health_port))
        config["service"]["pipelines"]["logs"] = {"receivers": ["compiletools"], "exporters": ["otlp_http"]}
        # The metrics (ct.clang.* among them) are the Go receiver tests'
        # and test-prometheus's; without them the sink goes quiet once a
        # build has arrived.
        del config["service"]["pipelines"]["metrics"]
        self.proc.config_path.write_text(json.dumps(config, indent=2) + "\n")
        self.builds = {}

    def build(self, step):
        before_dirs = set(self.diag.iterdir())
        before = trace_files(self.ws)
        argv = ["ct-cake", f"--variant={VARIANT}", f"--backend={self.backend}", "--timing",
                f"--diagnostics-dir={self.diag}"]
        env = ctrun.build_env(str(self.work), str(self.work / "ccache"), no_flock=self.no_flock)
        t0 = time.monotonic()
        done = subprocess.run(argv, cwd=self.ws, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=ctrun.BUILD_TIMEOUT_S)
        seconds = time.monotonic() - t0
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
        after = trace_files(self.ws)
        kept = self.work / "kept" / step
        kept.mkdir(parents=True)
        written = {object_of(p): Path(shutil.copy2(p, kept / p.name))
                   for p, st in after.items() if before.get(p) != st}
        assert len(written) == len([p for p, st in after.items() if before.get(p) != st]), \
            "two traces of one object in one build"
        (inv,) = set(self.diag.iterdir()) - before_dirs
        t1 = time.monotonic()
        spans = self.wait_for(inv.name)
        print(f"{self.case} {step}: build {seconds:.1f} s, its trace after {time.monotonic() - t1:.1f} s more")
        root_trace = [s for s in spans if not s.parent_span_id][0].trace_id
        records = [r for r in self.log_records() if r.trace_id == root_trace]
        self.builds[step] = Build(step, inv, spans, records, written, seconds)

    def wait_for(self, invocation_id):
        def spans_of():
            return [s for res, s in self.sink.spans() if res.get("ct.invocation_id") == invocation_id]
        assert self.sink.wait_for(lambda: any(not s.parent_span_id for s in spans_of()), ARRIVAL_TIMEOUT_S), \
            f"no trace for {invocation_id}"
        self.sink.wait_quiet(0.5, 10)
        return spans_of()

    def log_records(self):
        return [r for req in self.sink.requests("logs") for rl in req.message.resource_logs
                for sl in rl.scope_logs for r in sl.log_records]


@pytest.fixture(scope="module")
def clang_install(ct_install):
    problems = [f"{tool} not on PATH" for tool in ("clang", "clang++")
                if not shutil.which(tool, path="/usr/local/bin:/usr/bin:/bin")]
    need(problems, "clang time-trace builds need Debian's clang")


@pytest.fixture(scope="module", params=list(CASES))
def sequence(request, clang_install, collector_binary, tmp_path_factory):
    case = request.param
    work = Path(os.path.realpath(tmp_path_factory.mktemp(f"timetrace-{case}")))
    seq = Sequence(case, work, collector_binary)
    t0 = time.monotonic()
    try:
        seq.proc.start()
        seq.build("cold")
        seq.build("noop")
        stats = seq.ws / "src" / "stats.cpp"
        text = stats.read_text()
        assert "namespace stats {" in text
        stats.write_text(text.replace("namespace stats {", "namespace stats {\nint edited_by_the_test = 1;", 1))
        seq.build("partial")
        if seq.recompiles:
            seq.recompiled = min(attrs(s)["ct.target"] for s in seq.builds["cold"].compiles
                                 if not attrs(s)["ct.source"].endswith("src/stats.cpp"))
            os.unlink(seq.recompiled)
            seq.build("recompile")
        print(f"\n{case}: " + ", ".join(f"{b.step} {b.seconds:.1f} s ({len(b.traces)} traces)"
                                          for b in seq.builds.values())
              + f"; sequence {time.monotonic() - t0:.1f} s")
        yield seq
    finally:
        code = seq.proc.stop()
        seq.sink.stop()
        print(f"collector exit status {code}\n{seq.proc.describe(lines=20)}")


# ---------------------------------------------------------------- expectations

def expected_spans(events):
    """The events that become child spans: >= MIN_EVENT_US (the merged
    Frontend with its merged time), at most MAX_SPANS_PER_COMPILE, longest first."""
    picked = [e for e in events if e.dur >= MIN_EVENT_US]
    picked.sort(key=lambda e: (-e.dur, depth(e), e.order))
    return picked[:MAX_SPANS_PER_COMPILE]


def depth(e):
    n = 0
    while e.parent is not None:
        n, e = n + 1, e.parent
    return n


def clamp(value, low, high):
    return max(low, min(high, value))


def is_clang_span(span):
    return span.name in clang_truth.KINDS and "ct.rule_type" not in attrs(span)


# ---------------------------------------------------------------- the tests

def built(sequence, step):
    if step not in sequence.builds:
        pytest.skip(f"no {step} build on {sequence.case} (see the module's docstring)")
    return sequence.builds[step]


def test_each_build_wrote_traces_for_exactly_its_compiles(sequence):
    for step, b in sequence.builds.items():
        ran = {attrs(s)["ct.target"] for s in b.compiles if not attrs(s).get("cas.hit")}
        assert set(b.traces) == ran, (step, sorted(set(b.traces) ^ ran))
    assert len(sequence.builds["cold"].traces) == 9
    assert not sequence.builds["noop"].traces
    (partial,) = sequence.builds["partial"].compiles
    assert attrs(partial)["ct.source"].endswith("src/stats.cpp")
    if sequence.recompiles:
        (again,) = [s for s in sequence.builds["recompile"].compiles if not attrs(s).get("cas.hit")]
        assert attrs(again)["ct.target"] == sequence.recompiled
        on_disk = [p for p in trace_files(sequence.ws) if object_of(p) == sequence.recompiled]
        assert len(on_disk) == (1 if sequence.named_by is None else 2), on_disk


def test_each_backend_names_its_traces_as_documented(sequence):
    """The naming the lookup relies on, per case; the lock-helper case also
    proves the helper ran (a trace named after ct-cake's pid or
    `.compiletools` would mean flock was still found)."""
    for step, b in sequence.builds.items():
        cake_pid = b.invocation.name.rsplit("-", 1)[1]
        for trace in b.traces.values():
            pid = TRACE_NAME.match(trace.name).group("pid")
            if sequence.named_by is None:
                assert pid is None, trace.name
            elif sequence.named_by == "ct-cake":
                assert pid == cake_pid, trace.name
            else:
                assert pid is not None and pid != cake_pid, trace.name


@pytest.mark.parametrize("step", COMPILING_STEPS)
def test_every_compile_that_ran_has_its_trace_under_it(sequence, step):
    b = built(sequence, step)
    attached = 0
    for compile_span in b.compiles:
        a = attrs(compile_span)
        if a.get("cas.hit"):
            assert not b.children.get(compile_span.span_id), f"spans under a CAS hit: {a['ct.target']}"
            continue
        origin, events = clang_truth.read_events(b.traces[a["ct.target"]])
        want = expected_spans(events)
        got = b.descendants(compile_span)
        assert all(is_clang_span(s) for s in got), [s.name for s in got if not is_clang_span(s)]
        detail = {id(e): e.raw_detail for e in want}   # ct.clang.detail is clang's own
        assert sorted((s.name, attrs(s).get("ct.clang.detail", "")) for s in got) == \
            sorted((e.name, detail[id(e)]) for e in want), a["ct.target"]
        # Placement: one shift per TU, from the ExecuteCompiler event.
        (execute,) = [e for e in want if e.name == "ExecuteCompiler"]
        (execute_span,) = [s for s in got if s.name == "ExecuteCompiler"]
        lo, hi = compile_span.start_time_unix_nano, compile_span.end_time_unix_nano
        shift = execute_span.start_time_unix_nano - (origin + execute.ts) * 1000
        assert abs(shift) < MAX_SHIFT_NS, (a["ct.target"], shift)
        placed = sorted(((e.name, detail[id(e)]), clamp((origin + e.ts) * 1000 + shift, lo, hi),
                         clamp((origin + e.end) * 1000 + shift, lo, hi)) for e in want)
        assert sorted(((s.name, attrs(s).get("ct.clang.detail", "")), s.start_time_unix_nano,
                       s.end_time_unix_nano) for s in got) == placed, a["ct.target"]
        for s in got:
            parent = b.by_id[s.parent_span_id]
            assert lo <= s.start_time_unix_nano <= s.end_time_unix_nano <= hi, (a["ct.target"], s.name)
            assert parent.start_time_unix_nano <= s.start_time_unix_nano, (s.name, parent.name)
            assert s.end_time_unix_nano <= parent.end_time_unix_nano, (s.name, parent.name)
        attached += len(got)
    # Nothing anywhere else in the trace.
    assert sum(1 for s in b.spans if is_clang_span(s)) == attached > 0


@pytest.mark.parametrize("step", COMPILING_STEPS)
def test_compile_spans_carry_their_frontend_and_backend_time(sequence, step):
    b = built(sequence, step)
    for compile_span in b.compiles:
        a = attrs(compile_span)
        _, events = clang_truth.read_events(b.traces[a["ct.target"]])
        front, back = clang_truth.tu_totals(events)
        assert isinstance(a["ct.clang.frontend_s"], float) and isinstance(a["ct.clang.backend_s"], float)
        assert a["ct.clang.frontend_s"] == pytest.approx(front / 1e6, abs=1e-9), a["ct.target"]
        assert a["ct.clang.backend_s"] == pytest.approx(back / 1e6, abs=1e-9), a["ct.target"]


def assert_ranked(got, ranking, key, what):
    """`got` names the top entries of `ranking` in its order: same length
    (top N) and, place by place, an entry of the value ranked there (ties
    may come in either order)."""
    n = min(TOP_N, len(ranking))
    assert len(got) == n, (what, list(got), ranking[:TOP_N + 1])
    value = {name: key(t) for name, t in ranking}
    assert len(set(got)) == n and all(g in value for g in got), (what, got)
    assert [value[g] for g in got] == [key(t) for _, t in ranking[:n]], (what, got)


@pytest.mark.parametrize("step", COMPILING_STEPS)
def test_root_rollup_equals_the_traces(sequence, step):
    b = built(sequence, step)
    truth = clang_truth.rollup(b.traces.values())
    a = attrs(b.root)
    assert a["ct.build.clang.frontend_s"] == pytest.approx(truth.frontend_us / 1e6, abs=1e-9)
    assert a["ct.build.clang.backend_s"] == pytest.approx(truth.backend_us / 1e6, abs=1e-9)
    assert a["ct.build.clang.compilations"] == truth.compilations
    assert a["ct.build.clang.traces"] == len(b.traces)
    assert "ct.build.clang.traces_refused" not in a
    headers = truth.header_ranking()
    assert_ranked(a["ct.build.clang.top_headers"], headers, lambda t: t.us, "top_headers")
    templates = truth.template_ranking()
    assert_ranked(a["ct.build.clang.top_templates"], templates, lambda t: (t.us, t.count), "top_templates")
    print(f"\n{sequence.case} {step}: ours frontend {a['ct.build.clang.frontend_s']:.6f} s, "
          f"backend {a['ct.build.clang.backend_s']:.6f} s, {a['ct.build.clang.compilations']} compilations; "
          f"from the files {truth.frontend_us / 1e6:.6f} s, {truth.backend_us / 1e6:.6f} s, "
          f"{truth.compilations}")
    for i, (path, t) in enumerate(headers[:TOP_N]):
        ours = a["ct.build.clang.top_headers"][i]
        print(f"  header {i + 1:2}: {t.us / 1000:8.1f} ms x{t.count:<3} {path}"
              + ("" if ours == path else f"   (ours: {ours}, {truth.headers[ours].us / 1000:.1f} ms)"))
    for i, (name, t) in enumerate(templates[:3]):
        print(f"  template {i + 1}: {t.us / 1000:8.1f} ms x{t.count:<3} {name[:70]}")


@pytest.mark.parametrize("step", COMPILING_STEPS)
def test_header_log_records_arrive(sequence, step):
    b = built(sequence, step)
    truth = clang_truth.rollup(b.traces.values())
    headers = truth.header_ranking()
    records = sorted((r for r in b.records if r.event_name == "ct.clang.header"),
                     key=lambda r: otlp.attributes(r.attributes)["ct.header.rank"])
    assert len(records) == min(MAX_LOG_RECORDS, len(headers))
    for rank, (r, (_, want)) in enumerate(zip(records, headers), start=1):
        a = otlp.attributes(r.attributes)
        assert a["ct.header.rank"] == rank
        assert (r.trace_id, r.span_id) == (b.root.trace_id, b.root.span_id)
        path = a["ct.header.path"]
        assert path in truth.root_headers, path
        got = truth.headers[path]
        assert a["ct.header.include_count"] == got.count, path
        assert a["ct.header.parse_s"] == pytest.approx(got.us / 1e6, abs=1e-9), path
        assert got.us == want.us, (rank, path)   # its place in the ranking


def test_a_noop_build_attaches_nothing(sequence):
    b = sequence.builds["noop"]
    assert not b.compiles
    assert not [s for s in b.spans if is_clang_span(s)]
    assert not [k for k in attrs(b.root) if k.startswith("ct.build.clang.")]
    assert not [r for r in b.records if r.event_name.startswith("ct.clang.")]
