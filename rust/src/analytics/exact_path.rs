//! The exact critical path through a build's dependency graph, and each
//! path rule's drag.
//!
//! Every node weighs the measured duration of the rule that built it in
//! this build, and 0 when nothing ran for it (up to date, phony, a source,
//! a statement node). The critical path is the heaviest chain of
//! dependencies; its length is the sum of its rules' durations — the
//! build's duration with unlimited jobs and no overhead between rules.
//!
//! Drag (BuildBuddy's word): how much shorter the heaviest chain gets when
//! one path rule takes no time, `L − L'` where `L'` is the heaviest chain
//! with that rule's weight set to 0. With `A(v)`, the heaviest chain that
//! avoids `v`, `L' = max(L − w(v), A(v))`, so `drag = min(w(v), L − A(v))`.
//! `A(v)` needs no re-run per rule: in a topological order, a chain avoiding
//! `v` lies wholly before `v`, wholly after it, or crosses `v`'s position
//! on one edge `d → x` — the best chain ending at `d` plus the best one
//! starting at `x`. One pass over the edges answers every path rule at once
//! (a range-max tree over the path's positions).

use super::dep_graph::{DepGraph, GraphError};

/// A node no rule of the build ran for.
pub(crate) const NO_RULE: u32 = u32::MAX;

/// The exact path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExactPath {
    /// Rule indices, first to last (each a dependency, direct or through
    /// nodes that did not run, of the next).
    pub rules: Vec<u32>,
    /// Drag of each rule of `rules`, ns.
    pub drag_ns: Vec<i64>,
    /// Sum of the path rules' durations, ns.
    pub length_ns: i64,
}

/// What ran: for each rule index its graph node and duration (ns, ≥ 0).
/// Several rules on one node (make records retries) weigh their longest.
pub struct Weights {
    pub node_of_rule: Vec<u32>,
    pub duration_ns: Vec<i64>,
}

/// Computes the path; a cycle in the graph is an error (a build file whose
/// rules wait for themselves cannot have been this build's).
pub fn exact(graph: &DepGraph, weights: &Weights) -> Result<ExactPath, GraphError> {
    let n = graph.node_count();
    let mut weight = vec![0i64; n];
    let mut rule_of = vec![NO_RULE; n];
    for (rule, (&node, &d)) in weights.node_of_rule.iter().zip(&weights.duration_ns).enumerate() {
        let Some(w) = weight.get_mut(node as usize) else {
            continue;
        };
        if rule_of[node as usize] == NO_RULE || d > *w {
            *w = d.max(0);
            rule_of[node as usize] = rule as u32;
        }
    }
    let order = topological_order(graph)?;

    // Heaviest chain ending at each node (itself included), with the
    // dependency it came through.
    let mut into = vec![0i64; n];
    let mut came_from = vec![NO_RULE; n];
    for &v in &order {
        let (mut best, mut from) = (0i64, NO_RULE);
        for &d in graph.deps_of(v) {
            let x = into[d as usize];
            if from == NO_RULE || x > best {
                (best, from) = (x, d);
            }
        }
        into[v as usize] = weight[v as usize].saturating_add(best);
        came_from[v as usize] = from;
    }
    // Heaviest chain starting at each node (itself included).
    let mut out_of = weight.clone();
    for &v in order.iter().rev() {
        let after = out_of[v as usize];
        for &d in graph.deps_of(v) {
            let d = d as usize;
            out_of[d] = out_of[d].max(weight[d].saturating_add(after));
        }
    }

    // The end: the heaviest chain's last node, first in topological order
    // among equals (deterministic).
    let Some(&end) = order
        .iter()
        .max_by(|&&a, &&b| into[a as usize].cmp(&into[b as usize]).then(b.cmp(&a)))
    else {
        return Ok(ExactPath {
            rules: Vec::new(),
            drag_ns: Vec::new(),
            length_ns: 0,
        });
    };
    let length = into[end as usize];
    let mut nodes = Vec::new();
    let mut v = end;
    // Bounded by the node count: the graph is acyclic.
    while v != NO_RULE && nodes.len() <= n {
        if rule_of[v as usize] != NO_RULE {
            nodes.push(v);
        }
        v = came_from[v as usize];
    }
    nodes.reverse();

    let drag_ns = drag(graph, &order, &into, &out_of, &weight, &nodes, length);
    Ok(ExactPath {
        rules: nodes.iter().map(|&v| rule_of[v as usize]).collect(),
        drag_ns,
        length_ns: length,
    })
}

/// Nodes with every dependency before its dependents (iterative depth-first
/// search; a node met again while still open closes a cycle).
fn topological_order(graph: &DepGraph) -> Result<Vec<u32>, GraphError> {
    const NEW: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let n = graph.node_count();
    let mut state = vec![NEW; n];
    let mut order = Vec::with_capacity(n);
    let mut stack: Vec<(u32, usize)> = Vec::new();
    for root in 0..n as u32 {
        if state[root as usize] != NEW {
            continue;
        }
        state[root as usize] = OPEN;
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let (v, next) = *top;
            match graph.deps_of(v).get(next) {
                Some(&d) => {
                    top.1 += 1;
                    match state.get(d as usize).copied() {
                        Some(NEW) => {
                            state[d as usize] = OPEN;
                            stack.push((d, 0));
                        }
                        Some(OPEN) => return Err(GraphError::new("the dependencies form a cycle")),
                        _ => {}
                    }
                }
                None => {
                    state[v as usize] = DONE;
                    order.push(v);
                    stack.pop();
                }
            }
        }
    }
    Ok(order)
}

/// Drag of each path node (see the module comment).
fn drag(
    graph: &DepGraph,
    order: &[u32],
    into: &[i64],
    out_of: &[i64],
    weight: &[i64],
    path: &[u32],
    length: i64,
) -> Vec<i64> {
    let n = order.len();
    let mut position = vec![0usize; n];
    for (p, &v) in order.iter().enumerate() {
        position[v as usize] = p;
    }
    // Heaviest chain wholly before / after each position.
    let mut before = vec![0i64; n + 1];
    for (p, &v) in order.iter().enumerate() {
        before[p + 1] = before[p].max(into[v as usize]);
    }
    let mut after = vec![0i64; n + 1];
    for p in (0..n).rev() {
        after[p] = after[p + 1].max(out_of[order[p] as usize]);
    }
    // The path's positions increase along it (dependencies come first).
    let queries: Vec<usize> = path.iter().map(|&v| position[v as usize]).collect();
    let mut crossing = RangeMax::new(queries.len());
    for &x in order {
        let px = position[x as usize];
        for &d in graph.deps_of(x) {
            let pd = position[d as usize];
            // Path positions strictly between the edge's two ends.
            let lo = queries.partition_point(|&q| q <= pd);
            let hi = queries.partition_point(|&q| q < px);
            if lo < hi {
                crossing.raise(lo, hi, into[d as usize].saturating_add(out_of[x as usize]));
            }
        }
    }
    path.iter()
        .zip(&queries)
        .enumerate()
        .map(|(i, (&v, &p))| {
            let avoiding = before[p].max(after[p + 1]).max(crossing.at(i));
            weight[v as usize].min(length.saturating_sub(avoiding)).max(0)
        })
        .collect()
}

/// Raise a range to at least a value; read one point (a segment tree whose
/// inner nodes hold the raises that cover their whole range).
struct RangeMax {
    size: usize,
    tree: Vec<i64>,
}

impl RangeMax {
    fn new(size: usize) -> Self {
        Self {
            size,
            tree: vec![0; 2 * size],
        }
    }

    fn raise(&mut self, lo: usize, hi: usize, value: i64) {
        let (mut l, mut r) = (lo + self.size, hi + self.size);
        while l < r {
            if l & 1 == 1 {
                self.tree[l] = self.tree[l].max(value);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                self.tree[r] = self.tree[r].max(value);
            }
            l /= 2;
            r /= 2;
        }
    }

    fn at(&self, i: usize) -> i64 {
        let mut p = i + self.size;
        let mut best = 0;
        while p > 0 {
            best = best.max(self.tree[p]);
            p /= 2;
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::super::dep_graph::GraphBuilder;
    use super::*;

    /// A graph over nodes named "0".."n-1", given as (node, deps) rows, and
    /// one rule per node with the given duration (None: nothing ran).
    fn run(rows: &[(u32, &[u32])], durations: &[Option<i64>]) -> ExactPath {
        let mut b = GraphBuilder::new();
        let nodes: Vec<u32> = (0..durations.len())
            .map(|i| b.path(i.to_string().as_bytes()).unwrap())
            .collect();
        for &(v, deps) in rows {
            let deps: Vec<u32> = deps.iter().map(|&d| nodes[d as usize]).collect();
            b.statement(&[nodes[v as usize]], &deps).unwrap();
        }
        let g = b.finish();
        let ran: Vec<(u32, i64)> = durations
            .iter()
            .enumerate()
            .filter_map(|(i, d)| Some((nodes[i], (*d)?)))
            .collect();
        let w = Weights {
            node_of_rule: ran.iter().map(|r| r.0).collect(),
            duration_ns: ran.iter().map(|r| r.1).collect(),
        };
        exact(&g, &w).unwrap()
    }

    /// Drag by definition: the heaviest chain again with one weight at 0.
    fn brute_length(rows: &[(u32, &[u32])], durations: &[Option<i64>]) -> i64 {
        run(rows, durations).length_ns
    }

    #[test]
    fn chain_with_a_parallel_filler() {
        // 0 → 1 → 2 (10, 20, 5); filler 3 (12) also feeds 2; 4 (30) alone.
        let rows: &[(u32, &[u32])] = &[(1, &[0]), (2, &[1, 3])];
        let d = [Some(10), Some(20), Some(5), Some(12), Some(30)];
        let p = run(rows, &d);
        assert_eq!(p.rules, [0, 1, 2]);
        assert_eq!(p.length_ns, 35);
        // Without 0: max(25, 3 → 2 = 17, 4 = 30) = 30, drag 5; without 1:
        // 30, drag 5; without 2: 30 (4 alone), drag 5.
        assert_eq!(p.drag_ns, [5, 5, 5]);
        for (i, &drag) in p.drag_ns.iter().enumerate() {
            let mut zero = d;
            zero[p.rules[i] as usize] = Some(0);
            assert_eq!(drag, p.length_ns - brute_length(rows, &zero));
        }
    }

    #[test]
    fn a_rule_with_no_alternative_drags_its_whole_duration() {
        // 0 → 2 ← 1, 2 → 3 (sink); 0 is 10, 1 is 4, 2 is 7, 3 is 1.
        let p = run(&[(2, &[0, 1]), (3, &[2])], &[Some(10), Some(4), Some(7), Some(1)]);
        assert_eq!(p.rules, [0, 2, 3]);
        assert_eq!(p.length_ns, 18);
        // Without 0 the chain goes through 1: 12, drag 6; 2 and 3 are on
        // every chain: their whole duration.
        assert_eq!(p.drag_ns, [6, 7, 1]);
    }

    #[test]
    fn nodes_that_did_not_run_link_the_chain() {
        // 0 → (1 up to date) → 2.
        let p = run(&[(1, &[0]), (2, &[1])], &[Some(3), None, Some(4)]);
        // Rule indices: node 2 is the second rule that ran.
        assert_eq!(p.rules, [0, 1]);
        assert_eq!(p.length_ns, 7);
    }

    #[test]
    fn cycles_are_refused() {
        let mut b = GraphBuilder::new();
        let [a, c] = [b"a", b"c"].map(|p| b.path(p).unwrap());
        b.statement(&[a], &[c]).unwrap();
        b.statement(&[c], &[a]).unwrap();
        let w = Weights {
            node_of_rule: vec![a],
            duration_ns: vec![1],
        };
        assert!(exact(&b.finish(), &w).is_err());
    }
}
