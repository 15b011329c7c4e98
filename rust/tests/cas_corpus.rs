//! Every corpus case's `cas-listing.txt`, recreated as sparse files and
//! scanned, against what `ct-cache-report --json` printed for the real
//! stores (`cache-report.json`).
//!
//! A listing holds names and sizes, not contents. Object bucket keys live in
//! the file names, so obj stores are compared on all five numbers. Manifest
//! contents are lost: the recreated exe manifests are all-zero bytes,
//! invalid JSON, so every exe entry gets `<unknown:<basename>:<suffix>>`.
//! That reproduces the real buckets exactly when each (basename, suffix)
//! occurs once and the report has one bucket per entry; where it does not,
//! [`EXPECTATIONS`] says so per case and gives the numbers the unknown keys
//! must produce instead. Totals (entries, bytes) are always compared. The
//! corpus has no pch/pcm stores.

use crate::cas_support;

use cas_support::{case_name, cases, materialize, parse_listing, read_json, reported, Five};
use compiletools_core::cas::{scan_store, CasKind};
use compiletools_core::CancelToken;

/// What a recreated store must give, beyond the report's totals.
#[derive(Debug, Clone, Copy)]
enum Buckets {
    /// All five numbers equal the report.
    AsReported,
    /// Bucket numbers differ from the report because manifests are lost;
    /// these are the numbers the unknown keys give.
    UnknownKeys {
        unique_buckets: u64,
        duplicate_groups: u64,
        wasted_bytes: u64,
    },
}

struct Expectation {
    case: &'static str,
    obj: Buckets,
    exe: Buckets,
    note: &'static str,
}

const SINGLE_EXE: &str = "each exe basename occurs once; unknown keys partition like the real source paths";

/// One row per corpus case: a new case fails the test until it is added.
const EXPECTATIONS: &[Expectation] = &[
    Expectation {
        case: "01-geom-shake-cold",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: SINGLE_EXE,
    },
    Expectation {
        case: "02-geom-shake-noop",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: SINGLE_EXE,
    },
    Expectation {
        case: "03-geom-shake-ccache-hit",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: SINGLE_EXE,
    },
    Expectation {
        case: "04-geom-shake-shared-cas-clone",
        obj: Buckets::AsReported,
        // Two clones (/home/dev/src/geom and …/geom-clone) linked every
        // executable into the shared store: 5 basenames × 2 link keys whose
        // manifests (e.g. 61 vs 67 bytes for geomtool) name different
        // source_realpath values, so the report has 10 buckets and no
        // duplicates. With the manifests lost, each pair shares one
        // <unknown:basename:.exe> key: 5 buckets, 5 groups, and the pairs
        // have equal sizes, so the waste is one copy of each:
        // 625616 + 416464 + 406536 + 32424 + 310592.
        exe: Buckets::UnknownKeys {
            unique_buckets: 5,
            duplicate_groups: 5,
            wasted_bytes: 1_791_632,
        },
        note: "exe buckets need manifest contents",
    },
    Expectation {
        case: "06-geom-shake-noop-stale-statslog",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: SINGLE_EXE,
    },
    Expectation {
        case: "07-geom-shake-metrics-as-spans",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: SINGLE_EXE,
    },
    Expectation {
        case: "09-textkit-shake-no-ccache",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: SINGLE_EXE,
    },
    Expectation {
        case: "10-textkit-broken-shake-compile-error",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: "failed build: obj shards holding only .o.lock files, empty exe shards (all zeros)",
    },
    Expectation {
        case: "12-geom-ninja-cold-native-flock",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: SINGLE_EXE,
    },
    Expectation {
        case: "14-geom-ninja-lockhelper-cold",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: SINGLE_EXE,
    },
    Expectation {
        case: "16-geom-make-cold-native-flock",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: SINGLE_EXE,
    },
    Expectation {
        case: "17-geom-make-lockhelper-cold",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: SINGLE_EXE,
    },
    Expectation {
        case: "19-geom-cmake-cold",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: "obj cell holds only a cmake build tree (no shard: zeros); exe cell absent but requested \
               explicitly: exists=false and zeros, as reported",
    },
    Expectation {
        case: "21-geom-shake-concurrent-peer-b",
        obj: Buckets::AsReported,
        exe: Buckets::AsReported,
        note: SINGLE_EXE,
    },
];

#[test]
fn listings_reproduce_cache_reports() {
    let cases = cases();
    assert!(!cases.is_empty(), "no corpus case");
    let names: Vec<String> = cases.iter().map(|c| case_name(c)).collect();
    let listed: Vec<&str> = EXPECTATIONS.iter().map(|e| e.case).collect();
    assert_eq!(
        names, listed,
        "EXPECTATIONS must have exactly one row per corpus case"
    );

    let cancel = CancelToken::new();
    let mut compared = 0;
    for (case, expect) in cases.iter().zip(EXPECTATIONS) {
        let listing = std::fs::read_to_string(case.join("cas-listing.txt")).unwrap();
        let report = read_json(&case.join("cache-report.json"));
        let tmp = tempfile::tempdir().unwrap();
        let stores = parse_listing(&listing);
        assert!(!stores.is_empty(), "{}: no store in listing", expect.case);
        for (i, store) in stores.iter().enumerate() {
            let cell = tmp.path().join(format!("{i}-{}", store.kind)).join("cell");
            if !store.absent {
                materialize(store, &cell);
            }
            let stats = scan_store(store.kind, &cell, &cancel).unwrap();
            assert_eq!(stats.exists, !store.absent, "{} {}", expect.case, store.kind);
            let want = reported(&report, store.kind)
                .unwrap_or_else(|| panic!("{}: {} listed but not in the report", expect.case, store.kind));
            let got = Five::from(&stats);
            let buckets = match store.kind {
                CasKind::Obj => expect.obj,
                CasKind::Exe => expect.exe,
                other => panic!("{}: unexpected {other} store; add a rule", expect.case),
            };
            let want = match buckets {
                Buckets::AsReported => want,
                Buckets::UnknownKeys {
                    unique_buckets,
                    duplicate_groups,
                    wasted_bytes,
                } => Five {
                    unique_buckets,
                    duplicate_groups,
                    wasted_bytes,
                    ..want
                },
            };
            assert_eq!(
                got, want,
                "{} {} ({}): {:?}",
                expect.case, store.kind, expect.note, stats.warnings
            );
            // Sparse manifests are invalid JSON: counted, never a crash.
            if store.kind == CasKind::Exe {
                assert_eq!(
                    stats.anomalies.manifests_invalid, stats.total_entries,
                    "{}",
                    expect.case
                );
            }
            let why = match (store.kind, buckets) {
                (CasKind::Obj, _) => "bucket keys are in the file names",
                (_, Buckets::AsReported) => expect.note,
                (_, Buckets::UnknownKeys { .. }) => "totals as reported, buckets from unknown keys",
            };
            println!(
                "PASS {} {}: {got:?} ({why}; case: {})",
                expect.case, store.kind, expect.note
            );
            compared += 1;
        }
    }
    assert!(
        compared >= 28,
        "expected obj and exe stores in every case, compared {compared}"
    );
}

/// The numbers in cache-report.json and in the gauges ct-cache-report sent
/// agree, so comparing with either is the same check.
#[test]
fn reports_agree_with_reference_gauges() {
    for case in cases() {
        let path = case.join("reference-cache-report").join("001-metrics.json");
        if !path.is_file() {
            continue;
        }
        let report = read_json(&case.join("cache-report.json"));
        let metrics = read_json(&path);
        let metrics = &metrics["resourceMetrics"][0]["scopeMetrics"][0]["metrics"];
        for m in metrics.as_array().unwrap() {
            for p in m["gauge"]["dataPoints"].as_array().unwrap() {
                let kind =
                    CasKind::parse(p["attributes"][0]["value"]["stringValue"].as_str().unwrap()).unwrap();
                let five = reported(&report, kind).unwrap();
                let want = match m["name"].as_str().unwrap() {
                    "ct.cas.total_bytes" => five.total_bytes,
                    "ct.cas.total_entries" => five.total_entries,
                    "ct.cas.unique_buckets" => five.unique_buckets,
                    "ct.cas.wasted_bytes" => five.wasted_bytes,
                    "ct.cas.duplicate_groups" => five.duplicate_groups,
                    other => panic!("unexpected metric {other}"),
                };
                assert_eq!(
                    p["asInt"].as_str().unwrap(),
                    want.to_string(),
                    "{} {}",
                    case_name(&case),
                    m["name"]
                );
            }
        }
    }
}
