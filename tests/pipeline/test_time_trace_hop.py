"""The large generated build (100k rules, CT_PIPELINE_RULES) with clang
`-ftime-trace` files beside many of its compiles, through the standard
agent -> gateway topology with a default gRPC hop (4 MiB per message):
the compile spans' clang child spans (issue 25, docs/time-trace.md) make
the trace about twice as large, and it must still arrive whole — every
span exactly once, every parent present, no request over 4 MiB, nothing
refused on the way.

The traces (timetrace_build.py) are the corpus' real clang traces, scaled
and placed inside their rules; how many child spans they give is counted
from the files by harness.clang_truth, never taken from the receiver. With
a trace on every 3rd compile (CT_PIPELINE_TRACE_EVERY) the build reaches
the default cap of `time_trace.max_spans_per_build` (100,000 clang spans):
the largest trace a build with traces can have.

Part of `make test-pipeline`: about 1.5 min on 2 cores (two thirds of it
writing the 16k trace files, ~375 MB in pytest's tmp dir). Numbers in
_build/pipeline-results/.
"""

import os
import shutil
import time

import pytest

from harness import otlp

from . import hop, timetrace_build, wholetrace

PID = 4242   # bigbuilds' invocation id ends in it: ct-cake's pid


@pytest.fixture
def traced_build(big_build, tmp_path):
    assert big_build.invocation_id.endswith(f"-{PID}")
    every = int(os.environ.get("CT_PIPELINE_TRACE_EVERY") or 3)
    t0 = time.monotonic()
    build = timetrace_build.generate(big_build, tmp_path / "build", PID, every=every)
    print(f"\n{build.traces} traces ({build.trace_bytes / 1e6:.0f} MB) beside {build.rules} rules written "
          f"in {time.monotonic() - t0:.0f} s: {build.clang_spans} clang spans expected")
    yield build
    # pytest keeps the last runs' tmp dirs: not with 375 MB of traces each.
    shutil.rmtree(tmp_path / "build", ignore_errors=True)


def test_large_build_with_clang_traces_arrives_whole(collector_binary, traced_build, diag, tmp_path,
                                                     record_result):
    assert traced_build.clang_spans > 0
    roots = []

    def summarize(signal, message):
        # The span triples, and the root's attributes: how many traces the
        # receiver read (all of them: none refused, none out of its rule).
        if signal == "traces":
            roots.extend(otlp.attributes(s.attributes) for rs in message.resource_spans
                         for ss in rs.scope_spans for s in ss.spans if not s.parent_span_id)
        return wholetrace.summarize_request(signal, message)

    run = hop.through_default_grpc_hop(collector_binary, traced_build, diag, tmp_path, summarize=summarize)
    run.numbers.update(traces=traced_build.traces, trace_bytes=traced_build.trace_bytes,
                       clang_spans_expected=traced_build.clang_spans)
    record_result(run.numbers)
    run.assert_whole()
    (root,) = roots
    assert root.get("ct.build.clang.traces") == traced_build.traces, run.context()
    assert "ct.build.clang.traces_refused" not in root, run.context()
