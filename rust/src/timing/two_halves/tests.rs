//! The split decode against the decode in one piece: same model slot for
//! slot, same warnings, same errors, the text given back unchanged.

use std::path::{Path, PathBuf};

use memchr::memmem;
use serde_json::{json, Value};

use super::*;
use crate::timing::decode::decode as decode_whole;
use crate::timing::decode_owned;

/// Everything the model says, slot by slot (table positions of strings
/// and metadata differ between the two decodes and say nothing).
fn canonical(b: &Build) -> Vec<String> {
    let mut out = vec![format!(
        "{:?} {:?} {:?} {:?} {:?} root={}",
        b.timestamp,
        b.total_elapsed_s.map(f64::to_bits),
        b.variant,
        b.backend,
        b.start_s.map(f64::to_bits),
        b.first_root
    )];
    for (i, e) in b.events.iter().enumerate() {
        let meta: Vec<String> = b
            .meta
            .get(e.metadata.range())
            .unwrap_or_default()
            .iter()
            .map(|m| format!("{}={:?}", b.str(m.key), b.value(m.value)))
            .collect();
        out.push(format!(
            "{i} idx={} rule={} name={:?} type={:?} target={:?} source={:?} start={} end={} child={} next={} meta={meta:?}",
            e.index,
            e.is_rule,
            b.str(e.name),
            b.str(e.rule_type),
            b.str(e.target),
            b.str(e.source),
            e.start.to_bits(),
            e.end.to_bits(),
            e.first_child,
            e.next_sibling,
        ));
    }
    out
}

type Outcome = Result<(Vec<String>, Vec<String>), String>;

fn whole(text: &str, limits: &Limits) -> Outcome {
    let mut w = Warnings::new();
    decode_whole(
        text,
        Path::new("t/timing.json"),
        limits,
        &CancelToken::new(),
        &mut w,
    )
    .map(|b| (canonical(&b), w.into_lines()))
    .map_err(|e| e.to_string())
}

/// The split decode cut at the first boundary from `from` on: `None` when
/// it declined (the caller would decode in one piece). Checks that the
/// text is given back unchanged either way.
fn split_from(text: &str, from: usize, limits: &Limits) -> Option<Outcome> {
    let mut owned = text.to_owned();
    let result = decode_with(
        &mut owned,
        |t| split::prepare_at(t, from),
        limits,
        &CancelToken::new(),
    );
    assert_eq!(owned, text, "text not restored (cut from {from})");
    match result {
        Ok(Some((b, w))) => Some(Ok((canonical(&b), w.into_lines()))),
        Ok(None) | Err(PartFailed::NotDecoded) => None,
        Err(PartFailed::Cancelled) => Some(Err("cancelled".to_owned())),
    }
}

/// Every cut of `text` the splitter takes gives what the whole decode
/// gives; returns how many cuts were taken.
fn every_cut_matches(text: &str, limits: &Limits) -> usize {
    let want = whole(text, limits);
    let mut taken = 0;
    for from in memmem::find_iter(text.as_bytes(), b"},\n") {
        if let Some(got) = split_from(text, from, limits) {
            assert_eq!(got, want, "cut from {from}");
            taken += 1;
        }
    }
    taken
}

fn pretty(v: &Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"  ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(v, &mut ser).expect("serialises");
    String::from_utf8(out).expect("UTF-8")
}

/// A build shaped like compiletools' with `n` rules of every kind of
/// content the model stores, then `rules` and `phase` edited by the caller.
fn build_doc(n: usize, edit: impl Fn(usize, &mut Value)) -> String {
    let rules: Vec<Value> = (0..n)
        .map(|i| {
            let mut r = json!({
                "name": format!("unit{i:04}.cpp"),
                "elapsed_s": 0.25 + i as f64 / 1e6,
                "rule_type": if i % 7 == 3 { "link" } else { "compile" },
                "target": format!("/ws/obj/unit{i:04}.o"),
                "source": format!("/ws/src/ünit{i:04}.cpp"),
                "metadata": {
                    "cas.hit": i % 2 == 0,
                    "cas.bytes_reused": i * 10,
                    "queue_wait_s": 0.001 * i as f64,
                    "flags": ["-O2", "-g\t\"q\""],
                    "ints": [1, 2, i],
                    "mixed": [1, "a"],
                    "cas.kind": "obj"
                },
                "start_s": 100.0 + i as f64,
                "end_s": 100.25 + i as f64
            });
            if i % 5 == 1 {
                r["children"] = json!([{"name": "sub", "rule_type": "step", "start_s": 1.0, "end_s": 2.0, "children": [{"name": "subsub", "rule_type": "x"}]}]);
            }
            edit(i, &mut r);
            r
        })
        .collect();
    pretty(&json!({
        "version": 1,
        "timestamp": "2026-01-01T00:00:00+00:00",
        "total_elapsed_s": 9.5,
        "variant": "v",
        "backend": "shake",
        "start_s": 99.0,
        "phases": [
            {"name": "discovery", "start_s": 99.0, "end_s": 99.5},
            {"name": "build_execution", "elapsed_s": 1.0, "start_s": 99.5, "end_s": 200.0, "rules": rules},
            {"name": "postbuild_scripts", "start_s": 200.0, "end_s": 200.1}
        ],
        "trailing": {"k": [1, 2]}
    }))
}

fn corpus_timing_files() -> Vec<PathBuf> {
    let root = std::env::var_os("CT_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    let mut found = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if entry.file_name() == "timing.json" {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn every_cut_of_every_corpus_build_gives_the_whole_decode() {
    let files = corpus_timing_files();
    if files.is_empty() {
        assert!(
            std::env::var("CI").is_err(),
            "no corpus under CT_CORPUS_DIR or ../shared/corpus"
        );
        return;
    }
    let mut taken = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).expect("corpus file");
        taken += every_cut_matches(&text, &Limits::default());
    }
    assert!(
        taken >= files.len(),
        "{taken} cuts taken over {} files",
        files.len()
    );
}

#[test]
fn every_cut_of_a_varied_build_gives_the_whole_decode() {
    // Warnings in the part before the cut (a rule without a name, a wrong
    // type) are the first part's and keep their place.
    let text = build_doc(40, |i, r| {
        if i == 2 {
            r.as_object_mut().map(|o| o.remove("name"));
        }
        if i == 4 {
            r["target"] = json!(5);
        }
    });
    let taken = every_cut_matches(&text, &Limits::default());
    assert!(taken > 20, "{taken} cuts taken");
    assert!(whole(&text, &Limits::default()).is_ok_and(|(_, w)| w.len() == 2));
}

#[test]
fn a_warning_after_the_cut_declines_and_the_whole_decode_reports_it() {
    let text = build_doc(40, |i, r| {
        if i == 35 {
            r["start_s"] = json!("late");
        }
    });
    let cut = text.find("unit0030").expect("rule 30");
    assert_eq!(split_from(&text, cut, &Limits::default()), None);
    // Cut after it: taken, and the warning is the first part's.
    let after = text.find("unit0036").expect("rule 36");
    let want = whole(&text, &Limits::default());
    assert!(want.as_ref().is_ok_and(|(_, w)| w.len() == 1), "{want:?}");
    assert_eq!(split_from(&text, after, &Limits::default()), Some(want));
}

#[test]
fn the_marker_in_the_file_itself_declines() {
    for at in [5, 30] {
        let mut v: Value = serde_json::from_str(&build_doc(40, |_, _| {})).expect("JSON");
        if let Some(rules) = v["phases"][1]["rules"].as_array_mut() {
            rules.insert(at, json!(split::MARKER));
        }
        let text = pretty(&v);
        let want = whole(&text, &Limits::default());
        assert!(want.as_ref().is_ok_and(|(_, w)| w.len() == 1), "{want:?}");
        // A cut before the file's marker finds it in the second part (a
        // warning there), a cut after it sees two markers: all decline.
        assert_eq!(every_cut_matches(&text, &Limits::default()), 0);
    }
}

#[test]
fn limits_crossed_only_by_both_parts_decline() {
    let text = build_doc(40, |_, _| {});
    let events = whole(&text, &Limits::default()).expect("decodes").0.len() - 1;
    let limits = Limits {
        max_events: events as u64 - 1,
        ..Limits::default()
    };
    assert!(whole(&text, &limits).is_err());
    let cut = text.find("unit0020").expect("rule 20");
    assert_eq!(split_from(&text, cut, &limits), None);
    let limits = Limits {
        max_events: events as u64,
        ..Limits::default()
    };
    assert!(split_from(&text, cut, &limits).is_some_and(|r| r.is_ok()));
    // Depth: the nested children reach depth 4 (phase 1, rule 2, sub 3,
    // subsub 4).
    let limits = Limits {
        max_depth: 3,
        ..Limits::default()
    };
    assert!(whole(&text, &limits).is_err());
    assert_eq!(split_from(&text, cut, &limits), None);
}

#[test]
fn malformed_after_the_cut_declines() {
    let text = build_doc(40, |_, _| {});
    let broken = text.replacen("\"unit0033.cpp\"", "\"unit0033.cpp\" \"x\"", 1);
    let cut = text.find("unit0020").expect("rule 20");
    assert_eq!(split_from(&broken, cut, &Limits::default()), None);
    assert!(whole(&broken, &Limits::default()).is_err());
}

#[test]
fn cancelled_is_cancelled_and_the_text_restored() {
    // Both parts hold more events than the decoder decodes between two
    // looks at the token, so each sees it.
    let text = build_doc(8000, |_, _| {});
    let cancel = CancelToken::new();
    cancel.cancel();
    let mut owned = text.clone();
    let r = decode(&mut owned, split::MIN_SPLIT_TEXT, &Limits::default(), &cancel);
    assert!(matches!(r, Err(PartFailed::Cancelled)));
    assert_eq!(owned, text);
}

#[test]
fn decode_owned_splits_a_large_file_and_gives_the_whole_decode() {
    let text = build_doc(8000, |_, _| {});
    assert!(text.len() >= split::MIN_SPLIT_TEXT, "{} bytes", text.len());
    let mut owned = text.clone();
    // The split is taken for this file (else this test would prove nothing).
    let r = decode(
        &mut owned,
        split::MIN_SPLIT_TEXT,
        &Limits::default(),
        &CancelToken::new(),
    );
    assert!(matches!(r, Ok(Some(_))));
    assert_eq!(owned, text);
    let mut w = Warnings::new();
    let got = decode_owned(
        &mut owned,
        Path::new("t/timing.json"),
        &Limits::default(),
        &CancelToken::new(),
        &mut w,
    )
    .map(|b| (canonical(&b), w.into_lines()))
    .map_err(|e| e.to_string());
    assert_eq!(got, whole(&text, &Limits::default()));
    assert_eq!(owned, text);
}

mod random {
    //! Random builds, randomly damaged: at every cut the split decode
    //! either declines or gives exactly the whole decode's result.

    use proptest::prelude::*;

    use super::*;

    /// One rule of a random build: each field present, absent or of a
    /// wrong type, nested children, metadata of every kind.
    fn rule() -> impl Strategy<Value = Value> {
        let name = prop_oneof![
            40 => "[a-zé/._\\\\\"\\n]{0,12}".prop_map(Value::from),
            1 => Just(Value::Null),
            1 => Just(json!(7)),
            1 => Just(json!(split::MARKER)),
        ];
        let number = prop_oneof![
            40 => (0.0f64..1e4).prop_map(Value::from),
            1 => Just(json!("x")),
            1 => Just(Value::Null),
        ];
        let meta = prop::collection::vec(
            (
                "[a-c.]{1,3}",
                prop_oneof![
                    Just(json!(true)),
                    (-5i64..5).prop_map(Value::from),
                    "[a-z\u{e9}]{0,4}".prop_map(Value::from),
                    Just(json!([1, 2])),
                    Just(json!(["a", "b\u{1F600}"])),
                    Just(json!([1, "a"])),
                    Just(json!({"k": 1})),
                ],
            ),
            0..4,
        );
        (name, number.clone(), number, meta, any::<u8>()).prop_map(|(name, start, end, meta, kind)| {
            let mut r = json!({"name": name, "start_s": start, "end_s": end});
            if kind % 3 != 0 {
                r["rule_type"] = json!("compile");
            }
            if kind % 5 == 1 {
                r["metadata"] = Value::Object(meta.into_iter().collect());
            }
            if kind % 7 == 2 {
                r["children"] =
                    json!([{"name": "c", "rule_type": "x", "children": [{"name": "d", "rule_type": "y"}]}]);
            }
            if kind == 3 {
                r = json!(["not", "an", "event"]);
            }
            r
        })
    }

    /// What damage does to the text at a position.
    #[derive(Debug, Clone)]
    enum Damage {
        Insert(usize, &'static str),
        Delete(usize),
    }

    fn damage() -> impl Strategy<Value = Damage> {
        prop_oneof![
            (
                any::<usize>(),
                prop::sample::select(vec![
                    " ",
                    "\n",
                    "\n        ",
                    "},\n        {",
                    "]",
                    "[",
                    ",",
                    "\"",
                    "0"
                ])
            )
                .prop_map(|(at, s)| Damage::Insert(at, s)),
            any::<usize>().prop_map(Damage::Delete),
        ]
    }

    fn damaged(text: &str, damages: &[Damage]) -> String {
        let mut bytes = text.as_bytes().to_vec();
        for d in damages {
            match *d {
                Damage::Insert(at, s) => {
                    let at = at % (bytes.len() + 1);
                    bytes.splice(at..at, s.bytes());
                }
                Damage::Delete(at) if !bytes.is_empty() => {
                    bytes.remove(at % bytes.len());
                }
                Damage::Delete(_) => {}
            }
        }
        // Deleting one byte of a multi-byte character leaves invalid
        // UTF-8, which the text repair turns into U+FFFD before decoding.
        String::from_utf8_lossy(&bytes).into_owned()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        #[test]
        fn a_cut_declines_or_gives_the_whole_decode(
            rules in prop::collection::vec(rule(), 0..40),
            damages in prop::collection::vec(damage(), 0..3),
            max_events in prop_oneof![4 => Just(u64::MAX), 1 => 1u64..40],
            max_depth in prop_oneof![4 => Just(Limits::default().max_depth), 1 => 1u32..5],
        ) {
            let doc = pretty(&json!({
                "start_s": 1.0,
                "phases": [{"name": "p", "rules": rules}, {"name": "q"}],
            }));
            let text = damaged(&doc, &damages);
            let limits = Limits { max_events, max_depth, ..Limits::default() };
            every_cut_matches(&text, &limits);
        }
    }
}
