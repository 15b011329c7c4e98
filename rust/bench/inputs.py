#!/usr/bin/env python3
"""The synthetic timing.json inputs of the benchmarks, made on demand.

    inputs.py [--python PY] [--validate] N [N ...]

For each N, makes `<inputs>/timing-N.json` with the corpus's
`scripts/gen_timing.py N OUT` (seed 1, 16 lanes: the defaults, exactly the
command of corpus/perf.md), checks it, and lays it out as an invocation
directory `<inputs>/inv-N/20260101T120000-4242/timing.json` (a hard link),
which is what `process_build` reads. Prints one JSON line per N:
{"rules", "file", "invocation_dir", "bytes", "sha256", "checks"}.

Checks, in order of authority:
* N = 1000: byte-identical to the corpus's kept `perf/timing-1000.json`
  (the very file perf.md measured); a difference is an error.
* `rust/bench/timing-inputs.sha256` (next to this script) pins what
  gen_timing.py made here; a listed file that differs is an error (remove
  it to regenerate; if the generator itself changed, re-pin).
* The corpus's `perf/timing-inputs.sha256`: compared and reported, but a
  mismatch is only a warning, because that file's checksums match neither
  gen_timing.py's output nor the kept `perf/timing-1000.json` (checked
  2026-11-30: all three differ), so they cannot be the files perf.md used.

Paths: `<inputs>` is $CT_BENCH_INPUTS, else `<target>/bench-inputs` with
`<target>` = $CARGO_TARGET_DIR or `<repo>/target`. The corpus is
$CT_CORPUS_DIR, else `<repo>/../shared/corpus`.

gen_timing.py validates its output with compiletools' own BuildTimer when
--validate is given (needs compiletools in PY's environment); without it
the file is written with --no-validate, which gives the same bytes.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
INVOCATION_ID = "20260101T120000-4242"


def corpus_dir():
    return os.environ.get("CT_CORPUS_DIR") or os.path.abspath(os.path.join(REPO, "..", "shared", "corpus"))


def target_dir():
    d = os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")
    return os.path.abspath(d)


def inputs_dir():
    return os.path.abspath(os.environ.get("CT_BENCH_INPUTS") or os.path.join(target_dir(), "bench-inputs"))


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_checksums(path):
    """{file name: sha256} from a `sha256sum` listing; {} if there is none."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    out[parts[1].lstrip("*")] = parts[0]
    except FileNotFoundError:
        pass
    return out


def check(n, name, path, got):
    """Checks one generated file; returns the list of checks passed/failed."""
    checks = []
    if n == 1000:
        kept = os.path.join(corpus_dir(), "perf", "timing-1000.json")
        if os.path.exists(kept):
            if sha256_file(kept) != got:
                raise SystemExit(f"{path} differs from the corpus's {kept}")
            checks.append("identical to corpus perf/timing-1000.json")
    pinned = read_checksums(os.path.join(HERE, "timing-inputs.sha256")).get(name)
    if pinned:
        if pinned != got:
            raise SystemExit(f"{path}: sha256 {got} is not the {pinned} pinned in "
                             "rust/bench/timing-inputs.sha256; remove the file to regenerate")
        checks.append("matches rust/bench/timing-inputs.sha256")
    corpus = read_checksums(os.path.join(corpus_dir(), "perf", "timing-inputs.sha256")).get(name)
    if corpus and corpus != got:
        print(f"warning: {name}: sha256 {got[:16]}… differs from corpus perf/timing-inputs.sha256 "
              f"({corpus[:16]}…), which is known not to match gen_timing.py's output", file=sys.stderr)
        checks.append("differs from corpus perf/timing-inputs.sha256 (known stale)")
    elif corpus:
        checks.append("matches corpus perf/timing-inputs.sha256")
    return checks


def ensure(n, python=sys.executable, validate=False):
    """Makes (or reuses) the N-rule input; returns its description."""
    base = inputs_dir()
    os.makedirs(base, exist_ok=True)
    name = f"timing-{n}.json"
    path = os.path.join(base, name)
    if os.path.exists(path):
        got = sha256_file(path)
        checks = check(n, name, path, got)
    else:
        script = os.path.join(corpus_dir(), "scripts", "gen_timing.py")
        tmp = f"{path}.tmp-{os.getpid()}"
        cmd = [python, script, str(n), tmp]
        if not validate:
            cmd.append("--no-validate")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        got = sha256_file(tmp)
        try:
            checks = check(n, name, tmp, got)
        except SystemExit:
            os.unlink(tmp)
            raise
        os.replace(tmp, path)
    inv = os.path.join(base, f"inv-{n}", INVOCATION_ID)
    os.makedirs(inv, exist_ok=True)
    linked = os.path.join(inv, "timing.json")
    if not (os.path.exists(linked) and os.path.samefile(linked, path)):
        tmp = f"{linked}.tmp-{os.getpid()}"
        try:
            os.link(path, tmp)
        except OSError:
            import shutil
            shutil.copyfile(path, tmp)
        os.replace(tmp, linked)
    return {"rules": n, "file": path, "invocation_dir": inv, "bytes": os.path.getsize(path), "sha256": got,
            "checks": checks}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rules", nargs="+", type=int)
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs gen_timing.py")
    ap.add_argument("--validate", action="store_true", help="let gen_timing.py check with BuildTimer")
    a = ap.parse_args()
    for n in a.rules:
        print(json.dumps(ensure(n, a.python, a.validate)), flush=True)


if __name__ == "__main__":
    main()
