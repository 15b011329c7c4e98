"""The deterministic ctotel/v1 id scheme (README "Deterministic IDs",
design.md §3), computed independently of the receiver: realbuilds/compare.py
judges our ids with it, the pipeline suite predicts a build's trace id."""

import hashlib
import os
import struct


def _field(b):
    return struct.pack(">Q", len(b)) + b


def _nonzero(digest_of, n):
    out = digest_of(b"")[:n]
    counter = 0
    while out == bytes(n):
        counter += 1
        out = digest_of(_field(struct.pack(">I", counter)))[:n]
    return out


def expected_trace_id(host, invocation_dir, timestamp):
    base = _field(b"ctotel/v1/trace") + _field(host.encode()) + _field(os.fsencode(invocation_dir)) \
        + _field(timestamp.encode())
    return _nonzero(lambda extra: hashlib.sha256(base + extra).digest(), 16)


def expected_span_id(trace_id, path):
    base = _field(b"ctotel/v1/span") + _field(trace_id) + _field(b"".join(struct.pack(">I", i) for i in path))
    return _nonzero(lambda extra: hashlib.sha256(base + extra).digest(), 8)
