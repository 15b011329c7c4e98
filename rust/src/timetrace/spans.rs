//! Which events of one trace become child spans of its compile span, and
//! under which of them each one sits.
//!
//! An event is picked when it lasted at least `min_us` (clang writes tens of
//! thousands of events for a large TU, most of them a few µs: below a
//! threshold they are noise a trace view cannot show). When more than
//! `max_spans` qualify, the longest are kept (ties: the outer event first,
//! then file order), so an event's ancestors are kept before it: an
//! ancestor contains it, so it is at least as long. Each picked event's
//! parent is its nearest picked ancestor of the same thread, `None` for
//! one that then sits directly under the compile span.

use super::model::{EventIndex, TraceEvent, TraceUnit};

/// One picked event: its index in [`TraceUnit::events`] (file order of the
/// events kept, the input of its span id) and its parent among the picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Picked {
    pub event: EventIndex,
    /// Index into the returned list; always earlier than this entry.
    pub parent: Option<u32>,
}

/// What [`pick_spans`] left out because of `max_spans` (events under the
/// threshold are not counted: leaving them out is the point).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PickStats {
    pub capped: u64,
}

/// The events of `unit` that become spans, in nesting order (every parent
/// before its children), at most `max_spans` of them.
pub fn pick_spans(unit: &TraceUnit, min_us: i64, max_spans: usize) -> (Vec<Picked>, PickStats) {
    const NOT_PICKED: u32 = u32::MAX;
    let events = unit.events();
    let mut candidates: Vec<EventIndex> = (0..events.len() as u32)
        .filter(|&i| events[i as usize].dur >= min_us)
        .collect();
    let mut stats = PickStats::default();
    if candidates.len() > max_spans {
        stats.capped = (candidates.len() - max_spans) as u64;
        let key = |i: &EventIndex| {
            let e: &TraceEvent = &events[*i as usize];
            (std::cmp::Reverse(e.dur), e.depth(), *i)
        };
        candidates.select_nth_unstable_by_key(max_spans, key);
        candidates.truncate(max_spans);
    }
    let mut slot = vec![NOT_PICKED; events.len()];
    for &i in &candidates {
        slot[i as usize] = 0;
    }
    let mut picked = Vec::with_capacity(candidates.len());
    for (i, event) in unit.nesting_order() {
        if slot[i as usize] == NOT_PICKED {
            continue;
        }
        let mut up = event.parent();
        // Depth is bounded by the parse (`TraceLimits::max_depth`).
        while let Some(p) = up {
            if slot[p as usize] != NOT_PICKED {
                break;
            }
            up = events.get(p as usize).and_then(TraceEvent::parent);
        }
        let parent = up.map(|p| slot[p as usize]);
        slot[i as usize] = picked.len() as u32;
        picked.push(Picked { event: i, parent });
    }
    (picked, stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timetrace::{parse_trace, TraceLimits};

    fn unit(events: &str) -> TraceUnit {
        let doc = format!(r#"{{"beginningOfTime": 1000, "traceEvents": [{events}]}}"#);
        parse_trace(doc.as_bytes(), &TraceLimits::default()).unwrap()
    }

    const TRACE: &str = r#"
        {"ph":"X","name":"Source","ts":10,"dur":300,"args":{"detail":"a.h"}},
        {"ph":"X","name":"Source","ts":20,"dur":5,"args":{"detail":"tiny.h"}},
        {"ph":"X","name":"Source","ts":40,"dur":200,"args":{"detail":"b.h"}},
        {"ph":"X","name":"Frontend","ts":0,"dur":900},
        {"ph":"X","name":"Backend","ts":900,"dur":100},
        {"ph":"X","name":"ExecuteCompiler","ts":0,"dur":1000}"#;

    fn names(u: &TraceUnit, picked: &[Picked]) -> Vec<(String, Option<u32>)> {
        picked
            .iter()
            .map(|p| {
                let e = &u.events()[p.event as usize];
                let detail = u.detail(e).unwrap_or(e.kind.name());
                (detail.to_owned(), p.parent)
            })
            .collect()
    }

    #[test]
    fn threshold_keeps_the_nesting() {
        let u = unit(TRACE);
        let (picked, stats) = pick_spans(&u, 100, 100);
        assert_eq!(stats.capped, 0);
        assert_eq!(
            names(&u, &picked),
            vec![
                ("ExecuteCompiler".into(), None),
                ("Frontend".into(), Some(0)),
                ("a.h".into(), Some(1)),
                ("b.h".into(), Some(2)),
                ("Backend".into(), Some(0)),
            ]
        );
    }

    #[test]
    fn a_cap_keeps_the_longest_and_their_ancestors() {
        let u = unit(TRACE);
        let (picked, stats) = pick_spans(&u, 0, 3);
        assert_eq!(stats.capped, 3);
        assert_eq!(
            names(&u, &picked),
            vec![
                ("ExecuteCompiler".into(), None),
                ("Frontend".into(), Some(0)),
                ("a.h".into(), Some(1)),
            ]
        );
        let (picked, _) = pick_spans(&u, 0, 0);
        assert!(picked.is_empty());
    }

    #[test]
    fn a_child_whose_parent_is_cut_hangs_from_the_nearest_kept() {
        // The outer Source is shorter than the threshold only if it is
        // shorter than its child, which containment rules out; but a cap
        // can drop a parent of equal length: the outer one is kept.
        let u = unit(
            r#"{"ph":"X","name":"Source","ts":0,"dur":100,"args":{"detail":"outer.h"}},
               {"ph":"X","name":"Source","ts":0,"dur":100,"args":{"detail":"inner.h"}},
               {"ph":"X","name":"ExecuteCompiler","ts":0,"dur":100}"#,
        );
        let (picked, _) = pick_spans(&u, 0, 2);
        let got = names(&u, &picked);
        assert_eq!(got[0], ("ExecuteCompiler".into(), None));
        assert_eq!(got[1].1, Some(0));
        assert_eq!(got.len(), 2);
    }
}
