#!/usr/bin/env python3
"""Differential check of the core's statslog and rule_outcomes.log parsers
against compiletools 13.1.4's own (`ccache_stats.parse_statslog`,
`build_timer.read_rule_outcomes`) on many files, e.g. a fuzzing corpus.

    diff_side_files.py statslog|outcomes DIR_OR_FILE... [--venv DIR] [--show N]

Runs compiletools in the bench venv (see compare_ctcake.py; PYTHONUTF8=1,
i.e. the UTF-8 locale the spec assumes) and `examples/side_files_json.rs`
on the same files, and reports every file where they differ. Known,
intended differences are counted apart, not as mismatches:
* outcomes: a `bytes_reused` outside the signed 64-bit range (Python keeps
  the record with a big int; the core skips it: no OTLP int can carry it).
Exit status 1 on any other mismatch.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import inputs  # noqa: E402

PY_SIDE = r"""
import json, sys
from compiletools.ccache_stats import parse_statslog
from compiletools.build_timer import read_rule_outcomes
kind = sys.argv[1]
for path in sys.stdin.read().splitlines():
    if kind == "statslog":
        print(json.dumps({"file": path, "counts": [[k, v] for k, v in parse_statslog(path).items()]}))
    else:
        recs = read_rule_outcomes(path)
        print(json.dumps({"file": path, "records": {t: [m["cas.hit"], str(m["cas.bytes_reused"]), m.get("cas.kind")]
                                                    for t, m in recs.items()}}))
"""

I64 = (-(2 ** 63), 2 ** 63 - 1)


def files_of(args):
    out = []
    for a in args:
        if os.path.isdir(a):
            out += sorted(os.path.join(a, f) for f in os.listdir(a) if os.path.isfile(os.path.join(a, f)))
        else:
            out.append(a)
    return out


def example_exe():
    cmd = ["cargo", "build", "--release", "--locked", "-p", "compiletools-core", "--example", "side_files_json",
           "--message-format=json-render-diagnostics"]
    p = subprocess.run(cmd, cwd=os.path.dirname(HERE), check=True, stdout=subprocess.PIPE, text=True)
    for line in p.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("target", {}).get("name") == "side_files_json":
            exe = msg.get("executable")
    return exe


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=["statslog", "outcomes"])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--venv", default=os.path.join(inputs.target_dir(), "bench-venv"))
    ap.add_argument("--show", type=int, default=5)
    a = ap.parse_args()
    files = files_of(a.paths)
    listing = "\n".join(files) + "\n"
    py = os.path.join(a.venv, "bin", "python")
    env = dict(os.environ, PYTHONUTF8="1")
    ref = subprocess.run([py, "-c", PY_SIDE, a.kind], input=listing, capture_output=True, text=True, env=env,
                         check=True).stdout.split("\n")[:-1]
    got = subprocess.run([example_exe(), a.kind], input=listing, capture_output=True, text=True,
                         check=True).stdout.split("\n")[:-1]
    assert len(ref) == len(got) == len(files), (len(ref), len(got), len(files))
    mismatches, intended = [], 0
    for r, g in zip(map(json.loads, ref), map(json.loads, got)):
        if a.kind == "statslog":
            if r["counts"] != g["counts"]:
                mismatches.append((r["file"], r["counts"], g["counts"]))
            continue
        want = {}
        big = False
        for t, (hit, nbytes, kind) in r["records"].items():
            n = int(nbytes)
            if not I64[0] <= n <= I64[1]:
                big = True
                continue
            want[t] = [hit, n, kind]
        if g["len"] != len(g["records"]):
            mismatches.append((r["file"], "side_files_json could not list every target", g))
        elif want != g["records"]:
            if big and all(g["records"].get(t) == v for t, v in want.items()):
                intended += 1
                continue
            diff = {t: (want.get(t), g["records"].get(t)) for t in set(want) | set(g["records"])
                    if want.get(t) != g["records"].get(t)}
            mismatches.append((r["file"], "compiletools vs core", diff))
        elif big:
            intended += 1
    print(f"{a.kind}: {len(files)} files, {len(mismatches)} mismatches, {intended} with intended differences")
    for m in mismatches[: a.show]:
        print(json.dumps(m, ensure_ascii=True)[:2000])
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
