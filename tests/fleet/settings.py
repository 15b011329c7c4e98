"""The fleet run's size and schedule, from the environment.

| env var | default | meaning |
|---|---|---|
| CT_FLEET_AGENTS | 8 | agents (build hosts), at least 6 |
| CT_FLEET_BUILDS | 416 | builds played, the three large fault builds included |
| CT_FLEET_PLAY_S | 150 | seconds over which the stream of builds is published |
| CT_FLEET_FAULT | unset | a deliberate defect that must make the test fail: `backend-batch` (a batch processor in the backends' traces pipeline, which acknowledges before exporting) |
"""

import os
from dataclasses import dataclass, field

FAULTS = ("backend-batch",)


@dataclass
class Settings:
    agents: int = 8
    builds: int = 416
    play_s: float = 150.0
    fault: str = None
    # The large builds: one whose backend is killed, one per killed agent.
    backend_kill_rules: int = 100_000
    agent_kill_rules: int = 20_000
    # Generated builds among the corpus builds of the stream: (rules, count).
    generated: tuple = ((5_000, 4), (1_000, 12))
    outage_s: float = 30.0
    # When each fault starts, as a fraction of play_s (sequential: a fault
    # that starts late pushes the next one back).
    backend_kill_at: float = 0.10
    agent_kills_at: tuple = (0.30, 0.47)
    outage_at: float = 0.63
    killed_agents: list = field(default_factory=list)

    @property
    def stream_builds(self):
        return self.builds - 1 - len(self.agent_kills_at)


def from_environment():
    s = Settings(agents=int(os.environ.get("CT_FLEET_AGENTS") or 8),
                 builds=int(os.environ.get("CT_FLEET_BUILDS") or 416),
                 play_s=float(os.environ.get("CT_FLEET_PLAY_S") or 150),
                 fault=os.environ.get("CT_FLEET_FAULT") or None)
    if s.agents < 6:
        raise ValueError(f"CT_FLEET_AGENTS={s.agents}: at least 6 (two are killed, one gets the largest build)")
    if s.fault is not None and s.fault not in FAULTS:
        raise ValueError(f"CT_FLEET_FAULT={s.fault!r}: one of {', '.join(FAULTS)}")
    if s.stream_builds < sum(n for _, n in s.generated):
        raise ValueError(f"CT_FLEET_BUILDS={s.builds}: too few for the generated builds")
    # Hosts 3 and 6 (of 8) lose their agent; host 1 gets the largest build.
    s.killed_agents = [f"fleet-host-{s.agents * 3 // 8:02d}", f"fleet-host-{s.agents * 6 // 8:02d}"]
    return s
