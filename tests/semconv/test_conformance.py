"""Semantic-conventions conformance of what the real collector sends.

One collector, with the compile history and the live-build follower on,
sees a live build played over time (statslog blocks while it runs, then its
timing.json) and then every corpus build, one after another (so the history
has the cold builds before the warm ones). Every request the sink accepted
is written as OTLP/JSON lines (the protobuf JSON mapping, which the checker
reads) and the checker of this folder (cmd/semconvcheck; its registry is
the pinned copy of the registry's model YAML, testdata/registry) runs over
all of it with the documented deviations of allowed.txt: any error fails
the test, its report is printed either way. The other tests check, on the
same output, what the registry cannot say of this receiver: that a running
build counts as an active pipeline run, that one host has one metrics
resource, and that the units sent are the declared ones.

CT_SEMCONVCHECK names a built checker; otherwise it is built here with go.
CT_SEMCONV_OUT keeps the JSON lines and the report in that directory.
"""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from google.protobuf import json_format

import yaml

from harness import diagdir
from harness import otlp
from harness import reference
from harness.collector import Collector
from harness.otlp_sink import OtlpSink

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LIVE_CASE = "01-geom-shake-cold"
ARRIVAL_TIMEOUT_S = 60


def corpus_builds():
    """Every corpus invocation directory, case by case in name order."""
    cases = reference.corpus_dir() / "cases"
    return sorted(p.parent for p in cases.glob("*/diagnostics/*/timing.json")
                  if reference.INVOCATION_ID.match(p.parent.name))


@pytest.fixture(scope="module")
def checker(tmp_path_factory):
    built = os.environ.get("CT_SEMCONVCHECK")
    if built:
        return Path(built)
    out = tmp_path_factory.mktemp("semconvcheck") / "semconvcheck"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/semconvcheck"], cwd=HERE, check=True)
    return out


def roots(sink):
    return [s for _, s in sink.spans() if not s.parent_span_id]


def points(sink, name):
    return [p for n, p in sink.data_points() if n == name]


def statslog_blocks(case):
    text = (reference.case_dir(case) / "ccache.statslog").read_bytes()
    starts = [m.start() for m in re.finditer(rb"(?m)^#", text)]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def play_live_build(diag, sink):
    """A build that runs (its directory names this process, which is
    alive) while the follower reads its statslog, until the live metrics
    counted it; then its timing.json appears by rename."""
    build = diag / f"20261130T034340-{os.getpid()}"
    build.mkdir()
    for block in statslog_blocks(LIVE_CASE)[:3]:
        with open(build / "ccache.statslog", "ab") as f:
            f.write(block)
        time.sleep(0.1)
    running = lambda: any(p.as_int == 1 for p in points(sink, "ct.build.running"))  # noqa: E731
    assert sink.wait_for(running, ARRIVAL_TIMEOUT_S), "the live build was never counted as running"
    staged = build / ".tmp.timing.json.abcdefgh.1"
    shutil.copyfile(reference.invocation_dir(LIVE_CASE) / "timing.json", staged)
    os.rename(staged, build / "timing.json")
    (build / "ccache.statslog").unlink()
    assert sink.wait_for(lambda: len(roots(sink)) >= 1, ARRIVAL_TIMEOUT_S), "the live build's trace never came"


def write_json_lines(sink, path):
    with open(path, "w") as f:
        for req in sink.requests():
            f.write(json.dumps(json_format.MessageToDict(req.message), separators=(",", ":")) + "\n")


@pytest.fixture(scope="module")
def received(collector_binary, tmp_path_factory):
    """The sink after one collector saw the live build and every corpus
    build, and the OTLP/JSON lines of everything it accepted."""
    tmp = tmp_path_factory.mktemp("conformance")
    diag = Path(os.path.realpath(tmp)) / "diag"
    diag.mkdir()
    builds = corpus_builds()
    assert builds, f"no corpus build under {reference.corpus_dir()}"
    extra = {
        "history": {"enabled": True},
        "live": {"interval": "100ms"},
    }
    with OtlpSink() as sink:
        proc = Collector(collector_binary, tmp / "collector", include=[diag], exporter_endpoint=sink.endpoint,
                         receiver_extra=extra, storage_dir=tmp / "storage", logs=True)
        proc.start()
        try:
            time.sleep(1.0)
            play_live_build(diag, sink)
            for n, build in enumerate(builds, start=2):
                diagdir.add_build(diag, build)
                assert sink.wait_for(lambda: len(roots(sink)) >= n, ARRIVAL_TIMEOUT_S), \
                    f"{build} did not arrive\n{proc.describe()}"
            sink.wait_quiet(1.0, 20)
        finally:
            code = proc.stop()
        assert code == 0 and not proc.killed, proc.describe()
    assert not sink.rejected(), sink.rejected()
    out = Path(os.environ.get("CT_SEMCONV_OUT") or tmp / "out")
    out.mkdir(parents=True, exist_ok=True)
    lines = out / "collector.jsonl"
    write_json_lines(sink, lines)
    return sink, lines, len(builds) + 1


def test_collector_output_conforms_to_the_registry(received, checker):
    sink, lines, builds = received
    for signal in ("traces", "metrics", "logs"):
        assert sink.requests(signal), f"no {signal} received"
    run = subprocess.run([str(checker), "-allow", str(HERE / "allowed.txt"), str(lines)],
                         capture_output=True, text=True)
    (lines.parent / "report.txt").write_text(run.stdout + run.stderr)
    print(f"\n{builds} builds, {len(sink.requests())} requests -> {lines}\n{run.stdout}{run.stderr}")
    assert run.returncode == 0, f"semconvcheck exit {run.returncode}:\n{run.stdout}{run.stderr}"


def test_running_build_is_an_active_pipeline_run(received):
    """cicd.pipeline.run.active beside ct.build.running (which the dashboard
    keeps using): 1 for the live build's pipeline while it ran, 0 once its
    timing.json came, with the pipeline name its trace carries."""
    sink, _, _ = received
    live_root = next(r for r, s in sink.spans() if not s.parent_span_id
                     and r.get("ct.invocation_id", "").endswith(f"-{os.getpid()}"))
    active = [(otlp.attributes(p.attributes), p.as_int) for p in points(sink, "cicd.pipeline.run.active")]
    assert active, "no cicd.pipeline.run.active point"
    assert all(a == {"cicd.pipeline.name": live_root["cicd.pipeline.name"], "cicd.pipeline.run.state": "executing"}
               for a, _ in active), active
    values = [v for _, v in active]
    assert 1 in values and values[-1] == 0, values
    running = [p.as_int for p in points(sink, "ct.build.running")]
    assert 1 in running and running[-1] == 0, running


def test_one_metrics_resource_per_host(received):
    """The live metrics and the build metrics of one host share one resource
    (Prometheus: the same job/instance), with the default host identity."""
    sink, _, _ = received
    resources = {}
    for req in sink.requests("metrics"):
        for rm in req.message.resource_metrics:
            key = tuple(sorted(otlp.attributes(rm.resource.attributes).items()))
            names = {m.name for sm in rm.scope_metrics for m in sm.metrics}
            resources.setdefault(key, set()).update(names)
    assert len(resources) == 1, "\n".join(f"{dict(k)}: {sorted(v)}" for k, v in resources.items())


def test_units_are_the_declared_ones(received):
    """Every metric the receiver sent has the unit metadata.yaml declares
    (and documentation.md, generated from it, shows)."""
    sink, _, _ = received
    declared = {name: m["unit"] for name, m in
                yaml.safe_load((REPO / "go-receiver" / "metadata.yaml").read_text())["metrics"].items()}
    sent = {}
    for req in sink.requests("metrics"):
        for rm in req.message.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    sent.setdefault(m.name, set()).add(m.unit)
    wrong = {n: (u, declared.get(n)) for n, u in sent.items() if u != {declared.get(n)}}
    assert not wrong, f"sent units vs metadata.yaml: {wrong}"
