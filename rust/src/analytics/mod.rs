//! Build analytics computed from the timing model on every build:
//! parallelism and weighted time ([`sweep`]), and the critical path —
//! exact, with each path rule's drag ([`exact_path`]), when the receiver
//! names the build's generated `build.ninja` or Makefile ([`build_graph`],
//! read by [`ninja_file`] / [`makefile`] into a [`dep_graph`]), else
//! estimated from timing alone ([`critical_path`]). The OTLP side puts them
//! on the root span and the rule spans (`otlp::analytics`).
//!
//! Which rules count: exactly the rules that become rule spans and are
//! reached through phases — the rules of every phase and sub-phase, and
//! rules sitting directly under the root, when anchored (formats.md §2.9).
//! Unanchored rules are skipped as the trace skips them: their times are
//! not on the build's clock. A rule's `children` (never written by
//! compiletools 13.1.x) are steps of their parent rule, not jobs of the
//! build: they would count the same work twice, so they are left out and
//! carry no analytics attributes. A rule whose end is before its start is
//! treated as an instant at its start, as its span is.
//!
//! A build without any counted rule (cmake and bazel record none, a no-op
//! build runs none) has no analytics at all: no value beats a made-up one.
//!
//! Per-target history (time saved by a cache hit, duration regressions)
//! needs the receiver's memory of earlier builds: [`crate::history`]
//! computes it and the pipeline attaches it here
//! ([`BuildAnalytics::with_history`]), so the trace finds every analytics
//! number of a rule in one place.

pub mod build_file_lines;
pub mod build_graph;
pub mod critical_path;
pub mod dep_graph;
pub mod exact_path;
pub mod makefile;
pub mod ninja_file;
mod order;
pub mod sweep;

pub use build_graph::{BuildGraph, PathMethod};
// The rules' times as the analytics count them; the timing model owns it,
// since the compile history needs it too.
pub use crate::timing::Interval;

use crate::timing::naming::span_name;
use crate::timing::{Build, Clock, EventId};
use crate::warnings::Warnings;

/// How many rules `ct.build.top_weighted_rules` lists (not `pub`: cbindgen
/// would export it into the C header).
pub(crate) const TOP_WEIGHTED_RULES: usize = 10;

/// Name of the phase whose wall time is the denominator of the average
/// parallelism.
pub const BUILD_EXECUTION_PHASE: &str = "build_execution";

/// The analytics of one rule span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuleFacts {
    /// `ct.rule.weighted_s`.
    pub weighted_s: f64,
    /// `ct.critical_path`.
    pub critical_path: bool,
    /// `ct.rule.drag_s`: on the rules of an exact critical path only.
    pub drag_s: Option<f64>,
}

/// The root span's analytics.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildSummary {
    /// `ct.build.parallelism.avg`: sum of rule durations ÷ wall time of the
    /// `build_execution` phase; `None` without that phase or when it took
    /// no time.
    pub parallelism_avg: Option<f64>,
    /// `ct.build.parallelism.max`.
    pub parallelism_max: u64,
    /// `ct.build.critical_path_s`: the estimate's first start to last end,
    /// or the exact path's sum of rule durations.
    pub critical_path_s: f64,
    /// `ct.build.critical_path.method`.
    pub critical_path_method: PathMethod,
    /// `ct.build.top_weighted_rules`: span names, largest weighted time
    /// first (ties in file order), at most 10.
    pub top_weighted_rules: Vec<String>,
}

/// Everything computed for one build.
#[derive(Debug, Clone, Default)]
pub struct BuildAnalytics {
    /// Per event slot: the rule's index in the tables below, or
    /// [`NOT_COUNTED`].
    rule_of_slot: Vec<u32>,
    weighted_s: Vec<f64>,
    on_critical_path: Vec<bool>,
    /// Per rule, the drag of an exact path's rules; empty for an estimate.
    drag_s: Vec<Option<f64>>,
    /// `None` when no rule counted.
    summary: Option<BuildSummary>,
    /// What the receiver's compile history gives this build (time saved,
    /// duration deltas); `None` without a history.
    history: Option<crate::history::HistoryFacts>,
}

const NOT_COUNTED: u32 = u32::MAX;

impl BuildAnalytics {
    /// The analytics of rule span `id`; `None` for events that do not count
    /// (phases, unanchored rules, rule children) and ids of other builds.
    pub fn rule(&self, id: EventId) -> Option<RuleFacts> {
        let i = *self.rule_of_slot.get(id.slot())?;
        Some(RuleFacts {
            weighted_s: *self.weighted_s.get(i as usize)?,
            critical_path: *self.on_critical_path.get(i as usize)?,
            drag_s: self.drag_s.get(i as usize).copied().flatten(),
        })
    }

    /// The root's analytics; `None` when the build has no counted rule.
    pub fn summary(&self) -> Option<&BuildSummary> {
        self.summary.as_ref()
    }

    /// These analytics with the history's numbers of the same build.
    pub fn with_history(self, history: Option<crate::history::HistoryFacts>) -> Self {
        Self { history, ..self }
    }

    /// The history's numbers of the build; `None` without a history.
    pub fn history(&self) -> Option<&crate::history::HistoryFacts> {
        self.history.as_ref()
    }
}

/// Computes the analytics of `build` with the critical path estimated;
/// `clock` decides which rules are anchored, as for the trace.
pub fn analyze(build: &Build, clock: &Clock) -> BuildAnalytics {
    analyze_with(build, clock, None, &mut Warnings::new())
}

/// [`analyze`], with the exact critical path and drag when `graph` lists
/// every counted rule's target and has no cycle; otherwise the estimate,
/// with a warning saying why.
pub fn analyze_with(
    build: &Build,
    clock: &Clock,
    graph: Option<&BuildGraph>,
    warnings: &mut Warnings,
) -> BuildAnalytics {
    let mut rule_of_slot = vec![NOT_COUNTED; build.event_count()];
    // Nearly every event of a large build is a rule.
    let mut ids = Vec::with_capacity(build.event_count());
    let mut rules = Vec::with_capacity(build.event_count());
    let mut total_ns = 0i128;
    let mut nodes = Nodes::default();
    build.for_each_phase_rule(&mut |rule| {
        // u32 indices: the decoder's tables already fit in u32.
        let Ok(index) = u32::try_from(rules.len()) else {
            return;
        };
        if !clock.is_anchored(&rule) {
            return;
        }
        let interval = Interval::of(&rule);
        if let Some(slot) = rule_of_slot.get_mut(rule.id().slot()) {
            *slot = index;
        }
        total_ns += i128::from(interval.duration_ns());
        if let Some(g) = graph {
            nodes.add(&g.graph, rule.target());
        }
        ids.push(rule.id());
        rules.push(interval);
    });
    if rules.is_empty() {
        return BuildAnalytics::default();
    }
    let exact = graph.and_then(|g| exact(g, nodes, &rules, warnings));
    // The orders carry the times: the rule table is no longer needed, and
    // freeing it keeps the peak memory of a large build down.
    let by_start = order::by_start(&rules);
    let by_end = order::by_end(&rules);
    let count = rules.len();
    drop(rules);
    let swept = sweep::sweep(&by_start, &by_end);
    drop(by_start);
    let (path_rules, length_ns, method, drag_ns) = match exact {
        Some((path, method)) => (path.rules, path.length_ns, method, path.drag_ns),
        None => {
            let tolerance = critical_path::clock_resolution_ns(&build.backend);
            let path = critical_path::estimate(&by_end, tolerance);
            (path.rules, path.length_ns, PathMethod::Estimate, Vec::new())
        }
    };
    drop(by_end);

    let mut on_critical_path = vec![false; count];
    for &i in &path_rules {
        if let Some(on) = on_critical_path.get_mut(i as usize) {
            *on = true;
        }
    }
    let mut drag_s = Vec::new();
    if !drag_ns.is_empty() {
        drag_s = vec![None; count];
        for (&i, &d) in path_rules.iter().zip(&drag_ns) {
            if let Some(slot) = drag_s.get_mut(i as usize) {
                *slot = Some(d as f64 / 1e9);
            }
        }
    }
    let summary = BuildSummary {
        parallelism_avg: build_execution_ns(build)
            .filter(|&wall| wall > 0)
            .map(|wall| total_ns as f64 / wall as f64),
        parallelism_max: swept.max_parallel,
        critical_path_s: length_ns as f64 / 1e9,
        critical_path_method: method,
        top_weighted_rules: top_weighted(build, &ids, &swept.weighted_s),
    };
    BuildAnalytics {
        rule_of_slot,
        weighted_s: swept.weighted_s,
        on_critical_path,
        drag_s,
        summary: Some(summary),
        history: None,
    }
}

/// The graph node of each counted rule, by the rule's `target` (the output
/// path exactly as the backend knows it, formats.md §2.3), which some statement
/// of the graph must build.
#[derive(Default)]
struct Nodes {
    of_rule: Vec<u32>,
    missing: usize,
    first_missing: Option<String>,
}

impl Nodes {
    fn add(&mut self, graph: &dep_graph::DepGraph, target: &str) {
        match graph.output_of(target.as_bytes()).filter(|_| !target.is_empty()) {
            Some(node) => self.of_rule.push(node),
            None => {
                self.of_rule.push(exact_path::NO_RULE);
                self.missing += 1;
                self.first_missing.get_or_insert_with(|| target.to_owned());
            }
        }
    }
}

/// The exact path when the graph covers every rule.
fn exact(
    graph: &BuildGraph,
    nodes: Nodes,
    rules: &[Interval],
    warnings: &mut Warnings,
) -> Option<(exact_path::ExactPath, PathMethod)> {
    let refuse = |warnings: &mut Warnings, why: String| {
        warnings.push(format!(
            "build graph {} not used, critical path estimated: {why}",
            graph.path.display()
        ));
        None
    };
    if nodes.missing > 0 {
        let example = nodes.first_missing.unwrap_or_default();
        return refuse(
            warnings,
            format!(
                "{} of the build's {} rules have no output in it (first: {example:?}); it describes another run",
                nodes.missing,
                rules.len()
            ),
        );
    }
    let weights = exact_path::Weights {
        node_of_rule: nodes.of_rule,
        duration_ns: rules.iter().map(|r| r.duration_ns()).collect(),
    };
    match exact_path::exact(&graph.graph, &weights) {
        Ok(path) => Some((path, graph.method)),
        Err(e) => refuse(warnings, e.to_string()),
    }
}

/// Wall time of the first top-level `build_execution` phase, ns.
fn build_execution_ns(build: &Build) -> Option<i64> {
    build
        .children()
        .find(|e| !e.is_rule() && e.name() == BUILD_EXECUTION_PHASE)
        .map(|phase| Interval::of(&phase).duration_ns())
}

/// Span names of the [`TOP_WEIGHTED_RULES`] rules with the most weighted
/// time, largest first, ties in file order.
fn top_weighted(build: &Build, ids: &[EventId], weighted_s: &[f64]) -> Vec<String> {
    // Rule indices are in file order, so the index breaks ties.
    let mut order: Vec<usize> = (0..weighted_s.len()).collect();
    let by_weight = |a: &usize, b: &usize| weighted_s[*b].total_cmp(&weighted_s[*a]).then(a.cmp(b));
    if order.len() > TOP_WEIGHTED_RULES {
        order.select_nth_unstable_by(TOP_WEIGHTED_RULES - 1, by_weight);
        order.truncate(TOP_WEIGHTED_RULES);
    }
    order.sort_unstable_by(by_weight);
    order
        .into_iter()
        .filter_map(|i| build.event(*ids.get(i)?))
        .map(|rule| span_name(&rule))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::timing::model::parse_for_test;

    fn rule(name: &str, start: f64, end: f64) -> serde_json::Value {
        json!({"name": name, "rule_type": "compile", "source": format!("/s/d/{name}"),
               "start_s": start, "end_s": end})
    }

    fn build_of(backend: &str, phases: serde_json::Value) -> Build {
        parse_for_test(
            &json!({
                "timestamp": "2026-11-30T03:43:45+00:00", "start_s": 100.0, "total_elapsed_s": 10.0,
                "backend": backend, "phases": phases,
            })
            .to_string(),
        )
    }

    fn facts_by_name(build: &Build, a: &BuildAnalytics) -> Vec<(String, Option<RuleFacts>)> {
        build
            .rule_ids()
            .into_iter()
            .filter_map(|id| Some((build.event(id)?.name().to_owned(), a.rule(id))))
            .collect()
    }

    #[test]
    fn only_anchored_phase_rules_count() {
        let mut parent = rule("parent.cpp", 102.0, 104.0);
        parent["children"] = json!([rule("child.cpp", 102.0, 103.0)]);
        let build = build_of(
            "shake",
            json!([
                {"name": "build_execution", "start_s": 101.0, "end_s": 105.0, "rules": [
                    parent,
                    rule("unanchored.cpp", 0.0, 103.0),
                    {"name": "sub", "start_s": 101.0, "end_s": 105.0, "rules": [rule("sub.cpp", 103.0, 105.0)]},
                ]},
                rule("top.cpp", 101.0, 102.0),
            ]),
        );
        let a = analyze(&build, &Clock::for_build(&build).unwrap());
        let got = facts_by_name(&build, &a);
        let names_with_facts: Vec<&str> = got
            .iter()
            .filter(|(_, f)| f.is_some())
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(names_with_facts, ["parent.cpp", "sub.cpp", "top.cpp"]);
        let s = a.summary().unwrap();
        // 2 + 2 + 1 s of rules over the 4 s of build_execution.
        assert_eq!(s.parallelism_avg, Some(1.25));
        assert_eq!(s.parallelism_max, 2);
        // sub (103–105) ended last; the latest end at or before its start
        // is top's (102: parent ends at 104), and nothing ended before 101.
        assert_eq!(s.critical_path_s, 4.0);
        assert_eq!(
            s.top_weighted_rules,
            ["compile.d/parent.cpp", "compile.d/sub.cpp", "compile.d/top.cpp"]
        );
    }

    #[test]
    fn times_at_the_top_of_the_ns_range() {
        // Monotonic times near i64::MAX ns, a window of 230 days (the clock
        // refuses builds starting before 2000, which bounds every difference
        // of anchored times far below i64): nothing overflows. The file's
        // f64 seconds are only good to ~2 µs at this magnitude.
        let (lo, hi) = (9.2e9, 9.2e9 + 2.0e7);
        let build = parse_for_test(
            &json!({
                "timestamp": "2026-11-30T03:43:45+00:00", "start_s": lo, "total_elapsed_s": hi - lo,
                "phases": [{"name": "build_execution", "start_s": lo, "end_s": hi, "rules": [
                    rule("early.cpp", lo, lo + 1.0),
                    rule("late.cpp", hi - 1.0, hi),
                    rule("all.cpp", lo, hi),
                ]}],
            })
            .to_string(),
        );
        let a = analyze(&build, &Clock::for_build(&build).unwrap());
        let s = a.summary().unwrap();
        assert_eq!(s.parallelism_max, 2);
        assert!((s.critical_path_s - (hi - lo)).abs() < 1e-5);
        let weights = build
            .rule_ids()
            .into_iter()
            .map(|id| a.rule(id).unwrap().weighted_s);
        for (got, want) in weights.zip([0.5, 0.5, hi - lo - 1.0]) {
            assert!((got - want).abs() < 1e-5, "{got} != {want}");
        }
    }

    #[test]
    fn a_build_without_rules_has_no_analytics() {
        let build = build_of(
            "cmake",
            json!([{"name": "build_execution", "start_s": 101.0, "end_s": 105.0}]),
        );
        let a = analyze(&build, &Clock::for_build(&build).unwrap());
        assert!(a.summary().is_none());
        assert!(build.children().all(|e| a.rule(e.id()).is_none()));
    }

    #[test]
    fn top_list_is_bounded_and_ordered() {
        // 12 sequential rules of growing length: the 10 longest, longest first.
        let rules: Vec<_> = (0..12)
            .map(|i| {
                let start = 100.0 + f64::from(i) * 0.5;
                rule(&format!("r{i:02}.cpp"), start, start + 0.01 * f64::from(i + 1))
            })
            .collect();
        let build = build_of(
            "make",
            json!([{"name": "build_execution", "start_s": 100.0, "end_s": 107.0, "rules": rules}]),
        );
        let a = analyze(&build, &Clock::for_build(&build).unwrap());
        let top = &a.summary().unwrap().top_weighted_rules;
        let want: Vec<String> = (2..12).rev().map(|i| format!("compile.d/r{i:02}.cpp")).collect();
        assert_eq!(top, &want);
        // No build_execution phase: no average, the rest is there.
        let build = build_of(
            "make",
            json!([{"name": "other", "rules": [rule("x.cpp", 101.0, 102.0)]}]),
        );
        let s = analyze(&build, &Clock::for_build(&build).unwrap())
            .summary()
            .cloned()
            .unwrap();
        assert_eq!(
            (s.parallelism_avg, s.parallelism_max, s.critical_path_s),
            (None, 1, 1.0)
        );
    }
}
