"""The independent time-trace computation (`harness/clang_truth.py`) against
ClangBuildAnalyzer's own output on the corpus' two real builds
(corpus/time-trace/*/clangbuildanalyzer-analyze.txt): if it agrees with the
tool there, it is a fair judge of our receiver on fresh real builds
(`test_time_trace_realbuilds.py`). Needs no clang and no build; runs in
well under a second.
"""

import re
from pathlib import Path

import pytest

from harness import clang_truth

REPO = Path(__file__).resolve().parents[2]
CASES = REPO.parent / "shared" / "corpus" / "time-trace"
MAX_NAME = 70   # ClangBuildAnalyzer.ini's default maxNameLength


def cba_sections(text):
    """Section title -> its lines, from ClangBuildAnalyzer --analyze output."""
    out, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^\*{3,4} (.*?):$", line)
        if m:
            current = out.setdefault(m.group(1), [])
        elif current is not None and line.strip():
            current.append(line)
    return out


def cut(name):
    return name if len(name) <= MAX_NAME else name[:MAX_NAME - 2] + "..."


@pytest.fixture(params=["geom-shake-cold", "geom-ninja-cold"])
def case(request):
    d = CASES / request.param
    if not d.is_dir():
        pytest.skip(f"no corpus case {d}")
    paths = sorted((d / "traces").rglob("*.json"))
    assert paths, d
    return clang_truth.rollup(paths), cba_sections((d / "clangbuildanalyzer-analyze.txt").read_text())


def test_time_summary_matches_clangbuildanalyzer(case):
    ours, cba = case
    lines = cba["Time summary"]
    assert lines[0] == f"Compilation ({ours.compilations} times):"
    assert re.search(r"Parsing \(frontend\):\s+(\S+) s", lines[1]).group(1) == f"{ours.frontend_us / 1e6:.1f}"
    assert re.search(r"backend\):\s+(\S+) s", lines[2]).group(1) == f"{ours.backend_us / 1e6:.1f}"


def test_expensive_headers_match_clangbuildanalyzer(case):
    ours, cba = case
    want = []
    for line in cba["Expensive headers"]:
        m = re.match(r"^(\d+) ms: (.+) \(included (\d+) times, avg \d+ ms\), included via:$", line)
        if m:
            want.append((int(m.group(1)), m.group(2), int(m.group(3))))
    assert len(want) == 10
    ranking = ours.header_ranking()
    assert [int(t.us / 1000) for _, t in ranking[:10]] == [ms for ms, _, _ in want]
    by_path = dict(ranking)
    for ms, path, count in want:
        assert (int(by_path[path].us / 1000), by_path[path].count) == (ms, count), path


def test_templates_match_clangbuildanalyzer(case):
    ours, cba = case
    want = []
    for line in cba["Templates that took longest to instantiate"]:
        m = re.match(r"^\s*(\d+) ms: (.+) \((\d+) times, avg \d+ ms\)$", line)
        assert m, line
        want.append((int(m.group(1)), m.group(2), int(m.group(3))))
    ranking = ours.template_ranking()
    assert [int(t.us / 1000) for _, t in ranking[:len(want)]] == [ms for ms, _, _ in want]
    by_cut = {}
    for name, t in ranking:
        by_cut.setdefault(cut(name), []).append((int(t.us / 1000), t.count))
    for ms, name, count in want:
        assert (ms, count) in by_cut[name], (name, by_cut.get(name))


def test_header_rules_follow_clangbuildanalyzer():
    assert clang_truth.is_header("/usr/include/c++/12/vector")
    assert clang_truth.is_header("/usr/include/c++/12/../bits/x.tcc") is False
    assert clang_truth.is_header("a/b.hpp") and clang_truth.is_header("x.inc")
    assert not clang_truth.is_header("a.h/b.cpp")
    assert clang_truth.normalise_path("/usr/bin/../lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12/cmath") \
        == "/usr/include/c++/12/cmath"
