"""Drive the real builds and our collector; file each build as a case directory.

    <out>/<scenario>/case.json                  backend, scenario, argv, exit code, statslog mode/path, ...
    <out>/<scenario>/diagnostics/<iid>/...      copy of what ct-cake left in the invocation directory
    <out>/<scenario>/reference/NNN-<signal>.pb  the raw bodies ct-cake's exporter sent (arrival order)
    <out>/<scenario>/ours/NNN-<signal>.pb       what our collector sent for this build, re-encoded per
                                                build from the sink's decoded requests (arrival order)
    <out>/<scenario>/ccache.statslog            explicit mode: the statslog after the build
    <out>/<scenario>/captured/{ccache.statslog,rule_outcomes.log}
                                                transient files hard-linked by the harness during the build
    <out>/<scenario>/stdout.txt, stderr.txt     ct-cake's console
    <out>/<scenario>/collector/                 config + log of the post-build collector (watch = post)
    <out>/_live-collector/                      config + log of the session's live collector

Two ways our collector meets a build (scenarios.Scenario.watch):
  live  one collector for the whole session, started before any build, watching
        <ws>/diag-live/* -- it must capture an auto statslog / rule_outcomes.log
        while ct-cake runs, because ct-cake deletes them when it exits;
  post  a collector started after the build with `start_at: beginning` over
        <ws>/diag-post/<scenario>, the explicit statslog mapped with
        capture.statslogs.
Both export to 127.0.0.1 sinks; the reference sink is a fresh OtlpSink per build (raw bodies kept).
"""

import json
import os
import re
import shutil
import time
import traceback

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from harness import ctrun, projects
from harness.otlp_sink import OtlpSink

from . import compare, ourcollector

INVOCATION_ID = re.compile(r"^\d{8}T\d{6}-\d+$")
ARRIVAL_TIMEOUT_S = 30.0      # a build must reach the sink by then (poll 200 ms + settle 2 s + margin)
METRICS_EXTRA_S = 5.0         # after the trace: metrics of the same parse
QUIET_S = 1.0                 # then nothing more may arrive (duplicates)
STARTUP_GRACE_S = 1.0


def _attr(res, key):
    for kv in res.attributes:
        if kv.key == key:
            return kv.value.string_value
    return None


class ScenarioFailed(Exception):
    pass


class BuildResult:
    def __init__(self, scenario, case_dir):
        self.scenario = scenario
        self.case_dir = case_dir
        self.case = {}
        self.problems = []   # harness-level problems (collector exit, missing invocation dir, ...)


class Campaign:
    def __init__(self, root, matrix, collector_binary):
        self.root = os.path.realpath(root)   # the receiver reports canonical paths
        self.work = os.path.join(self.root, "work")
        self.out = os.path.join(self.root, "out")
        self.matrix = {s.name: s for s in matrix}
        self.order = [s.name for s in matrix]
        self.binary = collector_binary
        self.results = {}
        self.errors = {}
        self.commits = {}
        self.live = None
        self.live_sink = None
        self.session_problems = []
        self.timings = {}

    # -- paths -------------------------------------------------------------
    def ws(self, sc):
        return os.path.join(self.work, "ws", sc.workspace)

    def diag_parent(self, sc):
        return os.path.join(self.ws(sc), f"diag-{sc.watch}", sc.name)

    def statslog_path(self, sc):
        if sc.statslog == "auto":
            return None
        return os.path.join(self.work, "statslogs", f"{sc.statslog_from or sc.name}.statslog")

    def build_graph_mappings(self, scs):
        """Where ct-cake (run in the workspace) writes the dependency graph:
        build.ninja in its cwd, the Makefile in bin/<variant>/ (formats.md §1.6)."""
        files = {"ninja": "build.ninja", "make": os.path.join("bin", "{variant}", "Makefile")}
        return [(os.path.join(self.diag_parent(s), "*"), os.path.join(self.ws(s), files[s.backend]))
                for s in scs if s.backend in files]

    def statslog_mappings(self, scs):
        return [(os.path.join(self.diag_parent(s), "*"), self.statslog_path(s))
                for s in scs if s.statslog == "explicit"]

    # -- life cycle --------------------------------------------------------
    def setup(self):
        t0 = time.monotonic()
        for d in (self.work, self.out):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
        for d in ("ws", "ccache", "statslogs", "projects"):
            os.makedirs(os.path.join(self.work, d))
        for name in sorted({s.project for s in self.matrix.values()}):
            _, sha = projects.make_project(os.path.join(self.work, "projects"), name)
            self.commits[name] = sha
        live = [s for s in self.matrix.values() if s.watch == "live"]
        if live:
            self.live_sink = OtlpSink().start()
            receiver = ourcollector.receiver_config(
                include=[os.path.join(self.work, "ws", "*", "diag-live", "*")],
                capture_dir=os.path.join(self.work, "capture-live"),
                statslogs=self.statslog_mappings(live), start_at="beginning",
                build_graphs=self.build_graph_mappings(live))
            self.live = ourcollector.OurCollector(self.binary, os.path.join(self.work, "live-collector"),
                                                  receiver, self.live_sink.endpoint)
            try:
                self.live.start()
            except BaseException:
                self.live_sink.stop()
                raise
            time.sleep(STARTUP_GRACE_S)
        self.timings["setup"] = time.monotonic() - t0

    def teardown(self):
        if self.live is not None:
            code = self.live.stop()
            keep = os.path.join(self.out, "_live-collector")
            os.makedirs(keep, exist_ok=True)
            for p in (self.live.config_path, self.live.stderr_path):
                if os.path.exists(p):
                    shutil.copy2(p, keep)
            if self.live.killed:
                self.session_problems.append("live collector ignored SIGTERM and was killed")
            elif code != 0:
                self.session_problems.append(f"live collector exited with status {code}")
        if self.live_sink is not None:
            self.live_sink.stop()

    # -- builds ------------------------------------------------------------
    def run(self, name):
        """The BuildResult of a scenario, running its prerequisites first (once)."""
        if name in self.results:
            return self.results[name]
        if name in self.errors:
            raise ScenarioFailed(self.errors[name])
        sc = self.matrix[name]
        for dep in sc.after + ((sc.statslog_from,) if sc.statslog_from else ()):
            try:
                self.run(dep)
            except ScenarioFailed as exc:
                self.errors[name] = f"prerequisite {dep} failed: {exc}"
                raise ScenarioFailed(self.errors[name])
        try:
            self.results[name] = self._run(sc)
        except Exception as exc:  # filed for dependants, re-raised for this test
            self.errors[name] = f"{type(exc).__name__}: {exc}"
            raise ScenarioFailed(f"{self.errors[name]}\n{traceback.format_exc()}")
        return self.results[name]

    def _run(self, sc):
        t0 = time.monotonic()
        ws = self.ws(sc)
        if not os.path.isdir(ws):
            projects.clone(os.path.join(self.work, "projects", sc.project), ws)
        ccache_dir = os.path.join(self.work, "ccache", sc.ccache_dir_name)
        if sc.fresh_ccache:
            shutil.rmtree(ccache_dir, ignore_errors=True)
        os.makedirs(ccache_dir, exist_ok=True)
        if sc.clean_outputs:
            ctrun.clean_outputs(ws)
        diag_parent = self.diag_parent(sc)
        os.makedirs(diag_parent)
        statslog = self.statslog_path(sc)
        if statslog and not sc.statslog_from and os.path.exists(statslog):
            os.unlink(statslog)
        case_dir = os.path.join(self.out, sc.name)
        os.makedirs(case_dir)
        res = BuildResult(sc, case_dir)

        env = ctrun.build_env(self.work, ccache_dir, no_flock=sc.no_flock)
        with OtlpSink() as ref:
            argv = ctrun.ct_cake_argv(sc.backend, diag_parent, statslog or "auto", ref.endpoint,
                                      metrics_as_spans=sc.metrics_as_spans)
            rc, wall, linked = ctrun.run_ct_cake(
                argv, ws, env, os.path.join(case_dir, "stdout.txt"), os.path.join(case_dir, "stderr.txt"),
                diag_parent, os.path.join(case_dir, "captured"))
            ref.wait_quiet(0.3, 5)  # every request was answered before ct-cake exited
            ref_reqs = ref.requests()
            ref_rejected = ref.rejected()
        build_s = time.monotonic() - t0
        if not os.listdir(os.path.join(case_dir, "captured")):
            os.rmdir(os.path.join(case_dir, "captured"))
        _write_reference(case_dir, ref_reqs)
        iids = sorted(d for d in os.listdir(diag_parent)
                      if INVOCATION_ID.match(d) and os.path.isdir(os.path.join(diag_parent, d)))
        iid = iids[0] if len(iids) == 1 else None
        inv_dir = os.path.join(diag_parent, iid) if iid else None
        timing = None
        if inv_dir and os.path.isfile(os.path.join(inv_dir, "timing.json")):
            with open(os.path.join(inv_dir, "timing.json"), encoding="utf-8", errors="surrogateescape") as f:
                timing = json.load(f)
        if iid is None:
            res.problems.append(f"expected one invocation directory in {diag_parent}, found {iids}")
        if ref_rejected:
            res.problems.append(f"reference sink rejected requests: {ref_rejected}")

        # our collector
        t1 = time.monotonic()
        collector, sink = self.live, self.live_sink
        post = sc.watch == "post"
        if post:
            sink = OtlpSink().start()
            receiver = ourcollector.receiver_config(
                include=[diag_parent], capture_dir=os.path.join(self.work, "capture-post", sc.name),
                statslogs=self.statslog_mappings([sc]), start_at="beginning", git_max_lag="2m",
                metrics_as_spans=sc.metrics_as_spans, build_graphs=self.build_graph_mappings([sc]))
            collector = ourcollector.OurCollector(self.binary, os.path.join(case_dir, "collector"),
                                                  receiver, sink.endpoint)
        try:
            if post:
                collector.start()
            if iid and timing is not None:
                want_spans = compare.anchored_event_count(timing)
                ref_snapshot = any(s.span.name == compare.SNAPSHOT for s in
                                   compare.spans_of([(r.seq, r.signal, r.message) for r in ref_reqs]))
                want_spans += 1 if ref_snapshot else 0
                want_metrics = any(r.signal == "metrics" for r in ref_reqs)
                self._wait_ours(sink, collector, iid, want_spans, want_metrics, res)
                _write_ours(case_dir, sink.requests(), iid)
        finally:
            if post:
                code = collector.stop()
                sink.stop()
                if collector.killed:
                    res.problems.append("post-build collector ignored SIGTERM and was killed")
                elif code != 0:
                    res.problems.append(f"post-build collector exited with status {code}")
        ours_s = time.monotonic() - t1

        # what is left on disk, after the receiver is done with it
        for d in iids:
            shutil.copytree(os.path.join(diag_parent, d), os.path.join(case_dir, "diagnostics", d), symlinks=True)
        if statslog and os.path.exists(statslog):
            shutil.copy2(statslog, os.path.join(case_dir, "ccache.statslog"))
        if not post and self.live is not None:
            tail = "\n".join(self.live.stderr_text().splitlines()[-200:])
            with open(os.path.join(case_dir, "live-collector.tail.log"), "w") as f:
                f.write(tail + "\n")

        res.case = {
            "scenario": sc.name,
            "backend": sc.backend,
            "kind": sc.kind,
            "project": sc.project,
            "git_commit_sha": self.commits.get(sc.project),
            "variant": ctrun.VARIANT,
            "cwd": ws,
            "argv": argv,
            "env": {k: env[k] for k in ("PATH", "CCACHE_DIR", "HOME")},
            "exit_code": rc,
            "expect_failure": sc.expect_failure,
            "statslog": {"mode": sc.statslog, "path": statslog, "reused_from": sc.statslog_from or None},
            "no_flock": sc.no_flock,
            "metrics_as_spans": sc.metrics_as_spans,
            "watch": sc.watch,
            "invocation_ids": iids,
            "invocation_id": iid,
            "invocation_dir": inv_dir,
            "host_name": ourcollector.host_name(),
            "transient_files_captured": sorted(linked),
            "reference_requests": [f"{r.seq:03d}-{r.signal}" for r in ref_reqs],
            "wall_s": {"ct_cake": round(wall, 3), "build_total": round(build_s, 3), "ours": round(ours_s, 3)},
            "harness_problems": res.problems,
            "notes": list(sc.notes),
        }
        with open(os.path.join(case_dir, "case.json"), "w") as f:
            json.dump(res.case, f, indent=2)
            f.write("\n")
        self.timings[sc.name] = time.monotonic() - t0
        return res

    def _wait_ours(self, sink, collector, iid, want_spans, want_metrics, res):
        def state():
            spans = [s for r, s in sink.spans() if r.get("ct.invocation_id") == iid]
            tids = {s.trace_id.hex() for s in spans}
            mets = any(_attr(rm.resource, "ct.invocation_id") in tids
                       for r in sink.requests("metrics") for rm in r.message.resource_metrics)
            return len(spans), mets

        def dead():
            return not collector.running()

        sink.wait_for(lambda: state()[0] >= want_spans or dead(), ARRIVAL_TIMEOUT_S)
        if want_metrics and state()[0] > 0:
            sink.wait_for(lambda: state()[1] or dead(), METRICS_EXTRA_S)
        if dead():
            res.problems.append(f"our collector exited ({collector.proc.returncode}) while waiting for {iid}")
            return
        sink.wait_quiet(QUIET_S, 15)


def _write_reference(case_dir, reqs):
    d = os.path.join(case_dir, "reference")
    os.makedirs(d)
    for r in reqs:
        with open(os.path.join(d, f"{r.seq:03d}-{r.signal}.pb"), "wb") as f:
            f.write(r.body)


def _write_ours(case_dir, requests, iid):
    """Per build: each request's part that belongs to `iid`, re-encoded."""
    d = os.path.join(case_dir, "ours")
    os.makedirs(d, exist_ok=True)
    tids = set()
    for r in requests:
        if r.signal == "traces":
            for rs in r.message.resource_spans:
                if _attr(rs.resource, "ct.invocation_id") == iid:
                    tids |= {s.trace_id for ss in rs.scope_spans for s in ss.spans}
    seq = 0
    for r in requests:
        if r.signal == "traces":
            keep = [rs for rs in r.message.resource_spans
                    if _attr(rs.resource, "ct.invocation_id") == iid
                    or any(s.trace_id in tids for ss in rs.scope_spans for s in ss.spans)]
            msg = trace_service_pb2.ExportTraceServiceRequest(resource_spans=keep) if keep else None
        elif r.signal == "metrics":
            hexes = {t.hex() for t in tids} | {iid}
            keep = [rm for rm in r.message.resource_metrics if _attr(rm.resource, "ct.invocation_id") in hexes]
            msg = metrics_service_pb2.ExportMetricsServiceRequest(resource_metrics=keep) if keep else None
        else:
            msg = None
        if msg is not None:
            seq += 1
            with open(os.path.join(d, f"{seq:03d}-{r.signal}.pb"), "wb") as f:
                f.write(msg.SerializeToString())
