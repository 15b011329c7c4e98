"""The fast subset of the fault campaign (`make test-chaos-fast`, part of
`make test`); `make chaos` runs the full sizes. Each scenario's row goes
into _build/chaos/fast.md, printed at the end."""

import pytest

import chaos
import harness

ROWS = []
PEAK_RSS_LIMIT_KIB = 1 << 20   # 1 GiB: the inputs are bounded by the limits, not by the files


@pytest.fixture(scope="module")
def binary():
    return harness.collector_mod.binary_path()


@pytest.fixture(scope="module", autouse=True)
def results():
    yield
    path = chaos.write_results(ROWS, "fast")
    print("\n" + chaos.table(ROWS) + f"written to {path}")


def test_kill_storm(binary, tmp_path):
    import scenarios
    r = scenarios.kill_storm(binary, tmp_path, **chaos.FAST["kill"])
    ROWS.append(r)
    assert r["lost"] == 0, r
    assert "re-sent with other ids: 0;" in r["notes"] and "exact: True" in r["notes"], r


@pytest.mark.parametrize("variant", ["packaged", "memory"])
def test_outage(binary, tmp_path, variant):
    import scenarios
    r = scenarios.outage(binary, tmp_path, variant=variant, **chaos.FAST["outage"])
    ROWS.append(r)
    if variant == "packaged":
        assert r["lost"] == 0, r
    assert "exact: True" in r["notes"], r


def test_hostile_files(binary, tmp_path):
    import scenarios
    h = scenarios.hostile(binary, tmp_path, **chaos.FAST["hostile"])
    ROWS.extend(chaos.hostile_rows(h))
    assert len(h["cases"]) >= 50
    assert h["alive"] and h["exit"] == 0, h
    assert h["good_delivered"] == h["good_sent"], h
    assert h["peak_rss_kib"] is not None and h["peak_rss_kib"] < PEAK_RSS_LIMIT_KIB, h
    assert chaos.hostile_mismatches(h) == []
