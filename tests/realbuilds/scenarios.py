"""The build matrix: which real ct-cake invocations the suite runs.

A scenario is one `ct-cake --timing --otel-export` invocation. Scenarios of
one workspace (a `git clone` of a generated project) run in order and build
on each other's state: cold (empty CCACHE_DIR, no CAS) -> noop (nothing
changed) -> warm (CAS and bin/ removed, ccache kept: every compile runs
again and is a ccache hit). `fail` builds the project with a compile error.

Statslog modes:
  auto      `--ccache-statslog=auto`: the statslog lives in the invocation
            directory and ct-cake deletes it when it exits, so the receiver
            can only have it if it was watching while the build ran
            (watch = "live": one collector runs for the whole session).
  explicit  `--ccache-statslog=PATH` outside the invocation directory: the
            file stays, and the receiver is told about it with
            `capture.statslogs: [{include: <invocation dirs>, path: PATH}]`.
            These builds are read after the fact (watch = "post": a
            collector started after the build with `start_at: beginning`),
            except where a rule_outcomes.log must be captured live.

`flock` hidden from PATH ("lockhelper") makes the make/ninja backends run
every compile/link through ct-lock-helper, the only local-disk path that
writes the transient rule_outcomes.log (formats.md §5.1) -- also captured live.

The default matrix is sized for `make test` on 2 cores (~20 builds of a
9-TU project, one of them with metrics as spans); CT_REALBUILDS_FULL=1 (`make e2e-full`) runs every kind in
both statslog modes on every backend plus extra cases.
"""

import os
from dataclasses import dataclass, field

BACKENDS = ("shake", "make", "ninja", "cmake")


@dataclass(frozen=True)
class Scenario:
    name: str
    backend: str
    kind: str                       # cold | noop | warm | fail
    statslog: str                   # auto | explicit
    workspace: str                  # clone name; shared by a sequence
    project: str = "shapes"
    after: tuple = ()               # scenarios that must run first (same workspace)
    fresh_ccache: bool = False      # empty CCACHE_DIR before the build
    clean_outputs: bool = False     # rm -rf cas-*/ bin/ before the build
    no_flock: bool = False          # hide flock(1): ct-lock-helper + rule_outcomes.log
    metrics_as_spans: bool = False  # --otel-metrics-as-spans (and the receiver's metrics_as_spans)
    statslog_from: str = ""         # explicit mode: reuse this scenario's statslog (accumulates)
    expect_failure: bool = False    # ct-cake must exit non-zero
    notes: tuple = field(default=())

    @property
    def watch(self):
        """live: a collector watches while ct-cake runs; post: started after it."""
        if self.statslog == "auto" or self.no_flock:
            return "live"
        return "post"

    @property
    def ccache_dir_name(self):
        return self.workspace


def _sequence(backend, modes, prefix=None, no_flock=False, kinds=("cold", "noop", "warm")):
    """cold/noop/warm in one workspace; modes maps kind -> statslog mode."""
    ws = prefix or backend
    out = []
    prev = ()
    for kind in kinds:
        name = f"{ws}-{kind}"
        out.append(Scenario(
            name=name, backend=backend, kind=kind, statslog=modes[kind], workspace=ws,
            after=prev, fresh_ccache=(kind == "cold"), clean_outputs=(kind == "warm"),
            no_flock=no_flock))
        prev = (name,)
    return out


def _fail(backend, mode, prefix=None):
    ws = f"{prefix or backend}-broken"
    return Scenario(name=f"{prefix or backend}-fail", backend=backend, kind="fail", statslog=mode,
                    workspace=ws, project="shapes-broken", fresh_ccache=True, expect_failure=True)


def _metrics_as_spans(workspace):
    """A warm shake build (ccache hits in an explicit statslog) exported with
    --otel-metrics-as-spans, read by a receiver with metrics_as_spans: true."""
    return Scenario(name="shake-metrics-as-spans", backend="shake", kind="warm", statslog="explicit",
                    workspace=workspace, after=(f"{workspace}-warm",), clean_outputs=True,
                    metrics_as_spans=True,
                    notes=("--otel-metrics-as-spans; the receiver runs with metrics_as_spans: true",))


def default_matrix():
    """Every backend x {cold, noop, warm, fail}; both statslog modes on every
    backend (alternating per kind), plus the two lock-helper cold builds and
    one metrics-as-spans build."""
    out = []
    for i, b in enumerate(BACKENDS):
        a, e = ("auto", "explicit") if i % 2 == 0 else ("explicit", "auto")
        out += _sequence(b, {"cold": a, "noop": e, "warm": e})
        out.append(_fail(b, a))
    out += _sequence("ninja", {"cold": "auto"}, prefix="ninja-lockhelper", no_flock=True, kinds=("cold",))
    out += _sequence("make", {"cold": "explicit"}, prefix="make-lockhelper", no_flock=True, kinds=("cold",))
    out.append(_metrics_as_spans("shake"))   # shake-warm is explicit in this matrix
    return out


def full_matrix():
    """Every kind in both statslog modes on every backend, lock-helper
    sequences, metrics-as-spans and an accumulated (stale) explicit statslog."""
    out = []
    for b in BACKENDS:
        for mode in ("auto", "explicit"):
            p = f"{b}-{mode}"
            out += _sequence(b, {"cold": mode, "noop": mode, "warm": mode}, prefix=p)
            out.append(_fail(b, mode, prefix=p))
    for b in ("make", "ninja"):
        for mode in ("auto", "explicit"):
            out += _sequence(b, {"cold": mode, "noop": mode, "warm": mode},
                             prefix=f"{b}-lockhelper-{mode}", no_flock=True)
    out.append(_metrics_as_spans("shake-explicit"))
    out.append(Scenario(name="shake-noop-stale-statslog", backend="shake", kind="noop", statslog="explicit",
                        workspace="shake-explicit", after=("shake-metrics-as-spans",),
                        statslog_from="shake-metrics-as-spans",
                        notes=("no-op build appending to the previous build's explicit statslog: "
                               "ct.build.aggregate_warning=ccache_overcount",)))
    return out


def selected():
    full = os.environ.get("CT_REALBUILDS_FULL", "") not in ("", "0")
    matrix = full_matrix() if full else default_matrix()
    names = [s.name for s in matrix]
    assert len(names) == len(set(names)), names
    by_name = {s.name: s for s in matrix}
    for s in matrix:
        for dep in s.after + ((s.statslog_from,) if s.statslog_from else ()):
            assert dep in by_name, (s.name, dep)
    return matrix
