//! Intended difference `semconv-additions`: the CI/CD and VCS semantic
//! convention keys we add beside ct-cake's (README "Standard names").
//! Each check here is an independent reading of the reference side (its
//! phases, its rules, its resource), never of our code, and returns our
//! side without the additions for the exact comparison.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::intended::{self, Tally};
use super::reference::{Attr, RefSpan, Trace};

pub const ROOT_KEYS: [&str; 3] = ["cicd.pipeline.action.name", "cicd.pipeline.result", "error.type"];
pub const RULE_KEYS: [&str; 6] = [
    "cicd.pipeline.task.name",
    "cicd.pipeline.task.type",
    "cicd.pipeline.task.run.id",
    "cicd.pipeline.task.run.result",
    "test.case.name",
    "test.case.result.status",
];
/// Span status ERROR, as the OTLP enum's number.
const STATUS_ERROR: i32 = 2;
/// Resource keys, each with how its value must relate to the resource.
pub const RESOURCE_KEYS: [&str; 9] = [
    "cicd.pipeline.name",
    "cicd.pipeline.run.id",
    "cicd.worker.id",
    "cicd.worker.name",
    "vcs.repository.url.full",
    "vcs.provider.name",
    "vcs.ref.head.name",
    "vcs.ref.head.type",
    "vcs.ref.head.revision",
];

/// What a span must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The root: the action, then the result and error type if decided.
    Root {
        result: Option<(String, Option<String>)>,
    },
    /// A rule span: the task of its `ct.rule_type` and `ct.target`, its
    /// span id as run id, its result where the build decides it.
    Rule { build_succeeded: bool },
    /// A phase of the root: `error.type` (and status ERROR) when the build
    /// stopped in it.
    Phase { stopped_in: Option<String> },
    /// Anything else (sub-phases): nothing.
    Other,
}

/// The phase a failed build stopped in, if `phase` (a child of the root)
/// is it: the last phase of the reference, which the result names.
pub fn stopped_in(result: Option<&(String, Option<String>)>, phase: &RefSpan) -> Option<String> {
    let (_, Some(last)) = result? else {
        return None;
    };
    (phase.name.strip_prefix("phase.") == Some(last.as_str())).then(|| last.clone())
}

/// `test.case.name` read off a test rule's target: its file name up to the
/// CAS hash (`_` and 64 hex digits), or up to `.exe`, or without
/// `.result`, whichever comes first.
fn test_case_name(target: &str) -> String {
    let file = target.rsplit('/').next().unwrap_or(target);
    let bytes = file.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let hash = bytes.get(i + 1..i + 65);
        if *b == b'_'
            && hash.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
            && bytes.get(i + 65) == Some(&b'.')
        {
            return file[..i].to_owned();
        }
    }
    let file = file.strip_suffix(".result").unwrap_or(file);
    file.split(".exe").next().unwrap_or(file).to_owned()
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// The result the reference's phases decide: its last top-level phase
/// (children of the root without `ct.rule_type`, by start time) is
/// `postbuild_scripts` → success; otherwise, with a `prebuild_scripts`
/// phase, failure in the last phase; else none.
pub fn expected_result(reference: &Trace) -> Option<(String, Option<String>)> {
    let root = reference.root()?;
    let mut phases: Vec<&RefSpan> = reference
        .spans
        .iter()
        .filter(|s| s.parent_id == root.span_id && !s.attributes.contains_key("ct.rule_type"))
        .collect();
    phases.sort_by_key(|s| s.start);
    let names: Vec<&str> = phases
        .iter()
        .map(|s| s.name.trim_start_matches("phase."))
        .collect();
    match names.last()? {
        &"postbuild_scripts" => Some(("success".into(), None)),
        last if names.contains(&"prebuild_scripts") => Some(("failure".into(), Some((*last).to_owned()))),
        _ => None,
    }
}

fn str_attr<'a>(m: &'a BTreeMap<String, Attr>, k: &str) -> Option<&'a str> {
    match m.get(k) {
        Some(Attr::Str(s)) => Some(s),
        _ => None,
    }
}

/// Checks our span's trailing semantic-convention keys against `role` and
/// returns the span without them.
pub fn undo_span(
    key: &(String, String),
    o: &RefSpan,
    role: &Role,
    tally: &mut Tally,
    d: &mut String,
) -> RefSpan {
    let all: Vec<&str> = ROOT_KEYS.iter().chain(&RULE_KEYS).copied().collect();
    let failed_in = match role {
        Role::Root {
            result: Some((_, Some(phase))),
        } => Some(phase.clone()),
        Role::Phase { stopped_in } => stopped_in.clone(),
        _ => None,
    };
    let want_status = failed_in.as_ref().map_or((0, String::new()), |p| {
        (STATUS_ERROR, format!("build failed in {p}"))
    });
    if o.status != want_status {
        let _ = writeln!(d, "{key:?}: status {:?} != expected {want_status:?}", o.status);
    }
    let tail = o
        .attribute_order
        .iter()
        .rev()
        .take_while(|k| all.contains(&k.as_str()))
        .count();
    let split = o.attribute_order.len() - tail;
    let found: Vec<&str> = o.attribute_order[split..].iter().map(String::as_str).collect();
    let elsewhere = o.attribute_order[..split]
        .iter()
        .any(|k| all.contains(&k.as_str()));
    let get = |k: &str| str_attr(&o.attributes, k);
    let want: Vec<(&str, String)> = match role {
        Role::Root { result } => {
            let mut w = vec![(ROOT_KEYS[0], "BUILD".to_owned())];
            if let Some((result, error)) = result {
                w.push((ROOT_KEYS[1], result.clone()));
                if let Some(e) = error {
                    w.push((ROOT_KEYS[2], e.clone()));
                }
            }
            w
        }
        Role::Rule { build_succeeded } => {
            let mut w = Vec::new();
            let target = get("ct.target").filter(|t| !t.is_empty());
            if let Some(target) = target {
                w.push((RULE_KEYS[0], target.to_owned()));
            }
            let test = get("ct.rule_type") == Some("test");
            w.push((RULE_KEYS[1], if test { "test" } else { "build" }.to_owned()));
            w.push((RULE_KEYS[2], hex(&o.span_id)));
            // A recorded rule finished its command; a test's own exit code
            // only shows in the build's success.
            if !test || *build_succeeded {
                w.push((RULE_KEYS[3], "success".to_owned()));
            }
            if let (true, true, Some(target)) = (test, *build_succeeded, target) {
                w.push((RULE_KEYS[4], test_case_name(target)));
                w.push((RULE_KEYS[5], "pass".to_owned()));
            }
            w
        }
        Role::Phase {
            stopped_in: Some(phase),
        } => vec![(ROOT_KEYS[2], phase.clone())],
        Role::Phase { stopped_in: None } | Role::Other => Vec::new(),
    };
    let got: Vec<(&str, String)> = found
        .iter()
        .map(|k| {
            (
                *k,
                get(k)
                    .map(str::to_owned)
                    .unwrap_or_else(|| "<not a string>".into()),
            )
        })
        .collect();
    if elsewhere || got != want {
        let _ = writeln!(
            d,
            "{key:?}: semantic-convention keys {got:?} (trailing) != expected {want:?}{}",
            if elsewhere {
                ", and some are not trailing"
            } else {
                ""
            }
        );
        return o.clone();
    }
    if found.is_empty() && failed_in.is_none() {
        return o.clone();
    }
    let mut plain = o.clone();
    plain.status = (0, String::new());
    plain.attribute_order.truncate(split);
    for k in found {
        plain.attributes.remove(k);
    }
    tally.add(intended::SEMCONV, 1);
    plain
}

/// Checks our resource's semantic-convention keys for a request that
/// passed no pipeline name and no VCS data (the corpus requests): the run
/// id is `ct.invocation_id` (traces) or absent (metrics: opt-in by the
/// conventions), the worker is `host.name`, nothing else. Returns the
/// resource without them.
pub fn undo_resource(
    ours: &BTreeMap<String, Attr>,
    metrics: bool,
    tally: &mut Tally,
    d: &mut String,
) -> BTreeMap<String, Attr> {
    let host = str_attr(ours, "host.name").map(str::to_owned);
    let mut want: BTreeMap<&str, Option<String>> = BTreeMap::new();
    want.insert("cicd.worker.id", host.clone());
    want.insert("cicd.worker.name", host);
    if !metrics {
        want.insert(
            "cicd.pipeline.run.id",
            str_attr(ours, "ct.invocation_id").map(str::to_owned),
        );
    }
    let got: BTreeMap<&str, Option<String>> = RESOURCE_KEYS
        .iter()
        .filter(|k| ours.contains_key(**k))
        .map(|k| (*k, str_attr(ours, k).map(str::to_owned)))
        .collect();
    if got != want {
        let _ = writeln!(
            d,
            "resource semantic-convention keys {got:?} != expected {want:?}"
        );
    }
    let mut plain = ours.clone();
    for k in RESOURCE_KEYS {
        if plain.remove(k).is_some() {
            tally.add(intended::SEMCONV, 1);
        }
    }
    plain
}
