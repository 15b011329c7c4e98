//! The generated Makefile → the dependency graph: `targets: prerequisites |
//! order-only` lines (each target waits for both kinds).
//!
//! Only the plain subset ct-cake writes is read: explicit rules whose
//! targets and prerequisites are literal paths, variable assignments and
//! recipes (skipped), `.PHONY`-style special targets (skipped), `define`
//! blocks (skipped). Anything whose graph would need make itself to
//! evaluate — a `$` in a rule line, pattern (`%`) or static pattern rules,
//! conditionals, `include`, `vpath` — is refused: an exact path from a
//! guessed graph would be a wrong one.

use std::io::BufRead;

use super::build_file_lines::LogicalLines;
use super::dep_graph::{DepGraph, GraphBuilder, GraphError};

/// Reads `text` (the whole Makefile), giving up once the graph would take
/// more than `max_memory` bytes.
pub fn parse(reader: impl BufRead, max_memory: usize) -> Result<DepGraph, GraphError> {
    let mut builder = GraphBuilder::with_memory_limit(max_memory);
    let mut in_define = false;
    let mut lines = LogicalLines::new(reader, b'\\', true);
    while let Some((line_no, line)) = lines.next_line()? {
        let at = |e: GraphError| GraphError::new(format!("line {line_no}: {e}"));
        if line.first() == Some(&b'\t') {
            continue; // a recipe line
        }
        let line = strip_comment(line);
        let body = trim(line);
        let word = first_word(body);
        if in_define {
            in_define = word != b"endef";
            continue;
        }
        match word {
            b"" => continue,
            b"define" => {
                in_define = true;
                continue;
            }
            b"include" | b"-include" | b"sinclude" | b"vpath" | b"ifeq" | b"ifneq" | b"ifdef" | b"ifndef"
            | b"else" | b"endif" | b"load" => {
                return Err(at(GraphError::new(format!(
                    "`{}` is not supported (the graph would need make to evaluate it)",
                    String::from_utf8_lossy(word)
                ))))
            }
            b"export" | b"unexport" | b"override" | b"private" => continue,
            _ => {}
        }
        rule_line(&mut builder, body).map_err(at)?;
    }
    Ok(builder.finish())
}

/// One line outside recipes: an assignment (skipped) or a rule.
fn rule_line(builder: &mut GraphBuilder, line: &[u8]) -> Result<(), GraphError> {
    // The first `=` or `:` outside `$(…)` decides what the line is.
    let mut depth = 0usize;
    let mut colon = None;
    for (i, &b) in line.iter().enumerate() {
        match b {
            b'(' | b'{' if i > 0 && line[i - 1] == b'$' => depth += 1,
            b'(' | b'{' if depth > 0 => depth += 1,
            b')' | b'}' if depth > 0 => depth -= 1,
            b'=' if depth == 0 => return Ok(()), // `x = y`, `x += y`, `x ?= y`
            b':' if depth == 0 => {
                colon = Some(i);
                break;
            }
            _ => {}
        }
    }
    let Some(colon) = colon else {
        return Err(GraphError::new("neither a rule nor an assignment"));
    };
    let mut rest = &line[colon + 1..];
    if rest.first() == Some(&b'=') || rest.starts_with(b":=") || rest.starts_with(b"::=") {
        return Ok(()); // `x := y`, `x ::= y`, `x :::= y`
    }
    if rest.first() == Some(&b':') {
        rest = &rest[1..]; // double-colon rule
    }
    let targets = &line[..colon];
    // An inline recipe after `;` is no prerequisite.
    let prereqs = rest.split(|&b| b == b';').next().unwrap_or(&[]);
    if prereqs.contains(&b'=') {
        return Ok(()); // a target-specific variable
    }
    let words = |s: &[u8]| -> Vec<Vec<u8>> {
        s.split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    };
    let (targets, prereqs) = (words(targets), words(prereqs));
    if targets
        .iter()
        .chain(&prereqs)
        .any(|w| w.contains(&b'$') || w.contains(&b'%'))
    {
        return Err(GraphError::new("a rule with variables or patterns"));
    }
    if prereqs.iter().any(|w| w.contains(&b':')) {
        return Err(GraphError::new("a static pattern rule"));
    }
    if targets.iter().any(|t| is_special_target(t)) {
        return Ok(());
    }
    let mut inputs = Vec::with_capacity(prereqs.len());
    for p in prereqs.iter().filter(|p| p.as_slice() != b"|") {
        inputs.push(builder.path(p)?);
    }
    // `a b: c` is two rules with the same prerequisites, not one with two
    // outputs.
    for t in &targets {
        let node = builder.path(t)?;
        builder.mark_output(node);
        builder.depend(node, &inputs)?;
    }
    Ok(())
}

/// `.PHONY`, `.DELETE_ON_ERROR`, …: directives to make, not files.
fn is_special_target(t: &[u8]) -> bool {
    t.len() > 1 && t[0] == b'.' && t[1..].iter().all(|&b| b.is_ascii_uppercase() || b == b'_')
}

fn strip_comment(line: &[u8]) -> &[u8] {
    let mut escaped = false;
    for (i, &b) in line.iter().enumerate() {
        match b {
            b'#' if !escaped => return &line[..i],
            b'\\' => escaped = !escaped,
            _ => escaped = false,
        }
    }
    line
}

fn first_word(line: &[u8]) -> &[u8] {
    line.split(|b| b.is_ascii_whitespace()).next().unwrap_or(&[])
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let end = s.iter().rev().take_while(|b| b.is_ascii_whitespace()).count();
    s.get(start..s.len().saturating_sub(end)).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_as_ct_cake_writes_them() {
        let text = b"# Makefile generated by ct-cake\n\
            .DELETE_ON_ERROR:\n\
            MAKEFLAGS += -rR\n\
            SHELL := /bin/bash\n\
            X = $(shell a: b)\n\
            .PHONY: all\n\
            all: build\n\
            build: bin/app\n\
            /o/a.o: | /o\n\
            \t@flock x sh -c 'cc -c a.c -o /o/a.o'\n\
            /o:\n\
            \tmkdir -p /o\n\
            /e/app.exe: | /e /o/a.o \\\n    /o/b.o\n\
            \tld -o $@ /o/a.o\n\
            bin/app: /e/app.exe | bin\n\
            bin/app: extra\n\
            define BLOCK\n\
            x: y\n\
            endef\n";
        let g = parse(&text[..], usize::MAX).unwrap();
        let n = |p: &str| g.node_of(p.as_bytes()).unwrap_or_else(|| panic!("{p} missing"));
        assert_eq!(g.deps_of(n("/o/a.o")), [n("/o")]);
        assert_eq!(g.deps_of(n("/e/app.exe")), [n("/e"), n("/o/a.o"), n("/o/b.o")]);
        assert_eq!(g.deps_of(n("bin/app")), [n("/e/app.exe"), n("bin"), n("extra")]);
        assert_eq!(g.deps_of(n("build")), [n("bin/app")]);
        assert!(g.node_of(b".PHONY").is_none());
        assert!(g.node_of(b"x").is_none());
    }

    #[test]
    fn what_needs_make_to_evaluate_is_refused() {
        for text in [
            &b"include other.mk\n"[..],
            b"ifeq (a,b)\nx: y\nendif\n",
            b"%.o: %.c\n",
            b"$(OBJ): a.h\n",
            b"a.o b.o: %.o: %.c\n",
            b"just words\n",
        ] {
            assert!(
                parse(text, usize::MAX).is_err(),
                "{}",
                String::from_utf8_lossy(text)
            );
        }
    }
}
