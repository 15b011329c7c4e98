#!/usr/bin/env python3
"""Fails when the Rust core's modules import each other in a circle.

`rust/src/lib.rs` says data flows one way; this checks it. Nodes are
modules at two granularities:

* the crate's top-level modules (`timing`, `request`, `otlp`, ...), an edge
  wherever a file of one names an item of another;
* the files of one top-level module (`timing::decode`, `timing::two_halves`,
  `timing` for its `mod.rs`, ...), an edge wherever one names an item
  defined in another.

Edges come from `use` declarations and from `crate::`, `super::`, `self::`
and child-module paths in code, with comments, string literals and
`#[cfg(test)]` items (test modules included) removed first. A path is
resolved to the file that defines the item, following `use` re-exports
(the crate root's and a `mod.rs`'s), so naming `crate::Limits` is an edge
to the file defining `Limits`, not to `lib.rs`. A module's re-export of its
own descendant (`pub use model::Model;` in `timing/mod.rs`) is its facade,
not a dependency, and is no edge; the crate root is no node.

A circle is a strongly connected component of more than one node; each is
printed with its elementary cycles and the references behind its edges.
Exit status 1 when there is one, 0 otherwise. `--self-test` runs the
checker on small crates whose answers are known.

    python3 tests/tools/check_rust_circles.py [rust/src]
    python3 tests/tools/check_rust_circles.py --self-test
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
TEST_CFG = re.compile(r"#\s*\[\s*cfg\s*\(\s*(test|all\s*\([^\]]*\btest\b[^\]]*\))\s*\)\s*\]")
TEST_CFG_INNER = re.compile(r"#\s*!\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
USE_DECL = re.compile(r"\b(?:(pub)\s*(?:\([^)]*\))?\s+)?use\s+([^;]+);")
MOD_DECL = re.compile(rf"\bmod\s+({IDENT})\s*;")
# A path in code: crate::a::b, super::super::x, self::x, or name::x.
CODE_PATH = re.compile(rf"(?<![A-Za-z0-9_:])((?:{IDENT})(?:\s*::\s*{IDENT})+)")
KEYWORDS_ITEM_START = re.compile(
    r"\s*(?:pub\b|fn\b|impl\b|mod\b|use\b|struct\b|enum\b|const\b|static\b|type\b|trait\b|unsafe\b|extern\b|macro_rules\b|async\b)"
)


def strip_comments_and_literals(src: str) -> str:
    """The source with comments, string and char literals blanked out;
    line breaks are kept so that offsets still give line numbers."""
    out: list[str] = []
    i, n = 0, len(src)

    def blank(text: str) -> str:
        return "".join(c if c == "\n" else " " for c in text)

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(src[i:j]))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(src[i:j]))
            i = j
        elif (m := re.match(r'b?r(#*)"', src[i:])) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            close = '"' + m.group(1)
            j = src.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append('""' + blank(src[i + 2 : j]))
            i = j
        elif c == '"' or (c == "b" and src.startswith('b"', i) and not (i and (src[i - 1].isalnum() or src[i - 1] == "_"))):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            out.append('""' + blank(src[i + 2 : j]))
            i = j
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
            if src.startswith("\\", i + 1):
                j = src.find("'", i + 3)
                j = n if j < 0 else j + 1
                out.append(blank(src[i:j]))
                i = j
            elif i + 2 < n and src[i + 2] == "'":
                out.append("   ")
                i += 3
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


CLOSERS = {")": "(", "]": "[", "}": "{"}


def item_end(text: str, start: int) -> int:
    """Where the item (or field, arm, statement) starting at `start` ends."""
    i, n = start, len(text)
    # Further attributes of the same item.
    while True:
        while i < n and text[i].isspace():
            i += 1
        if text.startswith("#", i) and re.match(r"#\s*\[", text[i:]):
            i = text.index("[", i)
            depth = 0
            while i < n:
                if text[i] == "[":
                    depth += 1
                elif text[i] == "]":
                    depth -= 1
                    if depth == 0:
                        i += 1
                        break
                i += 1
        else:
            break
    is_item = bool(KEYWORDS_ITEM_START.match(text, i))
    depth = 0
    while i < n:
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return i
            if depth == 0 and c == "}":
                # A braced item ends with its block unless a `;` follows
                # at once (`let x = S { .. };`).
                j = i + 1
                while j < n and text[j] in " \t\r\n":
                    j += 1
                return j + 1 if j < n and text[j] == ";" else i + 1
        elif depth == 0 and c == ";":
            return i + 1
        elif depth == 0 and c == "," and not is_item:
            return i + 1
        i += 1
    return n


def strip_test_items(text: str) -> tuple[str, list[str]]:
    """The text without `#[cfg(test)]` items, and the names of the child
    modules declared test-only (`#[cfg(test)] mod tests;`)."""
    test_children: list[str] = []
    while m := TEST_CFG.search(text):
        end = item_end(text, m.end())
        if d := MOD_DECL.search(text, m.end(), end):
            test_children.append(d.group(1))
        text = text[: m.start()] + "".join(c if c == "\n" else " " for c in text[m.start() : end]) + text[end:]
    return text, test_children


def split_top(s: str) -> list[str]:
    """`a, b::{c, d}` -> ['a', 'b::{c, d}']: split at the commas outside braces."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        depth += (ch == "{") - (ch == "}")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p for p in parts + [cur] if p.strip()]


def expand_use(tree: str) -> list[tuple[list[str], str | None]]:
    """A use tree as (path, bound name) pairs: `a::{b, c::{d as e, *}, self}`
    -> (a::b, b), (a::c::d, e), (a::c::*, None), (a, a)."""
    results: list[tuple[list[str], str | None]] = []

    def walk(prefix: list[str], s: str) -> None:
        s = s.strip()
        brace = s.find("{")
        if brace >= 0:
            head = [p.strip() for p in s[:brace].split("::") if p.strip()]
            for part in split_top(s[brace + 1 : s.rindex("}")]):
                walk(prefix + head, part)
            return
        alias = None
        if m := re.fullmatch(rf"(.*?)\s+as\s+({IDENT})", s, re.S):
            s, alias = m.group(1), m.group(2)
        segs = prefix + [p.strip() for p in s.split("::") if p.strip()]
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        if not segs:
            return
        if segs[-1] == "*":
            results.append((segs, None))
        else:
            results.append((segs, None if alias == "_" else alias or segs[-1]))

    walk([], tree)
    return results


@dataclass
class Module:
    path: tuple[str, ...]  # () for the crate root
    file: Path
    text: str = ""
    children: set[str] = field(default_factory=set)
    test_children: set[str] = field(default_factory=set)
    # name -> (absolute-or-relative path segments, line, is_pub)
    bindings: dict[str, tuple[list[str], int, bool]] = field(default_factory=dict)
    globs: list[tuple[list[str], int, bool]] = field(default_factory=list)


def module_path(src: Path, file: Path) -> tuple[str, ...]:
    rel = file.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main") and (parts[-1] == "mod" or len(parts) == 1):
        parts = parts[:-1]
    return tuple(parts)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


class Crate:
    def __init__(self, src: Path):
        self.src = src
        self.modules: dict[tuple[str, ...], Module] = {}
        for file in sorted(src.rglob("*.rs")):
            path = module_path(src, file)
            raw = file.read_text(encoding="utf-8")
            text = strip_comments_and_literals(raw)
            if TEST_CFG_INNER.search(text):
                continue
            text, test_children = strip_test_items(text)
            mod = Module(path, file, text)
            mod.test_children = set(test_children)
            mod.children = {m.group(1) for m in MOD_DECL.finditer(text)}
            mod.children |= {m.group(1) for m in re.finditer(rf"\bmod\s+({IDENT})\s*\{{", text)}
            self.modules[path] = mod
        # Drop test-only files (declared under #[cfg(test)]) and their descendants.
        test_only = {p + (c,) for p, m in self.modules.items() for c in m.test_children}
        self.modules = {
            p: m for p, m in self.modules.items() if not any(p[: len(t)] == t for t in test_only)
        }
        for mod in self.modules.values():
            for m in USE_DECL.finditer(mod.text):
                line = line_of(mod.text, m.start())
                for segs, name in expand_use(m.group(2)):
                    if not segs:
                        continue
                    entry = (segs, line, bool(m.group(1)))
                    if segs[-1] == "*":
                        mod.globs.append((segs[:-1], line, bool(m.group(1))))
                    elif name:
                        mod.bindings.setdefault(name, entry)

    def is_module(self, path: tuple[str, ...]) -> bool:
        return path in self.modules or any(p[: len(path)] == path for p in self.modules)

    def declares_child(self, mod: tuple[str, ...], name: str) -> bool:
        m = self.modules.get(mod)
        return (m is not None and name in m.children) or (mod + (name,)) in self.modules

    def resolve(self, here: tuple[str, ...], segs: list[str], depth: int = 0) -> tuple[str, ...] | None:
        """The module (file) defining what `segs`, written in module `here`,
        names; None for something outside the crate (std, a dependency)."""
        if depth > 32 or not segs:
            return None
        first, rest = segs[0], segs[1:]
        if first == "crate":
            cur = ()
        elif first == "super":
            cur = here[:-1]
            while rest and rest[0] == "super":
                cur, rest = cur[:-1], rest[1:]
        elif first == "self":
            cur = here
        elif self.declares_child(here, first):
            cur, rest = here, segs
        elif first in self.modules.get(here, Module((), Path())).bindings:
            target, _, _ = self.modules[here].bindings[first]
            return self.resolve(here, target + rest, depth + 1)
        else:
            return None
        return self.walk(cur, rest, depth)

    def walk(self, cur: tuple[str, ...], rest: list[str], depth: int) -> tuple[str, ...] | None:
        while rest:
            seg = rest[0]
            if self.declares_child(cur, seg) and self.is_module(cur + (seg,)):
                cur, rest = cur + (seg,), rest[1:]
                continue
            mod = self.modules.get(cur)
            if mod is None:
                return cur
            if seg in mod.bindings:
                target, _, _ = mod.bindings[seg]
                resolved = self.resolve(cur, target, depth + 1)
                return resolved if resolved is not None else cur
            for glob, _, _ in mod.globs:
                base = self.resolve(cur, glob, depth + 1) if glob else None
                if base is not None and base != cur:
                    found = self.walk(base, [seg], depth + 1)
                    if found is not None and found != base:
                        return found
                    if base in self.modules and seg in self.defined_names(base):
                        return base
            return cur
        return cur

    def defined_names(self, mod: tuple[str, ...]) -> set[str]:
        text = self.modules[mod].text
        return set(
            re.findall(
                rf"\b(?:fn|struct|enum|trait|type|const|static|union|mod)\s+({IDENT})",
                text,
            )
        )


@dataclass(frozen=True)
class Ref:
    file: Path
    line: int
    text: str


def references(crate: Crate) -> dict[tuple[tuple[str, ...], tuple[str, ...]], list[Ref]]:
    """(from module, to module) -> the references making that edge."""
    edges: dict[tuple[tuple[str, ...], tuple[str, ...]], list[Ref]] = {}

    def add(src: tuple[str, ...], dst: tuple[str, ...] | None, ref: Ref) -> None:
        # A child module lives inside its ancestors (Rust gives it their
        # private items for that): naming them is no edge.
        if dst is None or dst == src[: len(dst)]:
            return
        edges.setdefault((src, dst), []).append(ref)

    for path, mod in crate.modules.items():
        use_spans = []
        for m in USE_DECL.finditer(mod.text):
            use_spans.append((m.start(), m.end()))
            line = line_of(mod.text, m.start())
            is_pub = bool(m.group(1))
            for segs, _name in expand_use(m.group(2)):
                if not segs:
                    continue
                target = segs[:-1] if segs[-1] == "*" else segs
                dst = crate.resolve(path, target)
                # A re-export of one's own descendant is the module's facade.
                if is_pub and dst is not None and len(dst) > len(path) and dst[: len(path)] == path:
                    continue
                add(path, dst, Ref(mod.file, line, "use " + "::".join(segs)))
        for m in CODE_PATH.finditer(mod.text):
            if any(a <= m.start() < b for a, b in use_spans):
                continue
            segs = [s for s in re.split(r"\s*::\s*", m.group(1)) if s]
            if segs[0] in ("std", "core", "alloc", "Self"):
                continue
            dst = crate.resolve(path, segs)
            add(path, dst, Ref(mod.file, line_of(mod.text, m.start()), "::".join(segs)))
    return edges


def strongly_connected(nodes: set, succ: dict) -> list[list]:
    """Tarjan's algorithm, iterative."""
    index: dict = {}
    low: dict = {}
    on_stack: set = set()
    stack: list = []
    result: list[list] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(succ.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(succ.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    result.append(sorted(comp))
    return result


def simple_cycles(comp: list, succ: dict, limit: int = 20) -> list[list]:
    """Up to `limit` elementary cycles of one component, shortest first,
    each started at its smallest node."""
    members = set(comp)
    found: list[list] = []
    for start in sorted(comp):
        # Cycles through `start` and nodes greater than it only, so that
        # each cycle is found once.
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(succ.get(node, ()), reverse=True):
                if nxt == start:
                    found.append(path + [start])
                elif nxt in members and nxt > start and nxt not in path:
                    stack.append((nxt, path + [nxt]))
    found.sort(key=lambda c: (len(c), c))
    return found[:limit]


def name(path: tuple[str, ...]) -> str:
    return "::".join(path) or "crate"


def find_circles(src: Path) -> tuple[list[str], Crate, dict]:
    """The report's lines, one `circle ...` line (then its details) per
    circle found in the crate at `src`."""
    crate = Crate(src)
    edges = references(crate)

    # Top-level modules, and the files within each top-level module.
    graphs: dict[str, dict[tuple[str, ...], dict[tuple[str, ...], list[Ref]]]] = {}
    for (a, b), refs in edges.items():
        if a[0] != b[0]:
            graphs.setdefault("crate", {}).setdefault(a[:1], {}).setdefault(b[:1], []).extend(refs)
        else:
            graphs.setdefault(a[0], {}).setdefault(a, {}).setdefault(b, []).extend(refs)

    lines: list[str] = []
    circles = 0
    for scope in sorted(graphs, key=lambda s: (s != "crate", s)):
        graph = graphs[scope]
        nodes = set(graph) | {b for succ in graph.values() for b in succ}
        for comp in strongly_connected(nodes, graph):
            circles += 1
            where = "top-level modules" if scope == "crate" else f"files of `{scope}`"
            lines.append(f"circle {circles} ({where}): " + " <-> ".join(name(n) for n in comp))
            for cycle in simple_cycles(comp, graph):
                lines.append("  cycle: " + " -> ".join(name(n) for n in cycle))
            members = set(comp)
            for a in comp:
                for b in sorted(graph.get(a, {})):
                    if b not in members:
                        continue
                    refs = graph[a][b]
                    shown = ", ".join(
                        f"{r.file.relative_to(src.parent)}:{r.line} {r.text}" for r in refs[:3]
                    )
                    more = f" (+{len(refs) - 3} more)" if len(refs) > 3 else ""
                    lines.append(f"    {name(a)} -> {name(b)}: {shown}{more}")
    return lines, crate, edges


# Small crates and the circles the checker must (or must not) find in them.
SELF_TESTS: dict[str, tuple[dict[str, str], list[str]]] = {
    "siblings importing each other": (
        {
            "lib.rs": "mod a;",
            "a/mod.rs": "mod x;\nmod y;",
            "a/x.rs": "use super::y::Y;\npub struct X;",
            "a/y.rs": "pub struct Y;\npub fn f() -> super::x::X { super::x::X }",
        },
        ["circle 1 (files of `a`): a::x <-> a::y"],
    ),
    "top-level modules through the crate root's re-export": (
        {
            "lib.rs": "mod p;\nmod q;\npub use q::Q;",
            "p.rs": "use crate::Q;\npub fn g() {}",
            # A char literal that starts no string, then a path.
            "q.rs": "pub struct Q;\nconst C: char = '\"';\npub fn f() { crate::p::g() }",
        },
        ["circle 1 (top-level modules): p <-> q"],
    ),
    "a sibling through its parent's re-export": (
        {
            "lib.rs": "mod a;",
            "a/mod.rs": "mod x;\nmod y;\npub use x::X;",
            "a/x.rs": "pub struct X;\nfn f() { super::y::g() }",
            "a/y.rs": "use super::X;\npub fn g() {}",
        },
        ["circle 1 (files of `a`): a::x <-> a::y"],
    ),
    "comments, strings and test code name nothing": (
        {
            "lib.rs": "mod p;\nmod q;",
            "p.rs": "// use crate::q::Q;\n/* crate::q::f() */\nconst S: &str = \"crate::q::Q\";\n"
            "const R: &str = r#\"crate::q::Q\"#;\nfn c() -> char { '\\'' }\n"
            "#[cfg(test)]\nmod tests {\n    use crate::q::Q;\n}\n"
            "#[cfg(test)]\nfn t() { crate::q::f() }\n#[cfg(test)]\nmod more;\n"
            "pub fn g<'a>(x: &'a str) -> &'a str { x }",
            "p/more.rs": "use crate::q::Q;",
            "q.rs": "pub struct Q;\npub fn f() { crate::p::g(\"\"); }",
        },
        [],
    ),
    "a child using its parent is no circle": (
        {
            "lib.rs": "mod a;",
            "a/mod.rs": "mod x;\npub struct S;\npub fn run() { x::f() }",
            "a/x.rs": "use super::S;\npub fn f() { let _ = S; }",
        },
        [],
    ),
}


def self_test() -> int:
    """Runs the checker on [`SELF_TESTS`]; 1 when any answer is wrong."""
    import tempfile

    failed = 0
    for title, (files, expected) in SELF_TESTS.items():
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "src"
            for rel, text in files.items():
                (src / rel).parent.mkdir(parents=True, exist_ok=True)
                (src / rel).write_text(text + "\n", encoding="utf-8")
            lines, _, _ = find_circles(src)
            got = [line for line in lines if line.startswith("circle ")]
            if got != expected:
                failed += 1
                print(f"self-test {title!r}: expected {expected}, got:\n  " + "\n  ".join(lines))
    print(f"self-test: {len(SELF_TESTS) - failed} of {len(SELF_TESTS)} cases right")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if argv[1:] == ["--self-test"]:
        return self_test()
    src = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2] / "rust" / "src"
    lines, crate, edges = find_circles(src)
    circles = sum(1 for line in lines if line.startswith("circle "))
    for line in lines:
        print(line)
    if circles:
        print(f"{circles} import circle(s) in {src}: move the items to the layer that owns them")
        return 1
    print(f"no import circles in {src} ({len(crate.modules)} modules, {len(edges)} edges)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
