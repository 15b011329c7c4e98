"""Playing builds into the fleet while faults happen.

The player publishes a stream of staged builds at a steady rate, round
robin over the hosts it is not told to leave alone; the fault actions
run on the test's thread meanwhile, each labelling the builds published
while it lasts (plus a settling time) with its name.

Every wait is bounded in time; every loop in count or time.
"""

import threading
import time
from collections import Counter

from . import exposition, plan

NO_FAULT = "no fault"
SETTLE_S = 5.0
# A backend is the one receiving the large build once it accepted this
# many more spans than at the build's publication.
BACKEND_GROWTH_SPANS = 10_000
BACKEND_DOWN_S = 3.0
# An agent is killed once its receiver had this many spans of the large
# build accepted by the gateway: the rest of the trace is still to go.
AGENT_KILL_AFTER_SPANS = 1_500
AGENT_DOWN_S = 2.0
FAULT_WAIT_S = 120.0
POLL_S = 0.1


class Player:
    def __init__(self, fleet, stage, stream, dumps, play_s):
        self.fleet = fleet
        self.stream = [(t, stage.stage(t)) for t in stream]   # staged before play
        self.dumps = dumps
        self.play_s = play_s
        self.played = []
        self.given = Counter()       # builds published per host
        self.events = []             # (seconds since start, text)
        self._names = {a.host_name: plan.HostNames() for a in fleet.agents}
        self._hosts = [a.host_name for a in fleet.agents]
        self._next_host = 0
        self._paused = set()
        self._phase = NO_FAULT
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="player", daemon=True)
        self._stop = threading.Event()
        self.t0 = None

    # -- control, from the test's thread ------------------------------------
    def start(self):
        self.t0 = time.monotonic()
        self._thread.start()
        return self

    def elapsed(self):
        return time.monotonic() - self.t0

    def event(self, text):
        self.events.append((round(self.elapsed(), 1), text))

    def set_phase(self, phase):
        with self._lock:
            self._phase = phase
        self.event(f"phase: {phase}")

    def pause(self, host):
        with self._lock:
            self._paused.add(host)

    def resume(self, host):
        with self._lock:
            self._paused.discard(host)

    def wait_until(self, t):
        """Sleeps until `t` s after the start (returns at once if past)."""
        left = t - self.elapsed()
        if left > 0:
            self._stop.wait(left)

    def join(self, timeout):
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._stop.set()
            raise AssertionError(f"the player had not published every build after {timeout} s")

    def stop(self):
        self._stop.set()

    def publish(self, host, template, staged, phase=None):
        with self._lock:
            name = self._names[host].take()
            path = plan.publish(staged, self.fleet.agent(host).diag, name)
            build = plan.PlayedBuild(host, path, template, self.elapsed(), phase or self._phase)
            self.played.append(build)
            self.given[host] += 1
        self.dumps.add(build)
        return build

    # -- the stream ------------------------------------------------------------
    def _take_host(self):
        with self._lock:
            for _ in range(len(self._hosts)):
                host = self._hosts[self._next_host % len(self._hosts)]
                self._next_host += 1
                if host not in self._paused:
                    return host
        return None

    def _run(self):
        interval = self.play_s / max(1, len(self.stream))
        for i, (template, staged) in enumerate(self.stream):
            if self._stop.wait(max(0.0, i * interval - self.elapsed())):
                return
            host = self._take_host()
            while host is None and not self._stop.wait(POLL_S):
                host = self._take_host()
            if host is None:
                return
            self.publish(host, template, staged)


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(POLL_S)
    raise AssertionError(f"{what}: not within {timeout} s")


def _accepted(component):
    """Spans the component's receiver had accepted (its own telemetry)."""
    return component.self_metric("receiver_accepted_spans") or 0


def kill_backend_during(player, host, template, staged):
    """Publishes the large build on `host`, kill -9s the backend that
    receives it once it is well under way, restarts it BACKEND_DOWN_S
    later on the same ports. Returns what happened."""
    fleet = player.fleet
    before = {b.name: _accepted(b) for b in fleet.backends}
    build = player.publish(host, template, staged)

    def receiving():
        grown = {b: _accepted(b) - before[b.name] for b in fleet.backends}
        best = max(grown, key=grown.get)
        return (best, grown[best]) if grown[best] >= BACKEND_GROWTH_SPANS else None
    victim, spans = _wait(receiving, FAULT_WAIT_S, f"a backend receiving {template.label}")
    victim.kill()
    player.event(f"kill -9 {victim.name} ({spans:.0f} spans of {template.label} on {host} in)")
    time.sleep(BACKEND_DOWN_S)
    victim.start()
    player.event(f"{victim.name} restarted")
    return {"fault": "backend kill -9", "victim": victim.name, "build": build.trace_id,
            "spans_received_before_kill": int(spans), "down_s": BACKEND_DOWN_S}


def kill_agent_during(player, host, template, staged, expected_spans):
    """kill -9 of `host`'s agent while it sends the large build, restarted
    AGENT_DOWN_S later (same state, the next exporter port).

    Before the kill the host gets no new builds until its agent has
    delivered the earlier ones and Prometheus has scraped their totals:
    the build in flight has not reached its metrics (they follow its
    trace), so the killed lifetime's last sample is its final total and
    the per-host sums stay exact (totals.py)."""
    fleet = player.fleet
    agent = fleet.agent(host)
    player.pause(host)
    address = f"127.0.0.1:{agent.exporter_port}"

    def drained():
        text = agent.exporter_text()
        runs = exposition.total(text, "cicd_pipeline_run_duration_seconds_count")
        return runs == player.given[host] and agent.self_metric("receiver_compiletools_backlog") == 0
    _wait(drained, FAULT_WAIT_S, f"{host}: its builds delivered before the kill")
    fleet.prometheus.wait_value("cicd_pipeline_run_duration_seconds_count", address, player.given[host], 30)
    base = _accepted(agent)
    build = player.publish(host, template, staged)
    _wait(lambda: _accepted(agent) >= base + AGENT_KILL_AFTER_SPANS,
          FAULT_WAIT_S, f"{host}: {template.label} under way")
    sent = _accepted(agent) - base
    agent.kill()
    player.event(f"kill -9 agent {host} ({sent:.0f} of {expected_spans} spans of {template.label} sent)")
    if sent >= expected_spans:
        raise AssertionError(f"{host}: {template.label} was sent whole before the kill; "
                             f"raise the build's size so the kill lands mid-trace")
    time.sleep(AGENT_DOWN_S)
    agent.start()
    player.resume(host)
    player.event(f"agent {host} restarted")
    return {"fault": "agent kill -9", "victim": host, "build": build.trace_id,
            "spans_sent_before_kill": int(sent), "down_s": AGENT_DOWN_S}


def jaeger_outage(player, seconds):
    proxy = player.fleet.proxy
    proxy.cut()
    player.event(f"Jaeger unreachable (proxy cut) for {seconds:.0f} s")
    time.sleep(seconds)
    proxy.restore()
    player.event("Jaeger reachable again")
    return {"fault": f"Jaeger unreachable {seconds:.0f} s", "victim": "jaeger (proxy)", "down_s": seconds}
