"""host_panels.py without a fleet: it evaluates the dashboard's own panel
queries and finds wrong values and a wrong order (the fleet run then
checks them on real data)."""

from collections import Counter, namedtuple

from prometheus import dashboard

from . import host_panels
from .expected import Expected

Played = namedtuple("Played", "trace_id host")


def _exp(tid, variant, layers, failed=False, duration_s=2.0):
    return Expected(tid, {}, Counter(layers), failed, variant, "pipe", duration_s)


PLAYED = [Played("t1", "h1"), Played("t2", "h1"), Played("t3", "h2")]
EXPECTED = {"t1": _exp("t1", "v", {"cas": 3, "compiled": 1}, duration_s=4.0),
            "t2": _exp("t2", "v", {"compiled": 4}, failed=True),
            "t3": _exp("t3", "v", {"ccache": 1, "other": 1}, duration_s=1.0)}


class FakePrometheus:
    def __init__(self, answers):
        self.answers, self.asked = answers, []

    def query(self, expr):
        self.asked.append(expr)
        for title, points in self.answers.items():
            if expr == host_panels.as_totals(host_panels._panel_query(DASH, title).promql(DASH, "60s")):
                return {"result": [{"metric": m, "value": [0, str(v)]} for m, v in points]}
        return {"result": []}


DASH = dashboard.load()
MISSES = [({"host_name": "h1", "ct_variant": "v"}, 5 / 8), ({"host_name": "h2", "ct_variant": "v"}, 0.5)]
SLOWEST = [({"cicd_pipeline_name": "pipe", "ct_variant": "v", "host_name": "h1"}, 4.0),
           ({"cicd_pipeline_name": "pipe", "ct_variant": "v", "host_name": "h2"}, 1.0)]


def test_the_panels_queries_with_the_played_answers_pass():
    prom = FakePrometheus({host_panels.CACHE_MISSES: MISSES, host_panels.SLOWEST: SLOWEST})
    problems, summary = host_panels.check(prom, PLAYED, EXPECTED, 60, DASH)
    assert problems == []
    assert len(prom.asked) == 3 and all("last_over_time(" in q and "[60s]" in q for q in prom.asked)
    assert summary[host_panels.CACHE_MISSES]["values"] == [(["h1", "v"], 0.625), (["h2", "v"], 0.5)]


def test_a_wrong_value_and_a_wrong_order_are_problems():
    wrong = [MISSES[0], ({"host_name": "h2", "ct_variant": "v"}, 0.75)]
    problems, _ = host_panels.check(FakePrometheus({host_panels.CACHE_MISSES: wrong,
                                                    host_panels.SLOWEST: SLOWEST}),
                                    PLAYED, EXPECTED, 60, DASH)
    assert any("('h2', 'v') = 0.75" in p for p in problems), problems
    assert any("not largest first" in p for p in problems), problems


def test_rebuild_reasons_arriving_is_a_problem():
    reasons = [({"host_name": "h1", "ct_rule_rebuild_reason": "new"}, 3.0)]
    problems, _ = host_panels.check(FakePrometheus({host_panels.CACHE_MISSES: MISSES,
                                                    host_panels.SLOWEST: SLOWEST,
                                                    host_panels.REBUILD_REASONS: reasons}),
                                    PLAYED, EXPECTED, 60, DASH)
    assert any("now emit ct.rebuilds" in p for p in problems), problems
