"""What clang's `-ftime-trace` files of a build say, computed here in
Python from the raw JSON, independently of the receiver's Rust code: the
ground truth the time-trace tests judge our output against (real builds in
tests/realbuilds, the generated 100k-rule build in tests/pipeline).

It follows aras-p/ClangBuildAnalyzer 1.6.0's definitions (its
`BuildEvents.cpp` reading and `Analysis.cpp` rollup), written from its
documented behaviour, and is itself checked against that tool's real
output on the corpus' builds (`realbuilds/test_clang_truth_unit.py`):

* an event counts when `ph` is "X", `pid`/`tid`/`ts`/`dur` are integers and
  its name is one of `KINDS`; its detail is the first `args` value when that
  is a string; `Source` and `OptModule` details are paths, normalised
  lexically (`.`/`..` resolved, slashes collapsed);
* nesting: events ordered by start, the longer first at equal start, the
  later in the file first at equal start and length; each sits in the
  innermost earlier event that contains it;
* a TU's extra `Frontend` events (same parent as its first one, in file
  order) are added to the first and not counted again;
* totals: every counted `Frontend` and every `Backend`, summed;
* headers: every `Source` of a header (a file name without an extension or
  with one starting with h/i), inclusive time and inclusions summed over
  the build; a "root" header is one with at least one inclusion whose
  enclosing `Source` events are no header; only root headers are listed;
* templates: `InstantiateClass` and `InstantiateFunction` by exact detail,
  time and count summed (nested instantiations of one name each count).
"""

import json
import posixpath
from collections import defaultdict
from dataclasses import dataclass, field

KINDS = ("ExecuteCompiler", "Frontend", "Backend", "Source", "ParseTemplate", "ParseClass",
         "InstantiateClass", "InstantiateFunction", "OptModule", "OptFunction")
PATH_DETAILS = ("Source", "OptModule")


@dataclass
class Event:
    name: str
    ts: int
    dur: int
    detail: str               # normalised where a path (ClangBuildAnalyzer's reading)
    raw_detail: str           # as clang wrote it
    order: int                # position among the counted events, file order
    parent: "Event" = None
    counted: bool = True      # False: an extra Frontend merged into the first

    @property
    def end(self):
        return self.ts + self.dur


def normalise_path(path):
    """`.` and `..` resolved and slashes collapsed, lexically (POSIX)."""
    if not path:
        return path
    out = posixpath.normpath(path.replace("\\", "/"))
    return "/" + out.lstrip("/") if out.startswith("//") else out


def is_header(path):
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return dot < 0 or name[dot + 1:dot + 2].lower() in ("h", "i")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def read_events(path):
    """(beginningOfTime, the counted events) of one trace file, nested,
    extra Frontends merged."""
    with open(path, "rb") as f:
        return read_doc(json.load(f))


def read_doc(doc):
    """read_events of a trace already parsed."""
    events = []
    for raw in doc.get("traceEvents", []):
        if not isinstance(raw, dict) or raw.get("ph") != "X" or raw.get("name") not in KINDS:
            continue
        if not all(_is_int(raw.get(k)) for k in ("pid", "tid", "ts", "dur")):
            continue
        args = raw.get("args")
        raw_detail = ""
        if isinstance(args, dict) and args:
            first = next(iter(args.values()))
            raw_detail = first if isinstance(first, str) else ""
        detail = normalise_path(raw_detail) if raw["name"] in PATH_DETAILS else raw_detail
        events.append(Event(raw["name"], raw["ts"], raw["dur"], detail, raw_detail, len(events)))
    _nest(events)
    _merge_frontends(events)
    return doc.get("beginningOfTime"), events


def _nest(events):
    ordered = sorted(events, key=lambda e: (e.ts, -e.dur, -e.order))
    open_events = []
    for e in ordered:
        while open_events and not (e.ts >= open_events[-1].ts and e.end <= open_events[-1].end):
            open_events.pop()
        e.parent = open_events[-1] if open_events else None
        open_events.append(e)


def _merge_frontends(events):
    frontends = [e for e in events if e.name == "Frontend"]
    if not frontends:
        return
    first = frontends[0]
    for e in frontends[1:]:
        if e.parent is first.parent:
            first.dur += e.dur
            e.counted = False


@dataclass
class Tally:
    us: int = 0
    count: int = 0


@dataclass
class Rollup:
    """The rollup of a set of traces (one build's)."""
    frontend_us: int = 0
    backend_us: int = 0
    compilations: int = 0
    headers: dict = field(default_factory=lambda: defaultdict(Tally))     # path -> Tally
    root_headers: set = field(default_factory=set)
    templates: dict = field(default_factory=lambda: defaultdict(Tally))   # name -> Tally

    def add(self, events):
        for e in events:
            if e.name == "Frontend" and e.counted:
                self.frontend_us += e.dur
                self.compilations += 1
            elif e.name == "Backend":
                self.backend_us += e.dur
            elif e.name in ("InstantiateClass", "InstantiateFunction"):
                t = self.templates[e.detail]
                t.us += e.dur
                t.count += 1
            elif e.name == "Source" and is_header(e.detail):
                t = self.headers[e.detail]
                t.us += e.dur
                t.count += 1
                if not _inside_a_header(e):
                    self.root_headers.add(e.detail)

    def header_ranking(self):
        """Root headers, most expensive first: [(path, Tally)] (ties by path)."""
        return sorted(((p, self.headers[p]) for p in self.root_headers), key=lambda x: (-x[1].us, x[0]))

    def template_ranking(self):
        """[(name, Tally)], most time first, then most instantiations, then name."""
        return sorted(self.templates.items(), key=lambda x: (-x[1].us, -x[1].count, x[0]))


def _inside_a_header(event):
    p = event.parent
    while p is not None and p.name == "Source":
        if is_header(p.detail):
            return True
        p = p.parent
    return False


def tu_totals(events):
    """(frontend µs, backend µs) of one TU."""
    front = sum(e.dur for e in events if e.name == "Frontend" and e.counted)
    back = sum(e.dur for e in events if e.name == "Backend")
    return front, back


def rollup(paths):
    r = Rollup()
    for path in paths:
        _, events = read_events(path)
        r.add(events)
    return r
