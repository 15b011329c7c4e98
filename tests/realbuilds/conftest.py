"""Fixtures of the real-build suite and its per-scenario summary table.

* `ct_install`: compiletools 13.1.4 in the ct venv, ccache, ninja, cmake, make,
  g++, git. Missing -> FAIL when CI=true (a broken CI image must not pass
  as "skipped"), skip with the install command otherwise.
* `collector_binary` (tests/conftest.py): missing -> fail.
* `campaign` (session): projects, the live collector and its sink; builds run
  lazily per scenario; every process is stopped in teardown, pass or fail.
"""

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness import ctrun

from . import scenarios
from .campaign import Campaign

REPO = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() == "true"
TOOLS = ("ccache", "ninja", "cmake", "make", "g++", "git", "flock")
_TABLE_KEY = "realbuild"
_session_t0 = time.monotonic()


def _missing_install():
    problems = []
    path = "/usr/local/bin:/usr/bin:/bin"
    for tool in TOOLS:
        if not shutil.which(tool, path=path):
            problems.append(f"{tool} not on PATH")
    venv = ctrun.ct_venv()
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, "bin", "ct-cake")):
        problems.append(f"no ct-cake in {venv}")
    else:
        try:
            out = subprocess.run(
                [py, "-c", "import importlib.metadata as m, compiletools.otel; print(m.version('compiletools'))"],
                capture_output=True, text=True, timeout=60)
            if out.returncode != 0 or out.stdout.strip() != "13.1.4":
                problems.append(f"compiletools[otel] 13.1.4 not importable in {venv}: "
                                f"{out.stdout.strip()} {out.stderr.strip()[-300:]}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"{py}: {exc}")
    return problems


def need(problems, what):
    if not problems:
        return
    msg = f"{what}: " + "; ".join(problems) + ". Install with tests/install-deps.sh realbuilds"
    if IN_CI:
        pytest.fail(f"CI=true and the real-build dependencies are missing -- {msg}", pytrace=False)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def ct_install():
    need(_missing_install(), "real builds need compiletools and a C++ toolchain")


def realbuilds_dir():
    return Path(os.environ.get("CT_REALBUILDS_DIR") or REPO / "_build" / "realbuilds")


@pytest.fixture(scope="session")
def campaign(ct_install, collector_binary):
    c = Campaign(realbuilds_dir(), scenarios.selected(), collector_binary)
    try:
        c.setup()
        yield c
    finally:
        c.teardown()
    assert not c.session_problems, "; ".join(c.session_problems)


# ---------------------------------------------------------------------------
# per-scenario pass/fail table

def record(request, **row):
    """Called by tests: one row of the summary table."""
    request.node.user_properties.append((_TABLE_KEY, row))


_ROWS = {}   # nodeid -> row of the summary table
_RANK = {"PASS": 0, "SKIP": 1, "FAIL": 2, "ERROR": 3}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    callspec = getattr(item, "callspec", None)
    scenario = callspec.params.get("scenario") if callspec else None
    row = _ROWS.setdefault(item.nodeid, {"scenario": scenario} if scenario else {})
    for key, val in item.user_properties:
        if key == _TABLE_KEY:
            row.update(val)
    if rep.when == "call":
        result = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}[rep.outcome]
    elif rep.failed:
        result = "ERROR"          # fixture setup/teardown failed
    elif rep.skipped:
        result = "SKIP"
    else:
        return
    if _RANK[result] >= _RANK.get(row.get("result"), -1):
        row["result"] = result
    if not rep.passed and not row.get("reason"):
        if rep.skipped and isinstance(rep.longrepr, tuple):
            text = rep.longrepr[2]
        else:
            text = rep.longreprtext or ""
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        row["reason"] = (lines[-1] if lines else "")[:200]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    rows = [r for r in _ROWS.values() if r.get("scenario")]
    extra = [r for r in _ROWS.values() if r.get("line")]
    if not rows and not extra:
        return
    tr = terminalreporter
    tr.section("real builds: ours vs ct-cake --otel-export")
    for r in extra:
        tr.write_line(r["line"])
    if not rows:
        return
    cols = ("scenario", "backend", "kind", "statslog", "watch", "rc", "spans", "metrics", "result", "reason")
    table = [cols] + [tuple(str(r.get(c, "")) for c in cols) for r in rows]
    widths = [min(max(len(t[i]) for t in table), 40 if i < len(cols) - 1 else 200) for i in range(len(cols))]
    for i, t in enumerate(table):
        tr.write_line("  ".join(v[:widths[j]].ljust(widths[j]) for j, v in enumerate(t)).rstrip())
        if i == 0:
            tr.write_line("  ".join("-" * w for w in widths))
    passed = sum(r.get("result") == "PASS" for r in rows)
    tr.write_line(f"{passed} of {len(rows)} scenarios pass; "
                  f"wall time so far {time.monotonic() - _session_t0:.1f} s; case directories under "
                  f"{realbuilds_dir() / 'out'}")
