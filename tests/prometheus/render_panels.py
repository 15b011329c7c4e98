"""A picture of the dashboard's panels, drawn with matplotlib from the same
Prometheus data the test queries (Grafana itself cannot be installed here).

Laid out by the panels' gridPos, in Grafana's dark colours: time series as
lines or bars (exemplars as dots), stat panels as their last value, pending
panels as what they wait for. Called by the test scenario when
CT_DASHBOARD_PICTURE names the PNG to write (make dashboard-picture).
"""

import math
import re
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import dashboard

BG, PANEL, TEXT, GRID = "#111217", "#181b1f", "#ccccdc", "#2c3235"
COLOURS = ["#73bf69", "#f2cc0c", "#5794f2", "#ff9830", "#f2495c", "#b877d9", "#8ab8ff", "#fade2a"]
UNIT_IN = 0.24   # height of one gridPos unit, inches
STEP_S = 1


def _legend(fmt, labels):
    text = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt or "")
    return text or ",".join(f"{k}={v}" for k, v in labels.items()) or "value"


def _series(scenario, q, window):
    data = scenario.prometheus.query_range(q.promql(dashboard.load(), window),
                                           scenario.start, scenario.end, STEP_S)
    out = []
    for s in data["result"]:
        pts = [(float(t) - scenario.start, float(v)) for t, v in s["values"]]
        pts = [(t, v) for t, v in pts if math.isfinite(v)]
        if pts:
            out.append((s["metric"], pts))
    return out


def _scale(unit, v):
    return v * 100 if unit == "percentunit" else v


def _unit_label(unit):
    return {"s": "seconds", "percentunit": "%", "short": "", "bytes": "bytes"}.get(unit, "")


def _draw_timeseries(ax, scenario, panel, queries, window):
    unit = panel["fieldConfig"]["defaults"].get("unit", "")
    bars = panel["fieldConfig"]["defaults"].get("custom", {}).get("drawStyle") == "bars"
    colour = iter(COLOURS * 4)
    for q, target in queries:
        for labels, pts in _series(scenario, q, window):
            c = next(colour)
            xs, ys = [t for t, _ in pts], [_scale(unit, v) for _, v in pts]
            name = _legend(target.get("legendFormat"), labels)
            if bars:
                ax.fill_between(xs, ys, step="post", alpha=0.35, color=c, label=name)
                ax.step(xs, ys, where="post", color=c, linewidth=1.2)
            else:
                ax.plot(xs, ys, color=c, linewidth=1.6, label=name)
        if q.exemplar:
            groups = scenario.prometheus.query_exemplars(q.promql(dashboard.load(), window),
                                                         scenario.start, scenario.end)
            ex = [(float(e["timestamp"]) - scenario.start, _scale(unit, float(e["value"])))
                  for g in groups for e in g["exemplars"]]
            if ex:
                ax.scatter([t for t, _ in ex], [v for _, v in ex], s=14, marker="D",
                           color="#e0e0e0", edgecolors="none", alpha=0.8, zorder=5,
                           label=f"exemplars ({len(ex)})")
    ax.set_ylabel(_unit_label(unit), color=TEXT, fontsize=7)
    ax.grid(color=GRID, linewidth=0.6)
    if ax.get_legend_handles_labels()[0]:
        leg = ax.legend(fontsize=6.5, loc="upper left", frameon=False, ncol=2)
        for t in leg.get_texts():
            t.set_color(TEXT)


def _draw_stat(ax, scenario, panel, queries, window):
    unit = panel["fieldConfig"]["defaults"].get("unit", "")
    lines = []
    for q, target in queries:
        for labels, pts in _series(scenario, q, window):
            v = _scale(unit, pts[-1][1])
            decimals = panel["fieldConfig"]["defaults"].get("decimals", 2)
            shown = f"{v:.{decimals}f}" + (" %" if unit == "percentunit" else "")
            lines.append((shown, _legend(target.get("legendFormat"), labels)))
    ax.axis("off")
    for i, (value, name) in enumerate(lines[:4]):
        y = 0.62 - i * 0.3
        ax.text(0.5, y, value, ha="center", va="center", fontsize=22, color=COLOURS[0],
                weight="bold", transform=ax.transAxes)
        ax.text(0.5, y - 0.15, name, ha="center", va="center", fontsize=7, color=TEXT,
                transform=ax.transAxes)


def _draw_bargauge(ax, scenario, panel, queries, window):
    """Horizontal bars of each series' latest value, largest on top, as
    Grafana's bar gauge shows an instant (here: the range's last) value."""
    defaults = panel["fieldConfig"]["defaults"]
    overrides = {o["matcher"]["options"]: o["properties"][0]["value"]
                 for o in panel["fieldConfig"].get("overrides", [])
                 if o["matcher"]["id"] == "byFrameRefID"}
    bars = []
    for q, target in queries:
        unit = overrides.get(q.ref, defaults.get("unit", ""))
        for labels, pts in _series(scenario, q, window):
            bars.append((_scale(unit, pts[-1][1]), _legend(target.get("legendFormat"), labels), unit))
    bars.sort(key=lambda b: b[0])
    ys = range(len(bars))
    ax.barh(ys, [b[0] for b in bars], color=[COLOURS[i % len(COLOURS)] for i in ys], alpha=0.8)
    ax.set_yticks([])
    for y, (value, name, unit) in zip(ys, bars):
        # Inside the bar's row: tick labels would not fit left of the panel.
        ax.text(0.01, y, f"{name}: {value:.4g}{' %' if unit == 'percentunit' else ''}",
                transform=ax.get_yaxis_transform(), va="center", fontsize=6, color=TEXT)
    ax.set_xlabel(_unit_label(defaults.get("unit", "")), color=TEXT, fontsize=7)
    ax.grid(color=GRID, linewidth=0.6, axis="x")


def _draw_pending(ax, queries, width_units):
    ax.axis("off")
    waiting = sorted({m for q, _ in queries for m in q.pending()})
    # About seven characters of 6.5 pt text per grid unit of width.
    wrap = width_units * 7
    ax.text(0.5, 0.55, "pending", ha="center", va="center", fontsize=16, color="#ff9830",
            transform=ax.transAxes)
    text = "\n".join(textwrap.fill(f"{m}: {dashboard.PENDING_METRICS[m]}", wrap) for m in waiting)
    ax.text(0.5, 0.25, text, ha="center", va="center", fontsize=6.5, color=TEXT,
            transform=ax.transAxes)


def _rect(g, height_units, fig_w, fig_h, title=True):
    """Figure fraction [left, bottom, width, height] of a gridPos, leaving
    room for the title above and the tick labels below."""
    pad_l, pad_r = 0.45 / fig_w, 0.1 / fig_w
    pad_t = (0.3 if title else 0.0) / fig_h
    pad_b = 0.3 / fig_h
    left = g["x"] / 24 + pad_l
    top = 1 - g["y"] / height_units - pad_t
    bottom = 1 - (g["y"] + g["h"]) / height_units + pad_b
    return [left, bottom, g["w"] / 24 - pad_l - pad_r, top - bottom]


def render(scenario, path):
    dash = dashboard.load()
    window = scenario.window()
    qs = dashboard.queries(dash)
    # One grid unit more than the panels take: the footer's line below them.
    height = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in dashboard.panels(dash)) + 1
    fig_w, fig_h = 16, height * UNIT_IN
    fig = plt.figure(figsize=(fig_w, fig_h), facecolor=BG)
    # Top level in dashboard order: rows (open ones) and their panels.
    for panel in dash["panels"]:
        g = panel["gridPos"]
        if panel["type"] == "row":
            fig.text(0.005, 1 - (g["y"] + 0.8) / height, panel["title"], color=TEXT,
                     fontsize=11, weight="bold")
            continue
        ax = fig.add_axes(_rect(g, height, fig_w, fig_h))
        ax.set_facecolor(PANEL)
        ax.tick_params(colors=TEXT, labelsize=6.5)
        for spine in ax.spines.values():
            spine.set_color(GRID)
        ax.set_title(panel["title"], color=TEXT, fontsize=9, loc="left")
        mine = [(q, t) for q in qs if q.panel_id == panel["id"]
                for t in panel["targets"] if t["refId"] == q.ref]
        if any(q.pending() for q, _ in mine):
            _draw_pending(ax, mine, g["w"])
        elif panel["type"] == "stat":
            _draw_stat(ax, scenario, panel, mine, window)
        elif panel["type"] == "bargauge":
            _draw_bargauge(ax, scenario, panel, mine, window)
        else:
            _draw_timeseries(ax, scenario, panel, mine, window)
    fig.text(0.995, 0.003, f"x axis: seconds since the test's start; {len(scenario.builds)} corpus builds on two hosts; "
             f"data: Prometheus (Debian 2.42) scraping otelcol-compiletools; drawn by "
             f"tests/prometheus/render_panels.py", color=TEXT, fontsize=8, ha="right")
    fig.savefig(path, dpi=72, facecolor=BG)
    plt.close(fig)
