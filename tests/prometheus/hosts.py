"""The scenario's hosts: what each is fed, so the "Comparing hosts" and
"Clang" panels have answers the test knows.

* FIRST_HOST gets the six corpus builds of CASES (every backend and cache
  layer), SECOND_HOST two cold builds of the same variant (every compile a
  cache miss, the slow kind of build) and the corpus' real clang
  `-ftime-trace` shake build (../shared/corpus/time-trace/).
* Each wave's clang build is in a work tree of its own, as in a fresh
  clone: its compiles are `new` every time, where the other builds compile
  the same sources with the same keys again (`evicted`: the test has no
  CAS objects for them), so the hosts differ in rebuild reasons too.
* Each host scans a CAS obj store the test writes, with duplicate groups
  whose waste the test computes by formats.md §6.2 (Σ over groups of
  sum − min), not by the receiver.

Every wave feeds each host the same builds again, an hour later (see
copy_for_wave), so the series of the second wave already exist and the
panels' increase() over the second wave is exact (test_comparing_hosts).
"""

import datetime
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness import collector as collector_mod
from harness import reference

FIRST_HOST = collector_mod.HOST_NAME
SECOND_HOST = "e2e-host-2"
CASES = (
    "01-geom-shake-cold",
    "03-geom-shake-ccache-hit",
    "04-geom-shake-shared-cas-clone",
    "10-textkit-broken-shake-compile-error",
    "12-geom-ninja-cold-native-flock",
    "16-geom-make-cold-native-flock",
)
SECOND_CASES = ("01-geom-shake-cold", "12-geom-ninja-cold-native-flock")
TIME_TRACE_CASE = "geom-shake-cold"
TIME_TRACE_TREE = "/home/dev/src/geom/"   # the work tree the corpus' paths name
WAVE_GAP_H = 1
CAS_VARIANT = "ccache-gcc.cxx17.debug"
# Per host, groups of entry sizes: one group = one (file hash, dep hash)
# bucket, its entries differing in macro state only. Different sizes and
# group counts per host, so waste and its share rank the hosts differently
# (the second host wastes more bytes, the first a larger share).
CAS_GROUPS = {
    FIRST_HOST: [[1000, 3000, 500], [2048, 2048], [700]],
    SECOND_HOST: [[8192, 4096], [5000], [60, 60]],
}


def time_trace_dir():
    return reference.corpus_dir() / "time-trace" / TIME_TRACE_CASE


def _single_invocation(diagnostics):
    dirs = [d for d in Path(diagnostics).iterdir() if d.is_dir() and reference.INVOCATION_ID.match(d.name)]
    if len(dirs) != 1:
        raise ValueError(f"{diagnostics}: expected one invocation dir, found {dirs}")
    return dirs[0]


def wave_pid(pid, wave):
    return pid if wave == 0 else f"{wave}{pid}"


def copy_for_wave(src, dest_parent, wave, replace=()):
    """A copy of a corpus invocation directory as a later build: wave 0 is
    the corpus build itself; wave w ends WAVE_GAP_H hours later and its
    directory has the wave in front of the PID, so it is a build of its own
    (own trace id) that the receiver orders after the earlier ones.
    `replace`: (old, new) texts of timing.json to replace as well."""
    stamp, pid = src.name.split("-")
    dest = Path(dest_parent) / f"{stamp}-{wave_pid(pid, wave)}"
    shutil.copytree(src, dest)
    timing = dest / "timing.json"
    text = timing.read_text()
    for old, new in replace:
        text = text.replace(old, new)
    if wave:
        old = json.loads(text)["timestamp"]
        new = (datetime.datetime.fromisoformat(old)
               + datetime.timedelta(hours=WAVE_GAP_H * wave)).isoformat()
        field = f'"timestamp": "{old}"'
        assert text.count(field) == 1, f"{timing}: no single {field}"
        text = text.replace(field, f'"timestamp": "{new}"')
    timing.write_text(text)
    return dest


_BEGINNING = re.compile(rb'"beginningOfTime":\s*(\d+)')


def stage_time_trace_build(work, wave):
    """The corpus' clang shake build as wave `wave`'s build, in a work tree
    of its own: clang named each trace after ct-cake's PID, which the wave's
    copy changes, so the traces are renamed for it, and their clocks
    (beginningOfTime, µs) move with the build's timestamp. Returns the
    invocation directory to add."""
    src = time_trace_dir()
    inv = _single_invocation(src / "diagnostics")
    pid = inv.name.split("-")[1]
    tree = Path(work) / f"time-trace-tree-{wave}"
    shift_us = wave * WAVE_GAP_H * 3600 * 10**6
    for trace in (src / "traces").rglob("*.json"):
        rel = trace.relative_to(src / "traces")
        name = rel.name.replace(f".o.{pid}.", f".o.{wave_pid(pid, wave)}.")
        assert name != rel.name or wave == 0, f"{trace}: not a shake trace of pid {pid}"
        dest = tree / rel.parent / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        data = _BEGINNING.sub(lambda m: b'"beginningOfTime":%d' % (int(m.group(1)) + shift_us),
                              trace.read_bytes())
        dest.write_bytes(data)
    return copy_for_wave(inv, Path(work) / "time-trace-src", wave,
                         replace=[(TIME_TRACE_TREE, f"{tree}/")])


def time_trace_reference():
    """ClangBuildAnalyzer's numbers for the build's traces (the corpus'
    clangbuildanalyzer-analyze.txt): {"compilations", "frontend_s",
    "backend_s", "headers": [(path, ms)] most expensive first}."""
    text = (time_trace_dir() / "clangbuildanalyzer-analyze.txt").read_text()
    frontend = float(re.search(r"Parsing \(frontend\):\s+([\d.]+) s", text).group(1))
    backend = float(re.search(r"Codegen & opts \(backend\):\s+([\d.]+) s", text).group(1))
    section = text.split("**** Expensive headers:", 1)[1]
    headers = [(m.group(2), int(m.group(1)))
               for m in re.finditer(r"(?m)^(\d+) ms: (\S+) \(included", section)]
    compilations = int(re.search(r"Compilation \((\d+) times\)", text).group(1))
    return {"compilations": compilations, "frontend_s": frontend, "backend_s": backend, "headers": headers}


@dataclass
class CasStore:
    host: str
    cell: Path
    wasted_bytes: int
    total_bytes: int


def write_cas_store(root, host):
    """An obj cell (formats.md §6.3) of CAS_GROUPS[host]; its expected
    waste and size by the spec's formula."""
    cell = Path(root) / host / "cas-objdir" / CAS_VARIANT
    wasted = total = 0
    for g, sizes in enumerate(CAS_GROUPS[host]):
        file_hash = f"{g + 1:02x}" + "a" * 10
        dep_hash = f"{g + 1:014x}"
        shard = cell / file_hash[:2]
        shard.mkdir(parents=True, exist_ok=True)
        for m, size in enumerate(sizes):
            (shard / f"unit{g}_{file_hash}_{dep_hash}_{m + 1:016x}.o").write_bytes(b"\0" * size)
            # A flock sidecar, which the scan must not count.
            (shard / f"unit{g}_{file_hash}_{dep_hash}_{m + 1:016x}.o.lock").write_bytes(b"")
        total += sum(sizes)
        if len(sizes) >= 2:
            wasted += sum(sizes) - min(sizes)
    return CasStore(host, cell, wasted, total)
