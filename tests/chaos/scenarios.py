"""The fault scenarios of issue 13. Each returns a result row:
fault, builds sent, delivered, lost, duplicates, warnings, notes."""

import os
import random
import tempfile
import threading
import time
from pathlib import Path

import harness
from hostile import HOSTILE_CASES
from otlp_sink import OtlpSink

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
    names = [harness.build_name(i) for i in range(backlog + added)]
    for n in names[:backlog]:
        harness.finish_build(diag, n)
    procs = []
    with OtlpSink() as sink:
        stop = threading.Event()

        def writer():
            for n in names[backlog:]:
                if stop.is_set():
                    return
                live = names.index(n) % 4 == 0
                d = harness.finish_build(diag, n, statslog=STATSLOG if live else None)
                if live:
                    time.sleep(0.02)
                    os.unlink(d / "ccache.statslog")
                time.sleep(0.05)

        w = threading.Thread(target=writer, daemon=True)
        w.start()
        for k in range(kills + 1):
            p = harness.start_packaged(binary, root / f"c{k}", state, diag, sink)
            procs.append(p)
            if k < kills:
                time.sleep(rng.uniform(0.5, 3.0))
                p.kill()
        w.join(timeout=120)
        last = procs[-1]
        deadline = time.monotonic() + 180
        want = set(names)
        while time.monotonic() < deadline:
            if harness.Deliveries([sink]).delivered(want) == want:
                break
            time.sleep(0.5)
        sink.wait_quiet(2.0, 30)
        last.stop()
        got = harness.Deliveries([sink])
    delivered = got.delivered(set(names))
    dups, exact = got.duplicates()
    harness.rmtree(root)
    return row(f"kill -9 storm ({kills} kills)", len(names), len(delivered),
               len(names) - len(delivered), dups,
               sum(harness.warning_lines([p], "") for p in procs),
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
    names = [harness.build_name(i) for i in range(backlog)]
    for n in names:
        harness.finish_build(diag, n)
    first = OtlpSink().start()
    port = first.port
    proc = harness.start_packaged(binary, root / "c", state, diag, first, extra)
    try:
        first.wait_for(lambda: len(first.requests("traces")) >= max(1, backlog // 10), 60)
        first.stop()
        time.sleep(down_s)
        second = OtlpSink(port=port).start()
        try:
            want = set(names)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if harness.Deliveries([first, second]).delivered(want) == want:
                    break
                if second.wait_quiet(15.0, 1.0) and len(second.requests()) > 0:
                    break
                time.sleep(0.5)
            second.wait_quiet(2.0, 30)
            got = harness.Deliveries([first, second])
        finally:
            second.stop()
    finally:
        proc.stop()
    delivered = got.delivered(set(names))
    dups, exact = got.duplicates()
    harness.rmtree(root)
    return row(f"sink down {down_s:g} s ({variant})", len(names), len(delivered),
               len(names) - len(delivered), dups, harness.warning_lines([proc], ""),
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
        name = harness.build_name(i, hour=1)
        d = diag / name
        case.make(d, outside)
        cases.append((case, name, d))
    goods = [harness.build_name(i, hour=12) for i in range(good)]
    with OtlpSink() as sink:
        # The table is about input handling, not throughput: with the
        # packaged 128-span requests, the 200k-rule case alone would be
        # 1,563 synchronous round trips to the Python sink.
        proc = harness.start_packaged(binary, root / "c", state, diag, sink,
                                      extra=("--set=receivers.compiletools.max_request_spans=20000",))
        try:
            want = set(goods)
            for n in goods:
                harness.finish_build(diag, n)
            sink.wait_for(lambda: harness.Deliveries([sink]).delivered(want) == want, 180)
            sink.wait_quiet(2.0, 30)
            alive = proc.running()
            rss = harness.peak_rss_kib(proc)
            got = harness.Deliveries([sink])
            text = proc.stderr_text()
        finally:
            code = proc.stop()
    results = []
    for case, name, d in cases:
        sent = bool(got.trace_ids.get(name))
        warned = sum(1 for line in text.splitlines() if name in line and "warn" in line.lower())
        results.append({"case": case.name, "expect": case.expect, "sent": sent, "warnings": warned})
    delivered = got.delivered(set(goods))
    log = harness.REPO / "_build" / "chaos" / "hostile-collector.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(text)
    harness.rmtree(root)
    return {"cases": results, "good_sent": len(goods), "good_delivered": len(delivered),
            "alive": alive, "exit": code, "peak_rss_kib": rss}
