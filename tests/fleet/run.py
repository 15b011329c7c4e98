"""One fleet run: start the fleet, play the builds through the faults,
wait until Jaeger has them, judge every build and the per-host totals,
measure, stop. Returns the result that report.py writes and the test
asserts on."""

import time

from harness import bench_builds, reference

from . import expected as expected_mod
from . import host_panels, plan, scenario, topology, totals, traces
from .report import phase_rows

STARTUP_GRACE_S = 2.0
# After the last build was published: until every trace is complete.
COMPLETE_TIMEOUT_S = 180.0
# Then until no agent has builds left to send, and this long with none.
DRAIN_TIMEOUT_S = 60.0
QUIET_S = 5.0
# A trace this large is polled every LARGE_POLL_EVERY rounds only (its
# answer is ~100 MB of JSON).
LARGE_TRACE_SPANS = 10_000
LARGE_POLL_EVERY = 5
ROUND_S = 2.0
DUMPS_TIMEOUT_S = 300.0


def _wait_complete(jaeger, played, expected, timeout):
    """Polls Jaeger until every build has at least its distinct spans;
    returns the builds still short (empty when all arrived)."""
    short = list(played)
    deadline = time.monotonic() + timeout
    rounds = 0
    while short and time.monotonic() < deadline:
        still = []
        for b in short:
            want = len(expected[b.trace_id].spans)
            if want >= LARGE_TRACE_SPANS and rounds % LARGE_POLL_EVERY:
                still.append(b)
                continue
            if traces.distinct_spans(jaeger.raw_trace(b.trace_id)) < want:
                still.append(b)
        short = still
        rounds += 1
        if short:
            time.sleep(ROUND_S)
    return short


def _wait_agents_idle(fleet, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(a.self_metric("receiver_compiletools_backlog") == 0 for a in fleet.agents):
            return True
        time.sleep(0.5)
    return False


def _cpu_now(fleet):
    """CPU seconds so far of every agent and gateway (all lifetimes)."""
    return {c: c.usage.total(c.proc)[0] for c in [*fleet.agents, fleet.lb, *fleet.backends]}


def _cost_rows(fleet, played, spans, cpu_at_play):
    """CPU from the first build on (start-up excluded; idle time during
    the run included) and peak RSS, per component."""
    builds = len(played)
    rows, numbers = [], {}
    agent_cpu = agent_rss = 0
    for a in fleet.agents:
        cpu, rss = a.usage.total(a.proc)
        agent_cpu += cpu - cpu_at_play[a]
        agent_rss = max(agent_rss, rss)
    numbers["agents"] = {"cpu_s": round(agent_cpu, 2), "peak_rss_mib": round(agent_rss / 1024, 1),
                         "cpu_ms_per_build": round(1000 * agent_cpu / builds, 2),
                         "cpu_ms_per_1k_spans": round(1e6 * agent_cpu / spans, 1)}
    rows.append((f"{len(fleet.agents)} agents (all lifetimes)", numbers["agents"]["cpu_s"],
                 f"{numbers['agents']['peak_rss_mib']} (largest)",
                 f"{numbers['agents']['cpu_ms_per_build']} ms CPU per build, "
                 f"{numbers['agents']['cpu_ms_per_1k_spans']} ms per 1,000 spans"))
    for g in [fleet.lb, *fleet.backends]:
        cpu, rss = g.usage.total(g.proc)
        cpu -= cpu_at_play[g]
        numbers[g.name] = {"cpu_s": round(cpu, 2), "peak_rss_mib": round(rss / 1024, 1),
                           "cpu_s_per_1k_builds": round(1000 * cpu / builds, 2),
                           "cpu_ms_per_1k_spans": round(1e6 * cpu / spans, 1)}
        rows.append((g.name, numbers[g.name]["cpu_s"], numbers[g.name]["peak_rss_mib"],
                     f"{numbers[g.name]['cpu_s_per_1k_builds']} s CPU per 1,000 builds, "
                     f"{numbers[g.name]['cpu_ms_per_1k_spans']} ms per 1,000 spans"))
    jaeger_rss = fleet.jaeger.peak_rss_mib()
    jaeger_cpu, _ = bench_builds.proc_stats(fleet.jaeger.proc.pid)
    numbers["jaeger"] = {"cpu_s": round(jaeger_cpu, 2), "peak_rss_mib": round(jaeger_rss, 1)}
    rows.append(("jaeger (whole run)", round(jaeger_cpu, 2), round(jaeger_rss, 1), ""))
    return rows, numbers


def run(binaries, root, s):
    corpus = plan.corpus_templates(reference.corpus_dir())
    generated = [plan.generated_template(rules) for rules, n in s.generated for _ in range(n)]
    stream = plan.stream(corpus, generated, s.stream_builds)
    backend_big = plan.generated_template(s.backend_kill_rules)
    agent_big = plan.generated_template(s.agent_kill_rules)
    fleet = topology.Fleet(binaries, root, s.agents, s.killed_agents, s.fault)
    dumps = expected_mod.DumpWorker(binaries.dump)
    result = {"agents": s.agents, "backends": topology.BACKENDS, "fault_mode": s.fault, "problems": []}
    started = time.time()
    try:
        fleet.start()
        stage = plan.Stage(root / "staging")
        big_staged = stage.stage(backend_big)
        agent_staged = [stage.stage(agent_big) for _ in s.killed_agents]
        player = scenario.Player(fleet, stage, stream, dumps, s.play_s)
        time.sleep(STARTUP_GRACE_S)
        cpu_at_play = _cpu_now(fleet)
        player.start()
        faults = []

        def fault(at, name, action):
            player.wait_until(at * s.play_s)
            player.set_phase(name)
            faults.append(action())
            time.sleep(scenario.SETTLE_S)
            player.set_phase(scenario.NO_FAULT)

        fault(s.backend_kill_at, "backend kill -9",
              lambda: scenario.kill_backend_during(player, topology.host_name(0), backend_big, big_staged))
        for host, at, staged in zip(s.killed_agents, s.agent_kills_at, agent_staged):
            fault(at, f"agent kill -9 ({host})",
                  lambda host=host, staged=staged: scenario.kill_agent_during(
                      player, host, agent_big, staged, s.agent_kill_rules + 7))
        fault(s.outage_at, f"Jaeger unreachable {s.outage_s:.0f} s",
              lambda: scenario.jaeger_outage(player, s.outage_s))
        player.join(timeout=s.play_s + 300)
        play_s = player.elapsed()
        player.event("last build published")

        expected = dumps.finish(DUMPS_TIMEOUT_S)
        broken = {tid: e for tid, e in expected.items() if isinstance(e, Exception)}
        if broken:
            raise AssertionError(f"ct-otel-dump failed for {len(broken)} builds: {next(iter(broken.values()))}")
        for b in player.played:
            if expected[b.trace_id].trace_id != b.trace_id:
                raise AssertionError(f"{b.path}: ct-otel-dump's trace id {expected[b.trace_id].trace_id}, "
                                     f"the ctotel/v1 scheme gives {b.trace_id}")
        short = _wait_complete(fleet.jaeger, player.played, expected, COMPLETE_TIMEOUT_S)
        player.event("every trace complete in Jaeger" if not short else f"{len(short)} traces still short")
        if not _wait_agents_idle(fleet, DRAIN_TIMEOUT_S):
            result["problems"].append(f"agents still had builds to send {DRAIN_TIMEOUT_S:.0f} s later")
        time.sleep(QUIET_S)

        verdicts = {b.trace_id: traces.judge(fleet.jaeger.raw_trace(b.trace_id), expected[b.trace_id])
                    for b in player.played}
        player.event("judged every build in Jaeger")
        fleet.prometheus.wait_scraped_all(time.time())
        window = int(time.time() - started) + 120
        got = fleet.prometheus.host_totals(window)
        want = totals.expected_totals(player.played, expected)
        diffs = totals.differences(got, want)
        panel_problems, panels = host_panels.check(fleet.prometheus, player.played, expected, window)
        result["problems"] += panel_problems
        result["comparing_hosts"] = panels
        spans = sum(len(expected[b.trace_id].spans) for b in player.played)
        cost_rows, numbers = _cost_rows(fleet, player.played, spans, cpu_at_play)
        result.update({"builds": len(player.played), "spans": spans, "play_s": round(play_s, 1),
                       "copies_in_jaeger": sum(v.copies for v in verdicts.values()),
                       "metrics_requests_at_backends_sink": len(fleet.sink.requests("metrics")),
                       "logs_requests_at_backends_sink": len(fleet.sink.requests("logs"))})
        result.update(_summaries(player, verdicts, faults, got, want, diffs, cost_rows, numbers))
        return result, verdicts, diffs, player
    except Exception as exc:
        raise AssertionError(f"{exc}\n\n{fleet.describe()}") from exc
    finally:
        dumps.close()
        result["exit_codes"] = fleet.stop()
        result["proxy"] = fleet.proxy_stats
        result["wall_s"] = round(time.time() - started, 1)


def _summaries(player, verdicts, faults, got, want, diffs, cost_rows, numbers):
    rows = phase_rows(player.played, verdicts)
    totals_rows = []
    for host in sorted(want):
        g, w = got.get(host, {}), want[host]
        layers = ("cas", "ccache", "compiled", "other")
        gc = "/".join(str(g.get("compiles", {}).get(x, 0)) for x in layers)
        wc = "/".join(str(w["compiles"].get(x, 0)) for x in layers)
        equal = not any(d[0] == host for d in diffs)
        totals_rows.append((host, f"{g.get('builds', 0)} (want {w['builds']})",
                            f"{g.get('errors', 0)} (want {w['errors']})", f"{gc} (want {wc})",
                            "yes" if equal else "NO"))
    return {"rows": rows, "faults": faults, "events": player.events, "totals_rows": totals_rows,
            "cost_rows": cost_rows, "numbers": numbers,
            "duplicate_builds": sum(1 for v in verdicts.values() if traces.duplicate_spans(v)),
            "duplicate_spans": sum(traces.duplicate_spans(v) for v in verdicts.values())}
