"""Hostile build directories, one table (issue 13, item 5).

Each case writes one invocation directory `d` (its parent is watched;
`outside` is a directory outside the include roots). `expect`:

  refused   never sent, and a warning names the directory
  sent      sent (the bad part dropped or repaired), with a warning
  read      sent without a warning: odd but valid (a hard link cannot be
            told from the file itself; long values are cut to
            limits.max_attribute_length; JSON's last duplicate key wins)
  ignored   not an invocation directory at all (a name compiletools never
            writes): nothing sent, nothing to warn about

The expectations are what the receiver does and was checked to be sound,
not aspirations: a case that changes outcome fails the fast campaign.
"""

import json
import os
import socket
from collections import namedtuple

from harness import packaged

Case = namedtuple("Case", "name make expect")

MiB = 1 << 20


def doc():
    return json.loads(packaged.case_timing())


def write(d, content, name="timing.json"):
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return p


def timing(content):
    return lambda d, outside: write(d, content)


def edited(f):
    """A timing.json from the corpus document changed by f(doc) -> text."""
    def make(d, outside):
        write(d, f(doc()))
    return make


def with_field(key, raw):
    """The corpus document with `key` set to the raw JSON text `raw`."""
    def f(x):
        x[key] = "@@"
        return json.dumps(x).replace('"@@"', raw, 1)
    return edited(f)


def link_timing(target_of):
    def make(d, outside):
        d.mkdir()
        os.symlink(target_of(outside), d / "timing.json")
    return make


def outside_build(outside):
    p = outside / "valid-timing.json"
    p.write_bytes(packaged.case_timing())
    return p


def hard_link_outside(d, outside):
    d.mkdir()
    os.link(outside_build(outside), d / "timing.json")


def fifo(name):
    def make(d, outside):
        if name == "timing.json":
            d.mkdir()
        else:
            write(d, packaged.case_timing())
        os.mkfifo(d / name)
    return make


def side_link(name, target_of):
    def make(d, outside):
        write(d, packaged.case_timing())
        os.symlink(target_of(outside), d / name)
    return make


def side(name, content):
    def make(d, outside):
        write(d, packaged.case_timing())
        write(d, content, name)
    return make


def sparse(size):
    def make(d, outside):
        p = write(d, b"")
        with open(p, "r+b") as f:
            f.truncate(size)
    return make


def sock(d, outside):
    d.mkdir()
    # Bound by a relative name: socket paths are limited to 108 bytes.
    cwd = os.getcwd()
    os.chdir(d)
    try:
        s = socket.socket(socket.AF_UNIX)
        s.bind("timing.json")
        s.close()
    finally:
        os.chdir(cwd)


def dir_link(target_of):
    def make(d, outside):
        os.symlink(target_of(outside), d)
    return make


def outside_build_dir(outside):
    b = outside / "20261130T000000-9"
    b.mkdir(exist_ok=True)
    (b / "timing.json").write_bytes(packaged.case_timing())
    return b


def odd_name(name):
    """A directory beside the builds with a name no build has."""
    def make(d, outside):
        p = os.path.join(os.fsencode(d.parent), name)
        os.mkdir(p)
        with open(os.path.join(p, b"timing.json"), "wb") as f:
            f.write(packaged.case_timing())
    return make


def deep(n, open_, close):
    return timing(open_ * n + close * n)


def rules_doc(rules):
    def f(x):
        x["phases"].append({"name": "build_execution", "start_s": 1070.0, "end_s": 1071.0, "rules": rules})
        return json.dumps(x)
    return edited(f)


HOSTILE_CASES = [
    # symlinks and hard links out of the roots
    Case("timing.json -> valid build outside", link_timing(outside_build), "refused"),
    Case("timing.json -> /etc/passwd", link_timing(lambda o: "/etc/passwd"), "refused"),
    Case("timing.json -> /dev/zero", link_timing(lambda o: "/dev/zero"), "refused"),
    Case("timing.json -> /dev/null", link_timing(lambda o: "/dev/null"), "refused"),
    Case("timing.json -> /dev/urandom", link_timing(lambda o: "/dev/urandom"), "refused"),
    Case("timing.json -> /proc/self/environ", link_timing(lambda o: "/proc/self/environ"), "refused"),
    Case("timing.json -> /proc/self/mem", link_timing(lambda o: "/proc/self/mem"), "refused"),
    Case("timing.json -> /proc/kmsg", link_timing(lambda o: "/proc/kmsg"), "refused"),
    Case("timing.json -> outside directory", link_timing(lambda o: o), "refused"),
    Case("timing.json -> itself (loop)", link_timing(lambda o: "timing.json"), "refused"),
    Case("timing.json -> dangling", link_timing(lambda o: o / "nope"), "refused"),
    Case("invocation dir -> build outside", dir_link(outside_build_dir), "refused"),
    Case("invocation dir -> /", dir_link(lambda o: "/"), "refused"),
    Case("invocation dir -> /proc/self", dir_link(lambda o: "/proc/self"), "refused"),
    # A hard link cannot be told from the file (README): it is read.
    Case("timing.json hard link to a file outside", hard_link_outside, "read"),
    # not regular files
    Case("timing.json FIFO", fifo("timing.json"), "refused"),
    Case("timing.json unix socket", sock, "refused"),
    Case("timing.json directory", lambda d, o: (d / "timing.json").mkdir(parents=True), "refused"),
    # sizes
    Case("sparse 4 GiB timing.json", sparse(4 << 30), "refused"),
    Case("sparse 300 MiB timing.json", sparse(300 * MiB), "refused"),
    Case("sparse 64 MiB of NULs", sparse(64 * MiB), "refused"),
    Case("empty timing.json", timing(b""), "refused"),
    Case("whitespace only", timing(b" \n\t" * 1000), "refused"),
    # nesting
    Case("100k-deep arrays", deep(100_000, "[", "]"), "refused"),
    Case("100k-deep objects", timing('{"a":' * 100_000 + "1" + "}" * 100_000), "refused"),
    Case("100k-deep metadata value", with_field("variant", "[" * 100_000 + "]" * 100_000), "sent"),
    # gigantic strings and numbers
    Case("50 MiB string variant", with_field("variant", json.dumps("v" * (50 * MiB))), "read"),
    Case("50 MiB phase name", edited(
        lambda x: json.dumps({**x, "phases": x["phases"] + [{"name": "p" * (50 * MiB), "start_s": 1070.0, "end_s": 1070.5}]})),
        "read"),
    Case("number 1e400 start_s", with_field("start_s", "1e400"), "refused"),
    Case("10k-digit integer", with_field("total_elapsed_s", "9" * 10_000), "refused"),
    Case("NaN start_s", with_field("start_s", "NaN"), "refused"),
    Case("Infinity start_s", with_field("start_s", "Infinity"), "refused"),
    Case("-Infinity start_s", with_field("start_s", "-Infinity"), "refused"),
    Case("NaN in a phase end", edited(lambda x: json.dumps(x).replace('"end_s": 1073.914559', '"end_s": NaN'))
         , "refused"),
    # keys and encodings
    Case("duplicate timestamp keys", edited(
        lambda x: json.dumps(x).replace('"timestamp"', '"timestamp": "1999-01-01T00:00:00+00:00", "timestamp"', 1)),
        "read"),
    Case("UTF-8 BOM", timing(b"\xef\xbb\xbf" + packaged.case_timing()), "refused"),
    Case("UTF-16 LE with BOM", timing(b"\xff\xfe" + packaged.case_timing().decode().encode("utf-16-le")), "refused"),
    Case("UTF-16 BE with BOM", timing(b"\xfe\xff" + packaged.case_timing().decode().encode("utf-16-be")), "refused"),
    Case("UTF-32", timing(packaged.case_timing().decode().encode("utf-32")), "refused"),
    Case("invalid UTF-8 in variant", timing(packaged.case_timing().replace(b"ccache-gcc", b"ccache-\xff\xfegcc", 1)), "sent"),
    Case("lone surrogate escape", with_field("variant", '"\\ud800x"'), "sent"),
    Case("NUL bytes in the document", timing(packaged.case_timing().replace(b"\n", b"\n\x00", 3)), "refused"),
    Case("trailing garbage", timing(packaged.case_timing() + b"}}}garbage"), "refused"),
    Case("truncated document", timing(packaged.case_timing()[:500]), "refused"),
    Case("null document", timing(b"null"), "refused"),
    Case("array document", timing(b"[]"), "refused"),
    Case("string document", timing(b'"timing"'), "refused"),
    Case("phases not a list", with_field("phases", '{"a": 1}'), "refused"),
    Case("timestamp a number", with_field("timestamp", "12345"), "refused"),
    Case("timestamp year 9999", with_field("timestamp", '"9999-12-31T23:59:59+00:00"'), "refused"),
    Case("timestamp year 1000", with_field("timestamp", '"1000-01-01T00:00:00+00:00"'), "refused"),
    Case("version 999", with_field("version", "999"), "read"),
    Case("rules with end before start", rules_doc([{"name": "a.cpp", "rule_type": "compile", "start_s": 1070.9, "end_s": 1070.1}]), "sent"),
    Case("200k rules", rules_doc([{"name": f"r{i}.cpp", "rule_type": "compile", "start_s": 1070.0, "end_s": 1070.1}
                                   for i in range(200_000)]), "read"),
    # side files
    Case("statslog FIFO", fifo("ccache.statslog"), "sent"),
    Case("rule_outcomes.log FIFO", fifo("rule_outcomes.log"), "sent"),
    Case("statslog -> /etc/passwd", side_link("ccache.statslog", lambda o: "/etc/passwd"), "sent"),
    Case("statslog -> /dev/zero", side_link("ccache.statslog", lambda o: "/dev/zero"), "sent"),
    Case("rule_outcomes.log -> /proc/self/environ", side_link("rule_outcomes.log", lambda o: "/proc/self/environ"), "sent"),
    Case("statslog a directory", lambda d, o: (write(d, packaged.case_timing()), (d / "ccache.statslog").mkdir()), "sent"),
    Case("statslog 20 MiB line without newline", side("ccache.statslog", b"x" * (20 * MiB)), "sent"),
    Case("outcomes invalid UTF-8", side("rule_outcomes.log", b"\xff\xfe\t\x80\tx\ty\n"), "sent"),
    # names
    Case("name with a newline", odd_name(b"20261130T010000-1\n"), "ignored"),
    Case("name with invalid UTF-8", odd_name(b"20261130T01\xff0000-1"), "ignored"),
    Case("name with a 30-digit PID", odd_name(b"20261130T010000-123456789012345678901234567890"), "ignored"),
]

assert len(HOSTILE_CASES) >= 50, len(HOSTILE_CASES)
