"""Issue 22, defect 2, the reads beside the live follower: a build's git
metadata and a CAS pool's stores, each swapped for a link to another
user's, against the real collector running as a non-root user. Rows as in
shared_host.py (foreign bytes: the victim's commit id, or the victim's
store bytes, that reached the sink)."""

import ctypes
import os
import shutil
import threading
import time
from pathlib import Path

from harness import otlp, packaged
from harness.otlp_sink import OtlpSink

from .shared_host import Sampler, _root_attrs, _runnable, _start, _victim, _wait_delivered, row

VICTIM_SHA = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2"
OWN_SHA = "0aa1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3"


def _repo(git_dir, sha):
    (git_dir / "refs" / "heads").mkdir(parents=True)
    (git_dir / "HEAD").write_text("ref: refs/heads/main\n")
    (git_dir / "refs" / "heads" / "main").write_text(sha + "\n")
    (git_dir / "config").write_text("[core]\n\trepositoryformatversion = 0\n")


def _chown_tree(top, pw, mode=0o700):
    for dirpath, dirnames, filenames in os.walk(top):
        os.chown(dirpath, pw.pw_uid, pw.pw_gid)
        os.chmod(dirpath, mode)
        for f in filenames:
            os.chown(os.path.join(dirpath, f), pw.pw_uid, pw.pw_gid)
            os.chmod(os.path.join(dirpath, f), 0o600)


def _strings_in_spans(sink):
    out = []
    for res, span in sink.spans():
        out.extend(v for v in res.values() if isinstance(v, str))
        out.extend(v for v in (otlp.any_value(kv.value) for kv in span.attributes) if isinstance(v, str))
    return out


def swapped_git(binary, scratch, which):
    """As a non-root user: the work tree of finished builds has its `.git`
    (which="dotgit") or its refs directory (which="refs", a link in the
    middle of the ref's path) replaced by a link to another user's
    repository (0700) before the builds finish. The builds must arrive;
    the victim's commit id never."""
    user = packaged.ensure_user()
    root = packaged.scratch_for_others("chaos-git-")
    tree = root / "P"
    diag = tree / "bin" / "v" / "diagnostics"
    diag.mkdir(parents=True)
    for p in (tree, tree / "bin", tree / "bin" / "v", diag):
        p.chmod(0o777)   # the attacker's own tree
    victim, pw = _victim(root, user, "repo")
    _repo(victim / ".git", VICTIM_SHA)
    _chown_tree(victim / ".git", pw)
    if which == "dotgit":
        os.symlink(victim / ".git", tree / ".git")
    else:
        _repo(tree / ".git", OWN_SHA)
        shutil.rmtree(tree / ".git" / "refs")
        os.symlink(victim / ".git" / "refs", tree / ".git" / "refs")
    names = [packaged.build_name(i, hour=13) for i in range(3)]
    runnable = _runnable(binary, root)
    with OtlpSink() as sink:
        proc = _start(runnable, root, diag, sink, user=user)
        sampler = Sampler(proc)
        try:
            time.sleep(1.0)
            for n in names:
                packaged.finish_build(diag, n)
            got = _wait_delivered(sink, names, 30)
            values = _strings_in_spans(sink)
            text = proc.stderr_text()
        finally:
            rss, fds = sampler.stop()
            proc.stop()
    foreign = sum(len(v) for v in values if VICTIM_SHA in v)
    packaged.rmtree(root)
    what = "`.git`" if which == "dotgit" else "refs directory"
    return row(f"non-root: work tree's {what} a link to another user's repository", len(names), len(got),
               foreign, rss, fds, f"victim's commit id in spans: {foreign // len(VICTIM_SHA)} times; "
               f"warnings: {sum(1 for l in text.splitlines() if 'warn' in l.lower())}")


_RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True)


def _exchange(a, b):
    """renameat2(RENAME_EXCHANGE): a and b trade places atomically."""
    if _libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(a))


def _pch_entry(cell, i, size, header):
    d = cell / f"{i:016x}"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text('{"header_realpath": "%s"}' % header)
    (d / "x.gch").write_bytes(b"\0" * size)


def swapped_cas_store(binary, scratch, big_entries=3000, seconds=8.0):
    """As a non-root user: a store directory in a CAS pool (pch) flips, by
    atomic exchange every 23 ms, between the attacker's empty store and a
    link to another user's store (0700, 3 entries of 77,777 bytes). A big
    store scanned first holds each scan open long enough that the
    receiver's listing and the core's open of the flipping store see
    different things. No byte of the victim's store may be counted in the
    gauges of the flipping variant."""
    user = packaged.ensure_user()
    root = packaged.scratch_for_others("chaos-cas-")
    pool = root / "P" / "cas-pchdir"
    pool.mkdir(parents=True)
    for p in (root / "P", pool):
        p.chmod(0o777)
    for i in range(big_entries):
        _pch_entry(pool / "a-big", i, 1, "/own/a.h")
    flip = pool / "b-flip"
    flip.mkdir()
    victim, pw = _victim(root, user, "pchstore")
    for i in range(3):
        _pch_entry(victim, i, 77777, f"/SECRET/key{i}.h")
    _chown_tree(victim, pw)
    link = pool / ".b-flip.link"   # a dot-name: never a variant itself
    os.symlink(victim, link)
    diag = root / "diag"
    diag.mkdir()
    cas = ("--config=yaml:receivers::compiletools::cas: {pools: [{kind: pch, path: %s}], "
           "initial_delay: 0s, scan_interval: 100ms, max_threads: 1}" % pool)
    stop = threading.Event()
    flips = [0]

    def flipper():
        while not stop.is_set():
            _exchange(flip, link)
            flips[0] += 1
            time.sleep(0.023)

    runnable = _runnable(binary, root)
    with OtlpSink() as sink:
        proc = _start(runnable, root, diag, sink, extra=(cas,), user=user)
        sampler = Sampler(proc)
        t = threading.Thread(target=flipper, daemon=True)
        try:
            sink.wait_for(lambda: len(sink.data_points()) > 0, 30)
            t.start()
            time.sleep(seconds)
            stop.set()
            t.join(5)
            points = [(variant, name, p) for r in sink.requests("metrics") for rm in r.message.resource_metrics
                      for variant, (name, p) in _points(rm)]
            text = proc.stderr_text()
        finally:
            rss, fds = sampler.stop()
            proc.stop()
    flipped = [(name, p.as_int) for variant, name, p in points if variant == "b-flip"]
    foreign = max((v for name, v in flipped if name == "ct.cas.total_bytes"), default=0)
    scans = sum(1 for variant, name, _ in points if variant == "a-big" and name == "ct.cas.total_bytes")
    refused = text.count("symbolic link; not scanned")
    packaged.rmtree(root)
    return row("non-root: CAS store in a pool flipping with a link to another user's store", 0, 0, foreign,
               rss, fds, f"{scans} scans, {flips[0]} flips; largest b-flip total_bytes {foreign}; "
               f"refusals logged: {refused}", scans=scans, refused=refused)


def _points(rm):
    variant = otlp.attributes(rm.resource.attributes).get("ct.variant")
    for sm in rm.scope_metrics:
        for metric in sm.metrics:
            kind = metric.WhichOneof("data")
            if kind:
                for p in getattr(metric, kind).data_points:
                    yield variant, (metric.name, p)


def _corpus_time_trace():
    return Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "time-trace" / "geom-ninja-cold"


def foreign_time_traces(binary, scratch):
    """As a non-root user: a finished build (a real ninja build of the
    corpus, its timing.json's targets rewritten) whose compile targets name
    another user's object directory, where that user's clang traces are
    (0700, 29 traces). None of them may be read."""
    case = _corpus_time_trace()
    user = packaged.ensure_user()
    root = packaged.scratch_for_others("chaos-trace-")
    victim, pw = _victim(root, user, "src")
    shutil.copytree(case / "traces" / "cas-objdir", victim / "cas-objdir")
    _chown_tree(victim, pw)
    traces = list((victim / "cas-objdir").rglob("*.json"))
    trace_bytes = sum(p.stat().st_size for p in traces)
    diag = root / "diag"
    diag.mkdir()
    src_id = next((case / "diagnostics").iterdir()).name
    timing = (case / "diagnostics" / src_id / "timing.json").read_bytes()
    timing = timing.replace(b"/home/dev/src/geom-ninja", str(victim).encode())
    runnable = _runnable(binary, root)
    with OtlpSink() as sink:
        proc = _start(runnable, root, diag, sink, user=user)
        sampler = Sampler(proc)
        try:
            time.sleep(1.0)
            packaged.finish_build(diag, src_id, timing=timing)
            sink.wait_for(lambda: _root_attrs(sink, src_id) is not None, 30)
            sink.wait_quiet(1.0, 10)
            attrs = _root_attrs(sink, src_id) or {}
            got = [src_id] if attrs else []
        finally:
            rss, fds = sampler.stop()
            proc.stop()
    read = int(attrs.get("ct.build.clang.traces") or 0)
    refused = int(attrs.get("ct.build.clang.traces_refused") or 0)
    foreign = trace_bytes * read // max(len(traces), 1)
    packaged.rmtree(root)
    return row("non-root: build's targets in another user's tree, with that user's clang traces", 1, len(got),
               foreign, rss, fds, f"victim's traces read {read} of {len(traces)} ({trace_bytes} bytes in all), "
               f"refused {refused}", traces_read=read)
