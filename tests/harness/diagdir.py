"""Put builds into a watched diagnostics parent the way ct-cake finishes them.

A build appears in one step: it is assembled in a staging directory next to
the watched one and renamed into place (same file system, so atomic). The
receiver therefore never sees a half-copied build, just as ct-cake's
timing.json appears by atomic rename (formats.md §1.5).
"""

import os
import shutil
from pathlib import Path


def _staging(diag):
    staging = Path(diag).parent / (Path(diag).name + ".staging")
    staging.mkdir(exist_ok=True)
    return staging


def _publish(diag, staged):
    final = Path(diag) / staged.name
    os.rename(staged, final)
    return final


def add_build(diag, invocation_dir):
    """Copy a real invocation directory into `diag`; returns the new path."""
    staged = _staging(diag) / Path(invocation_dir).name
    shutil.copytree(invocation_dir, staged)
    return _publish(diag, staged)


def add_truncated_build(diag, name):
    """A build whose timing.json is cut off mid-document."""
    staged = _staging(diag) / name
    staged.mkdir()
    (staged / "timing.json").write_text('{"version": 1, "phases": [')
    return _publish(diag, staged)


def add_unreadable_build(diag, name):
    """A build whose timing.json cannot be read.

    chmod 000 stops reads for ordinary users only; root (CI runs as root)
    reads it anyway, so there timing.json is made a directory instead, which
    fails to read for everyone (EISDIR). Returns (path, how) for messages.
    """
    staged = _staging(diag) / name
    staged.mkdir()
    timing = staged / "timing.json"
    if os.geteuid() == 0:
        timing.mkdir()
        how = "a directory named timing.json (running as root, chmod cannot deny reads)"
    else:
        timing.write_text('{"version": 1}\n')
        timing.chmod(0)
        how = "timing.json with mode 000"
    return _publish(diag, staged), how
