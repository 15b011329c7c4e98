"""Why each translation unit was compiled (issue 24), on real ct-cake 13.1.4
shake builds of the `shapes` project watched by our collector with
`history.enabled` (docs/rebuilds.md).

One workspace goes through a sequence of builds; after each, every compile
span's `ct.rule.rebuild_reason` must be exactly what the edit the test made
implies. The ground truth comes from the project's sources (which TUs
include the edited header, transitively; which reference the macro), never
from our output:

  cold      fresh clone, empty ccache               every TU  new
  noop      nothing changed                         no compile span
  source    src/stats.cpp edited                    stats.cpp source_changed, nothing else
  header    src/vec.hpp edited (#ifdef SHAPES_TRACE) every TU including vec.hpp headers_changed, nothing else
  define    --append-CXXFLAGS=-DSHAPES_TRACE=1      every TU whose headers name SHAPES_TRACE flags_changed
                                                    (compiletools scopes -D macros to the TUs naming them)
  optimize  ... -O1 as well (changes __OPTIMIZE__)  every TU flags_changed
  evicted   the CAS and bin/ removed, ccache kept   every TU a CAS miss ccache served: cas_miss_reason
                                                    evicted (same key, object gone), no rebuild_reason
  evicted-cold  the same with a fresh ccache        every TU rebuild_reason evicted
  clone     a second clone sharing the CAS           every compile a CAS hit: no compile span
  clone-edit  src/util.hpp edited in the clone      every TU including util.hpp new (another source path)

A second, small project has a precompiled header (`//#PCH=pch.hpp` in
main.cpp; pch.hpp includes base.hpp and extra.hpp), its store outside the
work tree (formats.md §8 item 28):

  pch-cold    fresh clone                           pch.hpp (the PCH rule), main.cpp, tool.cpp  new
  pch-header  base.hpp edited, ct-trim-cache         pch.hpp headers_changed naming exactly base.hpp;
              --cas-pchdir-only, then the build     main.cpp headers_changed; tool.cpp nothing

compiletools 13.1.4 does not rebuild a PCH whose headers changed by itself:
the `.gch` path holds only a command hash, and shake takes an existing CAS
artefact as up to date. `ct-trim-cache` evicts it (its manifest's hashes no
longer match the headers), and the next build compiles it again — the
sequence a user gets, so the test runs it.

The macro guards an inline function, so the -D changes the preprocessed
text and ccache misses too (a guard around nothing would be a ccache
preprocessor-mode hit: cas_miss_reason, the compiler never ran).

The collector is restarted (file_storage) between `header` and `define`: the
history must survive it. Each build's root span links to the previous
build's root (same host, variant, pipeline). The `header` case is also read
with `ct-otel-dump diff --json`, which must give the same reasons.

Run: .venv/bin/python -m pytest tests/realbuilds/test_rebuilds.py (about
2-3 minutes; needs tests/install-deps.sh realbuilds and the collector).
"""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness import ctrun, otlp, projects
from harness.otlp_sink import OtlpSink

from . import ourcollector

REPO = Path(__file__).resolve().parents[2]
ARRIVAL_TIMEOUT_S = 60
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


# ---------------------------------------------------------------- ground truth

def translation_units(ws):
    return sorted(p for p in ws.rglob("*.cpp") if ".git" not in p.parts)


def transitive_headers(path, seen=None):
    """Every project header `path` includes, directly or not (quoted includes,
    resolved against the including file's directory, as the project writes them)."""
    seen = set() if seen is None else seen
    for name in INCLUDE.findall(path.read_text()):
        header = (path.parent / name).resolve()
        if header.is_file() and header not in seen:
            seen.add(header)
            transitive_headers(header, seen)
    return seen


def tus_including(ws, header):
    header = header.resolve()
    return {str(tu) for tu in translation_units(ws) if header in transitive_headers(tu)}


def tus_naming(ws, identifier):
    """TUs whose own text or transitive headers name the identifier."""
    out = set()
    for tu in translation_units(ws):
        files = [tu, *transitive_headers(tu)]
        if any(re.search(rf"\b{identifier}\b", f.read_text()) for f in files):
            out.add(str(tu))
    return out


# ---------------------------------------------------------------- the builds

def collector_config(diag_dirs, capture_dir, storage_dir, health_port, endpoint):
    receiver = ourcollector.receiver_config(include=diag_dirs, capture_dir=capture_dir)
    receiver["history"] = {"enabled": True}
    receiver["storage"] = "file_storage"
    config = json.loads(ourcollector.render(receiver, endpoint, health_port))
    config["extensions"]["file_storage"] = {"directory": str(storage_dir), "create_directory": True}
    config["service"]["extensions"].append("file_storage")
    return json.dumps(config, indent=2) + "\n"


class Sequence:
    """The workspace, the collector and the sink; one ct-cake run per step."""

    def __init__(self, work, binary):
        self.work = work
        self.binary = binary
        project, _ = projects.make_project(str(work / "projects"), "shapes")
        self.project = project
        self.ws = Path(projects.clone(project, str(work / "ws")))
        self.clone = work / "ws2"
        self.diag = work / "diag"
        self.diag2 = work / "diag2"
        self.diag3 = work / "diag3"
        self.diag.mkdir()
        self.diag2.mkdir()
        self.diag3.mkdir()
        self.sink = OtlpSink().start()
        self.proc = None
        self.builds = {}      # step -> (invocation dir, root span, compile spans by source)

    def start_collector(self):
        self.proc = ourcollector.OurCollector(self.binary, self.work / f"collector-{len(self.builds)}",
                                              {"include": [str(self.diag)]}, self.sink.endpoint)
        self.proc.config_path.write_text(collector_config(
            [self.diag, self.diag2, self.diag3], self.work / "capture", self.work / "storage",
            self.proc.health_port, self.sink.endpoint))
        self.proc.start()

    def stop_collector(self):
        if self.proc is not None:
            code = self.proc.stop()
            print(f"collector exit status {code}\n{self.proc.describe(lines=20)}")
            self.proc = None

    def build(self, step, ws=None, diag=None, extra=(), ccache="ccache"):
        ws, diag = ws or self.ws, diag or self.diag
        before = set(diag.iterdir())
        argv = ["ct-cake", f"--variant={ctrun.VARIANT}", "--backend=shake", "--timing",
                f"--diagnostics-dir={diag}", "--ccache-statslog=auto", *extra]
        env = ctrun.build_env(str(self.work), str(self.work / ccache))
        done = subprocess.run(argv, cwd=ws, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=ctrun.BUILD_TIMEOUT_S)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        (inv,) = set(diag.iterdir()) - before
        root, compiles = self.wait_for(inv.name)
        self.builds[step] = (inv, root, compiles)
        return root, compiles

    def wait_for(self, invocation_id):
        def spans_of():
            out = []
            for res, span in self.sink.spans():
                if res.get("ct.invocation_id") == invocation_id:
                    out.append(span)
            return out
        assert self.sink.wait_for(lambda: any(not s.parent_span_id for s in spans_of()), ARRIVAL_TIMEOUT_S), \
            f"no trace for {invocation_id}"
        self.sink.wait_quiet(0.5, 10)
        spans = spans_of()
        (root,) = [s for s in spans if not s.parent_span_id]
        compiles = {}
        for s in spans:
            a = otlp.attributes(s.attributes)
            if a.get("ct.rule_type") == "compile":
                assert a["ct.source"] not in compiles, f"{a['ct.source']} compiled twice"
                compiles[a["ct.source"]] = a
        return root, compiles


PCH_FILES = {
    "src/base.hpp": "#ifndef BASE_HPP\n#define BASE_HPP\ninline int base() { return 1; }\n#endif\n",
    "src/extra.hpp": "#ifndef EXTRA_HPP\n#define EXTRA_HPP\ninline int extra() { return 2; }\n#endif\n",
    "src/pch.hpp": ("#ifndef PCH_HPP\n#define PCH_HPP\n#include <string>\n#include <vector>\n"
                    "#include \"base.hpp\"\n#include \"extra.hpp\"\n#endif\n"),
    "src/main.cpp": ("//#PCH=pch.hpp\n#include \"pch.hpp\"\n"
                     "int main() { std::vector<int> v{base()}; return static_cast<int>(v.size()) - 1; }\n"),
    "src/tool.cpp": "#include \"extra.hpp\"\nint main() { return extra() - 2; }\n",
}


def make_pch_project(root):
    """A git work tree of PCH_FILES."""
    ws = Path(root)
    for name, text in PCH_FILES.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", "-c", "init.defaultBranch=main"]
    for argv in (["init", "-q", "."], ["add", "-A"], ["commit", "-q", "-m", "pch project"]):
        subprocess.run(git + argv, cwd=ws, check=True, capture_output=True, timeout=60)
    return ws


def pch_sequence(seq):
    """The PCH project's builds (see the module docstring)."""
    ws = make_pch_project(seq.work / "pchws")
    store = seq.work / "pch-store"
    pch_flags = [f"--cas-pchdir={store}"]
    tus = [str(ws / "src/main.cpp"), str(ws / "src/tool.cpp")]
    seq.pch_ws = ws
    seq.truth["pch-cold"] = {str(ws / "src/pch.hpp"): "new", **{t: "new" for t in tus}}
    seq.build("pch-cold", ws=ws, diag=seq.diag3, extra=pch_flags)
    edit(ws / "src/base.hpp", "inline int base()", "// edited by the test\ninline int base()")
    # Ground truth: the headers the edit changed (base.hpp, which pch.hpp
    # includes) and the TUs that include it, from the sources.
    seq.pch_edited = [str((ws / "src/base.hpp").resolve())]
    dependents = tus_including(ws, ws / "src/base.hpp")
    seq.truth["pch-header"] = {str(ws / "src/pch.hpp"): "headers_changed", **{t: "headers_changed" for t in dependents}}
    env = ctrun.build_env(str(seq.work), str(seq.work / "ccache"))
    trim = subprocess.run(["ct-trim-cache", f"--variant={ctrun.VARIANT}", f"--cas-pchdir={store}", "--cas-pchdir-only"],
                          cwd=ws, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert trim.returncode == 0, trim.stderr.decode(errors="replace")[-2000:]
    seq.build("pch-header", ws=ws, diag=seq.diag3, extra=pch_flags)


def edit(path, old, new):
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


@pytest.fixture(scope="module")
def sequence(ct_install, collector_binary, tmp_path_factory):
    work = Path(os.path.realpath(tmp_path_factory.mktemp("rebuilds")))
    seq = Sequence(work, collector_binary)
    seq.start_collector()
    t0 = time.monotonic()
    try:
        ws, flags = seq.ws, []
        seq.truth = {"cold": {str(t): "new" for t in translation_units(ws)}}
        seq.build("cold")
        seq.truth["noop"] = {}
        seq.build("noop")
        edit(ws / "src/stats.cpp", "namespace stats {", "namespace stats {\n// edited by the test")
        seq.truth["source"] = {str(ws / "src/stats.cpp"): "source_changed"}
        seq.build("source")
        edit(ws / "src/vec.hpp", "namespace shapes {",
             "#ifdef SHAPES_TRACE\ninline const char* shapes_trace() { return \"traced\"; }\n#endif\n\n"
             "namespace shapes {")
        seq.truth["header"] = {tu: "headers_changed" for tu in tus_including(ws, ws / "src/vec.hpp")}
        seq.build("header")
        # The history must survive a restart (it is kept in file_storage).
        seq.stop_collector()
        seq.start_collector()
        flags = ["-DSHAPES_TRACE=1"]
        seq.truth["define"] = {tu: "flags_changed" for tu in tus_naming(ws, "SHAPES_TRACE")}
        seq.build("define", extra=[f"--append-CXXFLAGS={' '.join(flags)}"])
        flags.append("-O1")
        seq.truth["optimize"] = {str(t): "flags_changed" for t in translation_units(ws)}
        seq.build("optimize", extra=[f"--append-CXXFLAGS={' '.join(flags)}"])
        # Every artefact gone (the links would otherwise find their
        # executables and need no object): each compile misses the CAS.
        ctrun.clean_outputs(str(ws))
        seq.truth["evicted"] = {str(t): ("evicted", SERVED) for t in translation_units(ws)}
        seq.build("evicted", extra=[f"--append-CXXFLAGS={' '.join(flags)}"])
        ctrun.clean_outputs(str(ws))
        seq.truth["evicted-cold"] = {str(t): "evicted" for t in translation_units(ws)}
        seq.build("evicted-cold", extra=[f"--append-CXXFLAGS={' '.join(flags)}"], ccache="ccache-fresh")
        # A second clone with the same edits, sharing the first one's CAS.
        clone = Path(projects.clone(seq.project, str(seq.clone)))
        shutil.copy(ws / "src/vec.hpp", clone / "src/vec.hpp")
        shutil.copy(ws / "src/stats.cpp", clone / "src/stats.cpp")
        shared = [f"--cas-objdir={ws / 'cas-objdir'}", f"--cas-exedir={ws / 'cas-exedir'}",
                  f"--append-CXXFLAGS={' '.join(flags)}"]
        seq.truth["clone"] = {}
        seq.build("clone", ws=clone, diag=seq.diag2, extra=shared)
        edit(clone / "src/util.hpp", "namespace util {", "namespace util {\n// edited in the clone")
        seq.truth["clone-edit"] = {tu: "new" for tu in tus_including(clone, clone / "src/util.hpp")}
        seq.build("clone-edit", ws=clone, diag=seq.diag2, extra=shared)
        pch_sequence(seq)
        print(f"\nrebuild sequence: {len(seq.builds)} builds in {time.monotonic() - t0:.0f} s")
        yield seq
    finally:
        seq.stop_collector()
        seq.sink.stop()


STEPS = ["cold", "noop", "source", "header", "define", "optimize", "evicted", "evicted-cold", "clone",
         "clone-edit"]
REASONS = ("new", "source_changed", "headers_changed", "flags_changed", "evicted", "not_cas")
SERVED = "ccache served"


def expected(value):
    """(reason key, reason) of a truth entry: a reason alone ran the
    compiler; (reason, SERVED) was a CAS miss ccache served."""
    if isinstance(value, tuple):
        return "ct.rule.cas_miss_reason", value[0]
    return "ct.rule.rebuild_reason", value


@pytest.mark.parametrize("step", STEPS)
def test_every_compile_has_the_reason_of_the_edit(sequence, step):
    _, root, compiles = sequence.builds[step]
    want = {src: expected(v) for src, v in sequence.truth[step].items()}
    got = {}
    for src, a in compiles.items():
        keys = [k for k in ("ct.rule.rebuild_reason", "ct.rule.cas_miss_reason") if k in a]
        assert len(keys) == 1, (src, a)
        got[src] = (keys[0], a[keys[0]])
    assert got == want, f"{step}: got {got}, want {want}"
    for src, a in compiles.items():
        changed = list(a.get("ct.rule.rebuild_changed", []))
        part = {"source_changed": "source", "headers_changed": "headers", "flags_changed": "flags"}.get(want[src][1])
        assert (part in changed) if part else not changed, (src, changed)
        served = want[src][0] == "ct.rule.cas_miss_reason"
        # The ccache outcome, from the captured statslog, beside the reason.
        assert a.get("ct.rule.cache_layer") == ("ccache" if served else "compiled"), (src, a)
    counts = {k.removeprefix("ct.build.rebuild."): v for k, v in otlp.attributes(root.attributes).items()
              if k.startswith("ct.build.rebuild.")}
    if compiles:
        for reason in REASONS:
            ran = [r for k, r in want.values() if k == "ct.rule.rebuild_reason"]
            assert counts[reason] == ran.count(reason), (step, counts)
        assert counts["ccache_served"] == sum(1 for k, _ in want.values() if k == "ct.rule.cas_miss_reason")
    print(f"{step}: {sorted(set(want.values()))} x{len(want)}; counts {counts}")


PCH_STEPS = ["pch-cold", "pch-header"]


def reasons_of(compiles):
    return {src: a.get("ct.rule.rebuild_reason", a.get("ct.rule.cas_miss_reason")) for src, a in compiles.items()}


@pytest.mark.parametrize("step", PCH_STEPS)
def test_the_pch_rule_and_its_dependents_have_the_reason_of_the_edit(sequence, step):
    _, root, compiles = sequence.builds[step]
    got = reasons_of(compiles)
    named = {Path(s).name: list(a.get("ct.rule.rebuild_headers", [])) for s, a in compiles.items()}
    print(f"{step}: " + ", ".join(f"{Path(s).name} {r} {named[Path(s).name] or ''}".rstrip()
                                  for s, r in sorted(got.items())))
    assert got == sequence.truth[step], f"{step}: got {got}, want {sequence.truth[step]}"
    pch = compiles[str(sequence.pch_ws / "src/pch.hpp")]
    assert pch["ct.target"].endswith("/pch.hpp.gch"), pch["ct.target"]
    counts = {k.removeprefix("ct.build.rebuild."): v for k, v in otlp.attributes(root.attributes).items()
              if k.startswith("ct.build.rebuild.")}
    for reason in REASONS:
        assert counts[reason] == list(got.values()).count(reason), (step, counts)
    if step == "pch-cold":
        assert "ct.rule.rebuild_headers" not in pch
        return
    # Exactly the edited header, by its real path as the manifest lists it.
    assert list(pch["ct.rule.rebuild_headers"]) == sequence.pch_edited, pch
    assert pch["ct.rule.rebuild_headers_count"] == 1
    assert list(pch.get("ct.rule.rebuild_changed", [])) == ["headers"]
    for src, a in compiles.items():
        if src != str(sequence.pch_ws / "src/pch.hpp"):
            assert "ct.rule.rebuild_headers" not in a, (src, a)


def test_the_header_edit_names_its_dependents_and_no_other_tu(sequence):
    ws = sequence.ws
    dependents = sequence.truth["header"]
    assert 0 < len(dependents) < len(translation_units(ws)), "the edit must not touch every TU"
    assert str(ws / "src/util.cpp") not in dependents


@pytest.mark.parametrize("step", STEPS[1:])
def test_each_root_links_to_the_previous_build(sequence, step):
    previous = STEPS[STEPS.index(step) - 1]
    _, root, _ = sequence.builds[step]
    _, before, _ = sequence.builds[previous]
    a = otlp.attributes(root.attributes)
    if step == "clone":
        # Another work tree: another pipeline (cicd.pipeline.name = its directory), no previous build.
        assert not root.links and "ct.build.compare.rules_added" not in a
        return
    (link,) = root.links
    assert (link.trace_id, link.span_id) == (before.trace_id, before.span_id)
    assert a["ct.build.compare.previous_trace_id"] == before.trace_id.hex()


def test_the_diff_cli_agrees_with_the_trace(sequence):
    """ct-otel-dump diff on the header edit: the reasons the collector sent."""
    binary = REPO / "_build" / "ct-otel-dump"
    subprocess.run(["go", "build", "-o", str(binary), "./cmd/ct-otel-dump"], cwd=REPO / "go-receiver",
                   check=True, timeout=600)
    old, _, _ = sequence.builds["source"]
    new, _, compiles = sequence.builds["header"]
    flags = [str(binary), "diff", "--host-name", ourcollector.host_name()]
    args = [str(old), str(new)]
    report = json.loads(subprocess.run(flags + ["--json"] + args, check=True, capture_output=True,
                                       timeout=120).stdout)
    got = {}
    for group in report["rebuilds"]:
        for src in group["sources"]:
            got[str(sequence.ws / src)] = group["reason"]
    assert got == sequence.truth["header"]
    assert report["ccache_served"] == []
    assert report["comparison"]["linked_to_old"] is True
    text = subprocess.run(flags + args, check=True, capture_output=True, timeout=120, text=True).stdout
    assert "headers_changed" in text
    out = REPO / "_build" / "realbuilds" / "rebuilds-header-diff.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"\n$ ct-otel-dump diff OLD NEW   (header edit)\n{text}")


def test_the_diff_cli_does_not_guess_a_pch_s_headers(sequence):
    """ct-otel-dump diff on the PCH header edit, after the fact: the build
    after OLD rewrote the PCH's manifest, so OLD's hashes are gone from
    disk and the diff says not_cas for the PCH (never `evicted` from
    comparing NEW's manifest with itself); the consumer is headers_changed."""
    binary = REPO / "_build" / "ct-otel-dump"
    subprocess.run(["go", "build", "-o", str(binary), "./cmd/ct-otel-dump"], cwd=REPO / "go-receiver",
                   check=True, timeout=600)
    old, _, _ = sequence.builds["pch-cold"]
    new, _, _ = sequence.builds["pch-header"]
    flags = [str(binary), "diff", "--host-name", ourcollector.host_name()]
    report = json.loads(subprocess.run(flags + ["--json", str(old), str(new)], check=True, capture_output=True,
                                       timeout=120).stdout)
    got = {Path(src).name: g["reason"] for g in report["rebuilds"] for src in g["sources"]}
    assert got == {"pch.hpp": "not_cas", "main.cpp": "headers_changed"}, report["rebuilds"]
    assert all("headers" not in g for g in report["rebuilds"]), report["rebuilds"]
