"""A tiny OTLP/HTTP sink for the gateway smoke (standard library only).

The backend gateways export to it with `encoding: json` (gzipped, the
exporter's default) and a header naming
the gateway, so the sink can tell which backend delivered which span. It
keeps, per gateway and trace id, the span triples (span id, parent id) —
enough to check that a trace arrived whole and on exactly one gateway.

Run in-process (`Sink(port).start()`), not as a service: the smoke reads
its tallies directly. `Sink(port, capture=True)` instead keeps the raw trace
requests (the agent's protobuf, for loadgen to replay).
"""

import gzip
import json
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GATEWAY_HEADER = "X-Smoke-Gateway"


class Tally:
    """What arrived, by gateway: spans per trace, metric and log requests."""

    def __init__(self, capture=False):
        self.lock = threading.Lock()
        # With capture: the raw trace requests as received (any encoding),
        # and nothing is parsed.
        self.capture = capture
        self.captured = []
        # gateway -> trace id -> list of (span id, parent span id)
        self.spans = defaultdict(lambda: defaultdict(list))
        self.requests = defaultdict(lambda: defaultdict(int))
        self.bodies_bytes = 0

    def add_traces(self, gateway, doc):
        with self.lock:
            for rs in doc.get("resourceSpans") or []:
                for ss in rs.get("scopeSpans") or []:
                    for span in ss.get("spans") or []:
                        self.spans[gateway][span["traceId"]].append(
                            (span["spanId"], span.get("parentSpanId", "")))

    def count(self, gateway, signal, size):
        with self.lock:
            self.requests[gateway][signal] += 1
            self.bodies_bytes += size

    def traces_by_gateway(self):
        """A copy: {gateway: {trace id: [(span id, parent id), ...]}}."""
        with self.lock:
            return {gw: {tid: list(spans) for tid, spans in traces.items()}
                    for gw, traces in self.spans.items()}

    def span_count(self):
        with self.lock:
            return sum(len(s) for traces in self.spans.values() for s in traces.values())


def _handler_for(tally):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            size = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(size)
            signal = self.path.rstrip("/").rsplit("/", 1)[-1]
            gateway = self.headers.get(GATEWAY_HEADER, "unnamed")
            if tally.capture:
                with tally.lock:
                    if signal == "traces":
                        tally.captured.append((self.headers.get("Content-Type"), body))
                return self._answer(200, b"{}")
            encoding = self.headers.get("Content-Encoding", "identity")
            if encoding not in ("identity", "gzip"):
                # The otlp_http exporter's default is gzip; the smoke sets
                # nothing else, so another encoding is a misconfiguration.
                return self._answer(415, b'{"message": "gzip or identity only"}')
            try:
                if encoding == "gzip":
                    body = gzip.decompress(body)
                doc = json.loads(body or b"{}")
            except (ValueError, OSError, EOFError):
                return self._answer(400, b'{"message": "not (gzipped) JSON"}')
            tally.count(gateway, signal, size)
            if signal == "traces":
                tally.add_traces(gateway, doc)
            self._answer(200, b"{}")

        def _answer(self, status, body):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            pass

    return Handler


class Sink:
    def __init__(self, port, capture=False):
        self.tally = Tally(capture)
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self.tally))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
