"""The builds the fleet plays: corpus builds and generated N-rule builds,
each staged ahead of time and published into a host's diagnostics tree by
one rename, as ct-cake finishes a build.

A build's identity is where it lands: the trace id hashes the host name,
the invocation directory and the timing.json timestamp (design.md §3), so
copies of one timing.json on different hosts or under different names are
different builds.
"""

import functools
import os
import shutil
from collections import namedtuple
from pathlib import Path

from harness import ctotel_ids, packaged, reference
from harness.bench_inputs import inputs

from pipeline.bigbuilds import timestamp_of

# A template: where its files come from, and a label for the report.
Template = namedtuple("Template", "label source rules")


class PlayedBuild:
    """One build as played: the host it went to, its invocation directory
    there, when it was published and during which fault."""

    def __init__(self, host, path, template, published_at, phase):
        self.host = host
        self.path = Path(path)
        self.template = template
        self.published_at = published_at
        self.phase = phase
        self.trace_id = ctotel_ids.expected_trace_id(
            host, os.path.realpath(path), timestamp_of(path / "timing.json")).hex()


def corpus_templates(corpus_dir):
    """Every corpus case with one invocation directory, in name order."""
    out = []
    for case in sorted(p.name for p in (Path(corpus_dir) / "cases").iterdir() if p.is_dir()):
        try:
            src = reference.invocation_dir(case)
        except (FileNotFoundError, ValueError):
            continue
        out.append(Template(case, src, None))
    return out


@functools.lru_cache(maxsize=None)
def generated_template(rules):
    """The benchmarks' N-rule build (rust/bench/inputs.py, cached)."""
    info = inputs.ensure(rules)
    return Template(f"generated-{rules}", Path(info["invocation_dir"]), rules)


def stream(corpus, generated, total):
    """`total` templates: the generated ones at evenly spaced places (a
    step of total/len(generated) >= 1 keeps the places distinct), corpus
    builds cycled in order everywhere else."""
    if len(generated) > total:
        raise ValueError(f"{len(generated)} generated builds do not fit in {total}")
    places = {int((k + 0.5) * total / len(generated)): t for k, t in enumerate(generated)}
    out, c = [], 0
    for i in range(total):
        if i in places:
            out.append(places[i])
        else:
            out.append(corpus[c % len(corpus)])
            c += 1
    return out


class Stage:
    """Builds copied ahead of time next to the hosts' trees (same file
    system), so publishing is one rename."""

    def __init__(self, root):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.count = 0

    def stage(self, template):
        self.count += 1
        staged = self.root / f"staged-{self.count:05d}"
        shutil.copytree(template.source, staged)
        return staged


class HostNames:
    """Invocation directory names of one host, oldest first (ct-cake's
    format), so the receiver reads a host's builds in play order."""

    def __init__(self):
        self.next = 0

    def take(self):
        name = packaged.build_name(self.next)
        self.next += 1
        return name


def publish(staged, diag, name):
    final = Path(diag) / name
    os.rename(staged, final)
    return final
