"""No read outside the roots (issue 13), through the real collector: a
build whose timing.json is a symlink to a valid timing.json outside the
include roots is refused with a warning and never sent; a build beside it
arrives."""

import os
import shutil

from harness import checks, diagdir, reference

from .test_collector_e2e import CASE01, _wait_for_log_line, expected_spans


def test_symlinked_timing_json_out_of_the_roots_is_refused(collector, sink, diag, tmp_path):
    # A complete, valid build outside the roots: following the link would
    # send it as a build named like the one inside.
    outside = tmp_path / "outside"
    shutil.copytree(reference.invocation_dir(CASE01), outside / "secret")
    inside = diag.parent / (diag.name + ".staging") / "20261130T000000-7"
    inside.mkdir(parents=True)
    os.symlink(outside / "secret" / "timing.json", inside / "timing.json")
    linked = diagdir._publish(diag, inside)
    good = diagdir.add_build(diag, reference.invocation_dir(CASE01))

    ref = expected_spans(CASE01)
    checks.wait_for_spans(sink, len(ref), collector)
    path = str(linked / "timing.json")
    line = _wait_for_log_line(collector, path, timeout=checks.ARRIVAL_TIMEOUT_S)
    assert line and "symbolic link" in line, f"no warning refusing {path}\n{collector.describe()}"
    sink.wait_quiet(checks.QUIET_S, timeout=checks.ARRIVAL_TIMEOUT_S)
    ids = {r.get("ct.invocation_id") for r, _ in sink.spans()}
    assert ids == {good.name}, f"only the good build may arrive, got {ids}"
    assert len(sink.spans()) == len(ref)
    assert collector.running()
