"""The shared-host faults of issue 22 against the real collector: one user
starving every build, a swapped directory leaking another user's file, a
recreated directory, and the other defects of that issue. Each scenario
returns a row: fault, builds sent, delivered, lost, foreign bytes read,
peak RSS, peak descriptors, notes (chaos.shared_host_table)."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from harness import otlp, packaged
from harness.otlp_sink import OtlpSink

SECRET = "/SECRET/"
MAKE_LINE = '{"target":"/o/a.o","start_ns":1796009765464839000,"end_ns":1796009765542899000}\n'


def row(fault, sent, delivered, foreign=0, rss=None, fds=None, notes="", **extra):
    return {"fault": fault, "sent": sent, "delivered": delivered, "lost": sent - delivered,
            "foreign_bytes": foreign, "peak_rss_kib": rss, "peak_fds": fds, "notes": notes, **extra}


class Sampler:
    """Samples a running collector's descriptors and RSS every 0.1 s."""

    def __init__(self, proc):
        self.proc, self.fds, self.rss = proc, 0, 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            pid = self.proc.collector_pid()
            try:
                self.fds = max(self.fds, len(os.listdir(f"/proc/{pid}/fd")))
            except OSError:
                pass
            self.rss = max(self.rss, packaged.peak_rss_kib(self.proc) or 0)
            time.sleep(0.1)

    def stop(self):
        self._stop.set()
        self._t.join(5)
        return self.rss, self.fds


def live_records(sinks):
    """(resource attrs, record attrs, event name) of every log record."""
    out = []
    for sink in sinks:
        for r in sink.requests("logs"):
            for rl in r.message.resource_logs:
                res = otlp.attributes(rl.resource.attributes)
                for sl in rl.scope_logs:
                    for lr in sl.log_records:
                        out.append((res, otlp.attributes(lr.attributes), lr.event_name))
    return out


def foreign_bytes(sinks, *dirs):
    """Bytes of another user's secret that reached the sinks (string
    values naming /SECRET/) or the capture directories given."""
    n = 0
    for res, attrs, _ in live_records(sinks):
        n += sum(len(v) for v in list(attrs.values()) + list(res.values()) if isinstance(v, str) and SECRET in v)
    for sink in sinks:
        for res, span in sink.spans():
            for kv in span.attributes:
                v = otlp.any_value(kv.value)
                if isinstance(v, str) and SECRET in v:
                    n += len(v)
    for d in dirs:
        for p in Path(d).rglob("*"):
            try:
                if p.is_file() and not p.is_symlink() and SECRET.encode() in p.read_bytes():
                    n += p.stat().st_size
            except OSError:
                pass
    return n


def _start(binary, root, diag, sink, extra=(), user=None, capture=None, state=None, wrap=()):
    state = state or root / "state"
    state.mkdir(exist_ok=True)
    if user is not None:
        pw = packaged.pwd.getpwnam(user)
        os.chown(state, pw.pw_uid, pw.pw_gid)
    work = root / f"c{len(list(root.glob('c*')))}"
    proc = packaged.start_packaged(binary, work, state, diag, sink, extra=extra, user=user, capture=capture)
    return proc


def _runnable(binary, root):
    """A copy of the collector another user may run (the build tree's
    own directory is root's, 0750)."""
    runnable = root / "otelcol-compiletools"
    shutil.copy2(binary, runnable)
    runnable.chmod(0o755)
    return runnable


def _wait_delivered(sink, names, timeout):
    want = set(names)
    sink.wait_for(lambda: packaged.Deliveries([sink]).delivered(want) == want, timeout)
    return packaged.Deliveries([sink]).delivered(want)


# -- defect 1 ---------------------------------------------------------------

def fd_starvation(binary, scratch, files, nofile=1024, finished=5):
    """One running build (PID 1, default layout) with `files` make timing
    logs in its bindir, each one line long; the collector's descriptor
    limit is `nofile`. Then `finished` builds finish beside it: all must
    arrive while the running build lasts."""
    root = Path(tempfile.mkdtemp(prefix="chaos-fd-", dir=scratch))
    bindir = root / "P" / "bin" / "v"
    diag = bindir / "diagnostics"
    running = diag / "20261201T000000-1"
    running.mkdir(parents=True)
    for i in range(files):
        (bindir / f".ct-make-timing.1.{i}.jsonl").write_text(MAKE_LINE)
    wrapper = root / "limited"
    wrapper.write_text(f"#!/bin/sh\nexec prlimit --nofile={nofile}:{nofile} -- {binary} \"$@\"\n")
    wrapper.chmod(0o755)
    names = [packaged.build_name(i, hour=12) for i in range(finished)]
    with OtlpSink() as sink:
        proc = _start(wrapper, root, diag, sink)
        sampler = Sampler(proc)
        try:
            time.sleep(3.0)   # the follower has seen every file
            t0 = time.monotonic()
            for n in names:
                packaged.finish_build(diag, n)
            got = _wait_delivered(sink, names, 30)
            took = time.monotonic() - t0
            text = proc.stderr_text()
        finally:
            rss, fds = sampler.stop()
            proc.stop()
    emfile = text.count("too many open files")
    packaged.rmtree(root)
    return row(f"one build with {files} make timing logs (nofile {nofile})", finished, len(got), 0, rss, fds,
               f"delivered within {took:.1f} s; 'too many open files' lines: {emfile}")


# -- defect 2 ---------------------------------------------------------------

def _victim(root, user, what):
    """Another user's 0700 directory the collector's user can read (as
    root, or as a member of the owner's group, could)."""
    v = root / "victim" / what
    v.mkdir(parents=True)
    pw = packaged.pwd.getpwnam(user)
    for p in (root / "victim", v):
        os.chown(p, pw.pw_uid, pw.pw_gid)
        p.chmod(0o700)
    return v, pw


def swapped_dir(binary, scratch, which):
    """As a non-root user: a followed build's invocation directory
    (which="invocation") or its bindir (which="bindir") replaced by a link
    to another user's directory; nothing of it may be read or captured."""
    user = packaged.ensure_user()
    root = packaged.scratch_for_others("chaos-swap-")
    bindir = root / "P" / "bin" / "v"
    diag = bindir / "diagnostics"
    d = diag / "20261201T000000-1"
    d.mkdir(parents=True)
    for p in (root / "P", root / "P" / "bin", bindir, diag, d):
        p.chmod(0o777)   # the attacker's own tree
    # Announced (a start record) but no file of its own read yet: the
    # next opens go through the swapped path.
    victim, pw = _victim(root, user, "dir" if which == "invocation" else "bin")
    if which == "invocation":
        secret = victim / "ccache.statslog"
        secret.write_text("".join(f"# {SECRET}key{i}.cpp\ncache_miss\n" for i in range(50)))
    else:
        secret = victim / ".ct-make-timing.1.0.jsonl"
        secret.write_text(MAKE_LINE.replace("/o/a.o", f"{SECRET}libkey.a") * 50)
    os.chown(secret, pw.pw_uid, pw.pw_gid)
    secret.chmod(0o600)
    runnable = _runnable(binary, root)
    capture = root / "capture"
    capture.mkdir()
    os.chown(capture, pw.pw_uid, pw.pw_gid)
    with OtlpSink() as sink:
        proc = _start(runnable, root, diag, sink, user=user, capture=capture)
        sampler = Sampler(proc)
        try:
            sink.wait_for(lambda: any(e == "ct.build.start" for _, _, e in live_records([sink])), 30)
            time.sleep(1.0)
            if which == "invocation":
                shutil.rmtree(d)
                os.symlink(victim, d)
            else:
                os.rename(bindir, bindir.with_name("v.old"))
                os.symlink(victim, bindir)
            time.sleep(4.0)
            foreign = foreign_bytes([sink], capture)
            text = proc.stderr_text()
        finally:
            rss, fds = sampler.stop()
            proc.stop()
    packaged.rmtree(root)
    return row(f"non-root: followed {which} directory swapped for a link to another user's", 1, 1, foreign, rss, fds,
               f"secret file {secret.name}; warnings: {sum(1 for l in text.splitlines() if 'warn' in l.lower())}")


# -- defect 3 ---------------------------------------------------------------

def sparse_copy(binary, scratch, sparse_gib, tmpfs="1g", finished=5):
    """The capture directory on another filesystem (copy mode); a running
    build's statslog is a `sparse_gib` GiB sparse file with 4 KiB written.
    Captured bytes must stay within the statslog limit and holes must not
    become data; finished builds beside it must not wait for the copy."""
    root = Path(tempfile.mkdtemp(prefix="chaos-sparse-", dir=scratch))
    diag, cap = root / "diag", root / "cap"
    diag.mkdir()
    cap.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={tmpfs}", "tmpfs", str(cap)], check=True)
    try:
        d = diag / packaged.build_name(0, hour=1).replace("-1000", "-1")
        d.mkdir()
        with open(d / "ccache.statslog", "wb") as f:
            f.write(b"# /s/a.cpp\ncache_miss\n".ljust(4096, b"\n"))
            f.truncate(sparse_gib << 30)
        names = [packaged.build_name(i, hour=12) for i in range(finished)]
        with OtlpSink() as sink:
            proc = _start(binary, root, diag, sink, capture=cap / "capture")
            sampler = Sampler(proc)
            try:
                time.sleep(2.0)
                t0 = time.monotonic()
                lat = []
                for n in names:
                    t1 = time.monotonic()
                    packaged.finish_build(diag, n)
                    _wait_delivered(sink, [n], 60)
                    lat.append(time.monotonic() - t1)
                got = packaged.Deliveries([sink]).delivered(set(names))
                time.sleep(1.0)
                used = int(subprocess.run(["du", "-sb", str(cap)], capture_output=True, text=True).stdout.split()[0])
                alloc = int(subprocess.run(["du", "-sk", str(cap)], capture_output=True, text=True).stdout.split()[0])
            finally:
                rss, fds = sampler.stop()
                proc.stop()
    finally:
        subprocess.run(["umount", "-l", str(cap)], check=False)
    packaged.rmtree(root)
    return row(f"copy mode: {sparse_gib} GiB sparse statslog (4 KiB data)", finished, len(got), 0, rss, fds,
               f"capture: {used} bytes apparent, {alloc} KiB allocated; slowest delivery {max(lat):.1f} s",
               capture_allocated_kib=alloc, slowest_s=max(lat))


# -- defect 4 ---------------------------------------------------------------

def big_requests(binary, scratch, builds=6, blocks=1000, path_len=4000, limit=20 << 20):
    """`builds` running builds with `blocks` statslog blocks of
    `path_len`-character paths each, through a gateway that refuses decoded
    bodies over `limit`; then one more build starts. Every record and every
    start record must arrive, none refused."""
    root = Path(tempfile.mkdtemp(prefix="chaos-bigreq-", dir=scratch))
    diag = root / "diag"
    diag.mkdir()
    dirs = []
    for i in range(builds):
        d = diag / f"20261201T0000{i:02d}-1"
        d.mkdir()
        path = "/" + ("p" * (path_len - 8)) + f"/{i}.cpp"
        (d / "ccache.statslog").write_text("".join(f"# {path}\ncache_miss\n" for _ in range(blocks)))
        dirs.append(d)
    late = diag / "20261201T000100-1"
    with OtlpSink(max_decoded_bytes=limit) as sink:
        proc = _start(binary, root, diag, sink)
        sampler = Sampler(proc)
        try:
            time.sleep(1.0)
            late.mkdir()
            want = builds * blocks
            sink.wait_for(lambda: sum(1 for _, _, e in live_records([sink]) if e == "ct.rule.finished") >= want
                          and _started(sink, late.name), 60)
            sink.wait_quiet(2.0, 30)
            recs = live_records([sink])
            rejected = len(sink.rejected())
        finally:
            rss, fds = sampler.stop()
            proc.stop()
    got = {n: 0 for n in [d.name for d in dirs]}
    for res, _, e in recs:
        if e == "ct.rule.finished" and res.get("ct.invocation_id") in got:
            got[res["ct.invocation_id"]] += 1
    complete = sum(1 for n in got.values() if n >= blocks)
    late_started = any(e == "ct.build.start" and res.get("ct.invocation_id") == late.name for res, _, e in recs)
    packaged.rmtree(root)
    return row(f"{builds} builds x {blocks} blocks of {path_len}-char paths, gateway limit {limit >> 20} MiB",
               builds + 1, complete + int(late_started), 0, rss, fds,
               f"requests refused: {rejected}; late build's start delivered: {late_started}",
               refused=rejected)


def _started(sink, name):
    return any(e == "ct.build.start" and res.get("ct.invocation_id") == name for res, _, e in live_records([sink]))


def many_builds_shutdown(binary, scratch, builds, statslog_mib=4):
    """`builds` running builds whose statslogs are hard links of one
    `statslog_mib` MiB statslog; peak RSS while they are read, and the
    time SIGTERM takes (the packaged unit's TimeoutStopSec is 60 s)."""
    root = Path(tempfile.mkdtemp(prefix="chaos-many-", dir=scratch))
    diag = root / "diag"
    diag.mkdir()
    master = root / "statslog"
    block = "# /s/project/lib/some_translation_unit.cpp\ncache_miss\ndirect_cache_miss\n"
    master.write_text(block * ((statslog_mib << 20) // len(block)))
    for i in range(builds):
        d = diag / f"20261201T{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}-1"
        d.mkdir()
        os.link(master, d / "ccache.statslog")
    with OtlpSink(summarize=lambda kind, m: (kind, sum(len(sl.log_records) for rl in getattr(m, "resource_logs", [])
                                                         for sl in rl.scope_logs))) as sink:
        proc = _start(binary, root, diag, sink)
        sampler = Sampler(proc)
        try:
            time.sleep(8.0)
            records = sum(r.message[1] for r in sink.requests("logs"))
            largest = max((r.message[1] for r in sink.requests("logs")), default=0)
            rss, fds = sampler.stop()
            pid = proc.collector_pid()
            t0 = time.monotonic()
            os.kill(pid, signal.SIGTERM)
            try:
                proc.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                pass
            stop_s = time.monotonic() - t0
            code = proc.proc.returncode
        finally:
            proc.stop()
    packaged.rmtree(root)
    return row(f"{builds} running builds, one {statslog_mib} MiB statslog hard-linked", builds, builds, 0, rss, fds,
               f"records in 8 s: {records}, largest request {largest}; SIGTERM to exit {stop_s:.2f} s, status {code} "
               "(the unit allows 60 s)",
               shutdown_s=stop_s, largest_request=largest)


# -- defect 5 ---------------------------------------------------------------

def recreated_dir(binary, scratch):
    """A followed build (7 misses in its statslog, captured) deleted and
    made again under the same name by a new run (3 hits), which finishes:
    its 3 records must arrive and its trace must carry 3 hits, 0 misses."""
    root = Path(tempfile.mkdtemp(prefix="chaos-recreate-", dir=scratch))
    diag = root / "diag"
    diag.mkdir()
    name = "20261201T000000-1"
    d = diag / name
    d.mkdir()
    (d / "ccache.statslog").write_text("# /s/old.cpp\ncache_miss\n" * 7)
    with OtlpSink() as sink:
        proc = _start(binary, root, diag, sink)
        sampler = Sampler(proc)
        try:
            sink.wait_for(lambda: sum(1 for r, _, e in live_records([sink]) if e == "ct.rule.finished") >= 7, 30)
            time.sleep(0.5)
            shutil.rmtree(d)
            d.mkdir()
            (d / "ccache.statslog").write_text("# /s/new.cpp\ndirect_cache_hit\n" * 3)
            time.sleep(2.5)
            tmp = d / ".tmp.timing.json"
            tmp.write_bytes(packaged.case_timing())
            os.rename(tmp, d / "timing.json")
            time.sleep(0.3)
            os.unlink(d / "ccache.statslog")   # ct-cake deletes it: only the capture has it now
            sink.wait_for(lambda: _root_attrs(sink, name) is not None, 30)
            sink.wait_quiet(2.0, 20)
            attrs = _root_attrs(sink, name) or {}
            recs = live_records([sink])
        finally:
            rss, fds = sampler.stop()
            proc.stop()
    new = sum(1 for _, a, e in recs if e == "ct.rule.finished" and a.get("ct.source") == "/s/new.cpp")
    hits, misses = attrs.get("ct.ccache.direct_hits"), attrs.get("ct.ccache.misses")
    packaged.rmtree(root)
    ok = int(hits == 3 and misses == 0 and new == 3)
    return row("followed directory deleted and made again (a new run)", 1, ok, 0, rss, fds,
               f"new run's records: {new} of 3; trace ccache: {hits} hits, {misses} misses (want 3, 0)",
               new_records=new, hits=hits, misses=misses)


def _root_attrs(sink, name):
    for res, span in sink.spans():
        if res.get("ct.invocation_id") == name and not span.parent_span_id:
            return {kv.key: otlp.any_value(kv.value) for kv in span.attributes}
    return None


# -- defect 6 ---------------------------------------------------------------

def graph_memory(binary, scratch, mib, kind):
    """A finished ninja build whose analytics.build_graphs file is `mib`
    MiB of one logical line (kind="continuations": `$` continuations) or
    of NULs (kind="nuls"); max_file_size is raised to admit it. Peak RSS
    must stay near the budget, one warning, the trace delivered."""
    root = Path(tempfile.mkdtemp(prefix="chaos-graph-", dir=scratch))
    diag = root / "diag"
    diag.mkdir()
    graph = root / "build.ninja"
    with open(graph, "wb") as f:
        if kind == "continuations":
            f.write(b"build out: phony ")
            chunk = b"in $\n " * (1 << 16)
            for _ in range((mib << 20) // len(chunk)):
                f.write(chunk)
            f.write(b"last\n")
        else:
            f.truncate(mib << 20)   # reads as NULs
    doc = json.loads(packaged.case_timing())
    doc["backend"] = "ninja"
    name = packaged.build_name(0, hour=12)
    cfg = root / "graph.yaml"
    cfg.write_text("receivers:\n  compiletools:\n    analytics:\n"
                   f"      build_graphs: [{{include: \"{diag}/*\", path: \"{graph}\"}}]\n"
                   f"    limits: {{max_file_size: {max(mib << 20, 1 << 20) + (1 << 20)}}}\n")
    with OtlpSink() as sink:
        proc = _start(binary, root, diag, sink, extra=[f"--config={cfg}"])
        sampler = Sampler(proc)
        try:
            packaged.finish_build(diag, name, timing=json.dumps(doc).encode())
            got = _wait_delivered(sink, [name], 120)
            time.sleep(0.5)
            text = proc.stderr_text()
        finally:
            rss, fds = sampler.stop()
            proc.stop()
    warned = sum(1 for line in text.splitlines() if "build graph" in line and "warn" in line.lower())
    packaged.rmtree(root)
    return row(f"build graph: {mib} MiB of {'$ continuations' if kind == 'continuations' else 'NULs'}", 1, len(got),
               0, rss, fds, f"graph warnings: {warned}", graph_warnings=warned)


# -- defect 7 ---------------------------------------------------------------

def abandoned_capture(binary, scratch):
    """A running build with a statslog (captured by hard link), its ct-cake
    killed and its directory removed, the collector restarted: the capture
    must go. A second build, its PID killed while the collector runs, must
    lose its capture when it is abandoned."""
    root = Path(tempfile.mkdtemp(prefix="chaos-abandon-", dir=scratch))
    diag = root / "diag"
    diag.mkdir()
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(2)]
    dirs = []
    for i, s in enumerate(sleepers):
        d = diag / f"20261201T00000{i}-{s.pid}"
        d.mkdir()
        (d / "ccache.statslog").write_text("# /s/a.cpp\ncache_miss\n")
        dirs.append(d)
    capture = root / "state" / "capture"

    def captured():
        for _ in range(10):   # the collector deletes while this walks
            try:
                return [p for p in capture.rglob("ccache.statslog")] if capture.exists() else []
            except FileNotFoundError:
                time.sleep(0.05)
        return []

    with OtlpSink() as sink:
        proc = _start(binary, root, diag, sink)
        try:
            sink.wait_for(lambda: len(captured()) == 2, 20)
            before = len(captured())
            sleepers[1].kill()
            sleepers[1].wait()
            sink.wait_for(lambda: len(captured()) < 2, 10)
            while_running = len(captured())
        finally:
            proc.stop()
        sleepers[0].kill()
        sleepers[0].wait()
        shutil.rmtree(dirs[0])
        proc = _start(binary, root, diag, sink)
        try:
            sink.wait_for(lambda: not captured(), 10)
            after = len(captured())
        finally:
            proc.stop()
    packaged.rmtree(root)
    return row("captures of abandoned builds (PID killed; directory removed, restart)", 2, 2 - after,
               0, None, None, f"captures: {before} at first, {while_running} after one PID died, {after} after the restart",
               captures_left=after, after_pid_died=while_running)


# -- defect 8 ---------------------------------------------------------------

def validation(binary, scratch):
    """`validate` on the configurations the collector used to accept, and
    an empty file_storage with builds on disk."""
    root = Path(tempfile.mkdtemp(prefix="chaos-validate-", dir=scratch))
    diag = root / "diag"
    diag.mkdir()
    base = f"receivers:\n  compiletools:\n    include: [\"{diag}\"]\n"
    pipes = ("exporters:\n  debug: {}\nservice:\n  pipelines:\n    traces: {receivers: [compiletools], "
             "exporters: [debug]}\n    logs: {receivers: [compiletools], exporters: [debug]}\n")
    cases = {"poll_interval: 1ns": ("    poll_interval: 1ns\n", "poll_interval"),
             "live.interval: 1ns": ("    live: {interval: 1ns}\n", "live.interval"),
             "relative build_graphs path": ("    analytics: {build_graphs: [{include: \"/x/*\", path: build.ninja}]}\n",
                                            "build_graphs[0].path"),
             "cas.collection_interval: 0s": ("    cas: {stores: [{kind: obj, path: /cas}], collection_interval: 0s}\n",
                                             "cas.collection_interval")}
    results = {}
    for label, (extra, key) in cases.items():
        cfg = root / (label.replace(" ", "_").replace(":", "").replace("/", "") + ".yaml")
        cfg.write_text(base + extra + pipes)
        r = subprocess.run([str(binary), "validate", f"--config={cfg}"], capture_output=True, text=True, timeout=60)
        results[label] = r.returncode != 0 and key in (r.stdout + r.stderr)
    names = [packaged.build_name(i, hour=12) for i in range(3)]
    for n in names:
        packaged.finish_build(diag, n)
    with OtlpSink() as sink:
        proc = _start(binary, root, diag, sink)
        try:
            _wait_delivered(sink, names, 30)
            text = proc.stderr_text()
        finally:
            proc.stop()
    warned = any("storage holds no checkpoint" in line and "warn" in line.lower() for line in text.splitlines())
    results["empty file_storage warned"] = warned
    packaged.rmtree(root)
    ok = sum(results.values())
    return row("validate / empty storage", len(results), ok, 0, None, None,
               "; ".join(f"{k}: {'ok' if v else 'ACCEPTED/SILENT'}" for k, v in results.items()), results=results)
