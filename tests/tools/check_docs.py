#!/usr/bin/env python3
"""Checks that the documentation matches the repository.

1. Every relative link and `#anchor` in every tracked `*.md` resolves: the
   file or directory exists in the repository, and an anchor names a heading
   of the target file by GitHub's slug rules. External links are not fetched.
2. The README's layout tree (the fenced block after `## Layout`) matches
   `git ls-files`: every path it lists exists, every directory up to depth
   LAYOUT_MIN_DEPTH is listed, and a listed directory that shows any of its
   subdirectories shows all of them.
3. Every section citation in rust/, go-receiver/ and tests/ (`formats.md §N.M`,
   `design.md §N`, and the older spellings `spec §N.M`, `DESIGN §N`) names a
   numbered heading of docs/formats.md or docs/design.md; `§N item K` also
   needs item K of that section's numbered list.
4. The README has at most README_MAX_LINES lines and keeps the two commands.

Usage: check_docs.py [--root DIR] [--self-test]. Exit status 1 on any
problem, each printed as `path:line: message`.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import unittest
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

README = "README.md"
README_MAX_LINES = 250
README_COMMANDS = ("make run", "make test")
LAYOUT_HEADING = "layout"
LAYOUT_MIN_DEPTH = 2
CITING_DIRS = ("rust", "go-receiver", "tests")
CITED_DOCS = {"formats": "docs/formats.md", "design": "docs/design.md"}
MAX_SCANNED_BYTES = 2_000_000
# This script's own test fixtures hold citations of sections that do not exist.
NOT_CITING = {"tests/tools/check_docs.py"}


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


# --- the repository ---------------------------------------------------------


@dataclass
class Repo:
    root: Path
    files: set[str]
    dirs: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.dirs = set()
        for name in self.files:
            parent = PurePosixPath(name).parent
            while str(parent) != ".":
                self.dirs.add(str(parent))
                parent = parent.parent

    @classmethod
    def from_git(cls, root: Path) -> "Repo":
        # Tracked files plus new ones not yet added (but not ignored ones), so
        # the check passes or fails the same before and after `git add`.
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root, check=True, capture_output=True,
        ).stdout.decode("utf-8", "surrogateescape")
        files = {f for f in out.split("\0") if f and (root / f).exists()}
        return cls(root, files)

    def read(self, name: str) -> str:
        return (self.root / name).read_text(encoding="utf-8", errors="replace")


# --- markdown: fences, headings, links --------------------------------------

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
HTML_ID = re.compile(r"<a\s[^>]*?(?:name|id)=[\"']([^\"']+)[\"']", re.I)
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*(<[^>]*>|\S*)")


@dataclass
class MdLine:
    number: int
    text: str
    in_fence: bool


def md_lines(text: str) -> list[MdLine]:
    """Lines with whether each is inside a fenced code block (fence lines count as inside)."""
    result = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            result.append(MdLine(number, line, True))
        elif fence is not None:
            result.append(MdLine(number, line, True))
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not match.group(2).strip():
                fence = None
        else:
            result.append(MdLine(number, line, False))
    return result


@dataclass
class Heading:
    line: int
    level: int
    text: str


def headings(text: str) -> list[Heading]:
    found = []
    lines = md_lines(text)
    for i, line in enumerate(lines):
        if line.in_fence:
            continue
        atx = ATX.match(line.text)
        if atx:
            found.append(Heading(line.number, len(atx.group(1)), (atx.group(2) or "").strip()))
            continue
        setext = SETEXT.match(line.text)
        if setext and i > 0:
            prev = lines[i - 1]
            # A setext underline only after a paragraph line (not a table, a
            # list item, a quote or another heading).
            if not prev.in_fence and prev.text.strip() and not ATX.match(prev.text) \
                    and not re.match(r"^\s*([|>*+-]|\d+[.)]\s)", prev.text):
                found.append(Heading(prev.number, 1 if setext.group(1)[0] == "=" else 2,
                                     prev.text.strip()))
    return found


def rendered_text(heading_source: str) -> str:
    """A heading's text roughly as GitHub renders it: markup gone, code and link text kept."""
    pieces, at = [], 0
    for code in INLINE_CODE.finditer(heading_source):
        pieces.append(_without_markup(heading_source[at:code.start()]))
        pieces.append(code.group(2).strip())  # code is literal: `<pid>` stays
        at = code.end()
    pieces.append(_without_markup(heading_source[at:]))
    return "".join(pieces)


def _without_markup(text: str) -> str:
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"(\*+)(.+?)\1", r"\2", text)


def github_slug(heading_source: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    text = rendered_text(heading_source).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for heading in headings(text):
        slug = github_slug(heading.text)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    for line in md_lines(text):
        if not line.in_fence:
            result.update(m.group(1) for m in HTML_ID.finditer(line.text))
    return result


@dataclass
class Link:
    line: int
    target: str


def links(text: str) -> list[Link]:
    found = []
    for line in md_lines(text):
        if line.in_fence:
            continue
        plain = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line.text)
        for match in LINK.finditer(plain):
            found.append(Link(line.number, match.group(2).strip("<>")))
        ref = REF_DEF.match(plain)
        if ref:
            found.append(Link(line.number, ref.group(2).strip("<>")))
    return found


SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def check_links(repo: Repo) -> list[Problem]:
    problems = []
    anchor_cache: dict[str, set[str]] = {}

    def anchors_of(name: str) -> set[str]:
        if name not in anchor_cache:
            anchor_cache[name] = anchors(repo.read(name))
        return anchor_cache[name]

    for md in sorted(f for f in repo.files if f.endswith(".md")):
        for link in links(repo.read(md)):
            target = link.target
            if not target or SCHEME.match(target) or target.startswith("//"):
                continue
            path_part, _, anchor = target.partition("#")
            path_part = urllib.parse.unquote(path_part.split("?", 1)[0])
            if path_part:
                base = PurePosixPath("/") if path_part.startswith("/") else PurePosixPath("/" + md).parent
                resolved = normalise(base / path_part.lstrip("/"))
                if resolved is None:
                    problems.append(Problem(md, link.line, f"link {target!r} leaves the repository"))
                    continue
            else:
                resolved = md
            if resolved not in repo.files and resolved not in repo.dirs and resolved != "":
                problems.append(Problem(md, link.line, f"link {target!r}: {resolved} does not exist"))
                continue
            if anchor:
                if not resolved.endswith(".md") or resolved not in repo.files:
                    continue  # GitHub's line anchors (#L10) and the like in other files
                wanted = urllib.parse.unquote(anchor).lower()
                if wanted not in anchors_of(resolved):
                    problems.append(Problem(
                        md, link.line, f"link {target!r}: no heading with anchor #{wanted} in {resolved}"))
    return problems


def normalise(path: PurePosixPath) -> str | None:
    """`/a/b/../c` → `a/c` (repository-relative), None when it climbs above the root."""
    parts: list[str] = []
    for part in path.parts[1:]:
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


# --- the README's layout tree -----------------------------------------------


@dataclass
class TreeEntry:
    line: int
    path: str
    is_dir: bool
    depth: int


def layout_block(text: str) -> tuple[list[MdLine], int] | None:
    """The lines of the first fenced block after the `## Layout` heading, and that heading's line."""
    lines = md_lines(text)
    heading_line = None
    for heading in headings(text):
        if heading.level == 2 and github_slug(heading.text) == LAYOUT_HEADING:
            heading_line = heading.line
            break
    if heading_line is None:
        return None
    block: list[MdLine] = []
    started = False
    for line in lines:
        if line.number <= heading_line:
            continue
        if not started:
            if line.in_fence:
                started = True
                continue
            if not line.in_fence and ATX.match(line.text):
                return [], heading_line
            continue
        if FENCE.match(line.text):
            break
        block.append(line)
    return block, heading_line


def parse_tree(block: list[MdLine], path: str) -> tuple[list[TreeEntry], list[Problem]]:
    """Lines `<2 spaces per level><name>[/]  <description>`; a name ending in `/` is a directory."""
    entries: list[TreeEntry] = []
    problems = []
    stack: list[str] = []  # directory names of the enclosing levels
    for line in block:
        if not line.text.strip():
            continue
        indent = len(line.text) - len(line.text.lstrip(" "))
        if "\t" in line.text[:indent + 1] or indent % 2:
            problems.append(Problem(path, line.number, "layout tree: indent by two spaces per level"))
            continue
        depth = indent // 2
        if depth > len(stack):
            problems.append(Problem(path, line.number, "layout tree: indented deeper than under a directory"))
            continue
        del stack[depth:]
        name = line.text.split()[0]
        is_dir = name.endswith("/")
        name = name.rstrip("/")
        if not name or "/" in name or name in (".", ".."):
            problems.append(Problem(path, line.number,
                                    f"layout tree: {line.text.split()[0]!r} is not one path component"))
            continue
        full = "/".join(stack + [name])
        entries.append(TreeEntry(line.number, full, is_dir, depth + 1))
        if is_dir:
            stack.append(name)
    return entries, problems


def check_layout(repo: Repo) -> list[Problem]:
    found = layout_block(repo.read(README))
    if found is None:
        return [Problem(README, 1, "no `## Layout` heading with the layout tree")]
    block, heading_line = found
    if not block:
        return [Problem(README, heading_line, "the `## Layout` section has no fenced layout tree")]
    entries, problems = parse_tree(block, README)
    listed_dirs = {e.path for e in entries if e.is_dir}
    for entry in entries:
        if entry.is_dir and entry.path not in repo.dirs:
            kind = "a file, not a directory" if entry.path in repo.files else "not in git ls-files"
            problems.append(Problem(README, entry.line, f"layout tree: {entry.path}/ is {kind}"))
        elif not entry.is_dir and entry.path not in repo.files:
            kind = "a directory: write it as " + entry.path + "/" if entry.path in repo.dirs \
                else "not in git ls-files"
            problems.append(Problem(README, entry.line, f"layout tree: {entry.path} is {kind}"))

    # Which directories must be listed: all down to LAYOUT_MIN_DEPTH, and below
    # that every subdirectory of a listed directory that shows any child.
    expanded = {"/".join(e.path.split("/")[:-1]) for e in entries if "/" in e.path}
    tree_end = block[-1].number if block else heading_line
    for directory in sorted(repo.dirs):
        parts = directory.split("/")
        parent = "/".join(parts[:-1])
        required = len(parts) <= LAYOUT_MIN_DEPTH or parent in expanded
        if required and (parent == "" or parent in listed_dirs) and directory not in listed_dirs:
            why = (f"every directory down to depth {LAYOUT_MIN_DEPTH} is listed"
                   if len(parts) <= LAYOUT_MIN_DEPTH else f"{parent}/ lists its subdirectories")
            problems.append(Problem(README, tree_end,
                                    f"layout tree: {directory}/ is missing ({why})"))
    return problems


# --- citations of docs/ sections in the code --------------------------------

COMMENT_PREFIX = re.compile(r"^\s*(?://[/!]?|#+|\*+|--|;+)?\s?")
CITATION = re.compile(
    r"\b(?P<doc>formats\.md|design\.md|spec|DESIGN(?:\.md)?)\s*§\s*(?P<first>\d+(?:\.\d+)*)"
    r"(?P<item>\s+items?\s+\d+)?"
    r"(?P<rest>(?:\s*(?:,|;|and|or|/)\s*§\s*\d+(?:\.\d+)*(?:\s+items?\s+\d+)?)*)")
MORE = re.compile(r"§\s*(\d+(?:\.\d+)*)(\s+items?\s+\d+)?")
DOC_OF = {"formats.md": "formats", "spec": "formats", "design.md": "design",
          "DESIGN": "design", "DESIGN.md": "design"}


@dataclass(frozen=True)
class Citation:
    path: str
    line: int
    doc: str  # key of CITED_DOCS
    section: str
    item: int | None


def joined_comment_text(text: str) -> tuple[str, list[int]]:
    """The file as one string with comment markers stripped and lines joined by a
    space (a citation may break across comment lines), plus each line's offset."""
    pieces, offsets, at = [], [], 0
    for raw in text.splitlines():
        stripped = COMMENT_PREFIX.sub("", raw, count=1)
        offsets.append(at)
        pieces.append(stripped)
        at += len(stripped) + 1
    return " ".join(pieces), offsets


def line_at(offsets: list[int], position: int) -> int:
    low, high = 0, len(offsets) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if offsets[mid] <= position:
            low = mid
        else:
            high = mid - 1
    return low + 1


def citations(path: str, text: str) -> list[Citation]:
    joined, offsets = joined_comment_text(text)
    found = []
    for match in CITATION.finditer(joined):
        doc = DOC_OF[match.group("doc")]
        first_item = _item(match.group("item"))
        found.append(Citation(path, line_at(offsets, match.start("first")), doc,
                              match.group("first"), first_item))
        rest_start = match.start("rest")
        for more in MORE.finditer(match.group("rest")):
            found.append(Citation(path, line_at(offsets, rest_start + more.start(1)), doc,
                                  more.group(1), _item(more.group(2))))
    return found


def _item(text: str | None) -> int | None:
    return int(text.split()[-1]) if text else None


NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?(?:\s|$)")


@dataclass
class Section:
    heading: Heading
    items: set[int]


def numbered_sections(text: str) -> dict[str, Section]:
    """Numbered headings (`## 6.3 obj`, `## 2. timing.json`) with the item numbers of their own lists."""
    result: dict[str, Section] = {}
    all_headings = headings(text)
    lines = md_lines(text)
    for index, heading in enumerate(all_headings):
        number = NUMBERED.match(rendered_text(heading.text))
        if not number:
            continue
        end = next((h.line for h in all_headings[index + 1:]), len(lines) + 1)
        items = {int(m.group(1)) for line in lines[heading.line:end - 1]
                 if not line.in_fence and (m := re.match(r"^ {0,3}(\d+)[.)]\s", line.text))}
        result.setdefault(number.group(1), Section(heading, items))
    return result


def check_citations(repo: Repo) -> list[Problem]:
    problems = []
    sections: dict[str, dict[str, Section]] = {}
    for key, doc in CITED_DOCS.items():
        sections[key] = numbered_sections(repo.read(doc)) if doc in repo.files else {}
    for name in sorted(repo.files):
        if name.split("/")[0] not in CITING_DIRS or name in NOT_CITING:
            continue
        file = repo.root / name
        if file.stat().st_size > MAX_SCANNED_BYTES:
            continue
        data = file.read_bytes()
        if b"\0" in data or "§".encode() not in data:
            continue
        for cite in citations(name, data.decode("utf-8", "replace")):
            doc = CITED_DOCS[cite.doc]
            section = sections[cite.doc].get(cite.section)
            if section is None:
                problems.append(Problem(name, cite.line, f"cites §{cite.section} of {doc}: "
                                        f"no heading numbered {cite.section} there"))
            elif cite.item is not None and cite.item not in section.items:
                problems.append(Problem(name, cite.line, f"cites §{cite.section} item {cite.item} of "
                                        f"{doc}: that section has no item {cite.item}"))
    return problems


# --- the README's size and commands ------------------------------------------


def check_readme(repo: Repo) -> list[Problem]:
    text = repo.read(README)
    problems = []
    count = len(text.splitlines())
    if count > README_MAX_LINES:
        problems.append(Problem(README, README_MAX_LINES + 1,
                                f"README has {count} lines, at most {README_MAX_LINES}: move text to docs/"))
    fenced = [line.text.strip() for line in md_lines(text) if line.in_fence]
    for command in README_COMMANDS:
        if not any(line == command or line.startswith(command + " ") for line in fenced):
            problems.append(Problem(README, 1, f"README has no `{command}` line in a code block"))
    return problems


def run_checks(repo: Repo) -> list[Problem]:
    if README not in repo.files:
        return [Problem(README, 1, "missing")]
    return check_links(repo) + check_layout(repo) + check_citations(repo) + check_readme(repo)


# --- self-test ----------------------------------------------------------------


class SelfTest(unittest.TestCase):
    """Each check on a small repository, good and then broken."""

    GOOD = {
        "README.md": "# Tool\n\n```sh\nmake run\nmake test\n```\n\n"
                     "See [the design](docs/design.md#2-what-a-build-becomes) and [x](#layout).\n"
                     "![pic](docs/pic.png) [ext](https://example.com/a) [dir](rust/)\n\n"
                     "## Layout\n\n```\nMakefile      entry points\ndocs/         the docs\n"
                     "rust/          code\n  core/       the core\n  cli/\ntests/\n```\n",
        "Makefile": "all:\n",
        "docs/design.md": "# Design\n\n## 1. Shape\n\n## 2. What a build becomes\n\n"
                          "Back to [the README](../README.md#tool), "
                          "[a dup](#notes-1), [code](formats.md#63-obj--object-files).\n\n"
                          "## Notes\n\n## Notes\n",
        "docs/formats.md": "# Formats\n\n## 6. CAS\n\n### 6.3 obj — object files\n\n"
                           "## 8. Gaps\n\n1. one\n2. two\n\n```\n## 9. not a heading\n```\n",
        "docs/pic.png": "",
        "rust/core/lib.rs": "//! Reads timing.json (spec §6.3, §8 item 2; DESIGN §2).\n"
                           "/// After the rename: formats.md §6 and design.md\n/// §1.\n",
        "rust/cli/main.go": "package main\n",
        "tests/t.py": "# spec\n# §8 item 1\n",
    }

    def repo(self, changes: dict[str, str | None]) -> Repo:
        files = dict(self.GOOD)
        for name, content in changes.items():
            if content is None:
                files.pop(name, None)
            else:
                files[name] = content
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        root = Path(tmp.name)
        for name, content in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(content, encoding="utf-8")
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        return Repo.from_git(root)

    def problems(self, changes: dict[str, str | None] | None = None) -> list[str]:
        return [str(p) for p in run_checks(self.repo(changes or {}))]

    def assert_one(self, changes: dict[str, str | None], *needles: str) -> None:
        problems = self.problems(changes)
        self.assertEqual(len(problems), 1, problems)
        for needle in needles:
            self.assertIn(needle, problems[0])

    def test_the_good_repository_passes(self) -> None:
        self.assertEqual(self.problems(), [])

    def test_slugs_follow_github(self) -> None:
        self.assertEqual(github_slug("Checking a build and a config: `ct-otel-dump`, `validate`"),
                         "checking-a-build-and-a-config-ct-otel-dump-validate")
        self.assertEqual(github_slug("Deterministic IDs (scheme `ctotel/v1`)"),
                         "deterministic-ids-scheme-ctotelv1")
        self.assertEqual(github_slug("6.3 obj — object files"), "63-obj--object-files")
        self.assertEqual(github_slug("2. `timing.json`"), "2-timingjson")
        self.assertEqual(github_slug("The [linked](x.md) **bold** part_two"), "the-linked-bold-part_two")
        self.assertEqual(github_slug("7.1 Log (`.t.<pid>.jsonl`) <b>x</b>"), "71-log-tpidjsonl-x")

    def test_a_missing_file_is_reported_with_its_line(self) -> None:
        readme = self.GOOD["README.md"].replace("docs/design.md#2", "docs/desing.md#2")
        self.assert_one({"README.md": readme}, "README.md:8:", "docs/desing.md does not exist")

    def test_a_broken_anchor_in_another_file(self) -> None:
        design = self.GOOD["docs/design.md"].replace("#63-obj--object-files", "#63-obj-object-files")
        self.assert_one({"docs/design.md": design}, "docs/design.md:7:", "#63-obj-object-files",
                        "docs/formats.md")

    def test_a_broken_anchor_in_the_same_file(self) -> None:
        design = self.GOOD["docs/design.md"].replace("#notes-1", "#notes-2")
        self.assert_one({"docs/design.md": design}, "no heading with anchor #notes-2")

    def test_links_in_code_are_not_links(self) -> None:
        readme = self.GOOD["README.md"] + "\n`[x](nowhere.md)`\n\n```\n[y](nowhere.md)\n```\n"
        self.assertEqual(self.problems({"README.md": readme}), [])

    def test_a_link_out_of_the_repository(self) -> None:
        readme = self.GOOD["README.md"] + "\n[out](../shared/DESIGN.md)\n"
        self.assert_one({"README.md": readme}, "leaves the repository")

    def test_a_tree_entry_that_does_not_exist(self) -> None:
        readme = self.GOOD["README.md"].replace("  cli/\n", "  cli/\n  gone/       removed\n")
        self.assert_one({"README.md": readme}, "README.md:", "rust/gone/ is not in git ls-files")

    def test_a_new_top_level_directory_must_be_listed(self) -> None:
        self.assert_one({"deploy/x.yaml": "a: 1\n"}, "deploy/ is missing")

    def test_a_new_second_level_directory_must_be_listed(self) -> None:
        self.assert_one({"tests/e2e/test_x.py": "\n"}, "tests/e2e/ is missing", "depth 2")

    def test_an_expanded_directory_shows_every_subdirectory(self) -> None:
        # rust/core/ shows no children, so its subdirectories need not be listed ...
        self.assertEqual(self.problems({"rust/core/ffi/x.rs": "\n"}), [])
        # ... but once it shows one, it shows every subdirectory.
        readme = self.GOOD["README.md"].replace("  core/       the core\n",
                                                "  core/       the core\n    lib.rs\n")
        self.assert_one({"README.md": readme, "rust/core/ffi/x.rs": "\n"},
                        "rust/core/ffi/ is missing", "rust/core/ lists")

    def test_a_directory_written_as_a_file(self) -> None:
        readme = self.GOOD["README.md"].replace("tests/\n", "tests\n")
        problems = self.problems({"README.md": readme})
        self.assertTrue(any("write it as tests/" in p for p in problems), problems)

    def test_a_citation_of_a_missing_section(self) -> None:
        self.assert_one({"rust/core/lib.rs": "// spec §6.4\n"},
                        "rust/core/lib.rs:1:", "§6.4 of docs/formats.md")

    def test_a_citation_broken_across_comment_lines(self) -> None:
        self.assert_one({"tests/t.py": "x = 1\n# see DESIGN\n# §7 for why\n"},
                        "tests/t.py:3:", "§7 of docs/design.md")

    def test_a_citation_later_in_a_list(self) -> None:
        self.assert_one({"rust/core/lib.rs": "//! (spec §6.3, §8 item 2,\n//! §6.9)\n"},
                        "rust/core/lib.rs:2:", "§6.9")

    def test_a_missing_list_item(self) -> None:
        self.assert_one({"rust/core/lib.rs": "// spec §8 item 3\n"}, "has no item 3")

    def test_new_spellings_are_checked(self) -> None:
        self.assert_one({"rust/core/lib.rs": "// formats.md §6.3 and design.md §3\n"},
                        "§3 of docs/design.md")

    def test_a_heading_inside_a_fence_is_no_section(self) -> None:
        self.assert_one({"rust/core/lib.rs": "// spec §9\n"}, "§9 of docs/formats.md")

    def test_a_long_readme(self) -> None:
        readme = self.GOOD["README.md"] + "\n" * README_MAX_LINES
        self.assert_one({"README.md": readme}, f"at most {README_MAX_LINES}")

    def test_the_two_commands_stay(self) -> None:
        readme = self.GOOD["README.md"].replace("make run\n", "make build\n")
        self.assert_one({"README.md": readme}, "`make run`")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2],
                        help="repository root (default: this script's repository)")
    parser.add_argument("--self-test", action="store_true", help="run the checker's own tests")
    args = parser.parse_args()
    if args.self_test:
        result = unittest.main(argv=[sys.argv[0]], defaultTest="SelfTest", exit=False, verbosity=1).result
        return 0 if result.wasSuccessful() else 1
    repo = Repo.from_git(args.root)
    problems = run_checks(repo)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check_docs: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check_docs: {sum(f.endswith('.md') for f in repo.files)} markdown files, "
          "links, layout tree, citations and README size are fine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
