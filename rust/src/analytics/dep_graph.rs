//! The dependency graph of a build as its generated build file states it
//! (`build.ninja`, the generated Makefile): which paths each output waits
//! for. Parsers feed a [`GraphBuilder`]; the exact critical path walks the
//! finished [`DepGraph`].
//!
//! The graph comes from a file anyone who writes the build tree controls,
//! so its size is bounded twice: by the file size limit before parsing, and
//! here by node and reference counts (a statement with many outputs gets
//! one statement node between its outputs and inputs, so references grow
//! with the text, never with outputs × inputs).

use std::collections::HashMap;
use std::fmt;

/// Most nodes (paths and multi-output statements) of one graph.
pub(crate) const MAX_NODES: usize = 4_000_000;
/// Most dependency references of one graph.
pub(crate) const MAX_DEP_REFS: usize = 32_000_000;

/// Why a build file gave no graph; the critical path then stays an estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphError(pub String);

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl GraphError {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// Paths and what each waits for (compressed rows: the dependencies of node
/// `n` are `deps[start[n]..start[n + 1]]`).
#[derive(Debug, Clone, Default)]
pub struct DepGraph {
    paths: HashMap<Box<[u8]>, u32>,
    /// Per node: some statement builds it (sources and other files the
    /// build only reads are not outputs).
    produced: Vec<bool>,
    start: Vec<u32>,
    deps: Vec<u32>,
}

impl DepGraph {
    /// Paths and statement nodes.
    pub fn node_count(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// The node of `path` exactly as the build file spells it.
    pub fn node_of(&self, path: &[u8]) -> Option<u32> {
        self.paths.get(path).copied()
    }

    /// The node of `path` when a statement of the file builds it.
    pub fn output_of(&self, path: &[u8]) -> Option<u32> {
        self.node_of(path)
            .filter(|&n| self.produced.get(n as usize).copied().unwrap_or(false))
    }

    /// What `node` waits for (empty for out-of-range nodes).
    pub fn deps_of(&self, node: u32) -> &[u32] {
        let n = node as usize;
        match (self.start.get(n), self.start.get(n + 1)) {
            (Some(&a), Some(&b)) => self.deps.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// Collects nodes and edges while a parser reads a build file.
#[derive(Debug, Default)]
pub struct GraphBuilder {
    paths: HashMap<Box<[u8]>, u32>,
    produced: Vec<bool>,
    nodes: u32,
    /// `(dependent, dependency)`.
    edges: Vec<(u32, u32)>,
}

impl GraphBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The node of `path`, created on first sight.
    pub fn path(&mut self, path: &[u8]) -> Result<u32, GraphError> {
        if let Some(&n) = self.paths.get(path) {
            return Ok(n);
        }
        let n = self.new_node()?;
        self.paths.insert(path.into(), n);
        Ok(n)
    }

    /// One statement: every output waits for every input. Several outputs
    /// share a statement node, so the references stay outputs + inputs.
    pub fn statement(&mut self, outputs: &[u32], inputs: &[u32]) -> Result<(), GraphError> {
        for &out in outputs {
            self.mark_output(out);
        }
        match outputs {
            [] => Ok(()),
            [one] => self.depend(*one, inputs),
            many => {
                let node = self.new_node()?;
                for &out in many {
                    self.depend(out, &[node])?;
                }
                self.depend(node, inputs)
            }
        }
    }

    /// `node` is built by a statement of the file.
    pub fn mark_output(&mut self, node: u32) {
        if let Some(p) = self.produced.get_mut(node as usize) {
            *p = true;
        }
    }

    /// `node` waits for each of `inputs`.
    pub fn depend(&mut self, node: u32, inputs: &[u32]) -> Result<(), GraphError> {
        if self.edges.len().saturating_add(inputs.len()) > MAX_DEP_REFS {
            return Err(GraphError::new(format!(
                "more than {MAX_DEP_REFS} dependency references"
            )));
        }
        self.edges.extend(inputs.iter().map(|&i| (node, i)));
        Ok(())
    }

    fn new_node(&mut self) -> Result<u32, GraphError> {
        if self.nodes as usize >= MAX_NODES {
            return Err(GraphError::new(format!("more than {MAX_NODES} nodes")));
        }
        let n = self.nodes;
        self.nodes += 1;
        self.produced.push(false);
        Ok(n)
    }

    pub fn finish(mut self) -> DepGraph {
        // Sorted by dependent: the rows, with each row's inputs in file order
        // (a stable sort), which keeps tie-breaks reproducible.
        self.edges.sort_by_key(|&(node, _)| node);
        let mut start = vec![0u32; self.nodes as usize + 1];
        for &(node, _) in &self.edges {
            if let Some(s) = start.get_mut(node as usize + 1) {
                *s += 1;
            }
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        DepGraph {
            paths: self.paths,
            produced: self.produced,
            start,
            deps: self.edges.into_iter().map(|(_, dep)| dep).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_share_a_node_between_many_outputs_and_inputs() {
        let mut b = GraphBuilder::new();
        let [a, x, y, i1, i2] = [b"a", b"x", b"y", b"1", b"2"].map(|p| b.path(p).unwrap());
        b.statement(&[a], &[i1]).unwrap();
        b.statement(&[x, y], &[i1, i2]).unwrap();
        b.statement(&[a], &[i2]).unwrap();
        let g = b.finish();
        assert_eq!(g.node_count(), 6);
        assert_eq!(g.deps_of(a), [i1, i2]);
        let shared = g.deps_of(x)[0];
        assert_eq!(g.deps_of(y), [shared]);
        assert_eq!(g.deps_of(shared), [i1, i2]);
        assert_eq!(g.node_of(b"y"), Some(y));
        assert_eq!(g.node_of(b"z"), None);
        assert_eq!(g.output_of(b"y"), Some(y));
        assert_eq!(g.output_of(b"1"), None, "only an input");
        assert!(g.deps_of(99).is_empty());
    }
}
