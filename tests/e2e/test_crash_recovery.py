"""kill -9 in the middle of a backlog, then restart: nothing lost, repeats exact.

The receiver checkpoints a build in file_storage only after the exporter's
(persistent) queue accepted it, so a crash can only cause a build to be sent
again, never to be lost; deterministic IDs make any such repeat an exact copy.

So that "repeats are exact" is never checked on zero repeats, the kill hits
exports in flight: the sink records what it is sent but stops answering
just before, so those builds are still in the persistent queue and must be
sent again after the restart. The number of repeated builds is printed and
recorded (junit property `builds_repeated`).
"""

import shutil
from collections import defaultdict

from harness import collector as collector_mod
from harness import reference

BUILDS = 200


def _make_backlog(diag, corpus_dir):
    """BUILDS finished builds: case 01's timing.json under distinct ids."""
    src = reference.invocation_dir("01-geom-shake-cold") / "timing.json"
    for i in range(BUILDS):
        d = diag / f"20261130T{100000 + i:06d}-{2000 + i}"
        d.mkdir()
        shutil.copyfile(src, d / "timing.json")


def _fingerprint(span):
    return (span.name, span.parent_span_id, span.start_time_unix_nano,
            span.end_time_unix_nano, span.SerializeToString(deterministic=True))


def _trace_ids(requests):
    return {s.trace_id for r in requests if r.signal == "traces"
            for rs in r.message.resource_spans for ss in rs.scope_spans for s in ss.spans}


def test_kill_9_mid_backlog_loses_nothing_and_repeats_are_exact(
        collector_binary, corpus_dir, sink, diag, tmp_path, record_property):
    _make_backlog(diag, corpus_dir)
    per_build = len(reference.reference_spans("01-geom-shake-cold"))
    storage = tmp_path / "storage"
    extra = {"start_at": "beginning", "max_builds_per_poll": 4}

    def traces_seen():
        return {s.trace_id for _, s in sink.spans()}

    first = collector_mod.Collector(collector_binary, tmp_path / "c1", include=[diag],
                                    exporter_endpoint=sink.endpoint,
                                    receiver_extra=extra, storage_dir=storage)
    first.start()
    try:
        sink.wait_for(lambda: len(traces_seen()) >= 30, 60)
        sink.hold()
        assert sink.wait_for(lambda: sink.held(), 30), "no export arrived after the sink stopped answering"
    finally:
        first.kill()
        sink.release()
    before = len(traces_seen())
    in_flight = _trace_ids(sink.held())
    assert before < BUILDS, f"the backlog was done before the kill ({before}); nothing was tested"

    second = collector_mod.Collector(collector_binary, tmp_path / "c2", include=[diag],
                                     exporter_endpoint=sink.endpoint,
                                     receiver_extra=extra, storage_dir=storage)
    second.start()
    try:
        sink.wait_for(lambda: len(traces_seen()) >= BUILDS, 120)
        assert sink.wait_quiet(3.0, 30)
    finally:
        code = second.stop()
    assert code == 0, second.describe()

    spans = defaultdict(list)
    for _, s in sink.spans():
        spans[(s.trace_id, s.span_id)].append(_fingerprint(s))
    traces = {tid for tid, _ in spans}
    assert len(traces) == BUILDS, f"{len(traces)} of {BUILDS} builds arrived"
    assert len(spans) == BUILDS * per_build, "distinct spans differ from builds x spans per build"
    repeated = {k: v for k, v in spans.items() if len(v) > 1}
    for key, copies in repeated.items():
        assert all(c == copies[0] for c in copies), f"span {key} repeated with different content"
    repeated_builds = {tid for tid, _ in repeated}
    record_property("builds_repeated", len(repeated_builds))
    record_property("builds_in_flight_at_kill", len(in_flight))
    print(f"kill -9 after {before} builds with {len(in_flight)} in flight; delivered {BUILDS}/{BUILDS}; "
          f"{len(repeated_builds)} builds ({len(repeated)} spans) arrived more than once, all exact")
    assert in_flight, "no build was in flight at the kill"
    assert in_flight <= repeated_builds, (
        f"{len(in_flight - repeated_builds)} of the {len(in_flight)} builds in flight at the kill "
        "were not sent again: the persistent queue lost them, or the repeat check had nothing to check")
