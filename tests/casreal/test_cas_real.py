"""CAS store health on real stores: real ct-cake builds fill real obj and exe
stores, then `ct-cache-report --json` and our collector scan the same stores
and every number must agree.

Needs the compiletools venv of `tests/install-deps.sh realbuilds` (ct-cake,
ct-cache-report 13.1.4), g++ and ccache; `.ci/run` installs them.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness import collector as collector_mod
from harness import ctrun
from harness import projects
from harness.otlp_sink import OtlpSink

VARIANT = "gcc.cxx17.debug"
# ct-cache-report's JSON keys -> our gauge names, per store kind.
REPORT_KEYS = {
    "obj": ("cas-objdir-report", {"total-entries": "ct.cas.total_entries", "total-bytes": "ct.cas.total_bytes",
                                  "unique-src-deps-count": "ct.cas.unique_buckets",
                                  "duplicated-groups-count": "ct.cas.duplicate_groups",
                                  "wasted-bytes": "ct.cas.wasted_bytes"}),
    "exe": ("cas-exedir-report", {"total-entries": "ct.cas.total_entries", "total-bytes": "ct.cas.total_bytes",
                                  "unique-buckets-count": "ct.cas.unique_buckets",
                                  "duplicated-groups-count": "ct.cas.duplicate_groups",
                                  "wasted-bytes": "ct.cas.wasted_bytes"}),
}


def _require_ct():
    ct = Path(ctrun.ct_venv()) / "bin" / "ct-cake"
    if not ct.exists():
        msg = f"{ct} missing: run tests/install-deps.sh realbuilds"
        if os.environ.get("CI") == "true":
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)


def _ct(argv, cwd, env, log):
    with open(log, "ab") as out:
        proc = subprocess.run(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=600)
    return proc.returncode


@pytest.fixture(scope="module")
def built_stores(tmp_path_factory):
    """A workspace whose obj and exe stores hold two builds of every TU: one
    plain, one with an extra -D macro (same source and dependency hashes,
    different command: duplicate groups with real waste)."""
    _require_ct()
    root = tmp_path_factory.mktemp("casreal")
    src, _ = projects.make_project(str(root), "shapes")
    ws = projects.clone(src, str(root / "ws"))
    env = ctrun.build_env(str(root), str(root / "ccache"))
    log = root / "ct.log"
    base = ["ct-cake", f"--variant={VARIANT}", "--backend=shake"]
    assert _ct(base, ws, env, log) == 0, log.read_text(errors="replace")[-3000:]
    rc = _ct(base + ["--append-CXXFLAGS=-O1"], ws, env, log)
    assert rc == 0, log.read_text(errors="replace")[-3000:]
    cells = {kind: Path(ws) / f"cas-{kind}dir" / VARIANT for kind in ("obj", "exe")}
    for kind, cell in cells.items():
        assert cell.is_dir(), f"ct-cake left no {kind} store at {cell}"
    report_json = subprocess.run(
        ["ct-cache-report", f"--variant={VARIANT}", "--json",
         f"--cas-objdir={cells['obj']}", f"--cas-exedir={cells['exe']}"],
        cwd=ws, env=env, capture_output=True, text=True, timeout=300)
    assert report_json.returncode == 0, report_json.stderr[-3000:]
    return cells, json.loads(report_json.stdout)


def _our_gauges(cells, tmp_path):
    """Scan `cells` with the real collector process; {kind: {metric: value}}."""
    cas = {"stores": [{"kind": k, "path": str(p)} for k, p in cells.items()],
           "initial_delay": "0s", "scan_interval": "1h"}
    with OtlpSink() as sink:
        c = collector_mod.Collector(collector_mod.binary_path(), tmp_path / "collector",
                                    include=[tmp_path / "no-builds"], exporter_endpoint=sink.endpoint,
                                    receiver_extra={"cas": cas})
        c.start()
        try:
            assert sink.wait_for(lambda: len(sink.data_points()) >= 5 * len(cells), 60), c.describe()
        finally:
            c.stop()
        got = {}
        for name, point in sink.data_points():
            kind = next(a.value.string_value for a in point.attributes if a.key == "cas_kind")
            got.setdefault(kind, {})[name] = point.as_int
        return got


def test_real_stores_match_ct_cache_report(built_stores, tmp_path):
    cells, report = built_stores
    got = _our_gauges(cells, tmp_path)
    mismatches = []
    for kind, (report_key, keys) in REPORT_KEYS.items():
        rep = report[report_key]
        for json_key, metric in keys.items():
            if got.get(kind, {}).get(metric) != rep[json_key]:
                mismatches.append(f"{kind} {metric}: ours {got.get(kind, {}).get(metric)}, "
                                  f"ct-cache-report {rep[json_key]}")
    assert not mismatches, "\n".join(mismatches)
    # The second build must have made real duplicates, or the test proves little.
    assert report["cas-objdir-report"]["duplicated-groups-count"] > 0
    assert report["cas-objdir-report"]["wasted-bytes"] > 0
    print(f"real stores: obj {got['obj']}, exe {got['exe']}")
