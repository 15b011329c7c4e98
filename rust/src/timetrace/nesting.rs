//! The nesting clang's complete events imply: an event's parent is the
//! innermost event of the same thread whose time span contains it.
//!
//! The rules are ClangBuildAnalyzer's (`FindParentChildrenIndices`,
//! `SanitizeEvents`): events ordered by start, longer first at equal start,
//! later in the file first at equal start and length; each is nested in the
//! previous one or the nearest of its ancestors that contains it. Unlike
//! ClangBuildAnalyzer, which nests all threads' events together, nesting is
//! per `tid`: clang writes the events it keeps on the main thread only, so
//! the two agree on every clang trace, and an event of another thread is not
//! nested in an unrelated one that happens to span it.

use std::cmp::Reverse;

use super::error::TraceError;
use super::model::{EventKind, TraceEvent};

/// Sets every event's parent and depth, refuses a nesting deeper than
/// `max_depth` or a file whose last event is nested, and merges the extra
/// `Frontend` events into the first. Returns the events' indices in
/// nesting order: thread by thread, every event before those it contains.
pub(crate) fn nest(events: &mut [TraceEvent], max_depth: u32) -> Result<Vec<u32>, TraceError> {
    let mut order: Vec<u32> = (0..events.len() as u32).collect();
    order.sort_unstable_by_key(|&i| {
        let e = &events[i as usize];
        (e.tid, e.ts, Reverse(e.dur), Reverse(i))
    });
    let mut previous: Option<u32> = None;
    for &i in &order {
        let event = events[i as usize];
        // Walking up from the previous event visits each event at most once
        // more over the whole loop: a stack in disguise.
        let mut candidate = previous.filter(|&p| events[p as usize].tid == event.tid);
        while let Some(c) = candidate {
            let outer = &events[c as usize];
            if event.ts >= outer.ts && event.end() <= outer.end() {
                break;
            }
            candidate = outer.parent;
        }
        let depth = match candidate {
            Some(c) => events[c as usize].depth + 1,
            None => 0,
        };
        if depth > max_depth {
            return Err(TraceError::TooDeep {
                depth,
                max: max_depth,
            });
        }
        events[i as usize].parent = candidate;
        events[i as usize].depth = depth;
        previous = Some(i);
    }
    if events.last().is_some_and(|e| e.parent.is_some()) {
        return Err(TraceError::LastEventNotRoot);
    }
    merge_frontends(events);
    Ok(order)
}

/// Since clang 11 one compile may write several `Frontend` events; those
/// beside the first (same parent) are added to it and no longer counted.
fn merge_frontends(events: &mut [TraceEvent]) {
    let Some(first) = events.iter().position(|e| e.kind == EventKind::Frontend) else {
        return;
    };
    let parent = events[first].parent;
    let mut extra: i64 = 0;
    for e in &mut events[first + 1..] {
        if e.kind == EventKind::Frontend && e.parent == parent {
            extra = extra.saturating_add(e.dur);
            e.kind = EventKind::MergedFrontend;
        }
    }
    events[first].dur = events[first].dur.saturating_add(extra);
}
