"""Every scenario of the matrix: a real ct-cake build, exported by ct-cake
itself (reference) and read by our collector (ours); compare.py decides.

A scenario's test first runs the scenarios it depends on (same workspace:
cold before noop before warm), so `-k ninja-warm` works on its own.
"""

import os

import pytest

from . import compare
from . import scenarios
from .campaign import ScenarioFailed
from .conftest import record

pytestmark = pytest.mark.realbuilds

MATRIX = scenarios.selected()


def _semantics(sc, case, ref_root, ref_compiles, ref_snapshots):
    """Did the harness build what the scenario claims? (not a receiver check)"""
    out = []
    if sc.metrics_as_spans and not ref_snapshots:
        # without one the snapshot span comparison would have nothing to compare
        out.append(f"metrics-as-spans build without a {compare.SNAPSHOT} span in ct-cake's export")
    hits = sum(ref_root.get(k, 0) for k in ("ct.ccache.direct_hits", "ct.ccache.preprocessed_hits"))
    misses = ref_root.get("ct.ccache.misses", 0)
    records_rules = sc.backend in ("shake", "make", "ninja")
    if sc.kind == "cold" and misses == 0:
        out.append("cold build without a ccache miss")
    if sc.kind == "warm":
        if hits == 0:
            out.append("warm build without a ccache hit")
        if records_rules and ref_compiles == 0:
            out.append("warm build recompiled nothing (CAS/bin not removed?)")
    if sc.kind == "noop" and records_rules and ref_compiles:
        out.append(f"no-op build ran {ref_compiles} compile rule(s)")
    if sc.kind == "fail" and case.get("exit_code") == 0:
        out.append("the broken project built")
    if sc.no_flock and sc.kind in ("cold", "warm") \
            and "rule_outcomes.log" not in case.get("transient_files_captured", []):
        out.append("no rule_outcomes.log was written (flock not hidden?)")
    return out


@pytest.mark.parametrize("scenario", [s.name for s in MATRIX])
def test_ours_matches_ct_cake(campaign, scenario, request):
    sc = campaign.matrix[scenario]
    record(request, backend=sc.backend, kind=sc.kind, statslog=sc.statslog, watch=sc.watch)
    try:
        res = campaign.run(scenario)
    except ScenarioFailed as exc:
        record(request, reason=f"build: {str(exc).splitlines()[0]}"[:200])
        pytest.fail(f"{scenario}: {exc}", pytrace=False)
    rep = compare.compare_case(res.case_dir)

    # what arrived, for the table
    ref = compare.read_requests(os.path.join(res.case_dir, "reference"))
    ours = compare.read_requests(os.path.join(res.case_dir, "ours"))
    iid = res.case.get("invocation_id")
    rtid, rtrace = compare._root_trace(compare.spans_of(ref), iid)
    otid, otrace = compare._root_trace(compare.spans_of(ours), iid)
    n_metric_req = lambda reqs: sum(1 for _, sig, _m in reqs if sig == "metrics")  # noqa: E731
    ref_root = {}
    for s in rtrace:
        if s.span.name == compare.ROOT and not s.span.parent_span_id:
            ref_root = {k: compare.plain(v) for k, v in s.attrs.items()}
    ref_compiles = sum(1 for s in rtrace if compare.plain(s.attrs.get("ct.rule_type")) == "compile")
    ref_snapshots = sum(1 for s in compare.spans_of(ref) if s.span.name == compare.SNAPSHOT)
    problems = [("harness", p) for p in res.problems]
    problems += [("scenario", p) for p in _semantics(sc, res.case, ref_root, ref_compiles, ref_snapshots)]
    problems += rep.problems
    cats = {}
    for c, _ in problems:
        cats[c] = cats.get(c, 0) + 1
    record(request, rc=res.case.get("exit_code"),
           spans=f"{len(otrace)}/{len(rtrace)}",
           metrics=f"{n_metric_req(ours)}/{n_metric_req(ref)}",
           reason=("; ".join(f"{c}:{n}" for c, n in cats.items()) + " -- " + problems[0][1])[:200]
           if problems else "")
    if problems:
        text = "\n".join(f"  [{c}] {t}" for c, t in problems[:80])
        more = f"\n  ... {len(problems) - 80} more" if len(problems) > 80 else ""
        pytest.fail(f"{scenario}: {len(problems)} problem(s) (case dir {res.case_dir}; "
                    f"re-check with: python tests/realbuilds/compare.py {res.case_dir})\n{text}{more}",
                    pytrace=False)


# ---------------------------------------------------------------------------
# The comparison itself must not go lenient: inject differences into a copy
# of a real case's ours/ and require compare.py to report each one.

def _mutate(case_copy, fn):
    """Apply fn(signal, request) to every ours/ request of a case copy."""
    ours = os.path.join(case_copy, "ours")
    for fname, sig, msg in compare.read_requests(ours):
        if fn(sig, msg):
            with open(os.path.join(ours, fname), "wb") as f:
                f.write(msg.SerializeToString())


def _spans(msg):
    return [s for rs in msg.resource_spans for ss in rs.scope_spans for s in ss.spans]


def _set_attr(span_or_res, key, setter):
    for kv in span_or_res.attributes:
        if kv.key == key:
            setter(kv.value)
            return True
    return False


def _first_compile(msg):
    return next((s for s in _spans(msg) if s.name.startswith("compile.")), None)


def _shift_time(sig, msg):
    s = sig == "traces" and _first_compile(msg)
    if s:
        s.start_time_unix_nano += compare.TIME_TOLERANCE_NS + 10_000
    return bool(s)


def _retype_attr(sig, msg):
    s = sig == "traces" and _first_compile(msg)
    return bool(s) and _set_attr(s, "cas.bytes_reused", lambda v: v.__setattr__("double_value", 0.0))


def _drop_span(sig, msg):
    if sig != "traces":
        return False
    for rs in msg.resource_spans:
        for ss in rs.scope_spans:
            for i, s in enumerate(ss.spans):
                if s.name.startswith("compile."):
                    del ss.spans[i]
                    return True
    return False


def _reparent(sig, msg):
    if sig != "traces":
        return False
    spans = _spans(msg)
    root = next((s for s in spans if not s.parent_span_id), None)
    s = _first_compile(msg)
    if root is None or s is None:
        return False
    s.parent_span_id = root.span_id
    return True


def _resource(sig, msg):
    if sig != "traces":
        return False
    return _set_attr(msg.resource_spans[0].resource, "git.commit.sha", lambda v: v.__setattr__("string_value", "0" * 40))


def _root_aggregate(sig, msg):
    root = sig == "traces" and next((s for s in _spans(msg) if not s.parent_span_id), None)
    return bool(root) and _set_attr(root, "ct.build.recompiled_count", lambda v: v.__setattr__("int_value", v.int_value + 1))


def _analytics(sig, msg):
    s = sig == "traces" and _first_compile(msg)
    return bool(s) and _set_attr(s, "ct.rule.weighted_s", lambda v: v.__setattr__("double_value", v.double_value + 1.0))


def _metric_value(sig, msg):
    if sig != "metrics":
        return False
    for rm in msg.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                if m.name == "ct.ccache.events" and m.sum.data_points:
                    m.sum.data_points[0].as_int += 1
                    return True
    return False


MUTATIONS = {
    "times": _shift_time, "attributes": _retype_attr, "spans": _drop_span, "structure": _reparent,
    "resource": _resource, "root-aggregates": _root_aggregate, "metrics": _metric_value,
    "analytics": _analytics,
}


def test_compare_reports_injected_differences(campaign, tmp_path):
    base_name = next(s.name for s in MATRIX if s.backend == "shake" and s.kind == "cold")
    try:
        res = campaign.run(base_name)
    except ScenarioFailed as exc:
        pytest.fail(f"{base_name} did not build: {exc}", pytrace=False)
    base = compare.compare_case(res.case_dir)
    base_cats = base.categories()
    problems = []
    import shutil
    for want, fn in MUTATIONS.items():
        copy = tmp_path / want
        shutil.copytree(res.case_dir, copy)
        changed = []
        _mutate(str(copy), lambda sig, msg: changed.append(fn(sig, msg)) or changed[-1])
        if not any(changed):
            problems.append(f"{want}: nothing to mutate in {base_name}/ours (did ours arrive?)")
            continue
        got = compare.compare_case(str(copy)).categories()
        if got.get(want, 0) <= base_cats.get(want, 0):
            problems.append(f"{want}: the injected difference was not reported (got {dict(got)})")
    # the metrics snapshot sent twice
    copy = tmp_path / "twice"
    shutil.copytree(res.case_dir, copy)
    ours = copy / "ours"
    mfiles = sorted(p for p in os.listdir(ours) if p.endswith("-metrics.pb"))
    if mfiles:
        (ours / "900-metrics.pb").write_bytes((ours / mfiles[0]).read_bytes())
        got = compare.compare_case(str(copy)).categories()
        if got.get("metrics", 0) <= base_cats.get("metrics", 0):
            problems.append("metrics sent twice was not reported")
    else:
        problems.append(f"no metrics in {base_name}/ours to duplicate")
    assert not problems, "\n".join(problems)


def _snapshot_value(sig, msg):
    """One ct.ccache.snapshot attribute (an event count) off by one."""
    if sig != "traces":
        return False
    for s in _spans(msg):
        if s.name == compare.SNAPSHOT:
            for kv in s.attributes:
                if kv.value.WhichOneof("value") == "int_value":
                    kv.value.int_value += 1
                    return True
    return False


def test_compare_reports_a_wrong_snapshot_span(campaign, tmp_path):
    name = next(s.name for s in MATRIX if s.metrics_as_spans)
    try:
        res = campaign.run(name)
    except ScenarioFailed as exc:
        pytest.fail(f"{name} did not build: {exc}", pytrace=False)
    base = compare.compare_case(res.case_dir).categories().get("snapshot-span", 0)
    import shutil
    copy = tmp_path / "snapshot"
    shutil.copytree(res.case_dir, copy)
    changed = []
    _mutate(str(copy), lambda sig, msg: changed.append(_snapshot_value(sig, msg)) or changed[-1])
    assert any(changed), f"no {compare.SNAPSHOT} span with an int attribute in {name}/ours"
    got = compare.compare_case(str(copy)).categories()
    assert got.get("snapshot-span", 0) > base, f"the wrong snapshot value was not reported (got {dict(got)})"


# ---------------------------------------------------------------------------
# Issue 15: the receiver is told where ct-cake's generated build file is
# (analytics.build_graphs, campaign.build_graph_mappings), so every make and
# ninja build that ran rules gets the exact critical path; compare.py has
# already checked its invariants (a chain in time, length = the path rules'
# durations, drag within each rule) in test_ours_matches_ct_cake.

EXACT_METHOD = {"ninja": "ninja_graph", "make": "make_graph"}


@pytest.mark.parametrize("scenario", [s.name for s in MATRIX
                                      if s.backend in EXACT_METHOD and s.kind in ("cold", "warm")])
def test_graph_backends_get_the_exact_critical_path(campaign, scenario):
    sc = campaign.matrix[scenario]
    try:
        res = campaign.run(scenario)
    except ScenarioFailed as exc:
        pytest.fail(f"{scenario}: {exc}", pytrace=False)
    iid = res.case.get("invocation_id")
    _, trace = compare._root_trace(compare.spans_of(compare.read_requests(os.path.join(res.case_dir, "ours"))), iid)
    root = next((s for s in trace if s.span.name == compare.ROOT and not s.span.parent_span_id), None)
    assert root is not None, f"{scenario}: no root span of ours"
    method = compare.plain(root.attrs.get("ct.build.critical_path.method"))
    assert method == EXACT_METHOD[sc.backend], (
        f"{scenario}: ct.build.critical_path.method = {method!r}; the receiver's warnings are in "
        f"{res.case_dir}/collector or _live-collector")
    path = [s for s in trace if "ct.critical_path" in s.attrs]
    assert path and all("ct.rule.drag_s" in s.attrs for s in path), f"{scenario}: path rules without drag"
