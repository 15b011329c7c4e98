"""An optional copy on disk of every body an OtlpSink accepts, for checking
that two runs (e.g. before and after a change) sent byte-identical OTLP.

Off unless the environment names a directory:

    CT_SINK_RECORD_DIR=DIR   each accepted request body, after its
                             Content-Encoding was undone, is written to
                             DIR/<pid>-<seq>-<signal>.pb

<seq> counts accepted requests across every sink of the process, from 1, in
the order they were recorded (zero-padded to 6 digits, so names sort in that
order), and <pid> tells the processes of one run apart: names never collide.
Each file is written under a temporary name and renamed into place, so a
reader never sees a partial body.
"""

import itertools
import os
import threading
from pathlib import Path

ENV = "CT_SINK_RECORD_DIR"

_seq = itertools.count(1)
_seq_lock = threading.Lock()


class BodyRecorder:
    def __init__(self, directory):
        self.directory = Path(directory)

    def write(self, signal, body):
        """Writes one body; returns its path. OSError on failure."""
        with _seq_lock:
            seq = next(_seq)
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{os.getpid()}-{seq:06d}-{signal}.pb"
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(body)
        os.replace(tmp, path)
        return path


def from_environment():
    """The recorder CT_SINK_RECORD_DIR asks for, or None (recording off)."""
    directory = os.environ.get(ENV)
    return BodyRecorder(directory) if directory else None
