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

/// A graph may take this many bytes of memory per byte of its file, plus
/// [`GRAPH_MEMORY_SLACK`] (issue 22): the receiver counts as much in
/// `limits.max_parse_bytes_in_flight` for a build with a graph
/// (go-receiver/budget.go, `graphMemoryPerFileByte`), and a graph that
/// would take more is given up, the critical path estimated. Short paths
/// cost most per byte of text (a hash map entry each); a generated
/// `build.ninja`, mostly command text, takes far less than its size.
pub(crate) const GRAPH_MEMORY_PER_FILE_BYTE: usize = 4;
/// See [`GRAPH_MEMORY_PER_FILE_BYTE`].
pub(crate) const GRAPH_MEMORY_SLACK: usize = 16 << 20;

/// What a graph read from a file of `file_len` bytes may take.
pub(crate) fn memory_limit(file_len: u64) -> usize {
    usize::try_from(file_len)
        .unwrap_or(usize::MAX)
        .saturating_mul(GRAPH_MEMORY_PER_FILE_BYTE)
        .saturating_add(GRAPH_MEMORY_SLACK)
}

/// Estimated bytes of one path node while the graph is built: the map
/// entry (key box, node number, control byte, at worst half the table
/// empty), the path's heap block, its flag and row start.
const PATH_NODE_BYTES: usize = 96;
/// Estimated bytes of one dependency reference: the edge pair, twice for
/// the vector's growth, and its place in the finished rows.
const DEP_REF_BYTES: usize = 20;

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
#[derive(Debug)]
pub struct GraphBuilder {
    paths: HashMap<Box<[u8]>, u32>,
    produced: Vec<bool>,
    nodes: u32,
    /// `(dependent, dependency)`.
    edges: Vec<(u32, u32)>,
    /// Estimated bytes taken so far, and the most allowed.
    memory: usize,
    max_memory: usize,
}

impl Default for GraphBuilder {
    fn default() -> Self {
        Self::with_memory_limit(usize::MAX)
    }
}

impl GraphBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder that gives up once the graph would take more than
    /// `max_memory` bytes (see [`memory_limit`]).
    pub fn with_memory_limit(max_memory: usize) -> Self {
        Self {
            paths: HashMap::new(),
            produced: Vec::new(),
            nodes: 0,
            edges: Vec::new(),
            memory: 0,
            max_memory,
        }
    }

    /// Counts `bytes` more of memory the reader keeps for the graph (a
    /// parser's own tables count too); an error past the limit.
    pub fn charge(&mut self, bytes: usize) -> Result<(), GraphError> {
        self.memory = self.memory.saturating_add(bytes);
        if self.memory > self.max_memory {
            return Err(GraphError::new(format!(
                "the graph would take more than {} bytes of memory ({} per byte of the file, plus {} MiB)",
                self.max_memory,
                GRAPH_MEMORY_PER_FILE_BYTE,
                GRAPH_MEMORY_SLACK >> 20
            )));
        }
        Ok(())
    }

    /// The node of `path`, created on first sight.
    pub fn path(&mut self, path: &[u8]) -> Result<u32, GraphError> {
        if let Some(&n) = self.paths.get(path) {
            return Ok(n);
        }
        self.charge(PATH_NODE_BYTES.saturating_add(path.len()))?;
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
        self.charge(inputs.len().saturating_mul(DEP_REF_BYTES))?;
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
    fn a_graph_over_its_memory_limit_is_given_up() {
        let mut b = GraphBuilder::with_memory_limit(10 * PATH_NODE_BYTES);
        let mut last = Ok(0);
        for i in 0..100u32 {
            last = b.path(format!("p{i}").as_bytes());
            if last.is_err() {
                break;
            }
        }
        let err = last.expect_err("100 paths fit in the memory of 10");
        assert!(err.0.contains("bytes of memory"), "{err}");
        assert_eq!(memory_limit(1 << 20), (4 << 20) + GRAPH_MEMORY_SLACK);
    }

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
