"""The OTLP sink itself, fed with real OTLP bodies from the corpus (no collector).

If the sink miscounted, every collector test would judge the wrong data, so
its counts are checked against decoding the same files directly.
"""

import gzip
import threading
import time
import urllib.error
import urllib.request

import pytest
from google.protobuf.message import DecodeError

from harness import otlp
from harness import reference
from harness.otlp_sink import OtlpSink

CASES = ["01-geom-shake-cold", "12-geom-ninja-cold-native-flock"]


def post(sink, path, body, encoding=None, timeout=10):
    """POST like an otlphttp exporter; returns (status, content type, body)."""
    headers = {"Content-Type": "application/x-protobuf"}
    if encoding:
        headers["Content-Encoding"] = encoding
    req = urllib.request.Request(sink.endpoint + path, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.headers.get("Content-Type"), resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers.get("Content-Type"), exc.read()


def corpus_body(case, name):
    return (reference.case_dir(case) / "reference" / name).read_bytes()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("encoding", [None, "gzip"])
def test_traces_decoded_like_the_file(sink, case, encoding):
    raw = corpus_body(case, "001-traces.pb")
    want = otlp.decode("traces", raw)
    body = gzip.compress(raw) if encoding == "gzip" else raw

    status, ctype, payload = post(sink, "/v1/traces", body, encoding)

    assert status == 200
    assert ctype == "application/x-protobuf"
    otlp.SIGNALS["traces"][1]().ParseFromString(payload)  # a valid (empty) response
    [received] = sink.requests("traces")
    assert received.message == want
    assert received.content_encoding == encoding
    assert len(sink.spans()) == len(otlp.span_records(want)) > 0
    resource, span = sink.spans()[0]
    assert resource["ct.invocation_id"] == reference.invocation_dir(case).name
    assert span.trace_id == want.resource_spans[0].scope_spans[0].spans[0].trace_id


@pytest.mark.parametrize("case", CASES)
def test_metrics_decoded_like_the_file(sink, case):
    raw = corpus_body(case, "002-metrics.pb")
    want = otlp.decode("metrics", raw)

    status, ctype, _ = post(sink, "/v1/metrics", gzip.compress(raw), "gzip")

    assert (status, ctype) == (200, "application/x-protobuf")
    assert sink.requests("metrics")[0].message == want
    assert len(sink.data_points()) == len(otlp.data_points(want)) > 0
    assert sink.spans() == []


@pytest.mark.parametrize("body, encoding", [
    (b"this is not protobuf", None),
    ("truncated", None),                     # a real body cut short
    (b"\x1f\x8b not really gzip", "gzip"),
])
def test_garbage_is_rejected_with_400(sink, body, encoding):
    if body == "truncated":
        body = corpus_body(CASES[0], "001-traces.pb")[:-7]
    if encoding is None:  # the premise: the real decoder rejects it too
        with pytest.raises(DecodeError):
            otlp.decode("traces", body)

    status, _, _ = post(sink, "/v1/traces", body, encoding)

    assert status == 400
    assert sink.requests() == []
    assert [r.status for r in sink.rejected()] == [400]


def test_unknown_path_is_404(sink):
    status, _, _ = post(sink, "/v1/profiles", corpus_body(CASES[0], "001-traces.pb"))
    assert status == 404
    assert sink.requests() == []


def test_concurrent_posts_are_all_recorded(sink):
    raw = corpus_body(CASES[0], "001-traces.pb")
    per_body = len(otlp.span_records(otlp.decode("traces", raw)))
    statuses = []

    def client():
        for _ in range(3):
            statuses.append(post(sink, "/v1/traces", gzip.compress(raw), "gzip")[0])

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert statuses == [200] * 24
    assert len(sink.spans()) == 24 * per_body


def test_wait_for_is_bounded_and_wakes_on_data(sink):
    started = time.monotonic()
    assert sink.wait_for(lambda: sink.spans(), timeout=0.3) is False
    assert 0.3 <= time.monotonic() - started < 2

    raw = corpus_body(CASES[0], "001-traces.pb")
    timer = threading.Timer(0.2, post, args=(sink, "/v1/traces", raw))
    timer.start()
    try:
        assert sink.wait_for(lambda: sink.spans(), timeout=10)
        assert sink.wait_quiet(0.2, timeout=10)
    finally:
        timer.join(timeout=10)


def test_held_requests_are_recorded_and_answered_on_release(sink):
    raw = corpus_body(CASES[0], "001-traces.pb")
    assert post(sink, "/v1/traces", raw)[0] == 200  # not held yet
    sink.hold()
    answers = []
    client = threading.Thread(target=lambda: answers.append(post(sink, "/v1/traces", raw)[0]))
    client.start()
    try:
        assert sink.wait_for(lambda: len(sink.held()) == 1, timeout=10)
        client.join(timeout=0.5)
        assert client.is_alive() and answers == [], "a held request was answered"
        assert [r.seq for r in sink.held()] == [2]
        assert len(sink.requests()) == 2
    finally:
        sink.release()
        client.join(timeout=10)
    assert answers == [200]
    assert post(sink, "/v1/traces", raw)[0] == 200  # released: answered at once
    assert len(sink.held()) == 1


def test_stop_releases_the_port():
    s = OtlpSink().start()
    port = s.port
    s.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/traces", data=b"", timeout=2)
