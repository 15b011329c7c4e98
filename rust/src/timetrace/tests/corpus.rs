//! The rollup of each corpus build equals ClangBuildAnalyzer's analysis of
//! the same traces (`clangbuildanalyzer-analyze.txt`), list by list.

use std::collections::BTreeMap;
use std::path::Path;

use super::cba_text::{self, Analysis, Entry, Section};
use super::{corpus_dir, json_files};
use crate::timetrace::{parse_trace, read_trace, Rollup, TraceLimits, TuTimes};

const LISTS: [&str; 8] = [
    "Files that took longest to parse (compiler frontend)",
    "Files that took longest to codegen (compiler backend)",
    "Templates that took longest to instantiate",
    "Template sets that took longest to instantiate",
    "Functions that took longest to compile",
    "Function sets that took longest to compile / optimize",
    "Expensive headers",
    "Time summary",
];

/// Lines where ours differ from ClangBuildAnalyzer's on purpose (ours,
/// theirs): `cpp_demangle` drops the first parameter of a constructor with
/// template arguments (see `names::demangle`). Each must be met.
const DEMANGLER_DIFFERENCES: [(&str, &str); 2] = [
    (
        "std::_Optional_payload_base<$>::_Storage<$>::_Storage<$>(geom::Polyg... (1 times, avg 4 ms)",
        "std::_Optional_payload_base<$>::_Storage<$>::_Storage<$>(std::in_pla... (1 times, avg 4 ms)",
    ),
    (
        "std::_Optional_payload_base<$>::_Optional_payload_base<$>(geom::Vec2... (1 times, avg 4 ms)",
        "std::_Optional_payload_base<$>::_Optional_payload_base<$>(std::in_pl... (1 times, avg 4 ms)",
    ),
];

/// Our entries with the known demangler differences turned into
/// ClangBuildAnalyzer's text, and how many were.
fn with_known_differences(section: &Section) -> (Section, usize) {
    let mut used = 0;
    let entries = section
        .entries
        .iter()
        .map(
            |e| match DEMANGLER_DIFFERENCES.iter().find(|(ours, _)| *ours == e.text) {
                Some((_, theirs)) => {
                    used += 1;
                    Entry {
                        ms: e.ms,
                        text: (*theirs).to_owned(),
                    }
                }
                None => e.clone(),
            },
        )
        .collect();
    (
        Section {
            title: section.title.clone(),
            entries,
        },
        used,
    )
}

/// The rollup of one case's traces, each named by its path from the case
/// directory as ClangBuildAnalyzer was run there, and every TU's times.
fn rollup_case(case: &Path) -> (String, Vec<(String, TuTimes)>) {
    let mut rollup = Rollup::default();
    let mut times = Vec::new();
    let files = json_files(&case.join("traces"));
    assert!(!files.is_empty(), "no traces in {}", case.display());
    for file in files {
        let unit =
            read_trace(&file, &TraceLimits::default()).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(
            unit.warnings.total(),
            0,
            "{}: {:?}",
            file.display(),
            unit.warnings
        );
        let name = file
            .strip_prefix(case)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        times.push((name.clone(), rollup.add(&name, &unit)));
    }
    (rollup.report().to_string(), times)
}

/// Entries of equal milliseconds in a run, as a sorted list: ClangBuildAnalyzer
/// orders exact ties by an internal index, which this cannot reproduce.
fn tie_groups(entries: &[Entry]) -> Vec<(i64, Vec<&str>)> {
    let mut groups: Vec<(i64, Vec<&str>)> = Vec::new();
    for e in entries {
        match groups.last_mut() {
            Some((ms, texts)) if *ms == e.ms => texts.push(&e.text),
            _ => groups.push((e.ms, vec![&e.text])),
        }
    }
    for (_, texts) in &mut groups {
        texts.sort_unstable();
    }
    groups
}

/// How far one list agrees: entries in the same place with the same
/// milliseconds and text, out of ClangBuildAnalyzer's entries.
struct Agreement {
    same_place: usize,
    entries: usize,
    known_differences: usize,
}

fn compare_list(case: &str, theirs: &Section, ours: Option<&Section>) -> Agreement {
    let ours = ours.unwrap_or_else(|| panic!("{case}: no section {:?} in ours", theirs.title));
    let (ours, known_differences) = with_known_differences(ours);
    let same_place = theirs
        .entries
        .iter()
        .zip(&ours.entries)
        .filter(|(a, b)| a == b)
        .count();
    assert_eq!(
        tie_groups(&ours.entries),
        tie_groups(&theirs.entries),
        "{case}: {:?} differs",
        theirs.title
    );
    Agreement {
        same_place,
        entries: theirs.entries.len(),
        known_differences,
    }
}

fn compare_case(case_name: &str) -> BTreeMap<&'static str, Agreement> {
    let case = corpus_dir().join(case_name);
    let reference = std::fs::read_to_string(case.join("clangbuildanalyzer-analyze.txt"))
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
    let theirs: Analysis = cba_text::parse(&reference);
    let (text, times) = rollup_case(&case);
    let ours = cba_text::parse(&text);

    assert!(
        theirs.compilations.is_some(),
        "{case_name}: reference has no summary"
    );
    assert_eq!(
        ours.compilations, theirs.compilations,
        "{case_name}: compilations"
    );
    assert_eq!(ours.frontend_s, theirs.frontend_s, "{case_name}: frontend total");
    assert_eq!(ours.backend_s, theirs.backend_s, "{case_name}: backend total");
    let frontend: i64 = times.iter().map(|(_, t)| t.frontend_us).sum();
    assert_eq!(
        format!("{:.1}", frontend as f64 / 1e6),
        theirs.frontend_s.clone().unwrap_or_default()
    );

    let titles: Vec<&str> = theirs.sections.iter().map(|s| s.title.as_str()).collect();
    let our_titles: Vec<&str> = ours.sections.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(our_titles, titles, "{case_name}: sections");
    let mut agreement = BTreeMap::new();
    for title in LISTS {
        let Some(section) = theirs.section(title) else {
            continue;
        };
        if title == "Time summary" {
            continue;
        }
        assert!(
            !section.entries.is_empty(),
            "{case_name}: empty {title:?} in the reference"
        );
        agreement.insert(title, compare_list(case_name, section, ours.section(title)));
    }
    // Every TU's frontend time is the one the parse list shows for it.
    if let Some(parse_list) = theirs.section(LISTS[0]) {
        for e in &parse_list.entries {
            let tu = times.iter().find(|(name, _)| *name == e.text);
            assert_eq!(
                tu.map(|(_, t)| t.frontend_us / 1000),
                Some(e.ms),
                "{case_name}: {}",
                e.text
            );
        }
    }
    agreement
}

fn print_agreement(case: &str, agreement: &BTreeMap<&str, Agreement>) {
    for (title, a) in agreement {
        println!(
            "{case}: {title}: {}/{} in the same place, {} known demangler difference(s)",
            a.same_place, a.entries, a.known_differences
        );
    }
}

#[test]
fn shake_build_equals_clangbuildanalyzer() {
    let agreement = compare_case("geom-shake-cold");
    print_agreement("geom-shake-cold", &agreement);
    assert_eq!(agreement.len(), 7);
    // Byte for byte, ties included: no exception needed on this build.
    assert!(agreement
        .values()
        .all(|a| a.same_place == a.entries && a.known_differences == 0));
}

/// The whole text, but for ClangBuildAnalyzer's first line (which names its
/// data file) and its last (its own run time).
#[test]
fn shake_build_text_is_clangbuildanalyzers() {
    let case = corpus_dir().join("geom-shake-cold");
    let reference = std::fs::read_to_string(case.join("clangbuildanalyzer-analyze.txt"))
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
    let lines: Vec<&str> = reference.lines().collect();
    assert!(lines.len() > 100 && lines[0].starts_with("Analyzing build trace"));
    assert!(lines[lines.len() - 1].trim_start().starts_with("done in"));
    let expected: String = lines[1..lines.len() - 1]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    let (text, _) = rollup_case(&case);
    assert_eq!(text, expected);
}

#[test]
fn ninja_build_equals_clangbuildanalyzer() {
    let agreement = compare_case("geom-ninja-cold");
    print_agreement("geom-ninja-cold", &agreement);
    assert_eq!(agreement.len(), 7);
    let known: usize = agreement.values().map(|a| a.known_differences).sum();
    assert_eq!(
        known,
        DEMANGLER_DIFFERENCES.len(),
        "every known difference is met once"
    );
}

#[test]
fn a_corpus_trace_has_its_wall_clock_origin_and_span() {
    let case = corpus_dir().join("geom-shake-cold");
    let file = json_files(&case.join("traces"))
        .into_iter()
        .find(|f| f.to_string_lossy().contains("util_9ccc0c05943c"))
        .unwrap_or_else(|| panic!("no util_9ccc0c05943c trace"));
    let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{e}"));
    let unit = parse_trace(&bytes, &TraceLimits::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unit.beginning_of_time_us, Some(1_796_160_117_972_019));
    // ExecuteCompiler: ts 37, dur 464766.
    assert_eq!(
        unit.compile_span_us(),
        Some((1_796_160_117_972_019 + 37, 1_796_160_117_972_019 + 37 + 464_766))
    );
    // Two Frontend events (422255 + 11717 µs) merged into one.
    assert_eq!(unit.times().frontend_us, 422_255 + 11_717);
    assert_eq!(unit.times().backend_us, 25_654);
}
