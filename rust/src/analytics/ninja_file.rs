//! `build.ninja` → the dependency graph: each `build` statement's outputs
//! wait for its explicit, implicit and order-only inputs (all three hold a
//! rule back; validations `|@` do not). Phony statements are statements
//! like any other: a node that weighs nothing.
//!
//! What ninja's manifest grammar has and this reader does: `$` line
//! continuations, comments, `$$ $  $:` escapes, `$var` / `${var}` from the
//! file's top-level bindings and the statement's own indented bindings
//! (ninja evaluates paths in that scope; an unknown variable is empty, as in
//! ninja), `rule` / `pool` blocks (skipped), `default` (no dependencies).
//! `include` and `subninja` are refused rather than followed: the other file
//! is not one the receiver was told it may read, and a graph without it
//! would be wrong, not merely incomplete. ct-cake writes neither.
//!
//! The text is hostile input: every expansion is counted against a budget,
//! so `a = $a$a` repeated cannot grow memory beyond it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::BufRead;

use super::build_file_lines::LogicalLines;
use super::dep_graph::{DepGraph, GraphBuilder, GraphError};

/// Longest value of one variable or path after expansion.
const MAX_VALUE_BYTES: usize = 1 << 20;
/// Most bytes all variable expansions of one file may produce.
const MAX_EXPANDED_BYTES: usize = 64 << 20;

/// Reads `text` (the whole `build.ninja`), giving up once the graph (and
/// the file's variables) would take more than `max_memory` bytes.
pub fn parse(reader: impl BufRead, max_memory: usize) -> Result<DepGraph, GraphError> {
    let mut p = Parser {
        globals: HashMap::new(),
        builder: GraphBuilder::with_memory_limit(max_memory),
        expanded: 0,
    };
    let mut pending: Option<Pending> = None;
    let mut in_block = false;
    let mut lines = LogicalLines::new(reader, b'$', false);
    while let Some((line_no, line)) = lines.next_line()? {
        let at = |e: GraphError| GraphError::new(format!("line {line_no}: {e}"));
        let body = trim_start(line);
        if body.is_empty() || body[0] == b'#' {
            continue;
        }
        let indented = body.len() < line.len();
        if indented {
            if let Some(build) = pending.as_mut() {
                // A statement's bindings only matter to its paths when they
                // name a variable; ct-cake's `cmd = …` lines (most of the
                // file) are skipped unread.
                if build.raw.contains(&b'$') {
                    let (name, value) = binding(body).map_err(at)?;
                    let value = p.eval(value, &[]).map_err(at)?;
                    build.bindings.push((name.to_vec(), value));
                }
            } else if !in_block {
                return Err(at(GraphError::new("indented line outside a statement")));
            }
            continue;
        }
        if let Some(build) = pending.take() {
            p.statement(&build)
                .map_err(|e| GraphError::new(format!("line {}: {e}", build.line_no)))?;
        }
        in_block = false;
        let (keyword, rest) = split_keyword(body);
        match keyword {
            b"build" => {
                pending = Some(Pending {
                    line_no,
                    raw: rest.to_vec(),
                    bindings: Vec::new(),
                })
            }
            b"rule" | b"pool" => in_block = true,
            b"default" => {}
            b"include" | b"subninja" => {
                return Err(at(GraphError::new(format!(
                    "`{}` is not followed (the graph would be incomplete)",
                    String::from_utf8_lossy(keyword)
                ))))
            }
            _ => {
                let (name, value) = binding(body).map_err(at)?;
                let value = p.eval(value, &[]).map_err(at)?;
                p.builder
                    .charge(name.len().saturating_add(value.len()).saturating_add(64))
                    .map_err(at)?;
                p.globals.insert(name.to_vec(), value);
            }
        }
    }
    if let Some(build) = pending.take() {
        p.statement(&build)
            .map_err(|e| GraphError::new(format!("line {}: {e}", build.line_no)))?;
    }
    Ok(p.builder.finish())
}

/// A `build` line waiting for its indented bindings.
struct Pending {
    line_no: usize,
    raw: Vec<u8>,
    bindings: Vec<(Vec<u8>, Vec<u8>)>,
}

struct Parser {
    globals: HashMap<Vec<u8>, Vec<u8>>,
    builder: GraphBuilder,
    expanded: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Path(&'a [u8]),
    Colon,
    Pipe,
    Pipe2,
    PipeAt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Section {
    Outputs,
    ImplicitOutputs,
    Rule,
    Inputs,
    Implicit,
    OrderOnly,
    Validations,
}

impl Parser {
    fn statement(&mut self, build: &Pending) -> Result<(), GraphError> {
        let mut section = Section::Outputs;
        let mut outputs = Vec::new();
        let mut inputs = Vec::new();
        for token in tokens(&build.raw)? {
            section = match (section, token) {
                (Section::Outputs, Token::Pipe) => Section::ImplicitOutputs,
                (Section::Outputs | Section::ImplicitOutputs, Token::Colon) => Section::Rule,
                (Section::Rule, Token::Path(_)) => Section::Inputs,
                (Section::Inputs, Token::Pipe) => Section::Implicit,
                (Section::Inputs | Section::Implicit, Token::Pipe2) => Section::OrderOnly,
                (Section::Inputs | Section::Implicit | Section::OrderOnly, Token::PipeAt) => {
                    Section::Validations
                }
                (s, Token::Path(raw)) => {
                    let path = if raw.contains(&b'$') {
                        Cow::Owned(self.eval(raw, &build.bindings)?)
                    } else {
                        Cow::Borrowed(raw)
                    };
                    if !path.is_empty() {
                        match s {
                            Section::Outputs | Section::ImplicitOutputs => {
                                outputs.push(self.builder.path(&path)?)
                            }
                            Section::Validations => {}
                            _ => inputs.push(self.builder.path(&path)?),
                        }
                    }
                    s
                }
                (_, t) => return Err(GraphError::new(format!("unexpected {t:?} in a build statement"))),
            };
        }
        if section < Section::Inputs {
            return Err(GraphError::new("build statement without `: rule`"));
        }
        if outputs.is_empty() {
            return Err(GraphError::new("build statement without outputs"));
        }
        self.builder.statement(&outputs, &inputs)
    }

    /// Expands `raw`: the statement's `bindings` (last wins), then the file's.
    fn eval(&mut self, raw: &[u8], bindings: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<u8>, GraphError> {
        let mut out = Vec::with_capacity(raw.len());
        let mut i = 0;
        while i < raw.len() {
            let b = raw[i];
            i += 1;
            if b != b'$' {
                out.push(b);
                continue;
            }
            let Some(&c) = raw.get(i) else {
                return Err(GraphError::new("`$` at the end of a line"));
            };
            i += 1;
            let name: &[u8] = match c {
                b'$' | b' ' | b':' => {
                    out.push(c);
                    continue;
                }
                b'{' => {
                    let len = raw[i..]
                        .iter()
                        .position(|&b| b == b'}')
                        .ok_or_else(|| GraphError::new("`${` without `}`"))?;
                    let name = &raw[i..i + len];
                    i += len + 1;
                    name
                }
                c if is_simple_name_byte(c) => {
                    let start = i - 1;
                    while raw.get(i).is_some_and(|&b| is_simple_name_byte(b)) {
                        i += 1;
                    }
                    &raw[start..i]
                }
                _ => return Err(GraphError::new("bad `$` escape")),
            };
            let value = bindings
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v)
                .or_else(|| self.globals.get(name));
            if let Some(value) = value {
                self.expanded = self.expanded.saturating_add(value.len());
                if self.expanded > MAX_EXPANDED_BYTES {
                    return Err(GraphError::new(format!(
                        "variable expansions exceed {MAX_EXPANDED_BYTES} bytes"
                    )));
                }
                out.extend_from_slice(value);
            }
            if out.len() > MAX_VALUE_BYTES {
                return Err(GraphError::new(format!(
                    "a value exceeds {MAX_VALUE_BYTES} bytes"
                )));
            }
        }
        Ok(out)
    }
}

fn is_simple_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The tokens of a `build` line after the keyword: paths (raw, still to be
/// expanded) end at an unescaped space, `:` or `|`.
fn tokens(raw: &[u8]) -> Result<Vec<Token<'_>>, GraphError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b' ' | b'\t' => i += 1,
            b':' => {
                out.push(Token::Colon);
                i += 1;
            }
            b'|' => match raw.get(i + 1) {
                Some(b'|') => {
                    out.push(Token::Pipe2);
                    i += 2;
                }
                Some(b'@') => {
                    out.push(Token::PipeAt);
                    i += 2;
                }
                _ => {
                    out.push(Token::Pipe);
                    i += 1;
                }
            },
            _ => {
                let start = i;
                while i < raw.len() && !matches!(raw[i], b' ' | b'\t' | b':' | b'|') {
                    // An escape's second byte never ends the path.
                    i += if raw[i] == b'$' { 2 } else { 1 };
                }
                let end = i.min(raw.len());
                out.push(Token::Path(&raw[start..end]));
            }
        }
    }
    Ok(out)
}

/// `name = value` (value still to be expanded, leading spaces dropped).
fn binding(line: &[u8]) -> Result<(&[u8], &[u8]), GraphError> {
    let eq = line
        .iter()
        .position(|&b| b == b'=')
        .ok_or_else(|| GraphError::new("expected `name = value`"))?;
    let name = trim_end(&line[..eq]);
    if name.is_empty() || !name.iter().all(|&b| is_simple_name_byte(b) || b == b'.') {
        return Err(GraphError::new("bad variable name"));
    }
    Ok((name, trim_start(&line[eq + 1..])))
}

fn split_keyword(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|&b| b == b' ' || b == b'\t') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (line, &[]),
    }
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    &s[n..]
}

fn trim_end(s: &[u8]) -> &[u8] {
    let n = s.iter().rev().take_while(|&&b| b == b' ' || b == b'\t').count();
    &s[..s.len() - n]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deps(g: &DepGraph, path: &str) -> Vec<Vec<u8>> {
        let names: HashMap<u32, Vec<u8>> = [
            "a.o", "b.o", "a.c", "b.c", "app", "dir", "lib.a", "all", "gen.h", "check", "x y", "out/c.o",
        ]
        .iter()
        .filter_map(|p| Some((g.node_of(p.as_bytes())?, p.as_bytes().to_vec())))
        .collect();
        let node = g.node_of(path.as_bytes()).expect("path in graph");
        g.deps_of(node)
            .iter()
            .map(|d| names.get(d).cloned().unwrap_or_else(|| b"?".to_vec()))
            .collect()
    }

    #[test]
    fn every_input_kind_but_validations_holds_a_rule_back() {
        let text = b"# comment\n\
            builddir = out\n\
            rule cc\n  command = cc -c $in -o $out\n  depfile = $out.d\n\n\
            build a.o: cc a.c | gen.h || dir |@ check\n\
            build b.o: cc $\n    b.c\n\
            build app: link a.o b.o\n  pool = console\n\
            build $builddir/c.o: cc x$ y\n\
            build all: phony app\n\
            default all\n";
        let g = parse(&text[..], usize::MAX).unwrap();
        assert_eq!(
            deps(&g, "a.o"),
            [b"a.c".to_vec(), b"gen.h".to_vec(), b"dir".to_vec()]
        );
        assert_eq!(deps(&g, "b.o"), [b"b.c".to_vec()]);
        assert_eq!(deps(&g, "app"), [b"a.o".to_vec(), b"b.o".to_vec()]);
        assert_eq!(deps(&g, "out/c.o"), [b"x y".to_vec()]);
        assert_eq!(deps(&g, "all"), [b"app".to_vec()]);
        // A validation is no dependency: not even a node.
        assert!(g.node_of(b"check").is_none());
    }

    #[test]
    fn statement_bindings_shadow_the_file_and_unknowns_are_empty() {
        let g = parse(
            &b"d = top\nbuild $d/x: r $nothing${d}y\n  d = mine\n"[..],
            usize::MAX,
        )
        .unwrap();
        let x = g.node_of(b"mine/x").expect("edge binding used for the output");
        assert_eq!(g.deps_of(x), [g.node_of(b"miney").unwrap()]);
        assert!(g.node_of(b"top/x").is_none());
    }

    #[test]
    fn refused_inputs() {
        for (text, why) in [
            (&b"include other.ninja\n"[..], "not followed"),
            (b"subninja x.ninja\n", "not followed"),
            (b"build $a: r b\n  x\n", "name = value"),
            (b"  indented\n", "indented"),
            (b"build a r\n", "without `: rule`"),
            (b"build : r\n", "without outputs"),
            (b"build a: r $!\n", "escape"),
            (b"build a: r ${x\n", "without `}`"),
            (b"nonsense\n", "name = value"),
        ] {
            let e = parse(text, usize::MAX).unwrap_err().to_string();
            assert!(e.contains(why), "{:?}: {e}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn doubling_variables_hit_the_budget() {
        let mut text = b"a = xxxxxxxxxxxxxxxx\n".to_vec();
        for _ in 0..40 {
            text.extend_from_slice(b"a = $a$a\n");
        }
        let e = parse(&text[..], usize::MAX).unwrap_err().to_string();
        assert!(e.contains("exceed"), "{e}");
    }
}
