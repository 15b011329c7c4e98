"""Access to the corpus: real ct-cake builds and what ct-cake itself exported.

Expected values in the tests come from here, never from hard-coded numbers.
"""

import json
import os
import re
from pathlib import Path

from . import otlp

REPO = Path(__file__).resolve().parents[2]
INVOCATION_ID = re.compile(r"^\d{8}T\d{6}-\d+$")  # formats.md §1.2


def corpus_dir():
    return Path(os.environ.get("CT_CORPUS_DIR") or REPO.parent / "shared" / "corpus")


def case_dir(case):
    path = corpus_dir() / "cases" / case
    if not path.is_dir():
        raise FileNotFoundError(f"corpus case {path} not found (set CT_CORPUS_DIR?)")
    return path


def invocation_dir(case):
    """The case's one diagnostics/<invocation-id>/ directory."""
    dirs = [d for d in (case_dir(case) / "diagnostics").iterdir()
            if d.is_dir() and INVOCATION_ID.match(d.name)]
    if len(dirs) != 1:
        raise ValueError(f"{case}: expected one invocation dir, found {dirs}")
    return dirs[0]


def reference_request(case, name="001-traces.pb"):
    """ct-cake's own export for the case, decoded with the real OTLP decoder."""
    return otlp.decode("traces", (case_dir(case) / "reference" / name).read_bytes())


def reference_spans(case):
    """The build trace ct-cake exported, as (resource attrs, span) tuples."""
    return [(r.resource, r.span) for r in otlp.span_records(reference_request(case))]


def timing_event_count(timing_path):
    """Events in a timing.json (root + every phase and rule, recursively).

    Used to check that a reference is complete: ct-cake drops spans on big
    builds (formats.md §3.3), and such a reference must not define "expected".
    """
    doc = json.loads(Path(timing_path).read_text())

    def count(events):
        return sum(1 + count(e.get("rules", []) + e.get("children", [])) for e in events)

    return 1 + count(doc.get("phases", []))
