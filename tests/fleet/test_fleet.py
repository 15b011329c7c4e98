"""A fleet of build hosts through the gateway tier into Jaeger, with
faults on the way (docs/fleet.md).

8 agents (the packaged config) → lb gateway → 3 backend gateways → proxy →
Jaeger v2; Prometheus scrapes the agents. Over ~2.5 minutes ≥ 400 builds
(corpus builds, generated builds up to 100k rules) are played while one
backend is killed -9 and restarted, two agents are killed -9 and
restarted, and Jaeger is unreachable for 30 s. Then:

* every build is in Jaeger exactly as ct-otel-dump gives it: every span,
  every parent, one root, the content the build's dump says; no span's
  copies differ. Exact duplicates are counted and reported, not failures;
* Prometheus' totals per host (builds, failed builds, compiles by cache
  layer) equal the sums over the builds the test played there;
* every collector's last lifetime exits 0 on SIGTERM.

The table of fault × builds × delivered × lost × duplicates goes to
_build/fleet/results.md (and is printed).
"""

import os
from pathlib import Path

import pytest

from . import report, run, settings, traces

REPO = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO / "_build" / "fleet"


@pytest.mark.timeout(1200)
def test_fleet_delivers_every_build_whole_through_faults(fleet_binaries, tmp_path_factory):
    s = settings.from_environment()
    root = Path(os.path.realpath(tmp_path_factory.mktemp("fleet")))
    result, verdicts, diffs, player = run.run(fleet_binaries, root, s)

    problems = result["problems"]
    not_whole = [(b, verdicts[b.trace_id]) for b in player.played if not verdicts[b.trace_id].whole]
    for b, v in not_whole[:20]:
        problems.append(f"{b.host} {b.path.name} ({b.template.label}, {b.phase}): trace {b.trace_id} "
                        f"not whole in Jaeger: {traces.describe(v)}")
    if len(not_whole) > 20:
        problems.append(f"... and {len(not_whole) - 20} more builds not whole")
    for host, what, got, want in diffs:
        problems.append(f"Prometheus: {host} {what} = {got}, the played builds give {want}")
    for name, codes in result["exit_codes"].items():
        if not codes or codes[-1] != 0:
            problems.append(f"{name}: last lifetime exited with {codes[-1] if codes else None}")
    report.write(RESULTS_DIR, result)

    assert not problems, "\n".join(problems)
    assert len(player.played) >= 400 or s.builds < 400
