//! The fast path against the serde path: on generated timing documents
//! (valid, with hostile strings and numbers, and mutated: cut short, a byte
//! deleted, inserted or replaced) `decode` must give exactly what the serde
//! path alone gives (the model's every table, the warnings, the error), and
//! on every valid one the fast path must be the one that answered.

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::Config;

use super::super::super::json::Loose;
use super::super::{decode, decode_fast, decode_serde};
use super::exact_number;
use crate::cancel::CancelToken;
use crate::request::Limits;
use crate::warnings::Warnings;

fn config(default: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Decodes `text` both ways under `limits` and asserts they agree; returns
/// whether the serde path succeeded and whether the fast path answered.
fn agree(text: &str, limits: &Limits) -> (bool, bool) {
    let path = Path::new("t/timing.json");
    let cancel = CancelToken::new();
    let (mut w_both, mut w_serde) = (Warnings::new(), Warnings::new());
    let both = decode(text, path, limits, &cancel, &mut w_both);
    let serde = decode_serde(text, path, limits, &cancel, &mut w_serde);
    let ok = match (&both, &serde) {
        (Ok(a), Ok(b)) => {
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "model of {text:?}");
            true
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "error of {text:?}");
            false
        }
        _ => panic!(
            "{text:?}: decode {:?} but serde path {:?}",
            both.is_ok(),
            serde.is_ok()
        ),
    };
    assert_eq!(w_both, w_serde, "warnings of {text:?}");
    (ok, decode_fast(text, limits, &cancel).is_some())
}

// ------------------------------------------------------------- generation

/// A JSON value as text pieces, rendered with chosen whitespace.
#[derive(Debug, Clone)]
enum J {
    Token(String),
    Array(Vec<J>),
    Object(Vec<(String, J)>),
}

impl J {
    fn render(&self, ws: &[&str], k: &mut usize, out: &mut String) {
        fn space(ws: &[&str], k: &mut usize, out: &mut String) {
            if !ws.is_empty() {
                out.push_str(ws[*k % ws.len()]);
                *k += 1;
            }
        }
        match self {
            J::Token(t) => out.push_str(t),
            J::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    space(ws, k, out);
                    item.render(ws, k, out);
                }
                space(ws, k, out);
                out.push(']');
            }
            J::Object(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    space(ws, k, out);
                    out.push_str(key);
                    out.push(':');
                    space(ws, k, out);
                    value.render(ws, k, out);
                }
                space(ws, k, out);
                out.push('}');
            }
        }
    }
}

fn quoted(s: &str) -> String {
    format!("\"{s}\"")
}

/// Numbers serde_json reads in every way it can: small and huge
/// integers, negative, long fractions, exponents in and out of range.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u32>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        (0u64..100_000, 0u64..10_000_000, 1usize..8).prop_map(|(i, f, d)| format!(
            "{}.{:0>d$}",
            10_000 + i,
            f % 10u64.pow(d as u32)
        )),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:?}")),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        "-?(0|[1-9][0-9]{0,22})(\\.[0-9]{1,24})?([eE][+-]?[0-9]{1,3})?",
    ]
}

/// Valid string tokens: plain, non-ASCII, escapes (surrogate pairs too).
fn valid_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z0-9/._ -]{0,12}".boxed(),
        Just("é€😀".to_owned()).boxed(),
        Just("\\n\\t\\\"\\\\\\/".to_owned()).boxed(),
        Just("\\u00e9\\ud83d\\ude00".to_owned()).boxed(),
    ];
    prop::collection::vec(piece, 0..4).prop_map(|p| quoted(&p.concat()))
}

/// Strings serde_json may refuse: control characters, bad escapes, lone
/// surrogates.
fn hostile_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(quoted("a\u{1}b")),
        Just(quoted("tab\there")),
        Just(quoted("\\x")),
        Just(quoted("\\ud800")),
        Just(quoted("\\ud800\\u0041")),
        Just(quoted("\\udc00")),
        Just(quoted("\\u12")),
        Just(quoted("\\u00E9")),
    ]
}

fn scalar() -> impl Strategy<Value = J> {
    prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        number(),
        valid_string(),
    ]
    .prop_map(J::Token)
}

fn any_value() -> impl Strategy<Value = J> {
    scalar().prop_recursive(3, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(J::Array),
            prop::collection::vec((valid_string(), inner), 0..4).prop_map(J::Object),
        ]
    })
}

fn metadata() -> impl Strategy<Value = J> {
    let key = prop_oneof![
        Just(quoted("cas.hit")),
        Just(quoted("queue_wait_s")),
        Just(quoted("ct.rule.cache_layer")),
        valid_string(),
    ];
    let value = prop_oneof![
        4 => scalar(),
        1 => prop::collection::vec(scalar(), 0..4).prop_map(J::Array),
        1 => any_value(),
    ];
    prop_oneof![
        6 => prop::collection::vec((key, value), 0..6).prop_map(J::Object),
        1 => scalar(),
    ]
}

/// An event's fields, right types mostly; `children` for the nested events.
fn event(children: BoxedStrategy<J>) -> impl Strategy<Value = J> {
    let field = prop_oneof![
        (Just("name"), valid_string().prop_map(J::Token).boxed()),
        (
            Just("rule_type"),
            prop_oneof![valid_string().prop_map(J::Token), scalar()].boxed()
        ),
        (Just("target"), valid_string().prop_map(J::Token).boxed()),
        (Just("source"), scalar().boxed()),
        (Just("start_s"), number().prop_map(J::Token).boxed()),
        (Just("end_s"), scalar().boxed()),
        (Just("elapsed_s"), number().prop_map(J::Token).boxed()),
        (Just("metadata"), metadata().boxed()),
        (Just("rules"), children.clone()),
        (Just("children"), children),
        (Just("other"), any_value().boxed()),
    ];
    prop::collection::vec(field, 0..9)
        .prop_map(|fields| J::Object(fields.into_iter().map(|(k, v)| (quoted(k), v)).collect()))
}

fn events() -> BoxedStrategy<J> {
    let leaf = prop_oneof![Just(J::Token("null".to_owned())), Just(J::Array(Vec::new()))].boxed();
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            8 => prop::collection::vec(
                prop_oneof![8 => event(inner.clone()).boxed(), 1 => scalar().boxed(), 1 => any_value().boxed()],
                0..5
            )
            .prop_map(J::Array),
            1 => scalar(),
            1 => any_value(),
        ]
        .boxed()
    })
    .boxed()
}

fn document() -> impl Strategy<Value = J> {
    let field = prop_oneof![
        (
            Just("timestamp"),
            prop_oneof![valid_string().prop_map(J::Token), scalar()].boxed()
        ),
        (Just("total_elapsed_s"), number().prop_map(J::Token).boxed()),
        (Just("start_s"), number().prop_map(J::Token).boxed()),
        (Just("variant"), scalar().boxed()),
        (Just("backend"), valid_string().prop_map(J::Token).boxed()),
        (Just("phases"), events()),
        (Just("version"), any_value().boxed()),
    ];
    prop::collection::vec(field, 0..8)
        .prop_map(|fields| J::Object(fields.into_iter().map(|(k, v)| (quoted(k), v)).collect()))
}

fn whitespace() -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(
        prop::sample::select(vec!["", " ", "\n  ", "\n        ", "\t", "\r\n"]),
        0..6,
    )
}

fn render(doc: &J, ws: &[&str]) -> String {
    let mut out = String::new();
    doc.render(ws, &mut 0, &mut out);
    out
}

/// Small limits, so that generated documents reach them.
fn tight() -> Limits {
    Limits {
        max_events: 6,
        max_depth: 2,
        ..Limits::default()
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn valid_documents_take_the_fast_path(doc in document(), ws in whitespace()) {
        let text = render(&doc, &ws);
        let (serde_ok, fast) = agree(&text, &Limits::default());
        // A document serde_json reads is read by the fast path too, unless
        // the serde path stops at a rule of its own (phases not an array, a
        // root anchor not a number): then both fail alike.
        prop_assert!(fast || !serde_ok, "the fast path gave up on {text:?}");
        agree(&text, &tight());
    }

    #[test]
    fn hostile_strings_and_mutations_agree(
        doc in document(),
        ws in whitespace(),
        hostile in hostile_string(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        how in 0..5u8,
    ) {
        let text = render(&doc, &ws);
        let mut bytes = text.into_bytes();
        let i = at.index(bytes.len() + 1);
        match how {
            0 => bytes.truncate(i),
            1 if i < bytes.len() => {
                bytes.remove(i);
            }
            2 => bytes.insert(i, byte),
            3 if i < bytes.len() => bytes[i] = byte,
            _ => {
                // A hostile string in place of the first string token.
                let s = String::from_utf8_lossy(&bytes).into_owned();
                bytes = match s.find("\"\"") {
                    Some(p) => format!("{}{hostile}{}", &s[..p], &s[p + 2..]).into_bytes(),
                    None => s.replacen("\"name\"", &hostile, 1).into_bytes(),
                };
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        agree(&text, &Limits::default());
        agree(&text, &tight());
    }

    /// Where the fast number reader answers, serde_json gives the same
    /// value, bit for bit.
    #[test]
    fn exact_numbers_are_serde_json_numbers(token in number()) {
        if let Some(fast) = exact_number(token.as_bytes()) {
            let serde: Loose = serde_json::from_str(&token).expect("a valid number");
            match (fast, serde) {
                (Loose::Float(a), Loose::Float(b)) => prop_assert_eq!(a.to_bits(), b.to_bits(), "{}", token),
                (Loose::Int(a), Loose::Int(b)) => prop_assert_eq!(a, b, "{}", token),
                (a, b) => prop_assert!(false, "{}: {:?} vs {:?}", token, a, b),
            }
        }
    }
}

#[test]
fn the_bench_shape_takes_the_fast_path() {
    let text = r#"{
  "version": 1,
  "timestamp": "2026-01-01T12:00:00+00:00",
  "total_elapsed_s": 6998.38993,
  "variant": "ccache-gcc.cxx17.debug",
  "backend": "shake",
  "start_s": 10000.0,
  "phases": [
    {
      "name": "build_execution",
      "elapsed_s": 1e-05,
      "start_s": 10002.00052,
      "end_s": 16998.38973,
      "rules": [
        {
          "name": "unit000001.cpp",
          "elapsed_s": 2.515507,
          "rule_type": "compile",
          "target": "/ws/obj/unit000001.o",
          "source": "/ws/src/mod01/unit000001.cpp",
          "metadata": {
            "cas.hit": false,
            "cas.bytes_reused": 0,
            "cas.kind": "obj",
            "queue_wait_s": 1.44308,
            "ct.rule.cache_layer": "other"
          },
          "start_s": 10002.000717,
          "end_s": 10004.516224
        }
      ]
    }
  ]
}"#;
    assert_eq!(agree(text, &Limits::default()), (true, true));
}

#[test]
fn numbers_outside_the_exact_range_are_serde_json_s() {
    for token in [
        "0.1",
        "1e22",
        "1e23",
        "9007199254740993",
        "9007199254740993.0",
        "123456789012345678901",
        "1.7976931348623157e308",
        "5e-324",
        "-0",
        "-0.0",
        "0.30000000000000004",
        "1e400",
    ] {
        let text = format!(
            r#"{{"start_s": 1.0, "phases": [{{"name": "p", "metadata": {{"v": {token}, "w": [{token}]}}, "end_s": {token}}}]}}"#
        );
        agree(&text, &Limits::default());
    }
    assert!(
        exact_number(b"9007199254740993.0").is_none(),
        "above 2^53: serde_json's"
    );
    assert!(exact_number(b"1e23").is_none(), "10^23 is not exact");
    assert!(exact_number(b"01").is_none());
    assert!(exact_number(b"1.").is_none());
    assert!(exact_number(b"-1").is_none(), "negative: serde_json's");
}

#[test]
fn deep_nesting_is_left_to_serde_json() {
    for depth in [99, 100, 101, 127, 128, 129, 200] {
        let text = format!(
            r#"{{"phases": [{{"name": "p", "x": {}{}}}]}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        agree(&text, &Limits::default());
    }
}

#[test]
fn cancellation_and_limits_are_the_serde_path_s() {
    let rules: Vec<String> = (0..5000)
        .map(|i| format!(r#"{{"name": "r{i}", "rule_type": "x"}}"#))
        .collect();
    let text = format!(
        r#"{{"phases": [{{"name": "p", "rules": [{}]}}]}}"#,
        rules.join(",")
    );
    let path = Path::new("t/timing.json");
    let cancel = CancelToken::new();
    cancel.cancel();
    let err = decode(&text, path, &Limits::default(), &cancel, &mut Warnings::new()).unwrap_err();
    assert!(matches!(err, crate::error::Error::Cancelled), "{err}");
    agree(&text, &tight());
}
