"""An OTLP/HTTP sink that keeps every request body exactly as it was sent.

The reference side of the real builds: ct-cake's own exporter
(`--otel-export --otel-protocol=http`) posts to it, and the bodies are saved
byte for byte as `reference/NNN-<signal>.pb` (the layout a differential
checker consumes). Each body is also decoded with the real OTLP classes
(tests/e2e/otlp.py); a body that does not decode is answered 400 and kept
in `rejected`. Binds 127.0.0.1 only, port chosen by the kernel.
"""

import gzip
import threading
import time
import zlib
from collections import namedtuple
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError

import e2e_path  # noqa: F401  (puts tests/e2e on sys.path)
import otlp

PATHS = {"/v1/traces": "traces", "/v1/metrics": "metrics", "/v1/logs": "logs"}
MAX_BODY_BYTES = 256 * 1024 * 1024

# body: the request body after Content-Encoding was undone (what the .pb file holds)
RawRequest = namedtuple("RawRequest", "seq signal body message content_encoding")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        sink = self.server.sink
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            return self._reply(413, b"bad length")
        body = self.rfile.read(length)
        kind = PATHS.get(self.path.split("?", 1)[0])
        if kind is None:
            return self._reply(404, b"unknown path")
        encoding = (self.headers.get("Content-Encoding") or "").strip().lower()
        try:
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            elif encoding not in ("", "identity"):
                raise ValueError(f"unsupported Content-Encoding {encoding!r}")
            message = otlp.decode(kind, body)
        except (OSError, EOFError, zlib.error, ValueError, DecodeError) as exc:
            sink._reject(f"{self.path}: {exc}")
            return self._reply(400, str(exc).encode())
        sink._record(kind, body, message, encoding or None)
        self._reply(200, otlp.SIGNALS[kind][1]().SerializeToString(), "application/x-protobuf")

    def do_GET(self):
        self.close_connection = True
        self._reply(405, b"POST OTLP protobuf")

    def _reply(self, status, payload, content_type="text/plain; charset=utf-8"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class RawSink:
    def __init__(self):
        self._server = None
        self._thread = None
        self._cond = threading.Condition()
        self.requests = []   # RawRequest, arrival order
        self.rejected = []
        self._last = time.monotonic()

    def start(self):
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.sink = self
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True,
                                        name="raw-otlp-sink")
        self._thread.start()
        return self

    def stop(self):
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            self._thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _record(self, kind, body, message, encoding):
        with self._cond:
            self.requests.append(RawRequest(len(self.requests) + 1, kind, body, message, encoding))
            self._last = time.monotonic()
            self._cond.notify_all()

    def _reject(self, reason):
        with self._cond:
            self.rejected.append(reason)
            self._cond.notify_all()

    def snapshot(self):
        with self._cond:
            return list(self.requests)

    def wait_quiet(self, quiet, timeout):
        """True once no request arrived for `quiet` s (False after `timeout`)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                now = time.monotonic()
                if now - self._last >= quiet:
                    return True
                if now >= deadline:
                    return False
                self._cond.wait(min(deadline - now, quiet - (now - self._last)))
