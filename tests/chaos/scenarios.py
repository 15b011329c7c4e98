"""The fault scenarios of issue 13. Each returns a result row:
fault, builds sent, delivered, lost, duplicates, warnings, notes."""

import json
import os
import random
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from harness import packaged
from harness.otlp_sink import OtlpSink

from .hostile import HOSTILE_CASES

STATSLOG = "# /s/a.cpp\ndirect_cache_hit\n"


def row(fault, sent, delivered, lost, dups, warnings, notes=""):
    return {"fault": fault, "sent": sent, "delivered": delivered, "lost": lost,
            "duplicates": dups, "warnings": warnings, "notes": notes}


def kill_storm(binary, scratch, backlog, added, kills, seed=13):
    """A backlog plus a writer renaming timing.json in at a steady rate
    (every 4th with a live statslog, deleted after the rename as ct-cake
    does), the collector SIGKILLed at random moments and restarted on the
    same state with the packaged config."""
    rng = random.Random(seed)
    root = Path(tempfile.mkdtemp(prefix="chaos-kill-", dir=scratch))
    diag, state = root / "diag", root / "state"
    diag.mkdir()
    names = [packaged.build_name(i) for i in range(backlog + added)]
    for n in names[:backlog]:
        packaged.finish_build(diag, n)
    procs = []
    with OtlpSink() as sink:
        stop = threading.Event()

        def writer():
            for n in names[backlog:]:
                if stop.is_set():
                    return
                live = names.index(n) % 4 == 0
                d = packaged.finish_build(diag, n, statslog=STATSLOG if live else None)
                if live:
                    time.sleep(0.02)
                    os.unlink(d / "ccache.statslog")
                time.sleep(0.05)

        w = threading.Thread(target=writer, daemon=True)
        w.start()
        for k in range(kills + 1):
            p = packaged.start_packaged(binary, root / f"c{k}", state, diag, sink)
            procs.append(p)
            if k < kills:
                time.sleep(rng.uniform(0.5, 3.0))
                p.kill()
        w.join(timeout=120)
        last = procs[-1]
        deadline = time.monotonic() + 180
        want = set(names)
        while time.monotonic() < deadline:
            if packaged.Deliveries([sink]).delivered(want) == want:
                break
            time.sleep(0.5)
        sink.wait_quiet(2.0, 30)
        last.stop()
        got = packaged.Deliveries([sink])
    delivered = got.delivered(set(names))
    dups, exact = got.duplicates()
    warnings = packaged.warning_lines(procs, "")   # before the logs go with root
    packaged.rmtree(root)
    return row(f"kill -9 storm ({kills} kills)", len(names), len(delivered),
               len(names) - len(delivered), dups, warnings,
               f"re-sent with other ids: {got.resent_with_other_ids()}; duplicates exact: {exact}")


def outage(binary, scratch, backlog, down_s, variant):
    """The sink gone for `down_s` seconds during a backlog, then back on the
    same port. variant: "packaged" (wait_for_result) or "memory" (the
    exporter's default in-memory queue)."""
    extra = [] if variant == "packaged" else \
        ["--set=exporters.otlp_http.sending_queue.wait_for_result=false"]
    root = Path(tempfile.mkdtemp(prefix=f"chaos-outage-{variant}-", dir=scratch))
    diag, state = root / "diag", root / "state"
    diag.mkdir()
    names = [packaged.build_name(i) for i in range(backlog)]
    for n in names:
        packaged.finish_build(diag, n)
    first = OtlpSink().start()
    port = first.port
    proc = packaged.start_packaged(binary, root / "c", state, diag, first, extra)
    try:
        first.wait_for(lambda: len(first.requests("traces")) >= max(1, backlog // 10), 60)
        first.stop()
        time.sleep(down_s)
        second = OtlpSink(port=port).start()
        try:
            want = set(names)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if packaged.Deliveries([first, second]).delivered(want) == want:
                    break
                if second.wait_quiet(15.0, 1.0) and len(second.requests()) > 0:
                    break
                time.sleep(0.5)
            second.wait_quiet(2.0, 30)
            got = packaged.Deliveries([first, second])
        finally:
            second.stop()
    finally:
        proc.stop()
    delivered = got.delivered(set(names))
    dups, exact = got.duplicates()
    warnings = packaged.warning_lines([proc], "")   # before the logs go with root
    packaged.rmtree(root)
    return row(f"sink down {down_s:g} s ({variant})", len(names), len(delivered),
               len(names) - len(delivered), dups, warnings,
               f"duplicates exact: {exact}")


def hostile(binary, scratch, good):
    """Every case of hostile.HOSTILE_CASES in its own invocation directory,
    `good` ordinary builds after them, one collector."""
    root = Path(tempfile.mkdtemp(prefix="chaos-hostile-", dir=scratch))
    diag, state, outside = root / "diag", root / "state", root / "outside"
    diag.mkdir()
    outside.mkdir()
    cases = []
    for i, case in enumerate(HOSTILE_CASES):
        name = packaged.build_name(i, hour=1)
        d = diag / name
        case.make(d, outside)
        cases.append((case, name, d))
    goods = [packaged.build_name(i, hour=12) for i in range(good)]
    with OtlpSink() as sink:
        # The table is about input handling, not throughput: with the
        # packaged 128-span requests, the 200k-rule case alone would be
        # 1,563 synchronous round trips to the Python sink.
        proc = packaged.start_packaged(binary, root / "c", state, diag, sink,
                                      extra=("--set=receivers.compiletools.max_request_spans=20000",))
        try:
            want = set(goods)
            for n in goods:
                packaged.finish_build(diag, n)
            sink.wait_for(lambda: packaged.Deliveries([sink]).delivered(want) == want, 180)
            sink.wait_quiet(2.0, 30)
            alive = proc.running()
            rss = packaged.peak_rss_kib(proc)
            got = packaged.Deliveries([sink])
            text = proc.stderr_text()
        finally:
            code = proc.stop()
    results = []
    for case, name, d in cases:
        sent = bool(got.trace_ids.get(name))
        warned = sum(1 for line in text.splitlines() if name in line and "warn" in line.lower())
        results.append({"case": case.name, "expect": case.expect, "sent": sent, "warnings": warned})
    delivered = got.delivered(set(goods))
    log = packaged.REPO / "_build" / "chaos" / "hostile-collector.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(text)
    packaged.rmtree(root)
    return {"cases": results, "good_sent": len(goods), "good_delivered": len(delivered),
            "alive": alive, "exit": code, "peak_rss_kib": rss}


def _cas_store(root, unreadable_shard):
    """An obj store cell with one readable shard and one the collector's
    user cannot list."""
    cell = root / "cas-objdir" / "gcc.debug"
    for shard in ("02", unreadable_shard):
        (cell / shard).mkdir(parents=True)
        (cell / shard / f"extra_{shard}2e522ad279_46f0458f99c663_0000000000000001.o").write_bytes(b"\0" * 64)
    (cell / unreadable_shard).chmod(0)
    return cell


def permissions(binary, scratch, unreadable, good, steady_s=6.0):
    """The collector as an unprivileged user (packaged.CHAOS_USER) beside
    `unreadable` builds it cannot read (half with timing.json mode 000,
    half with the invocation directory mode 000), a diagnostics parent it
    cannot list, a CAS shard it cannot list, and `good` ordinary builds.
    Each unreadable path must be warned about once, not on every poll:
    after the first passes the log must stay quiet. Then the permissions
    are fixed: every build unreadable so far must arrive, once."""
    user = packaged.ensure_user()
    root = packaged.scratch_for_others("chaos-perm-")
    diag, closed, state = root / "diag", root / "closed-parent", root / "state"
    for d in (diag, closed, state):
        d.mkdir()
    pw = packaged.pwd.getpwnam(user)
    os.chown(state, pw.pw_uid, pw.pw_gid)
    # The build directory is root's own (0750): a copy the user may run.
    runnable = root / "otelcol-compiletools"
    packaged.shutil.copy2(binary, runnable)
    runnable.chmod(0o755)
    bad = [packaged.build_name(i, hour=1) for i in range(unreadable)]
    for i, n in enumerate(bad):
        d = packaged.finish_build(diag, n)
        (d / "timing.json").chmod(0) if i % 2 == 0 else d.chmod(0)
    packaged.finish_build(closed, packaged.build_name(0, hour=2))
    closed.chmod(0)
    cell = _cas_store(root, "0a")
    cas_cfg = root / "cas.yaml"
    cas_cfg.write_text("receivers:\n  compiletools:\n    cas:\n"
                       f"      stores: [{{kind: obj, path: {cell}}}]\n"
                       "      initial_delay: 0s\n      collection_interval: 1s\n")
    cas_cfg.chmod(0o644)
    goods = [packaged.build_name(i, hour=12) for i in range(good)]
    for n in goods:
        packaged.finish_build(diag, n)
    with OtlpSink() as sink:
        proc = packaged.start_packaged(runnable, root / "c", state, [diag, closed], sink,
                                      extra=[f"--config={cas_cfg}"], user=user)
        try:
            want = set(goods)
            sink.wait_for(lambda: packaged.Deliveries([sink]).delivered(want) == want, 120)
            time.sleep(2.0)   # the first passes have seen every path
            before = packaged.warning_lines([proc], "")
            time.sleep(steady_s)
            after = packaged.warning_lines([proc], "")
            problems = packaged.self_metric(proc, "receiver_compiletools_path_problems")
            failures = packaged.self_metric(proc, "receiver_compiletools_parse_failures")
            got = packaged.Deliveries([sink])
            # The owner fixes the permissions: chmod leaves the files'
            # modification times, so only a receiver that did not settle
            # the unreadable builds as failed sends them now.
            for i, n in enumerate(bad):
                (diag / n / "timing.json").chmod(0o644) if i % 2 == 0 else (diag / n).chmod(0o755)
            fixed_at = time.monotonic()
            sink.wait_for(lambda: packaged.Deliveries([sink]).delivered(set(bad)) == set(bad), 90)
            fix_to_delivery = time.monotonic() - fixed_at
            sink.wait_quiet(2.0, 30)
            after_fix = packaged.Deliveries([sink])
            text = proc.stderr_text()
        finally:
            code = proc.stop()
    warn = [line for line in text.splitlines() if "warn" in line.lower()]
    per_path = {}
    for n in bad:
        per_path[n] = sum(1 for line in warn if n in line)
    per_path["closed parent"] = sum(1 for line in warn if f'"{closed}"' in line)
    per_path["CAS shard"] = sum(1 for line in warn if "CAS scan" in line and "/0a" in line)
    polls = steady_s / 0.2
    delivered = got.delivered(set(goods))
    for p in (closed, cell / "0a"):
        p.chmod(0o755)
    log = packaged.REPO / "_build" / "chaos" / "permissions-collector.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(text)
    packaged.rmtree(root)
    return {"good_sent": len(goods), "good_delivered": len(delivered), "exit": code,
            "unreadable": unreadable, "per_path": per_path,
            "bad_sent": sum(1 for n in bad if got.trace_ids.get(n)),
            "bad_delivered_after_fix": len(after_fix.delivered(set(bad))),
            "fix_to_delivery_s": round(fix_to_delivery, 1),
            "duplicates_after_fix": after_fix.duplicates()[0],
            "steady_lines_per_poll": (after - before) / polls, "total_warnings": len(warn),
            "path_problems": problems, "parse_failures": failures}


def _fill(mount):
    """Writes a filler file until the filesystem says ENOSPC, in ever
    smaller writes so not even a page is left."""
    with open(mount / "filler", "wb", buffering=0) as f:
        for size in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass


def disk_fault(binary, scratch, backlog, later, mode, size="24m"):
    """mode "full": the state directory (file_storage and capture.directory)
    on a small tmpfs filled to ENOSPC, then `backlog` builds and half of
    `later` builds with live statslogs (every 4th); then room again, the
    other half, and a restart on the same state. mode "ro": the same with
    capture.directory on a read-only tmpfs; then the state's filesystem read-only at a
    restart (a filesystem with files open for writing cannot be remounted
    read-only), the collector must refuse to start with a clear error, and
    start again on it once writable. Nothing may be lost, duplicates must
    be exact, the checkpoints must open after the fault."""
    root = Path(tempfile.mkdtemp(prefix=f"chaos-disk-{mode}-", dir=scratch))
    mount, cap = root / "fs", root / "cap"
    mounted = []
    for m in (mount, cap):
        m.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(m)], check=True)
        mounted.append(m)
    remount = lambda m, how: subprocess.run(["mount", "-o", f"remount,{how}", str(m)], check=True)  # noqa: E731
    refused = ""
    try:
        # The builds on another filesystem, as on most hosts: capture copies.
        diag, state = root / "diag", mount / "state"
        diag.mkdir()
        state.mkdir()
        (cap / "capture").mkdir()
        capture = cap / "capture" if mode == "ro" else None
        names = [packaged.build_name(i) for i in range(backlog + later)]
        half = backlog + later // 2

        def write_live(batch):
            """Every 4th build runs (its statslog there, no timing.json)
            long enough for a poll to capture it, as a real build does."""
            for i, n in enumerate(batch):
                if i % 4:
                    packaged.finish_build(diag, n)
                    continue
                d = diag / n
                d.mkdir()
                (d / "ccache.statslog").write_text(STATSLOG)
                time.sleep(0.5)
                tmp = d / ".tmp.timing.json"
                tmp.write_bytes(packaged.case_timing())
                os.rename(tmp, d / "timing.json")
                time.sleep(0.3)
                os.unlink(d / "ccache.statslog")

        def wait_all(upto):
            want = set(names[:upto])
            sink.wait_for(lambda: packaged.Deliveries([sink]).delivered(want) == want, 120)
            sink.wait_quiet(2.0, 30)

        procs = []
        with OtlpSink() as sink:
            if mode == "ro":
                remount(cap, "ro")
            procs.append(packaged.start_packaged(binary, root / "c0", state, diag, sink, capture=capture))
            if mode == "full":
                _fill(mount)
            for n in names[:backlog]:
                packaged.finish_build(diag, n)
            write_live(names[backlog:half])
            wait_all(half)
            resent_during, _ = packaged.Deliveries([sink]).duplicates()
            if mode == "full":
                # Every failed write is counted, not only logged.
                counted_full = packaged.self_metric(procs[0], "receiver_compiletools_checkpoint_write_failures")
                logged_full = sum(1 for line in procs[0].stderr_text().splitlines()
                                  if "cannot write checkpoint" in line)
                (mount / "filler").unlink()
            else:
                procs[0].stop()
                remount(mount, "ro")
                try:
                    procs.append(packaged.start_packaged(binary, root / "c-ro", state, diag, sink,
                                                        capture=capture))
                    refused = "started on a read-only state"
                except Exception:  # noqa: BLE001 - the refusal is the expected outcome
                    err = (root / "c-ro" / "collector.stderr").read_text()
                    refused = ("refused: read-only file system" if "read-only file system" in err
                               else "refused without saying why")
                remount(mount, "rw")
                remount(cap, "rw")
                procs.append(packaged.start_packaged(binary, root / "c1", state, diag, sink, capture=capture))
            write_live(names[half:])
            wait_all(len(names))
            procs[-1].stop()
            procs.append(packaged.start_packaged(binary, root / "c2", state, diag, sink, capture=capture))
            time.sleep(3.0)
            sink.wait_quiet(2.0, 30)
            procs[-1].stop()
            got = packaged.Deliveries([sink])
        text = "".join(p.stderr_text() for p in procs)
    finally:
        for m in mounted:
            subprocess.run(["umount", "-l", str(m)], check=False)
    delivered = got.delivered(set(names))
    dups, exact = got.duplicates()
    checkpoint_errors = sum(1 for line in text.splitlines() if "cannot write checkpoint" in line)
    capture_warnings = sum(1 for line in text.splitlines() if "captur" in line and "warn" in line.lower())
    problems = sum(1 for line in text.splitlines() if line.split("\t")[1:2] in (["warn"], ["error"]))
    log = packaged.REPO / "_build" / "chaos" / f"disk-{mode}-collector.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(text)
    packaged.rmtree(root)
    if mode == "full":
        label = "state + capture disk full (ENOSPC), then room again, restart"
        extra = (f"checkpoint write errors: {checkpoint_errors}; "
                 f"checkpoint_write_failures self-metric while full: {counted_full:g} of {logged_full} logged")
    else:
        label = "capture dir read-only; state read-only at a restart, then writable"
        extra = f"capture warnings: {capture_warnings}; start on read-only state: {refused}"
    return row(label, len(names), len(delivered), len(names) - len(delivered), dups,
               problems,
               f"{extra}; re-sent while faulty: {resent_during}; "
               f"re-sent with other ids: {got.resent_with_other_ids()}; duplicates exact: {exact}")


def _timing_with(timestamp):
    """The case's timing.json with its top-level timestamp replaced (it is
    part of the trace id; the span times keep their anchor)."""
    doc = json.loads(packaged.case_timing())
    doc["timestamp"] = timestamp
    return json.dumps(doc).encode()


def identity(binary, scratch):
    """Clock and identity: the same invocation id under two diagnostics
    parents (two builds, two traces); PID reuse in a settled directory (a
    new timing.json there, with its own timestamp, is a new build: a second
    trace, the first not re-sent); timestamps far in the future and past
    within what the format allows. Returns one row per case."""
    root = Path(tempfile.mkdtemp(prefix="chaos-identity-", dir=scratch))
    p1, p2, state = root / "p1", root / "p2", root / "state"
    for d in (p1, p2):
        d.mkdir()
    same = packaged.build_name(0)
    reused = packaged.build_name(1)
    future, past = packaged.build_name(2), packaged.build_name(3)
    packaged.finish_build(p1, same)
    packaged.finish_build(p2, same)
    packaged.finish_build(p1, reused)
    packaged.finish_build(p1, future, timing=_timing_with("2199-12-31T23:59:59.000000+00:00"))
    packaged.finish_build(p1, past, timing=_timing_with("1971-01-01T00:00:00.000000+00:00"))
    # The clock stepped back an hour after these were written: their
    # timing.json is "from the future"; the second kept a statslog (its
    # ct-cake died before deleting it), so only settle_timeout ends its wait.
    ahead, ahead_left = packaged.build_name(4), packaged.build_name(5)
    for n, side in ((ahead, None), (ahead_left, STATSLOG)):
        d = packaged.finish_build(p1, n, statslog=side)
        t = time.time() + 3600
        os.utime(d / "timing.json", (t, t))
    with OtlpSink() as sink:
        proc = packaged.start_packaged(binary, root / "c", state, [p1, p2], sink)
        try:
            sink.wait_for(lambda: len(packaged.Deliveries([sink]).trace_ids.get(reused, ())) == 1, 60)
            # settle_timeout is 1 s here: 10 s is ample for both.
            sink.wait_for(lambda: {ahead, ahead_left} <= set(packaged.Deliveries([sink]).trace_ids), 10)
            sink.wait_quiet(1.5, 30)
            # The PID comes round again: the same directory name, a new build.
            d = p1 / reused
            tmp = d / ".tmp.timing.json"
            tmp.write_bytes(_timing_with("2026-11-30T04:00:00.000000+00:00"))
            os.rename(tmp, d / "timing.json")
            sink.wait_for(lambda: len(packaged.Deliveries([sink]).trace_ids.get(reused, ())) == 2, 60)
            sink.wait_quiet(2.0, 30)
            got = packaged.Deliveries([sink])
            text = proc.stderr_text()
        finally:
            proc.stop()
    log = packaged.REPO / "_build" / "chaos" / "identity-collector.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(text)
    packaged.rmtree(root)
    want = packaged.spans_per_build()
    per_trace = {}
    for (tid, _sid) in got.copies:
        per_trace[tid] = per_trace.get(tid, 0) + 1
    dups, exact = got.duplicates()

    def complete(name):
        return sum(1 for t in got.trace_ids.get(name, ()) if per_trace.get(t) == want)

    def warned(name):
        return sum(1 for line in text.splitlines() if name in line and "warn" in line.lower())

    return [
        row("same invocation id under two parents", 2, complete(same), 2 - complete(same), dups,
            warned(same), f"traces: {len(got.trace_ids.get(same, ()))}"),
        row("PID reuse: new timing.json in a settled directory", 2, complete(reused), 2 - complete(reused),
            dups, warned(reused), f"traces: {len(got.trace_ids.get(reused, ()))}; duplicates exact: {exact}"),
        row("timestamp 2199-12-31 (far future)", 1, complete(future), 1 - complete(future), 0, warned(future), ""),
        # The core refuses a start before 2000 (no ct-cake wrote one): not
        # lost but refused, with its warning.
        row("timestamp 1971-01-01 (far past)", 1, complete(past), 0, 0, warned(past),
            "refused: before 2000" if complete(past) == 0 else "sent"),
        row("clock stepped back 1 h: timing.json mtime ahead", 1, complete(ahead), 1 - complete(ahead), 0,
            warned(ahead), ""),
        row("the same with a statslog left behind (settle_timeout 1 s)", 1, complete(ahead_left),
            1 - complete(ahead_left), 0, warned(ahead_left), ""),
    ]
