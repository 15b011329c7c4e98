//! ClangBuildAnalyzer's rules, one by one, on small hand-made traces.

use serde_json::{json, Value};

use crate::timetrace::{
    parse_trace, EventKind, Report, Rollup, RollupConfig, TraceError, TraceLimits, TraceUnit,
};

fn x(name: &str, ts: i64, dur: i64, detail: Option<&str>) -> Value {
    let mut e = json!({"pid": 1, "tid": 1, "ph": "X", "ts": ts, "dur": dur, "name": name});
    if let Some(d) = detail {
        e["args"] = json!({ "detail": d });
    }
    e
}

fn trace(events: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({"traceEvents": events, "beginningOfTime": 1_000_000})).unwrap_or_default()
}

fn parse(events: Vec<Value>) -> Result<TraceUnit, TraceError> {
    parse_trace(&trace(events), &TraceLimits::default())
}

fn unit(events: Vec<Value>) -> TraceUnit {
    parse(events).unwrap_or_else(|e| panic!("{e}"))
}

fn report(units: &[(&str, TraceUnit)], config: RollupConfig) -> Report {
    let mut rollup = Rollup::new(config);
    for (name, unit) in units {
        rollup.add(name, unit);
    }
    rollup.report()
}

/// A compile of `dur` µs whose frontend holds `inner`; ExecuteCompiler last,
/// as clang writes it.
fn compile(inner: Vec<Value>, frontend_us: i64) -> Vec<Value> {
    let mut events = inner;
    events.push(x("Frontend", 10, frontend_us, None));
    events.push(x("ExecuteCompiler", 0, frontend_us + 100, None));
    events
}

#[test]
fn only_known_complete_events_are_kept() {
    let u = unit(vec![
        json!({"pid": 1, "tid": 1, "ph": "M", "ts": 0, "name": "process_name", "args": {"name": "clang"}}),
        x("CodeGen Function", 1, 1, Some("f")),
        x("Total Frontend", 0, 5, None),
        // No ph: kept, as ClangBuildAnalyzer keeps it.
        json!({"ts": 2, "dur": 3, "name": "ParseClass", "args": {"other": "C"}}),
        x("ExecuteCompiler", 0, 10, None),
    ]);
    let kinds: Vec<EventKind> = u.events().iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EventKind::ParseClass, EventKind::Compiler]);
    // The first member of args is the detail, whatever its name.
    assert_eq!(u.detail(&u.events()[0]), Some("C"));
    assert_eq!(u.warnings.total(), 0);
    assert_eq!(u.beginning_of_time_us, Some(1_000_000));
}

#[test]
fn a_field_of_the_wrong_type_drops_the_event_with_a_warning() {
    let mut float_ts = x("Source", 1, 2, Some("a.h"));
    float_ts["ts"] = json!(1.5);
    let mut string_tid = x("Source", 1, 2, Some("b.h"));
    string_tid["tid"] = json!("1");
    let mut huge_pid = x("Source", 1, 2, Some("c.h"));
    huge_pid["pid"] = json!(u64::MAX);
    let mut name_number = x("Source", 1, 2, Some("d.h"));
    name_number["name"] = json!(7);
    let u = unit(vec![
        float_ts,
        string_tid,
        huge_pid,
        name_number,
        x("ExecuteCompiler", 0, 10, None),
    ]);
    assert_eq!(u.events().len(), 1);
    assert_eq!(u.warnings.mistyped_events, 3);
}

#[test]
fn a_begin_end_pair_is_one_event_and_a_lone_begin_is_dropped() {
    let b = |ts: i64, d: &str| json!({"pid": 1, "tid": 1, "ph": "b", "ts": ts, "name": "Source", "args": {"detail": d}});
    let e = |ts: i64| json!({"pid": 1, "tid": 1, "ph": "e", "ts": ts, "name": "Source"});
    let u = unit(vec![
        b(5, "paired.h"),
        e(25),
        b(30, "lone.h"),
        x("ParseClass", 31, 1, Some("C")),
        x("ExecuteCompiler", 0, 100, None),
    ]);
    let got: Vec<(EventKind, i64, i64, Option<&str>)> = u
        .events()
        .iter()
        .map(|ev| (ev.kind, ev.ts, ev.dur, u.detail(ev)))
        .collect();
    assert_eq!(
        got,
        [
            (EventKind::Source, 5, 20, Some("paired.h")),
            (EventKind::ParseClass, 31, 1, Some("C")),
            (EventKind::Compiler, 0, 100, None),
        ]
    );
    assert_eq!(u.warnings.unpaired_begins, 1);
}

#[test]
fn nesting_is_by_containment_per_thread_and_ties_go_to_the_later_event() {
    let mut other_thread = x("ParseClass", 20, 5, Some("T"));
    other_thread["tid"] = json!(2);
    let u = unit(vec![
        x("ParseClass", 20, 10, Some("inner")),
        x("ParseClass", 20, 10, Some("outer")),
        other_thread,
        x("Frontend", 10, 50, None),
        x("ExecuteCompiler", 0, 100, None),
    ]);
    let parent_detail = |i: usize| {
        let e = &u.events()[i];
        e.parent()
            .map(|p| u.detail(&u.events()[p as usize]).unwrap_or("-"))
    };
    assert_eq!(parent_detail(0), Some("outer"));
    assert_eq!(parent_detail(1), Some("-"));
    assert_eq!(parent_detail(2), None, "another thread's event is not nested");
    assert_eq!(u.events()[0].depth(), 3);
    assert_eq!(u.events()[4].parent(), None);
}

#[test]
fn a_last_event_that_is_not_outermost_refuses_the_file() {
    let err = parse(vec![
        x("ExecuteCompiler", 0, 100, None),
        x("Frontend", 10, 50, None),
    ]);
    assert!(matches!(err, Err(TraceError::LastEventNotRoot)), "{err:?}");
}

#[test]
fn extra_frontends_merge_into_the_first() {
    let u = unit(vec![
        x("Frontend", 10, 40, None),
        x("Frontend", 60, 5, None),
        x("ExecuteCompiler", 0, 100, None),
    ]);
    assert_eq!(u.times().frontend_us, 45);
    let r = report(&[("tu.json", u)], RollupConfig::default());
    assert_eq!(r.summary.compilations, 1);
    assert_eq!(r.summary.frontend_us, 45);
}

#[test]
fn files_are_named_by_the_tu_and_listed_from_the_threshold() {
    let fast = unit(compile(vec![], 9_999));
    let slow = unit(vec![
        x("Frontend", 10, 20_000, None),
        x("OptModule", 20_100, 10_000, Some("/src/./slow.cpp")),
        x("Backend", 20_050, 15_000, None),
        x("ExecuteCompiler", 0, 40_000, None),
    ]);
    let r = report(
        &[("fast.json", fast), ("slow.json", slow)],
        RollupConfig::default(),
    );
    let names = |l: &[crate::timetrace::report::FileTime]| {
        l.iter().map(|f| (f.name.clone(), f.us)).collect::<Vec<_>>()
    };
    assert_eq!(names(&r.parse_files), [("slow.json".to_owned(), 20_000)]);
    assert_eq!(names(&r.codegen_files), [("slow.json".to_owned(), 15_000)]);
    assert_eq!(r.summary.compilations, 2);
    assert_eq!(r.summary.frontend_us, 29_999);
}

#[test]
fn a_nested_instantiation_of_the_same_set_counts_once_in_sets() {
    let u = unit(compile(
        vec![
            x("InstantiateClass", 30, 10, Some("A<int>")),
            // A ParseClass between the two: the ancestor check is on all
            // ancestors, not only the parent.
            x("ParseClass", 25, 20, Some("Wrapper")),
            x("InstantiateClass", 20, 50, Some("A<A<int>>")),
            x("InstantiateFunction", 80, 5, Some("f<int>")),
        ],
        1000,
    ));
    let r = report(&[("tu.json", u)], RollupConfig::default());
    let t: Vec<(&str, u64, i64)> = r
        .templates
        .iter()
        .map(|t| (t.name.as_str(), t.count, t.us))
        .collect();
    assert_eq!(t, [("A<A<int>>", 1, 50), ("A<int>", 1, 10), ("f<int>", 1, 5)]);
    let s: Vec<(&str, u64, i64)> = r
        .template_sets
        .iter()
        .map(|t| (t.name.as_str(), t.count, t.us))
        .collect();
    assert_eq!(s, [("A<$>", 1, 50), ("f<$>", 1, 5)]);
}

#[test]
fn functions_by_demangled_name_and_file_and_sets_only_for_templates() {
    let u = unit(vec![
        x("OptFunction", 110, 3000, Some("_Z1fIiEvT_")),
        x("OptFunction", 3200, 2000, Some("_Z1gv")),
        x("OptModule", 100, 6000, Some("/src/a.cpp")),
        x("Backend", 90, 7000, None),
        x("ExecuteCompiler", 0, 8000, None),
    ]);
    let r = report(&[("a.json", u)], RollupConfig::default());
    let f: Vec<(&str, &str, i64)> = r
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f.file.as_str(), f.us))
        .collect();
    assert_eq!(
        f,
        [
            ("void f<int>(int)", "/src/a.cpp", 3000),
            ("g()", "/src/a.cpp", 2000)
        ]
    );
    let s: Vec<(&str, u64)> = r
        .function_sets
        .iter()
        .map(|t| (t.name.as_str(), t.count))
        .collect();
    assert_eq!(s, [("void f<$>(int)", 1)]);
}

#[test]
fn headers_with_chains_roots_and_the_ellipsis() {
    // a.h directly, b.h through a.h; c.h only ever through b.h.
    let tu = |n: i64| {
        unit(compile(
            vec![
                x("Source", 30, 10, Some("/i/c.h")),
                x("Source", 25, 20, Some("/i/sub/../b.h")),
                x("Source", 20, 100 + n, Some("/i/a.h")),
                x("Source", 200, 7, Some("/src/inc.cpp")),
            ],
            1000,
        ))
    };
    let r = report(&[("1.json", tu(0)), ("2.json", tu(1))], RollupConfig::default());
    let h: Vec<(&str, u64, i64)> = r
        .headers
        .iter()
        .map(|h| (h.path.as_str(), h.count, h.us))
        .collect();
    assert_eq!(
        h,
        [("/i/a.h", 2, 201)],
        "b.h and c.h are not root headers; .cpp is no header"
    );
    let all = report(
        &[("1.json", tu(0))],
        RollupConfig {
            only_root_headers: false,
            ..RollupConfig::default()
        },
    );
    let c = all
        .headers
        .iter()
        .find(|h| h.path == "/i/c.h")
        .map(|h| h.chains.clone());
    assert_eq!(
        c.map(|c| c.into_iter().map(|c| c.via).collect::<Vec<_>>()),
        Some(vec![vec!["/i/a.h".to_owned(), "/i/b.h".to_owned()]])
    );
    let text = all.to_string();
    assert!(
        text.contains("0 ms: /i/c.h (included 1 times, avg 0 ms), included via:\n  1x: a.h b.h \n"),
        "{text}"
    );

    // Seven distinct chains to one header: six shown, then "...".
    let mut inner = Vec::new();
    for i in 0..7i64 {
        inner.push(x("Source", 100 * i + 20, 5, Some("/i/x.h")));
        inner.push(x("Source", 100 * i + 10, 50, Some(&format!("/i/via{i}.h"))));
    }
    let r = report(
        &[("t.json", unit(compile(inner, 1000)))],
        RollupConfig {
            only_root_headers: false,
            ..RollupConfig::default()
        },
    );
    let x_h = r.headers.iter().find(|h| h.path == "/i/x.h");
    assert_eq!(
        x_h.map(|h| (h.chains.len(), h.more_chains, h.count)),
        Some((6, true, 7))
    );
    assert!(r.to_string().contains("  1x: via5.h \n  ...\n"), "{r}");
}

#[test]
fn a_header_below_a_non_header_below_a_header_is_no_root_header() {
    // libstdc++'s <cmath> → bits/specfun.h → tr1/gamma.tcc (no header by
    // its extension) → tr1/special_function_util.h: ClangBuildAnalyzer
    // walks every enclosing Source, so the last one is not a root header;
    // a header inside a non-Source event (a class body) starts a new line.
    let tu = unit(compile(
        vec![
            x("Source", 40, 10, Some("/i/special_function_util.h")),
            x("Source", 35, 20, Some("/i/gamma.tcc")),
            x("Source", 30, 40, Some("/i/specfun.h")),
            x("Source", 20, 100, Some("/i/cmath")),
            x("Source", 320, 5, Some("/i/in_class.h")),
            x("ParseClass", 310, 20, Some("C")),
            x("Source", 300, 50, Some("/i/outer.h")),
        ],
        1000,
    ));
    let r = report(&[("1.json", tu)], RollupConfig::default());
    let mut roots: Vec<&str> = r.headers.iter().map(|h| h.path.as_str()).collect();
    roots.sort_unstable();
    assert_eq!(roots, ["/i/cmath", "/i/in_class.h", "/i/outer.h"]);
}
