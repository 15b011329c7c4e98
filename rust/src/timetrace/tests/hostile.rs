//! Hostile traces: each gives an explicit error or a counted warning, never
//! a panic, a hang or a stack overflow.

use std::io::Write;

use serde_json::json;

use super::corpus_traces;
use crate::timetrace::{
    parse_trace, read_trace, read_trace_owned_by, Rollup, TraceError, TraceLimits, TraceUnit,
};

fn limits() -> TraceLimits {
    TraceLimits::default()
}

fn parse(bytes: &[u8]) -> Result<TraceUnit, TraceError> {
    parse_trace(bytes, &limits())
}

fn a_corpus_trace() -> Vec<u8> {
    let file = corpus_traces().into_iter().next().unwrap_or_default();
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

#[test]
fn truncated_at_every_tenth_of_the_file_is_a_json_error() {
    let bytes = a_corpus_trace();
    assert!(parse(&bytes).is_ok());
    for tenth in 0..10 {
        let cut = &bytes[..bytes.len() * tenth / 10];
        let got = parse(cut);
        assert!(
            matches!(got, Err(TraceError::Json(_))),
            "cut at {}: {got:?}",
            cut.len()
        );
    }
}

#[test]
fn empty_and_non_json_are_json_errors() {
    for bytes in [
        &b""[..],
        b"   ",
        b"not json",
        b"\x00\x01\x02",
        b"{\"traceEvents\": [}",
        b"{}}",
    ] {
        let got = parse(bytes);
        assert!(matches!(got, Err(TraceError::Json(_))), "{bytes:?}: {got:?}");
    }
}

#[test]
fn json_of_the_wrong_shape_says_what_is_wrong() {
    type Expected = fn(&TraceError) -> bool;
    let cases: [(&[u8], Expected); 6] = [
        (b"[1, 2]", |e| matches!(e, TraceError::NotAnObject)),
        (b"\"text\"", |e| matches!(e, TraceError::NotAnObject)),
        (b"{}", |e| matches!(e, TraceError::NoTraceEvents)),
        (b"{\"traceEvents\": {\"a\": 1}}", |e| {
            matches!(e, TraceError::TraceEventsNotArray)
        }),
        (b"{\"traceEvents\": 7}", |e| {
            matches!(e, TraceError::TraceEventsNotArray)
        }),
        (b"{\"traceEvents\": []}", |e| matches!(e, TraceError::NoEvents)),
    ];
    for (bytes, expected) in cases {
        match parse(bytes) {
            Err(e) if expected(&e) => {}
            other => panic!("{}: {other:?}", String::from_utf8_lossy(bytes)),
        }
    }
}

#[test]
fn wrong_types_everywhere_are_counted_and_skipped() {
    let doc = json!({
        "beginningOfTime": "yesterday",
        "traceEvents": [
            1, "x", null, [1, [2]], true,
            {"name": "Source", "ts": "1", "dur": 2},
            {"name": "Source", "ts": 1, "dur": {"a": 1}},
            {"name": "Source", "ph": 5, "ts": 1, "dur": 2},
            {"name": ["Source"], "ts": 1, "dur": 2},
            {"name": "Source", "ts": 1, "dur": 2, "args": [1]},
            {"name": "Source", "ts": 1, "dur": 2, "args": {"detail": 5}},
            {"name": "Source", "ts": 1, "dur": 2, "args": {}},
            {"name": "ExecuteCompiler", "ts": 0, "dur": 10}
        ]
    });
    let unit = parse(&serde_json::to_vec(&doc).unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unit.warnings.non_object_events, 5);
    assert_eq!(unit.warnings.mistyped_events, 3);
    assert!(unit.warnings.mistyped_beginning_of_time);
    assert_eq!(unit.beginning_of_time_us, None);
    // The three Source events with bad args but good fields are kept, without detail.
    assert_eq!(unit.events().len(), 4);
    assert!(unit.events().iter().all(|e| unit.detail(e).is_none()));
}

#[test]
fn deeply_nested_json_is_skipped_without_recursion() {
    // Every value the reader does not use is skipped by serde_json's
    // iterative skipper: nesting costs no stack, wherever it is.
    let depth = 1_000_000;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let doc = format!(
        "{{\"other\": {deep}, \"traceEvents\": [{deep}, {{\"name\": \"ExecuteCompiler\", \"ts\": {deep}}}, \
         {{\"name\": \"ExecuteCompiler\", \"args\": {{\"detail\": {deep}}}, \"dur\": 5}}]}}"
    );
    let unit = parse(doc.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unit.events().len(), 1);
    assert_eq!(unit.warnings.non_object_events, 1);
    assert_eq!(unit.warnings.mistyped_events, 1);
    assert!(matches!(parse(deep.as_bytes()), Err(TraceError::NotAnObject)));
    let unclosed = "[".repeat(depth);
    assert!(matches!(parse(unclosed.as_bytes()), Err(TraceError::Json(_))));
}

/// `n` events each inside the previous one.
fn nested_events(n: i64) -> Vec<u8> {
    let mut events: Vec<_> = (0..n)
        .rev()
        .map(|i| json!({"name": "InstantiateClass", "ts": i, "dur": 2 * (n - i), "args": {"detail": format!("T{}<int>", i % 7)}}))
        .collect();
    events.push(json!({"name": "ExecuteCompiler", "ts": -1, "dur": 4 * n}));
    serde_json::to_vec(&json!({ "traceEvents": events })).unwrap_or_default()
}

#[test]
fn deep_event_nesting_is_refused_past_the_limit_and_cheap_below_it() {
    let bytes = nested_events(5000);
    let tight = TraceLimits {
        max_depth: 4000,
        ..limits()
    };
    assert!(matches!(
        parse_trace(&bytes, &tight),
        Err(TraceError::TooDeep {
            depth: 4001,
            max: 4000
        })
    ));
    let roomy = TraceLimits {
        max_depth: 10_000,
        ..limits()
    };
    let unit = parse_trace(&bytes, &roomy).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unit.events().iter().map(|e| e.depth()).max(), Some(5000));
    let mut rollup = Rollup::default();
    rollup.add("deep.json", &unit);
    let report = rollup.report();
    // Seven sets, each counted at its outermost instantiation only.
    assert_eq!(report.template_sets.len(), 7);
    assert!(report.template_sets.iter().all(|s| s.count == 1));
}

#[test]
fn size_and_event_limits_are_explicit_errors() {
    let bytes = a_corpus_trace();
    let small = TraceLimits {
        max_bytes: bytes.len() as u64 - 1,
        ..limits()
    };
    assert!(matches!(
        parse_trace(&bytes, &small),
        Err(TraceError::TooLarge { .. })
    ));
    let elements = parse(&bytes).map(|_| ()).and_then(|()| {
        let v: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| TraceError::Json(e.to_string()))?;
        Ok(v["traceEvents"].as_array().map_or(0, Vec::len) as u64)
    });
    let elements = elements.unwrap_or_else(|e| panic!("{e}"));
    let exact = TraceLimits {
        max_events: elements,
        ..limits()
    };
    assert!(parse_trace(&bytes, &exact).is_ok());
    let one_short = TraceLimits {
        max_events: elements - 1,
        ..limits()
    };
    assert!(matches!(
        parse_trace(&bytes, &one_short),
        Err(TraceError::TooManyEvents { .. })
    ));
}

#[test]
fn extreme_numbers_saturate() {
    let doc = json!({"traceEvents": [
        {"name": "Frontend", "ts": i64::MAX, "dur": i64::MAX},
        {"name": "Backend", "ts": i64::MIN, "dur": i64::MIN},
        {"name": "Source", "ts": 0, "dur": 1, "tid": u64::MAX},
        {"name": "ExecuteCompiler", "ts": i64::MIN, "dur": i64::MAX}
    ], "beginningOfTime": i64::MAX});
    let unit = parse(&serde_json::to_vec(&doc).unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unit.warnings.mistyped_events, 1);
    let _ = unit.compile_span_us();
    let mut rollup = Rollup::default();
    let times = rollup.add("x.json", &unit);
    assert_eq!(times.frontend_us, i64::MAX);
    let _ = rollup.report().to_string();
}

#[test]
fn invalid_utf8_in_a_string_is_a_json_error() {
    let mut bytes = br#"{"traceEvents": [{"name": "Source", "args": {"detail": "a"#.to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    bytes.extend_from_slice(br#""}}]}"#);
    assert!(matches!(parse(&bytes), Err(TraceError::Json(_))));
}

#[test]
fn reading_refuses_links_fifos_and_directories() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let real = dir.path().join("real.json");
    let mut f = std::fs::File::create(&real).unwrap_or_else(|e| panic!("{e}"));
    f.write_all(&a_corpus_trace()).unwrap_or_else(|e| panic!("{e}"));
    assert!(read_trace(&real, &limits()).is_ok());

    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(read_trace(&link, &limits()), Err(TraceError::Io(_))));

    let fifo = dir.path().join("fifo.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        assert!(matches!(read_trace(&fifo, &limits()), Err(TraceError::Io(_))));
    }
    assert!(matches!(
        read_trace(dir.path(), &limits()),
        Err(TraceError::Io(_))
    ));

    let small = TraceLimits {
        max_bytes: 10,
        ..limits()
    };
    assert!(matches!(
        read_trace(&real, &small),
        Err(TraceError::TooLarge { .. })
    ));
}

/// Issue 22, defect 2: a trace a build names by its path is read only if
/// the build's owner owns it; another user's is refused unread.
#[test]
fn reading_refuses_another_users_trace() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let own = dir.path().join("own.json");
    std::fs::write(&own, a_corpus_trace()).unwrap_or_else(|e| panic!("{e}"));
    let me = std::fs::metadata(&own)
        .map(|m| m.uid())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(read_trace_owned_by(&own, &limits(), Some(me)).is_ok());
    let other = me.wrapping_add(1);
    match read_trace_owned_by(&own, &limits(), Some(other)) {
        Err(TraceError::Io(e)) => assert!(e.to_string().contains("not by the build's owner"), "{e}"),
        r => panic!("another user's trace was read: {:?}", r.map(|_| ())),
    }
    assert!(
        read_trace_owned_by(&own, &limits(), None).is_ok(),
        "no owner given: any"
    );
}
