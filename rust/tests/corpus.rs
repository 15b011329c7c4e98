//! Differential test: every corpus case with a reference trace from
//! ct-cake's own exporter must give the same trace (common/reference.rs
//! lists what may differ and why).

mod common;

use common::reference::{cases_with_reference, check_case};

#[test]
fn every_corpus_case_matches_its_reference() {
    let cases = cases_with_reference();
    assert!(!cases.is_empty(), "no corpus case with a reference trace");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        match check_case(case) {
            Ok(summary) => println!("PASS {name}: {summary}"),
            Err(diffs) => {
                println!("FAIL {name}:\n{diffs}");
                failures.push(name);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "cases differing from their reference: {failures:?}"
    );
}

/// The helper itself must notice each kind of difference it claims to check.
#[test]
fn helper_detects_differences() {
    use common::reference::{compare, decode_ours, load_reference, request_for, Attr};
    use compiletools_core::{process_build, CancelToken};

    let case = cases_with_reference()
        .into_iter()
        .find(|c| c.ends_with("01-geom-shake-cold"))
        .expect("case 01");
    let reference = load_reference(&case);
    let out = process_build(&request_for(&case, &reference), &CancelToken::new()).unwrap();
    let ours = decode_ours(out.traces.as_deref().unwrap());
    assert_eq!(compare(&reference, &ours, &out.summary), "");

    let rule = ours
        .spans
        .iter()
        .position(|s| s.name.starts_with("compile."))
        .unwrap();
    let phase = ours
        .spans
        .iter()
        .position(|s| s.name == "phase.target_discovery")
        .unwrap();
    type Mutation = Box<dyn Fn(&mut common::reference::Trace)>;
    let mutations: Vec<(&str, Mutation)> = vec![
        ("time", Box::new(move |t| t.spans[rule].start += 60_000)),
        (
            "parent",
            Box::new(move |t| t.spans[rule].parent_id = t.spans[phase].span_id.clone()),
        ),
        ("name", Box::new(move |t| t.spans[rule].name.push('x'))),
        (
            "attribute",
            Box::new(move |t| {
                t.spans[rule]
                    .attributes
                    .insert("cas.hit".into(), Attr::Bool(true));
            }),
        ),
        (
            "resource",
            Box::new(|t| {
                t.resource
                    .insert("ct.backend".into(), Attr::Str("make".into()));
            }),
        ),
        (
            "missing span",
            Box::new(move |t| {
                t.spans.remove(phase);
            }),
        ),
    ];
    for (what, mutate) in mutations {
        let mut changed = ours.clone();
        mutate(&mut changed);
        assert_ne!(
            compare(&reference, &changed, &out.summary),
            "",
            "a changed {what} went unnoticed"
        );
    }
}

/// The one tolerated span difference: a reference rule outside the root
/// window ±1 s, which we skip as unanchored (DESIGN §2 fix 3).
#[test]
fn helper_tolerates_only_documented_unanchored_rules() {
    use common::reference::{compare, decode_ours, load_reference, request_for};
    use compiletools_core::{process_build, CancelToken};

    let case = cases_with_reference()
        .into_iter()
        .find(|c| c.ends_with("16-geom-make-cold-native-flock"))
        .expect("case 16");
    let reference = load_reference(&case);
    let out = process_build(&request_for(&case, &reference), &CancelToken::new()).unwrap();
    let ours = decode_ours(out.traces.as_deref().unwrap());

    let root_end = reference
        .spans
        .iter()
        .find(|s| s.parent_id.is_empty())
        .unwrap()
        .end;
    let mut shifted = reference.clone();
    let i = shifted
        .spans
        .iter()
        .position(|s| s.name.starts_with("link."))
        .unwrap();
    let name = shifted.spans[i].name.clone();
    shifted.spans[i].start = root_end + 5_000_000_000;
    shifted.spans[i].end = root_end + 6_000_000_000;
    let mut fewer = ours.clone();
    fewer.spans.retain(|s| s.name != name);
    let mut summary = out.summary.clone();
    summary.spans -= 1;
    summary.unanchored_rules = 1;
    assert_eq!(compare(&shifted, &fewer, &summary), "");
    // Not counted as unanchored by us: a difference.
    summary.unanchored_rules = 0;
    assert_ne!(compare(&shifted, &fewer, &summary), "");
    // A missing rule that is inside the window: a difference.
    summary.unanchored_rules = 1;
    assert_ne!(compare(&reference, &fewer, &summary), "");
}
