"""The sink's optional copy of each accepted body (CT_SINK_RECORD_DIR), fed
with real OTLP bodies from the corpus (no collector)."""

import gzip
import os
import re

from harness import sink_recording
from harness.otlp_sink import OtlpSink

from .test_sink import corpus_body, post

CASE = "01-geom-shake-cold"
NAME = re.compile(r"^(\d+)-(\d{6})-(traces|metrics|logs)\.pb$")


def test_each_accepted_body_is_written_decompressed_in_order(tmp_path, monkeypatch):
    record = tmp_path / "record"
    monkeypatch.setenv(sink_recording.ENV, str(record))
    traces = corpus_body(CASE, "001-traces.pb")
    metrics = corpus_body(CASE, "002-metrics.pb")

    with OtlpSink() as sink:
        assert post(sink, "/v1/traces", gzip.compress(traces), "gzip")[0] == 200
        assert post(sink, "/v1/metrics", metrics)[0] == 200
        assert post(sink, "/v1/traces", b"this is not protobuf")[0] == 400
        assert post(sink, "/v1/nothing", traces)[0] == 404

    files = sorted(p.name for p in record.iterdir())
    assert len(files) == 2, files   # rejected bodies are not recorded
    parsed = [NAME.match(f) for f in files]
    assert all(parsed), files
    assert {int(m.group(1)) for m in parsed} == {os.getpid()}
    first, second = (int(m.group(2)) for m in parsed)
    assert second == first + 1
    assert [m.group(3) for m in parsed] == ["traces", "metrics"]
    assert (record / files[0]).read_bytes() == traces   # gzip undone, bytes as sent
    assert (record / files[1]).read_bytes() == metrics


def test_nothing_is_written_without_the_variable(monkeypatch):
    monkeypatch.delenv(sink_recording.ENV, raising=False)
    writes = []
    monkeypatch.setattr(sink_recording.BodyRecorder, "write", lambda self, *a: writes.append(a))
    with OtlpSink() as sink:
        assert post(sink, "/v1/traces", corpus_body(CASE, "001-traces.pb"))[0] == 200
        assert len(sink.requests("traces")) == 1
    assert writes == []


def test_a_body_that_cannot_be_written_is_refused(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv(sink_recording.ENV, str(blocked / "record"))
    with OtlpSink() as sink:
        status, _, reason = post(sink, "/v1/traces", corpus_body(CASE, "001-traces.pb"))
        assert status == 500, reason
        assert sink.requests() == []
        [rejected] = sink.rejected()
        assert rejected.status == 500 and "cannot record" in rejected.reason
