//! An independent check of the build analytics on a decoded trace: every
//! value is recomputed from the spans' own times by brute force (elementary
//! intervals between all start/end instants, not a sweep), and the critical
//! path is checked against its definition rather than recomputed.
//!
//! Definitions checked (README "Build analytics"):
//! * counted rules = rule spans without a rule span above them;
//! * weighted time: every instant is shared equally by the rules running
//!   at it (intervals half-open); sum over the rules = busy time;
//! * most rules at once: over the instants, with a zero-length rule running
//!   for an instant right after the rules that end with it;
//! * the critical path: a chain in time that ends with a rule that finished
//!   last, each step to a rule that finished latest at or before the next
//!   one's start (± the tolerance) and started earlier, from a first rule
//!   that has no such predecessor; its length is first start to last end;
//! * average parallelism: sum of rule durations ÷ the wall time of the
//!   root's `phase.build_execution` child.

use std::collections::HashMap;
use std::fmt::Write as _;

use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;

pub const PARALLELISM_AVG: &str = "ct.build.parallelism.avg";
pub const PARALLELISM_MAX: &str = "ct.build.parallelism.max";
pub const CRITICAL_PATH_S: &str = "ct.build.critical_path_s";
pub const CRITICAL_PATH_METHOD: &str = "ct.build.critical_path.method";
pub const TOP_WEIGHTED_RULES: &str = "ct.build.top_weighted_rules";
pub const RULE_WEIGHTED_S: &str = "ct.rule.weighted_s";
pub const CRITICAL_PATH: &str = "ct.critical_path";
pub const RULE_DRAG_S: &str = "ct.rule.drag_s";
/// Every root key, in the order they are emitted.
pub const ROOT_KEYS: [&str; 5] = [
    PARALLELISM_AVG,
    PARALLELISM_MAX,
    CRITICAL_PATH_S,
    CRITICAL_PATH_METHOD,
    TOP_WEIGHTED_RULES,
];
/// Every rule key, in the order they are emitted.
pub const RULE_KEYS: [&str; 3] = [RULE_WEIGHTED_S, CRITICAL_PATH, RULE_DRAG_S];
/// The values of `ct.build.critical_path.method`.
pub const PATH_METHODS: [&str; 3] = ["estimate", "ninja_graph", "make_graph"];
/// How many rules the top list names.
pub const TOP_N: usize = 10;

/// Clock resolution the path tolerates, by backend (formats.md §2.4).
pub fn tolerance_ns(backend: &str) -> i64 {
    if backend == "ninja" {
        1_000_000
    } else {
        1_000
    }
}

fn value<'s>(span: &'s Span, key: &str) -> Option<&'s Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn double(span: &Span, key: &str) -> Option<f64> {
    match value(span, key) {
        Some(Value::DoubleValue(d)) => Some(*d),
        _ => None,
    }
}

/// A counted rule as the trace shows it.
#[derive(Debug, Clone)]
pub struct Rule {
    pub name: String,
    pub start: i64,
    pub end: i64,
    pub weighted_s: Option<f64>,
    pub critical_path: bool,
    pub drag_s: Option<f64>,
}

/// What the check found, for tests that also know the answers.
#[derive(Debug, Clone, Default)]
pub struct Found {
    pub rules: Vec<Rule>,
    pub busy_s: f64,
    pub max_parallel: i64,
    pub critical_path_s: Option<f64>,
    /// `ct.build.critical_path.method`.
    pub method: Option<String>,
    pub parallelism_avg: Option<f64>,
    pub top: Vec<String>,
}

/// Checks every analytics attribute of one build's spans; `Err` lists each
/// violation.
pub fn check(spans: &[Span], tolerance_ns: i64) -> Result<Found, String> {
    let mut d = String::new();
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    let is_rule = |s: &Span| value(s, "ct.rule_type").is_some();
    let Some(root) = spans.iter().find(|s| s.parent_span_id.is_empty()) else {
        return Err("no root span".into());
    };
    // Anything below a rule is a step of that rule.
    let has_rule_ancestor = |s: &Span| {
        let mut at = by_id.get(s.parent_span_id.as_slice());
        while let Some(p) = at {
            if is_rule(p) {
                return true;
            }
            at = by_id.get(p.parent_span_id.as_slice());
        }
        false
    };
    let mut rules = Vec::new();
    for s in spans {
        let counted = is_rule(s) && !has_rule_ancestor(s);
        let weighted_s = double(s, RULE_WEIGHTED_S);
        let flag = value(s, CRITICAL_PATH);
        let drag_s = double(s, RULE_DRAG_S);
        if !counted {
            if weighted_s.is_some() || flag.is_some() || value(s, RULE_DRAG_S).is_some() {
                let _ = writeln!(d, "{}: analytics on a span that is no counted rule", s.name);
            }
            continue;
        }
        match flag {
            None => {}
            Some(Value::BoolValue(true)) => {}
            Some(other) => {
                let _ = writeln!(
                    d,
                    "{}: {CRITICAL_PATH} = {other:?}, only `true` is written",
                    s.name
                );
            }
        }
        if weighted_s.is_none() {
            let _ = writeln!(d, "{}: no double {RULE_WEIGHTED_S}", s.name);
        }
        rules.push(Rule {
            name: s.name.clone(),
            start: s.start_time_unix_nano as i64,
            end: s.end_time_unix_nano as i64,
            weighted_s,
            critical_path: flag.is_some(),
            drag_s,
        });
        if drag_s.is_some() && flag.is_none() {
            let _ = writeln!(d, "{}: {RULE_DRAG_S} off the critical path", s.name);
        }
    }

    let mut found = Found::default();
    let root_present: Vec<&str> = ROOT_KEYS
        .iter()
        .copied()
        .filter(|k| value(root, k).is_some())
        .collect();
    if rules.is_empty() {
        if !root_present.is_empty() {
            let _ = writeln!(d, "no counted rule, yet the root has {root_present:?}");
        }
        return if d.is_empty() { Ok(found) } else { Err(d) };
    }

    // Weighted time and busy time over the elementary intervals.
    let mut instants: Vec<i64> = rules.iter().flat_map(|r| [r.start, r.end]).collect();
    instants.sort_unstable();
    instants.dedup();
    let mut weighted = vec![0.0f64; rules.len()];
    let mut busy_ns = 0i64;
    for w in instants.windows(2) {
        let (a, b) = (w[0], w[1]);
        let running: Vec<usize> = (0..rules.len())
            .filter(|&i| rules[i].start <= a && b <= rules[i].end)
            .collect();
        if running.is_empty() {
            continue;
        }
        busy_ns += b - a;
        for i in &running {
            weighted[*i] += (b - a) as f64 / 1e9 / running.len() as f64;
        }
    }
    found.busy_s = busy_ns as f64 / 1e9;
    let mut sum = 0.0;
    for (r, want) in rules.iter().zip(&weighted) {
        let got = r.weighted_s.unwrap_or(f64::NAN);
        sum += got;
        if (got - want).abs() > 1e-9 * (1.0 + want.abs()) {
            let _ = writeln!(
                d,
                "{}: {RULE_WEIGHTED_S} = {got}, elementary intervals give {want}",
                r.name
            );
        }
    }
    if (sum - found.busy_s).abs() > 1e-9 * (1.0 + found.busy_s) {
        let _ = writeln!(
            d,
            "weighted times sum to {sum} s, busy time is {} s",
            found.busy_s
        );
    }

    // Most rules at once: at each instant, the rules running right after it
    // plus the zero-length ones at it.
    found.max_parallel = instants
        .iter()
        .map(|&t| {
            rules
                .iter()
                .filter(|r| (r.start <= t && t < r.end) || (r.start == t && r.end == t))
                .count() as i64
        })
        .max()
        .unwrap_or(0);
    match value(root, PARALLELISM_MAX) {
        Some(Value::IntValue(m)) if *m == found.max_parallel => {}
        other => {
            let _ = writeln!(
                d,
                "root {PARALLELISM_MAX} = {other:?}, expected {}",
                found.max_parallel
            );
        }
    }

    // Average parallelism.
    let build_execution = spans
        .iter()
        .find(|s| s.name == "phase.build_execution" && s.parent_span_id == root.span_id);
    let wall = build_execution.map_or(0, |p| p.end_time_unix_nano as i64 - p.start_time_unix_nano as i64);
    let total_ns: i64 = rules.iter().map(|r| r.end - r.start).sum();
    let want_avg = (wall > 0).then(|| total_ns as f64 / wall as f64);
    found.parallelism_avg = double(root, PARALLELISM_AVG);
    match (found.parallelism_avg, want_avg) {
        (Some(got), Some(want)) if (got - want).abs() <= 1e-9 * want.max(1.0) => {}
        (None, None) => {}
        (got, want) => {
            let _ = writeln!(d, "root {PARALLELISM_AVG} = {got:?}, expected {want:?}");
        }
    }

    // Critical path, against its definition.
    let mut path: Vec<&Rule> = rules.iter().filter(|r| r.critical_path).collect();
    path.sort_by_key(|r| r.start);
    let max_end = rules.iter().map(|r| r.end).max().unwrap_or(0);
    let min_start = rules.iter().map(|r| r.start).min().unwrap_or(0);
    found.critical_path_s = double(root, CRITICAL_PATH_S);
    found.method = match value(root, CRITICAL_PATH_METHOD) {
        Some(Value::StringValue(m)) if PATH_METHODS.contains(&m.as_str()) => Some(m.clone()),
        other => {
            let _ = writeln!(
                d,
                "root {CRITICAL_PATH_METHOD} = {other:?}, expected one of {PATH_METHODS:?}"
            );
            None
        }
    };
    if found.method.as_deref().is_some_and(|m| m != "estimate") {
        check_exact_path(
            &mut d,
            &path,
            found.critical_path_s,
            tolerance_ns,
            max_end - min_start,
        );
    } else if path.iter().any(|r| r.drag_s.is_some()) {
        let _ = writeln!(d, "{RULE_DRAG_S} on an estimated path");
    }
    if found.method.as_deref() == Some("estimate") {
        if let (Some(first), Some(last)) = (path.first(), path.last()) {
            if last.end != max_end {
                let _ = writeln!(
                    d,
                    "the path ends with {} at {}, not at the last end {max_end}",
                    last.name, last.end
                );
            }
            let has_predecessor = |r: &Rule| {
                rules
                    .iter()
                    .any(|q| q.start < r.start && q.end <= r.start + tolerance_ns)
            };
            if has_predecessor(first) {
                let _ = writeln!(d, "the path's first rule {} has a predecessor", first.name);
            }
            for pair in path.windows(2) {
                let (p, q) = (pair[0], pair[1]);
                if p.start >= q.start || p.end > q.start + tolerance_ns {
                    let _ = writeln!(d, "path step {} → {} is not a chain in time", p.name, q.name);
                }
                if let Some(later) = rules
                    .iter()
                    .find(|r| r.start < q.start && r.end <= q.start + tolerance_ns && r.end > p.end)
                {
                    let _ = writeln!(
                        d,
                        "path step {} → {}: {} finished later before {} started",
                        p.name, q.name, later.name, q.name
                    );
                }
            }
            let length_s = (last.end - first.start) as f64 / 1e9;
            match found.critical_path_s {
                Some(got) if (got - length_s).abs() <= 1e-9 => {}
                got => {
                    let _ = writeln!(
                        d,
                        "root {CRITICAL_PATH_S} = {got:?}, the flagged path is {length_s} s"
                    );
                }
            }
            if length_s > (max_end - min_start) as f64 / 1e9 + 1e-9 {
                let _ = writeln!(d, "the path ({length_s} s) is longer than the rules' extent");
            }
        } else {
            let _ = writeln!(d, "{} counted rules but no {CRITICAL_PATH} rule", rules.len());
        }
    }

    // Top weighted rules: the i-th name is a rule with the i-th largest
    // weighted time.
    found.top = match value(root, TOP_WEIGHTED_RULES) {
        Some(Value::ArrayValue(a)) => a
            .values
            .iter()
            .map(|v| match &v.value {
                Some(Value::StringValue(s)) => s.clone(),
                other => format!("<not a string: {other:?}>"),
            })
            .collect(),
        other => {
            let _ = writeln!(
                d,
                "root {TOP_WEIGHTED_RULES} = {other:?}, expected a string array"
            );
            Vec::new()
        }
    };
    let mut ranked = weighted.clone();
    ranked.sort_by(|a, b| b.total_cmp(a));
    if found.top.len() != rules.len().min(TOP_N) {
        let _ = writeln!(
            d,
            "{} top rules for {} counted rules",
            found.top.len(),
            rules.len()
        );
    }
    for (name, want) in found.top.iter().zip(&ranked) {
        let fits = rules
            .iter()
            .zip(&weighted)
            .any(|(r, w)| &r.name == name && (w - want).abs() <= 1e-9 * (1.0 + want));
        if !fits {
            let _ = writeln!(d, "top rule {name:?} has no weighted time {want}");
        }
    }
    found.rules = rules;
    if d.is_empty() {
        Ok(found)
    } else {
        Err(d)
    }
}

/// An exact path (from a build graph) as the trace can check it without
/// the graph: a dependency finishes before its dependent starts, so the
/// path is a chain in time; its length is the sum of its rules' durations,
/// never more than the rules' extent; every path rule has a drag between 0
/// and its duration.
fn check_exact_path(d: &mut String, path: &[&Rule], length: Option<f64>, tolerance_ns: i64, extent_ns: i64) {
    if path.is_empty() {
        let _ = writeln!(d, "an exact path without {CRITICAL_PATH} rules");
        return;
    }
    for pair in path.windows(2) {
        let (p, q) = (pair[0], pair[1]);
        if p.end > q.start + tolerance_ns {
            let _ = writeln!(
                d,
                "exact path step {} → {} is not a chain in time",
                p.name, q.name
            );
        }
    }
    let sum_ns: i64 = path.iter().map(|r| r.end - r.start).sum();
    let sum_s = sum_ns as f64 / 1e9;
    match length {
        Some(got) if (got - sum_s).abs() <= 1e-9 => {}
        got => {
            let _ = writeln!(
                d,
                "root {CRITICAL_PATH_S} = {got:?}, the flagged rules take {sum_s} s"
            );
        }
    }
    if sum_ns > extent_ns {
        let _ = writeln!(d, "the exact path ({sum_s} s) is longer than the rules' extent");
    }
    for r in path {
        let duration_s = (r.end - r.start) as f64 / 1e9;
        match r.drag_s {
            Some(drag) if (0.0..=duration_s + 1e-9).contains(&drag) => {}
            other => {
                let _ = writeln!(
                    d,
                    "{}: {RULE_DRAG_S} = {other:?}, expected 0..={duration_s}",
                    r.name
                );
            }
        }
    }
}
