"""Issue 22's shared-host faults, fast sizes (part of `make test-chaos-fast`;
`make chaos` runs the full ones). Rows go into _build/chaos/shared-host-fast.md."""

import pytest

from harness import packaged

from . import chaos, shared_host, shared_host_links

ROWS = []
SIZES = chaos.SHARED_FAST


@pytest.fixture(scope="module")
def binary():
    return packaged.collector_mod.binary_path()


@pytest.fixture(scope="module", autouse=True)
def results():
    yield
    path = chaos.write_shared_results(ROWS, "shared-host-fast")
    print("\n" + chaos.shared_host_table(ROWS) + f"written to {path}")


def test_descriptors_of_one_build_do_not_starve_finished_builds(binary, tmp_path):
    r = shared_host.fd_starvation(binary, tmp_path, **SIZES["fd"])
    ROWS.append(r)
    assert r["lost"] == 0, r
    assert r["peak_fds"] < SIZES["fd"]["nofile"] // 2, r


@pytest.mark.parametrize("which", ["invocation", "bindir"])
def test_swapped_directory_is_not_followed(binary, tmp_path, which):
    r = shared_host.swapped_dir(binary, tmp_path, which)
    ROWS.append(r)
    assert r["foreign_bytes"] == 0, r


def test_sparse_copy_is_bounded_and_off_the_delivery_path(binary, tmp_path):
    r = shared_host.sparse_copy(binary, tmp_path, **SIZES["sparse"])
    ROWS.append(r)
    assert r["lost"] == 0, r
    assert r["capture_allocated_kib"] < 1024, r
    assert r["slowest_s"] < 5.0, r


def test_logs_requests_are_bounded(binary, tmp_path):
    r = shared_host.big_requests(binary, tmp_path, **SIZES["bigreq"])
    ROWS.append(r)
    assert r["refused"] == 0 and r["lost"] == 0, r


def test_many_running_builds_stop_quickly(binary, tmp_path):
    r = shared_host.many_builds_shutdown(binary, tmp_path, **SIZES["many"])
    ROWS.append(r)
    assert r["shutdown_s"] < 10.0, r
    assert r["largest_request"] <= 4096, r


def test_recreated_directory_is_a_new_build(binary, tmp_path):
    r = shared_host.recreated_dir(binary, tmp_path)
    ROWS.append(r)
    assert r["new_records"] == 3 and (r["hits"], r["misses"]) == (3, 0), r


@pytest.mark.parametrize("kind", ["continuations", "nuls"])
def test_build_graph_memory_is_bounded(binary, tmp_path, kind):
    r = shared_host.graph_memory(binary, tmp_path, SIZES["graph_mib"], kind)
    ROWS.append(r)
    assert r["lost"] == 0 and r["graph_warnings"] == 1, r
    assert r["peak_rss_kib"] < SIZES["graph_mib"] << 10, r   # below the file: never held whole


def test_captures_of_abandoned_builds_are_deleted(binary, tmp_path):
    r = shared_host.abandoned_capture(binary, tmp_path)
    ROWS.append(r)
    assert r["captures_left"] == 0 and r["after_pid_died"] == 1, r


def test_validation_and_empty_storage(binary, tmp_path):
    r = shared_host.validation(binary, tmp_path)
    ROWS.append(r)
    assert all(r["results"].values()), r


@pytest.mark.parametrize("which", ["dotgit", "refs"])
def test_swapped_git_metadata_is_not_read(binary, tmp_path, which):
    r = shared_host_links.swapped_git(binary, tmp_path, which)
    ROWS.append(r)
    assert r["lost"] == 0 and r["foreign_bytes"] == 0, r


def test_swapped_cas_store_in_a_pool_is_not_scanned(binary, tmp_path):
    r = shared_host_links.swapped_cas_store(binary, tmp_path)
    ROWS.append(r)
    assert r["scans"] >= 5, r   # the race had its chances
    assert r["foreign_bytes"] == 0, r


def test_another_users_time_traces_are_not_read(binary, tmp_path):
    r = shared_host_links.foreign_time_traces(binary, tmp_path)
    ROWS.append(r)
    assert r["lost"] == 0 and r["traces_read"] == 0 and r["foreign_bytes"] == 0, r
