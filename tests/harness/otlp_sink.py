#!/usr/bin/env python3
"""A small OTLP/HTTP (protobuf) receiver for tests: it records what it is sent.

POST /v1/traces, /v1/metrics, /v1/logs with an `application/x-protobuf` body,
optionally `Content-Encoding: gzip` (the collector's otlphttp exporter
compresses by default). Bodies are decoded with the real OTLP classes and
kept in memory; the answer is 200 with an empty Export*ServiceResponse, so
the exporter sees a healthy backend. Other paths get 404, undecodable bodies
400 (a 4xx is permanent for the exporter, so it does not retry garbage).

`hold()` makes it record requests but leave them unanswered until
`release()`, to kill a sender while its exports are in flight.

`CT_SINK_RECORD_DIR=DIR` in the environment when a sink is made: every
body it accepts is also written to DIR (sink_recording.py); off by default.

Library use:

    with OtlpSink() as sink:            # binds 127.0.0.1, free port
        ... point an exporter at sink.endpoint ...
        assert sink.wait_for(lambda: len(sink.spans()) >= 49, timeout=30)

Script use (manual debugging), from the repository root:
`PYTHONPATH=tests python -m harness.otlp_sink [--port N]` prints one line
per request until Ctrl-C.
"""

import argparse
import gzip
import signal
import threading
import time
import zlib
from collections import namedtuple
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError

from . import otlp, sink_recording

PATHS = {"/v1/traces": "traces", "/v1/metrics": "metrics", "/v1/logs": "logs"}

# Refuse absurd bodies instead of reading them into memory.
MAX_BODY_BYTES = 256 * 1024 * 1024

# A held request (OtlpSink.hold) is answered at the latest after this long.
HOLD_MAX_S = 120

# seq: 1-based arrival number; body: the request body after Content-Encoding
# was undone, byte for byte as the sender encoded it (saved as reference
# files); arrived_at: time.monotonic() when it was decoded (latency).
Received = namedtuple("Received", "seq signal body message content_encoding wire_bytes arrived_at")
Rejected = namedtuple("Rejected", "path status reason")


class _BadRequest(Exception):
    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status
        self.reason = reason


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so Go's client can keep its connection alive, as with a real
    # backend; every response carries Content-Length, which 1.1 requires.
    protocol_version = "HTTP/1.1"
    # An idle keep-alive connection must not pin a handler thread forever.
    timeout = 30
    server_version = "ct-e2e-otlp-sink/1"

    def log_message(self, fmt, *args):
        pass  # the collector's own logs are what tests read; keep stderr quiet

    def do_POST(self):
        path = self.path.split("?", 1)[0]
        kind = PATHS.get(path)
        try:
            body = self._read_body()  # always drain, or keep-alive breaks
            if kind is None:
                raise _BadRequest(404, "unknown path")
            encoding = (self.headers.get("Content-Encoding") or "").strip().lower()
            raw = _decompress(body, encoding)
            limit = self.server.sink.max_decoded_bytes
            if limit is not None and len(raw) > limit:
                # A gateway's body limit (the collector's OTLP receiver:
                # 20 MiB by default) applies to the decoded body.
                raise _BadRequest(413, f"body of {len(raw)} bytes over the {limit}-byte limit")
            message = _decode_or_400(kind, raw)
            self.server.sink._keep_on_disk(kind, raw)
        except _BadRequest as exc:
            self.server.sink._record_rejected(Rejected(path, exc.status, exc.reason))
            self._reply(exc.status, exc.reason.encode(), "text/plain; charset=utf-8")
            return
        gate = self.server.sink._record(kind, raw, message, encoding or None, len(body))
        if gate is not None:
            # Held: recorded, but the sender gets no answer until release()
            # (and none at all if it died meanwhile).
            gate.wait(HOLD_MAX_S)
            self.close_connection = True
        response = otlp.SIGNALS[kind][1]().SerializeToString()
        try:
            self._reply(200, response, "application/x-protobuf")
        except OSError:
            if gate is None:
                raise

    def do_GET(self):
        # Any body stays unread, so this connection cannot be reused.
        self.close_connection = True
        self._reply(404 if self.path.split("?", 1)[0] not in PATHS else 405,
                    b"POST OTLP protobuf to /v1/traces, /v1/metrics or /v1/logs",
                    "text/plain; charset=utf-8")

    do_PUT = do_DELETE = do_GET

    def _read_body(self):
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            raise _BadRequest(400, "bad Content-Length")
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            raise _BadRequest(413, "body too large")
        return self.rfile.read(length)

    def _reply(self, status, payload, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _decompress(body, encoding):
    try:
        if encoding in ("", "identity"):
            raw = body
        elif encoding == "gzip":
            raw = gzip.decompress(body)
        elif encoding == "deflate":
            raw = zlib.decompress(body)
        else:
            raise _BadRequest(415, f"unsupported Content-Encoding {encoding!r}")
    except (OSError, EOFError, zlib.error) as exc:
        raise _BadRequest(400, f"cannot decompress ({encoding}): {exc}")
    return raw


def _decode_or_400(kind, raw):
    try:
        return otlp.decode(kind, raw)
    except DecodeError as exc:
        raise _BadRequest(400, f"not an OTLP {kind} request: {exc}")


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a stuck connection must never block stop()
    allow_reuse_address = True


class OtlpSink:
    """An in-process OTLP/HTTP sink on 127.0.0.1. Thread-safe accessors."""

    def __init__(self, port=0, summarize=None, max_decoded_bytes=None):
        """`summarize(signal, message)`: what to keep of each request, for
        runs too big to keep every body and decoded message (a 1M-span
        build); Received.message is then its result and Received.body b"",
        and the span/point accessors below do not apply.
        `max_decoded_bytes`: a decoded body over it is answered 413, as a
        gateway with that body limit does."""
        self._port = port
        self.max_decoded_bytes = max_decoded_bytes
        self._summarize = summarize
        self._server = None
        self._thread = None
        # Condition over an RLock: predicates passed to wait_for() call the
        # accessors, which take the same lock.
        self._cond = threading.Condition(threading.RLock())
        self._received = []
        self._rejected = []
        self._hold_gate = None   # threading.Event while holding answers
        self._held = []
        self._last_change = time.monotonic()
        self._recorder = sink_recording.from_environment()

    # -- life cycle --------------------------------------------------------
    def start(self):
        if self._server is not None:
            raise RuntimeError("sink already started")
        self._server = _Server(("127.0.0.1", self._port), _Handler)
        self._server.sink = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
            name="otlp-sink", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self.release()
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()      # stops serve_forever (bounded by poll_interval)
        server.server_close()  # closes the listening socket
        self._thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self):
        return self._server.server_address[1]

    @property
    def endpoint(self):
        """Base URL for an otlphttp exporter (it appends /v1/<signal>)."""
        return f"http://127.0.0.1:{self.port}"

    # -- holding answers ----------------------------------------------------
    def hold(self):
        """From now on, record each request but leave it unanswered until
        release(): like a backend that stored a batch and then hung, so the
        sender has exports in flight (e.g. to kill it mid-export)."""
        with self._cond:
            if self._hold_gate is None:
                self._hold_gate = threading.Event()

    def release(self):
        """Answer the held requests (where the sender still listens) and
        stop holding."""
        with self._cond:
            gate, self._hold_gate = self._hold_gate, None
        if gate is not None:
            gate.set()

    def held(self):
        """The requests that were recorded while holding, in arrival order."""
        with self._cond:
            return list(self._held)

    # -- recording (called from handler threads) ---------------------------
    def _keep_on_disk(self, kind, raw):
        """The CT_SINK_RECORD_DIR copy of an accepted body. A body that
        cannot be written is answered 500 and counted as rejected, so a run
        meant to record never passes with bodies missing."""
        if self._recorder is None:
            return
        try:
            self._recorder.write(kind, raw)
        except OSError as exc:
            raise _BadRequest(500, f"cannot record the body in {self._recorder.directory}: {exc}")

    def _record(self, kind, raw, message, encoding, wire_bytes):
        """Records a request; returns the gate to wait on when holding."""
        if self._summarize is not None:
            raw, message = b"", self._summarize(kind, message)
        with self._cond:
            rec = Received(len(self._received) + 1, kind, raw, message, encoding, wire_bytes, time.monotonic())
            self._received.append(rec)
            if self._hold_gate is not None:
                self._held.append(rec)
            self._last_change = time.monotonic()
            self._cond.notify_all()
            return self._hold_gate

    def _record_rejected(self, rejected):
        with self._cond:
            self._rejected.append(rejected)
            self._last_change = time.monotonic()
            self._cond.notify_all()

    # -- accessors ---------------------------------------------------------
    def requests(self, kind=None):
        """Received (decoded) requests in arrival order; `kind` = "traces",
        "metrics" or "logs" selects one signal."""
        with self._cond:
            return [r for r in self._received if kind is None or r.signal == kind]

    def rejected(self):
        with self._cond:
            return list(self._rejected)

    def span_records(self):
        """Every span received: SpanRecord(resource attrs, scope name, span)."""
        return [rec for r in self.requests("traces") for rec in otlp.span_records(r.message)]

    def spans(self):
        """Every span received as (resource attrs dict, span) tuples."""
        return [(rec.resource, rec.span) for rec in self.span_records()]

    def data_points(self):
        """Every metric data point received as (metric name, point) tuples."""
        return [p for r in self.requests("metrics") for p in otlp.data_points(r.message)]

    # -- waiting -----------------------------------------------------------
    def wait_for(self, predicate, timeout):
        """Wait until predicate() is truthy (re-checked on every request and
        at least every 0.1 s). Returns True, or False after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.1))
            return True

    def wait_quiet(self, quiet, timeout):
        """Wait until no request has arrived for `quiet` seconds. Used after
        the expected data arrived, to let duplicates or stragglers show up.
        Returns False if requests keep coming for `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                now = time.monotonic()
                if now - self._last_change >= quiet:
                    return True
                if now >= deadline:
                    return False
                self._cond.wait(min(deadline - now, quiet - (now - self._last_change)))


def _describe(received):
    if received.signal == "traces":
        count = f"{len(otlp.span_records(received.message))} spans"
    elif received.signal == "metrics":
        count = f"{len(otlp.data_points(received.message))} points"
    else:
        logs = received.message.resource_logs
        count = f"{sum(len(sl.log_records) for rl in logs for sl in rl.scope_logs)} log records"
    return f"{received.signal}: {count}, {received.wire_bytes} bytes, encoding={received.content_encoding}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=4318,
                    help="port on 127.0.0.1 (0 = any free port; default 4318)")
    args = ap.parse_args()

    def interrupt(*_):
        raise KeyboardInterrupt  # SIGTERM stops cleanly, like Ctrl-C
    signal.signal(signal.SIGTERM, interrupt)
    sink = OtlpSink(args.port).start()
    print(f"OTLP/HTTP sink on {sink.endpoint} (Ctrl-C stops)", flush=True)
    shown_ok = shown_bad = 0
    try:
        while True:
            sink.wait_for(lambda: len(sink.requests()) > shown_ok
                          or len(sink.rejected()) > shown_bad, 1.0)
            for r in sink.requests()[shown_ok:]:
                print(_describe(r), flush=True)
                shown_ok += 1
            for r in sink.rejected()[shown_bad:]:
                print(f"rejected {r.path}: {r.status} {r.reason}", flush=True)
                shown_bad += 1
    except KeyboardInterrupt:
        pass
    finally:
        sink.stop()


if __name__ == "__main__":
    main()
