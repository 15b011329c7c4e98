"""The fast subset of the fault campaign (`make test-chaos-fast`, part of
`make test`); `make chaos` runs the full sizes. Each scenario's row goes
into _build/chaos/fast.md, printed at the end."""

import pytest

from harness import packaged

from . import chaos

ROWS = []
PEAK_RSS_LIMIT_KIB = 1 << 20   # 1 GiB: the inputs are bounded by the limits, not by the files


@pytest.fixture(scope="module")
def binary():
    return packaged.collector_mod.binary_path()


@pytest.fixture(scope="module", autouse=True)
def results():
    yield
    path = chaos.write_results(ROWS, "fast")
    print("\n" + chaos.table(ROWS) + f"written to {path}")


def test_kill_storm(binary, tmp_path):
    from . import scenarios
    r = scenarios.kill_storm(binary, tmp_path, **chaos.FAST["kill"])
    ROWS.append(r)
    assert r["lost"] == 0, r
    assert "re-sent with other ids: 0;" in r["notes"] and "exact: True" in r["notes"], r


@pytest.mark.parametrize("variant", ["packaged", "memory"])
def test_outage(binary, tmp_path, variant):
    from . import scenarios
    r = scenarios.outage(binary, tmp_path, variant=variant, **chaos.FAST["outage"])
    ROWS.append(r)
    if variant == "packaged":
        assert r["lost"] == 0, r
    assert "exact: True" in r["notes"], r


def test_hostile_files(binary, tmp_path):
    from . import scenarios
    h = scenarios.hostile(binary, tmp_path, **chaos.FAST["hostile"])
    ROWS.extend(chaos.hostile_rows(h))
    assert len(h["cases"]) >= 50
    assert h["alive"] and h["exit"] == 0, h
    assert h["good_delivered"] == h["good_sent"], h
    assert h["peak_rss_kib"] is not None and h["peak_rss_kib"] < PEAK_RSS_LIMIT_KIB, h
    assert chaos.hostile_mismatches(h) == []


def test_permissions_as_non_root(binary, tmp_path):
    from . import scenarios
    p = scenarios.permissions(binary, tmp_path, **chaos.FAST["perm"])
    ROWS.extend(chaos.permission_rows(p))
    assert p["exit"] == 0 and p["good_delivered"] == p["good_sent"], p
    assert p["bad_sent"] == 0, p
    # One warning per unreadable path, and none on later polls.
    assert all(n == 1 for n in p["per_path"].values()), p["per_path"]
    assert p["steady_lines_per_poll"] == 0, p
    assert p["path_problems"] and p["parse_failures"], p
    # Once readable, every one of them arrives, once, with no new warning
    # (per_path above counts the whole log).
    assert p["bad_delivered_after_fix"] == p["unreadable"], p
    assert p["duplicates_after_fix"] == 0, p


@pytest.mark.parametrize("mode", ["full", "ro"])
def test_disk_fault(binary, tmp_path, mode):
    from . import scenarios
    r = scenarios.disk_fault(binary, tmp_path, mode=mode, **chaos.FAST["disk"])
    ROWS.append(r)
    assert r["lost"] == 0, r
    assert "re-sent while faulty: 0;" in r["notes"], r
    if mode == "full":
        assert "checkpoint write errors: 0;" not in r["notes"], r   # the disk was really full
        counted, logged = r["notes"].split("self-metric while full: ")[1].split(";")[0].split(" of ")
        assert float(counted) == int(logged.split()[0]) > 0, r       # each failed write counted
    else:
        assert "refused: read-only file system" in r["notes"], r     # refused with a clear reason
        assert "capture warnings: 0;" not in r["notes"], r
    assert "re-sent with other ids: 0;" in r["notes"] and "exact: True" in r["notes"], r


def test_identity(binary, tmp_path):
    from . import scenarios
    rows = scenarios.identity(binary, tmp_path)
    ROWS.extend(rows)
    same, reused = rows[0], rows[1]
    assert same["lost"] == 0 and same["notes"] == "traces: 2", same
    assert reused["lost"] == 0 and reused["notes"].startswith("traces: 2;") and reused["duplicates"] == 0, reused
    future, past, ahead, ahead_left = rows[2:6]
    assert ahead["delivered"] == 1 and ahead_left["delivered"] == 1, (ahead, ahead_left)
    assert future["delivered"] == 1, future
    assert past["notes"] == "refused: before 2000" and past["warnings"] == 1, past
