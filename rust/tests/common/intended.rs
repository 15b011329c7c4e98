//! THE list of intended differences between our output and what ct-cake's
//! own exporter sent for the same build (design.md §2: "a compat difference
//! that is not listed here is a bug"). The differential helper tolerates a
//! difference only through one of these entries, and counts each use in a
//! [`Tally`], so a run shows which ones a case exercised and a stale entry
//! (never exercised by any corpus case) is noticed.

use std::collections::BTreeMap;
use std::fmt;

/// One tolerated difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intended {
    pub id: &'static str,
    /// Where the difference is decided.
    pub design: &'static str,
    /// What differs, and what is still checked instead.
    pub what: &'static str,
    /// Whether some corpus case shows it; the others are exercised by a
    /// synthetic variant of a case (named in `what`).
    pub in_corpus: bool,
}

pub const UNANCHORED: &str = "unanchored-rules";
pub const PER_TU: &str = "per-tu-ccache-attribution";
pub const DETERMINISTIC_IDS: &str = "deterministic-ids";
pub const METRICS_ONCE: &str = "metrics-sent-once";
pub const METRIC_TIMES: &str = "metric-timestamps";
pub const METRICS_INVOCATION_ID: &str = "metrics-invocation-id";
pub const SNAPSHOT_PLACEMENT: &str = "snapshot-in-build-trace";
pub const UNCOMPARED_RESOURCE: &str = "uncompared-resource-keys";
pub const BUILD_ANALYTICS: &str = "build-analytics-additions";
pub const SEMCONV: &str = "semconv-additions";

pub const INTENDED_DIFFERENCES: &[Intended] = &[
    Intended {
        id: UNANCHORED,
        design: "design.md §2 fix 3, formats.md §2.9",
        what: "a reference rule span outside [root start − 1 s, root end + 1 s] is skipped by us as \
               unanchored; the number skipped must equal Summary.unanchored_rules (no corpus case has \
               one: tests/corpus.rs helper_tolerates_only_documented_unanchored_rules shifts a rule)",
        in_corpus: false,
    },
    Intended {
        id: PER_TU,
        design: "design.md §2, per-TU ccache attribution",
        what: "a compile span whose source has a statslog block with a primary event has \
               ct.rule.cache_layer = ccache|compiled where the reference says other, plus \
               ct.ccache.outcome right after it; the outcome must be the last block's primary event \
               by an independent reading of the case's statslog, and CAS hits must stay cas",
        in_corpus: true,
    },
    Intended {
        id: DETERMINISTIC_IDS,
        design: "design.md §2 fix 5, §3",
        what: "trace and span ids are hashes, the reference's are random: ids are never compared \
               across sides; parents are compared by (name, ct.target) and ids must be valid and unique",
        in_corpus: true,
    },
    Intended {
        id: METRICS_ONCE,
        design: "design.md §2 fix 4, formats.md §3.5",
        what: "ct-cake sent the ccache metrics twice (002 and 003: same points, later time); we send \
               one request, compared with 002 (003 is checked to repeat 002)",
        in_corpus: true,
    },
    Intended {
        id: METRIC_TIMES,
        design: "design.md §2 ccache metrics, formats.md §3.5",
        what: "ct-cake stamps points with the export instant (sum starts: when each point was first \
               added); ours: sum start = build start, time = build end, i.e. our root span's interval, \
               itself within the span tolerance of the reference root; gauges carry only the time, as \
               in the reference",
        in_corpus: true,
    },
    Intended {
        id: METRICS_INVOCATION_ID,
        design: "design.md §2 ccache metrics (and fix 5)",
        what: "ct.invocation_id of the metrics resource is the build's trace id in hex on both sides, \
               so the values differ as the trace ids do: ours must be our trace id, the reference's its \
               own",
        in_corpus: true,
    },
    Intended {
        id: SNAPSHOT_PLACEMENT,
        design: "design.md §2 fix 7, formats.md §3.6",
        what: "ct.ccache.snapshot is a child of our root span in the build's trace (a second ScopeSpans \
               of the same ResourceSpans, whose ct.invocation_id is therefore the directory name), \
               start = end = build end; ct-cake sends it as the root of a trace of its own, resource \
               ct.invocation_id = the build's trace id, timed at export. Name, scope, kind, flags and \
               attributes (order and values) are compared exactly",
        in_corpus: true,
    },
    Intended {
        id: UNCOMPARED_RESOURCE,
        design: "test setup",
        what: "telemetry.sdk.* (ct-cake's SDK, not ours) and git.commit.sha (the receiver reads it from \
               the source tree; the test passes none) are not compared",
        in_corpus: true,
    },
    Intended {
        id: BUILD_ANALYTICS,
        design: "issue 15, README \"Build analytics\"",
        what: "additions ct-cake does not compute: our root span ends with ct.build.parallelism.avg (only \
               with a build_execution phase), ct.build.parallelism.max, ct.build.critical_path_s, \
               ct.build.critical_path.method, ct.build.top_weighted_rules, present exactly when some \
               rule span has analytics; each rule span not below another rule ends with \
               ct.rule.weighted_s and, on the critical path only, ct.critical_path = true and (exact \
               path only) ct.rule.drag_s. They must be the trailing keys, in this order, with these types \
               (double ≥ 0, int ≥ 1, double ≥ 0, estimate|ninja_graph|make_graph, 1–10 strings; \
               double ≥ 0, bool true, double ≥ 0), and nowhere else; \
               they are removed before the exact comparison. Their values are checked against an \
               independent reading of our spans on every corpus case by tests/analytics.rs",
        in_corpus: true,
    },
    Intended {
        id: SEMCONV,
        design: "issues 14 and 23, docs/telemetry.md \"Standard names\"",
        what:
            "OpenTelemetry CI/CD, VCS and test semantic-convention keys beside ct-cake's: the trace resource \
               adds cicd.pipeline.run.id (= ct.invocation_id), cicd.worker.id and cicd.worker.name (= host.name) \
               and nothing else for a request without pipeline name or VCS data; the metrics resource the \
               same without the run id (opt-in on metrics). Our root span ends with \
               cicd.pipeline.action.name = BUILD, then cicd.pipeline.result and error.type exactly as an \
               independent reading of the reference's phases decides (postbuild_scripts last: success; \
               else with prebuild_scripts: failure, error.type = the last phase; else neither); every rule \
               span ends with cicd.pipeline.task.name = its ct.target (when it has one), \
               cicd.pipeline.task.type = test for ct.rule_type test, else build, cicd.pipeline.task.run.id = \
               its span id in hex, cicd.pipeline.task.run.result = success (a test only in a build that \
               succeeded), and a test of a successful build test.case.name (its target's file name up to the \
               CAS hash) and test.case.result.status = pass; the phase a failed build stopped in ends with \
               error.type = its name; other phases carry none. They are the trailing keys (after the build \
               analytics), string-typed, nowhere else, and removed before the exact comparison. The root and \
               that phase of a failed build have status ERROR, \"build failed in <phase>\" (the reference: \
               unset); span kinds stay INTERNAL (the default, semconv_root_span off)",
        in_corpus: true,
    },
];

/// How often each intended difference was used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally(BTreeMap<&'static str, u64>);

impl Tally {
    pub fn add(&mut self, id: &'static str, n: u64) {
        assert!(
            INTENDED_DIFFERENCES.iter().any(|d| d.id == id),
            "{id} is not in INTENDED_DIFFERENCES"
        );
        if n > 0 {
            *self.0.entry(id).or_default() += n;
        }
    }

    pub fn merge(&mut self, other: &Tally) {
        for (id, n) in &other.0 {
            self.add(id, *n);
        }
    }

    pub fn get(&self, id: &str) -> u64 {
        self.0.get(id).copied().unwrap_or(0)
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(id, n)| format!("{id}×{n}")).collect();
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// The list, one entry per paragraph, for the test log.
pub fn describe() -> String {
    INTENDED_DIFFERENCES
        .iter()
        .map(|d| {
            format!(
                "- {} ({}): {}",
                d.id,
                d.design,
                d.what.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
