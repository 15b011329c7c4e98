"""The fleet run's results: _build/fleet/results.md (printed too) and
results.json with every number."""

import json
from collections import OrderedDict

from . import traces

COLUMNS = ("fault", "builds", "delivered", "lost", "builds with duplicates", "duplicate spans")


def phase_rows(played, verdicts):
    """One row per fault (in the order they happened) and a total."""
    rows = OrderedDict()
    for b in played:
        row = rows.setdefault(b.phase, [0, 0, 0, 0, 0])
        v = verdicts.get(b.trace_id)
        row[0] += 1
        if v is not None and v.whole:
            row[1] += 1
        else:
            row[2] += 1
        dups = traces.duplicate_spans(v) if v is not None else 0
        row[3] += int(dups > 0)
        row[4] += dups
    total = [sum(r[i] for r in rows.values()) for i in range(5)]
    return [(phase, *r) for phase, r in rows.items()] + [("all", *total)]


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def render(result):
    parts = ["# Fleet run", "",
             f"{result['agents']} agents, lb + {result['backends']} backends, Jaeger behind a proxy, "
             f"Prometheus scraping every agent; {result['builds']} builds "
             f"({result['spans']} spans) played in {result['play_s']} s; fault mode: "
             f"{result['fault_mode'] or 'none (the real configs)'}; {result.get('wall_s')} s from the "
             f"fleet's start to its stop.", "",
             "Builds by the fault active when they were published (its duration plus "
             "settling time). Delivered: the whole trace in Jaeger, every span as "
             "ct-otel-dump gives it, parents present, all copies alike. Duplicates: "
             "extra copies of spans, exact (reported, not failures).", "",
             _table(COLUMNS, result["rows"]), "",
             "## Faults", "",
             _table(("fault", "victim", "detail"),
                    [(f["fault"], f["victim"], ", ".join(f"{k} {v}" for k, v in f.items()
                                                        if k not in ("fault", "victim", "build")))
                     for f in result["faults"]]), "",
             "## Per-host totals: Prometheus vs the played builds", "",
             _table(("host", "builds", "failed", "compiles (cas/ccache/compiled/other)", "equal"),
                    result["totals_rows"]), "",
             "## Comparing hosts: the dashboard's panels vs the played builds", "",
             _comparing_hosts(result.get("comparing_hosts", {})), "",
             "## Cost", "",
             _table(("component", "CPU s", "peak RSS MiB", "per unit"), result["cost_rows"]), "",
             "## Timeline (s after the first build)", "",
             "\n".join(f"- {t}: {text}" for t, text in result["events"]), ""]
    if result["problems"]:
        parts += ["## Problems", "", "\n".join(f"- {p}" for p in result["problems"]), ""]
    return "\n".join(parts)


def _comparing_hosts(panels):
    """Each checked panel's values in the panel's order (largest first)."""
    lines = []
    for title, panel in panels.items():
        lines.append(f"- {title}: `{panel['query']}`")
        if isinstance(panel["values"], str):
            lines.append(f"  - {panel['values']}")
        else:
            lines += [f"  - {' / '.join(k)}: {v}" for k, v in panel["values"]]
    return "\n".join(lines) or "(not evaluated)"


def write(directory, result):
    directory.mkdir(parents=True, exist_ok=True)
    text = render(result)
    (directory / "results.md").write_text(text)
    (directory / "results.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    print("\n" + text)
    return text
